/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-client: connect, greeting, one request at a time, blocking I/O with
 * poll() bounding every wait.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli-client.h"
#include "qmp-json.h"
#include "qmp-stream.h"

G_DEFINE_QUARK(cli-error-quark, cli_error)

/* Replies can be far larger than requests (show with an hour of history,
 * status with thousands of iothreads); the bound only stops a runaway peer.
 * The daemon never sends a larger one. */
#define CLIENT_MAX_MESSAGE QMP_CONTROL_MAX_REPLY
#define CLIENT_MAX_DEPTH 64
#define CLIENT_READ_CHUNK (64 * 1024)
/* 20 pauses of 100 ms: two seconds of the daemon's rate window. */
#define CLIENT_BUSY_RETRIES 20
#define CLIENT_BUSY_PAUSE_US (100 * 1000)

struct CliClient {
    char *path;
    int fd;
    guint timeout_ms;
    QmpStream *stream;
    GQueue messages;            /* QmpMessage, parsed but not yet handled */
    GError *parse_error;
    gint64 next_id;
    char *error_class;
};

static gboolean
client_on_message(const char *msg, gsize len, gpointer user_data, GError **error)
{
    CliClient *c = user_data;
    QmpMessage *m = qmp_message_parse(msg, len, CLIENT_MAX_DEPTH, error);

    if (!m)
        return FALSE;
    g_queue_push_tail(&c->messages, m);
    return TRUE;
}

void
cli_client_free(CliClient *c)
{
    if (!c)
        return;
    if (c->fd >= 0)
        close(c->fd);
    g_queue_clear_full(&c->messages, (GDestroyNotify)qmp_message_free);
    g_clear_pointer(&c->stream, qmp_stream_free);
    g_clear_error(&c->parse_error);
    g_free(c->path);
    g_free(c->error_class);
    g_free(c);
}

static const char *
connect_hint(int err)
{
    switch (err) {
    case ENOENT:
    case ECONNREFUSED:
        return " (is polltuned running?)";
    case EACCES:
    case EPERM:
        return " (are you root or in polltuned's control group?)";
    default:
        return "";
    }
}

static gboolean
client_wait(CliClient *c, short events, const char *what, GError **error)
{
    struct pollfd p = { .fd = c->fd, .events = events };
    int rc;

    do
        rc = poll(&p, 1, (int)c->timeout_ms);
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;

        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: poll: %s", c->path, g_strerror(e));
        return FALSE;
    }
    if (rc == 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_TIMEOUT, "%s: no %s from polltuned within %u ms",
                    c->path, what, c->timeout_ms);
        return FALSE;
    }
    return TRUE;
}

/* Reads once and feeds the splitter; parsed messages land in c->messages. */
static gboolean
client_read(CliClient *c, const char *what, GError **error)
{
    char buf[CLIENT_READ_CHUNK];
    g_autoptr(GError) local = NULL;
    ssize_t n;

    if (!client_wait(c, POLLIN, what, error))
        return FALSE;
    do
        n = recv(c->fd, buf, sizeof(buf), 0);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        int e = errno;

        g_set_error(error, CLI_ERROR, CLI_ERROR_CLOSED, "%s: reading the %s: %s", c->path, what,
                    g_strerror(e));
        return FALSE;
    }
    if (n == 0) {
        if (qmp_stream_pending(c->stream) > 0)
            g_set_error(error, CLI_ERROR, CLI_ERROR_CLOSED,
                        "%s: polltuned closed the connection in the middle of the %s "
                        "(%zu bytes of a truncated message)", c->path, what,
                        qmp_stream_pending(c->stream));
        else
            g_set_error(error, CLI_ERROR, CLI_ERROR_CLOSED,
                        "%s: polltuned closed the connection before the %s", c->path, what);
        return FALSE;
    }
    if (!qmp_stream_feed(c->stream, buf, (gsize)n, &local)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "%s: bad %s: %s", c->path, what,
                    local->message);
        return FALSE;
    }
    return TRUE;
}

static QmpMessage *
client_next_message(CliClient *c, const char *what, GError **error)
{
    while (g_queue_is_empty(&c->messages))
        if (!client_read(c, what, error))
            return NULL;
    return g_queue_pop_head(&c->messages);
}

static gboolean
client_write_all(CliClient *c, const char *data, gsize len, const char *command,
                 GError **error)
{
    while (len > 0) {
        ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN) {
            if (!client_wait(c, POLLOUT, "room to write", error))
                return FALSE;
            continue;
        }
        if (n < 0) {
            int e = errno;

            g_set_error(error, CLI_ERROR, CLI_ERROR_CLOSED, "%s: sending %s: %s", c->path,
                        command, g_strerror(e));
            return FALSE;
        }
        data += n;
        len -= (gsize)n;
    }
    return TRUE;
}

static gboolean
client_read_greeting(CliClient *c, GError **error)
{
    g_autoptr(QmpMessage) m = client_next_message(c, "greeting", error);
    json_object *version;

    if (!m)
        return FALSE;
    if (m->kind == QMP_MESSAGE_ERROR) {
        /* The daemon refuses extra connections with an error line. */
        g_set_error(error, CLI_ERROR, CLI_ERROR_CONNECT, "%s: polltuned refused the connection: "
                    "%s: %s", c->path, m->name, m->desc);
        return FALSE;
    }
    if (m->kind != QMP_MESSAGE_GREETING) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                    "%s: expected polltuned's greeting, got another message", c->path);
        return FALSE;
    }
    if (!json_object_object_get_ex(m->body, "version", &version) ||
        !json_object_object_get_ex(version, "polltune", NULL)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                    "%s: the greeting is not polltuned's (no version.polltune; "
                    "is this a QEMU monitor?)", c->path);
        return FALSE;
    }
    return TRUE;
}

CliClient *
cli_client_connect(const char *path, guint timeout_ms, GError **error)
{
    g_autoptr(CliClient) c = g_new0(CliClient, 1);
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    int rc;

    c->fd = -1;
    c->path = g_strdup(path);
    c->timeout_ms = timeout_ms;
    c->next_id = 1;
    g_queue_init(&c->messages);
    c->stream = qmp_stream_new(CLIENT_MAX_MESSAGE, CLIENT_MAX_DEPTH, client_on_message, c);
    if (strlen(path) >= sizeof(addr.sun_path)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: socket path longer than %zu bytes",
                    path, sizeof(addr.sun_path) - 1);
        return NULL;
    }
    strcpy(addr.sun_path, path);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        int e = errno;

        g_set_error(error, CLI_ERROR, CLI_ERROR_CONNECT, "%s: socket: %s", path, g_strerror(e));
        return NULL;
    }
    do
        rc = connect(c->fd, (struct sockaddr *)&addr, sizeof(addr));
    while (rc < 0 && errno == EINTR);
    if (rc < 0) {
        int e = errno;

        g_set_error(error, CLI_ERROR, CLI_ERROR_CONNECT, "%s: connect: %s%s", path,
                    g_strerror(e), connect_hint(e));
        return NULL;
    }
    if (!client_read_greeting(c, error))
        return NULL;
    return g_steal_pointer(&c);
}

const char *
cli_client_error_class(CliClient *c)
{
    return c->error_class;
}

static gboolean
id_matches(json_object *id, gint64 want)
{
    return id && json_object_is_type(id, json_type_int) && json_object_get_int64(id) == want;
}

static gboolean
client_handle_event(CliClient *c, QmpMessage *m, const char *command, CliChunkFunc on_chunk,
                    gpointer user_data, GError **error)
{
    json_object *chunk;

    if (g_strcmp0(m->name, "EXPORT_DATA") != 0)
        return TRUE;        /* other events are not ours to handle */
    if (!on_chunk) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                    "%s: %s: unexpected EXPORT_DATA event", c->path, command);
        return FALSE;
    }
    if (!m->body || !json_object_object_get_ex(m->body, "chunk", &chunk) ||
        !json_object_is_type(chunk, json_type_string)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                    "%s: %s: EXPORT_DATA event without a \"chunk\" string", c->path, command);
        return FALSE;
    }
    return on_chunk(json_object_get_string(chunk), (gsize)json_object_get_string_len(chunk),
                    user_data, error);
}

static json_object *
client_call_once(CliClient *c, const char *command, json_object *args, CliChunkFunc on_chunk,
                 gpointer user_data, GError **error)
{
    gint64 id = c->next_id++;
    g_autoptr(json_object) jid = json_object_new_int64(id);
    g_autofree char *line = qmp_message_build_command(command, args, jid);
    g_autofree char *what = g_strdup_printf("reply to %s", command);

    g_clear_pointer(&c->error_class, g_free);
    if (!client_write_all(c, line, strlen(line), command, error))
        return NULL;
    for (;;) {
        g_autoptr(QmpMessage) m = client_next_message(c, what, error);

        if (!m)
            return NULL;
        switch (m->kind) {
        case QMP_MESSAGE_EVENT:
            if (!client_handle_event(c, m, command, on_chunk, user_data, error))
                return NULL;
            continue;
        case QMP_MESSAGE_RETURN:
        case QMP_MESSAGE_ERROR:
            if (!id_matches(m->id, id)) {
                g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                            "%s: %s: the reply carries another request's id", c->path,
                            command);
                return NULL;
            }
            if (m->kind == QMP_MESSAGE_ERROR) {
                c->error_class = g_strdup(m->name);
                g_set_error(error, CLI_ERROR, CLI_ERROR_DAEMON, "%s: %s: %s", command, m->name,
                            m->desc);
                return NULL;
            }
            return m->body ? json_object_get(m->body) : json_object_new_object();
        default:
            g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL,
                        "%s: %s: unexpected message instead of a reply", c->path, command);
            return NULL;
        }
    }
}

json_object *
cli_client_call(CliClient *c, const char *command, json_object *args, CliChunkFunc on_chunk,
                gpointer user_data, GError **error)
{
    /* The daemon answers Busy beyond 50 requests a second on a connection
     * (the report asks once per iothread).  A Busy request was not run, so
     * sending it again is safe, mutating or not. */
    for (guint attempt = 0;; attempt++) {
        g_autoptr(GError) local = NULL;
        json_object *ret = client_call_once(c, command, args, on_chunk, user_data, &local);

        if (ret)
            return ret;
        if (g_strcmp0(c->error_class, "Busy") != 0 || attempt >= CLIENT_BUSY_RETRIES) {
            g_propagate_error(error, g_steal_pointer(&local));
            return NULL;
        }
        g_usleep(CLIENT_BUSY_PAUSE_US);
    }
}
