/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stop: the originals are put back and in-flight writes are waited for,
 * within a deadline.
 */
#include "pt-daemon-private.h"
#include "pt-log.h"

#include <errno.h>
#include <glib/gstdio.h>

typedef struct {
    PtDaemon *d;
    GCallback done;
    gpointer user_data;
    gint64 deadline_us;
} PtShutdown;

static gboolean
pt_daemon_shutdown_poll(gpointer data)
{
    PtShutdown *s = data;

    if ((s->d->pending_restores || s->d->pending_applies) &&
        g_get_monotonic_time() < s->deadline_us)
        return G_SOURCE_CONTINUE;
    if (s->d->pending_restores)
        pt_warn(NULL, NULL, "%u restores did not complete in time", s->d->pending_restores);
    /* Left behind, the marker makes the next start take this clean stop
     * for a crash, and on-restart then acts on it: say so. */
    if (s->d->run_marker && g_unlink(s->d->run_marker) != 0 && errno != ENOENT) {
        int e = errno;

        pt_warn(NULL, NULL, "%s: cannot remove the run marker: %s; the next start will take "
                "this stop for a crash (on-restart=%s) unless it is removed",
                s->d->run_marker, g_strerror(e), pt_restart_to_string(s->d->conf->on_restart));
    }
    ((void (*)(gpointer))s->done)(s->user_data);
    g_free(s);
    return G_SOURCE_REMOVE;
}

void
pt_daemon_shutdown(PtDaemon *d, guint timeout_ms, GCallback done, gpointer user_data)
{
    PtShutdown *s = g_new0(PtShutdown, 1);
    GHashTableIter it;
    gpointer v;

    s->d = d;
    s->done = done;
    s->user_data = user_data;
    s->deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    d->shutting_down = TRUE;
    g_clear_handle_id(&d->timer, g_source_remove);
    if (d->conf->restore_on_exit) {
        g_hash_table_iter_init(&it, d->targets);
        while (g_hash_table_iter_next(&it, NULL, &v))
            pt_daemon_restore_target(d, v, "polltuned is stopping");
    }
    g_timeout_add(20, pt_daemon_shutdown_poll, s);
}
