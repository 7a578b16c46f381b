/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The direct QMP backend of pt-target: a QEMU that libvirt does not manage,
 * reached through a dedicated -qmp socket.
 *
 * One sample is two queries in flight at once, query-iothreads and
 * query-blockstats (plus query-stats for the vCPUs once QEMU has shown it
 * has KVM stats), then the qom-get walk of qmp_device_iothreads_async()
 * per device not yet mapped to its iothreads, with query-block for what
 * backs each device (the device key of the workload memory).  The map is
 * cached: a device keeps its iothreads for its lifetime.  A device
 * unplugged and plugged again under the same id may sit on another
 * iothread, so QEMU's DEVICE_DELETED drops it from the map and the next
 * sample maps it anew; and every PT_QMP_DEVMAP_RECHECK_MS the whole map is
 * walked again, for whatever moved without an event the daemon saw (a
 * mirror's pivot onto another image too).  probe-devmap.h turns the map
 * into each iothread's devices, and iothreads that share devices into
 * groups.
 *
 * When the monitor goes away the target is lost; every tick it tries again
 * while the socket file exists, so a restarted QEMU is picked up.  A QEMU
 * that exited (its process gone) is gone, whether or not it left its
 * socket file behind; a new file on the path is a QEMU started again.
 *
 * Every connect, the first and each one after, is held to what the path
 * led to when the target was attached: the path must resolve (realpath) to
 * the same socket file name as then, be one the user who attached it could
 * still reach herself (PtQmpTargetOptions.reach), and lead to a QEMU no
 * other target has (PtTarget.admit, asked with the peer's pid from
 * SO_PEERCRED before a byte is exchanged).  A connect that fails one of
 * these is refused and the daemon drops the target (PtTarget.refused):
 * root reconnecting through a symbolic link swapped in by the user would
 * otherwise hand her a VM she may not reach.  The path is resolved again
 * once connected, so a swap between the checks and the connect is seen too.
 */
#include "pt-target.h"
#include "probe-devmap.h"
#include "probe-thread.h"
#include "qmp-commands.h"

#include <json-c/json.h>
#include <string.h>

#include <errno.h>
#include <signal.h>
#include <sys/stat.h>

/* A minute: the walk is a few qom-gets per device, 0.3 ms each. */
#define PT_QMP_DEVMAP_RECHECK_MS 60000

typedef struct {
    PtTarget parent;
    char *path;
    guint timeout_ms;
    ProbeRoots roots;
    QmpClient *client;
    PtCred *reach;                  /* NULL: the daemon's own */
    char *canon;                    /* realpath of @path at the first connect */
    gboolean conn_refused;          /* the last connect found nobody listening */
    struct stat sock_st;            /* the socket file of the last attempt */
    ProbeDevMap *devmap;            /* qdev -> iothread ids (none = main loop) */
    guint devmap_gen;               /* DEVICE_DELETED events seen */
    guint devmap_sub;               /* their subscription on client */
    gint64 devmap_walked_us;        /* monotonic: the map was emptied then */
    gboolean stats_known;           /* query-stats answered with vCPU stats */
    gboolean stats_absent;          /* ... or showed it has none */
} PtQmpTarget;

typedef struct {
    PtQmpTarget *q;
    ProbeTargetSnap *snap;
    GPtrArray *iothreads;
    GPtrArray *blockstats;
    QmpStats *stats;
    guint outstanding;
    GError *error;
} PtQmpSample;

static void pt_qmp_sample_stage2(PtQmpSample *s);

static void
pt_qmp_on_closed(QmpClient *c, const GError *reason, gpointer data)
{
    PtTarget *t = data;

    pt_target_set_state(t, PT_TARGET_LOST, reason->message);
}

/* The return value of query-kvm, as "is KVM enabled". */
static gpointer
pt_qmp_decode_kvm(struct json_object *ret, GError **error)
{
    json_object *enabled;

    if (!json_object_is_type(ret, json_type_object) ||
        !json_object_object_get_ex(ret, "enabled", &enabled) ||
        !json_object_is_type(enabled, json_type_boolean)) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_UNEXPECTED,
                    "query-kvm: no boolean 'enabled' in the reply");
        return NULL;
    }
    return GINT_TO_POINTER(json_object_get_boolean(enabled) ? 2 : 1);
}

static void
pt_qmp_got_kvm(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpTarget *q = data;
    PtTarget *t = &q->parent;
    g_autoptr(GError) err = NULL;
    gpointer kvm = qmp_client_call_finish(QMP_CLIENT(obj), res, &err);

    /* The connection may have gone meanwhile: it is then lost, not
     * attached. */
    if (QMP_CLIENT(obj) == q->client && !t->detached &&
        qmp_client_get_state(q->client) == QMP_CLIENT_READY) {
        /* A QEMU that cannot say keeps every source in play. */
        pt_target_set_exits_facts(t, GPOINTER_TO_INT(kvm) == 1
                                  ? "the guest runs without KVM (query-kvm: not enabled), "
                                    "so it takes no VM exits"
                                  : NULL, NULL);
        pt_target_set_state(t, PT_TARGET_ATTACHED, NULL);
    }
    pt_target_unref(t);
}

char *
pt_target_qmp_file_name(const char *path)
{
    char *base = g_path_get_basename(path);
    char *dot = strrchr(base, '.');

    if (dot && dot != base)
        *dot = 0;
    return base;
}

/* A -name long enough for any naming scheme (libvirt's domain names are
 * the longest in use, and it checks none); what a peer says beyond that,
 * or with control characters, is no name an operator would type. */
#define PT_QMP_NAME_MAX 256

static gboolean
pt_qmp_name_usable(const char *name)
{
    if (!name || !*name || strlen(name) > PT_QMP_NAME_MAX || !g_utf8_validate(name, -1, NULL))
        return FALSE;
    for (const char *p = name; *p; p++)
        if ((guchar)*p < 0x20 || *p == 0x7f)
            return FALSE;
    return TRUE;
}

static void
pt_qmp_got_name(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpTarget *q = data;
    PtTarget *t = &q->parent;
    g_autoptr(GError) err = NULL;
    g_autofree char *name = qmp_query_name_finish(QMP_CLIENT(obj), res, &err);

    if (QMP_CLIENT(obj) == q->client && !t->detached &&
        qmp_client_get_state(q->client) == QMP_CLIENT_READY) {
        /* QEMU's -name is the name to show, unless the operator gave one;
         * without one (or an unusable one) the socket's file name stays,
         * also when a QEMU restarted on the socket dropped its -name. */
        if (!t->display_given) {
            g_autofree char *file = pt_target_qmp_file_name(q->path);

            pt_target_set_display(t, pt_qmp_name_usable(name) ? name : file);
        }
        /* Whether the guest has KVM at all decides whether exits are
         * absent or merely unreadable; attached once that is known. */
        qmp_client_call_async(q->client, "query-kvm", NULL, 0, pt_qmp_decode_kvm, NULL,
                              pt_qmp_got_kvm, pt_target_ref(t));
    }
    pt_target_unref(t);
}

static void
pt_qmp_on_ready(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpTarget *q = data;
    PtTarget *t = &q->parent;
    g_autoptr(GError) err = NULL;

    if (qmp_client_wait_ready_finish(QMP_CLIENT(obj), res, &err) &&
        QMP_CLIENT(obj) == q->client && !t->detached) {
        const QmpVersion *v = qmp_client_get_version(q->client);

        t->qemu_version = v && v->major >= 0 && v->minor >= 0 && v->micro >= 0
            ? (guint32)MIN(v->major, 4000) * 1000000u + (guint32)MIN(v->minor, 999) * 1000u +
              (guint32)MIN(v->micro, 999)
            : 0;
        q->stats_known = q->stats_absent = FALSE;
        /* Its name first, then whether it has KVM; attached after both. */
        qmp_query_name_async(q->client, pt_qmp_got_name, pt_target_ref(t));
    }
    pt_target_unref(t);
}

/* {"device": ID, "path": QOM path}: "device" is absent for a device
 * without an id (a virtio-blk's virtio-backend child). */
static void
pt_qmp_on_device_deleted(QmpClient *c, const char *event, json_object *data,
                         gint64 timestamp_us, gpointer user_data)
{
    PtQmpTarget *q = user_data;
    json_object *device = NULL, *path = NULL;

    if (c != q->client || !json_object_is_type(data, json_type_object))
        return;
    json_object_object_get_ex(data, "device", &device);
    json_object_object_get_ex(data, "path", &path);
    q->devmap_gen++;
    probe_devmap_forget(q->devmap,
                        json_object_is_type(device, json_type_string) ?
                        json_object_get_string(device) : NULL,
                        json_object_is_type(path, json_type_string) ?
                        json_object_get_string(path) : NULL);
}

/*
 * Whether @q's path still leads where it did when attached, reachable by
 * whoever attached it; FALSE with t->refused set.  A socket that is not
 * there (yet, or any more) is no refusal: the connect fails, and the
 * target is lost or gone as for any missing socket.
 */
static gboolean
pt_qmp_path_held(PtQmpTarget *q)
{
    PtTarget *t = &q->parent;
    g_autoptr(GError) err = NULL;
    g_autofree char *canon = NULL;

    if (q->reach && !pt_cred_may_connect(q->reach, q->path, &err) &&
        !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
        g_free(t->refused);
        t->refused = g_strdup_printf("%s (uid %u attached it; its reach is checked at every "
                                     "connect)", err->message, (unsigned)q->reach->uid);
        return FALSE;
    }
    if (!(canon = realpath(q->path, NULL)))
        return TRUE;
    if (!q->canon) {
        q->canon = g_steal_pointer(&canon);
        return TRUE;
    }
    if (!g_str_equal(canon, q->canon)) {
        g_free(t->refused);
        t->refused = g_strdup_printf("%s now leads to %s, not to %s as when attached",
                                     q->path, canon, q->canon);
        return FALSE;
    }
    return TRUE;
}

/* A connect refused (t->refused says why): nothing more is sent on it and
 * no attempt follows; the daemon drops the target. */
static void
pt_qmp_refuse(PtQmpTarget *q)
{
    PtTarget *t = &q->parent;

    qmp_client_set_closed_func(q->client, NULL, NULL, NULL);
    qmp_client_close(q->client, NULL);
    pt_target_set_state(t, PT_TARGET_LOST, t->refused);
}

static void
pt_qmp_connect(PtQmpTarget *q)
{
    PtTarget *t = &q->parent;
    g_autoptr(GError) err = NULL;
    QmpClientOptions opts = { .name = t->name, .timeout_ms = q->timeout_ms };

    if (q->client) {
        qmp_client_set_closed_func(q->client, NULL, NULL, NULL);
        qmp_client_unsubscribe(q->client, q->devmap_sub);
        qmp_client_close(q->client, NULL);
        g_clear_object(&q->client);
    }
    /* A QEMU started again on this socket may place its devices anew. */
    if (q->devmap)
        probe_devmap_clear(q->devmap);
    q->devmap_walked_us = g_get_monotonic_time();
    q->client = qmp_client_new(NULL, &opts);
    qmp_client_set_closed_func(q->client, pt_qmp_on_closed, t, NULL);
    q->devmap_sub = qmp_client_subscribe(q->client, "DEVICE_DELETED",
                                         pt_qmp_on_device_deleted, q);
    if (stat(q->path, &q->sock_st) < 0)
        memset(&q->sock_st, 0, sizeof(q->sock_st));
    /* Connecting first, so that a refused connect is a lost attempt. */
    pt_target_set_state(t, PT_TARGET_CONNECTING, NULL);
    if (!pt_qmp_path_held(q)) {
        pt_qmp_refuse(q);
        return;
    }
    if (!qmp_client_connect_path(q->client, q->path, &err)) {
        q->conn_refused = errno == ECONNREFUSED;
        pt_target_set_state(t, PT_TARGET_LOST, err->message);
        return;
    }
    q->conn_refused = FALSE;
    /* The process behind the socket, before a byte is exchanged: one QEMU
     * is one target (pt_target_admit()). */
    pt_target_set_pid(t, qmp_client_get_peer_pid(q->client), &q->roots);
    pt_target_set_instance(t, g_strdup(t->process));
    if (!pt_qmp_path_held(q) || !pt_target_admit(t)) {
        pt_qmp_refuse(q);
        return;
    }
    qmp_client_wait_ready_async(q->client, pt_qmp_on_ready, pt_target_ref(t));
}

/* Another file than the last attempt's: a QEMU made the socket anew. */
static gboolean
pt_qmp_socket_is_new(const PtQmpTarget *q, const struct stat *st)
{
    return st->st_ino != q->sock_st.st_ino || st->st_dev != q->sock_st.st_dev ||
           st->st_ctim.tv_sec != q->sock_st.st_ctim.tv_sec ||
           st->st_ctim.tv_nsec != q->sock_st.st_ctim.tv_nsec;
}

/* The QEMU last reached through @q no longer runs: its pid is gone, or is
 * another process now (the start time differs), or it exited and waits to
 * be reaped; TRUE too when none was ever reached. */
static gboolean
pt_qmp_exited(PtQmpTarget *q)
{
    PtTarget *t = &q->parent;
    g_autofree char *now = NULL;
    char state;

    if (t->pid <= 0)
        return TRUE;
    if (!t->instance)
        return kill(t->pid, 0) < 0 && errno == ESRCH;
    now = pt_instance_for_pid(&q->roots, t->pid);
    if (g_strcmp0(now, t->instance) != 0)
        return TRUE;
    state = probe_process_read_state(q->roots.proc ? q->roots.proc : "/proc", t->pid);
    return state == 'Z' || state == 'X';
}

/*
 * The socket file is still there but its QEMU is not: the process last
 * reached exited (kill -9 leaves the file), or, when none was ever
 * reached, nobody listened at two attempts a backoff apart.  One refusal
 * alone is not enough there: a QEMU creates its socket file a moment
 * before it listens on it.  A QEMU merely stopped (SIGSTOP) still
 * listens and runs, so it is neither.
 */
static gboolean
pt_qmp_left_socket(PtQmpTarget *q)
{
    PtTarget *t = &q->parent;

    if (t->pid > 0)
        return pt_qmp_exited(q);
    return q->conn_refused && t->health.failures >= 2;
}

void
pt_target_qmp_retry(PtTarget *t)
{
    PtQmpTarget *q = (PtQmpTarget *)t;
    struct stat st;

    if ((t->state != PT_TARGET_LOST && t->state != PT_TARGET_GONE) || t->detached ||
        t->refused)
        return;
    if (stat(q->path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return;
        /* A new socket file is a QEMU started again on the path: tried at
         * once.  The file a gone QEMU left behind is not tried again. */
        if (pt_qmp_socket_is_new(q, &st) ||
            (t->state == PT_TARGET_LOST && !pt_qmp_left_socket(q) &&
             pt_target_retry_due(t, g_get_monotonic_time()))) {
            pt_qmp_connect(q);
            return;
        }
        if (t->state == PT_TARGET_LOST && pt_qmp_left_socket(q)) {
            g_autofree char *why = t->pid > 0 ?
                g_strdup_printf("its QEMU (pid %d) has exited, leaving its socket behind",
                                t->pid) :
                g_strdup_printf("nothing listens on its socket (%u attempts) and no QEMU "
                                "was reached on it", t->health.failures);

            pt_target_set_state(t, PT_TARGET_GONE, why);
        }
        return;
    }
    /*
     * QEMU removes its socket when it exits cleanly (quit, a guest
     * shutdown); a QEMU killed leaves it (pt_qmp_left_socket()).  Gone
     * takes both a missing socket and a QEMU no longer running: a socket
     * moved away for a while (its directory renamed) from under a QEMU
     * that runs on is neither.
     */
    if (errno == ENOENT && t->state == PT_TARGET_LOST && pt_qmp_exited(q)) {
        g_autofree char *why = t->pid > 0 ?
            g_strdup_printf("its socket is gone and its QEMU (pid %d) has exited", t->pid) :
            g_strdup("its socket is gone and no QEMU was reached on it");

        pt_target_set_state(t, PT_TARGET_GONE, why);
    }
}

/*
 * At a stop, while the QEMU last reached still runs: a connect refused
 * with EAGAIN is the usual first answer of a QEMU just continued after a
 * SIGSTOP, whose listen backlog still holds the attempts made while it was
 * stopped, so each call tries again until the stop's deadline.
 */
static gboolean
pt_qmp_reach_now(PtTarget *t)
{
    PtQmpTarget *q = (PtQmpTarget *)t;
    struct stat st;

    if (t->detached || t->refused)
        return FALSE;
    if (t->state == PT_TARGET_CONNECTING)
        return TRUE;
    if (t->state != PT_TARGET_LOST || stat(q->path, &st) < 0 || !S_ISSOCK(st.st_mode) ||
        pt_qmp_exited(q))
        return FALSE;
    pt_qmp_connect(q);
    return TRUE;
}

void
pt_target_qmp_set_timeout(PtTarget *t, guint timeout_ms)
{
    PtQmpTarget *q = (PtQmpTarget *)t;

    q->timeout_ms = timeout_ms;
    if (q->client)
        qmp_client_set_timeout(q->client, timeout_ms);
}

const char *
pt_target_qmp_path(PtTarget *t)
{
    return ((PtQmpTarget *)t)->path;
}

const char *
pt_target_qmp_canonical(PtTarget *t)
{
    return ((PtQmpTarget *)t)->canon;
}

/* ---- sampling ---------------------------------------------------------- */

static void
pt_qmp_sample_end(PtQmpSample *s)
{
    PtTarget *t = &s->q->parent;
    ProbeTargetSnap *snap = s->snap;
    GError *err = s->error;

    g_clear_pointer(&s->iothreads, g_ptr_array_unref);
    g_clear_pointer(&s->blockstats, g_ptr_array_unref);
    g_clear_pointer(&s->stats, qmp_stats_free);
    g_free(s);
    pt_target_sample_finish(t, snap, err);
}

static void
pt_qmp_sample_note_error(PtQmpSample *s, GError *err)
{
    if (!s->error)
        s->error = err;
    else
        g_error_free(err);
}

static void
pt_qmp_got_iothreads(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpSample *s = data;
    GError *err = NULL;

    s->iothreads = qmp_query_iothreads_finish(QMP_CLIENT(obj), res, &err);
    if (!s->iothreads)
        pt_qmp_sample_note_error(s, err);
    if (--s->outstanding == 0)
        pt_qmp_sample_stage2(s);
}

static void
pt_qmp_got_blockstats(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpSample *s = data;
    GError *err = NULL;

    s->blockstats = qmp_query_blockstats_finish(QMP_CLIENT(obj), res, &err);
    if (!s->blockstats)
        pt_qmp_sample_note_error(s, err);
    if (--s->outstanding == 0)
        pt_qmp_sample_stage2(s);
}

static void
pt_qmp_got_stats(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpSample *s = data;
    g_autoptr(GError) err = NULL;

    /* Exits are optional: without them the host-side sources are tried. */
    s->stats = qmp_query_stats_finish(QMP_CLIENT(obj), res, &err);
    if (s->stats && s->stats->entities->len > 0)
        s->q->stats_known = TRUE;
    else if (!s->q->stats_known) {
        g_autofree char *why = err ? g_strdup_printf("not offered by QEMU (%s)", err->message)
                                   : g_strdup("not offered by QEMU (no KVM vCPU statistics)");

        s->q->stats_absent = TRUE;
        pt_target_set_exits_facts(&s->q->parent, s->q->parent.exits_no_kvm, why);
    }
    if (--s->outstanding == 0)
        pt_qmp_sample_stage2(s);
}

typedef struct {
    PtQmpSample *s;
    char *qdev;
    guint gen;                      /* devmap_gen when the walk began */
} PtQmpMapJob;

static void pt_qmp_sample_fill(PtQmpSample *s);

static void
pt_qmp_got_map(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpMapJob *job = data;
    PtQmpSample *s = job->s;
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) iots = NULL;

    /* A device deleted during the walk may be another by now: the next
     * sample asks again. */
    if (qmp_device_iothreads_finish(QMP_CLIENT(obj), res, &iots, &err)) {
        if (job->gen == s->q->devmap_gen)
            probe_devmap_set(s->q->devmap, job->qdev, (const char *const *)iots);
    } else
        pt_qmp_sample_note_error(s, g_steal_pointer(&err));
    g_free(job->qdev);
    g_free(job);
    if (--s->outstanding == 0)
        pt_qmp_sample_fill(s);
}

/*
 * What backs each device, asked with the walk (job->qdev NULL): it keys
 * the device's workload memory, and a disk replaced behind the same
 * device shows up where its mapping is asked again.  A QEMU that cannot
 * say leaves the devices keyed by name, as before.
 */
static void
pt_qmp_got_block(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpMapJob *job = data;
    PtQmpSample *s = job->s;
    g_autoptr(GPtrArray) blocks = qmp_query_block_finish(QMP_CLIENT(obj), res, NULL);

    for (guint i = 0; blocks && job->gen == s->q->devmap_gen && i < blocks->len; i++) {
        const QmpBlockInfo *b = blocks->pdata[i];

        if (b->qdev && *b->qdev)
            probe_devmap_set_source(s->q->devmap, b->qdev, b->file);
    }
    g_free(job);
    if (--s->outstanding == 0)
        pt_qmp_sample_fill(s);
}

static PtQmpMapJob *
pt_qmp_map_job_new(PtQmpSample *s, const char *qdev)
{
    PtQmpMapJob *job = g_new0(PtQmpMapJob, 1);

    job->s = s;
    job->qdev = g_strdup(qdev);
    job->gen = s->q->devmap_gen;
    s->outstanding++;
    return job;
}

static void
pt_qmp_sample_stage2(PtQmpSample *s)
{
    gboolean walked = FALSE;

    if (s->error) {
        pt_qmp_sample_end(s);
        return;
    }
    s->outstanding = 1;         /* held while queries are issued */
    for (guint i = 0; i < s->blockstats->len; i++) {
        QmpBlockStats *b = s->blockstats->pdata[i];

        if (!b->qdev || !*b->qdev || probe_devmap_contains(s->q->devmap, b->qdev))
            continue;
        walked = TRUE;
        qmp_device_iothreads_async(s->q->client, b->qdev, pt_qmp_got_map,
                                   pt_qmp_map_job_new(s, b->qdev));
    }
    if (walked)
        qmp_query_block_async(s->q->client, pt_qmp_got_block, pt_qmp_map_job_new(s, NULL));
    if (--s->outstanding == 0)
        pt_qmp_sample_fill(s);
}

static void
pt_qmp_sample_fill(PtQmpSample *s)
{
    PtTarget *t = &s->q->parent;
    g_autofree ProbeDevSample *devs = NULL;
    guint n_devs = 0;

    if (s->error) {
        pt_qmp_sample_end(s);
        return;
    }
    for (guint i = 0; i < s->iothreads->len; i++) {
        QmpIothread *qi = s->iothreads->pdata[i];
        ProbeIothreadSnap *io;
        PolicyTriple tr = { qi->poll_max_ns, qi->poll_grow, qi->poll_shrink };

        if (!pt_target_admit_iothread(t, qi->id, s->iothreads->len))
            continue;
        io = probe_target_snap_iothread(s->snap, qi->id);
        probe_iothread_snap_set_triple(io, &tr);
        probe_iothread_snap_set_gauge(io, METRIC_AIO_MAX_BATCH, qi->aio_max_batch);
        probe_iothread_snap_set_block_read(io);
        io->tid = (int)qi->thread_id;
    }
    devs = g_new0(ProbeDevSample, MAX(s->blockstats->len, 1));
    for (guint i = 0; i < s->blockstats->len; i++) {
        QmpBlockStats *b = s->blockstats->pdata[i];

        if (!b->qdev || !*b->qdev)
            continue;
        devs[n_devs++] = (ProbeDevSample){
            .device = b->qdev,
            .name = b->node_name ? b->node_name : b->qdev,
            .v = b->v,
        };
    }
    probe_devmap_fill(s->q->devmap, s->snap, devs, n_devs);
    if (s->stats && s->stats->entities->len > 0) {
        static const char *const names[] = { "exits", "io_exits", "mmio_exits",
                                             "halt_exits", NULL };

        for (guint i = 0; names[i]; i++) {
            guint64 v;

            if (qmp_stats_sum(s->stats, names[i], &v))
                probe_exit_counters_add_named(&s->snap->exits, names[i], v);
        }
    }
    pt_target_sample_host_side(t, s->snap);
    pt_qmp_sample_end(s);
}

static void
pt_qmp_sample(PtTarget *t, ProbeTargetSnap *snap)
{
    PtQmpTarget *q = (PtQmpTarget *)t;
    PtQmpSample *s;

    if (!q->client || qmp_client_get_state(q->client) != QMP_CLIENT_READY) {
        pt_target_sample_finish(t, snap, g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                                                     "%s: not connected", t->name));
        return;
    }
    if (g_get_monotonic_time() - q->devmap_walked_us >= PT_QMP_DEVMAP_RECHECK_MS * 1000LL) {
        probe_devmap_clear(q->devmap);
        q->devmap_walked_us = g_get_monotonic_time();
    }
    s = g_new0(PtQmpSample, 1);
    s->q = q;
    s->snap = snap;
    s->outstanding = 2;
    qmp_query_iothreads_async(q->client, pt_qmp_got_iothreads, s);
    qmp_query_blockstats_async(q->client, pt_qmp_got_blockstats, s);
    if (!q->stats_absent && t->exits_mode != PROBE_EXITS_OFF) {
        s->outstanding++;
        qmp_query_stats_async(q->client, QMP_STATS_TARGET_VCPU, pt_qmp_got_stats, s);
    }
}

/* ---- applying ---------------------------------------------------------- */

/*
 * The knobs of one write go out together: QEMU's monitor runs commands in
 * the order they arrive, so they need no round trip each, and a sample's
 * query-iothreads, sent before or after on the same monitor, never sees
 * half of the write.  A stop restoring thousands of iothreads so waits on
 * QEMU alone, not on a round trip per knob.
 */
typedef struct {
    gpointer job;
    guint outstanding;
    GError *error;              /* the first knob that failed */
} PtQmpApply;

static void
pt_qmp_apply_done(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtQmpApply *a = data;
    GError *err = NULL;

    if (!qmp_iothread_set_finish(QMP_CLIENT(obj), res, &err)) {
        if (!a->error)
            a->error = err;
        else
            g_error_free(err);
    }
    if (--a->outstanding)
        return;
    pt_target_apply_finish(a->job, a->error);
    g_free(a);
}

static void
pt_qmp_apply(PtTarget *t, const char *iothread, const PolicyTriple *from,
             const PolicyTriple *to, gint64 bound, gpointer job)
{
    PtQmpTarget *q = (PtQmpTarget *)t;
    PtQmpApply *a = g_new0(PtQmpApply, 1);
    QmpIothreadProp props[POLICY_KNOB_MAX];
    gint64 values[POLICY_KNOB_MAX];
    guint n = 0;

    a->job = job;
    /* Every write resets QEMU's learned window, so write only what
     * changes, in the knobs' order (grow and shrink first, so the new
     * ceiling starts clean).  QEMU's property names are the knobs'. */
    for (PolicyKnob k = 0; k < POLICY_KNOB_MAX; k++) {
        guint64 v = policy_triple_get(to, k);

        if (policy_triple_get(from, k) == v)
            continue;
        props[n] = qmp_iothread_prop_from_string(policy_knob_to_string(k));
        g_assert(props[n] != QMP_IOTHREAD_PROP_INVALID);
        values[n++] = (gint64)MIN(v, (guint64)G_MAXINT64);
    }
    if (!n) {
        pt_target_apply_finish(job, NULL);
        g_free(a);
        return;
    }
    /* Counted first: a knob refused by our own bounds completes at once. */
    a->outstanding = n;
    for (guint i = 0; i < n; i++)
        qmp_iothread_set_async(q->client, iothread, props[i], values[i],
                               props[i] == QMP_IOTHREAD_POLL_MAX_NS ? bound : 1024,
                               pt_qmp_apply_done, a);
}

static void
pt_qmp_close(PtTarget *t)
{
    PtQmpTarget *q = (PtQmpTarget *)t;

    if (q->client) {
        qmp_client_set_closed_func(q->client, NULL, NULL, NULL);
        qmp_client_close(q->client, NULL);
    }
}

static void
pt_qmp_free(PtTarget *t)
{
    PtQmpTarget *q = (PtQmpTarget *)t;

    if (q->client) {
        qmp_client_set_closed_func(q->client, NULL, NULL, NULL);
        qmp_client_unsubscribe(q->client, q->devmap_sub);
    }
    g_clear_object(&q->client);
    probe_devmap_free(q->devmap);
    pt_cred_free(q->reach);
    g_free(q->canon);
    g_free(q->path);
}

static const PtTargetOps pt_qmp_ops = {
    .sample = pt_qmp_sample,
    .apply = pt_qmp_apply,
    .retry = pt_target_qmp_retry,
    .reach_now = pt_qmp_reach_now,
    .close = pt_qmp_close,
    .free = pt_qmp_free,
};

PtTarget *
pt_target_qmp_new(const char *name, const char *path, const PtQmpTargetOptions *opts)
{
    PtQmpTarget *q = (PtQmpTarget *)pt_target_alloc(sizeof(PtQmpTarget), &pt_qmp_ops,
                                                    name, STORE_TARGET_QMP);

    q->path = g_strdup(path);
    q->timeout_ms = opts->timeout_ms;
    if (opts->roots)
        q->roots = *opts->roots;
    q->reach = pt_cred_copy(opts->reach);
    q->parent.exits_mode = opts->exits;
    q->parent.admit = opts->admit;
    q->parent.admit_data = opts->admit_data;
    q->devmap = probe_devmap_new();
    pt_qmp_connect(q);
    return &q->parent;
}
