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
/* metrics-max-connections' default, 8 to spare, and the daemon's own
 * descriptors (stdio, log, database, control listener, GLib): generous,
 * yet far below the limit. */
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

/* ---- request bodies --------------------------------------------------- */

#define POST_CLIENTS 4
/* Each claims 1 GiB; none sends more than this, so that a server that
 * reads bodies (as the old one did) grows by hundreds of MiB here, not by
 * what would take the test machine down. */
#define POST_SEND_MAX (256u << 20)
/* What the daemon may grow by while they send: its own churn over the
 * test (ASan's 16 MB quarantine, sqlite's cache), far below the 1 GiB the
 * clients send between them. */
#define POST_RSS_GROWTH_MAX (48u << 20)

typedef struct {
    guint16 port;
    guint64 sent;
    char answer[512];
} PostClient;

static int
tcp_connect_blocking(guint16 port, guint timeout_s)
{
    struct timeval tv = { .tv_sec = timeout_s };
    int fd = tcp_connect_nonblock(port);
    struct pollfd p = { .fd = fd, .events = POLLOUT };

    g_assert_cmpint(poll(&p, 1, 10000), ==, 1);
    g_assert_cmpint(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK), ==, 0);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    return fd;
}

/* POST /metrics with Content-Length 1 GiB, then body bytes for as long as
 * the daemon takes them; then the answer. */
static gpointer
post_client(gpointer data)
{
    PostClient *c = data;
    static const char head[] = "POST /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                               "Content-Type: application/octet-stream\r\n"
                               "Content-Length: 1073741824\r\n\r\n";
    g_autofree char *chunk = g_malloc0(1 << 20);
    int fd = tcp_connect_blocking(c->port, 3);
    ssize_t n;

    g_assert_cmpint(send(fd, head, strlen(head), MSG_NOSIGNAL), ==, (ssize_t)strlen(head));
    /* A send that blocks for 3 s (SO_SNDTIMEO) means nobody reads. */
    while (c->sent < POST_SEND_MAX &&
           (n = send(fd, chunk, 1 << 20, MSG_NOSIGNAL)) > 0)
        c->sent += n;
    for (gsize got = 0; got < sizeof(c->answer) - 1; got += n)
        if ((n = recv(fd, c->answer + got, sizeof(c->answer) - 1 - got, 0)) <= 0)
            break;
    close(fd);
    return NULL;
}

static guint64
proc_status_kb(GPid pid, const char *field)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree char *text = NULL;
    const char *p;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    p = strstr(text, field);
    g_assert_nonnull(p);
    return g_ascii_strtoull(p + strlen(field) + 1, NULL, 10);
}

/* One request, its answer's status line. */
static char *
http_status_line(guint16 port, const char *request)
{
    int fd = tcp_connect_blocking(port, 10);
    g_autofree char *all = NULL;

    g_assert_cmpint(send(fd, request, strlen(request), MSG_NOSIGNAL), ==,
                    (ssize_t)strlen(request));
    all = read_all(fd, 10);
    close(fd);
    return g_strndup(all, strcspn(all, "\r\n"));
}

typedef struct {
    PtTestDaemon *d;
    gint64 worst_status_us;
} StatusTimes;

static void
note_status(json_object *status, gpointer data)
{
    StatusTimes *t = data;
    gint64 t0 = g_get_monotonic_time();

    json_object_put(pt_test_daemon_ok(t->d, "version", NULL));
    t->worst_status_us = MAX(t->worst_status_us, g_get_monotonic_time() - t0);
}

/*
 * POST /metrics with a 1 GiB Content-Length from 4 connections: the old
 * server read each body into memory before answering 405 (4 such clients
 * took the daemon from 18 MB to 745 MB and its ticks to 6-7 s).  Now only
 * the head is read: each is answered 405 at once, the daemon's memory does
 * not grow by what they send, and the tick and the control socket go on
 * as before.
 */
static void
test_post_body(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *conf = NULL;
    const char *asan = g_getenv("ASAN_OPTIONS");
    PostClient clients[POST_CLIENTS];
    GThread *threads[POST_CLIENTS];
    StatusTimes times = { 0 };
    guint16 port = free_tcp_port();
    guint64 rss0, hwm, sent = 0;

    if (!fc)
        return;
    /* ASan's quarantine (256 MB by default) would hide growth under its own. */
    if (!asan || !strstr(asan, "quarantine_size_mb")) {
        g_autofree char *opts = g_strdup_printf("%s%squarantine_size_mb=16", asan ? asan : "",
                                                asan && *asan ? ":" : "");

        g_setenv("ASAN_OPTIONS", opts, TRUE);
    }
    conf = g_strdup_printf("interval = 1s\nqmp-timeout = 500ms\n"
                           "metrics-listen = 127.0.0.1:%u\nmetrics-idle-timeout = 30s\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = static:40000/2/2\nmin-dwell = 0\n",
                           port, fc->dir);
    fc->d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
    g_assert_true(fault_wait_attached(fc, "healthy", 2, 30000));
    fault_assert_healthy_for(fc, 3);
    rss0 = proc_status_kb(fc->d->pid, "VmRSS:");

    for (guint i = 0; i < POST_CLIENTS; i++) {
        memset(&clients[i], 0, sizeof(clients[i]));
        clients[i].port = port;
        threads[i] = g_thread_new("post", post_client, &clients[i]);
    }
    /* While they send: ticks and samples every second, control at once. */
    times.d = fc->d;
    fault_assert_healthy_watch(fc, 8, note_status, &times);
    for (guint i = 0; i < POST_CLIENTS; i++) {
        g_thread_join(threads[i]);
        sent += clients[i].sent;
        g_test_message("client %u: %" G_GUINT64_FORMAT " bytes sent, answer: %s", i,
                       clients[i].sent, clients[i].answer);
        g_assert_true(g_str_has_prefix(clients[i].answer, "HTTP/1.1 405 "));
        g_assert_nonnull(strstr(clients[i].answer, "Allow: GET, HEAD"));
    }
    hwm = proc_status_kb(fc->d->pid, "VmHWM:");
    g_test_message("daemon RSS %" G_GUINT64_FORMAT " KiB before, peak %" G_GUINT64_FORMAT
                   " KiB after %" G_GUINT64_FORMAT " MiB sent; slowest control answer "
                   "%.0f ms", rss0, hwm, sent >> 20, times.worst_status_us / 1000.0);
    g_assert_cmpuint((hwm - MIN(hwm, rss0)) * 1024, <, POST_RSS_GROWTH_MAX);
    g_assert_cmpint(times.worst_status_us, <, 2 * G_USEC_PER_SEC);

    /* The other answers that never read a body, and a scrape as before. */
    {
        g_autofree char *big = g_strnfill(9000, 'a');
        g_autofree char *long_head = g_strdup_printf("GET /metrics HTTP/1.1\r\nX-Pad: %s"
                                                     "\r\n\r\n", big);
        static const struct {
            const char *request, *status;
        } cases[] = {
            { "GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello", "413" },
            { "GET /metrics HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", "413" },
            { "PUT /metrics HTTP/1.1\r\n\r\n", "405" },
            { "GET /other HTTP/1.1\r\n\r\n", "404" },
            { "GET /metrics\r\n\r\n", "400" },
            { "\x16\x03\x01\x02\x01\x01\n\n", "400" },
            { "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "200" },
            { "HEAD /metrics HTTP/1.1\r\n\r\n", "200" },
        };

        for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
            g_autofree char *line = http_status_line(port, cases[i].request);
            g_autofree char *want = g_strdup_printf("HTTP/1.1 %s ", cases[i].status);

            if (!g_str_has_prefix(line, want))
                g_error("request %u: '%s', not %s", i, line, want);
        }
        {
            g_autofree char *line = http_status_line(port, long_head);

            g_assert_true(g_str_has_prefix(line, "HTTP/1.1 431 "));
        }
    }
    fault_case_finish(fc);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/metrics/idle-flood", test_idle_flood);
    g_test_add_func("/fault/metrics/post-body", test_post_body);
    return g_test_run();
}
