/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attach and detach by request (the control socket's attach and detach),
 * and which QEMU a target may attach: one QEMU is one target.
 */
#include "pt-daemon-attach.h"
#include "pt-daemon-private.h"
#include "pt-daemon-libvirt.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-qmp.h"
#include "pt-daemon-targets.h"
#include "pt-log.h"
#include "qmp-client.h"

gboolean
pt_daemon_attach_qmp(PtDaemon *d, const char *path, const char *name, const PtCred *reach,
                     char **name_out, GError **error)
{
    if (!path || path[0] != '/') {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "path '%s' is not absolute", path ? path : "");
        return FALSE;
    }
    /* Refuse what is not a listening socket before anything is recorded:
     * "attach /etc/passwd" used to answer {"name": "passwd"}. */
    if (!qmp_socket_check(path, error))
        return FALSE;
    if (!pt_daemon_attach_path(d, path, name, reach, error))
        return FALSE;
    pt_daemon_qmp_attached(d, path);
    /* The identity: the socket path (pt-target.h). */
    if (name_out)
        *name_out = g_strdup(path);
    return TRUE;
}

gboolean
pt_daemon_detach(PtDaemon *d, const char *name, GError **error)
{
    PtTarget *t = pt_daemon_resolve_target(d, name, error);

    if (!t)
        return FALSE;
    name = t->name;
    /* The restore writes hold their own reference to the target and its
     * channel, so they complete after the target leaves our table. */
    pt_daemon_restore_target(d, t, "detach");
    /* A socket matched by qmp-globs, or a domain in the next listing, stays
     * detached until attached again by name. */
    pt_target_kinds[t->kind]->hold_detached(d, t);
    t->detached = TRUE;
    policy_engine_forget(d->engine, t->name);
    pt_info(t->name, NULL, "detached by request");
    g_hash_table_remove(d->targets.by_name, name);
    return TRUE;
}

const PtTargetKindOps *const pt_target_kinds[STORE_TARGET_KIND_MAX] = {
    [STORE_TARGET_LIBVIRT] = &pt_daemon_libvirt_kind,
    [STORE_TARGET_QMP] = &pt_daemon_qmp_kind,
};

/*
 * @t's QEMU exited (PT_TARGET_GONE): its originals went with it, and a QEMU
 * started on its channel later has its own command line, so the stored
 * originals are dropped rather than kept to match nothing; one line says
 * so.  The kind keeps the target (a configured socket waits for its QEMU)
 * or lets it go (one found by qmp-globs is found again as new); either way
 * it is no longer lost, and no alert on lost targets fires for a VM shut
 * down cleanly.
 */
void
pt_daemon_target_gone(PtDaemon *d, PtTarget *t)
{
    g_autoptr(GError) err = NULL;
    guint n = 0;

    if (!store_original_drop(d->store, t->name, &n, &err))
        pt_warn(t->name, NULL, "store: dropping the original values: %s", err->message);
    pt_info(t->name, NULL, "gone: %s; %u stored original values dropped", t->state_reason, n);
    policy_engine_forget(d->engine, t->name);
    g_hash_table_remove_all(t->iothreads);
    g_clear_pointer(&t->prev, probe_target_snap_free);
    /* The loss of its channel that came first is told by this line. */
    g_ptr_array_set_size(t->news, 0);
    pt_target_kinds[t->kind]->gone(d, t);
}
