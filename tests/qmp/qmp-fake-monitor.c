/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-fake-monitor.h"
#include "pt-test-child.h"
#include "qmp-json.h"
#include "qmp-stream.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib-unix.h>

typedef enum {
    STEP_SEND,
    STEP_HUGE,
    STEP_DRIP,
    STEP_EXPECT,
    STEP_SILENCE,
    STEP_CLOSE,
} StepKind;

typedef struct {
    StepKind kind;
    char *command;
    char *args_json;
    char *data;             /* reply or bytes */
    gsize size;             /* huge */
    guint interval_ms;      /* drip */
} Step;

struct QmpFakeMonitor {
    int fd;
    int listen_fd;
    PtTestListener *listener;       /* the process a client's SO_PEERCRED names */
    guint listen_watch;
    QmpFakeResponder responder;
    gpointer responder_data;
    guint in_watch;
    guint out_watch;
    guint drip_timer;
    GQueue steps;
    QmpStream *stream;
    GString *out;
    gsize out_pos;
    gsize huge_left;        /* bytes of a huge message still to generate */
    const char *drip_pos;
    Step *drip_step;
    guint received;
    GString *failures;
};

static void fake_run(QmpFakeMonitor *f);

static void
step_free(Step *s)
{
    g_free(s->command);
    g_free(s->args_json);
    g_free(s->data);
    g_free(s);
}

static void
fake_fail(QmpFakeMonitor *f, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static void
fake_fail(QmpFakeMonitor *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_string_append_vprintf(f->failures, fmt, ap);
    va_end(ap);
    g_string_append_c(f->failures, '\n');
}

static void
fake_close_fd(QmpFakeMonitor *f)
{
    g_clear_handle_id(&f->in_watch, g_source_remove);
    g_clear_handle_id(&f->out_watch, g_source_remove);
    g_clear_handle_id(&f->drip_timer, g_source_remove);
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    f->huge_left = 0;
}

static gboolean fake_on_writable(int fd, GIOCondition cond, gpointer data);

/* Write what is buffered (and generate huge data) until the socket fills. */
static void
fake_flush(QmpFakeMonitor *f)
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
        } else {
            break;
        }
        n = send(f->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (!f->out_watch)
                f->out_watch = g_unix_fd_add(f->fd, G_IO_OUT, fake_on_writable, f);
            return;
        }
        if (n < 0) {
            /* The client hung up on us: expected when we misbehave. */
            fake_close_fd(f);
            return;
        }
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
fake_on_writable(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeMonitor *f = data;

    f->out_watch = 0;
    fake_flush(f);
    if (!f->huge_left && f->out->len == 0)
        fake_run(f);
    return G_SOURCE_REMOVE;
}

static void
fake_write(QmpFakeMonitor *f, const char *bytes)
{
    g_string_append(f->out, bytes);
    fake_flush(f);
}

static gboolean
fake_drip_tick(gpointer data)
{
    QmpFakeMonitor *f = data;
    char one[2] = { *f->drip_pos, 0 };

    fake_write(f, one);
    if (*++f->drip_pos && f->fd >= 0)
        return G_SOURCE_CONTINUE;
    f->drip_timer = 0;
    step_free(f->drip_step);
    f->drip_step = NULL;
    fake_run(f);
    return G_SOURCE_REMOVE;
}

/* Run send steps at the head until an expect step (or a pending write). */
static void
fake_run(QmpFakeMonitor *f)
{
    Step *s;

    while (!f->huge_left && !f->drip_step && (s = g_queue_peek_head(&f->steps))) {
        if (s->kind == STEP_EXPECT || s->kind == STEP_SILENCE)
            return;
        g_queue_pop_head(&f->steps);
        switch (s->kind) {
        case STEP_SEND:
            fake_write(f, s->data);
            break;
        case STEP_HUGE:
            fake_write(f, "{\"return\": \"");
            f->huge_left = s->size;
            fake_flush(f);
            break;
        case STEP_DRIP:
            f->drip_step = s;
            f->drip_pos = s->data;
            f->drip_timer = g_timeout_add(s->interval_ms, fake_drip_tick, f);
            return;
        case STEP_CLOSE:
            fake_flush(f);
            fake_close_fd(f);
            break;
        default:
            break;
        }
        step_free(s);
    }
}

static gboolean
fake_args_match(json_object *got, const char *want_json)
{
    g_autoptr(json_object) want = json_tokener_parse(want_json);

    return want && got && json_object_equal(got, want);
}

/* Canned replies may nest as deep as a real QEMU's (a long backing chain
 * in query-blockstats), past json_tokener_parse()'s default of 32 levels. */
static json_object *
fake_json_parse_deep(const char *text)
{
    json_tokener *tok = json_tokener_new_ex(4096);
    json_object *obj = json_tokener_parse_ex(tok, text, -1);

    if (json_tokener_get_error(tok) != json_tokener_success)
        g_clear_pointer(&obj, json_object_put);
    json_tokener_free(tok);
    return obj;
}

static gboolean
fake_on_message(const char *text, gsize len, gpointer data, GError **error)
{
    QmpFakeMonitor *f = data;
    g_autoptr(QmpMessage) m = NULL;
    g_autoptr(GError) err = NULL;
    Step *s;

    f->received++;
    m = qmp_message_parse(text, len, 64, &err);
    if (!m || m->kind != QMP_MESSAGE_COMMAND) {
        fake_fail(f, "client sent something that is not a command: %s", text);
        return TRUE;
    }
    if (!m->id)
        fake_fail(f, "command %s has no id", m->name);
    s = g_queue_peek_head(&f->steps);
    if (!s && f->responder) {
        g_autofree char *answer = f->responder(m->name, m->body, f->responder_data);
        g_autoptr(json_object) reply = answer ? fake_json_parse_deep(answer) : NULL;
        g_autofree char *wire = NULL;

        if (!reply) {
            fake_fail(f, "the responder has no answer to: %s", text);
            return TRUE;
        }
        if (m->id)
            json_object_object_add(reply, "id", json_object_get(m->id));
        wire = g_strconcat(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN),
                           "\r\n", NULL);
        fake_write(f, wire);
        return TRUE;
    }
    if (!s || (s->kind != STEP_EXPECT && s->kind != STEP_SILENCE)) {
        fake_fail(f, "unexpected command: %s", text);
        return TRUE;
    }
    g_queue_pop_head(&f->steps);
    if (!g_str_equal(s->command, m->name)) {
        fake_fail(f, "expected %s, got %s", s->command, text);
    } else if (s->args_json && !fake_args_match(m->body, s->args_json)) {
        fake_fail(f, "%s: expected arguments %s, got %s", s->command,
                  s->args_json, text);
    } else if (s->kind == STEP_EXPECT) {
        g_autoptr(json_object) reply = fake_json_parse_deep(s->data);
        g_autofree char *wire = NULL;

        g_assert_nonnull(reply);
        if (m->id)
            json_object_object_add(reply, "id", json_object_get(m->id));
        wire = g_strconcat(json_object_to_json_string_ext(reply, JSON_C_TO_STRING_PLAIN),
                           "\r\n", NULL);
        fake_write(f, wire);
    }
    step_free(s);
    fake_run(f);
    return TRUE;
}

static gboolean
fake_on_readable(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeMonitor *f = data;
    char buf[4096];
    g_autoptr(GError) err = NULL;
    ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return G_SOURCE_CONTINUE;
    if (n <= 0) {
        f->in_watch = 0;
        fake_close_fd(f);
        return G_SOURCE_REMOVE;
    }
    if (!qmp_stream_feed(f->stream, buf, n, &err)) {
        fake_fail(f, "client framing: %s", err->message);
        f->in_watch = 0;
        fake_close_fd(f);
        return G_SOURCE_REMOVE;
    }
    return G_SOURCE_CONTINUE;
}

static QmpFakeMonitor *
fake_alloc(int fd)
{
    QmpFakeMonitor *f = g_new0(QmpFakeMonitor, 1);

    f->fd = fd;
    f->listen_fd = -1;
    g_queue_init(&f->steps);
    f->out = g_string_new(NULL);
    f->failures = g_string_new(NULL);
    f->stream = qmp_stream_new(1024 * 1024, 64, fake_on_message, f);
    if (fd >= 0)
        f->in_watch = g_unix_fd_add(f->fd, G_IO_IN | G_IO_HUP, fake_on_readable, f);
    return f;
}

QmpFakeMonitor *
qmp_fake_monitor_new_fd(int fd)
{
    return fake_alloc(fd);
}

QmpFakeMonitor *
qmp_fake_monitor_new(int *client_fd)
{
    int sv[2];

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), ==, 0);
    *client_fd = sv[1];
    return fake_alloc(sv[0]);
}

static gboolean
fake_on_connect(int fd, GIOCondition cond, gpointer data)
{
    QmpFakeMonitor *f = data;
    int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);

    if (conn < 0)
        return G_SOURCE_CONTINUE;
    f->listen_watch = 0;
    f->fd = conn;
    f->in_watch = g_unix_fd_add(f->fd, G_IO_IN | G_IO_HUP, fake_on_readable, f);
    fake_flush(f);
    fake_run(f);
    return G_SOURCE_REMOVE;
}

QmpFakeMonitor *
qmp_fake_monitor_new_listen(const char *path)
{
    QmpFakeMonitor *f = fake_alloc(-1);
    struct sockaddr_un sa = { .sun_family = AF_UNIX };

    g_assert_cmpuint(strlen(path), <, sizeof(sa.sun_path));
    strcpy(sa.sun_path, path);
    f->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(f->listen_fd, >=, 0);
    g_assert_cmpint(bind(f->listen_fd, (struct sockaddr *)&sa, sizeof(sa)), ==, 0);
    f->listener = pt_test_listener_new(f->listen_fd, 1);
    f->listen_watch = g_unix_fd_add(f->listen_fd, G_IO_IN, fake_on_connect, f);
    return f;
}

void
qmp_fake_monitor_set_responder(QmpFakeMonitor *f, QmpFakeResponder fn, gpointer user_data)
{
    f->responder = fn;
    f->responder_data = user_data;
}

void
qmp_fake_monitor_free(QmpFakeMonitor *f)
{
    if (!f)
        return;
    fake_close_fd(f);
    g_clear_handle_id(&f->listen_watch, g_source_remove);
    if (f->listen_fd >= 0)
        close(f->listen_fd);
    pt_test_listener_free(f->listener);
    g_queue_clear_full(&f->steps, (GDestroyNotify)step_free);
    if (f->drip_step)
        step_free(f->drip_step);
    qmp_stream_free(f->stream);
    g_string_free(f->out, TRUE);
    g_string_free(f->failures, TRUE);
    g_free(f);
}

static void
fake_push(QmpFakeMonitor *f, Step *s)
{
    g_queue_push_tail(&f->steps, s);
    fake_run(f);
}

void
qmp_fake_send(QmpFakeMonitor *f, const char *bytes)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_SEND;
    s->data = g_strdup(bytes);
    fake_push(f, s);
}

void
qmp_fake_send_huge(QmpFakeMonitor *f, gsize size)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_HUGE;
    s->size = size;
    fake_push(f, s);
}

void
qmp_fake_drip(QmpFakeMonitor *f, const char *bytes, guint interval_ms)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_DRIP;
    s->data = g_strdup(bytes);
    s->interval_ms = interval_ms;
    fake_push(f, s);
}

void
qmp_fake_expect(QmpFakeMonitor *f, const char *command, const char *args_json,
                const char *reply)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_EXPECT;
    s->command = g_strdup(command);
    s->args_json = g_strdup(args_json);
    s->data = g_strdup(reply);
    fake_push(f, s);
}

void
qmp_fake_expect_silence(QmpFakeMonitor *f, const char *command)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_SILENCE;
    s->command = g_strdup(command);
    fake_push(f, s);
}

void
qmp_fake_close(QmpFakeMonitor *f)
{
    Step *s = g_new0(Step, 1);

    s->kind = STEP_CLOSE;
    fake_push(f, s);
}

void
qmp_fake_handshake_version(QmpFakeMonitor *f, int major, int minor, int micro)
{
    g_autofree char *greeting = g_strdup_printf(
        "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": %d, \"minor\": %d, "
        "\"major\": %d}, \"package\": \"fake\"}, \"capabilities\": [\"oob\"]}}\r\n",
        micro, minor, major);

    qmp_fake_send(f, greeting);
    qmp_fake_expect(f, "qmp_capabilities", NULL, "{\"return\": {}}");
}

void
qmp_fake_handshake(QmpFakeMonitor *f)
{
    qmp_fake_handshake_version(f, 7, 2, 0);
}

guint
qmp_fake_monitor_n_received(QmpFakeMonitor *f)
{
    return f->received;
}

gboolean
qmp_fake_monitor_done(QmpFakeMonitor *f)
{
    return g_queue_is_empty(&f->steps) && !f->huge_left && !f->drip_step;
}

gboolean
qmp_fake_monitor_finish(QmpFakeMonitor *f, GError **error)
{
    if (f->failures->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s", f->failures->str);
        return FALSE;
    }
    if (!qmp_fake_monitor_done(f)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "%u script steps never ran", g_queue_get_length(&f->steps));
        return FALSE;
    }
    return TRUE;
}
