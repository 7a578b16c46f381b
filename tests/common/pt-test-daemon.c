/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-daemon.h"
#include "pt-test-child.h"
#include "qmp-json.h"     /* g_autoptr(json_object) */
#include <sqlite3.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

/* The socket file appears at bind(), a moment before listen(): a connect
 * in between is refused.  Ready means a connect is accepted. */
static gboolean
pt_test_socket_listens(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd;
    gboolean ok;

    if (!g_file_test(path, G_FILE_TEST_EXISTS))
        return FALSE;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    ok = fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

static gboolean
pt_test_daemon_spawn(PtTestDaemon *d, GError **error)
{
    const char *wrapper = g_getenv("PT_DAEMON_WRAPPER");
    g_auto(GStrv) wrap = NULL;
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    int log_fd;
    gint64 deadline;

    /* PT_DAEMON_WRAPPER, e.g. "valgrind --error-exitcode=99", runs the
     * daemon under a checker; the checker execs in place, so d->pid stays
     * the daemon's process for signals and /proc. */
    if (wrapper && *wrapper && !g_shell_parse_argv(wrapper, NULL, &wrap, error))
        return FALSE;
    for (guint i = 0; wrap && wrap[i]; i++)
        g_ptr_array_add(argv, wrap[i]);
    g_ptr_array_add(argv, d->binary);
    g_ptr_array_add(argv, (char *)"--foreground");
    g_ptr_array_add(argv, (char *)"--config");
    g_ptr_array_add(argv, d->conf_path);
    for (guint i = 0; d->args && d->args[i]; i++)
        g_ptr_array_add(argv, d->args[i]);
    g_ptr_array_add(argv, NULL);

    g_unlink(d->socket_path);
    log_fd = open(d->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s",
                    d->log_path, g_strerror(errno));
        return FALSE;
    }
    if (!g_spawn_async_with_fds(NULL, (char **)argv->pdata, NULL,
                                G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_SEARCH_PATH,
                                pt_test_child_setup, PT_TEST_CHILD_DATA, &d->pid, -1,
                                log_fd, log_fd, error)) {
        close(log_fd);
        return FALSE;
    }
    close(log_fd);
    /* A checker like valgrind needs far longer to start the daemon. */
    deadline = g_get_monotonic_time() + (wrap ? 120 : PT_TEST_START_S) * G_USEC_PER_SEC;
    while (!pt_test_socket_listens(d->socket_path)) {
        int status;

        if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
            g_autofree char *log = NULL;

            d->pid = 0;
            g_file_get_contents(d->log_path, &log, NULL, NULL);
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        "polltuned exited with status %d:\n%s", status, log ? log : "");
            return FALSE;
        }
        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                        "polltuned did not create %s in time", d->socket_path);
            return FALSE;
        }
        g_usleep(20000);
    }
    return TRUE;
}

/* The value a line of @body sets @key to, or NULL. */
static char *
pt_conf_body_value(const char *body, const char *key)
{
    g_auto(GStrv) lines = g_strsplit(body, "\n", -1);

    for (guint i = 0; lines[i]; i++) {
        const char *eq = strchr(lines[i], '=');
        g_autofree char *k = eq ? g_strstrip(g_strndup(lines[i], eq - lines[i])) : NULL;

        if (k && g_str_equal(k, key))
            return g_strstrip(g_strdup(eq + 1));
    }
    return NULL;
}

char *
pt_test_daemon_conf_text(PtTestDaemon *d, const char *conf_body)
{
    g_autofree char *db = pt_conf_body_value(conf_body, "database");
    g_autofree char *sock = pt_conf_body_value(conf_body, "control-socket");
    g_autofree char *db_line = db ? g_strdup("") :
        g_strdup_printf("database = %s\n", d->db_path);
    g_autofree char *sock_line = sock ? g_strdup("") :
        g_strdup_printf("control-socket = %s\n", d->socket_path);

    return g_strdup_printf("[daemon]\n%s%s%s", db_line, sock_line, conf_body);
}

char *
pt_test_daemon_conf_without(PtTestDaemon *d, const char *const *keys)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    GString *out = g_string_new(NULL);

    g_assert_true(g_file_get_contents(d->conf_path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *eq = strchr(lines[i], '=');
        g_autofree char *key = eq ? g_strstrip(g_strndup(lines[i], eq - lines[i])) : NULL;

        if (key && g_strv_contains(keys, key))
            continue;
        g_string_append(out, lines[i]);
        if (lines[i + 1])
            g_string_append_c(out, '\n');
    }
    return g_string_free(out, FALSE);
}

PtTestDaemon *
pt_test_daemon_start(const char *conf_body, GError **error)
{
    return pt_test_daemon_start_args(conf_body, NULL, error);
}

PtTestDaemon *
pt_test_daemon_start_args(const char *conf_body, const char *const *args, GError **error)
{
    g_autoptr(PtTestDaemon) d = g_new0(PtTestDaemon, 1);
    g_autofree char *conf = NULL;
    const char *build = g_getenv("PT_BUILD_ROOT");

    d->binary = g_build_filename(build ? build : ".", "daemon", "polltuned", NULL);
    d->args = g_strdupv((char **)args);
    d->dir = g_dir_make_tmp("pt-daemon-XXXXXX", error);
    if (!d->dir)
        return NULL;
    d->conf_path = g_build_filename(d->dir, "polltuned.conf", NULL);
    d->db_path = g_build_filename(d->dir, "history.db", NULL);
    d->socket_path = g_build_filename(d->dir, "control.sock", NULL);
    d->log_path = g_build_filename(d->dir, "polltuned.log", NULL);
    {
        /* A body that names its own database or socket: those are the
         * daemon's (a key may be set once). */
        char *db = pt_conf_body_value(conf_body, "database");
        char *sock = pt_conf_body_value(conf_body, "control-socket");

        if (db) {
            g_free(d->db_path);
            d->db_path = db;
        }
        if (sock) {
            g_free(d->socket_path);
            d->socket_path = sock;
        }
    }
    conf = pt_test_daemon_conf_text(d, conf_body);
    if (!g_file_set_contents(d->conf_path, conf, -1, error))
        return NULL;
    if (!pt_test_daemon_spawn(d, error))
        return NULL;
    return g_steal_pointer(&d);
}

gboolean
pt_test_daemon_restart(PtTestDaemon *d, GError **error)
{
    g_return_val_if_fail(d->pid == 0, FALSE);
    return pt_test_daemon_spawn(d, error);
}

int
pt_test_daemon_stop(PtTestDaemon *d)
{
    if (d->pid > 0)
        kill(d->pid, SIGTERM);
    return pt_test_daemon_reap(d);
}

int
pt_test_daemon_reap(PtTestDaemon *d)
{
    int status = -1;

    if (d->pid > 0) {
        waitpid(d->pid, &status, 0);
        g_spawn_close_pid(d->pid);
        d->pid = 0;
    }
    return status;
}

void
pt_test_daemon_kill(PtTestDaemon *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        g_spawn_close_pid(d->pid);
        d->pid = 0;
    }
}

void
pt_test_rm_rf(const char *dir)
{
    g_autoptr(GDir) gd = g_dir_open(dir, 0, NULL);
    const char *n;

    while (gd && (n = g_dir_read_name(gd))) {
        g_autofree char *p = g_build_filename(dir, n, NULL);

        if (g_file_test(p, G_FILE_TEST_IS_DIR) && !g_file_test(p, G_FILE_TEST_IS_SYMLINK))
            pt_test_rm_rf(p);
        else
            g_unlink(p);
    }
    g_rmdir(dir);
}

/*
 * How long a teardown waits for a clean stop before it kills: a stop puts
 * each QEMU's values back within a few hundred ms on a quiet machine, and
 * nothing asserts on a teardown's stop, so one that takes longer (a QEMU
 * the test left stopped, a loaded machine) is cut short, not waited out.
 */
#define PT_TEST_TEARDOWN_STOP_MS 5000

void
pt_test_daemon_free(PtTestDaemon *d)
{
    if (!d)
        return;
    if (d->stop_at_free && d->pid > 0) {
        gint64 deadline = g_get_monotonic_time() + PT_TEST_TEARDOWN_STOP_MS * 1000;
        pid_t got;

        kill(d->pid, SIGTERM);
        while ((got = waitpid(d->pid, NULL, WNOHANG)) == 0 &&
               g_get_monotonic_time() < deadline)
            g_usleep(10000);
        if (got != 0) {
            g_spawn_close_pid(d->pid);
            d->pid = 0;
        }
    }
    pt_test_daemon_kill(d);
    if (d->dir && !g_getenv("PT_KEEP_TEST_DIRS"))
        pt_test_rm_rf(d->dir);
    g_free(d->dir);
    g_free(d->conf_path);
    g_free(d->db_path);
    g_free(d->socket_path);
    g_free(d->log_path);
    g_free(d->binary);
    g_strfreev(d->args);
    g_free(d);
}

/* A connection's input, read in chunks: a status reply of a large host
 * is megabytes, too many for a read(2) per byte. */
typedef struct {
    int fd;
    GString *buf;
} PtLineReader;

static char *
pt_read_line(PtLineReader *r, GError **error)
{
    for (;;) {
        char *nl = memchr(r->buf->str, '\n', r->buf->len);
        char chunk[65536];
        ssize_t n;

        if (nl) {
            char *line = g_strndup(r->buf->str, nl - r->buf->str);

            g_string_erase(r->buf, 0, nl - r->buf->str + 1);
            return line;
        }
        n = read(r->fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "control socket closed");
            return NULL;
        }
        g_string_append_len(r->buf, chunk, n);
    }
}

json_object *
pt_test_daemon_call(PtTestDaemon *d, const char *command, const char *args_json,
                    GError **error)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    g_autofree char *greeting = NULL;
    g_autofree char *req = NULL;
    g_autoptr(GString) buf = g_string_new(NULL);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    PtLineReader r = { fd, buf };
    json_object *reply = NULL;

    g_strlcpy(sun.sun_path, d->socket_path, sizeof(sun.sun_path));
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s",
                    d->socket_path, g_strerror(errno));
        close(fd);
        return NULL;
    }
    greeting = pt_read_line(&r, error);
    if (!greeting) {
        close(fd);
        return NULL;
    }
    req = g_strdup_printf("{\"execute\": \"%s\", \"arguments\": %s, \"id\": 1}\n",
                          command, args_json ? args_json : "{}");
    if (write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "write failed");
        close(fd);
        return NULL;
    }
    for (;;) {
        g_autofree char *line = pt_read_line(&r, error);

        if (!line)
            break;
        reply = json_tokener_parse(line);
        if (reply && json_object_object_get_ex(reply, "event", NULL)) {
            json_object_put(reply);
            reply = NULL;
            continue;
        }
        break;
    }
    close(fd);
    return reply;
}

gboolean
pt_test_skip_without_nobody(void)
{
    if (geteuid() != 0) {
        g_test_skip("needs root to act as another uid");
        return TRUE;
    }
    if (!getgrgid(65534)) {
        g_test_skip("no group 65534 (nogroup) on this system");
        return TRUE;
    }
    return FALSE;
}

json_object *
pt_test_daemon_call_as(PtTestDaemon *d, uid_t uid, gid_t gid, const char *command,
                       const char *args_json)
{
    g_autoptr(GString) text = g_string_new(NULL);
    int pipefd[2];
    pid_t pid;
    char buf[4096];
    ssize_t n;
    int status;
    json_object *reply;

    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        g_autoptr(json_object) r = NULL;
        const char *out;

        close(pipefd[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (setgroups(1, &gid) < 0 || setgid(gid) < 0 || setuid(uid) < 0)
            _exit(3);
        r = pt_test_daemon_call(d, command, args_json, NULL);
        out = r ? json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN) : "null";
        _exit(write(pipefd[1], out, strlen(out)) == (ssize_t)strlen(out) ? 0 : 4);
    }
    close(pipefd[1]);
    while ((n = read(pipefd[0], buf, sizeof(buf))) > 0)
        g_string_append_len(text, buf, n);
    close(pipefd[0]);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    reply = json_tokener_parse(text->str);
    /* "null": the daemon closed the connection without a reply. */
    return reply;
}

json_object *
pt_test_daemon_ok(PtTestDaemon *d, const char *command, const char *args_json)
{
    g_autoptr(GError) err = NULL;
    json_object *reply = pt_test_daemon_call(d, command, args_json, &err);
    json_object *ret = NULL;

    g_assert_no_error(err);
    g_assert_nonnull(reply);
    if (!json_object_object_get_ex(reply, "return", &ret))
        g_error("%s %s: %s", command, args_json ? args_json : "",
                json_object_to_json_string(reply));
    json_object_get(ret);
    json_object_put(reply);
    return ret;
}

guint
pt_test_wait_ms(guint ms)
{
    return MAX(ms, PT_TEST_WAIT_MIN_MS);
}

gboolean
pt_test_wait(gboolean (*cond)(gpointer), gpointer data, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)pt_test_wait_ms(timeout_ms) * 1000;

    while (!cond(data)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
    return TRUE;
}

json_object *
pt_json_path(json_object *root, const char *path)
{
    g_auto(GStrv) parts = g_strsplit(path, "/", -1);
    json_object *cur = root;

    for (guint i = 0; cur && parts[i]; i++) {
        if (json_object_is_type(cur, json_type_array)) {
            gsize idx = g_ascii_strtoull(parts[i], NULL, 10);

            cur = idx < json_object_array_length(cur) ? json_object_array_get_idx(cur, idx) : NULL;
        } else if (!json_object_object_get_ex(cur, parts[i], &cur)) {
            cur = NULL;
        }
    }
    return cur;
}

gint64
pt_json_path_int(json_object *root, const char *path)
{
    json_object *v = pt_json_path(root, path);

    return v ? json_object_get_int64(v) : G_MININT64;
}

const char *
pt_json_path_str(json_object *root, const char *path)
{
    json_object *v = pt_json_path(root, path);

    return v ? json_object_get_string(v) : NULL;
}

json_object *
pt_test_status_target(json_object *status, const char *name)
{
    json_object *tl = pt_json_path(status, "targets");

    for (size_t i = 0; tl && i < json_object_array_length(tl); i++) {
        json_object *t = json_object_array_get_idx(tl, i);

        if (g_strcmp0(pt_json_path_str(t, "name"), name) == 0 ||
            g_strcmp0(pt_json_path_str(t, "display_name"), name) == 0)
            return t;
    }
    return NULL;
}

json_object *
pt_test_status_iothread(json_object *status, const char *target, const char *id)
{
    json_object *t = pt_test_status_target(status, target);
    json_object *ios = t ? pt_json_path(t, "iothreads") : NULL;

    for (size_t i = 0; ios && i < json_object_array_length(ios); i++) {
        json_object *io = json_object_array_get_idx(ios, i);

        if (g_strcmp0(pt_json_path_str(io, "id"), id) == 0)
            return io;
    }
    return NULL;
}

gboolean
pt_test_daemon_wait(PtDaemonWait *w, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)pt_test_wait_ms(ms) * 1000;
    gint64 t0 = g_get_monotonic_time();

    for (;;) {
        g_autoptr(json_object) reply = pt_test_daemon_ok(w->d, w->command ? w->command : "status",
                                                         NULL);

        if (w->check(reply, w)) {
            w->took_ms = (g_get_monotonic_time() - t0) / 1000;
            return TRUE;
        }
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
}

static gboolean
pt_test_target_is(json_object *list, const PtDaemonWait *w)
{
    json_object *t = pt_test_status_target(list, w->target);
    gboolean attached = t && g_strcmp0(pt_json_path_str(t, "state"), "attached") == 0 &&
                        (!w->value || (gint64)json_object_array_length(pt_json_path(t, "iothreads"))
                                      == w->value);

    return attached == w->want;
}

gint64
pt_test_wait_target(PtTestDaemon *d, const char *target, guint n_iothreads, gboolean want,
                    guint ms)
{
    PtDaemonWait w = { d, "list", pt_test_target_is, .target = target, .value = n_iothreads,
                       .want = want };

    return pt_test_daemon_wait(&w, ms) ? w.took_ms : -1;
}

gint64
pt_test_daemon_ticks(PtTestDaemon *d)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

    return pt_json_path_int(st, "ticks");
}

static gboolean
pt_test_ticks_reached(json_object *status, const PtDaemonWait *w)
{
    return pt_json_path_int(status, "ticks") >= w->value;
}

gboolean
pt_test_wait_ticks(PtTestDaemon *d, gint64 ticks, guint ms)
{
    PtDaemonWait w = { d, "status", pt_test_ticks_reached, .value = ticks };

    return pt_test_daemon_wait(&w, ms);
}

static gboolean
pt_test_stored_past(json_object *status, const PtDaemonWait *w)
{
    json_object *io = pt_test_status_iothread(status, w->target, w->iothread);

    return pt_json_path_int(status, "store/pending") == 0 && io &&
           pt_json_path_int(io, "metrics/ts_ms") > w->value;
}

gboolean
pt_test_wait_stored(PtTestDaemon *d, const char *target, const char *iothread,
                    gint64 after_ms, guint ms)
{
    PtDaemonWait w = { d, "status", pt_test_stored_past, target, iothread, after_ms };

    return pt_test_daemon_wait(&w, ms);
}

guint
pt_test_daemon_log_count(PtTestDaemon *d, const char *needle)
{
    g_autofree char *log = NULL;
    guint n = 0;

    g_file_get_contents(d->log_path, &log, NULL, NULL);
    for (const char *p = log; p && (p = strstr(p, needle)); p++)
        n++;
    return n;
}

gboolean
pt_test_wait_log(PtTestDaemon *d, const char *needle, guint n, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)pt_test_wait_ms(ms) * 1000;

    while (pt_test_daemon_log_count(d, needle) < n) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
    return TRUE;
}

char *
pt_test_daemon_class_as(PtTestDaemon *d, uid_t uid, gid_t gid, const char *command,
                        const char *args_json)
{
    g_autoptr(json_object) reply = pt_test_daemon_call_as(d, uid, gid, command, args_json);

    if (!reply)
        return g_strdup("io");
    return g_strdup(pt_json_path(reply, "return") ? "ok" :
                    pt_json_path_str(reply, "error/class"));
}

gint64
pt_test_daemon_stored_originals(PtTestDaemon *d, const char *target)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    gint64 n = -1;

    g_assert_cmpint(sqlite3_open_v2(d->db_path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_prepare_v2(db, "SELECT count(*) FROM originals o JOIN iothreads i"
                                       " ON i.id = o.iothread_id JOIN targets t"
                                       " ON t.id = i.target_id WHERE t.name = ?", -1, &st,
                                       NULL), ==, SQLITE_OK);
    sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

gint64
pt_test_daemon_targets_in_state(PtTestDaemon *d, const char *state)
{
    g_autoptr(json_object) m = pt_test_daemon_ok(d, "metrics", NULL);
    g_autofree char *key = g_strdup_printf("\npolltune_targets{state=\"%s\"} ", state);
    const char *at = strstr(pt_json_path_str(m, "text"), key);

    return at ? g_ascii_strtoll(at + strlen(key), NULL, 10) : -1;
}

gboolean
pt_test_target_in_state(json_object *status, const PtDaemonWait *w)
{
    json_object *t = pt_test_status_target(status, w->target);

    return t && g_strcmp0(pt_json_path_str(t, "state"), w->iothread) == 0;
}
