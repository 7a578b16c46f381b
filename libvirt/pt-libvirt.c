/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-libvirt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <libvirt/libvirt.h>
#include <libvirt/virterror.h>

#include "pt-libvirt-event.h"
#include "pt-libvirt-metadata.h"
#include "pt-libvirt-parse.h"
#include "pt-qemu-version.h"

#define BACKOFF_MIN_MS 500
#define BACKOFF_MAX_MS 30000
#define KEEPALIVE_INTERVAL_S 3
#define KEEPALIVE_COUNT 3

G_DEFINE_QUARK(pt-libvirt-error-quark, pt_libvirt_error)

struct _PtLibvirt {
    char *uri;
    char *pid_dir;
    guint timeout_ms;
    GMainContext *ctx;
    PtLibvirtCallbacks cb;
    gpointer user_data;
    gboolean connected;         /* as last reported on ctx */
    gboolean event_held;

    GThread *worker;
    GAsyncQueue *jobs;          /* Job*, owned references */

    GMutex lock;                /* guards closing and notices */
    gboolean closing;
    GList *notices;             /* GSource* of undelivered notices */

    /* Only the worker thread touches these. */
    GHashTable *versions;       /* pid/id/uuid -> QEMU version of the last listing */
    virConnectPtr conn;
    int lifecycle_id;
    int metadata_id;
    int blockjob_id;
    gboolean has_vm_stats;
};

/* ---- notices: worker and event thread -> ctx ------------------------- */

typedef enum {
    NOTICE_CONNECTED,
    NOTICE_DISCONNECTED,
    NOTICE_STARTED,
    NOTICE_STOPPED,
    NOTICE_METADATA,
    NOTICE_DISKS,
} NoticeKind;

typedef struct {
    PtLibvirt *lv;
    NoticeKind kind;
    char *name;
    char *uuid;
    const char *reason;         /* static string */
    GError *error;
    GSource *source;
} Notice;

static void
notice_free(gpointer data)
{
    Notice *n = data;

    g_free(n->name);
    g_free(n->uuid);
    g_clear_error(&n->error);
    g_free(n);
}

static gboolean
notice_dispatch(gpointer data)
{
    Notice *n = data;
    PtLibvirt *lv = n->lv;
    const PtLibvirtCallbacks *cb = &lv->cb;

    g_mutex_lock(&lv->lock);
    lv->notices = g_list_remove(lv->notices, n->source);
    g_mutex_unlock(&lv->lock);
    g_source_unref(n->source);  /* the context keeps its own reference */

    /* The callback may free lv: touch neither lv nor cb after it. */
    switch (n->kind) {
    case NOTICE_CONNECTED:
        lv->connected = TRUE;
        if (cb->connected)
            cb->connected(lv, lv->user_data);
        break;
    case NOTICE_DISCONNECTED:
        lv->connected = FALSE;
        if (cb->disconnected)
            cb->disconnected(lv, n->error, lv->user_data);
        break;
    case NOTICE_STARTED:
        if (cb->domain_started)
            cb->domain_started(lv, n->name, n->uuid, lv->user_data);
        break;
    case NOTICE_STOPPED:
        if (cb->domain_stopped)
            cb->domain_stopped(lv, n->name, n->uuid, n->reason, lv->user_data);
        break;
    case NOTICE_METADATA:
        if (cb->domain_metadata_changed)
            cb->domain_metadata_changed(lv, n->name, n->uuid, lv->user_data);
        break;
    case NOTICE_DISKS:
        if (cb->domain_disks_changed)
            cb->domain_disks_changed(lv, n->name, n->uuid, lv->user_data);
        break;
    }
    return G_SOURCE_REMOVE;
}

/* Takes ownership of @n.  Safe from any thread. */
static void
notice_post(PtLibvirt *lv, Notice *n)
{
    n->lv = lv;
    g_mutex_lock(&lv->lock);
    if (lv->closing) {
        g_mutex_unlock(&lv->lock);
        notice_free(n);
        return;
    }
    n->source = g_idle_source_new();
    g_source_set_priority(n->source, G_PRIORITY_DEFAULT);
    g_source_set_callback(n->source, notice_dispatch, n, notice_free);
    lv->notices = g_list_prepend(lv->notices, n->source);
    g_source_attach(n->source, lv->ctx);
    g_mutex_unlock(&lv->lock);
}

static void
notice_simple(PtLibvirt *lv, NoticeKind kind, GError *error)
{
    Notice *n = g_new0(Notice, 1);

    n->kind = kind;
    n->error = error;
    notice_post(lv, n);
}

/* ---- jobs: ctx -> worker ---------------------------------------------- */

typedef enum {
    JOB_QUIT,
    JOB_LOST,       /* the close callback fired for lost_conn */
    JOB_LIST,
    JOB_STATS,
    JOB_SET,
} JobKind;

typedef struct {
    gint ref;
    JobKind kind;
    GTask *task;                /* NULL for QUIT and LOST */
    GSource *timer;             /* deadline on the task's context */
    gint done;                  /* 1 once the task got its result */
    char *uri;
    guint timeout_ms;

    virConnectPtr lost_conn;
    int lost_reason;

    char *uuid;
    guint iothread;
    guint64 poll_max_ns;
    guint poll_grow;
    guint poll_shrink;
} Job;

static Job *
job_new(JobKind kind)
{
    Job *job = g_new0(Job, 1);

    job->ref = 1;
    job->kind = kind;
    return job;
}

static Job *
job_ref(Job *job)
{
    g_atomic_int_inc(&job->ref);
    return job;
}

static void
job_unref(gpointer data)
{
    Job *job = data;

    if (!g_atomic_int_dec_and_test(&job->ref))
        return;
    g_clear_object(&job->task);
    if (job->timer)
        g_source_unref(job->timer);
    g_free(job->uri);
    g_free(job->uuid);
    g_free(job);
}

static const char *
job_what(const Job *job)
{
    switch (job->kind) {
    case JOB_LIST:  return "list domains";
    case JOB_STATS: return "get domain stats";
    case JOB_SET:   return "set iothread parameters";
    default:        return "internal job";
    }
}

/*
 * Give the task its result unless the deadline already did.  Takes
 * ownership of @result and @error.  Safe from any thread.
 */
static void
job_return(Job *job, gpointer result, GDestroyNotify result_free, GError *error)
{
    if (!job->task || !g_atomic_int_compare_and_exchange(&job->done, 0, 1)) {
        if (result && result_free)
            result_free(result);
        g_clear_error(&error);
        return;
    }
    if (job->timer)
        g_source_destroy(job->timer);
    if (error)
        g_task_return_error(job->task, error);
    else if (job->kind == JOB_SET)
        g_task_return_boolean(job->task, TRUE);
    else
        g_task_return_pointer(job->task, result, result_free);
}

static gboolean
job_deadline(gpointer data)
{
    Job *job = data;

    job_return(job, NULL, NULL,
               g_error_new(PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_TIMEOUT,
                           "libvirt %s: %s: no answer within %u ms",
                           job->uri, job_what(job), job->timeout_ms));
    return G_SOURCE_REMOVE;
}

static void
job_submit(PtLibvirt *lv, Job *job, gpointer source_tag,
           GCancellable *cancellable, GAsyncReadyCallback callback,
           gpointer user_data)
{
    job->uri = g_strdup(lv->uri);
    job->timeout_ms = lv->timeout_ms;
    /* PtLibvirt is no GObject: the callback gets no source object. */
    job->task = g_task_new(NULL, cancellable, callback, user_data);
    g_task_set_source_tag(job->task, source_tag);

    if (!lv->worker || !lv->connected) {
        job_return(job, NULL, NULL,
                   g_error_new(PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED,
                               "libvirt %s: %s: not connected",
                               lv->uri, job_what(job)));
        job_unref(job);
        return;
    }
    job->timer = g_timeout_source_new(lv->timeout_ms);
    g_source_set_callback(job->timer, job_deadline, job_ref(job), job_unref);
    g_source_attach(job->timer, g_task_get_context(job->task));
    g_async_queue_push(lv->jobs, job);
}

/* ---- worker: libvirt calls --------------------------------------------- */

/* A GError from libvirt's last error of this thread, which it then clears. */
static GError *
virt_error(int code, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static GError *
virt_error(int code, const char *fmt, ...)
{
    virErrorPtr e = virGetLastError();
    g_autofree char *what = NULL;
    GError *error;
    va_list ap;

    va_start(ap, fmt);
    what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (e && e->code == VIR_ERR_NO_DOMAIN)
        code = PT_LIBVIRT_ERROR_NOT_FOUND;
    error = g_error_new(PT_LIBVIRT_ERROR, code, "%s: %s", what,
                        e && e->message ? e->message : "unknown libvirt error");
    virResetLastError();
    return error;
}

static const char *
stop_reason(int detail)
{
    switch (detail) {
    case VIR_DOMAIN_EVENT_STOPPED_SHUTDOWN:      return "shutdown";
    case VIR_DOMAIN_EVENT_STOPPED_DESTROYED:     return "destroyed";
    case VIR_DOMAIN_EVENT_STOPPED_CRASHED:       return "crashed";
    case VIR_DOMAIN_EVENT_STOPPED_MIGRATED:      return "migrated";
    case VIR_DOMAIN_EVENT_STOPPED_SAVED:         return "saved";
    case VIR_DOMAIN_EVENT_STOPPED_FAILED:        return "failed";
    case VIR_DOMAIN_EVENT_STOPPED_FROM_SNAPSHOT: return "from-snapshot";
    default:                                     return "unknown";
    }
}

/* A notice of @kind about @dom, @reason its stop reason (or NULL). */
static void
notice_post_domain(PtLibvirt *lv, NoticeKind kind, virDomainPtr dom, const char *reason)
{
    char uuid[VIR_UUID_STRING_BUFLEN] = "";
    Notice *n = g_new0(Notice, 1);

    n->kind = kind;
    n->name = g_strdup(virDomainGetName(dom));
    if (virDomainGetUUIDString(dom, uuid) < 0)
        virResetLastError();
    n->uuid = g_strdup(uuid);
    n->reason = reason;
    notice_post(lv, n);
}

/* Runs on the event thread. */
static int
on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail,
             void *opaque)
{
    if (event == VIR_DOMAIN_EVENT_STARTED)
        notice_post_domain(opaque, NOTICE_STARTED, dom, NULL);
    else if (event == VIR_DOMAIN_EVENT_STOPPED)
        notice_post_domain(opaque, NOTICE_STOPPED, dom, stop_reason(detail));
    return 0;
}

/* Runs on the event thread: polltune's own metadata element changed. */
static int
on_metadata_change(virConnectPtr conn, virDomainPtr dom, int type, const char *nsuri,
                   void *opaque)
{
    if (type == VIR_DOMAIN_METADATA_ELEMENT && g_strcmp0(nsuri, PT_LIBVIRT_POLICY_NS) == 0)
        notice_post_domain(opaque, NOTICE_METADATA, dom, NULL);
    return 0;
}

/* Runs on the event thread: a block job ended.  A copy or an active
 * commit that completed pivoted its disk onto another <source>. */
static void
on_block_job(virConnectPtr conn, virDomainPtr dom, const char *disk, int type, int status,
             void *opaque)
{
    if (status == VIR_DOMAIN_BLOCK_JOB_COMPLETED)
        notice_post_domain(opaque, NOTICE_DISKS, dom, NULL);
}

/* Runs on the event thread; the worker does the work. */
static void
on_close(virConnectPtr conn, int reason, void *opaque)
{
    PtLibvirt *lv = opaque;
    Job *job = job_new(JOB_LOST);

    job->lost_conn = conn;
    job->lost_reason = reason;
    g_async_queue_push_front(lv->jobs, job);
}

static const char *
close_reason(int reason)
{
    switch (reason) {
    case VIR_CONNECT_CLOSE_REASON_ERROR:     return "I/O error";
    case VIR_CONNECT_CLOSE_REASON_EOF:       return "libvirtd closed the connection";
    case VIR_CONNECT_CLOSE_REASON_KEEPALIVE: return "keepalive timed out";
    case VIR_CONNECT_CLOSE_REASON_CLIENT:    return "closed by client";
    default:                                 return "unknown reason";
    }
}

static void
worker_disconnect(PtLibvirt *lv)
{
    if (!lv->conn)
        return;
    if (lv->lifecycle_id >= 0)
        virConnectDomainEventDeregisterAny(lv->conn, lv->lifecycle_id);
    lv->lifecycle_id = -1;
    if (lv->metadata_id >= 0)
        virConnectDomainEventDeregisterAny(lv->conn, lv->metadata_id);
    lv->metadata_id = -1;
    if (lv->blockjob_id >= 0)
        virConnectDomainEventDeregisterAny(lv->conn, lv->blockjob_id);
    lv->blockjob_id = -1;
    virConnectUnregisterCloseCallback(lv->conn, on_close);
    virConnectClose(g_steal_pointer(&lv->conn));
    virResetLastError();    /* a dead connection fails the deregistrations */
}

/*
 * The version of the QEMU that runs domain @d: its own binary's --version,
 * run through /proc/PID/exe (the running binary, even after an upgrade
 * replaced the file), once per process; where that binary does not run
 * on the host (QEMU in a container or a chroot, linked against its own
 * root's libraries), the version string read from the file.  Not virConnectGetVersion(): it
 * makes libvirt's QEMU driver look up the capabilities of its default
 * emulator, and where /dev/kvm exists but cannot run a guest (nested
 * virtualisation without VMX or SVM) libvirt 9.0 probes QEMU again on
 * every call, 8-16 s each, and holds up other calls meanwhile: inside the
 * listing's 2 s deadline no domain was ever found, and asked beside it, a
 * stop's restore writes timed out and left the VM changed.
 *
 * A process is named by its pid with the domain's uuid and id (a new id
 * each time the domain starts), so that a reused pid is asked again.  A
 * failure is kept like an answer, as 0 (unknown), and said once
 * (qemu_version_error): the binary will not answer better next time.
 * This runs on the worker, so
 * the binary gets QEMU_VERSION_TIMEOUT_MS: `qemu-system-x86_64 --version`
 * takes about 20 ms on an idle host (dynamic linking of some 100
 * libraries), a busy one can make that a few hundred.
 */
#define QEMU_VERSION_TIMEOUT_MS 1500

static guint32
worker_qemu_version(PtLibvirt *lv, GHashTable *seen, PtLibvirtDomain *d)
{
    g_autofree char *key = NULL;
    gpointer v;
    guint32 version;

    if (d->pid <= 0)
        return 0;
    key = g_strdup_printf("%d/%d/%s", d->pid, d->id, d->uuid ? d->uuid : "");
    if (g_hash_table_lookup_extended(lv->versions, key, NULL, &v)) {
        version = GPOINTER_TO_UINT(v);
    } else {
        g_autoptr(GError) err = NULL;
        g_autofree char *exe = g_strdup_printf("/proc/%d/exe", (int)d->pid);

        version = pt_qemu_binary_version(exe, QEMU_VERSION_TIMEOUT_MS, &err);
        if (!version) {
            /* A QEMU in a container (libvirt and QEMU in their own root)
             * does not run with the host's libraries: its file still says
             * which release it is. */
            g_autoptr(GError) file_err = NULL;

            version = pt_qemu_file_version(exe, &file_err);
            if (!version)
                d->qemu_version_error = g_strdup_printf("%s; %s", err->message,
                                                        file_err->message);
        }
    }
    g_hash_table_insert(seen, g_steal_pointer(&key), GUINT_TO_POINTER(version));
    return version;
}

static gboolean
worker_connect(PtLibvirt *lv, GError **error)
{
    unsigned long version = 0;

    lv->conn = virConnectOpen(lv->uri);
    if (!lv->conn) {
        *error = virt_error(PT_LIBVIRT_ERROR_NOT_CONNECTED,
                            "libvirt %s: connect", lv->uri);
        return FALSE;
    }
    if (virConnectRegisterCloseCallback(lv->conn, on_close, lv, NULL) < 0) {
        *error = virt_error(PT_LIBVIRT_ERROR_NOT_CONNECTED,
                            "libvirt %s: register close callback", lv->uri);
        worker_disconnect(lv);
        return FALSE;
    }
    /* Only remote connections support keepalive; elsewhere it is a no-op. */
    if (virConnectSetKeepAlive(lv->conn, KEEPALIVE_INTERVAL_S, KEEPALIVE_COUNT) < 0)
        virResetLastError();
    lv->lifecycle_id = virConnectDomainEventRegisterAny(lv->conn, NULL,
                           VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                           VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), lv, NULL);
    if (lv->lifecycle_id < 0) {
        *error = virt_error(PT_LIBVIRT_ERROR_NOT_CONNECTED,
                            "libvirt %s: register lifecycle events", lv->uri);
        worker_disconnect(lv);
        return FALSE;
    }
    /* Metadata events exist since libvirt 3.0; without them the metadata
     * is still read at every listing. */
    lv->metadata_id = virConnectDomainEventRegisterAny(lv->conn, NULL,
                          VIR_DOMAIN_EVENT_ID_METADATA_CHANGE,
                          VIR_DOMAIN_EVENT_CALLBACK(on_metadata_change), lv, NULL);
    if (lv->metadata_id < 0)
        virResetLastError();
    /* Without block job events a pivoted disk is seen at the next listing. */
    lv->blockjob_id = virConnectDomainEventRegisterAny(lv->conn, NULL,
                          VIR_DOMAIN_EVENT_ID_BLOCK_JOB_2,
                          VIR_DOMAIN_EVENT_CALLBACK(on_block_job), lv, NULL);
    if (lv->blockjob_id < 0)
        virResetLastError();
    /* The vm stats group (query-stats passed through) exists since 8.9. */
    lv->has_vm_stats = virConnectGetLibVersion(lv->conn, &version) == 0 &&
                       version >= 8009000;
    virResetLastError();
    return TRUE;
}

/* polltune's metadata element of the running domain, if it has one. */
static void
worker_policy_metadata(virDomainPtr dom, PtLibvirtDomain *d)
{
    char *xml = virDomainGetMetadata(dom, VIR_DOMAIN_METADATA_ELEMENT, PT_LIBVIRT_POLICY_NS,
                                     VIR_DOMAIN_AFFECT_LIVE);

    if (xml) {
        d->policy_xml = g_strdup(xml);
        free(xml);
        return;
    }
    if (virGetLastErrorCode() != VIR_ERR_NO_DOMAIN_METADATA)
        d->policy_xml_error = g_strdup(virGetLastErrorMessage());
    virResetLastError();
}

static GPtrArray *
worker_list(PtLibvirt *lv, GError **error)
{
    virDomainPtr *doms = NULL;
    g_autoptr(GPtrArray) out = NULL;
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    int n;

    n = virConnectListAllDomains(lv->conn, &doms, VIR_CONNECT_LIST_DOMAINS_ACTIVE);
    if (n < 0) {
        *error = virt_error(PT_LIBVIRT_ERROR_FAILED, "libvirt %s: list domains", lv->uri);
        return NULL;
    }
    out = g_ptr_array_new_with_free_func((GDestroyNotify)pt_libvirt_domain_free);
    for (int i = 0; i < n && out; i++) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";
        const char *name = virDomainGetName(doms[i]);
        g_autoptr(PtLibvirtDomain) d = NULL;
        char *xml;
        gboolean ok;

        virDomainGetUUIDString(doms[i], uuid);
        d = pt_libvirt_domain_new(name, uuid);
        d->id = (int)virDomainGetID(doms[i]);
        xml = virDomainGetXMLDesc(doms[i], 0);
        if (!xml) {
            /* It stopped between the listing and now: not running. */
            virResetLastError();
            continue;
        }
        ok = pt_libvirt_domain_xml_parse(d, xml, error);
        free(xml);
        if (!ok) {
            g_clear_pointer(&out, g_ptr_array_unref);
            break;
        }
        worker_policy_metadata(doms[i], d);
        d->pid = pt_libvirt_pid_read(lv->pid_dir, name);
        d->qemu_version = worker_qemu_version(lv, seen, d);
        g_ptr_array_add(out, g_steal_pointer(&d));
    }
    for (int i = 0; i < n; i++)
        virDomainFree(doms[i]);
    free(doms);
    /* Versions of processes no longer listed are forgotten. */
    if (out) {
        g_hash_table_unref(lv->versions);
        lv->versions = g_steal_pointer(&seen);
    }
    return g_steal_pointer(&out);
}

static GPtrArray *
worker_stats(PtLibvirt *lv, GError **error)
{
    unsigned int types = VIR_DOMAIN_STATS_IOTHREAD | VIR_DOMAIN_STATS_BLOCK;
    virDomainStatsRecordPtr *recs = NULL;
    GPtrArray *out;
    int n;

#if LIBVIR_CHECK_VERSION(8, 9, 0)
    if (lv->has_vm_stats)
        types |= VIR_DOMAIN_STATS_VM;
#endif
    n = virConnectGetAllDomainStats(lv->conn, types, &recs,
                                    VIR_CONNECT_GET_ALL_DOMAINS_STATS_ACTIVE);
    if (n < 0) {
        *error = virt_error(PT_LIBVIRT_ERROR_FAILED, "libvirt %s: get domain stats",
                            lv->uri);
        return NULL;
    }
    out = g_ptr_array_new_with_free_func((GDestroyNotify)pt_libvirt_domain_stats_free);
    for (int i = 0; i < n; i++) {
        char uuid[VIR_UUID_STRING_BUFLEN] = "";

        virDomainGetUUIDString(recs[i]->dom, uuid);
        g_ptr_array_add(out, pt_libvirt_stats_from_params(
                                 virDomainGetName(recs[i]->dom), uuid,
                                 recs[i]->params, recs[i]->nparams));
    }
    virDomainStatsRecordListFree(recs);
    return out;
}

static gboolean
worker_set(PtLibvirt *lv, const Job *job, GError **error)
{
    virDomainPtr dom;
    virTypedParameterPtr params = NULL;
    int nparams = 0, maxparams = 0, rc;
    g_autofree char *name = NULL;

    dom = virDomainLookupByUUIDString(lv->conn, job->uuid);
    if (!dom) {
        *error = virt_error(PT_LIBVIRT_ERROR_FAILED, "domain %s: lookup", job->uuid);
        return FALSE;
    }
    /* Every libvirt call clears the last error: take the name first. */
    name = g_strdup(virDomainGetName(dom));
    if (virTypedParamsAddULLong(&params, &nparams, &maxparams,
                                VIR_DOMAIN_IOTHREAD_POLL_MAX_NS, job->poll_max_ns) < 0 ||
        virTypedParamsAddUInt(&params, &nparams, &maxparams,
                              VIR_DOMAIN_IOTHREAD_POLL_GROW, job->poll_grow) < 0 ||
        virTypedParamsAddUInt(&params, &nparams, &maxparams,
                              VIR_DOMAIN_IOTHREAD_POLL_SHRINK, job->poll_shrink) < 0)
        rc = -1;
    else
        rc = virDomainSetIOThreadParams(dom, job->iothread, params, nparams,
                                        VIR_DOMAIN_AFFECT_LIVE);
    if (rc < 0)
        *error = virt_error(PT_LIBVIRT_ERROR_FAILED,
                            "domain %s/iothread%u: set poll-max-ns=%" G_GUINT64_FORMAT
                            " poll-grow=%u poll-shrink=%u",
                            name, job->iothread, job->poll_max_ns,
                            job->poll_grow, job->poll_shrink);
    virTypedParamsFree(params, nparams);
    virDomainFree(dom);
    return rc == 0;
}

static void
worker_run(PtLibvirt *lv, Job *job)
{
    GError *error = NULL;
    gpointer result = NULL;
    GDestroyNotify result_free = (GDestroyNotify)g_ptr_array_unref;

    if (g_atomic_int_get(&job->done))
        return;     /* its deadline passed while it queued */
    if (g_cancellable_is_cancelled(g_task_get_cancellable(job->task))) {
        job_return(job, NULL, NULL,
                   g_error_new_literal(G_IO_ERROR, G_IO_ERROR_CANCELLED,
                                       "Operation was cancelled"));
        return;
    }
    if (!lv->conn) {
        job_return(job, NULL, NULL,
                   g_error_new(PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED,
                               "libvirt %s: %s: not connected", lv->uri, job_what(job)));
        return;
    }
    switch (job->kind) {
    case JOB_LIST:
        result = worker_list(lv, &error);
        break;
    case JOB_STATS:
        result = worker_stats(lv, &error);
        break;
    case JOB_SET:
        worker_set(lv, job, &error);
        result_free = NULL;
        break;
    default:
        g_assert_not_reached();
    }
    job_return(job, result, result_free, error);
}

static gpointer
worker_main(gpointer data)
{
    PtLibvirt *lv = data;
    guint backoff_ms = BACKOFF_MIN_MS;
    gint64 next_try = 0;
    gboolean reported = FALSE;  /* the caller knows we are disconnected */
    Job *job;

    for (;;) {
        gint64 now = g_get_monotonic_time();

        if (!lv->conn && now >= next_try) {
            g_autoptr(GError) error = NULL;

            if (worker_connect(lv, &error)) {
                backoff_ms = BACKOFF_MIN_MS;
                reported = FALSE;
                notice_simple(lv, NOTICE_CONNECTED, NULL);
            } else {
                /* Say why once, not at every retry. */
                if (!reported)
                    notice_simple(lv, NOTICE_DISCONNECTED, g_steal_pointer(&error));
                reported = TRUE;
                next_try = now + (gint64)backoff_ms * 1000;
                backoff_ms = MIN(backoff_ms * 2, BACKOFF_MAX_MS);
            }
        }
        if (lv->conn)
            job = g_async_queue_pop(lv->jobs);
        else
            job = g_async_queue_timeout_pop(lv->jobs,
                                            MAX(next_try - g_get_monotonic_time(), 1));
        if (!job)
            continue;
        if (job->kind == JOB_QUIT) {
            job_unref(job);
            break;
        }
        if (job->kind == JOB_LOST) {
            if (lv->conn && job->lost_conn == lv->conn) {
                worker_disconnect(lv);
                notice_simple(lv, NOTICE_DISCONNECTED,
                              g_error_new(PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED,
                                          "libvirt %s: connection lost: %s",
                                          lv->uri, close_reason(job->lost_reason)));
                next_try = 0;
                backoff_ms = BACKOFF_MIN_MS;
                reported = TRUE;
            }
        } else {
            worker_run(lv, job);
        }
        job_unref(job);
    }

    worker_disconnect(lv);
    while ((job = g_async_queue_try_pop(lv->jobs))) {
        job_return(job, NULL, NULL,
                   g_error_new(PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_CLOSED,
                               "libvirt %s: %s: connection shut down",
                               lv->uri, job_what(job)));
        job_unref(job);
    }
    return NULL;
}

/* ---- public API ------------------------------------------------------- */

PtLibvirt *
pt_libvirt_new(const char *uri, GMainContext *ctx,
               const PtLibvirtCallbacks *cb, gpointer user_data)
{
    PtLibvirt *lv = g_new0(PtLibvirt, 1);

    lv->uri = g_strdup(uri ? uri : PT_LIBVIRT_DEFAULT_URI);
    lv->pid_dir = g_strdup(PT_LIBVIRT_DEFAULT_PID_DIR);
    lv->timeout_ms = PT_LIBVIRT_DEFAULT_TIMEOUT_MS;
    lv->ctx = ctx ? g_main_context_ref(ctx) : g_main_context_ref_thread_default();
    if (cb)
        lv->cb = *cb;
    lv->user_data = user_data;
    lv->jobs = g_async_queue_new();
    lv->versions = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    lv->lifecycle_id = -1;
    lv->metadata_id = -1;
    lv->blockjob_id = -1;
    g_mutex_init(&lv->lock);
    return lv;
}

void
pt_libvirt_set_pid_dir(PtLibvirt *lv, const char *dir)
{
    g_free(lv->pid_dir);
    lv->pid_dir = g_strdup(dir);
}

void
pt_libvirt_set_timeout(PtLibvirt *lv, guint timeout_ms)
{
    lv->timeout_ms = MAX(timeout_ms, 1);
}

void
pt_libvirt_start(PtLibvirt *lv)
{
    if (lv->worker)
        return;
    pt_libvirt_event_acquire();
    lv->event_held = TRUE;
    lv->worker = g_thread_new("pt-libvirt", worker_main, lv);
}

gboolean
pt_libvirt_is_connected(PtLibvirt *lv)
{
    return lv->connected;
}

const char *
pt_libvirt_get_uri(PtLibvirt *lv)
{
    return lv->uri;
}

void
pt_libvirt_free(PtLibvirt *lv)
{
    GList *pending;

    if (!lv)
        return;
    g_mutex_lock(&lv->lock);
    lv->closing = TRUE;
    pending = g_steal_pointer(&lv->notices);
    g_mutex_unlock(&lv->lock);
    for (GList *l = pending; l; l = l->next) {
        g_source_destroy(l->data);
        g_source_unref(l->data);
    }
    g_list_free(pending);

    if (lv->worker) {
        g_async_queue_push_front(lv->jobs, job_new(JOB_QUIT));
        g_thread_join(g_steal_pointer(&lv->worker));
    }
    g_hash_table_unref(lv->versions);
    if (lv->event_held)
        pt_libvirt_event_release();
    g_async_queue_unref(lv->jobs);
    g_main_context_unref(lv->ctx);
    g_mutex_clear(&lv->lock);
    g_free(lv->uri);
    g_free(lv->pid_dir);
    g_free(lv);
}

void
pt_libvirt_list_async(PtLibvirt *lv, GCancellable *cancellable,
                      GAsyncReadyCallback callback, gpointer user_data)
{
    job_submit(lv, job_new(JOB_LIST), pt_libvirt_list_async, cancellable,
               callback, user_data);
}

GPtrArray *
pt_libvirt_list_finish(PtLibvirt *lv, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(res, NULL), NULL);
    return g_task_propagate_pointer(G_TASK(res), error);
}

void
pt_libvirt_stats_async(PtLibvirt *lv, GCancellable *cancellable,
                       GAsyncReadyCallback callback, gpointer user_data)
{
    job_submit(lv, job_new(JOB_STATS), pt_libvirt_stats_async, cancellable,
               callback, user_data);
}

GPtrArray *
pt_libvirt_stats_finish(PtLibvirt *lv, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(res, NULL), NULL);
    return g_task_propagate_pointer(G_TASK(res), error);
}

void
pt_libvirt_set_iothread_async(PtLibvirt *lv, const char *uuid,
                              guint iothread_id, guint64 poll_max_ns,
                              guint poll_grow, guint poll_shrink,
                              GCancellable *cancellable,
                              GAsyncReadyCallback callback, gpointer user_data)
{
    Job *job = job_new(JOB_SET);

    job->uuid = g_strdup(uuid);
    job->iothread = iothread_id;
    job->poll_max_ns = poll_max_ns;
    job->poll_grow = poll_grow;
    job->poll_shrink = poll_shrink;
    job_submit(lv, job, pt_libvirt_set_iothread_async, cancellable, callback,
               user_data);
}

gboolean
pt_libvirt_set_iothread_finish(PtLibvirt *lv, GAsyncResult *res, GError **error)
{
    g_return_val_if_fail(g_task_is_valid(res, NULL), FALSE);
    return g_task_propagate_boolean(G_TASK(res), error);
}

const PtLibvirtDomain *
pt_libvirt_domains_find(GPtrArray *domains, const char *uuid)
{
    for (guint i = 0; domains && i < domains->len; i++) {
        const PtLibvirtDomain *d = g_ptr_array_index(domains, i);

        if (g_strcmp0(d->uuid, uuid) == 0)
            return d;
    }
    return NULL;
}

const PtLibvirtDomainStats *
pt_libvirt_stats_find(GPtrArray *stats, const char *uuid)
{
    for (guint i = 0; stats && i < stats->len; i++) {
        const PtLibvirtDomainStats *s = g_ptr_array_index(stats, i);

        if (g_strcmp0(s->uuid, uuid) == 0)
            return s;
    }
    return NULL;
}
