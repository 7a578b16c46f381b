/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-stop.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib-unix.h>

static volatile sig_atomic_t pt_stop_count;
static int pt_stop_pipe[2] = { -1, -1 };

typedef struct {
    GSourceFunc on_stop;
    gpointer data;
} PtStopWatch;

/* Async-signal-safe: a counter and a write(2).  A full pipe loses only
 * wake-ups the loop has not yet taken, and the loop takes them all. */
static void
pt_stop_handler(int sig)
{
    int saved = errno;
    char c = (char)sig;

    pt_stop_count = pt_stop_count + 1;
    if (write(pt_stop_pipe[1], &c, 1) < 0) {
        /* Nothing to do in a handler: the count is set. */
    }
    errno = saved;
}

static gboolean
pt_stop_readable(gint fd, GIOCondition cond, gpointer data)
{
    PtStopWatch *w = data;
    char buf[16];
    ssize_t n;

    (void)cond;
    while ((n = read(fd, buf, sizeof(buf))) > 0)
        for (ssize_t i = 0; i < n; i++)
            w->on_stop(w->data);
    return G_SOURCE_CONTINUE;
}

gboolean
pt_stop_watch(GSourceFunc on_stop, gpointer data, GError **error)
{
    static PtStopWatch watch;
    struct sigaction sa = { .sa_handler = pt_stop_handler, .sa_flags = SA_RESTART };

    if (pipe2(pt_stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;

        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "the stop signals' pipe: %s", g_strerror(e));
        return FALSE;
    }
    watch = (PtStopWatch){ on_stop, data };
    g_unix_fd_add(pt_stop_pipe[0], G_IO_IN, pt_stop_readable, &watch);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    return TRUE;
}

gboolean
pt_stop_requested(void)
{
    return pt_stop_count > 0;
}
