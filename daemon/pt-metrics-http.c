/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metrics endpoint's HTTP: GET (or HEAD) /metrics, one request per
 * connection, answered and closed.
 *
 * A scraper sends a request head and no body, so the server reads a head
 * of at most PT_METRICS_HEAD_MAX bytes and never a byte after it.  The
 * HTTP library this replaced read a whole request body into memory before
 * its handler could answer 405: four local POSTs with a Content-Length of
 * 1 GiB took the daemon from 18 MB to 745 MB and stalled ticks for seconds.
 * Here a request with a body, another method, a head past the cap or one
 * that does not parse is answered at once (413, 405, 431, 400) and the
 * connection shut for writing; what the client still sends stays in the
 * kernel's receive buffer, unread, until it hangs up or its time is up.
 *
 * Connection states: reading the head (an input watch), writing the answer
 * (an output watch, as the socket drains), then shut for writing and
 * waiting for the client to hang up (a hang-up watch).  Each connection
 * is closed when the client hangs up, on an error, or @idle_ms after it
 * was accepted, whichever comes first; at most @max_conns are open, and a
 * new one beyond that closes the one open longest, so a scraper is still
 * answered while idle clients hold every slot (its connection is the
 * newest, and its request is answered before it could be the oldest).
 * Nothing here blocks: every read and write is non-blocking on the main
 * loop.
 */
#include "pt-conf.h"
#include "pt-fd-send.h"
#include "pt-metrics.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <gio/gio.h>
#include <glib-unix.h>

/*
 * The largest request head read.  Prometheus's scrape request is about
 * 400 bytes: the request line, Host, User-Agent, an Accept of about 250
 * bytes listing the formats it takes, Accept-Encoding and
 * X-Prometheus-Scrape-Timeout-Seconds.  Credentials add the most a
 * legitimate scraper sends: a Kubernetes service-account token as a
 * bearer token is about 1 KB, other OIDC tokens a few KB.  8 KiB holds
 * all of it twice, and is the limit of common servers for one header line
 * (Apache's LimitRequestFieldSize is 8190, nginx's large header buffers
 * 8 KiB).  At the default 16 connections the heads cost 128 KiB at most.
 */
#define PT_METRICS_HEAD_MAX (8 * 1024)
/* Connections waiting in the kernel to be accepted: they cost no
 * descriptor.  GLib's default of 10 is overrun by a burst (every client a
 * dropped SYN, retried only after a second); the daemon accepts within one
 * main-loop iteration, so 128 absorbs any burst of legitimate scrapers. */
#define PT_METRICS_BACKLOG 128
/* How often open connections are checked against the idle timeout; the
 * timeout is then honoured to within this. */
#define PT_METRICS_SWEEP_MS 1000

typedef struct PtMetricsConn PtMetricsConn;

struct PtMetricsServer {
    PtDaemon *d;
    GSocketService *service;
    GQueue conns;               /* PtMetricsConn, oldest first */
    guint max_conns;
    gint64 idle_us;
    guint sweep_id;
};

struct PtMetricsConn {
    PtMetricsServer *m;
    GList *link;                /* in m->conns */
    GSocketConnection *conn;    /* owns the descriptor */
    int fd;
    gint64 opened_us;
    guint watch;                /* the one watch of the current state */
    char head[PT_METRICS_HEAD_MAX];
    gsize head_len;
    GString *out;               /* the answer */
    gsize out_pos;
};

static void
pt_metrics_conn_close(PtMetricsConn *c)
{
    PtMetricsServer *m = c->m;

    g_clear_handle_id(&c->watch, g_source_remove);
    g_queue_delete_link(&m->conns, c->link);
    g_io_stream_close(G_IO_STREAM(c->conn), NULL, NULL);
    g_object_unref(c->conn);
    if (c->out)
        g_string_free(c->out, TRUE);
    g_free(c);
}

/* ---- the request head -------------------------------------------------- */

/* The end of the head (after its blank line) in @buf, or 0. */
static gsize
pt_http_head_end(const char *buf, gsize len)
{
    for (gsize i = 0; i < len; i++) {
        if (buf[i] != '\n')
            continue;
        /* "\n\n" and "\r\n\r\n" both end it (RFC 9112 allows a bare LF). */
        if (i + 1 < len && buf[i + 1] == '\n')
            return i + 2;
        if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

guint
pt_http_head_parse(const char *head, gsize len, gboolean *openmetrics, gboolean *head_only)
{
    g_autofree char *text = g_strndup(head, len);
    g_auto(GStrv) lines = NULL;
    g_auto(GStrv) words = NULL;
    gboolean body = FALSE;
    const char *method;
    gsize path_len;

    *openmetrics = FALSE;
    *head_only = FALSE;
    /* A NUL in the head is no HTTP. */
    if (strlen(text) != len)
        return 400;
    g_strdelimit(text, "\r", '\n');
    lines = g_strsplit(text, "\n", -1);
    words = g_strsplit(lines[0], " ", -1);
    if (g_strv_length(words) != 3 || !*words[0] || words[1][0] != '/' ||
        !g_str_has_prefix(words[2], "HTTP/1."))
        return 400;
    for (guint i = 1; lines[i]; i++) {
        char *colon;
        g_autofree char *name = NULL;
        const char *value;

        if (!*lines[i])
            continue;
        /* Obsolete line folding and lines without a name are refused. */
        colon = strchr(lines[i], ':');
        if (lines[i][0] == ' ' || lines[i][0] == '\t' || !colon || colon == lines[i])
            return 400;
        name = g_ascii_strdown(lines[i], colon - lines[i]);
        value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        if (g_str_equal(name, "transfer-encoding"))
            body = TRUE;
        else if (g_str_equal(name, "content-length") && g_strcmp0(g_strchomp((char *)value), "0"))
            body = TRUE;
        else if (g_str_equal(name, "accept") &&
                 strstr(value, "application/openmetrics-text"))
            *openmetrics = TRUE;
    }
    method = words[0];
    if (!g_str_equal(method, "GET") && !g_str_equal(method, "HEAD"))
        return 405;
    /* Nothing is read after the head: a body is more than this server
     * takes (its limit is 0 bytes). */
    if (body)
        return 413;
    path_len = strcspn(words[1], "?#");
    if (path_len != strlen("/metrics") || strncmp(words[1], "/metrics", path_len) != 0)
        return 404;
    *head_only = g_str_equal(method, "HEAD");
    return 200;
}

/* ---- the answer -------------------------------------------------------- */

static gboolean pt_metrics_on_writable(int fd, GIOCondition cond, gpointer data);

static gboolean
pt_metrics_on_hangup(int fd, GIOCondition cond, gpointer data)
{
    PtMetricsConn *c = data;

    c->watch = 0;
    pt_metrics_conn_close(c);
    return G_SOURCE_REMOVE;
}

/* Write what the socket takes; once all is out, shut the connection for
 * writing and wait for the client to hang up. */
static void
pt_metrics_flush(PtMetricsConn *c)
{
    switch (pt_fd_send_pending(c->fd, c->out->str, c->out->len, &c->out_pos)) {
    case PT_FD_SEND_AGAIN:
        c->watch = g_unix_fd_add(c->fd, G_IO_OUT, pt_metrics_on_writable, c);
        return;
    case PT_FD_SEND_FAILED:
        pt_metrics_conn_close(c);
        return;
    case PT_FD_SEND_DONE:
        break;
    }
    /* The answer is followed by our FIN.  Closing now would reset the
     * connection if the client still sends (its unread body), and a reset
     * may cost it the answer; so the descriptor stays until it hangs up
     * (both directions shut: POLLHUP) or the idle timeout. */
    shutdown(c->fd, SHUT_WR);
    c->watch = g_unix_fd_add(c->fd, G_IO_HUP | G_IO_ERR, pt_metrics_on_hangup, c);
}

static gboolean
pt_metrics_on_writable(int fd, GIOCondition cond, gpointer data)
{
    PtMetricsConn *c = data;

    c->watch = 0;
    pt_metrics_flush(c);
    return G_SOURCE_REMOVE;
}

static const char *
pt_http_reason(guint status)
{
    switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Content Too Large";
    case 431: return "Request Header Fields Too Large";
    default: return "Error";
    }
}

static void
pt_metrics_answer(PtMetricsConn *c, guint status, gboolean openmetrics, gboolean head_only)
{
    g_autofree char *body = NULL;
    const char *type;

    if (status == 200) {
        /* Prometheus asks for OpenMetrics; anything else gets the text format. */
        body = pt_daemon_render_metrics(c->m->d, openmetrics);
        type = openmetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
                             "text/plain; version=0.0.4; charset=utf-8";
    } else {
        body = g_strdup_printf("%u %s%s\n", status, pt_http_reason(status),
                               status == 405 ? ": only GET and HEAD are served here" :
                               status == 413 ? ": a request here has no body" : "");
        type = "text/plain; charset=utf-8";
    }
    c->out = g_string_new(NULL);
    g_string_append_printf(c->out, "HTTP/1.1 %u %s\r\nServer: polltuned\r\n"
                           "Content-Type: %s\r\nContent-Length: %zu\r\n%s"
                           "Connection: close\r\n\r\n", status, pt_http_reason(status), type,
                           strlen(body), status == 405 ? "Allow: GET, HEAD\r\n" : "");
    if (!head_only)
        g_string_append(c->out, body);
    pt_metrics_flush(c);
}

static gboolean
pt_metrics_on_readable(int fd, GIOCondition cond, gpointer data)
{
    PtMetricsConn *c = data;
    gboolean om = FALSE, head_only = FALSE;
    gsize end;
    guint status;
    ssize_t n = recv(fd, c->head + c->head_len, sizeof(c->head) - c->head_len, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return G_SOURCE_CONTINUE;
    c->watch = 0;
    if (n <= 0) {
        pt_metrics_conn_close(c);
        return G_SOURCE_REMOVE;
    }
    /* Only the new bytes can hold the end; look from a little before. */
    {
        gsize from = c->head_len > 3 ? c->head_len - 3 : 0;

        c->head_len += n;
        end = pt_http_head_end(c->head + from, c->head_len - from);
        if (end)
            end += from;
    }
    if (!end && c->head_len < sizeof(c->head)) {
        c->watch = g_unix_fd_add(fd, G_IO_IN, pt_metrics_on_readable, c);
        return G_SOURCE_REMOVE;
    }
    /* What followed the head in this read (the start of a body) is never
     * looked at. */
    status = end ? pt_http_head_parse(c->head, end, &om, &head_only) : 431;
    pt_metrics_answer(c, status, om, head_only);
    return G_SOURCE_REMOVE;
}

/* ---- connections ------------------------------------------------------- */

/* Close those open longer than the idle timeout. */
static void
pt_metrics_sweep(PtMetricsServer *m, gint64 now_us)
{
    while (m->conns.head) {
        PtMetricsConn *c = m->conns.head->data;

        if (now_us - c->opened_us < m->idle_us)
            break;
        pt_metrics_conn_close(c);
    }
}

static gboolean
pt_metrics_on_sweep(gpointer data)
{
    PtMetricsServer *m = data;

    pt_metrics_sweep(m, g_get_monotonic_time());
    return G_SOURCE_CONTINUE;
}

static gboolean
pt_metrics_on_incoming(GSocketService *service, GSocketConnection *conn,
                       GObject *source, gpointer data)
{
    PtMetricsServer *m = data;
    gint64 now = g_get_monotonic_time();
    PtMetricsConn *c;

    pt_metrics_sweep(m, now);
    if (m->conns.length >= m->max_conns)
        pt_metrics_conn_close(m->conns.head->data);
    c = g_new0(PtMetricsConn, 1);
    c->m = m;
    c->conn = g_object_ref(conn);
    c->fd = g_socket_get_fd(g_socket_connection_get_socket(conn));
    c->opened_us = now;
    g_queue_push_tail(&m->conns, c);
    c->link = m->conns.tail;
    c->watch = g_unix_fd_add(c->fd, G_IO_IN, pt_metrics_on_readable, c);
    return TRUE;
}

guint
pt_metrics_conn_cap(guint configured, guint64 nofile)
{
    /* The metrics listener may hold at most an eighth of the descriptor
     * limit, and the rest stays for what tuning needs: the control socket
     * (its listener and at most a quarter of the limit, pt_control_conn_cap()),
     * the database (main file, WAL, shm, journal), libvirt, logging and
     * GLib's own (about 20), and the targets (a QMP socket each, and perf
     * counters per QEMU thread where perf supplies KVM exits).  At the
     * usual 1024 that is 128, so the configured cap decides; at 256 it is
     * 32, leaving 160 for targets after control and the daemon's own. */
    guint64 share = nofile / 8;

    return (guint)MAX(1, MIN((guint64)configured, share));
}

PtMetricsServer *
pt_metrics_server_new(PtDaemon *d, const char *listen, guint max_conns, guint idle_ms,
                      GError **error)
{
    g_autofree char *host = NULL;
    guint16 port;
    g_autoptr(GInetAddress) addr = NULL;
    g_autoptr(GSocketAddress) sa = NULL;
    g_autoptr(PtMetricsServer) m = NULL;

    /* The configuration has checked it; this is for other callers. */
    if (!pt_parse_listen(listen, &host, &port, error)) {
        g_prefix_error(error, "metrics-listen: ");
        return NULL;
    }
    addr = g_inet_address_new_from_string(host);
    sa = g_inet_socket_address_new(addr, port);
    m = g_new0(PtMetricsServer, 1);
    m->d = d;
    g_queue_init(&m->conns);
    m->max_conns = MAX(max_conns, 1);
    m->idle_us = (gint64)MAX(idle_ms, 1) * 1000;
    m->service = g_socket_service_new();
    g_socket_listener_set_backlog(G_SOCKET_LISTENER(m->service), PT_METRICS_BACKLOG);
    if (!g_socket_listener_add_address(G_SOCKET_LISTENER(m->service), sa,
                                       G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP,
                                       NULL, NULL, error)) {
        g_prefix_error(error, "metrics-listen %s: ", listen);
        return NULL;
    }
    g_signal_connect(m->service, "incoming", G_CALLBACK(pt_metrics_on_incoming), m);
    m->sweep_id = g_timeout_add(PT_METRICS_SWEEP_MS, pt_metrics_on_sweep, m);
    g_socket_service_start(m->service);
    return g_steal_pointer(&m);
}

void
pt_metrics_server_free(PtMetricsServer *m)
{
    if (!m)
        return;
    g_clear_handle_id(&m->sweep_id, g_source_remove);
    if (m->service) {
        g_socket_service_stop(m->service);
        g_socket_listener_close(G_SOCKET_LISTENER(m->service));
        g_signal_handlers_disconnect_by_data(m->service, m);
        g_clear_object(&m->service);
    }
    while (m->conns.head)
        pt_metrics_conn_close(m->conns.head->data);
    g_free(m);
}
