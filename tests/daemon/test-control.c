/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control server's connection handling, in process: what a client
 * does before, during and after the greeting must never take the daemon
 * down.  No daemon is attached (NULL), so only the paths that run before a
 * command is dispatched are exercised here; commands are tested against
 * the real daemon in tests/cli and tests/fault.
 */
#include "pt-control.h"

#include <errno.h>
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

static const PtControlLimits default_limits = { 64, 64 * 1024, 50, 30000 };

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/daemon/control/close-before-accept", Fixture, &default_limits,
               fixture_setup, test_close_before_accept, fixture_teardown);
    return g_test_run();
}
