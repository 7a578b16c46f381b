/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Attach and detach by request (the control socket's attach and detach),
 * and which QEMU a target may attach: one QEMU is one target.
 */
#include "pt-daemon-private.h"
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
    g_hash_table_remove(d->targets, name);
    return TRUE;
}

PtTarget *
pt_daemon_find_process(PtDaemon *d, const PtTarget *except, const char *process)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets);
    while (process && g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        if (o != except && !o->detached && !g_strcmp0(o->process, process))
            return o;
    }
    return NULL;
}

/*
 * One QEMU is one target: a second path to a QEMU already attached (a
 * symbolic link to its socket, a path spelt another way, a second monitor
 * of the same process, the monitor of a libvirt domain) is refused, naming
 * both.  Two targets on one QEMU took turns on its single monitor, and the
 * one that came second took the first one's writes for the originals.
 */
gboolean
pt_daemon_admit(PtTarget *t, gpointer data, GError **error)
{
    PtDaemon *d = data;
    PtTarget *o = pt_daemon_find_process(d, t, t->process);

    if (!o)
        return TRUE;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                "%s leads to the QEMU (pid %d) already attached as %s: one QEMU is one "
                "target", t->name, t->pid, o->name);
    return FALSE;
}
