/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of QEMUs reached over a QMP socket of their own: the
 * sockets named in the configuration, those matching qmp-globs (looked for
 * every tick), and the sockets detached by request, which discovery leaves
 * alone until they are attached again.
 *
 * One QEMU is one target.  A path whose realpath is another target's
 * socket is refused before anything is sent; a path to another socket of a
 * QEMU already attached (a second monitor, a libvirt domain's) is refused
 * at its connect (pt_daemon_admit()).  A glob's match that was refused, or
 * the socket file a killed QEMU left behind, is said once and passed over
 * until a new file is at its path.
 */
#include "pt-daemon-qmp.h"
#include "pt-daemon-private.h"
#include "pt-daemon-targets.h"
#include "pt-log.h"

#include <glob.h>
#include <stdlib.h>
#include <sys/stat.h>

struct PtDaemonQmp {
    GHashTable *detached;           /* QMP sockets detached by request */
    /* path -> struct stat of the socket file that discovery passes over:
     * one refused, or one a gone QEMU left; bounded by the files there. */
    GHashTable *passed;
};

gboolean
pt_daemon_attach_path(PtDaemon *d, const char *path, const char *name, const PtCred *reach,
                      GError **error)
{
    g_autofree char *base = NULL;
    g_autofree char *canon = realpath(path, NULL);
    PtTarget *t = pt_daemon_find_target(d, path);
    PtQmpTargetOptions opts = {
        .timeout_ms = d->conf->qmp_timeout_ms, .roots = &d->proot,
        .exits = pt_daemon_exits_mode(d->conf), .reach = reach,
        .admit = pt_daemon_admit, .admit_data = d,
    };
    GHashTableIter it;
    gpointer v;

    /* The socket path is the target's identity (pt-target.h). */
    if (t) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s: already attached%s%s", path,
                    t->display ? " as " : "", t->display ? t->display : "");
        return FALSE;
    }
    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        /* A name the operator gives must name this target alone. */
        if (name && (g_str_equal(o->name, name) || !g_strcmp0(o->display, name))) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                        "%s: already the name of %s; give %s another", name, o->name, path);
            return FALSE;
        }
        /* Another spelling of a path attached, or a link to it. */
        if (canon && o->kind == STORE_TARGET_QMP &&
            !g_strcmp0(pt_target_qmp_canonical(o), canon)) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                        "%s leads to %s, the socket of %s already attached: one QEMU is one "
                        "target", path, canon, o->name);
            return FALSE;
        }
    }
    t = pt_target_qmp_new(path, path, &opts);
    if (t->refused) {
        g_set_error_literal(error, G_IO_ERROR, G_IO_ERROR_EXISTS, t->refused);
        pt_target_unref(t);
        return FALSE;
    }
    base = name ? NULL : pt_target_qmp_file_name(path);
    pt_target_set_display(t, name ? name : base);
    t->display_given = name != NULL;
    /* The file name holds until QEMU says whether it has its own. */
    t->display_changed = t->display_given;
    t->former_name = g_strdup(t->display);
    pt_daemon_add_target(d, t);
    return TRUE;
}

static gboolean
pt_sock_same(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
           a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Pass over @path while its socket file stays the one there now. */
static void
pt_daemon_qmp_pass_over(PtDaemon *d, const char *path)
{
    struct stat st;

    if (d->targets.qmp && stat(path, &st) == 0 && S_ISSOCK(st.st_mode))
        g_hash_table_replace(d->targets.qmp->passed, g_strdup(path), g_memdup2(&st, sizeof(st)));
}

/* Whether discovery passes over @path, whose file is @st now; forgets it
 * once another file is there. */
static gboolean
pt_daemon_qmp_passed(PtDaemon *d, const char *path, const struct stat *st)
{
    const struct stat *was = g_hash_table_lookup(d->targets.qmp->passed, path);

    if (was && pt_sock_same(was, st))
        return TRUE;
    if (was)
        g_hash_table_remove(d->targets.qmp->passed, path);
    return FALSE;
}

/* Files passed over that are there no more. */
static void
pt_daemon_qmp_prune_passed(PtDaemon *d)
{
    GHashTableIter it;
    gpointer k, v;

    g_hash_table_iter_init(&it, d->targets.qmp->passed);
    while (g_hash_table_iter_next(&it, &k, &v)) {
        struct stat st;

        if (stat(k, &st) < 0 || !pt_sock_same(v, &st))
            g_hash_table_iter_remove(&it);
    }
}

static void
pt_daemon_qmp_discover(PtDaemon *d)
{
    if (!d->targets.qmp)
        return;
    pt_daemon_qmp_prune_passed(d);
    for (guint i = 0; d->conf->qmp_globs[i]; i++) {
        glob_t g = { 0 };

        /* Sorted: which of two paths to one QEMU is attached is the same
         * at every start, and so is the name its originals are under. */
        if (glob(d->conf->qmp_globs[i], 0, NULL, &g) == 0) {
            for (size_t j = 0; j < g.gl_pathc; j++) {
                g_autoptr(GError) err = NULL;
                const char *path = g.gl_pathv[j];
                struct stat st;

                if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
                    g_hash_table_contains(d->targets.qmp->detached, path) ||
                    pt_daemon_find_target(d, path) || pt_daemon_qmp_passed(d, path, &st))
                    continue;
                if (!pt_daemon_attach_path(d, path, NULL, NULL, &err)) {
                    pt_warn(path, NULL, "not attached: %s", err->message);
                    pt_daemon_qmp_pass_over(d, path);
                }
            }
        }
        globfree(&g);
    }
}

static void
pt_daemon_qmp_start(PtDaemon *d)
{
    d->targets.qmp = g_new0(PtDaemonQmp, 1);
    d->targets.qmp->detached = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    d->targets.qmp->passed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; d->conf->qmp_sockets[i]; i++) {
        g_autoptr(GError) err = NULL;

        if (!pt_daemon_attach_path(d, d->conf->qmp_sockets[i], NULL, NULL, &err))
            pt_warn(d->conf->qmp_sockets[i], NULL, "not attached: %s", err->message);
    }
    pt_daemon_qmp_discover(d);
}

static void
pt_daemon_qmp_stop(PtDaemon *d)
{
    if (!d->targets.qmp)
        return;
    g_hash_table_unref(d->targets.qmp->detached);
    g_hash_table_unref(d->targets.qmp->passed);
    g_clear_pointer(&d->targets.qmp, g_free);
}

static void
pt_daemon_qmp_hold_detached(PtDaemon *d, const PtTarget *t)
{
    if (d->targets.qmp)
        g_hash_table_add(d->targets.qmp->detached, g_strdup(pt_target_qmp_path((PtTarget *)t)));
}

void
pt_daemon_qmp_attached(PtDaemon *d, const char *path)
{
    if (d->targets.qmp)
        g_hash_table_remove(d->targets.qmp->detached, path);
}

static void
pt_daemon_qmp_stopping(PtDaemon *d, guint timeout_ms)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (((PtTarget *)v)->kind == STORE_TARGET_QMP)
            pt_target_qmp_set_timeout(v, timeout_ms);
}

/* A socket named in qmp-sockets waits for its QEMU, listed as gone; one
 * found by qmp-globs or attached by request is let go, and found again
 * (as a new target) when a QEMU makes the socket anew: the file a killed
 * QEMU left there is passed over. */
static void
pt_daemon_qmp_gone(PtDaemon *d, PtTarget *t)
{
    if (g_strv_contains((const char *const *)d->conf->qmp_sockets, t->name))
        return;
    pt_daemon_qmp_pass_over(d, t->name);
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
