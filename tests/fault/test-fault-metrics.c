/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Faults on the metrics endpoint: 300 TCP clients connect and never send
 * a byte while the daemon runs under a descriptor limit of 256.  The
 * control socket must still answer at once, a scrape must still be
 * served, the daemon's descriptors stay bounded, and every idle client is
 * closed by the daemon after metrics-idle-timeout.
 */
#include "fault-common.h"
#include "pt-test-daemon.h"
#include "qmp-json.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define IDLE_CLIENTS 300
#define NOFILE_LIMIT 256
/* metrics-max-connections' default, the closing slack of pt-metrics.c,
 * and the daemon's own descriptors (stdio, log, database, control
 * listener, GLib): generous, yet far below the limit. */
#define DAEMON_FD_BOUND (16 + 8 + 40)

static guint16
free_tcp_port(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET };
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sin, &len), ==, 0);
    close(fd);
    return ntohs(sin.sin_port);
}

/* A connection that may still be in progress: the daemon need not have
 * accepted it for the test to go on. */
static int
tcp_connect_nonblock(guint16 port)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    g_assert_cmpint(fd, >=, 0);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0)
        g_assert_cmpint(errno, ==, EINPROGRESS);
    return fd;
}

/* Read until EOF or @timeout_s; the text read. */
static char *
read_all(int fd, guint timeout_s)
{
    GString *s = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;
    char buf[4096];

    while (g_get_monotonic_time() < deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        ssize_t n;

        if (poll(&p, 1, 200) <= 0)
            continue;
        n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            break;
        g_string_append_len(s, buf, n);
    }
    return g_string_free(s, FALSE);
}

/* One control request with a deadline: a daemon out of descriptors
 * accepts nothing, and the greeting never comes. */
static char *
control_status(const char *path, guint timeout_s)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = timeout_s };
    const char *req = "{\"execute\": \"status\", \"id\": 1}\n";
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    GString *got = g_string_new(NULL);
    char c;

    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    /* The greeting, then the reply: two lines. */
    for (guint lines = 0; lines < 2 && read(fd, &c, 1) == 1;) {
        g_string_append_c(got, c);
        if (c == '\n' && ++lines == 1)
            g_assert_cmpint(write(fd, req, strlen(req)), ==, (gssize)strlen(req));
    }
    close(fd);
    return g_string_free(got, FALSE);
}

static guint
count_fds(GPid pid)
{
    g_autofree char *dir = g_strdup_printf("/proc/%d/fd", pid);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    guint n = 0;

    g_assert_nonnull(d);
    while (g_dir_read_name(d))
        n++;
    return n;
}

typedef struct {
    GPid pid;
    guint max;
} FdWait;

static gboolean
fds_back_to(gpointer data)
{
    FdWait *w = data;

    return count_fds(w->pid) <= w->max;
}

/* Wait until the daemon has closed every client: each reads EOF or a
 * reset.  Returns how many are still open at the deadline. */
static guint
wait_all_closed(int *fds, guint n, guint timeout_s)
{
    gint64 deadline = g_get_monotonic_time() + timeout_s * G_USEC_PER_SEC;
    guint open = n;

    while (open && g_get_monotonic_time() < deadline) {
        g_autofree struct pollfd *p = g_new0(struct pollfd, n);

        for (guint i = 0; i < n; i++) {
            p[i].fd = fds[i];
            p[i].events = POLLIN | POLLRDHUP;
        }
        if (poll(p, n, 500) <= 0)
            continue;
        for (guint i = 0; i < n; i++) {
            char c;

            if (fds[i] < 0 || !p[i].revents)
                continue;
            /* The client never sent a request, so nothing is owed to it:
             * anything readable is the close. */
            if (read(fds[i], &c, 1) <= 0 || (p[i].revents & (POLLHUP | POLLRDHUP))) {
                close(fds[i]);
                fds[i] = -1;
                open--;
            }
        }
    }
    return open;
}

static gboolean
daemon_ticked(gpointer data)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(data, "status", NULL);

    return pt_json_path_int(st, "ticks") >= 2;
}

static void
test_idle_flood(void)
{
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *conf = NULL;
    g_autofree char *reply = NULL;
    g_autofree char *req = NULL;
    g_autofree char *page = NULL;
    int fds[IDLE_CLIENTS];
    struct rlimit rl;
    guint16 port = free_tcp_port();
    guint base_fds, peak_fds, connected;
    FdWait fw;
    gint64 t0;
    int http;

    /* This process holds the 300 clients itself. */
    g_assert_cmpint(getrlimit(RLIMIT_NOFILE, &rl), ==, 0);
    if (rl.rlim_max < IDLE_CLIENTS + 64) {
        g_test_skip("the hard descriptor limit is too low for 300 clients");
        return;
    }
    rl.rlim_cur = rl.rlim_max;
    g_assert_cmpint(setrlimit(RLIMIT_NOFILE, &rl), ==, 0);

    conf = g_strdup_printf("metrics-listen = 127.0.0.1:%u\nmetrics-idle-timeout = 2s\n"
                           "[targets]\nlibvirt = false\n", port);
    d = fault_daemon_start_nofile(conf, NOFILE_LIMIT);
    if (!d)
        return;
    /* After two ticks the database and its WAL are open: the baseline. */
    g_assert_true(pt_test_wait(daemon_ticked, d, 20000));
    base_fds = count_fds(d->pid);

    /* One at a time, each until its handshake completes: a burst would
     * overflow the listen backlog, and the kernel would retry the dropped
     * handshakes for seconds.  A daemon that no longer accepts leaves the
     * backlog full, so stop at the first that does not complete. */
    for (connected = 0; connected < IDLE_CLIENTS; connected++) {
        struct pollfd p = { .events = POLLOUT };

        p.fd = fds[connected] = tcp_connect_nonblock(port);
        if (poll(&p, 1, 5000) != 1) {
            close(fds[connected]);
            break;
        }
    }
    g_test_message("%u of %d clients connected", connected, IDLE_CLIENTS);

    /* The control socket answers at once: 5 s is slack for a loaded
     * machine, the defect was no answer at all. */
    t0 = g_get_monotonic_time();
    reply = control_status(d->socket_path, 10);
    g_test_message("status with %d idle metrics clients: %.0f ms", IDLE_CLIENTS,
                   (g_get_monotonic_time() - t0) / 1000.0);
    g_assert_nonnull(strstr(reply, "\"return\""));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, 5 * G_USEC_PER_SEC);
    g_assert_cmpuint(connected, ==, IDLE_CLIENTS);

    /* A scrape is served while the idle ones hold the cap. */
    http = tcp_connect_nonblock(port);
    {
        struct pollfd p = { .fd = http, .events = POLLOUT };

        g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
    }
    req = g_strdup_printf("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n\r\n", port);
    g_assert_cmpint(write(http, req, strlen(req)), ==, (gssize)strlen(req));
    page = read_all(http, 10);
    close(http);
    g_assert_true(g_str_has_prefix(page, "HTTP/1.1 200"));
    g_assert_nonnull(strstr(page, "polltune_ticks_total"));

    peak_fds = count_fds(d->pid);
    g_test_message("daemon descriptors: %u at start, %u with %d clients", base_fds,
                   peak_fds, IDLE_CLIENTS);
    g_assert_cmpuint(peak_fds, <=, DAEMON_FD_BOUND);

    /* Every idle client is closed: 2 s of timeout, 1 s of sweep, and
     * slack for a loaded machine. */
    t0 = g_get_monotonic_time();
    g_assert_cmpuint(wait_all_closed(fds, IDLE_CLIENTS, 30), ==, 0);
    g_test_message("all idle clients closed after %.1f s",
                   (g_get_monotonic_time() - t0) / 1e6);
    /* The client sees the shutdown before the daemon closes its end. */
    fw = (FdWait){ d->pid, base_fds + 2 };
    if (!pt_test_wait(fds_back_to, &fw, 10000))
        g_error("the daemon still holds %u descriptors, %u at start", count_fds(d->pid),
                base_fds);

    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/metrics/idle-flood", test_idle_flood);
    return g_test_run();
}
