/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-tick: the tick that pt-daemon-tick.h describes.  The state it
 * alone keeps, its timer, the samples it waits for and the host's
 * snapshots, is PtTick (pt-tick-private.h).
 */
#include "pt-daemon-tick.h"
#include "pt-tick-private.h"
#include "pt-daemon-private.h"
#include "pt-daemon-attach.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-record.h"
#include "pt-daemon-step.h"
#include "pt-daemon-targets.h"
#include "pt-history.h"
#include "pt-log.h"
#include "probe-derive.h"

#define PT_TICK_RING 600

static gboolean pt_daemon_tick(gpointer data);

void
pt_daemon_tick_every(PtDaemon *d, guint interval_ms)
{
    g_clear_handle_id(&d->tick->timer, g_source_remove);
    d->tick->timer = g_timeout_add(interval_ms, pt_daemon_tick, d);
}

void
pt_daemon_tick_stop(PtDaemon *d)
{
    g_clear_handle_id(&d->tick->timer, g_source_remove);
}

typedef struct {
    PtTarget *t;
    ProbeTargetSnap *snap;
} PtTickResult;

static void
pt_tick_result_free(PtTickResult *r)
{
    pt_target_unref(r->t);
    probe_target_snap_free(r->snap);
    g_free(r);
}

static void pt_daemon_tick_end(PtDaemon *d);

static void
pt_daemon_log_news(PtTarget *t)
{
    for (guint i = 0; i < t->news->len; i++)
        pt_info(t->name, NULL, "%s", (char *)t->news->pdata[i]);
    g_ptr_array_set_size(t->news, 0);
}

typedef struct {
    PtDaemon *d;
    guint64 tick;
} PtSampleCtx;

static void
pt_daemon_on_sample(PtTarget *t, ProbeTargetSnap *snap, const GError *error, gpointer data)
{
    PtSampleCtx *ctx = data;
    PtDaemon *d = ctx->d;
    /* A detached target's daemon may be gone: look at it first. */
    gboolean current = !t->detached && d->tick->running && ctx->tick == d->tick->id;

    g_free(ctx);
    if (!current) {
        /* A late failure: the target is lost and says so itself; its
         * next attach starts a fresh count of late ticks. */
        if (error && !t->detached)
            t->late_ticks = 0;
        probe_target_snap_free(snap);
        return;
    }
    /* A peer that answers, but never usefully (wrong shapes, errors), must
     * not look attached: it is lost with the reason, and a QMP target is
     * reconnected from scratch after its backoff. */
    pt_target_sample_result(t, error, g_get_monotonic_time());
    /* In time again; a failure says so through the target's health. */
    if (t->late_ticks && !error)
        pt_info(t->name, NULL, "sample back within its tick after %u late tick%s",
                t->late_ticks, t->late_ticks == 1 ? "" : "s");
    t->late_ticks = 0;
    if (error) {
        pt_debug(t->name, NULL, "sample: %s", error->message);
    } else {
        PtTickResult *r = g_new0(PtTickResult, 1);

        r->t = pt_target_ref(t);
        r->snap = snap;
        g_ptr_array_add(d->tick->results, r);
    }
    if (--d->tick->pending == 0)
        pt_daemon_tick_end(d);
}

/* The share of the interval a tick waits for its samples. */
static guint
pt_daemon_tick_wait_ms(const PtDaemon *d)
{
    return MAX(d->conf->interval_ms * 8 / 10, 50);
}

/*
 * @t gives no sample this tick: its answer missed the tick's deadline
 * (@at_deadline), or the sample of an earlier tick is still out, so none
 * was started.  The VM is named, so that one never tuned because its QEMU
 * or libvirtd answers too slowly is not only a counter: at its first late
 * tick, then at the 2nd, 4th, 8th... in a row, so that a VM late for hours
 * writes a few dozen lines, not one a tick.
 */
static void
pt_daemon_late(PtDaemon *d, PtTarget *t, gboolean at_deadline)
{
    guint n = ++t->late_ticks;

    if (n & (n - 1))
        return;
    if (at_deadline)
        pt_warn(t->name, NULL, "no sample this tick: the answer was not back within %u ms "
                "(%u tick%s in a row); its iothreads are not tuned until one is",
                pt_daemon_tick_wait_ms(d), n, n == 1 ? "" : "s");
    else
        pt_warn(t->name, NULL, "no sample this tick: still waiting for the one sent %.1f s "
                "ago (%u tick%s in a row); its iothreads are not tuned until one is",
                (g_get_monotonic_time() - t->sample_start_us) / 1e6, n, n == 1 ? "" : "s");
}

/* The tick's deadline: it goes on without the samples still out, whose
 * answers will be dropped. */
static gboolean
pt_daemon_tick_deadline(gpointer data)
{
    PtDaemon *d = data;
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);

    d->tick->deadline = 0;
    d->stats.late_targets += d->tick->pending;
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        if (t->sampling && t->sample_tick == d->tick->id)
            pt_daemon_late(d, t, TRUE);
    }
    pt_daemon_tick_end(d);
    return G_SOURCE_REMOVE;
}

static gboolean
pt_daemon_tick(gpointer data)
{
    PtDaemon *d = data;
    g_autoptr(GPtrArray) targets = NULL;

    if (d->tick->running) {
        d->stats.overruns++;
        pt_warn(NULL, NULL, "tick %" G_GUINT64_FORMAT " still running after %u ms; skipping one",
                d->tick->id, d->conf->interval_ms);
        return G_SOURCE_CONTINUE;
    }
    d->tick->running = TRUE;
    d->tick->id++;
    d->tick->start_us = g_get_monotonic_time();
    d->tick->mono_ns = d->tick->start_us * 1000;
    d->tick->now_ms = g_get_real_time() / 1000;
    d->tick->results = g_ptr_array_new_with_free_func((GDestroyNotify)pt_tick_result_free);

    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        if (pt_target_kinds[k]->discover)
            pt_target_kinds[k]->discover(d);
    d->tick->host_now = probe_host_snap_new(d->tick->mono_ns, d->tick->now_ms);
    probe_host_sampler_sample(d->tick->host, d->tick->host_now);

    targets = pt_daemon_list_targets(d);
    d->tick->pending = 1;        /* held while samples start */
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        PtSampleCtx *ctx;

        pt_target_retry(t);
        if (t->refused) {
            /* May free @t. */
            pt_warn(t->name, NULL, "dropped: %s", t->refused);
            pt_daemon_drop_target(d, t, NULL);
            continue;
        }
        if (t->gone_pending) {
            /* May free @t: nothing of it is used after. */
            t->gone_pending = FALSE;
            pt_daemon_target_gone(d, t);
            continue;
        }
        pt_target_health_tick(t, d->tick->start_us);
        pt_daemon_log_news(t);
        pt_daemon_check_name(d, t);
        if (t->state != PT_TARGET_ATTACHED)
            continue;
        if (t->sampling) {
            pt_daemon_late(d, t, FALSE);
            continue;
        }
        if (t->probe)
            probe_target_sample_vcpus(t->probe, d->tick->host_now);
        ctx = g_new0(PtSampleCtx, 1);
        ctx->d = d;
        ctx->tick = d->tick->id;
        t->sample_tick = d->tick->id;
        d->tick->pending++;
        pt_target_sample(t, d->tick->mono_ns, d->tick->now_ms, pt_daemon_on_sample, ctx);
    }
    if (--d->tick->pending == 0)
        pt_daemon_tick_end(d);
    else if (d->tick->running)
        d->tick->deadline = g_timeout_add(pt_daemon_tick_wait_ms(d), pt_daemon_tick_deadline, d);
    return G_SOURCE_CONTINUE;
}

/* The tick's length as its stored row has it; 0 for the first tick, the
 * baseline of every counter, which is not written. */
static gint64
pt_daemon_tick_len_ns(const PtDaemon *d)
{
    return d->tick->host_prev ? d->tick->mono_ns - d->tick->host_prev->mono_ns : 0;
}

/* Metrics and store rows for one target's fresh snapshot. */
static void
pt_daemon_absorb(PtDaemon *d, PtTarget *t, ProbeTargetSnap *snap, GArray *samples)
{
    GHashTableIter it;
    gpointer v;
    gboolean exits_counted = FALSE;

    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        ((PtIothread *)v)->seen = FALSE;

    for (guint i = 0; i < snap->iothreads->len; i++) {
        ProbeIothreadSnap *ios = snap->iothreads->pdata[i];
        PtIothread *io = pt_target_iothread(t, ios->id);
        PolicyDelta delta;
        PolicyMetrics m;
        PolicyGainTick gt;
        StoreSample s;

        io->seen = TRUE;
        if (ios->have_triple) {
            pt_daemon_note_read(d, t, io, &ios->triple, snap->mono_ns / 1000);
            io->triple = ios->triple;
            io->have_triple = TRUE;
            /* A sample begun after our last write completed reads it back. */
            if (io->write_verify && snap->mono_ns / 1000 > io->write_done_us)
                pt_daemon_verify_write(d, t, io);
            if (!io->have_original)
                pt_daemon_capture_original(d, t, io);
            else if (!io->original_saved)
                pt_daemon_save_original(d, t, io);
        }
        if (g_strcmp0(io->group, ios->group) != 0) {
            if (ios->group)
                pt_info(t->name, io->id, "tuned with group %s: %u iothreads share devices",
                        ios->group, ios->group_size);
            else
                pt_info(t->name, io->id, "tuned on its own: it shares no device");
            g_free(io->group);
            io->group = g_strdup(ios->group);
        }
        io->group_size = ios->group_size;
        /* One delta per iothread per tick: the policy's rates and the
         * store's row both read it. */
        probe_derive_delta(t->prev, snap, ios->id, &delta);
        policy_metrics_from_delta(&delta, &m);
        pt_iothread_push_metrics(io, &m);
        /* The gains are charged on the row as it is stored (its time
         * and length are the tick's), so that a report replaying the
         * store charges what these counters did. */
        if (pt_daemon_tick_len_ns(d) > 0) {
            policy_gain_tick_from_vec(&delta.v, d->tick->now_ms, pt_daemon_tick_len_ns(d), &gt);
            policy_gain_tick(io->gain, &gt);
        }
        pt_history_sample(&delta, &s);
        s.target = t->name;
        s.target_name = pt_target_display(t);
        s.iothread = io->id;
        g_array_append_val(samples, s);
        pt_iothread_totals_add(&io->totals, &s);
        /* Exits are the whole VM's, repeated in each iothread's row. */
        if (!exits_counted && s.m.v[METRIC_KVM_EXITS] != METRIC_ABSENT) {
            t->exits_total += s.m.v[METRIC_KVM_EXITS];
            t->have_exits_total = TRUE;
            exits_counted = TRUE;
        }
    }
    /* Iothreads that went away (object-del) leave with their state. */
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (!((PtIothread *)v)->seen)
            g_hash_table_iter_remove(&it);
}

static gint
pt_double_cmp(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void
pt_daemon_record_tick_time(PtDaemon *d, gint64 work_start_us)
{
    gint64 now = g_get_monotonic_time();
    double ms = (now - d->tick->start_us) / 1000.0;
    g_autoptr(GArray) sorted = NULL;
    guint b = 0;

    d->stats.last_tick_ms = ms;
    d->stats.last_wait_ms = (work_start_us - d->tick->start_us) / 1000.0;
    d->stats.last_work_ms = (now - work_start_us) / 1000.0;
    d->stats.wait_s_total += d->stats.last_wait_ms / 1000.0;
    d->stats.work_s_total += d->stats.last_work_ms / 1000.0;
    while (b < PT_TICK_BUCKETS && ms / 1000.0 > pt_tick_bucket_le[b])
        b++;
    d->stats.tick_hist[b]++;
    d->stats.tick_s_sum += ms / 1000.0;
    if (d->tick->durations_ms->len >= PT_TICK_RING)
        g_array_remove_index(d->tick->durations_ms, 0);
    g_array_append_val(d->tick->durations_ms, ms);
    sorted = g_array_copy(d->tick->durations_ms);
    g_array_sort(sorted, (GCompareFunc)pt_double_cmp);
    d->stats.tick_ms_p50 = g_array_index(sorted, double, sorted->len / 2);
    d->stats.tick_ms_p99 = g_array_index(sorted, double, MIN(sorted->len - 1,
                                                             sorted->len * 99 / 100));
    if (ms > d->conf->interval_ms) {
        d->stats.overruns++;
        pt_warn(NULL, NULL, "tick took %.0f ms, longer than the %u ms interval "
                "(%.0f ms waiting for targets)", ms, d->conf->interval_ms,
                d->stats.last_wait_ms);
    }
}

static void
pt_daemon_write_store(PtDaemon *d, GArray *samples)
{
    g_autoptr(GError) err = NULL;
    StoreTick tick;

    store_tick_init(&tick);
    tick.ts_ms = d->tick->now_ms;
    tick.len_ns = pt_daemon_tick_len_ns(d);
    pt_history_psi(&d->tick->host_delta, &tick.psi);
    pt_history_host_cpu(&d->tick->host_delta, &tick.cpu);
    tick.samples = (const StoreSample *)samples->data;
    tick.n_samples = samples->len;
    /* The first tick is the baseline of every counter: nothing to write. */
    if (tick.len_ns > 0 && samples->len && !store_tick_write(d->store, &tick, &err)) {
        d->stats.store_errors++;
        pt_err(NULL, NULL, "store: %s", err->message);
    }
    pt_daemon_store_notices(d);
}

static void
pt_daemon_maintain(PtDaemon *d)
{
    g_autoptr(GError) err = NULL;
    gboolean more = FALSE;

    /* A small slice per tick keeps every tick short; rollups of a busy
     * hour catch up over a few ticks. */
    if (!store_maintain_step(d->store, d->tick->now_ms, 10, &more, &err))
        pt_warn(NULL, NULL, "store maintenance: %s", err->message);
}

static void
pt_daemon_tick_end(PtDaemon *d)
{
    g_autoptr(GArray) samples = g_array_new(FALSE, TRUE, sizeof(StoreSample));
    g_autoptr(GPtrArray) results = g_steal_pointer(&d->tick->results);
    g_autoptr(GPtrArray) sampled = g_ptr_array_new();
    gint64 work_start_us = g_get_monotonic_time();

    g_clear_handle_id(&d->tick->deadline, g_source_remove);
    d->tick->running = FALSE;

    /* One host delta per tick: the store's host rows and the policy's
     * host rates read it. */
    probe_derive_host_from_delta(&d->tick->host_delta,
                                 probe_derive_host_delta(d->tick->host_prev, d->tick->host_now,
                                                         &d->tick->host_delta),
                                 &d->tick->host_metrics);
    for (guint i = 0; i < results->len; i++) {
        PtTickResult *r = results->pdata[i];

        pt_daemon_absorb(d, r->t, r->snap, samples);
        g_ptr_array_add(sampled, r->t);
        probe_target_snap_free(r->t->prev);
        r->t->prev = g_steal_pointer(&r->snap);
    }
    pt_daemon_write_store(d, samples);
    probe_host_snap_free(d->tick->host_prev);
    d->tick->host_prev = g_steal_pointer(&d->tick->host_now);

    /* A new file without the originals in it: the policy waits a tick. */
    if (pt_daemon_originals_on_disk(d))
        pt_daemon_run_policy(d, sampled);
    pt_daemon_maintain(d);
    d->stats.ticks++;
    pt_daemon_record_tick_time(d, work_start_us);
}
