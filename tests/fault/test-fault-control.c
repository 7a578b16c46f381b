/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Faults on the operator side: a flood of malformed and oversized control
 * requests from 50 clients at once plus one client that connects and never
 * sends, and a reload (SIGHUP) with a broken configuration file.  The tick
 * must not stall during the flood, and a bad reload keeps the old config.
 *
 * A libvirtd restart during sampling is covered by the daemon suite's
 * libvirt cases, which start their own libvirtd; it is skipped here.
 */
#include "fault-common.h"

#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define FLOOD_CLIENTS 50
#define FLOOD_PER_CLIENT 20

typedef struct {
    const char *socket_path;
    guint index;
    guint sent, answered, refused;
} FloodClient;

static int
control_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = 3 };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    return fd;
}

/* Read one line; FALSE on close or timeout.  @line may be NULL. */
static gboolean
control_read_line(int fd, GString *line)
{
    char c;

    if (line)
        g_string_truncate(line, 0);
    for (;;) {
        ssize_t n = read(fd, &c, 1);

        if (n <= 0)
            return FALSE;
        if (c == '\n')
            return TRUE;
        if (line && line->len < 4096)
            g_string_append_c(line, c);
    }
}

/* The k-th bad request; oversized ones are built on the fly. */
static char *
flood_request(guint k)
{
    static const char *const bad[] = {
        "garbage \x01\x02\xff\n",
        "{\"execute\": 42}\n",
        "{\"execute\": \"no-such-command\", \"id\": 1}\n",
        "{\"execute\": \"show\", \"arguments\": \"not an object\"}\n",
        "{\"execute\": \"history\", \"arguments\": {\"target\": 7, \"ticks\": -5}}\n",
        "[1, 2, 3]\n",
        "{\"execute\": \"status\", \"arguments\": {\"x\": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}\n",
        "{\"execute\": \"mode-set\", \"arguments\": {\"mode\": \"chaos\"}}\n",
        "{\"execute\": \"override-set\", \"arguments\": {\"target\": \"healthy\", \"for\": \"-1s\"}}\n",
        "{\"execute\": \"policy-set\", \"arguments\": {\"policy\": \"static:x/y/z\"}}\n",
        "{\"id\": {\"nested\": true}}\n",
        "{\"execute\": \"version\", \"arguments\": {}, \"id\": \"\\ud800\"}\n",
    };

    if (k % 7 == 6) {
        /* 1 MiB inside a string: past any sane request bound. */
        g_autoptr(GString) s = g_string_new("{\"execute\": \"status\", \"arguments\": {\"x\": \"");

        for (guint i = 0; i < 1024 * 1024 / 64; i++)
            g_string_append(s, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
        g_string_append(s, "\"}}\n");
        return g_string_free(g_steal_pointer(&s), FALSE);
    }
    return g_strdup(bad[k % G_N_ELEMENTS(bad)]);
}

static gpointer
flood_thread(gpointer data)
{
    FloodClient *c = data;
    g_autoptr(GString) line = g_string_new(NULL);
    int fd = -1;

    for (guint i = 0; i < FLOOD_PER_CLIENT; i++) {
        g_autofree char *req = flood_request(c->index * FLOOD_PER_CLIENT + i);
        size_t len = strlen(req);

        if (fd < 0) {
            fd = control_connect(c->socket_path);
            if (fd < 0 || !control_read_line(fd, line) || !strstr(line->str, "QMP")) {
                /* Refused (too many connections) or the greeting said so. */
                c->refused++;
                if (fd >= 0)
                    close(fd);
                fd = -1;
                g_usleep(20000);
                continue;
            }
        }
        c->sent++;
        if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len || !control_read_line(fd, line)) {
            /* The daemon may hang up on an oversized or abusive client. */
            close(fd);
            fd = -1;
            continue;
        }
        if (strstr(line->str, "\"error\""))
            c->answered++;
    }
    if (fd >= 0)
        close(fd);
    return NULL;
}

static void
test_control_flood(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    FloodClient clients[FLOOD_CLIENTS];
    GThread *threads[FLOOD_CLIENTS];
    guint sent = 0, answered = 0, refused = 0;
    gint done = 0;
    int silent;

    if (!fc)
        return;
    fault_daemon_start(fc, NULL);
    /* Connects, takes the greeting into its buffer, never says a word. */
    silent = control_connect(fc->d->socket_path);
    g_assert_cmpint(silent, >=, 0);
    for (guint i = 0; i < FLOOD_CLIENTS; i++) {
        clients[i] = (FloodClient){ .socket_path = fc->d->socket_path, .index = i };
        threads[i] = g_thread_new("flood", flood_thread, &clients[i]);
    }
    /* While the flood runs the tick goes on; watch it second by second. */
    for (guint s = 0; s < 120 && !done; s++) {
        fault_assert_healthy_for(fc, 1);
        done = TRUE;
        for (guint i = 0; i < FLOOD_CLIENTS; i++)
            if (clients[i].sent + clients[i].refused < FLOOD_PER_CLIENT)
                done = FALSE;
    }
    for (guint i = 0; i < FLOOD_CLIENTS; i++) {
        g_thread_join(threads[i]);
        sent += clients[i].sent;
        answered += clients[i].answered;
        refused += clients[i].refused;
    }
    g_test_message("flood: %u sent, %u answered with an error, %u connections refused",
                   sent, answered, refused);
    g_assert_cmpuint(sent + refused, ==, FLOOD_CLIENTS * FLOOD_PER_CLIENT);
    g_assert_cmpuint(sent, >=, FLOOD_CLIENTS * FLOOD_PER_CLIENT / 2);
    /* Nothing malformed may have been taken for a valid request. */
    g_assert_cmpuint(answered, >, 0);
    fault_assert_healthy_for(fc, 2);
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(fc->d, "status", NULL);

        g_assert_cmpstr(pt_json_path_str(st, "mode"), ==, "enforce");
    }
    close(silent);
    fault_case_finish(fc);
}

static void
test_reload_broken(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *good = NULL;
    g_autofree char *log = NULL;
    g_autofree char *faster = NULL;
    g_autoptr(json_object) reply = NULL;
    json_object *st;

    if (!fc)
        return;
    fault_daemon_start(fc, NULL);
    g_assert_true(g_file_get_contents(fc->d->conf_path, &good, NULL, &err));
    g_assert_no_error(err);
    g_assert_true(g_file_set_contents(fc->d->conf_path,
                                      "[daemon]\ninterval = banana\n[[[ not a group\n", -1, &err));
    kill(fc->d->pid, SIGHUP);
    fault_assert_healthy_for(fc, 3);
    st = pt_test_daemon_ok(fc->d, "status", NULL);
    g_assert_cmpint(pt_json_path_int(st, "interval_ms"), ==, 1000);
    g_assert_cmpstr(pt_json_path_str(st, "mode"), ==, "enforce");
    json_object_put(st);
    g_assert_true(g_file_get_contents(fc->d->log_path, &log, NULL, NULL));
    g_assert_nonnull(strstr(log, fc->d->conf_path));

    /* The same through the control socket: an error, and still the old. */
    reply = pt_test_daemon_call(fc->d, "reload", NULL, &err);
    g_assert_no_error(err);
    g_assert_true(json_object_object_get_ex(reply, "error", NULL));
    fault_assert_healthy_for(fc, 2);

    /* A good file afterwards is taken. */
    g_assert_true(g_file_set_contents(fc->d->conf_path, good, -1, &err));
    {
        g_autofree char *rest = pt_test_daemon_conf_without(fc->d, (const char *const[]){
                                                                "interval", NULL });

        faster = g_strconcat(rest, "[daemon]\ninterval = 500ms\n", NULL);
    }
    g_assert_true(g_file_set_contents(fc->d->conf_path, faster, -1, &err));
    kill(fc->d->pid, SIGHUP);
    g_usleep(1500000);
    st = pt_test_daemon_ok(fc->d, "status", NULL);
    g_assert_cmpint(pt_json_path_int(st, "interval_ms"), ==, 500);
    json_object_put(st);
    fault_assert_healthy_for(fc, 2);
    fault_case_finish(fc);
}

#define LOW_NOFILE 64
#define ROOT_CLIENTS 60

/*
 * Under "ulimit -n 64" the control socket's cap of 64 connections used
 * to stand: 60 root clients took every descriptor, and the daemon could
 * open neither its QMP sockets nor its files.  The cap is now lowered to a
 * quarter of the limit (logged), the clients beyond it are refused with
 * Busy, and tuning goes on while they hold theirs.
 */
static void
test_low_nofile(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(GString) verdicts = g_string_new(NULL);
    g_autoptr(GString) line = g_string_new(NULL);
    g_autofree char *conf = NULL;
    g_autofree char *want = NULL;
    g_autofree char *log = NULL;
    int fds[ROOT_CLIENTS];
    guint cap = LOW_NOFILE / 4;

    if (!fc)
        return;
    conf = g_strdup_printf("interval = 1s\nqmp-timeout = 500ms\nmetrics-listen =\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = static:40000/2/2\nmin-dwell = 0\n", fc->dir);
    fc->d = fault_daemon_start_nofile(conf, LOW_NOFILE);
    if (!fc->d)
        return;
    g_assert_true(fault_wait_attached(fc, "healthy", 2, 30000));
    /* Root's clients, one after the other, each until its first line. */
    for (guint i = 0; i < ROOT_CLIENTS; i++) {
        fds[i] = control_connect(fc->d->socket_path);
        if (fds[i] < 0 || !control_read_line(fds[i], line))
            g_string_append_c(verdicts, 'X');
        else
            g_string_append_c(verdicts, strstr(line->str, "\"QMP\"") ? 'G' :
                                        strstr(line->str, "Busy") ? 'B' : 'X');
    }
    g_test_message("%d root clients under a limit of %d descriptors: %s", ROOT_CLIENTS,
                   LOW_NOFILE, verdicts->str);
    for (guint i = 0; i < ROOT_CLIENTS; i++)
        g_assert_cmpint(verdicts->str[i], ==, i < cap ? 'G' : 'B');
    want = g_strdup_printf("control: at most %u connections, not 64: the descriptor limit "
                           "is %d", cap, LOW_NOFILE);
    g_assert_cmpuint(pt_test_daemon_log_count(fc->d, want), ==, 1);
    /* Tuning goes on while they hold the cap, but for the one slot the
     * health check asks through. */
    close(fds[0]);
    fds[0] = -1;
    fault_assert_healthy_for(fc, 3);
    for (guint i = 0; i < ROOT_CLIENTS; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    g_assert_true(g_file_get_contents(fc->d->log_path, &log, NULL, NULL));
    g_assert_null(strstr(log, "Too many open files"));
    fault_assert_healthy_for(fc, 2);
    fault_case_finish(fc);
}

static void
test_libvirtd_restart(void)
{
    g_test_skip("libvirtd restart during sampling is covered by the daemon suite's "
                "libvirt cases (test-libvirt), which run their own libvirtd");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/control/flood", test_control_flood);
    g_test_add_func("/fault/control/reload-broken", test_reload_broken);
    g_test_add_func("/fault/control/low-nofile", test_low_nofile);
    g_test_add_func("/fault/libvirt/libvirtd-restart", test_libvirtd_restart);
    return g_test_run();
}
