/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whether a control client could reach a socket itself.
 *
 * `attach PATH` makes the daemon, which is root, connect to PATH, then
 * again at every reconnect (pt-target-qmp.c keeps her credentials for
 * that: a socket she swaps for a symbolic link to a root-only VM must not
 * be followed).  A member
 * of the admin group must not get more from that than connecting herself:
 * neither a QEMU behind a directory she may not enter, nor the knowledge
 * of which files exist there.  So the path is walked as the kernel would
 * walk it for her, with her uid, gid and groups from SO_PEERCRED and
 * SO_PEERGROUPS: search permission on every directory before anything in
 * it is looked at, symbolic links followed, and write permission on the
 * socket (what connect(2) needs).
 *
 * The daemon's unit keeps no CAP_SETUID, so it cannot take the caller's
 * identity for the check; the mode bits are read instead.  POSIX ACLs are
 * not consulted: access granted only through an ACL entry is refused
 * (root may still attach), never the other way round, because where an
 * ACL exists the group bits are its mask, the most any named entry gets.
 */
#include "pt-access.h"
#include "pt-control-error.h"

#include <errno.h>
#include <gio/gio.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* Symbolic links followed in one walk, as the kernel's MAXSYMLINKS. */
#define PT_ACCESS_MAX_LINKS 40

PtCred *
pt_cred_new(uid_t uid, gid_t gid, const gid_t *groups, int n_groups)
{
    PtCred *c = g_new0(PtCred, 1);

    c->uid = uid;
    c->gid = gid;
    c->n_groups = MAX(n_groups, 0);
    c->groups = c->n_groups ? g_memdup2(groups, sizeof(gid_t) * (gsize)c->n_groups) : NULL;
    return c;
}

PtCred *
pt_cred_copy(const PtCred *cred)
{
    return cred ? pt_cred_new(cred->uid, cred->gid, cred->groups, cred->n_groups) : NULL;
}

void
pt_cred_free(PtCred *cred)
{
    if (!cred)
        return;
    g_free(cred->groups);
    g_free(cred);
}

static gboolean
pt_access_in_group(const PtCred *conn, gid_t gid)
{
    if (conn->gid == gid)
        return TRUE;
    for (int i = 0; i < conn->n_groups; i++)
        if (conn->groups[i] == gid)
            return TRUE;
    return FALSE;
}

/* Whether @conn's credentials give @bits (S_IXOTH, S_IWOTH: "other"
 * positions) on @st: the owner's bits for the owner, else the group's for
 * a member, else the others'; the first class that applies decides. */
static gboolean
pt_access_mode_allows(const PtCred *conn, const struct stat *st, mode_t bits)
{
    if (conn->uid == 0)
        return TRUE;
    if (st->st_uid == conn->uid)
        return (st->st_mode & (bits << 6)) == (bits << 6);
    if (pt_access_in_group(conn, st->st_gid))
        return (st->st_mode & (bits << 3)) == (bits << 3);
    return (st->st_mode & bits) == bits;
}

static gboolean
pt_access_denied(const PtCred *conn, const char *path, GError **error)
{
    /* The same words whatever lies behind: nothing is disclosed. */
    g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_PERMISSION_DENIED,
                "%s: uid %u may not reach this path", path, (unsigned)conn->uid);
    return FALSE;
}

static gboolean
pt_access_errno(const char *path, int e, GError **error)
{
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "%s: %s", path, g_strerror(e));
    return FALSE;
}

gboolean
pt_cred_may_connect(const PtCred *conn, const char *path, GError **error)
{
    /* Components still to walk, the next first; @dir is where we are. */
    GQueue todo = G_QUEUE_INIT;
    g_autofree char *dir = g_strdup("/");
    guint links = 0;
    gboolean ok = FALSE;

    if (conn->uid == 0)
        return TRUE;
    if (!path || path[0] != '/')
        return pt_access_errno(path ? path : "", EINVAL, error);
    {
        g_auto(GStrv) parts = g_strsplit(path, "/", -1);

        for (guint i = 0; parts[i]; i++)
            if (*parts[i] && !g_str_equal(parts[i], "."))
                g_queue_push_tail(&todo, g_strdup(parts[i]));
    }
    for (;;) {
        g_autofree char *name = g_queue_pop_head(&todo);
        g_autofree char *next = NULL;
        struct stat st;

        if (!name) {
            /* The path ends in a directory ("/" or "/run/.."). */
            ok = pt_access_errno(path, EISDIR, error);
            break;
        }
        /* Looking anything up in @dir, ".." included, needs search. */
        if (stat(dir, &st) < 0) {
            ok = pt_access_errno(path, errno, error);
            break;
        }
        if (!pt_access_mode_allows(conn, &st, S_IXOTH)) {
            ok = pt_access_denied(conn, path, error);
            break;
        }
        if (g_str_equal(name, "..")) {
            char *up = g_path_get_dirname(dir);

            g_free(dir);
            dir = up;
            if (g_queue_is_empty(&todo)) {
                ok = pt_access_errno(path, EISDIR, error);
                break;
            }
            continue;
        }
        next = g_build_filename(dir, name, NULL);
        if (lstat(next, &st) < 0) {
            ok = pt_access_errno(path, errno, error);
            break;
        }
        if (S_ISLNK(st.st_mode)) {
            char target[PATH_MAX];
            ssize_t n = readlink(next, target, sizeof(target) - 1);
            g_auto(GStrv) parts = NULL;

            if (n < 0 || ++links > PT_ACCESS_MAX_LINKS) {
                ok = pt_access_errno(path, n < 0 ? errno : ELOOP, error);
                break;
            }
            target[n] = 0;
            if (target[0] == '/') {
                g_free(dir);
                dir = g_strdup("/");
            }
            parts = g_strsplit(target, "/", -1);
            for (guint i = g_strv_length(parts); i > 0; i--)
                if (*parts[i - 1] && !g_str_equal(parts[i - 1], "."))
                    g_queue_push_head(&todo, g_strdup(parts[i - 1]));
            continue;
        }
        if (!g_queue_is_empty(&todo)) {
            if (!S_ISDIR(st.st_mode)) {
                ok = pt_access_errno(path, ENOTDIR, error);
                break;
            }
            g_free(dir);
            dir = g_steal_pointer(&next);
            continue;
        }
        /* The last component: connect(2) needs write permission on a
         * socket.  Anything else is the caller's to be told about by the
         * attach itself ("not a unix socket"): she may see it. */
        if (S_ISSOCK(st.st_mode) && !pt_access_mode_allows(conn, &st, S_IWOTH)) {
            ok = pt_access_denied(conn, path, error);
            break;
        }
        ok = TRUE;
        break;
    }
    g_queue_clear_full(&todo, g_free);
    return ok;
}
