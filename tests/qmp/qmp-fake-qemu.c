/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-fake-qemu-priv.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib-unix.h>
#include <glib/gstdio.h>

/* What a client may send: QMP commands are small; the splitter's limits
 * are the client's own (qmp/qmp-client.c) so nothing legitimate is cut. */
#define FAKE_IN_MAX (1024 * 1024)
#define FAKE_IN_DEPTH 64

static void fake_run(QmpFakeQemu *f);
static void fake_start_timer(QmpFakeQemu *f, Step *s);

void
fake_step_free(Step *s)
{
    g_free(s->command);
    g_free(s->args_json);
    g_free(s->data);
    g_free(s->tail);
    g_free(s);
}

void
fake_fail(QmpFakeQemu *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_string_append_vprintf(f->failures, fmt, ap);
    va_end(ap);
    g_string_append_c(f->failures, '\n');
}

static void
fake_source_clear(GSource **src)
{
    if (*src) {
        g_source_destroy(*src);
        g_source_unref(*src);
        *src = NULL;
    }
}

static GSource *
fake_watch(QmpFakeQemu *f, int fd, GIOCondition cond, GUnixFDSourceFunc fn)
{
    GSource *src = g_unix_fd_source_new(fd, cond);

    g_source_set_callback(src, G_SOURCE_FUNC(fn), f, NULL);
    g_source_attach(src, f->ctx);
    return src;
}

static gboolean fake_on_connect(int fd, GIOCondition cond, gpointer data);
static gboolean fake_on_readable(int fd, GIOCondition cond, gpointer data);

/* The connection ends; a listening fake waits for the next. */
static void
fake_close_fd(QmpFakeQemu *f)
{
    fake_source_clear(&f->in_src);
    fake_source_clear(&f->out_src);
    fake_source_clear(&f->timer_src);
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    f->huge_left = 0;
    g_clear_pointer(&f->huge_tail, g_free);
    f->timed = NULL;
    g_string_truncate(f->out, 0);
    f->out_pos = 0;
    if (f->listen_fd >= 0 && !f->listen_src)
        f->listen_src = fake_watch(f, f->listen_fd, G_IO_IN, fake_on_connect);
}

static gboolean fake_on_writable(int fd, GIOCondition cond, gpointer data);

/* Write what is buffered (and generate huge data) until the socket fills. */
static void
fake_flush(QmpFakeQemu *f)
{
    static char pattern[64 * 1024];

    if (!pattern[0])
        memset(pattern, 'a', sizeof(pattern));
    while (f->fd >= 0) {
        const char *p;
        gsize len;
        ssize_t n;

        if (f->out_pos < f->out->len) {
            p = f->out->str + f->out_pos;
            len = f->out->len - f->out_pos;
        } else if (f->huge_left) {
            p = pattern;
            len = MIN(f->huge_left, sizeof(pattern));
        } else if (f->huge_tail) {
            g_string_append(f->out, f->huge_tail);
            g_clear_pointer(&f->huge_tail, g_free);
            continue;
        } else {
            break;
        }
        n = send(f->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!f->out_src)
                f->out_src = fake_watch(f, f->fd, G_IO_OUT, fake_on_writable);
            return;
        }
        if (n < 0) {
            /* The client hung up on us: expected when we misbehave. */
            fake_close_fd(f);
            return;
        }
        f->sent += n;
        if (f->out_pos < f->out->len)
            f->out_pos += n;
        else
            f->huge_left -= n;
    }
    if (f->out_pos == f->out->len) {
        g_string_truncate(f->out, 0);
        f->out_pos = 0;
    }
}

static gboolean
fake_writing(QmpFakeQemu *f)
{
    return f->huge_left || f->huge_tail || f->out->len;
}

static gboolean
fake_on_writable(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeQemu *f = data;

    g_rec_mutex_lock(&f->lock);
    fake_source_clear(&f->out_src);
    fake_flush(f);
    if (!fake_writing(f))
        fake_run(f);
    g_rec_mutex_unlock(&f->lock);
    return G_SOURCE_REMOVE;
}

void
fake_write_len(QmpFakeQemu *f, const char *bytes, gsize len)
{
    g_string_append_len(f->out, bytes, len);
    fake_flush(f);
}

void
fake_write(QmpFakeQemu *f, const char *bytes)
{
    fake_write_len(f, bytes, strlen(bytes));
}

/* One byte of a drip, or one more copy of a repeated message. */
static gboolean
fake_timer_tick(gpointer data)
{
    QmpFakeQemu *f = data;
    Step *s;

    g_rec_mutex_lock(&f->lock);
    s = f->timed;
    fake_source_clear(&f->timer_src);
    if (s && s->kind == STEP_DRIP) {
        char one[2] = { *f->drip_pos, 0 };

        fake_write(f, one);
        if (*++f->drip_pos && f->fd >= 0) {
            fake_start_timer(f, s);
        } else {
            f->timed = NULL;
            fake_run(f);
        }
    } else if (s && f->fd >= 0) {
        fake_write_len(f, s->data, s->len);
        if (f->fd >= 0)
            fake_start_timer(f, s);
    }
    g_rec_mutex_unlock(&f->lock);
    return G_SOURCE_REMOVE;
}

static void
fake_start_timer(QmpFakeQemu *f, Step *s)
{
    f->timed = s;
    f->timer_src = g_timeout_source_new(s->interval_ms);
    g_source_set_callback(f->timer_src, fake_timer_tick, f, NULL);
    g_source_attach(f->timer_src, f->ctx);
}

static Step *
fake_head(QmpFakeQemu *f)
{
    return f->pos < f->script->len ? f->script->pdata[f->pos] : NULL;
}

/* Run send steps at the head until an expect step (or a pending write).
 * A replaying fake runs nothing without a client: each one starts over. */
static void
fake_run(QmpFakeQemu *f)
{
    Step *s;

    while (!fake_writing(f) && !f->timed && (s = fake_head(f))) {
        if (s->kind == STEP_EXPECT || s->kind == STEP_SILENCE)
            return;
        if (f->fd < 0 && (f->replay || f->closed))
            return;
        f->pos++;
        switch (s->kind) {
        case STEP_SEND:
        case STEP_RAW:
            fake_write_len(f, s->data, s->len);
            break;
        case STEP_REPEAT:
            fake_write_len(f, s->data, s->len);
            fake_start_timer(f, s);
            return;
        case STEP_HUGE:
            fake_write(f, s->data);
            f->huge_left = s->size;
            f->huge_tail = g_strdup(s->tail);
            fake_flush(f);
            break;
        case STEP_DRIP:
            f->drip_pos = s->data;
            fake_start_timer(f, s);
            return;
        case STEP_WRONGLY:
            f->mode = FAKE_ANSWER_WRONGLY;
            break;
        case STEP_IGNORE_ALL:
            f->mode = FAKE_ANSWER_NEVER;
            break;
        case STEP_CLOSE:
            fake_flush(f);
            fake_close_fd(f);
            f->closed = TRUE;
            return;
        default:
            g_assert_not_reached();
        }
    }
}

static gboolean
fake_on_message(const char *text, gsize len, gpointer data, GError **error)
{
    QmpFakeQemu *f = data;
    g_autoptr(QmpMessage) m = NULL;
    g_autoptr(GError) err = NULL;
    Step *s;

    g_atomic_int_inc(&f->received);
    m = qmp_message_parse(text, len, FAKE_IN_DEPTH, &err);
    if (!m || m->kind != QMP_MESSAGE_COMMAND) {
        fake_fail(f, "client sent something that is not a command: %s", text);
        return TRUE;
    }
    if (!m->id)
        fake_fail(f, "command %s has no id", m->name);
    s = fake_head(f);
    if (s && (s->kind == STEP_EXPECT || s->kind == STEP_SILENCE)) {
        f->pos++;
        if (!g_str_equal(s->command, m->name))
            fake_fail(f, "expected %s, got %s", s->command, text);
        else if (s->args_json && !fake_args_match(m->body, s->args_json))
            fake_fail(f, "%s: expected arguments %s, got %s", s->command, s->args_json, text);
        else if (s->kind == STEP_EXPECT)
            fake_reply(f, m, s->data, s->unchecked);
        fake_run(f);
        return TRUE;
    }
    fake_answer_unscripted(f, m, text);
    return TRUE;
}

static gboolean
fake_on_readable(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeQemu *f = data;
    char buf[4096];
    g_autoptr(GError) err = NULL;
    ssize_t n;

    g_rec_mutex_lock(&f->lock);
    n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        g_rec_mutex_unlock(&f->lock);
        return G_SOURCE_CONTINUE;
    }
    if (n > 0 && qmp_stream_feed(f->stream, buf, n, &err)) {
        g_rec_mutex_unlock(&f->lock);
        return G_SOURCE_CONTINUE;
    }
    if (n > 0)
        fake_fail(f, "client framing: %s", err->message);
    /* The source is destroyed here; returning REMOVE as well is harmless. */
    fake_close_fd(f);
    g_rec_mutex_unlock(&f->lock);
    return G_SOURCE_REMOVE;
}

/* A client starts: a fresh splitter, and the script from the top when
 * replaying. */
static void
fake_connected(QmpFakeQemu *f, int fd)
{
    f->fd = fd;
    g_atomic_int_inc(&f->connections);
    f->closed = FALSE;
    f->mode = FAKE_ANSWER_SCRIPT;
    g_clear_pointer(&f->stream, qmp_stream_free);
    f->stream = qmp_stream_new(FAKE_IN_MAX, FAKE_IN_DEPTH, fake_on_message, f);
    if (f->replay)
        f->pos = 0;
    f->in_src = fake_watch(f, fd, G_IO_IN | G_IO_HUP, fake_on_readable);
    fake_flush(f);
    fake_run(f);
}

static gboolean
fake_on_connect(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeQemu *f = data;
    int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    if (conn < 0)
        return G_SOURCE_CONTINUE;
    g_rec_mutex_lock(&f->lock);
    fake_source_clear(&f->listen_src);
    fake_connected(f, conn);
    g_rec_mutex_unlock(&f->lock);
    return G_SOURCE_REMOVE;
}

static QmpFakeQemu *
fake_alloc(void)
{
    QmpFakeQemu *f = g_new0(QmpFakeQemu, 1);

    g_rec_mutex_init(&f->lock);
    f->ctx = g_main_context_ref_thread_default();
    f->fd = -1;
    f->listen_fd = -1;
    f->script = g_ptr_array_new_with_free_func((GDestroyNotify)fake_step_free);
    f->standing = g_ptr_array_new_with_free_func((GDestroyNotify)fake_step_free);
    f->iothreads = g_array_new(FALSE, TRUE, sizeof(FakeIothread));
    f->writes = g_ptr_array_new_with_free_func(g_free);
    f->out = g_string_new(NULL);
    f->failures = g_string_new(NULL);
    qmp_fake_qemu_set_version(f, 7, 2, 0);
    return f;
}

QmpFakeQemu *
qmp_fake_qemu_new_fd(int fd)
{
    QmpFakeQemu *f = fake_alloc();

    fake_connected(f, fd);
    return f;
}

QmpFakeQemu *
qmp_fake_qemu_new(int *client_fd)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    *client_fd = sv[1];
    return qmp_fake_qemu_new_fd(sv[0]);
}

QmpFakeQemu *
qmp_fake_qemu_new_listen(const char *path)
{
    QmpFakeQemu *f = fake_alloc();
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    g_unlink(path);
    f->listen_path = g_strdup(path);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(f->listen_fd, >=, 0);
    g_assert_cmpint(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    f->listener = pt_test_listener_new(f->listen_fd, 8);
    f->listen_src = fake_watch(f, f->listen_fd, G_IO_IN, fake_on_connect);
    return f;
}

static gpointer
fake_thread(gpointer data)
{
    QmpFakeQemu *f = data;

    g_main_context_push_thread_default(f->ctx);
    while (!g_atomic_int_get(&f->stop))
        g_main_context_iteration(f->ctx, TRUE);
    g_main_context_pop_thread_default(f->ctx);
    return NULL;
}

void
qmp_fake_qemu_start_thread(QmpFakeQemu *f)
{
    g_assert_null(f->thread);
    /* Move the watches to a context of the thread's own; a drip or a
     * repetition under way would be lost, so none may be. */
    g_assert_null(f->timed);
    g_rec_mutex_lock(&f->lock);
    fake_source_clear(&f->in_src);
    fake_source_clear(&f->out_src);
    fake_source_clear(&f->listen_src);
    g_main_context_unref(f->ctx);
    f->ctx = g_main_context_new();
    if (f->fd >= 0) {
        f->in_src = fake_watch(f, f->fd, G_IO_IN | G_IO_HUP, fake_on_readable);
        fake_flush(f);
    } else if (f->listen_fd >= 0) {
        f->listen_src = fake_watch(f, f->listen_fd, G_IO_IN, fake_on_connect);
    }
    g_rec_mutex_unlock(&f->lock);
    f->thread = g_thread_new("fake-qemu", fake_thread, f);
}

void
qmp_fake_qemu_free(QmpFakeQemu *f)
{
    if (!f)
        return;
    if (f->thread) {
        g_atomic_int_set(&f->stop, 1);
        g_main_context_wakeup(f->ctx);
        g_thread_join(f->thread);
    }
    f->listen_fd = f->listen_fd >= 0 ? (close(f->listen_fd), -1) : -1;
    g_clear_pointer(&f->listener, pt_test_listener_free);
    fake_close_fd(f);
    fake_source_clear(&f->listen_src);
    if (f->listen_path)
        g_unlink(f->listen_path);
    g_free(f->listen_path);
    g_ptr_array_unref(f->script);
    g_ptr_array_unref(f->standing);
    for (guint i = 0; i < f->iothreads->len; i++)
        g_free(g_array_index(f->iothreads, FakeIothread, i).id);
    g_array_unref(f->iothreads);
    g_ptr_array_unref(f->writes);
    g_free(f->refusal);
    g_clear_pointer(&f->stream, qmp_stream_free);
    g_string_free(f->out, TRUE);
    g_string_free(f->failures, TRUE);
    g_main_context_unref(f->ctx);
    g_rec_mutex_clear(&f->lock);
    g_free(f);
}

void
qmp_fake_qemu_set_version(QmpFakeQemu *f, int major, int minor, int micro)
{
    f->major = major;
    f->minor = minor;
    f->micro = micro;
    f->schema = qmp_schema_for_version(major, minor);
}

void
qmp_fake_qemu_set_replay(QmpFakeQemu *f, gboolean replay)
{
    f->replay = replay;
}

void
fake_push(QmpFakeQemu *f, Step *s)
{
    g_assert_null(f->thread);
    g_rec_mutex_lock(&f->lock);
    g_ptr_array_add(f->script, s);
    fake_run(f);
    g_rec_mutex_unlock(&f->lock);
}

guint
qmp_fake_qemu_n_received(QmpFakeQemu *f)
{
    return g_atomic_int_get(&f->received);
}

guint
qmp_fake_qemu_n_connections(QmpFakeQemu *f)
{
    return g_atomic_int_get(&f->connections);
}

guint64
qmp_fake_qemu_bytes_sent(QmpFakeQemu *f)
{
    guint64 n;

    g_rec_mutex_lock(&f->lock);
    n = f->sent;
    g_rec_mutex_unlock(&f->lock);
    return n;
}

gboolean
qmp_fake_qemu_done(QmpFakeQemu *f)
{
    gboolean done;

    g_rec_mutex_lock(&f->lock);
    done = f->pos == f->script->len && !fake_writing(f) &&
           (!f->timed || f->timed->kind == STEP_REPEAT);
    g_rec_mutex_unlock(&f->lock);
    return done;
}

gboolean
qmp_fake_qemu_finish(QmpFakeQemu *f, GError **error)
{
    g_autofree char *failures = NULL;

    g_rec_mutex_lock(&f->lock);
    failures = g_strdup(f->failures->str);
    g_rec_mutex_unlock(&f->lock);
    if (*failures) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", failures);
        return FALSE;
    }
    if (!qmp_fake_qemu_done(f)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%u script steps never ran",
                    f->script->len - f->pos);
        return FALSE;
    }
    return TRUE;
}
