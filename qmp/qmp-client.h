/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-client: an asynchronous QMP client on a GMainContext.
 *
 * Life of a connection:
 *
 *   CONNECTING --greeting--> NEGOTIATING --qmp_capabilities ok--> READY
 *        \                        \                                 \
 *         `------------------------`--- error, EOF, timeout ---------`--> CLOSED
 *
 * Commands may be submitted in any state but CLOSED.  Before READY they wait
 * in a queue and go out once capabilities are negotiated, because QEMU
 * rejects every command before qmp_capabilities.  Every command carries a
 * numeric "id", replies are matched by it, and any number may be in flight.
 *
 * Each command has its own timeout (5 s by default), counted from its
 * turn: from when it was sent, or from the reply before it if that came
 * later, since QEMU answers a monitor's commands in order, one at a time.
 * The greeting and the negotiation share one.  A timeout, EOF, a read error or any input that
 * breaks the protocol (invalid JSON, a non-object, a message over the size
 * or depth limit) closes the client.  Closing completes every pending and
 * queued command with a GError that names the client and the cause, exactly
 * once each, then calls the closed handler once.  A closed client stays
 * valid until its last reference is dropped and fails new commands at once.
 *
 * All callbacks run in the client's GMainContext.  The client is a GObject;
 * it holds no reference to its caller and callers may drop their reference
 * from inside any callback.
 */
#pragma once

#include <gio/gio.h>

#include "qmp-error.h"

struct json_object;

/*
 * Default size limit of one message.  The limit is there to stop a hostile
 * or broken peer, so it is sized from the largest replies a legitimate QEMU
 * sends to what polltune asks:
 *  - query-stats for the vCPUs, asking only the counters we read
 *    (qmp_stats_target_names()): about 200 bytes per vCPU, 210 KB at 1024
 *    vCPUs.  Asked for every KVM statistic it would be about 2.9 KB per vCPU,
 *    3 MB at 1024 vCPUs, 12 MB at 4096 (QEMU 9.0's q35 maximum).
 *  - query-blockstats: a disk on a backing chain reports every image of it,
 *    each a format node with its file node as "parent", about 1.8 KB per
 *    image with QEMU 9.x's members, so a 1000-image chain (see
 *    QMP_DEFAULT_MAX_DEPTH) is 1.85 MB for one disk, and a VM may have
 *    several such disks.
 *  - query-stats-schemas: some 7 KiB, whatever the size of the VM.
 * 16 MiB covers four disks on 1000-image chains plus a margin, or every KVM
 * statistic of a 4096-vCPU VM, while still bounding what one peer can make
 * us buffer.  The limits cases of tests/qmp/test-qmp-client.c check them.
 */
#define QMP_DEFAULT_MAX_MESSAGE (16 * 1024 * 1024)
/*
 * Default nesting limit.  query-blockstats nests one object per backing
 * image ("backing" inside "backing"), and the deepest one holds its stats
 * and their timed_stats list, so a chain of N images nests about N + 6
 * levels.  QEMU sets no limit on the length of a backing chain, and chains
 * of a few hundred images exist where snapshots are taken often and never
 * merged; 1024 takes chains of 1000 images.  Nesting costs the splitter a
 * counter and json-c one small stack entry per level, so the margin is
 * cheap.
 */
#define QMP_DEFAULT_MAX_DEPTH 1024
#define QMP_DEFAULT_TIMEOUT_MS 5000

typedef enum {
    QMP_CLIENT_CONNECTING,
    QMP_CLIENT_NEGOTIATING,
    QMP_CLIENT_READY,
    QMP_CLIENT_CLOSED,
} QmpClientState;

typedef struct {
    gsize max_message_size;     /* 0: QMP_DEFAULT_MAX_MESSAGE */
    guint max_depth;            /* 0: QMP_DEFAULT_MAX_DEPTH */
    guint timeout_ms;           /* 0: QMP_DEFAULT_TIMEOUT_MS */
    const char *name;           /* prefix of error messages; NULL: the path */
} QmpClientOptions;

typedef struct {
    int major, minor, micro;
    char *package;
} QmpVersion;

#define QMP_TYPE_CLIENT (qmp_client_get_type())
G_DECLARE_FINAL_TYPE(QmpClient, qmp_client, QMP, CLIENT, GObject)

typedef void (*QmpEventFunc)(QmpClient *client, const char *event,
                             struct json_object *data, gint64 timestamp_us,
                             gpointer user_data);
typedef void (*QmpClosedFunc)(QmpClient *client, const GError *reason,
                              gpointer user_data);
/* Turn a command's "return" value into the caller's type, or fail. */
typedef gpointer (*QmpDecodeFunc)(struct json_object *ret, GError **error);

/* @context NULL means the thread-default context at the time of the call. */
QmpClient *qmp_client_new(GMainContext *context, const QmpClientOptions *opts);

/* Connect to a unix socket.  Connecting a unix socket does not wait on the
 * peer; the greeting is awaited asynchronously. */
/*
 * Whether @path is a unix socket that something listens on, without
 * speaking to it: a connect that is accepted into the backlog and closed at
 * once, which a QMP monitor sees as a client that left.  Fails with
 * G_IO_ERROR_NOT_FOUND when nothing is at @path, G_IO_ERROR_INVALID_ARGUMENT
 * when it is no socket or nobody listens.
 */
gboolean qmp_socket_check(const char *path, GError **error);

/* On failure errno is connect(2)'s (ECONNREFUSED: nobody listens). */
gboolean qmp_client_connect_path(QmpClient *client, const char *path,
                                 GError **error);
/* Take over a connected stream socket (for instance one end of a
 * socketpair).  The client closes it. */
gboolean qmp_client_adopt_fd(QmpClient *client, int fd, GError **error);

/* Close now with @reason (may be NULL for a plain close).  Idempotent. */
void qmp_client_close(QmpClient *client, const GError *reason);

QmpClientState qmp_client_get_state(QmpClient *client);
const char *qmp_client_get_name(QmpClient *client);
/* The version from the greeting, or NULL before it arrived. */
const QmpVersion *qmp_client_get_version(QmpClient *client);
/* Why the client closed, or NULL while it is open. */
const GError *qmp_client_get_close_reason(QmpClient *client);
/* The peer's pid from SO_PEERCRED at connect time, or 0 if unknown.  For a
 * QEMU monitor socket this is QEMU's pid. */
int qmp_client_get_peer_pid(QmpClient *client);
/* Commands submitted and not yet completed. */
guint qmp_client_get_n_pending(QmpClient *client);
/* The timeout of commands submitted from now on without one of their own
 * (0: QMP_DEFAULT_TIMEOUT_MS); commands already submitted keep theirs. */
void qmp_client_set_timeout(QmpClient *client, guint timeout_ms);

void qmp_client_set_closed_func(QmpClient *client, QmpClosedFunc func,
                                gpointer user_data, GDestroyNotify destroy);

/* Subscribe to one event by name, or to all with @event NULL.  Returns a
 * handle > 0 for qmp_client_unsubscribe(). */
guint qmp_client_subscribe(QmpClient *client, const char *event,
                           QmpEventFunc func, gpointer user_data);
void qmp_client_unsubscribe(QmpClient *client, guint handle);

/* Wait until READY (or fail if the client closes first). */
void qmp_client_wait_ready_async(QmpClient *client, GAsyncReadyCallback cb,
                                 gpointer user_data);
gboolean qmp_client_wait_ready_finish(QmpClient *client, GAsyncResult *res,
                                      GError **error);
gboolean qmp_client_wait_ready_sync(QmpClient *client, GError **error);

/*
 * Run @command with @args (a json-c object, reference stolen, may be NULL).
 * On success the result is what @decode made of the "return" value, freed
 * with @destroy if nobody collects it; with @decode NULL it is a new
 * reference to the return value itself.  @timeout_ms 0 means the client's
 * default.
 */
void qmp_client_call_async(QmpClient *client, const char *command,
                           struct json_object *args, guint timeout_ms,
                           QmpDecodeFunc decode, GDestroyNotify destroy,
                           GAsyncReadyCallback cb, gpointer user_data);
gpointer qmp_client_call_finish(QmpClient *client, GAsyncResult *res,
                                GError **error);

/*
 * The synchronous form, for tests (tests/common/pt-test-qmp-sync.h): iterates
 * the client's context until the command completes.  Call it from the thread that owns that
 * context, and never from inside one of the client's callbacks.
 */
gpointer qmp_client_call_sync(QmpClient *client, const char *command,
                              struct json_object *args, QmpDecodeFunc decode,
                              GDestroyNotify destroy, GError **error);

void qmp_version_clear(QmpVersion *v);
