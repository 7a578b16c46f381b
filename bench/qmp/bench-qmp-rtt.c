/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Round-trip time of query-iothreads against a real QEMU: polltune's QMP
 * client (framing, parsing into structs, the GLib main loop) against a
 * minimal raw client that writes the command and reads the reply line with
 * blocking syscalls and parses nothing.  The ratio is the client's
 * overhead over the bare wire; the goal is at most 1.2.
 *
 * QEMU serves one client per monitor, so it gets two monitors and the two
 * clients run in alternating batches; the ratio is taken batch by batch so
 * that drift in machine speed cancels out.
 *
 * Usage: bench-qmp-rtt [ROUNDS [BATCH]]
 * Exit status 2 when the median ratio misses the goal, unless
 * PT_BENCH_SMOKE is set (a run at a tiny size that checks the benchmark
 * still runs, where the figures mean nothing).
 */
#include "pt-test-qemu.h"
#include "pt-test-qmp-sync.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

typedef struct {
    int fd;
    char buf[65536];
    gsize len;
    guint next_id;
} RawClient;

/* Read through the next "\n"; return the line length. */
static gsize
raw_read_line(RawClient *r)
{
    for (;;) {
        char *nl = memchr(r->buf, '\n', r->len);
        ssize_t n;

        if (nl) {
            gsize line = nl - r->buf + 1;

            memmove(r->buf, nl + 1, r->len - line);
            r->len -= line;
            return line;
        }
        n = read(r->fd, r->buf + r->len, sizeof(r->buf) - r->len);
        if (n <= 0) {
            perror("raw client read");
            exit(1);
        }
        r->len += n;
    }
}

static void
raw_command(RawClient *r, const char *cmd)
{
    char line[256];
    int n = snprintf(line, sizeof(line), "{\"execute\":\"%s\",\"id\":%u}\n", cmd, ++r->next_id);

    if (write(r->fd, line, n) != n) {
        perror("raw client write");
        exit(1);
    }
    raw_read_line(r);
}

static void
raw_connect(RawClient *r, const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };

    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    r->fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (connect(r->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        perror(path);
        exit(1);
    }
    raw_read_line(r);                       /* greeting */
    raw_command(r, "qmp_capabilities");
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
median(double *v, guint n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
    guint rounds = argc > 1 ? atoi(argv[1]) : 20;
    guint batch = argc > 2 ? atoi(argv[2]) : 250;
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autofree char *raw_path = NULL;
    g_autofree char *raw_arg = NULL;
    g_autofree double *ours = g_new(double, rounds);
    g_autofree double *raws = g_new(double, rounds);
    g_autofree double *ratios = g_new(double, rounds);
    RawClient raw = { 0 };
    g_autofree char *why = NULL;

    if (!pt_test_have_qemu(&why)) {
        printf("skip: %s\n", why);
        return 77;
    }
    /* A second monitor for the raw client, in a directory of our own. */
    raw_path = g_build_filename(g_get_tmp_dir(), "pt-bench-raw-XXXXXX", NULL);
    if (!g_mkdtemp(raw_path))
        return 1;
    {
        g_autofree char *dir = g_steal_pointer(&raw_path);

        raw_path = g_build_filename(dir, "raw.sock", NULL);
        raw_arg = g_strdup_printf("unix:%s,server=on,wait=off", raw_path);
    }
    {
        const char *args[] = { "-object", "iothread,id=iot0", "-object", "iothread,id=iot1",
                               "-qmp", raw_arg, NULL };

        q = pt_test_qemu_start(args, &err);
    }
    if (!q) {
        fprintf(stderr, "%s\n", err->message);
        return 1;
    }
    c = qmp_client_new(NULL, &(QmpClientOptions){ .name = "bench" });
    if (!qmp_client_connect_path(c, q->qmp_path, &err) ||
        !qmp_client_wait_ready_sync(c, &err)) {
        fprintf(stderr, "%s\n", err->message);
        return 1;
    }
    raw_connect(&raw, raw_path);

    /* Warm up both paths. */
    for (guint i = 0; i < batch; i++) {
        g_autoptr(GPtrArray) t = qmp_query_iothreads_sync(c, NULL);

        if (!t) {
            fprintf(stderr, "warm-up query-iothreads failed\n");
            return 1;
        }
        raw_command(&raw, "query-iothreads");
    }
    for (guint r = 0; r < rounds; r++) {
        gint64 t0 = g_get_monotonic_time();

        for (guint i = 0; i < batch; i++) {
            g_autoptr(GPtrArray) t = qmp_query_iothreads_sync(c, &err);

            if (!t || t->len != 2) {
                fprintf(stderr, "query-iothreads: %s\n", err ? err->message : "wrong count");
                return 1;
            }
        }
        ours[r] = (double)(g_get_monotonic_time() - t0) / batch;
        t0 = g_get_monotonic_time();
        for (guint i = 0; i < batch; i++)
            raw_command(&raw, "query-iothreads");
        raws[r] = (double)(g_get_monotonic_time() - t0) / batch;
        ratios[r] = ours[r] / raws[r];
    }
    double m_ours = median(ours, rounds), m_raw = median(raws, rounds);
    double m_ratio = median(ratios, rounds);    /* sorts ratios */

    printf("query-iothreads round trip, %u rounds of %u, 2 iothreads, QEMU %d.%d.%d\n",
           rounds, batch, qmp_client_get_version(c)->major,
           qmp_client_get_version(c)->minor, qmp_client_get_version(c)->micro);
    printf("  polltune client: median %.1f us\n", m_ours);
    printf("  raw socket:      median %.1f us\n", m_raw);
    printf("  ratio polltune/raw: median %.3f (min %.3f, max %.3f); goal <= 1.2\n",
           m_ratio, ratios[0], ratios[rounds - 1]);
    close(raw.fd);
    unlink(raw_path);
    {
        g_autofree char *dir = g_path_get_dirname(raw_path);

        rmdir(dir);
    }
    return m_ratio <= 1.2 || g_getenv("PT_BENCH_SMOKE") ? 0 : 2;
}
