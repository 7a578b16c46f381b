/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's mode (observe, recommend, enforce), from the configuration
 * or set at run time.
 */
#include "pt-daemon-mode.h"
#include "pt-daemon-private.h"
#include "pt-daemon-originals.h"
#include "pt-log.h"

/* d->mode is the one owner of the mode; the policy only learns whether
 * its decisions are applied (observe runs no policy at all). */
void
pt_daemon_mode_to_policy(PtDaemon *d)
{
    d->conf->policy->mode = d->mode == PT_MODE_ENFORCE ? POLICY_MODE_ENFORCE :
                                                         POLICY_MODE_RECOMMEND;
}

/*
 * A mode set with polltunectl holds across reloads and restarts, like the
 * rules it sets: stored before it takes effect.  Setting the mode the
 * configuration has ends it (the file rules again).
 */
gboolean
pt_daemon_set_runtime_mode(PtDaemon *d, PtMode mode, GError **error)
{
    PtMode keep = mode == d->conf->mode ? PT_MODE_INVALID : mode;

    if (mode < 0 || mode >= PT_MODE_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "invalid mode");
        return FALSE;
    }
    pt_daemon_originals_on_disk(d);
    if (keep != d->runtime_mode && !store_runtime_mode_set(d->store, keep, error))
        return FALSE;
    if (!pt_daemon_set_mode(d, mode, error))
        return FALSE;
    d->runtime_mode = keep;
    return TRUE;
}

gboolean
pt_daemon_mode_rewrite(PtDaemon *d, gboolean say)
{
    g_autoptr(GError) err = NULL;

    if (d->runtime_mode == PT_MODE_INVALID ||
        store_runtime_mode_set(d->store, d->runtime_mode, &err))
        return TRUE;
    if (say)
        pt_warn(NULL, NULL, "store: mode %s set with polltunectl: %s",
                pt_mode_to_string(d->runtime_mode), err->message);
    return FALSE;
}

PtMode
pt_daemon_get_runtime_mode(PtDaemon *d)
{
    return d->runtime_mode;
}

gboolean
pt_daemon_set_mode(PtDaemon *d, PtMode mode, GError **error)
{
    GHashTableIter it;
    gpointer v;

    if (mode < 0 || mode >= PT_MODE_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "invalid mode");
        return FALSE;
    }
    if (mode == d->mode)
        return TRUE;
    pt_info(NULL, NULL, "mode %s -> %s", pt_mode_to_string(d->mode), pt_mode_to_string(mode));
    d->mode = mode;
    pt_daemon_mode_to_policy(d);
    if (mode == PT_MODE_OBSERVE) {
        g_hash_table_iter_init(&it, d->targets.by_name);
        while (g_hash_table_iter_next(&it, NULL, &v))
            pt_daemon_restore_target(d, v, "mode observe");
    }
    return TRUE;
}
