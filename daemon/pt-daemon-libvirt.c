/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * libvirt-managed targets.
 *
 * Every running domain of the configured libvirt URI becomes a target.
 * Discovery follows the connection: each time it comes up the daemon lists
 * the running domains (events missed while it was down are not replayed),
 * and lifecycle events attach and detach domains as they start and stop.
 *
 * Sampling goes through libvirt, never around it: one
 * virConnectGetAllDomainStats per tick serves every libvirt target (the
 * first target to ask issues it, the others of the same tick wait for it),
 * and writes use virDomainSetIOThreadParams so libvirt's own view stays
 * true.  QEMU names libvirt's iothread N "iothreadN", and debug-threads=on
 * names its thread "IO iothreadN", which is how probe/ finds it.
 */
#include "pt-daemon-libvirt.h"
#include "pt-daemon-private.h"
#include "pt-daemon-metadata.h"
#include "pt-daemon-targets.h"
#include "pt-libvirt.h"
#include "pt-log.h"
#include "probe-devmap.h"

struct PtDaemonLibvirt {
    PtDaemon *d;
    PtLibvirt *lv;
    GPtrArray *waiting;             /* PtTarget *: samples waiting for stats */
    gboolean stats_in_flight;
    gboolean listing;
    gboolean relist;                /* a start event came during a listing */
    guint relist_timer;             /* a failed listing's retry */
    guint pending;                  /* async calls not yet completed */
    gboolean stopped;               /* freed by the last completion */
    GHashTable *detached;           /* uuid -> name: detached by request,
                                     * left out of listings until attached */
    GHashTable *held;               /* uuid -> process: its QEMU is a QMP
                                     * target's (pt_lv_held_elsewhere()) */
    guint64 connects;               /* connections made since the start */
};

/*
 * One QEMU is one target: a domain whose QEMU a QMP target reached first
 * (a glob matching its monitor socket, an extra -qmp on its command line)
 * is left to that target, said once per start of the domain.  The QMP
 * side refuses in turn a QEMU a domain target has (pt_daemon_admit()).
 */
static gboolean
pt_lv_held_elsewhere(PtDaemonLibvirt *dl, const PtLibvirtDomain *dom)
{
    g_autofree char *process = pt_instance_for_pid(&dl->d->proot, dom->pid);
    PtTarget *o = pt_daemon_find_process(dl->d, NULL, process);

    if (!o) {
        if (dom->uuid)
            g_hash_table_remove(dl->held, dom->uuid);
        return FALSE;
    }
    if (dom->uuid && !g_strcmp0(g_hash_table_lookup(dl->held, dom->uuid), process))
        return TRUE;
    pt_warn(dom->name, NULL, "not attached: its QEMU (pid %d) is already attached as %s: one "
            "QEMU is one target", (int)dom->pid, o->name);
    if (dom->uuid)
        g_hash_table_replace(dl->held, g_strdup(dom->uuid), g_steal_pointer(&process));
    return TRUE;
}

/* Calls still pending when the daemon stops complete later (with an
 * error); the last one frees what they refer to. */
static gboolean
pt_lv_done(PtDaemonLibvirt *dl)
{
    dl->pending--;
    if (!dl->stopped)
        return TRUE;
    if (dl->pending == 0) {
        g_ptr_array_unref(dl->waiting);
        g_free(dl);
    }
    return FALSE;
}

typedef struct {
    PtTarget parent;
    PtDaemonLibvirt *dl;
    ProbeDevMap *devmap;            /* dev -> "iothreadN"... from the domain XML */
} PtLibvirtTarget;

static const PtTargetOps pt_lv_ops;

static char *
pt_lv_iothread_name(guint id)
{
    return g_strdup_printf("iothread%u", id);
}

/* ---- sampling ---------------------------------------------------------- */

static void
pt_lv_fill(PtTarget *t, ProbeTargetSnap *snap, const PtLibvirtDomainStats *st)
{
    PtLibvirtTarget *lt = (PtLibvirtTarget *)t;
    static const char *const exits[] = { "exits", "io_exits", "mmio_exits", "halt_exits", NULL };
    g_autofree ProbeDevSample *devs = g_new0(ProbeDevSample, MAX(st->disks->len, 1));
    guint n_devs = 0;

    for (guint i = 0; i < st->iothreads->len; i++) {
        const PtLibvirtIothreadStats *is = &g_array_index(st->iothreads, PtLibvirtIothreadStats, i);
        g_autofree char *id = pt_lv_iothread_name(is->id);
        ProbeIothreadSnap *io;
        PolicyTriple tr = { is->poll_max_ns, is->poll_grow, is->poll_shrink };

        if (!pt_target_admit_iothread(t, id, st->iothreads->len))
            continue;
        io = probe_target_snap_iothread(snap, id);
        probe_iothread_snap_set_triple(io, &tr);
        probe_iothread_snap_set_block_read(io);
        io->tid = 0;        /* found by its name */
    }
    for (guint i = 0; i < st->disks->len; i++) {
        const PtLibvirtDiskStats *ds = &g_array_index(st->disks, PtLibvirtDiskStats, i);

        if (!ds->name)
            continue;
        devs[n_devs++] = (ProbeDevSample){
            .device = ds->name,
            .name = ds->name,
            .v = ds->v,
        };
    }
    probe_devmap_fill(lt->devmap, snap, devs, n_devs);
    /* libvirt passes KVM's per-VM stats through as vm.<name>. */
    for (guint i = 0; st->vm && exits[i]; i++) {
        guint64 *v = g_hash_table_lookup(st->vm, exits[i]);
        g_autofree char *sum = g_strconcat(exits[i], ".sum", NULL);

        if (!v)
            v = g_hash_table_lookup(st->vm, sum);
        if (v)
            probe_exit_counters_add_named(&snap->exits, exits[i], *v);
    }
}

typedef struct {
    PtTarget *t;
    ProbeTargetSnap *snap;
} PtLvWait;

static void
pt_lv_got_stats(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtDaemonLibvirt *dl = data;
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) stats = pt_libvirt_stats_finish(NULL, res, &err);
    g_autoptr(GPtrArray) waiting = g_steal_pointer(&dl->waiting);

    dl->waiting = g_ptr_array_new();
    dl->pending++;      /* released below, after the waiters */
    dl->stats_in_flight = FALSE;
    for (guint i = 0; i < waiting->len; i++) {
        PtLvWait *w = waiting->pdata[i];
        PtTarget *t = w->t;
        const PtLibvirtDomainStats *st = stats ? pt_libvirt_stats_find(stats, t->uuid) : NULL;

        if (!stats) {
            pt_target_sample_finish(t, w->snap, g_error_copy(err));
        } else if (!st) {
            pt_target_sample_finish(t, w->snap, g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                                                            "%s: not among running domains",
                                                            t->name));
        } else {
            pt_lv_fill(t, w->snap, st);
            pt_target_sample_host_side(t, w->snap);
            pt_target_sample_finish(t, w->snap, NULL);
        }
        g_free(w);
    }
    pt_lv_done(dl);
    pt_lv_done(dl);
}

static void
pt_lv_sample(PtTarget *t, ProbeTargetSnap *snap)
{
    PtDaemonLibvirt *dl = ((PtLibvirtTarget *)t)->dl;
    PtLvWait *w;

    if (!dl || !dl->lv || !pt_libvirt_is_connected(dl->lv)) {
        pt_target_sample_finish(t, snap, g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                                                     "%s: libvirt is not connected", t->name));
        return;
    }
    w = g_new0(PtLvWait, 1);
    w->t = t;
    w->snap = snap;
    g_ptr_array_add(dl->waiting, w);
    if (!dl->stats_in_flight) {
        dl->stats_in_flight = TRUE;
        dl->pending++;
        pt_libvirt_stats_async(dl->lv, NULL, pt_lv_got_stats, dl);
    }
}

/* ---- applying ---------------------------------------------------------- */

static void
pt_lv_applied(GObject *obj, GAsyncResult *res, gpointer data)
{
    gpointer *ctx = data;
    PtDaemonLibvirt *dl = ctx[0];
    GError *err = NULL;

    pt_libvirt_set_iothread_finish(NULL, res, &err);
    pt_target_apply_finish(ctx[1], err);
    g_free(ctx);
    pt_lv_done(dl);
}

static void
pt_lv_apply(PtTarget *t, const char *iothread, const PolicyTriple *from,
            const PolicyTriple *to, gint64 bound, gpointer job)
{
    PtDaemonLibvirt *dl = ((PtLibvirtTarget *)t)->dl;
    guint64 id;
    gpointer *ctx;

    if (!g_str_has_prefix(iothread, "iothread") ||
        !g_ascii_string_to_unsigned(iothread + strlen("iothread"), 10, 1, G_MAXUINT, &id, NULL)) {
        pt_target_apply_finish(job, g_error_new(G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                                "%s/%s: not a libvirt iothread name",
                                                t->name, iothread));
        return;
    }
    if ((gint64)MIN(to->poll_max_ns, (guint64)G_MAXINT64) > bound ||
        to->poll_grow > G_MAXUINT || to->poll_shrink > G_MAXUINT) {
        pt_target_apply_finish(job, g_error_new(G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                                                "%s/%s: poll-max-ns=%" G_GUINT64_FORMAT
                                                " is above the bound", t->name, iothread,
                                                to->poll_max_ns));
        return;
    }
    if (!dl || !dl->lv) {
        pt_target_apply_finish(job, g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                                                "%s: libvirt is gone", t->name));
        return;
    }
    ctx = g_new(gpointer, 2);
    ctx[0] = dl;
    dl->pending++;
    ctx[1] = job;
    pt_libvirt_set_iothread_async(dl->lv, t->uuid, (guint)id, to->poll_max_ns,
                                  (guint)to->poll_grow, (guint)to->poll_shrink, NULL,
                                  pt_lv_applied, ctx);
}

static void
pt_lv_free(PtTarget *t)
{
    probe_devmap_free(((PtLibvirtTarget *)t)->devmap);
}

static const PtTargetOps pt_lv_ops = {
    .sample = pt_lv_sample,
    .apply = pt_lv_apply,
    .free = pt_lv_free,
};

static void
pt_lv_update(PtDaemonLibvirt *dl, PtTarget *t, const PtLibvirtDomain *dom)
{
    PtLibvirtTarget *lt = (PtLibvirtTarget *)t;

    probe_devmap_clear(lt->devmap);
    for (guint i = 0; i < dom->disks->len; i++) {
        const PtLibvirtDisk *disk = &g_array_index(dom->disks, PtLibvirtDisk, i);
        g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);

        for (guint k = 0; k < disk->iothreads->len; k++)
            g_ptr_array_add(ids, pt_lv_iothread_name(g_array_index(disk->iothreads, guint, k)));
        g_ptr_array_add(ids, NULL);
        probe_devmap_set(lt->devmap, disk->dev, (const char *const *)ids->pdata);
        probe_devmap_set_source(lt->devmap, disk->dev, disk->source);
    }
    if (dom->pid > 0)
        pt_target_set_pid(t, dom->pid, &dl->d->proot);
    t->qemu_version = dom->qemu_version;
    if (dom->qemu_version_error)
        pt_warn(t->name, NULL, "QEMU release unknown, so is its polling model: %s",
                dom->qemu_version_error);
    /* type='qemu' is TCG: no VM exits to count, so none are shown. */
    if (dom->virt_type && !g_str_equal(dom->virt_type, "kvm")) {
        g_autofree char *why = g_strdup_printf("the domain is type='%s', not KVM, so it "
                                               "takes no VM exits", dom->virt_type);

        pt_target_set_exits_facts(t, why, NULL);
    } else {
        pt_target_set_exits_facts(t, NULL, NULL);
    }
    pt_target_set_instance(t, pt_instance_for_domain(&dl->d->proot, dom->uuid, dom->id));
    pt_target_set_state(t, PT_TARGET_ATTACHED, NULL);
}

/* ---- discovery --------------------------------------------------------- */

static void pt_lv_relist(PtDaemonLibvirt *dl);

/* A failed listing is tried again this much later. */
#define RELIST_RETRY_S 2

static gboolean
pt_lv_relist_retry(gpointer data)
{
    PtDaemonLibvirt *dl = data;

    dl->relist_timer = 0;
    pt_lv_relist(dl);
    return G_SOURCE_REMOVE;
}

static void
pt_lv_listed(GObject *obj, GAsyncResult *res, gpointer data)
{
    PtDaemonLibvirt *dl = data;
    PtDaemon *d = dl->d;
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) doms = pt_libvirt_list_finish(NULL, res, &err);
    g_autoptr(GPtrArray) targets = NULL;

    if (!pt_lv_done(dl))
        return;
    dl->listing = FALSE;
    if (!doms) {
        /*
         * Nothing else would list again before the next lifecycle event or
         * reconnection: a listing that timed out once (libvirtd busy
         * probing QEMU) left running domains unmanaged for good.  Not
         * connected, the reconnection lists.
         */
        if (g_error_matches(err, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED)) {
            pt_warn(NULL, NULL, "libvirt: list domains: %s; listing again once reconnected",
                    err->message);
            return;
        }
        pt_warn(NULL, NULL, "libvirt: list domains: %s; listing again in %u s", err->message,
                RELIST_RETRY_S);
        if (!dl->relist_timer)
            dl->relist_timer = g_timeout_add_seconds(RELIST_RETRY_S, pt_lv_relist_retry, dl);
        return;
    }
    for (guint i = 0; i < doms->len; i++) {
        const PtLibvirtDomain *dom = doms->pdata[i];
        PtTarget *t = pt_daemon_find_target(d, dom->name);

        if (!t && dom->uuid && g_hash_table_contains(dl->detached, dom->uuid))
            continue;
        if (t && t->kind != STORE_TARGET_LIBVIRT) {
            pt_warn(dom->name, NULL, "libvirt domain has the name of a QMP target; skipped");
            continue;
        }
        if (!t && pt_lv_held_elsewhere(dl, dom))
            continue;
        pt_daemon_metadata_update(d, dom->name, dom->policy_xml, dom->policy_xml_error);
        if (!t) {
            PtLibvirtTarget *lt = (PtLibvirtTarget *)pt_target_alloc(sizeof(PtLibvirtTarget),
                                                                    &pt_lv_ops, dom->name,
                                                                    STORE_TARGET_LIBVIRT);

            lt->dl = dl;
            lt->devmap = probe_devmap_new();
            t = &lt->parent;
            t->uuid = g_strdup(dom->uuid);
            t->exits_mode = pt_daemon_exits_mode(d->conf);
            pt_daemon_add_target(d, t);
        }
        pt_lv_update(dl, t, dom);
    }
    /* Domains we hold that libvirt no longer runs went away while we were
     * not listening. */
    targets = pt_daemon_list_targets(d);
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        if (t->kind == STORE_TARGET_LIBVIRT && !pt_libvirt_domains_find(doms, t->uuid))
            pt_daemon_remove_target(d, t, "no longer running");
    }
    if (dl->relist) {
        dl->relist = FALSE;
        pt_lv_relist(dl);
    }
}

static void
pt_lv_relist(PtDaemonLibvirt *dl)
{
    if (dl->listing) {
        dl->relist = TRUE;
        return;
    }
    dl->listing = TRUE;
    dl->pending++;
    pt_libvirt_list_async(dl->lv, NULL, pt_lv_listed, dl);
}

static void
pt_lv_connected(PtLibvirt *lv, gpointer data)
{
    PtDaemonLibvirt *dl = data;

    pt_info(NULL, NULL, "libvirt: connected to %s", pt_libvirt_get_uri(lv));
    dl->connects++;
    pt_lv_relist(dl);
}

static void
pt_lv_disconnected(PtLibvirt *lv, const GError *why, gpointer data)
{
    PtDaemonLibvirt *dl = data;
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(dl->d);

    pt_warn(NULL, NULL, "libvirt: %s; reconnecting in the background", why->message);
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        if (t->kind == STORE_TARGET_LIBVIRT)
            pt_target_set_state(t, PT_TARGET_LOST, "libvirt connection lost");
    }
}

static void
pt_lv_started(PtLibvirt *lv, const char *name, const char *uuid, gpointer data)
{
    PtDaemonLibvirt *dl = data;

    /* A detach lasts until the domain next starts. */
    if (uuid && dl->detached)
        g_hash_table_remove(dl->detached, uuid);
    pt_lv_relist(dl);
}

/* The listing reads every domain's metadata, and its disks' sources, again. */
static void
pt_lv_metadata_changed(PtLibvirt *lv, const char *name, const char *uuid, gpointer data)
{
    pt_lv_relist(data);
}

static void
pt_lv_stopped(PtLibvirt *lv, const char *name, const char *uuid, const char *reason,
              gpointer data)
{
    PtDaemonLibvirt *dl = data;
    PtTarget *t = pt_daemon_find_target(dl->d, name);

    if (t && t->kind == STORE_TARGET_LIBVIRT && g_strcmp0(t->uuid, uuid) == 0) {
        g_autofree char *why = g_strdup_printf("domain %s", reason);

        pt_daemon_remove_target(dl->d, t, why);
    }
}

static void
pt_daemon_libvirt_start(PtDaemon *d)
{
    static const PtLibvirtCallbacks cb = {
        .connected = pt_lv_connected,
        .disconnected = pt_lv_disconnected,
        .domain_started = pt_lv_started,
        .domain_stopped = pt_lv_stopped,
        .domain_metadata_changed = pt_lv_metadata_changed,
        .domain_disks_changed = pt_lv_metadata_changed,
    };
    PtDaemonLibvirt *dl;

    if (!d->conf->libvirt)
        return;
    dl = g_new0(PtDaemonLibvirt, 1);
    dl->d = d;
    dl->waiting = g_ptr_array_new();
    dl->detached = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dl->held = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    dl->lv = pt_libvirt_new(d->conf->libvirt_uri, NULL, &cb, dl);
    pt_libvirt_set_timeout(dl->lv, d->conf->qmp_timeout_ms);
    pt_libvirt_set_pid_dir(dl->lv, d->conf->libvirt_pid_dir);
    pt_libvirt_start(dl->lv);
    d->targets.libvirt = dl;
}

static void
pt_daemon_libvirt_stop(PtDaemon *d)
{
    PtDaemonLibvirt *dl = d->targets.libvirt;
    GHashTableIter it;
    gpointer v;

    if (!dl)
        return;
    g_clear_handle_id(&dl->relist_timer, g_source_remove);
    /* Targets outlive this (restore writes hold them): cut them loose. */
    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (((PtTarget *)v)->kind == STORE_TARGET_LIBVIRT)
            ((PtLibvirtTarget *)v)->dl = NULL;
    pt_libvirt_free(dl->lv);
    dl->lv = NULL;
    dl->d = NULL;
    d->targets.libvirt = NULL;
    dl->stopped = TRUE;
    g_clear_pointer(&dl->detached, g_hash_table_unref);
    g_clear_pointer(&dl->held, g_hash_table_unref);
    if (dl->pending == 0) {
        g_ptr_array_unref(dl->waiting);
        g_free(dl);
    }
}

gboolean
pt_daemon_libvirt_connected(PtDaemon *d, gboolean *enabled, guint64 *connects)
{
    PtDaemonLibvirt *dl = d->targets.libvirt;

    *enabled = dl && dl->lv;
    *connects = *enabled ? dl->connects : 0;
    return *enabled && pt_libvirt_is_connected(dl->lv);
}

static void
pt_daemon_libvirt_hold_detached(PtDaemon *d, const PtTarget *t)
{
    PtDaemonLibvirt *dl = d->targets.libvirt;

    if (dl && dl->detached && t->uuid)
        g_hash_table_replace(dl->detached, g_strdup(t->uuid), g_strdup(t->name));
}

gboolean
pt_daemon_attach_libvirt(PtDaemon *d, const char *domain, char **name_out, GError **error)
{
    PtDaemonLibvirt *dl = d->targets.libvirt;
    PtTarget *t = pt_daemon_find_target(d, domain);
    GHashTableIter it;
    gpointer uuid, name;

    if (!dl || !dl->lv) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_SUPPORTED,
                    "%s: not a socket path, and libvirt is off ([targets] libvirt)", domain);
        return FALSE;
    }
    if (t) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS, "%s: already attached", domain);
        return FALSE;
    }
    /* By name or by UUID, among the domains detached by request. */
    g_hash_table_iter_init(&it, dl->detached);
    while (g_hash_table_iter_next(&it, &uuid, &name)) {
        if (g_str_equal(uuid, domain) || g_str_equal(name, domain)) {
            *name_out = g_strdup(name);
            g_hash_table_iter_remove(&it);
            /* The listing attaches it if libvirt still runs it. */
            pt_lv_relist(dl);
            return TRUE;
        }
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                "%s: no libvirt domain of that name or UUID was detached", domain);
    return FALSE;
}

static void
pt_daemon_libvirt_stopping(PtDaemon *d, guint timeout_ms)
{
    if (d->targets.libvirt && d->targets.libvirt->lv)
        pt_libvirt_set_timeout(d->targets.libvirt->lv, timeout_ms);
}

const PtTargetKindOps pt_daemon_libvirt_kind = {
    .start = pt_daemon_libvirt_start,
    /* Domains are learnt from libvirt's lifecycle events and listings. */
    .discover = NULL,
    .hold_detached = pt_daemon_libvirt_hold_detached,
    .stopping = pt_daemon_libvirt_stopping,
    .stop = pt_daemon_libvirt_stop,
};
