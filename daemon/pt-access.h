/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-access: whether a user could reach a socket herself.
 *
 * A QMP target attached by a member of the admin group is reached by the
 * daemon, which is root, on her behalf: at the attach and at every
 * reconnect after it, since what lies behind the path may change meanwhile
 * (pt_cred_may_connect(), pt-access.c).  PtCred keeps whose reach
 * that is: her uid, gid and supplementary groups from SO_PEERCRED and
 * SO_PEERGROUPS when she attached.
 */
#pragma once

#include <glib.h>
#include <sys/types.h>

typedef struct {
    uid_t uid;
    gid_t gid;
    gid_t *groups;
    int n_groups;
} PtCred;

PtCred *pt_cred_new(uid_t uid, gid_t gid, const gid_t *groups, int n_groups);
PtCred *pt_cred_copy(const PtCred *cred);
void pt_cred_free(PtCred *cred);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtCred, pt_cred_free)

/* TRUE when @cred could connect to the socket at @path herself (always for
 * uid 0): search permission on every directory walked, symbolic links
 * followed, write permission on the socket.  PermissionDenied (of
 * PT_CONTROL_ERROR), the same whether or not the path exists, where she
 * may not reach it. */
gboolean pt_cred_may_connect(const PtCred *cred, const char *path, GError **error);
