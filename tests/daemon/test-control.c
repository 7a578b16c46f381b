/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control server's connection handling, in process: what a client
 * does before, during and after the greeting must never take the daemon
 * down.  No daemon is attached (NULL), so only the paths that run before a
 * command is dispatched are exercised here; commands are tested against
 * the real daemon in tests/cli and tests/fault.
 */
#include "pt-control.h"
#include "pt-fd-send.h"

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef struct {
    char *dir;
    char *path;
    PtControl *ctl;
} Fixture;

static void
fixture_setup(Fixture *f, gconstpointer data)
{
    const PtControlLimits *lim = data;
    g_autoptr(GError) err = NULL;

    f->dir = g_dir_make_tmp("pt-control-XXXXXX", &err);
    g_assert_no_error(err);
    f->path = g_build_filename(f->dir, "control.sock", NULL);
    f->ctl = pt_control_new(NULL, f->path, NULL, NULL, lim, &err);
    g_assert_no_error(err);
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
    g_clear_pointer(&f->ctl, pt_control_free);
    /* Let the deferred frees of closed connections run. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_rmdir(f->dir);
    g_free(f->path);
    g_free(f->dir);
}

static int
client_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    return fd;
}

/* Run the loop until @fd has a line to read (or @timeout_ms passes). */
static char *
client_read_line(int fd, guint timeout_ms)
{
    g_autoptr(GString) line = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + timeout_ms * 1000;

    while (g_get_monotonic_time() < deadline) {
        char c;
        ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

        if (n == 1) {
            if (c == '\n')
                return g_string_free(g_steal_pointer(&line), FALSE);
            g_string_append_c(line, c);
            continue;
        }
        if (n == 0)
            break;
        g_assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return NULL;
}

static void
spin(guint ms)
{
    gint64 until = g_get_monotonic_time() + ms * 1000;

    while (g_get_monotonic_time() < until) {
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
}

/* A client that is gone before the daemon accepts it: the greeting fails
 * to send and closes the connection, and the accept path must not touch
 * it afterwards (this used to be a NULL dereference in pt_conn_touch). */
static void
test_close_before_accept(Fixture *f, gconstpointer data)
{
    g_autofree char *greeting = NULL;
    int fd;

    for (int i = 0; i < 200; i++) {
        fd = client_connect(f->path);
        close(fd);
        if (i % 8 == 7)
            spin(5);
    }
    spin(50);
    g_assert_cmpuint(pt_control_n_connections(f->ctl), ==, 0);

    /* And the server still answers the next client. */
    fd = client_connect(f->path);
    greeting = client_read_line(fd, 5000);
    g_assert_nonnull(greeting);
    g_assert_true(g_str_has_prefix(greeting, "{\"QMP\""));
    close(fd);
}

static void
client_send(int fd, const char *text)
{
    g_assert_cmpint(send(fd, text, strlen(text), MSG_NOSIGNAL), ==, (ssize_t)strlen(text));
}

/* A malformed request is answered, and the next line is a request again:
 * "{not json" used to swallow every later request until the idle close. */
static void
test_framing_resync(Fixture *f, gconstpointer data)
{
    static const char *const bad[] = {
        "{not json\n",
        "garbage \x01\xff\n",
        "{\"execute\": \"x\", \"arguments\": {\"s\": \"unterminated\n",
        "}}}]]\n",
        "[1, 2]\n",
        "42\n",
    };
    int fd = client_connect(f->path);
    g_autofree char *greeting = client_read_line(fd, 5000);

    g_assert_nonnull(greeting);
    for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *err = NULL;
        g_autofree char *next = NULL;
        g_autofree char *want = g_strdup_printf("\"id\":%zu", i);
        g_autofree char *req = g_strdup_printf("{\"execute\": \"no-such-command\", "
                                               "\"id\": %zu}\n", i);

        client_send(fd, bad[i]);
        client_send(fd, req);
        err = client_read_line(fd, 5000);
        g_assert_nonnull(err);
        {
            g_autofree char *shown = g_strescape(bad[i], NULL);

            g_test_message("%s -> %s", shown, err);
        }
        g_assert_nonnull(strstr(err, "InvalidParameter"));
        next = client_read_line(fd, 5000);
        g_assert_nonnull(next);
        g_assert_nonnull(strstr(next, "CommandNotFound"));
        g_assert_nonnull(strstr(next, want));
    }
    close(fd);
}

/* An over-long line still closes the connection, with an answer. */
static void
test_framing_too_big(Fixture *f, gconstpointer data)
{
    int fd = client_connect(f->path);
    g_autofree char *greeting = client_read_line(fd, 5000);
    g_autofree char *big = g_strnfill(70 * 1024, 'a');
    g_autofree char *err = NULL;

    g_assert_nonnull(greeting);
    client_send(fd, "{\"execute\": \"");
    client_send(fd, big);
    err = client_read_line(fd, 5000);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err, "TooLarge"));
    g_assert_null(client_read_line(fd, 2000));
    close(fd);
}

/* A request sent before the idle timeout, read only after it because the
 * loop was held (a long first tick of a large host): answered, not closed
 * as idle.  A client that sends nothing is still closed. */
static void
test_idle_request_waiting(Fixture *f, gconstpointer data)
{
    int fd = client_connect(f->path);
    int quiet = client_connect(f->path);
    g_autofree char *greeting = client_read_line(fd, 5000);
    g_autofree char *greeting2 = client_read_line(quiet, 5000);
    g_autofree char *reply = NULL;

    g_assert_nonnull(greeting);
    g_assert_nonnull(greeting2);
    client_send(fd, "{\"execute\": \"no-such-command\", \"id\": 7}\n");
    /* The loop held past the timeout, as a long tick holds it. */
    g_usleep(3 * 300 * 1000);
    reply = client_read_line(fd, 5000);
    g_assert_nonnull(reply);
    g_assert_nonnull(strstr(reply, "CommandNotFound"));
    g_assert_null(client_read_line(quiet, 2000));
    close(quiet);
    close(fd);
}

/*
 * A client process running as @uid that opens @n connections, writes one
 * byte per connection to @report ('G' greeting, 'B' Busy, 'X' anything
 * else), and holds them until @hold's write end is closed.
 */
static pid_t
client_spawn(const char *path, uid_t uid, int n, int report, const int hold[2])
{
    pid_t pid = fork();

    g_assert_cmpint(pid, >=, 0);
    if (pid > 0)
        return pid;
    close(hold[1]);     /* or the parent's close would not reach us */
    if (setresgid(uid, uid, uid) < 0 || setgroups(0, NULL) < 0 || setresuid(uid, uid, uid) < 0)
        _exit(2);
    for (int i = 0; i < n; i++) {
        struct sockaddr_un sun = { .sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = 10 };
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        char buf[512];
        ssize_t got;
        char verdict = 'X';

        g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
        if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
            got = recv(fd, buf, sizeof(buf) - 1, 0);
            if (got > 0) {
                buf[got] = 0;
                verdict = strstr(buf, "\"QMP\"") ? 'G' : strstr(buf, "Busy") ? 'B' : 'X';
            }
        }
        if (write(report, &verdict, 1) != 1)
            _exit(3);
    }
    {
        char c;

        (void)!read(hold[0], &c, 1);
    }
    _exit(0);
}

/* Run the loop until @n verdicts came from @report. */
static char *
client_verdicts(int report, int n)
{
    g_autoptr(GString) out = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;

    while ((int)out->len < n && g_get_monotonic_time() < deadline) {
        char c;

        if (recv(report, &c, 1, MSG_DONTWAIT) == 1) {
            g_string_append_c(out, c);
            continue;
        }
        g_main_context_iteration(NULL, FALSE);
        g_usleep(1000);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* Root's own connections: 'G' or 'B' per connection, fds kept in @fds. */
static char *
root_connect(Fixture *f, int n, GArray *fds)
{
    g_autoptr(GString) out = g_string_new(NULL);

    for (int i = 0; i < n; i++) {
        int fd = client_connect(f->path);
        g_autofree char *line = client_read_line(fd, 5000);

        g_assert_nonnull(line);
        g_string_append_c(out, strstr(line, "\"QMP\"") ? 'G' :
                               strstr(line, "Busy") ? 'B' : 'X');
        g_array_append_val(fds, fd);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/*
 * No uid but root can fill the server: one uid gets at most max_per_uid
 * connections, and the last `reserved` are for root and the admin group.
 * The 64-connection cap used to be global, so any member of the control
 * group could lock root out.
 */
static void
test_admission(Fixture *f, gconstpointer data)
{
    g_autoptr(GArray) fds = g_array_new(FALSE, FALSE, sizeof(int));
    g_autofree char *a = NULL, *b = NULL, *r1 = NULL, *r2 = NULL;
    int rep[2], hold[2], status;
    pid_t pa, pb;

    if (geteuid() != 0) {
        g_test_skip("needs root to connect as other uids");
        return;
    }
    g_assert_cmpint(chmod(f->dir, 0755), ==, 0);
    g_assert_cmpint(chmod(f->path, 0666), ==, 0);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, rep), ==, 0);
    g_assert_cmpint(pipe2(hold, O_CLOEXEC), ==, 0);

    /* limits: 8 in all, 2 reserved, 3 per uid */
    pa = client_spawn(f->path, 65534, 4, rep[1], hold);
    a = client_verdicts(rep[0], 4);
    g_assert_cmpstr(a, ==, "GGGB");
    r1 = root_connect(f, 3, fds);
    g_assert_cmpstr(r1, ==, "GGG");
    /* 6 of 8 are taken: another uid finds only the reserve left. */
    pb = client_spawn(f->path, 65533, 1, rep[1], hold);
    b = client_verdicts(rep[0], 1);
    g_assert_cmpstr(b, ==, "B");
    r2 = root_connect(f, 3, fds);
    g_assert_cmpstr(r2, ==, "GGB");
    g_assert_cmpuint(pt_control_n_connections(f->ctl), ==, 8);

    close(hold[1]);
    g_assert_cmpint(waitpid(pa, &status, 0), ==, pa);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_assert_cmpint(waitpid(pb, &status, 0), ==, pb);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (guint i = 0; i < fds->len; i++)
        close(g_array_index(fds, int, i));
    close(hold[0]);
    close(rep[0]);
    close(rep[1]);
}

/*
 * The replies' write (the control socket's and the metrics endpoint's):
 * a full socket stops it where the peer stopped reading, the rest goes
 * out once the peer reads, and a peer that hung up is a failure, not a
 * SIGPIPE.
 */
static void
test_send_pending(void)
{
    gsize len = 4 * 1024 * 1024, pos = 0, got = 0;
    g_autofree char *buf = g_malloc(len);
    char sink[65536];
    int sv[2];

    memset(buf, 'x', len);
    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_assert_cmpint(fcntl(sv[1], F_SETFL, O_NONBLOCK), ==, 0);
    /* more than a socket buffer holds: stops part way */
    g_assert_cmpint(pt_fd_send_pending(sv[0], buf, len, &pos), ==, PT_FD_SEND_AGAIN);
    g_assert_cmpuint(pos, >, 0);
    g_assert_cmpuint(pos, <, len);
    /* the reader drains; each call goes on where the last stopped */
    for (;;) {
        PtFdSendResult r = pt_fd_send_pending(sv[0], buf, len, &pos);
        ssize_t n;

        g_assert_cmpint(r, !=, PT_FD_SEND_FAILED);
        while ((n = read(sv[1], sink, sizeof(sink))) > 0)
            got += (gsize)n;
        if (r == PT_FD_SEND_DONE)
            break;
    }
    g_assert_cmpuint(pos, ==, len);
    g_assert_cmpint(pt_fd_send_pending(sv[0], buf, len, &pos), ==, PT_FD_SEND_DONE);
    close(sv[1]);
    pos = 0;
    g_assert_cmpint(pt_fd_send_pending(sv[0], buf, 10, &pos), ==, PT_FD_SEND_FAILED);
    g_assert_cmpuint(pos, ==, 0);
    close(sv[0]);
    g_assert_cmpuint(got, <=, len);
}

static const PtControlLimits default_limits = { 64, 64 * 1024, 50, 30000, 0, 0 };
static const PtControlLimits idle_limits = { 64, 64 * 1024, 50, 300, 0, 0 };
static const PtControlLimits small_limits = { 8, 64 * 1024, 50, 30000, 2, 3 };

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/control/send-pending", test_send_pending);
    g_test_add("/daemon/control/close-before-accept", Fixture, &default_limits,
               fixture_setup, test_close_before_accept, fixture_teardown);
    g_test_add("/daemon/control/framing-resync", Fixture, &default_limits,
               fixture_setup, test_framing_resync, fixture_teardown);
    g_test_add("/daemon/control/framing-too-big", Fixture, &default_limits,
               fixture_setup, test_framing_too_big, fixture_teardown);
    g_test_add("/daemon/control/idle-request-waiting", Fixture, &idle_limits,
               fixture_setup, test_idle_request_waiting, fixture_teardown);
    g_test_add("/daemon/control/admission", Fixture, &small_limits,
               fixture_setup, test_admission, fixture_teardown);
    return g_test_run();
}
