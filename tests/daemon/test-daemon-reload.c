/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A reload never holds the daemon: a FIFO or another file that is not a
 * regular one at the configuration's path is refused at once, a file that
 * went away is refused rather than read as all defaults, and SIGTERM
 * during the reload of a large file stops the daemon at once.  In each
 * case the running configuration stays.  No QEMU needed.
 */
#include "pt-conf.h"
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "qmp-json.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>

/* Connect to @d's control socket, read the greeting and send @command:
 * the caller reads the reply, or does not.  Returns the socket. */
static int
send_request(PtTestDaemon *d, const char *command)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    g_autofree char *req = g_strdup_printf("{\"execute\": \"%s\", \"id\": 1}\n", command);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char c;

    g_assert_cmpint(fd, >=, 0);
    g_strlcpy(sun.sun_path, d->socket_path, sizeof(sun.sun_path));
    g_assert_cmpint(connect(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    do
        g_assert_cmpint(read(fd, &c, 1), ==, 1);
    while (c != '\n');
    g_assert_cmpint(write(fd, req, strlen(req)), ==, (gssize)strlen(req));
    return fd;
}

/* The reply to @command, or NULL when none came within @ms. */
static json_object *
call_within(PtTestDaemon *d, const char *command, guint ms)
{
    int fd = send_request(d, command);
    g_autoptr(GString) line = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;
    char c;

    for (;;) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;

        if (left <= 0 || poll(&p, 1, (int)left) <= 0 || read(fd, &c, 1) != 1) {
            close(fd);
            return NULL;
        }
        if (c == '\n')
            break;
        g_string_append_c(line, c);
    }
    close(fd);
    return json_tokener_parse(line->str);
}

/* The daemon's running configuration as a reply shows it. */
static void
assert_mode(PtTestDaemon *d, const char *mode)
{
    g_autoptr(json_object) r = pt_test_daemon_ok(d, "status", NULL);

    g_assert_cmpstr(pt_json_path_str(r, "mode"), ==, mode);
}

/* A daemon whose file sets mode recommend, where the default is enforce:
 * a reload read as all defaults would change the mode. */
static PtTestDaemon *
start_recommend(const char *more)
{
    return pt_test_daemon_up(NULL, "mode = recommend\nmetrics-listen =\n%s"
                             "[targets]\nlibvirt = false\n", more);
}

/* A refusal as the log and the reply say it, naming the file and @cause. */
static void
assert_refused(PtTestDaemon *d, json_object *reply, const char *cause)
{
    const char *desc = pt_json_path_str(reply, "error/desc");

    g_assert_nonnull(desc);
    g_assert_nonnull(strstr(desc, d->conf_path));
    g_assert_nonnull(strstr(desc, cause));
    g_assert_cmpuint(pt_test_daemon_log_count(d, "reload refused, keeping the running "
                                                 "configuration"), ==, 1);
}

/*
 * A FIFO at the configuration's path: open() without O_NONBLOCK waits for
 * a writer that never comes, and the daemon answered nothing after.  The
 * refusal comes at once, and the daemon answers and ticks on.
 */
static void
test_fifo(void)
{
    g_autoptr(PtTestDaemon) d = start_recommend("interval = 200ms\n");
    g_autoptr(json_object) r = NULL;
    gint64 ticks;

    g_assert_cmpint(g_unlink(d->conf_path), ==, 0);
    g_assert_cmpint(mkfifo(d->conf_path, 0600), ==, 0);
    /* Milliseconds on a quiet machine; the old daemon never answered. */
    r = call_within(d, "reload", pt_test_wait_ms(1000));
    g_assert_nonnull(r);
    assert_refused(d, r, "is a FIFO, not a regular file");
    assert_mode(d, "recommend");
    ticks = pt_test_daemon_ticks(d);
    g_assert_true(pt_test_wait_ticks(d, ticks + 2, 10000));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_unlink(d->conf_path);
}

/* A directory is no configuration either. */
static void
test_directory(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestDaemon) d = start_recommend("");
    g_autoptr(json_object) r = NULL;

    g_assert_cmpint(g_unlink(d->conf_path), ==, 0);
    g_assert_cmpint(g_mkdir(d->conf_path, 0700), ==, 0);
    r = pt_test_daemon_call(d, "reload", NULL, &err);
    g_assert_no_error(err);
    assert_refused(d, r, "is a directory, not a regular file");
    assert_mode(d, "recommend");
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_rmdir(d->conf_path);
}

/*
 * The file the daemon was started with, deleted: the old daemon read that
 * as a file with no keys and ran on the defaults (enforce, where the file
 * said recommend), and systemctl reload said it had reloaded.
 */
static void
test_deleted(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestDaemon) d = start_recommend("");
    g_autoptr(json_object) r = NULL;
    g_autofree char *ctl = g_build_filename(g_getenv("PT_BUILD_ROOT"), "cli", "polltunectl",
                                            NULL);
    const char *argv[] = { ctl, "--socket", d->socket_path, "reload", NULL };
    g_autofree char *out = NULL;
    int status;

    g_assert_cmpint(g_unlink(d->conf_path), ==, 0);
    r = pt_test_daemon_call(d, "reload", NULL, &err);
    g_assert_no_error(err);
    assert_refused(d, r, "No such file or directory");
    assert_mode(d, "recommend");

    /* What ExecReload runs: it fails, so systemctl reload does too. */
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                               NULL, NULL, &out, &status, &err));
    g_assert_no_error(err);
    g_assert_false(g_spawn_check_wait_status(status, NULL));
    g_assert_nonnull(strstr(out, "No such file or directory"));
    assert_mode(d, "recommend");
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
}

/* Whether "stopping" is in the log: the daemon has acted on SIGTERM. */
static gint64
wait_stopping_ms(PtTestDaemon *d, guint ms)
{
    gint64 start = g_get_monotonic_time();

    while (pt_test_daemon_log_count(d, "polltuned info: stopping") == 0) {
        if (g_get_monotonic_time() - start > (gint64)ms * 1000)
            return -1;
        g_usleep(5 * 1000);
    }
    return (g_get_monotonic_time() - start) / 1000;
}

/*
 * SIGTERM while a reload reads a file at the size limit, which takes
 * seconds to parse on a loaded machine (a file this large took minutes
 * when loading was quadratic): the daemon acts on the signal within a
 * second, and the reload is given up.
 */
static void
test_sigterm_during_reload(void)
{
    g_autoptr(PtTestDaemon) d = start_recommend("");
    g_autofree char *head = NULL;
    g_autoptr(GString) text = NULL;
    gint64 took;
    int fd;

    g_assert_true(g_file_get_contents(d->conf_path, &head, NULL, NULL));
    text = g_string_new(head);
    for (guint i = 0; text->len < PT_CONF_MAX_BYTES - 64; i++)
        g_string_append_printf(text, "[rule vm-%u]\npolicy = off\n", i);
    g_assert_true(g_file_set_contents(d->conf_path, text->str, text->len, NULL));
    fd = send_request(d, "reload");
    g_assert_true(pt_test_wait_log(d, "reloading the configuration from", 1, 10000));
    g_assert_cmpint(kill(d->pid, SIGTERM), ==, 0);
    took = wait_stopping_ms(d, 120000);
    g_test_message("SIGTERM acted on after %" G_GINT64_FORMAT " ms", took);
    g_assert_cmpint(took, >=, 0);
    g_assert_cmpint(took, <, 1000);
    g_assert_cmpint(pt_test_daemon_reap(d), ==, 0);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "reading it was given up: polltuned is "
                                                 "stopping"), ==, 1);
    close(fd);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/reload/fifo", test_fifo);
    g_test_add_func("/daemon/reload/directory", test_directory);
    g_test_add_func("/daemon/reload/deleted", test_deleted);
    g_test_add_func("/daemon/reload/sigterm", test_sigterm_during_reload);
    return g_test_run();
}
