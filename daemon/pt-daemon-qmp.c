/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of QEMUs reached over a QMP socket of their own: the
 * sockets named in the configuration, those matching qmp-globs (looked for
 * every tick), and the sockets detached by request, which discovery leaves
 * alone until they are attached again.
 */
#include "pt-daemon-private.h"
#include "pt-log.h"

#include <glob.h>
#include <sys/stat.h>

struct PtDaemonQmp {
    GHashTable *detached;           /* QMP sockets detached by request */
};

gboolean
pt_daemon_attach_path(PtDaemon *d, const char *path, const char *name, GError **error)
{
    g_autofree char *base = NULL;
    PtTarget *t = pt_daemon_find_target(d, path);
    GHashTableIter it;
    gpointer v;

    /* The socket path is the target's identity (pt-target.h). */
    if (t) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s: already attached%s%s", path,
                    t->display ? " as " : "", t->display ? t->display : "");
        return FALSE;
    }
    /* A name the operator gives must name this target alone. */
    g_hash_table_iter_init(&it, d->targets);
    while (name && g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        if (g_str_equal(o->name, name) || !g_strcmp0(o->display, name)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                        "%s: already the name of %s; give %s another", name, o->name, path);
            return FALSE;
        }
    }
    t = pt_target_qmp_new(path, path, d->conf->qmp_timeout_ms, &d->proot,
                          pt_daemon_exits_mode(d->conf));
    base = name ? NULL : pt_target_qmp_file_name(path);
    pt_target_set_display(t, name ? name : base);
    t->display_given = name != NULL;
    /* The file name holds until QEMU says whether it has its own. */
    t->display_changed = t->display_given;
    t->former_name = g_strdup(t->display);
    pt_daemon_add_target(d, t);
    return TRUE;
}

static void
pt_daemon_qmp_discover(PtDaemon *d)
{
    for (guint i = 0; d->conf->qmp_globs[i]; i++) {
        glob_t g = { 0 };

        if (glob(d->conf->qmp_globs[i], GLOB_NOSORT, NULL, &g) == 0) {
            for (size_t j = 0; j < g.gl_pathc; j++) {
                struct stat st;

                if (stat(g.gl_pathv[j], &st) < 0 || !S_ISSOCK(st.st_mode) ||
                    (d->qmp && g_hash_table_contains(d->qmp->detached, g.gl_pathv[j])))
                    continue;
                if (!pt_daemon_find_target(d, g.gl_pathv[j]))
                    pt_daemon_attach_path(d, g.gl_pathv[j], NULL, NULL);
            }
        }
        globfree(&g);
    }
}

static void
pt_daemon_qmp_start(PtDaemon *d)
{
    d->qmp = g_new0(PtDaemonQmp, 1);
    d->qmp->detached = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (guint i = 0; d->conf->qmp_sockets[i]; i++)
        pt_daemon_attach_path(d, d->conf->qmp_sockets[i], NULL, NULL);
    pt_daemon_qmp_discover(d);
}

static void
pt_daemon_qmp_stop(PtDaemon *d)
{
    if (!d->qmp)
        return;
    g_hash_table_unref(d->qmp->detached);
    g_clear_pointer(&d->qmp, g_free);
}

static void
pt_daemon_qmp_hold_detached(PtDaemon *d, const PtTarget *t)
{
    if (d->qmp)
        g_hash_table_add(d->qmp->detached, g_strdup(pt_target_qmp_path((PtTarget *)t)));
}

void
pt_daemon_qmp_attached(PtDaemon *d, const char *path)
{
    if (d->qmp)
        g_hash_table_remove(d->qmp->detached, path);
}

static void
pt_daemon_qmp_stopping(PtDaemon *d, guint timeout_ms)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (((PtTarget *)v)->kind == STORE_TARGET_QMP)
            pt_target_qmp_set_timeout(v, timeout_ms);
}

/* A socket named in qmp-sockets waits for its QEMU, listed as gone; one
 * found by qmp-globs or attached by request is let go, and found again
 * (as a new target) when a QEMU makes the socket anew. */
static void
pt_daemon_qmp_gone(PtDaemon *d, PtTarget *t)
{
    if (g_strv_contains((const char *const *)d->conf->qmp_sockets, t->name))
        return;
    pt_daemon_drop_target(d, t, NULL);
}

const PtTargetKindOps pt_daemon_qmp_kind = {
    .start = pt_daemon_qmp_start,
    .discover = pt_daemon_qmp_discover,
    .hold_detached = pt_daemon_qmp_hold_detached,
    .gone = pt_daemon_qmp_gone,
    .stopping = pt_daemon_qmp_stopping,
    .stop = pt_daemon_qmp_stop,
};
