/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-client.h"
#include "qmp-json.h"
#include "qmp-stream.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define QMP_READ_CHUNK (64 * 1024)

typedef struct {
    QmpClient *client;          /* weak: the client outlives its commands */
    gint64 id;
    char *command;
    json_object *args;          /* owned, until the command goes out */
    QmpDecodeFunc decode;
    GTask *task;
    guint timeout_ms;
    gint64 sent_us;             /* monotonic, when it went out */
    GList link;                 /* in the client's order of commands sent */
} QmpPending;

typedef struct {
    guint handle;
    char *event;                /* NULL: every event */
    QmpEventFunc func;
    gpointer user_data;
} QmpSubscription;

struct _QmpClient {
    GObject parent;

    GMainContext *context;
    char *name;
    gsize max_message_size;
    guint max_depth;
    guint timeout_ms;

    QmpClientState state;
    int fd;
    int peer_pid;
    GSource *io_source;
    gpointer io_tag;
    GSource *setup_timer;       /* greeting + negotiation */
    QmpStream *stream;
    GString *wbuf;
    gsize wpos;

    QmpVersion version;
    gboolean have_version;
    GError *close_reason;
    const char *close_cause;    /* close_reason's message without our name */

    gint64 next_id;
    GHashTable *in_flight;      /* gint64 id -> QmpPending */
    GQueue sent;                /* the same, oldest first (QmpPending.link) */
    GSource *timer;             /* the oldest command's deadline */
    gint64 progress_us;         /* the last reply, or a send to an idle peer */
    GQueue queued;              /* QmpPending waiting for READY */
    GPtrArray *ready_waiters;   /* GTask */

    GArray *subs;               /* QmpSubscription */
    guint next_sub;

    QmpClosedFunc closed_func;
    gpointer closed_data;
    GDestroyNotify closed_destroy;
};

G_DEFINE_TYPE(QmpClient, qmp_client, G_TYPE_OBJECT)

static void qmp_client_send(QmpClient *c, const char *wire);
static void qmp_client_flush(QmpClient *c);

void
qmp_version_clear(QmpVersion *v)
{
    g_clear_pointer(&v->package, g_free);
}

static void
qmp_pending_free(QmpPending *p)
{
    if (!p)
        return;
    g_clear_object(&p->task);
    g_free(p->command);
    json_object_put(p->args);
    g_free(p);
}

/* Complete @p's task with an error (taking it) and free @p. */
static void
qmp_pending_fail(QmpPending *p, GError *error)
{
    GTask *task = g_steal_pointer(&p->task);

    qmp_pending_free(p);
    g_task_return_error(task, error);
    g_object_unref(task);
}

static void
qmp_client_update_io(QmpClient *c)
{
    GIOCondition cond = G_IO_IN;

    if (!c->io_source)
        return;
    if (c->wbuf->len > c->wpos)
        cond |= G_IO_OUT;
    g_source_modify_unix_fd(c->io_source, c->io_tag, cond);
}

/* What a command learns when the client closed under it: the cause of the
 * close, with its code, so that a timeout reads as a timeout to all. */
static GError *
qmp_client_closed_error(QmpClient *c, const char *command)
{
    return g_error_new(c->close_reason->domain, c->close_reason->code,
                       "%s: %s: %s", c->name, command, c->close_cause);
}

void
qmp_client_close(QmpClient *c, const GError *reason)
{
    g_autoptr(GHashTable) in_flight = NULL;
    g_autoptr(GPtrArray) waiters = NULL;
    GHashTableIter iter;
    gpointer value;
    QmpPending *p;

    if (c->state == QMP_CLIENT_CLOSED)
        return;
    if (!c->name)
        c->name = g_strdup("qmp");

    /* Take everything out first: completions may run user code that calls
     * back into the client, which must then see a closed client. */
    c->state = QMP_CLIENT_CLOSED;
    c->close_reason = reason ? g_error_copy(reason) :
        g_error_new(QMP_ERROR, QMP_ERROR_CLOSED, "%s: connection closed", c->name);
    c->close_cause = c->close_reason->message;
    if (g_str_has_prefix(c->close_cause, c->name) &&
        g_str_has_prefix(c->close_cause + strlen(c->name), ": "))
        c->close_cause += strlen(c->name) + 2;
    if (c->io_source) {
        g_source_destroy(c->io_source);
        g_clear_pointer(&c->io_source, g_source_unref);
    }
    if (c->setup_timer) {
        g_source_destroy(c->setup_timer);
        g_clear_pointer(&c->setup_timer, g_source_unref);
    }
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    g_string_truncate(c->wbuf, 0);
    c->wpos = 0;

    in_flight = g_steal_pointer(&c->in_flight);
    c->in_flight = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_queue_init(&c->sent);
    if (c->timer)
        g_source_set_ready_time(c->timer, -1);
    waiters = g_steal_pointer(&c->ready_waiters);
    c->ready_waiters = g_ptr_array_new();

    g_object_ref(c);
    g_hash_table_iter_init(&iter, in_flight);
    while (g_hash_table_iter_next(&iter, NULL, &value)) {
        p = value;
        g_hash_table_iter_steal(&iter);
        qmp_pending_fail(p, qmp_client_closed_error(c, p->command));
    }
    while ((p = g_queue_pop_head(&c->queued)))
        qmp_pending_fail(p, qmp_client_closed_error(c, p->command));
    for (guint i = 0; i < waiters->len; i++) {
        GTask *t = waiters->pdata[i];

        g_task_return_error(t, g_error_copy(c->close_reason));
        g_object_unref(t);
    }
    if (c->closed_func)
        c->closed_func(c, c->close_reason, c->closed_data);
    g_object_unref(c);
}

static void
qmp_client_fail(QmpClient *c, QmpErrorCode code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static void
qmp_client_fail(QmpClient *c, QmpErrorCode code, const char *fmt, ...)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    err = g_error_new(QMP_ERROR, code, "%s: %s", c->name, msg);
    qmp_client_close(c, err);
}

/* ---- command submission ------------------------------------------------ */

/*
 * QEMU runs a monitor's commands one at a time, in the order they arrive,
 * so a command waits for those sent before it, and hundreds may be sent
 * at once (the writes of a stop, one per knob of every iothread).  Its
 * timeout is therefore counted from its turn: from when it was sent or the
 * reply before it came, whichever is later.  A peer that makes no progress
 * for that long is hung or overloaded, however long the queue behind.
 * One timer per client, on the oldest command, keeps the main loop's
 * sources few whatever the number in flight.
 */
static void
qmp_client_arm_timer(QmpClient *c)
{
    QmpPending *p = c->sent.head ? c->sent.head->data : NULL;

    g_source_set_ready_time(c->timer, p ? MAX(p->sent_us, c->progress_us) +
                            (gint64)p->timeout_ms * 1000 : -1);
}

/* @p was answered, or fails: it is no longer in flight. */
static void
qmp_client_take_pending(QmpClient *c, QmpPending *p)
{
    g_hash_table_steal(c->in_flight, &p->id);
    g_queue_unlink(&c->sent, &p->link);
    c->progress_us = g_get_monotonic_time();
    qmp_client_arm_timer(c);
}

static gboolean
qmp_client_timer_dispatch(GSource *source, GSourceFunc cb, gpointer data)
{
    QmpClient *c = data;
    QmpPending *p = c->sent.head ? c->sent.head->data : NULL;
    g_autoptr(GError) reason = NULL;

    g_source_set_ready_time(source, -1);
    if (!p || c->state == QMP_CLIENT_CLOSED)
        return G_SOURCE_CONTINUE;
    /* The reply may still come, but a monitor that misses a deadline is hung
     * or overloaded; later replies would be just as late.  Close, so every
     * other pending command is told at once rather than after its own
     * timeout. */
    g_hash_table_steal(c->in_flight, &p->id);
    g_queue_unlink(&c->sent, &p->link);
    reason = g_error_new(QMP_ERROR, QMP_ERROR_TIMEOUT,
                         "%s: %s: no reply within %u ms",
                         c->name, p->command, p->timeout_ms);
    g_object_ref(c);
    qmp_pending_fail(p, g_error_copy(reason));
    qmp_client_close(c, reason);
    g_object_unref(c);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs qmp_client_timer_funcs = {
    .dispatch = qmp_client_timer_dispatch,
};

/* Ids are given as commands go out, so they increase along the wire. */
static void
qmp_client_dispatch_pending(QmpClient *c, QmpPending *p)
{
    g_autoptr(json_object) id = NULL;
    g_autofree char *wire = NULL;

    p->id = ++c->next_id;
    id = json_object_new_int64(p->id);
    wire = qmp_message_build_command(p->command, p->args, id);
    g_clear_pointer(&p->args, qmp_json_unref);
    p->sent_us = g_get_monotonic_time();
    p->link.data = p;
    g_queue_push_tail_link(&c->sent, &p->link);
    if (c->sent.length == 1)
        qmp_client_arm_timer(c);
    g_hash_table_insert(c->in_flight, &p->id, p);
    qmp_client_send(c, wire);
}

/* Takes @args and @task. */
static void
qmp_client_enqueue(QmpClient *c, const char *command, struct json_object *args,
                   guint timeout_ms, QmpDecodeFunc decode, GTask *task)
{
    QmpPending *p = g_new0(QmpPending, 1);

    p->client = c;
    p->command = g_strdup(command);
    p->args = args;
    p->decode = decode;
    p->task = task;
    p->timeout_ms = timeout_ms ? timeout_ms : c->timeout_ms;

    if (c->state == QMP_CLIENT_READY)
        qmp_client_dispatch_pending(c, p);
    else
        g_queue_push_tail(&c->queued, p);
}

void
qmp_client_call_async(QmpClient *c, const char *command,
                      struct json_object *args, guint timeout_ms,
                      QmpDecodeFunc decode, GDestroyNotify destroy,
                      GAsyncReadyCallback cb, gpointer user_data)
{
    GTask *task = g_task_new(c, NULL, cb, user_data);

    if (!decode)
        destroy = (GDestroyNotify)qmp_json_unref;
    g_task_set_source_tag(task, qmp_client_call_async);
    /* The destroy notify travels with the task, for the result. */
    g_task_set_task_data(task, (gpointer)destroy, NULL);
    if (c->state == QMP_CLIENT_CLOSED) {
        g_task_return_error(task, qmp_client_closed_error(c, command));
        g_object_unref(task);
        json_object_put(args);
        return;
    }
    qmp_client_enqueue(c, command, args, timeout_ms, decode, task);
}

gpointer
qmp_client_call_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(res, c), NULL);
    return g_task_propagate_pointer(G_TASK(res), error);
}

typedef struct {
    gboolean done;
    gpointer result;
    GError *error;
} QmpSyncState;

static void
qmp_client_call_sync_done(GObject *obj, GAsyncResult *res, gpointer data)
{
    QmpSyncState *st = data;

    st->result = qmp_client_call_finish(QMP_CLIENT(obj), res, &st->error);
    st->done = TRUE;
}

gpointer
qmp_client_call_sync(QmpClient *c, const char *command,
                     struct json_object *args, QmpDecodeFunc decode,
                     GDestroyNotify destroy, GError **error)
{
    QmpSyncState st = { 0 };

    qmp_client_call_async(c, command, args, 0, decode, destroy,
                          qmp_client_call_sync_done, &st);
    while (!st.done)
        g_main_context_iteration(c->context, TRUE);
    if (st.error) {
        g_propagate_error(error, st.error);
        return NULL;
    }
    return st.result;
}

void
qmp_client_wait_ready_async(QmpClient *c, GAsyncReadyCallback cb,
                            gpointer user_data)
{
    GTask *task = g_task_new(c, NULL, cb, user_data);

    g_task_set_source_tag(task, qmp_client_wait_ready_async);
    if (c->state == QMP_CLIENT_READY) {
        g_task_return_boolean(task, TRUE);
        g_object_unref(task);
    } else if (c->state == QMP_CLIENT_CLOSED) {
        g_task_return_error(task, g_error_copy(c->close_reason));
        g_object_unref(task);
    } else {
        g_ptr_array_add(c->ready_waiters, task);
    }
}

gboolean
qmp_client_wait_ready_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(res, c), FALSE);
    return g_task_propagate_boolean(G_TASK(res), error);
}

static void
qmp_client_wait_ready_sync_done(GObject *obj, GAsyncResult *res, gpointer data)
{
    QmpSyncState *st = data;

    st->result = GINT_TO_POINTER(
        qmp_client_wait_ready_finish(QMP_CLIENT(obj), res, &st->error));
    st->done = TRUE;
}

gboolean
qmp_client_wait_ready_sync(QmpClient *c, GError **error)
{
    QmpSyncState st = { 0 };

    qmp_client_wait_ready_async(c, qmp_client_wait_ready_sync_done, &st);
    while (!st.done)
        g_main_context_iteration(c->context, TRUE);
    if (st.error) {
        g_propagate_error(error, st.error);
        return FALSE;
    }
    return TRUE;
}

/* ---- incoming messages ------------------------------------------------- */

static void
qmp_client_became_ready(QmpClient *c)
{
    g_autoptr(GPtrArray) waiters = g_steal_pointer(&c->ready_waiters);
    QmpPending *p;

    c->ready_waiters = g_ptr_array_new();
    c->state = QMP_CLIENT_READY;
    if (c->setup_timer) {
        g_source_destroy(c->setup_timer);
        g_clear_pointer(&c->setup_timer, g_source_unref);
    }
    while (c->state == QMP_CLIENT_READY && (p = g_queue_pop_head(&c->queued)))
        qmp_client_dispatch_pending(c, p);
    for (guint i = 0; i < waiters->len; i++) {
        GTask *t = waiters->pdata[i];

        g_task_return_boolean(t, TRUE);
        g_object_unref(t);
    }
}

static void
qmp_client_capabilities_done(GObject *obj, GAsyncResult *res, gpointer data)
{
    QmpClient *c = QMP_CLIENT(obj);
    g_autoptr(GError) err = NULL;
    json_object *ret = qmp_client_call_finish(c, res, &err);

    if (!ret) {
        /* Already closed if the connection failed; otherwise QEMU refused. */
        if (c->state != QMP_CLIENT_CLOSED)
            qmp_client_close(c, err);
        return;
    }
    json_object_put(ret);
    if (c->state == QMP_CLIENT_NEGOTIATING)
        qmp_client_became_ready(c);
}

static gboolean
qmp_client_handle_greeting(QmpClient *c, QmpMessage *m, GError **error)
{
    json_object *ver = NULL, *qemu = NULL;
    gint64 major = 0, minor = 0, micro = 0;
    QmpPending *p;

    if (c->state != QMP_CLIENT_CONNECTING) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                    "unexpected second greeting");
        return FALSE;
    }
    if (!json_object_object_get_ex(m->body, "version", &ver) ||
        !json_object_object_get_ex(ver, "qemu", &qemu) ||
        !qmp_json_get_int(qemu, "major", &major) ||
        !qmp_json_get_int(qemu, "minor", &minor) ||
        !qmp_json_get_int(qemu, "micro", &micro)) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                    "greeting without version.qemu.{major,minor,micro}");
        return FALSE;
    }
    c->version.major = (int)CLAMP(major, 0, G_MAXINT);
    c->version.minor = (int)CLAMP(minor, 0, G_MAXINT);
    c->version.micro = (int)CLAMP(micro, 0, G_MAXINT);
    c->version.package = g_strdup(qmp_json_get_string(ver, "package"));
    c->have_version = TRUE;
    c->state = QMP_CLIENT_NEGOTIATING;

    /* qmp_capabilities must go first and alone; it jumps the queue. */
    p = g_new0(QmpPending, 1);
    p->client = c;
    p->command = g_strdup("qmp_capabilities");
    p->timeout_ms = c->timeout_ms;
    p->task = g_task_new(c, NULL, qmp_client_capabilities_done, NULL);
    g_task_set_task_data(p->task, (gpointer)qmp_json_unref, NULL);
    qmp_client_dispatch_pending(c, p);
    return TRUE;
}

static void
qmp_client_handle_reply(QmpClient *c, QmpMessage *m)
{
    QmpPending *p;
    GTask *task;
    gint64 id;
    GError *err = NULL;
    gpointer result;

    /* A reply we cannot match (no id, a foreign id, or one for a command we
     * no longer wait for) is dropped: it cannot be attributed safely. */
    if (!m->id || !json_object_is_type(m->id, json_type_int))
        return;
    id = json_object_get_int64(m->id);
    p = g_hash_table_lookup(c->in_flight, &id);
    if (!p)
        return;
    qmp_client_take_pending(c, p);

    if (m->kind == QMP_MESSAGE_ERROR) {
        qmp_pending_fail(p, g_error_new(QMP_ERROR, QMP_ERROR_COMMAND,
                                        "%s: %s: QMP error %s: %s", c->name,
                                        p->command, m->name, m->desc));
        return;
    }
    if (p->decode) {
        result = p->decode(m->body, &err);
        if (!result) {
            qmp_pending_fail(p, g_error_new(err->domain, err->code,
                                            "%s: %s: %s", c->name, p->command,
                                            err->message));
            g_error_free(err);
            return;
        }
    } else {
        result = json_object_get(m->body);
    }
    task = g_steal_pointer(&p->task);
    qmp_pending_free(p);
    g_task_return_pointer(task, result,
                          (GDestroyNotify)g_task_get_task_data(task));
    g_object_unref(task);
}

static void
qmp_client_handle_event(QmpClient *c, QmpMessage *m)
{
    /* Copy the matching callbacks first: a handler may unsubscribe. */
    g_autoptr(GArray) matches = g_array_new(FALSE, FALSE, sizeof(QmpSubscription));

    for (guint i = 0; i < c->subs->len; i++) {
        QmpSubscription *s = &g_array_index(c->subs, QmpSubscription, i);

        if (!s->event || g_str_equal(s->event, m->name))
            g_array_append_val(matches, *s);
    }
    for (guint i = 0; i < matches->len && c->state != QMP_CLIENT_CLOSED; i++) {
        QmpSubscription *s = &g_array_index(matches, QmpSubscription, i);

        s->func(c, m->name, m->body, m->timestamp_us, s->user_data);
    }
}

static gboolean
qmp_client_on_message(const char *text, gsize len, gpointer data, GError **error)
{
    QmpClient *c = data;
    g_autoptr(QmpMessage) m = NULL;

    if (c->state == QMP_CLIENT_CLOSED) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_CLOSED, "closed");
        return FALSE;
    }
    m = qmp_message_parse(text, len, c->max_depth, error);
    if (!m)
        return FALSE;
    switch (m->kind) {
    case QMP_MESSAGE_GREETING:
        return qmp_client_handle_greeting(c, m, error);
    case QMP_MESSAGE_RETURN:
    case QMP_MESSAGE_ERROR:
        qmp_client_handle_reply(c, m);
        return TRUE;
    case QMP_MESSAGE_EVENT:
        qmp_client_handle_event(c, m);
        return TRUE;
    case QMP_MESSAGE_COMMAND:
    default:
        g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                    "the peer sent a command");
        return FALSE;
    }
}

/* ---- socket I/O -------------------------------------------------------- */

static void
qmp_client_send(QmpClient *c, const char *wire)
{
    g_string_append(c->wbuf, wire);
    qmp_client_flush(c);
}

static void
qmp_client_flush(QmpClient *c)
{
    while (c->fd >= 0 && c->wpos < c->wbuf->len) {
        ssize_t n = send(c->fd, c->wbuf->str + c->wpos, c->wbuf->len - c->wpos,
                         MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n < 0) {
            qmp_client_fail(c, QMP_ERROR_CLOSED, "write: %s", g_strerror(errno));
            return;
        }
        c->wpos += n;
    }
    if (c->wpos == c->wbuf->len) {
        g_string_truncate(c->wbuf, 0);
        c->wpos = 0;
    }
    qmp_client_update_io(c);
}

static void
qmp_client_read(QmpClient *c)
{
    char buf[QMP_READ_CHUNK];
    g_autoptr(GError) err = NULL;
    ssize_t n;

    n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
            return;
        qmp_client_fail(c, QMP_ERROR_CLOSED, "read: %s", g_strerror(errno));
        return;
    }
    if (n == 0) {
        qmp_client_fail(c, QMP_ERROR_CLOSED,
                        qmp_stream_pending(c->stream) ?
                        "connection lost in the middle of a message" :
                        "connection closed by peer");
        return;
    }
    if (!qmp_stream_feed(c->stream, buf, n, &err) && c->state != QMP_CLIENT_CLOSED)
        qmp_client_fail(c, err ? err->code : QMP_ERROR_PROTOCOL, "%s",
                        err ? err->message : "input refused");
}

static gboolean
qmp_client_io_dispatch(GSource *source, GSourceFunc cb, gpointer data)
{
    QmpClient *c = data;
    GIOCondition rev = g_source_query_unix_fd(source, c->io_tag);

    g_object_ref(c);
    if (rev & G_IO_OUT)
        qmp_client_flush(c);
    if (c->state != QMP_CLIENT_CLOSED && (rev & (G_IO_IN | G_IO_HUP | G_IO_ERR)))
        qmp_client_read(c);
    g_object_unref(c);
    return G_SOURCE_CONTINUE;
}

static GSourceFuncs qmp_client_io_funcs = {
    .dispatch = qmp_client_io_dispatch,
};

static gboolean
qmp_client_setup_timed_out(gpointer data)
{
    QmpClient *c = data;

    g_clear_pointer(&c->setup_timer, g_source_unref);
    qmp_client_fail(c, QMP_ERROR_TIMEOUT, "no QMP greeting within %u ms",
                    c->timeout_ms);
    return G_SOURCE_REMOVE;
}

gboolean
qmp_client_adopt_fd(QmpClient *c, int fd, GError **error)
{
    int flags;

    g_return_val_if_fail(c->fd < 0 && c->state == QMP_CLIENT_CONNECTING, FALSE);

    if (!c->name)
        c->name = g_strdup("qmp");

    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_CLOSED, "%s: fd %d: %s",
                    c->name, fd, g_strerror(errno));
        return FALSE;
    }
    c->fd = fd;
    {
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0)
            c->peer_pid = cred.pid;
    }
    c->io_source = g_source_new(&qmp_client_io_funcs, sizeof(GSource));
    g_source_set_callback(c->io_source, NULL, c, NULL);
    g_source_set_name(c->io_source, "qmp-client-io");
    c->io_tag = g_source_add_unix_fd(c->io_source, fd, G_IO_IN);
    g_source_attach(c->io_source, c->context);

    c->setup_timer = g_timeout_source_new(c->timeout_ms);
    g_source_set_callback(c->setup_timer, qmp_client_setup_timed_out, c, NULL);
    g_source_attach(c->setup_timer, c->context);
    return TRUE;
}

/* A non-blocking connect to the unix socket @path: the fd, or -1 with
 * errno set.  A unix connect either completes at once or fails at once
 * (EAGAIN when the listener's backlog is full, as with a stopped QEMU). */
static int
qmp_unix_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd, e;

    if (strlen(path) >= sizeof(sun.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    strcpy(sun.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

gboolean
qmp_socket_check(const char *path, GError **error)
{
    struct stat st;
    int fd, e;

    if (stat(path, &st) < 0) {
        e = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e), "%s: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    if (!S_ISSOCK(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "%s: not a unix socket", path);
        return FALSE;
    }
    fd = qmp_unix_connect(path);
    /* EAGAIN: a full backlog, as with a stopped QEMU; it does listen. */
    if (fd < 0 && errno != EAGAIN) {
        e = errno;
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "%s: nothing listens on this socket: %s", path, g_strerror(e));
        return FALSE;
    }
    if (fd >= 0)
        close(fd);
    return TRUE;
}

gboolean
qmp_client_connect_path(QmpClient *c, const char *path, GError **error)
{
    int fd;

    if (!c->name)
        c->name = g_strdup(path);
    fd = qmp_unix_connect(path);
    if (fd < 0) {
        int e = errno;

        g_set_error(error, QMP_ERROR, QMP_ERROR_CLOSED, "%s: connect %s: %s",
                    c->name, path, g_strerror(e));
        errno = e;
        return FALSE;
    }
    if (!qmp_client_adopt_fd(c, fd, error)) {
        close(fd);
        return FALSE;
    }
    return TRUE;
}

/* ---- object ------------------------------------------------------------ */

QmpClient *
qmp_client_new(GMainContext *context, const QmpClientOptions *opts)
{
    QmpClient *c = g_object_new(QMP_TYPE_CLIENT, NULL);

    c->context = context ? g_main_context_ref(context) :
                           g_main_context_ref_thread_default();
    if (opts) {
        c->name = g_strdup(opts->name);
        if (opts->max_message_size)
            c->max_message_size = opts->max_message_size;
        if (opts->max_depth)
            c->max_depth = opts->max_depth;
        if (opts->timeout_ms)
            c->timeout_ms = opts->timeout_ms;
    }
    c->stream = qmp_stream_new(c->max_message_size, c->max_depth,
                               qmp_client_on_message, c);
    /* A dispatch never frees the client: the callback's data is weak. */
    c->timer = g_source_new(&qmp_client_timer_funcs, sizeof(GSource));
    g_source_set_callback(c->timer, NULL, c, NULL);
    g_source_attach(c->timer, c->context);
    return c;
}

static void
qmp_client_init(QmpClient *c)
{
    c->fd = -1;
    c->state = QMP_CLIENT_CONNECTING;
    c->max_message_size = QMP_DEFAULT_MAX_MESSAGE;
    c->max_depth = QMP_DEFAULT_MAX_DEPTH;
    c->timeout_ms = QMP_DEFAULT_TIMEOUT_MS;
    c->wbuf = g_string_new(NULL);
    c->in_flight = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_queue_init(&c->sent);
    g_queue_init(&c->queued);
    c->ready_waiters = g_ptr_array_new();
    c->subs = g_array_new(FALSE, FALSE, sizeof(QmpSubscription));
}

static void
qmp_client_dispose(GObject *obj)
{
    QmpClient *c = QMP_CLIENT(obj);

    if (c->state != QMP_CLIENT_CLOSED)
        qmp_client_close(c, NULL);
    if (c->closed_destroy)
        c->closed_destroy(c->closed_data);
    c->closed_func = NULL;
    c->closed_destroy = NULL;
    G_OBJECT_CLASS(qmp_client_parent_class)->dispose(obj);
}

static void
qmp_client_finalize(GObject *obj)
{
    QmpClient *c = QMP_CLIENT(obj);

    for (guint i = 0; i < c->subs->len; i++)
        g_free(g_array_index(c->subs, QmpSubscription, i).event);
    g_array_unref(c->subs);
    g_ptr_array_unref(c->ready_waiters);
    g_hash_table_unref(c->in_flight);
    if (c->timer) {
        g_source_destroy(c->timer);
        g_source_unref(c->timer);
    }
    g_string_free(c->wbuf, TRUE);
    qmp_stream_free(c->stream);
    qmp_version_clear(&c->version);
    g_clear_error(&c->close_reason);
    g_main_context_unref(c->context);
    g_free(c->name);
    G_OBJECT_CLASS(qmp_client_parent_class)->finalize(obj);
}

static void
qmp_client_class_init(QmpClientClass *klass)
{
    GObjectClass *oc = G_OBJECT_CLASS(klass);

    oc->dispose = qmp_client_dispose;
    oc->finalize = qmp_client_finalize;
}

QmpClientState
qmp_client_get_state(QmpClient *c)
{
    return c->state;
}

const char *
qmp_client_get_name(QmpClient *c)
{
    return c->name ? c->name : "qmp";
}

const QmpVersion *
qmp_client_get_version(QmpClient *c)
{
    return c->have_version ? &c->version : NULL;
}

const GError *
qmp_client_get_close_reason(QmpClient *c)
{
    return c->close_reason;
}

int
qmp_client_get_peer_pid(QmpClient *c)
{
    return c->peer_pid;
}

guint
qmp_client_get_n_pending(QmpClient *c)
{
    return g_hash_table_size(c->in_flight) + g_queue_get_length(&c->queued);
}

void
qmp_client_set_timeout(QmpClient *c, guint timeout_ms)
{
    c->timeout_ms = timeout_ms ? timeout_ms : QMP_DEFAULT_TIMEOUT_MS;
}

void
qmp_client_set_closed_func(QmpClient *c, QmpClosedFunc func,
                           gpointer user_data, GDestroyNotify destroy)
{
    if (c->closed_destroy)
        c->closed_destroy(c->closed_data);
    c->closed_func = func;
    c->closed_data = user_data;
    c->closed_destroy = destroy;
}

guint
qmp_client_subscribe(QmpClient *c, const char *event, QmpEventFunc func,
                     gpointer user_data)
{
    QmpSubscription s = {
        .handle = ++c->next_sub,
        .event = g_strdup(event),
        .func = func,
        .user_data = user_data,
    };

    g_array_append_val(c->subs, s);
    return s.handle;
}

void
qmp_client_unsubscribe(QmpClient *c, guint handle)
{
    for (guint i = 0; i < c->subs->len; i++) {
        QmpSubscription *s = &g_array_index(c->subs, QmpSubscription, i);

        if (s->handle == handle) {
            g_free(s->event);
            g_array_remove_index(c->subs, i);
            return;
        }
    }
}
