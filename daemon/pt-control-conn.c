/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A control connection: its replies and their backlog, its rate and idle
 * limits, and its requests, each handed to the command table above it
 * (PtConnOps, which the control socket sets at accept).
 */
#include "pt-control-private.h"
#include "pt-fd-send.h"
#include "pt-log.h"
#include "qmp-json.h"
#include "qmp-stream.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>
#include <glib-unix.h>

/*
 * What a client may leave unread: replies it has not read yet, before the
 * next one.  A reply is always queued when nothing is (so one status of
 * any legitimate size goes out), and a client that asks again without
 * reading what it got past this is closed.  So a connection holds at most
 * one large reply, or this much of small ones, until the client reads or
 * its idle timeout closes it.
 */
#define PT_OUT_MAX (4 * 1024 * 1024)

/* ---- output ------------------------------------------------------------ */

static gboolean pt_conn_on_writable(int fd, GIOCondition cond, gpointer data);

static void
pt_conn_flush(PtConn *conn)
{
    if (conn->fd >= 0) {
        switch (pt_fd_send_pending(conn->fd, conn->out->str, conn->out->len, &conn->out_pos)) {
        case PT_FD_SEND_AGAIN:
            if (!conn->out_watch)
                conn->out_watch = g_unix_fd_add(conn->fd, G_IO_OUT, pt_conn_on_writable, conn);
            return;
        case PT_FD_SEND_FAILED:
            pt_conn_close(conn);
            return;
        case PT_FD_SEND_DONE:
            break;
        }
    }
    g_string_truncate(conn->out, 0);
    conn->out_pos = 0;
    if (conn->close_after_flush)
        pt_conn_close(conn);
    else if (conn->pending_export)
        conn->ops->export_start(conn);
}

static gboolean
pt_conn_on_writable(int fd, GIOCondition cond, gpointer data)
{
    PtConn *conn = data;

    conn->out_watch = 0;
    pt_conn_flush(conn);
    return G_SOURCE_REMOVE;
}

void
pt_conn_send(PtConn *conn, const char *line)
{
    if (conn->fd < 0)
        return;
    /* A client that does not read its replies is not allowed to make us
     * buffer without bound. */
    if (conn->out->len > conn->out_pos &&
        conn->out->len - conn->out_pos + strlen(line) > PT_OUT_MAX) {
        pt_warn(NULL, NULL, "control: uid %u does not read its replies; closing",
                (unsigned)conn->uid);
        pt_conn_close(conn);
        return;
    }
    g_string_append(conn->out, line);
    pt_conn_flush(conn);
}

void
pt_conn_reply(PtConn *conn, json_object *id, json_object *ret)
{
    g_autofree char *line = qmp_message_build_return(ret, id);
    gsize len = strlen(line);

    if (len > QMP_CONTROL_MAX_REPLY) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_TOO_LARGE,
                                          "the reply would be %" G_GSIZE_FORMAT " MiB, more "
                                          "than the %d MiB a reply may be",
                                          len >> 20, QMP_CONTROL_MAX_REPLY >> 20);

        pt_warn(NULL, NULL, "control: uid %u: %s", (unsigned)conn->uid, e->message);
        pt_conn_reply_error(conn, id, e);
        return;
    }
    pt_conn_send(conn, line);
}

void
pt_conn_reply_error(PtConn *conn, json_object *id, const GError *err)
{
    g_autofree char *line = qmp_message_build_error(pt_control_error_class(err),
                                                    err->message, id);

    pt_conn_send(conn, line);
}

/* ---- connections ------------------------------------------------------- */

void
pt_conn_free(PtConn *conn)
{
    qmp_stream_free(conn->stream);
    g_string_free(conn->out, TRUE);
    g_free(conn->groups);
    g_free(conn);
}

void
pt_conn_close(PtConn *conn)
{
    PtControl *ctl = conn->ctl;

    if (conn->fd < 0)
        return;
    g_clear_handle_id(&conn->in_watch, g_source_remove);
    g_clear_handle_id(&conn->out_watch, g_source_remove);
    g_clear_handle_id(&conn->idle_timer, g_source_remove);
    /* An export thread owns the socket until it ends; it closes it then. */
    if (!conn->exporting)
        close(conn->fd);
    conn->fd = -1;
    if (ctl) {
        ctl->conns = g_list_remove(ctl->conns, conn);
        ctl->n_conns--;
    }
    conn->ctl = NULL;
    if (conn->exporting)
        conn->orphaned = TRUE;      /* freed when the export ends */
    else
        g_idle_add_once((GSourceOnceFunc)pt_conn_free, conn);
}

gboolean
pt_conn_may(PtConn *conn, gboolean mutating)
{
    PtControl *ctl = conn->ctl;
    gboolean have_gid = FALSE;
    gid_t want;

    if (conn->uid == 0)
        return TRUE;
    if (mutating) {
        if (!ctl->have_admin_gid)
            return FALSE;
        want = ctl->admin_gid;
    } else {
        if (!ctl->have_read_gid)
            return FALSE;
        want = ctl->read_gid;
    }
    have_gid = conn->gid == want;
    for (int i = 0; !have_gid && i < conn->n_groups; i++)
        have_gid = conn->groups[i] == want;
    /* Whoever may mutate may also read. */
    if (!have_gid && !mutating && ctl->have_admin_gid) {
        have_gid = conn->gid == ctl->admin_gid;
        for (int i = 0; !have_gid && i < conn->n_groups; i++)
            have_gid = conn->groups[i] == ctl->admin_gid;
    }
    return have_gid;
}

static gboolean
pt_conn_take_token(PtConn *conn)
{
    gint64 now = g_get_monotonic_time();
    double rate = conn->ctl->lim.rate_per_s;

    conn->tokens = MIN(rate, conn->tokens + (now - conn->refill_us) * rate / G_USEC_PER_SEC);
    conn->refill_us = now;
    if (conn->tokens < 1.0)
        return FALSE;
    conn->tokens -= 1.0;
    return TRUE;
}

/* The idle timeout.  A request already waiting in the socket is not
 * idleness: after a tick that held the main loop past the timeout, the
 * timer and the request are ready together, and the request is answered. */
static gboolean
pt_conn_idle(gpointer data)
{
    PtConn *conn = data;
    char c;

    conn->idle_timer = 0;
    if (conn->fd >= 0 && conn->in_watch &&
        recv(conn->fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 1) {
        pt_conn_touch(conn);
        return G_SOURCE_REMOVE;
    }
    pt_conn_close(conn);
    return G_SOURCE_REMOVE;
}

void
pt_conn_touch(PtConn *conn)
{
    g_assert(conn->ctl);
    g_clear_handle_id(&conn->idle_timer, g_source_remove);
    conn->idle_timer = g_timeout_add(conn->ctl->lim.idle_timeout_ms, pt_conn_idle, conn);
}

gboolean
pt_conn_on_message(const char *text, gsize len, gpointer data, GError **error)
{
    PtConn *conn = data;
    g_autoptr(QmpMessage) m = NULL;
    g_autoptr(GError) err = NULL;

    if (conn->fd < 0 || !conn->ctl)
        return FALSE;
    pt_conn_touch(conn);
    m = qmp_message_parse(text, len, 32, &err);
    if (!m) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                                          "request: %s", err->message);

        pt_conn_reply_error(conn, NULL, e);
        return TRUE;
    }
    if (m->kind != QMP_MESSAGE_COMMAND) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                                          "request: expected {\"execute\": ...}");

        pt_conn_reply_error(conn, m->id, e);
        return TRUE;
    }
    if (!pt_conn_take_token(conn)) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_BUSY,
                                          "%s: more than %u requests per second",
                                          m->name, conn->ctl->lim.rate_per_s);

        pt_conn_reply_error(conn, m->id, e);
        return TRUE;
    }
    conn->ops->dispatch(conn, m);
    /* An export takes the socket over; stop reading until it is done. */
    return conn->fd >= 0 && !conn->pending_export && !conn->exporting;
}

static gboolean
pt_conn_on_readable(int fd, GIOCondition cond, gpointer data)
{
    PtConn *conn = data;
    char buf[16384];
    g_autoptr(GError) err = NULL;
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return G_SOURCE_CONTINUE;
    if (n <= 0) {
        conn->in_watch = 0;
        pt_conn_close(conn);
        return G_SOURCE_REMOVE;
    }
    if (!qmp_stream_feed(conn->stream, buf, n, &err)) {
        if (conn->fd < 0)
            return G_SOURCE_REMOVE;     /* closed while handling a message */
        if (conn->pending_export || conn->exporting) {
            conn->in_watch = 0;
            return G_SOURCE_REMOVE;
        }
        if (err && err->domain == QMP_ERROR) {
            g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR,
                                              err->code == QMP_ERROR_TOO_BIG ?
                                              PT_CONTROL_ERROR_TOO_LARGE :
                                              PT_CONTROL_ERROR_INVALID_PARAMETER,
                                              "request: %s", err->message);

            pt_warn(NULL, NULL, "control: uid %u: %s; closing", (unsigned)conn->uid,
                    e->message);
            pt_conn_reply_error(conn, NULL, e);
            conn->close_after_flush = TRUE;
            pt_conn_flush(conn);
        }
        conn->in_watch = 0;
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

void
pt_conn_resume(PtConn *conn)
{
    if (conn->fd >= 0 && !conn->in_watch)
        conn->in_watch = g_unix_fd_add(conn->fd, G_IO_IN | G_IO_HUP, pt_conn_on_readable, conn);
}
