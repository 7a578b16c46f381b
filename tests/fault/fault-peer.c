/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fault-peer.h"
#include "pt-test-child.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <json-c/json.h>
#include <glib/gstdio.h>

#define FAULT_HUGE_BYTES (100u * 1000 * 1000)

static const char fault_greeting[] =
    "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}, "
    "\"package\": \"\"}, \"capabilities\": [\"oob\"]}}\n";

struct FaultPeer {
    char *path;
    FaultPeerKind kind;
    int listen_fd;
    PtTestListener *listener;       /* the process a client's SO_PEERCRED names */
    GThread *thread;
    gint stop;
    guint connections;
    guint64 sent;
};

static gboolean
peer_stopping(FaultPeer *p)
{
    return g_atomic_int_get(&p->stop) != 0;
}

/* Send all of @buf; FALSE when the daemon hung up or we are stopping. */
static gboolean
peer_send(FaultPeer *p, int fd, const char *buf, size_t len)
{
    while (len > 0 && !peer_stopping(p)) {
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
        ssize_t n;

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0)
            return FALSE;
        p->sent += (guint64)n;
        buf += n;
        len -= (size_t)n;
    }
    return len == 0;
}

/* Wait up to @ms for a line from the daemon; NULL on hang-up or timeout. */
static char *
peer_read_line(FaultPeer *p, int fd, GString *in, int ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    while (!peer_stopping(p) && g_get_monotonic_time() < deadline) {
        char *nl = memchr(in->str, '\n', in->len);
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        char buf[4096];
        ssize_t n;

        if (nl) {
            char *line = g_strndup(in->str, (gsize)(nl - in->str));

            g_string_erase(in, 0, nl - in->str + 1);
            return line;
        }
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = read(fd, buf, sizeof(buf));
        if (n <= 0)
            return NULL;
        g_string_append_len(in, buf, n);
    }
    return NULL;
}

static void
peer_garbage(FaultPeer *p, int fd)
{
    static const char junk[] = "\x01\x02\xff\xfe{\"QMP\": [[[[{{{\n}}}]]\n\"\\u12\n"
                               "{\"return\": tru}\n\x00\x00\n";

    while (peer_send(p, fd, junk, sizeof(junk) - 1))
        g_usleep(50000);
}

static void
peer_huge(FaultPeer *p, int fd)
{
    static char chunk[1 << 20];
    static const char head[] = "{\"QMP\": {\"version\": \"";
    guint64 left = FAULT_HUGE_BYTES - sizeof(head);

    memset(chunk, 'a', sizeof(chunk));
    if (!peer_send(p, fd, head, sizeof(head) - 1))
        return;
    while (left > 0) {
        size_t n = MIN(left, sizeof(chunk));

        if (!peer_send(p, fd, chunk, n))
            return;
        left -= n;
    }
    peer_send(p, fd, "\"}}\n", 4);
}

static void
peer_drip(FaultPeer *p, int fd)
{
    for (const char *c = fault_greeting; *c && !peer_stopping(p); c++) {
        if (!peer_send(p, fd, c, 1))
            return;
        for (int i = 0; i < 10 && !peer_stopping(p); i++)
            g_usleep(100000);
    }
}

/* A greeting and a capabilities reply that are fine, then replies with the
 * right ids whose "return" has a shape no query asked for. */
static void
peer_wrong_shape(FaultPeer *p, int fd)
{
    static const char *const shapes[] = {
        "42", "\"text\"", "null", "{\"unexpected\": [1, 2, 3]}",
        "[{\"id\": 7, \"thread-id\": \"not a number\"}]",
        "[{\"device\": {}, \"stats\": [1]}]", "[[], {}, 1.5e308]",
    };
    g_autoptr(GString) in = g_string_new(NULL);
    guint k = 0;

    if (!peer_send(p, fd, fault_greeting, sizeof(fault_greeting) - 1))
        return;
    for (;;) {
        g_autofree char *line = peer_read_line(p, fd, in, 60000);
        g_autofree char *reply = NULL;
        json_object *req, *id = NULL;
        const char *exec = NULL;
        json_object *e;

        if (!line)
            return;
        req = json_tokener_parse(line);
        if (req && json_object_object_get_ex(req, "execute", &e))
            exec = json_object_get_string(e);
        if (req)
            json_object_object_get_ex(req, "id", &id);
        if (g_strcmp0(exec, "qmp_capabilities") == 0)
            reply = g_strdup_printf("{\"return\": {}%s%s}\n", id ? ", \"id\": " : "",
                                    id ? json_object_to_json_string(id) : "");
        else
            reply = g_strdup_printf("{\"return\": %s%s%s}\n", shapes[k++ % G_N_ELEMENTS(shapes)],
                                    id ? ", \"id\": " : "",
                                    id ? json_object_to_json_string(id) : "");
        json_object_put(req);
        if (!peer_send(p, fd, reply, strlen(reply)))
            return;
    }
}

/* Well-formed JSON without the QMP member, then nothing until hung up. */
static void
peer_bad_greeting(FaultPeer *p, int fd)
{
    static const char hello[] = "{\"hello\": {\"version\": 1}}\n";
    g_autoptr(GString) in = g_string_new(NULL);
    g_autofree char *line = NULL;

    if (peer_send(p, fd, hello, sizeof(hello) - 1))
        line = peer_read_line(p, fd, in, 60000);
}

/* Holds the connection open and reads nothing, until the daemon gives up. */
static void
peer_silence(FaultPeer *p, int fd)
{
    while (!peer_stopping(p)) {
        struct pollfd pfd = { .fd = fd, .events = POLLRDHUP };

        if (poll(&pfd, 1, 100) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
            return;
    }
}

static const char *const fault_peer_kind_names[FAULT_PEER_KIND_MAX] = {
    [FAULT_PEER_GARBAGE] = "garbage",
    [FAULT_PEER_HUGE_LINE] = "huge-line",
    [FAULT_PEER_DRIP] = "drip",
    [FAULT_PEER_WRONG_SHAPE] = "wrong-shape",
    [FAULT_PEER_BAD_GREETING] = "bad-greeting",
    [FAULT_PEER_SILENCE] = "silence",
};

const char *
fault_peer_kind_name(FaultPeerKind kind)
{
    return kind < FAULT_PEER_KIND_MAX ? fault_peer_kind_names[kind] : "invalid";
}

static gpointer
peer_thread(gpointer data)
{
    FaultPeer *p = data;

    while (!peer_stopping(p)) {
        struct pollfd pfd = { .fd = p->listen_fd, .events = POLLIN };
        int fd;

        if (poll(&pfd, 1, 100) <= 0)
            continue;
        fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        g_atomic_int_inc(&p->connections);
        switch (p->kind) {
        case FAULT_PEER_GARBAGE: peer_garbage(p, fd); break;
        case FAULT_PEER_HUGE_LINE: peer_huge(p, fd); break;
        case FAULT_PEER_DRIP: peer_drip(p, fd); break;
        case FAULT_PEER_WRONG_SHAPE: peer_wrong_shape(p, fd); break;
        case FAULT_PEER_BAD_GREETING: peer_bad_greeting(p, fd); break;
        case FAULT_PEER_SILENCE: peer_silence(p, fd); break;
        case FAULT_PEER_KIND_MAX: g_assert_not_reached();
        }
        close(fd);
    }
    return NULL;
}

FaultPeer *
fault_peer_start(const char *path, FaultPeerKind kind)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    FaultPeer *p = g_new0(FaultPeer, 1);

    p->path = g_strdup(path);
    p->kind = kind;
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(p->listen_fd, >=, 0);
    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    g_unlink(path);
    g_assert_cmpint(bind(p->listen_fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    p->listener = pt_test_listener_new(p->listen_fd, 8);
    p->thread = g_thread_new("fault-peer", peer_thread, p);
    return p;
}

guint
fault_peer_connections(FaultPeer *p)
{
    return g_atomic_int_get(&p->connections);
}

guint64
fault_peer_bytes_sent(FaultPeer *p)
{
    return p->sent;
}

void
fault_peer_free(FaultPeer *p)
{
    if (!p)
        return;
    g_atomic_int_set(&p->stop, 1);
    g_thread_join(p->thread);
    close(p->listen_fd);
    pt_test_listener_free(p->listener);
    g_unlink(p->path);
    g_free(p->path);
    g_free(p);
}
