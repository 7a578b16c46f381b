/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-derive: snapshots to PolicyCounters, rates by policy-counters.
 *
 * This file decides which counters of two snapshots belong together (same
 * pid, tid, device set, clk_tck, exit source) and gives one tick's increase
 * of each (probe_derive_deltas), which the store keeps as it is and the
 * policy turns into rates; every rate formula is policy_metrics_from_counters' and
 * policy_host_from_counters', the ones the polling simulator uses too.
 */
#include "probe-derive.h"
#include "policy-counters.h"

/* The named members of ProbeIothreadDeltas alias m[] in the table's order. */
G_STATIC_ASSERT(G_STRUCT_OFFSET(ProbeIothreadDeltas, poll_max_ns) ==
                G_STRUCT_OFFSET(ProbeIothreadDeltas, m[METRIC_POLL_MAX_NS]));
G_STATIC_ASSERT(G_STRUCT_OFFSET(ProbeIothreadDeltas, runq_wait_ns) ==
                G_STRUCT_OFFSET(ProbeIothreadDeltas, m[METRIC_RUNQ_WAIT_NS]));
G_STATIC_ASSERT(G_STRUCT_OFFSET(ProbeIothreadDeltas, flush_time_ns) ==
                G_STRUCT_OFFSET(ProbeIothreadDeltas, m[METRIC_FLUSH_TIME_NS]));
G_STATIC_ASSERT(G_STRUCT_OFFSET(ProbeIothreadDeltas, halt_exits) ==
                G_STRUCT_OFFSET(ProbeIothreadDeltas, m[METRIC_HALT_EXITS]));

/*
 * Add cur - prev to *sum (saturating), or FALSE if the counter went
 * backwards.  Sums over devices or threads are rebased to one tick's
 * increase: the sum of several cumulative counters may not fit 64 bits.
 */
static gboolean
delta_add(guint64 prev, guint64 cur, guint64 *sum)
{
    if (cur < prev)
        return FALSE;
    *sum = cur - prev > G_MAXUINT64 - *sum ? G_MAXUINT64 : *sum + (cur - prev);
    return TRUE;
}

static const ProbeDevice *
device_find(const GArray *devices, const char *name)
{
    for (guint i = 0; i < devices->len; i++) {
        const ProbeDevice *d = &g_array_index(devices, ProbeDevice, i);

        if (strcmp(d->name, name) == 0)
            return d;
    }
    return NULL;
}

/* cur - prev as a delta, or METRIC_ABSENT when it went backwards or
 * does not fit. */
static gint64
delta_one(guint64 prev, guint64 cur)
{
    return cur >= prev && cur - prev <= (guint64)G_MAXINT64 ?
        (gint64)(cur - prev) : METRIC_ABSENT;
}

/* A saturated sum of one tick's increases as a delta. */
static gint64
delta_of_sum(guint64 sum)
{
    return (gint64)MIN(sum, (guint64)G_MAXINT64);
}

/* The I/O group: only over the same set of devices, none going backwards. */
static void
deltas_io(const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
          ProbeIothreadDeltas *d)
{
    ProbeBlockCounters s = { 0 };
    guint64 dev_ops[POLICY_MAX_DEVICES] = { 0 };

    if (!a->have_block || !b->have_block || a->devices->len != b->devices->len)
        return;
    for (guint i = 0; i < b->devices->len; i++) {
        const ProbeDevice *db = &g_array_index(b->devices, ProbeDevice, i);
        const ProbeDevice *da = device_find(a->devices, db->name);
        const ProbeBlockCounters *p, *c;

        if (!da)
            return;
        p = &da->c;
        c = &db->c;
        if (!delta_add(p->rd_ops, c->rd_ops, &s.rd_ops) ||
            !delta_add(p->wr_ops, c->wr_ops, &s.wr_ops) ||
            !delta_add(p->flush_ops, c->flush_ops, &s.flush_ops) ||
            !delta_add(p->rd_bytes, c->rd_bytes, &s.rd_bytes) ||
            !delta_add(p->wr_bytes, c->wr_bytes, &s.wr_bytes) ||
            !delta_add(p->rd_time_ns, c->rd_time_ns, &s.rd_time_ns) ||
            !delta_add(p->wr_time_ns, c->wr_time_ns, &s.wr_time_ns) ||
            !delta_add(p->flush_time_ns, c->flush_time_ns, &s.flush_time_ns))
            return;
        if (i < POLICY_MAX_DEVICES) {
            delta_add(p->rd_ops, c->rd_ops, &dev_ops[i]);
            delta_add(p->wr_ops, c->wr_ops, &dev_ops[i]);
            delta_add(p->flush_ops, c->flush_ops, &dev_ops[i]);
        }
    }
    d->have_io = TRUE;
    if (b->devices->len <= POLICY_MAX_DEVICES) {
        d->n_devices = b->devices->len;
        for (guint i = 0; i < d->n_devices; i++)
            d->dev_ops[i] = delta_of_sum(dev_ops[i]);
    }
    d->rd_ops = delta_of_sum(s.rd_ops);
    d->wr_ops = delta_of_sum(s.wr_ops);
    d->flush_ops = delta_of_sum(s.flush_ops);
    d->rd_bytes = delta_of_sum(s.rd_bytes);
    d->wr_bytes = delta_of_sum(s.wr_bytes);
    d->rd_time_ns = delta_of_sum(s.rd_time_ns);
    d->wr_time_ns = delta_of_sum(s.wr_time_ns);
    d->flush_time_ns = delta_of_sum(s.flush_time_ns);
}

/* utime+stime in ns, floor(ticks * 1e9 / hz) without overflowing early. */
static gboolean
ticks_ns(const ProbeThreadCounters *t, guint64 hz, guint64 *ns)
{
    guint64 ticks = t->utime_ticks + t->stime_ticks;

    if (ticks < t->utime_ticks || ticks / hz > G_MAXUINT64 / 1000000000 - 1)
        return FALSE;
    *ns = ticks / hz * 1000000000 + ticks % hz * 1000000000 / hz;
    return TRUE;
}

/*
 * The CPU group: only for the same tid.  CPU time is schedstat's run time
 * when both snapshots have it, else utime+stime, and then only when both
 * snapshots count ticks at the same clk_tck (the run-queue wait is unknown).
 */
static void
deltas_cpu(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
           const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
           ProbeIothreadDeltas *d)
{
    const ProbeThreadCounters *p = &a->thread, *c = &b->thread;
    guint64 pns, cns;

    if (!a->have_thread || !b->have_thread || a->tid != b->tid)
        return;
    if (p->have_schedstat && c->have_schedstat) {
        d->have_schedstat = TRUE;
        d->cpu_ns = delta_one(p->run_ns, c->run_ns);
        d->runq_wait_ns = delta_one(p->wait_ns, c->wait_ns);
    } else if (cur->clk_tck != 0 && prev->clk_tck == cur->clk_tck &&
               /* Each of utime and stime is a counter: neither may go back. */
               c->utime_ticks >= p->utime_ticks && c->stime_ticks >= p->stime_ticks &&
               ticks_ns(p, cur->clk_tck, &pns) && ticks_ns(c, cur->clk_tck, &cns)) {
        d->cpu_ns = delta_one(pns, cns);
    }
    d->ctx_vol = delta_one(p->ctx_vol, c->ctx_vol);
    d->ctx_invol = delta_one(p->ctx_invol, c->ctx_invol);
}

/* The exits group: never subtract one source's count from another's. */
static void
deltas_exits(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
             ProbeIothreadDeltas *d)
{
    const ProbeExitCounters *p = &prev->exits, *c = &cur->exits;

    if (c->source == PROBE_EXIT_SOURCE_NONE || p->source != c->source)
        return;
    for (int k = 0; k < PROBE_EXIT_COUNTER_MAX; k++) {
        if (probe_exit_counters_has(p, k) && probe_exit_counters_has(c, k))
            d->exits[k] = delta_one(p->v[k], c->v[k]);
    }
    d->kvm_exits = d->exits[PROBE_EXIT_EXITS];
    d->io_exits = d->exits[PROBE_EXIT_IO_EXITS];
    d->mmio_exits = d->exits[PROBE_EXIT_MMIO_EXITS];
    d->halt_exits = d->exits[PROBE_EXIT_HALT_EXITS];
}

/* The gauges of the table as read in @b: no pairing, no subtraction. */
static void
deltas_gauges(const ProbeIothreadSnap *b, ProbeIothreadDeltas *d)
{
    for (int i = 0; i < METRIC_MAX; i++)
        if (metric_def(i)->reset == METRIC_RESET_GAUGE && b->have_gauge[i])
            d->m[i] = (gint64)MIN(b->gauge[i], (guint64)G_MAXINT64);
}

static void
deltas_init(ProbeIothreadDeltas *d)
{
    *d = (ProbeIothreadDeltas){ 0 };
    for (int i = 0; i < METRIC_MAX; i++)
        d->m[i] = METRIC_ABSENT;
    for (int k = 0; k < PROBE_EXIT_COUNTER_MAX; k++)
        d->exits[k] = METRIC_ABSENT;
}

gboolean
probe_derive_deltas(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                    const char *id, ProbeIothreadDeltas *d)
{
    const ProbeIothreadSnap *a, *b;

    deltas_init(d);
    d->mono_ns = cur->mono_ns;
    d->when_ms = cur->when_ms;
    b = probe_target_snap_find(cur, id);
    if (b)
        deltas_gauges(b, d);
    if (!b || !prev || prev->pid != cur->pid || cur->mono_ns <= prev->mono_ns)
        return FALSE;
    a = probe_target_snap_find(prev, id);
    if (!a)
        return FALSE;
    d->prev_mono_ns = prev->mono_ns;
    d->prev_when_ms = prev->when_ms;
    deltas_io(a, b, d);
    deltas_cpu(prev, cur, a, b, d);
    deltas_exits(prev, cur, d);
    return TRUE;
}

/* A present delta as the increase of a counter that starts at 0. */
static gboolean
delta_counter(gint64 v, guint64 *out)
{
    if (v == METRIC_ABSENT)
        return FALSE;
    *out = (guint64)v;
    return TRUE;
}

gboolean
probe_derive_iothread(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                      const char *id, PolicyMetrics *out)
{
    const ProbeIothreadSnap *b;
    ProbeIothreadDeltas d;
    PolicyCounters pc = { 0 }, cc = { 0 };  /* prev stays zero: cur holds the increase */

    *out = (PolicyMetrics){ .when_ms = cur->when_ms };
    b = probe_target_snap_find(cur, id);
    if (b && b->have_triple)
        out->triple = b->triple;
    /* FALSE also when time did not advance: no rates, @out stays as set. */
    if (!probe_derive_deltas(prev, cur, id, &d))
        return FALSE;

    pc.when_ms = d.prev_when_ms;
    pc.mono_ns = d.prev_mono_ns;
    cc.when_ms = d.when_ms;
    cc.mono_ns = d.mono_ns;
    cc.triple = out->triple;
    pc.have_io = cc.have_io = d.have_io;
    if (d.have_io) {
        cc.rd_ops = (guint64)d.rd_ops;
        cc.wr_ops = (guint64)d.wr_ops;
        cc.flush_ops = (guint64)d.flush_ops;
        cc.rd_bytes = (guint64)d.rd_bytes;
        cc.wr_bytes = (guint64)d.wr_bytes;
        cc.rd_time_ns = (guint64)d.rd_time_ns;
        cc.wr_time_ns = (guint64)d.wr_time_ns;
        cc.flush_time_ns = (guint64)d.flush_time_ns;
        /* Per device, for the objective's fairness; prev is all zeros too. */
        pc.n_devices = cc.n_devices = d.n_devices;
        for (guint i = 0; i < d.n_devices; i++)
            cc.dev_ops[i] = (guint64)d.dev_ops[i];
    }
    /* Without schedstat the run-queue wait is unknown: 0.  With it, a wait
     * that went backwards leaves the whole CPU group out. */
    pc.have_cpu = cc.have_cpu =
        (!d.have_schedstat || delta_counter(d.runq_wait_ns, &cc.runq_wait_ns)) &&
        delta_counter(d.cpu_ns, &cc.cpu_ns) &&
        delta_counter(d.ctx_vol, &cc.ctx_vol) &&
        delta_counter(d.ctx_invol, &cc.ctx_invol);
    pc.have_exits = cc.have_exits = delta_counter(d.exits[PROBE_EXIT_EXITS], &cc.exits);
    if (!policy_metrics_from_counters(&pc, &cc, out, NULL))
        return FALSE;
    if (out->have_io && b->group_size > 1)
        out->io_shared_by = b->group_size;
    return out->have_io || out->have_cpu || out->have_exits;
}

static const ProbeVcpuWait *
vcpu_find(const GArray *vcpus, int pid, int tid)
{
    for (guint i = 0; i < vcpus->len; i++) {
        const ProbeVcpuWait *w = &g_array_index(vcpus, ProbeVcpuWait, i);

        if (w->pid == pid && w->tid == tid)
            return w;
    }
    return NULL;
}

static void
host_counters(const ProbeHostSnap *s, PolicyHostCounters *hc)
{
    hc->when_ms = s->when_ms;
    hc->mono_ns = s->mono_ns;
    hc->have_psi = s->have_psi;
    hc->psi_some_avg10 = s->psi.some_avg10;
    hc->psi_full_avg10 = s->psi.have_full ? s->psi.full_avg10 : 0;
    hc->psi_some_total_us = s->psi.some_total_us;
    hc->have_stat = s->have_stat;
    if (s->have_stat) {
        hc->n_cpus = s->stat.n_cpus;
        hc->cpu_busy = s->stat.busy_ticks;
        hc->cpu_total = s->stat.total_ticks;
    }
}

gboolean
probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                  PolicyHost *out)
{
    PolicyHostCounters pc = { 0 }, cc = { 0 };
    guint n = 0;

    host_counters(cur, &cc);
    *out = (PolicyHost){ .when_ms = cur->when_ms, .n_cpus = cc.n_cpus };
    if (!prev)
        return FALSE;
    host_counters(prev, &pc);
    /* The vCPU threads present in both: new threads and restarted
     * counters join at the next tick. */
    for (guint i = 0; i < cur->vcpus->len; i++) {
        const ProbeVcpuWait *c = &g_array_index(cur->vcpus, ProbeVcpuWait, i);
        const ProbeVcpuWait *p = vcpu_find(prev->vcpus, c->pid, c->tid);

        if (p && delta_add(p->wait_ns, c->wait_ns, &cc.vcpu_run_delay_ns))
            n++;
    }
    pc.have_vcpu_delay = cc.have_vcpu_delay = n > 0;
    pc.n_vcpus = cc.n_vcpus = n;
    if (!policy_host_from_counters(&pc, &cc, out, NULL))
        return FALSE;
    return out->have_psi || out->have_stat || out->have_vcpu_delay;
}
