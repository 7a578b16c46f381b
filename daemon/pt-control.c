/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-config.h"
#include "pt-conf.h"
#include "pt-control.h"
#include "pt-control-private.h"
#include "pt-lock.h"
#include "pt-log.h"
#include "qmp-json.h"
#include "qmp-stream.h"

#include <errno.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib-unix.h>
#include <glib/gstdio.h>

/* What a connection hands its requests to (pt-control-conn.c). */
static const PtConnOps pt_control_conn_ops = {
    .dispatch = pt_control_dispatch,
    .export_start = pt_control_export_start,
};

static void
pt_conn_read_creds(PtConn *conn)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);
    gid_t groups[256];
    socklen_t glen = sizeof(groups);

    conn->uid = (uid_t)-1;
    conn->gid = (gid_t)-1;
    if (getsockopt(conn->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        conn->uid = cred.uid;
        conn->gid = cred.gid;
        conn->pid = cred.pid;
    }
    if (getsockopt(conn->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0) {
        conn->n_groups = glen / sizeof(gid_t);
        conn->groups = g_memdup2(groups, glen);
    }
}

/* Why @conn may not have a connection now, or NULL when it may. */
static const char *
pt_control_admit(PtControl *ctl, PtConn *conn)
{
    guint same_uid = 0;

    if (ctl->n_conns >= ctl->lim.max_connections)
        return "too many control connections";
    if (conn->uid == 0)
        return NULL;
    for (GList *l = ctl->conns; l; l = l->next)
        same_uid += ((PtConn *)l->data)->uid == conn->uid;
    if (same_uid >= ctl->lim.max_per_uid)
        return "too many control connections from this uid";
    if (ctl->n_conns >= ctl->lim.max_connections - ctl->lim.reserved &&
        !pt_conn_may(conn, TRUE))
        return "too many control connections; the rest are kept for root and the admin group";
    return NULL;
}

static void
pt_control_accept_one(PtControl *ctl, int cfd)
{
    PtConn *conn;
    g_autofree char *greeting = NULL;
    const char *why;

    conn = g_new0(PtConn, 1);
    conn->ctl = ctl;
    conn->ops = &pt_control_conn_ops;
    conn->fd = cfd;
    conn->out = g_string_new(NULL);
    conn->tokens = ctl->lim.rate_per_s;
    conn->refill_us = g_get_monotonic_time();
    /* Credentials first, before any byte of a request is read. */
    pt_conn_read_creds(conn);
    why = pt_control_admit(ctl, conn);
    if (why) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_BUSY, "%s", why);
        g_autofree char *busy = qmp_message_build_error(pt_control_error_class(e),
                                                        e->message, NULL);

        (void)!send(cfd, busy, strlen(busy), MSG_NOSIGNAL | MSG_DONTWAIT);
        close(cfd);
        pt_conn_free(conn);
        return;
    }
    conn->stream = qmp_stream_new(ctl->lim.max_request, 32, pt_conn_on_message, conn);
    /* Requests are JSON lines: a malformed one is answered and the next
     * line is read afresh. */
    qmp_stream_set_line_mode(conn->stream, TRUE);
    ctl->conns = g_list_prepend(ctl->conns, conn);
    ctl->n_conns++;
    greeting = g_strdup_printf("{\"QMP\": {\"version\": {\"polltune\": {\"major\": %d, "
                               "\"minor\": %d, \"micro\": %d}, \"protocol\": 1}, "
                               "\"capabilities\": []}}\n", PT_VERSION_MAJOR,
                               PT_VERSION_MINOR, PT_VERSION_MICRO);
    /* The client may already be gone: the greeting's send then fails and
     * closes the connection, which is freed from an idle callback.  Touch
     * nothing of it after that. */
    pt_conn_send(conn, greeting);
    if (conn->fd < 0)
        return;
    pt_conn_touch(conn);
    pt_conn_resume(conn);
}

/* Drain the backlog, a bounded number per wake-up so that a flood of
 * connections cannot starve the tick. */
#define PT_CONTROL_ACCEPT_BURST 32
/* Out of descriptors, the listening socket stays readable and accept4()
 * keeps failing: wait this long before trying again rather than spin. */
#define PT_CONTROL_EMFILE_PAUSE_MS 200

static gboolean pt_control_on_accept(int fd, GIOCondition cond, gpointer data);

static gboolean
pt_control_resume_accept(gpointer data)
{
    PtControl *ctl = data;

    ctl->pause_timer = 0;
    ctl->watch = g_unix_fd_add(ctl->fd, G_IO_IN, pt_control_on_accept, ctl);
    return G_SOURCE_REMOVE;
}

static gboolean
pt_control_on_accept(int fd, GIOCondition cond, gpointer data)
{
    PtControl *ctl = data;

    for (int i = 0; i < PT_CONTROL_ACCEPT_BURST; i++) {
        int cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

        if (cfd < 0 && (errno == EMFILE || errno == ENFILE)) {
            if (ctl->out_of_fds++ % 1000 == 0)
                pt_warn(NULL, NULL, "control: accept: %s; new connections wait "
                        "(%" G_GUINT64_FORMAT " times so far)", g_strerror(errno),
                        ctl->out_of_fds);
            ctl->watch = 0;
            ctl->pause_timer = g_timeout_add(PT_CONTROL_EMFILE_PAUSE_MS,
                                             pt_control_resume_accept, ctl);
            return G_SOURCE_REMOVE;
        }
        if (cfd < 0)
            break;
        pt_control_accept_one(ctl, cfd);
    }
    return G_SOURCE_CONTINUE;
}

guint
pt_control_conn_cap(guint64 nofile)
{
    /*
     * The control socket may hold at most a quarter of the descriptor
     * limit.  The rest is what tuning needs: the metrics listener (an
     * eighth, pt_metrics_conn_cap(), and its closing slack of 8), the
     * database (main file, WAL, shm, lock, and the same again for an
     * export's own connection), stdio, GLib's wake-up and signal
     * descriptors and libvirt's (about 20 in all), and every target (a
     * QMP socket each, /proc files of its threads, perf counters).  At
     * the usual 1024 or more the default of 64 holds; under "ulimit -n
     * 64" it is 16, so 16 + 16 metrics leave 32 for the daemon and its
     * targets, and 60 root clients can no longer take them all.
     */
    return (guint)MAX(2, MIN((guint64)PT_CONTROL_MAX_CONNECTIONS, nofile / 4));
}

/* ---- server ------------------------------------------------------------ */

static gboolean
pt_control_group(const char *name, gid_t *gid)
{
    struct group *g;

    if (!name)
        return FALSE;
    g = getgrnam(name);
    if (!g)
        return FALSE;
    *gid = g->gr_gid;
    return TRUE;
}

PtControl *
pt_control_new(PtDaemon *daemon, const char *path, const char *group,
               const char *admin_group, const PtControlLimits *limits, GError **error)
{
    g_autoptr(PtControl) ctl = g_new0(PtControl, 1);
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *tmp = NULL;
    struct stat st;

    ctl->d = daemon;
    ctl->fd = -1;
    if (limits)
        ctl->lim = *limits;
    if (!ctl->lim.max_connections)
        ctl->lim.max_connections = PT_CONTROL_MAX_CONNECTIONS;
    if (!ctl->lim.max_request)
        ctl->lim.max_request = 64 * 1024;
    if (!ctl->lim.rate_per_s)
        ctl->lim.rate_per_s = 50;
    if (!ctl->lim.idle_timeout_ms)
        ctl->lim.idle_timeout_ms = 30000;
    if (!ctl->lim.reserved)
        ctl->lim.reserved = MAX(1, ctl->lim.max_connections / 8);
    ctl->lim.reserved = MIN(ctl->lim.reserved, ctl->lim.max_connections);
    if (!ctl->lim.max_per_uid)
        ctl->lim.max_per_uid = MAX(1, ctl->lim.max_connections / 4);
    ctl->path = g_strdup(path);
    ctl->have_read_gid = pt_control_group(group, &ctl->read_gid);
    ctl->have_admin_gid = pt_control_group(admin_group, &ctl->admin_gid);
    if (group && !ctl->have_read_gid)
        pt_warn(NULL, NULL, "control: group '%s' does not exist; only root may connect", group);

    if (strlen(path) >= sizeof(sun.sun_path)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FILENAME_TOO_LONG,
                    "%s: control socket path too long", path);
        return NULL;
    }
    /* Only the runtime directory is ours to create; any other parent is
     * the operator's, and a typo must not grow a directory tree. */
    if (g_str_equal(dir, PT_RUNTIME_DIR)) {
        if (g_mkdir_with_parents(dir, 0755) < 0) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                        "%s: cannot create: %s", dir, g_strerror(errno));
            return NULL;
        }
    } else if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "%s: control socket directory %s does not exist", path, dir);
        return NULL;
    }
    /* Another daemon listening here keeps its socket: never unlink it. */
    if (!pt_socket_check_unused(path, error))
        return NULL;
    /* Bound under a temporary name, listening and with its mode and group
     * set, then renamed into place: a client never finds the path bound
     * but not yet listening (refused), nor with the wrong permissions.  The
     * rename replaces a file left by a daemon that died (nothing listens:
     * checked above). */
    tmp = g_strdup_printf("%s.%d.new", path, (int)getpid());
    if (strlen(tmp) >= sizeof(sun.sun_path))
        g_clear_pointer(&tmp, g_free);
    strcpy(sun.sun_path, tmp ? tmp : path);
    ctl->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (ctl->fd < 0)
        goto fail;
    /* Without a temporary name @path itself is bound: a stale socket is
     * removed first, nothing else (checked again, as it may have changed). */
    if (!tmp && !pt_socket_path_replaceable(path, error))
        return NULL;
    g_unlink(sun.sun_path);
    if (bind(ctl->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
        listen(ctl->fd, 64) < 0)
        goto fail;
    chmod(sun.sun_path, 0660);
    if (ctl->have_read_gid && chown(sun.sun_path, 0, ctl->read_gid) < 0 && geteuid() == 0)
        pt_warn(NULL, NULL, "control: chown %s: %s", path, g_strerror(errno));
    /* Checked again just before the rename: what appeared at @path since
     * the check above is not ours to replace unless it is a socket. */
    if (tmp && !pt_socket_path_replaceable(path, error)) {
        g_unlink(tmp);
        return NULL;
    }
    if (tmp && rename(tmp, path) < 0) {
        int e = errno;

        g_unlink(tmp);
        errno = e;
        goto fail;
    }
    /* Which file is ours, so that only it is removed at exit. */
    if (stat(path, &st) == 0) {
        ctl->sock_dev = st.st_dev;
        ctl->sock_ino = st.st_ino;
    }
    ctl->watch = g_unix_fd_add(ctl->fd, G_IO_IN, pt_control_on_accept, ctl);
    return g_steal_pointer(&ctl);

fail:
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                "%s: control socket: %s", path, g_strerror(errno));
    return NULL;
}

void
pt_control_free(PtControl *ctl)
{
    if (!ctl)
        return;
    while (ctl->conns)
        pt_conn_close(ctl->conns->data);
    g_clear_handle_id(&ctl->watch, g_source_remove);
    g_clear_handle_id(&ctl->pause_timer, g_source_remove);
    if (ctl->fd >= 0) {
        struct stat st;

        close(ctl->fd);
        /* Our socket only: not a file someone put there since. */
        if (lstat(ctl->path, &st) == 0 && S_ISSOCK(st.st_mode) &&
            st.st_dev == ctl->sock_dev && st.st_ino == ctl->sock_ino)
            g_unlink(ctl->path);
    }
    g_free(ctl->path);
    g_free(ctl);
}

guint
pt_control_n_connections(PtControl *ctl)
{
    return ctl->n_conns;
}
