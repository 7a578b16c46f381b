/*
 * probe-derive: snapshots to PolicyCounters, rates by policy-counters.
 *
 * This file decides which counters of two snapshots belong together (same
 * pid, tid, device set, exit source) and lays them out as a prev/cur pair of
 * PolicyCounters; every rate formula is policy_metrics_from_counters' and
 * policy_host_from_counters', the ones the polling simulator uses too.
 */
#include "probe-derive.h"
#include "policy-counters.h"

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

/* The I/O group: only over the same set of devices, none going backwards. */
static void
counters_io(const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
            PolicyCounters *pc, PolicyCounters *cc)
{
    PolicyCounters s = { 0 };

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
            !delta_add(p->rd_time_ns, c->rd_time_ns, &s.rd_total_ns) ||
            !delta_add(p->wr_time_ns, c->wr_time_ns, &s.wr_total_ns) ||
            !delta_add(p->flush_time_ns, c->flush_time_ns, &s.flush_total_ns))
            return;
    }
    pc->have_io = TRUE;     /* prev stays zero: cur holds the increase */
    cc->have_io = TRUE;
    cc->rd_ops = s.rd_ops;
    cc->wr_ops = s.wr_ops;
    cc->flush_ops = s.flush_ops;
    cc->rd_bytes = s.rd_bytes;
    cc->wr_bytes = s.wr_bytes;
    cc->rd_total_ns = s.rd_total_ns;
    cc->wr_total_ns = s.wr_total_ns;
    cc->flush_total_ns = s.flush_total_ns;
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
 * when both snapshots have it, else utime+stime (whose run-queue wait is
 * unknown: 0 on both sides).
 */
static void
counters_cpu(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
             const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
             PolicyCounters *pc, PolicyCounters *cc)
{
    const ProbeThreadCounters *p = &a->thread, *c = &b->thread;

    if (!a->have_thread || !b->have_thread || a->tid != b->tid)
        return;
    if (p->have_schedstat && c->have_schedstat) {
        pc->cpu_ns = p->run_ns;
        cc->cpu_ns = c->run_ns;
        pc->run_delay_ns = p->wait_ns;
        cc->run_delay_ns = c->wait_ns;
    } else {
        /* Each of utime and stime is a counter: neither may go back. */
        if (cur->clk_tck == 0 || prev->clk_tck != cur->clk_tck ||
            c->utime_ticks < p->utime_ticks || c->stime_ticks < p->stime_ticks ||
            !ticks_ns(p, cur->clk_tck, &pc->cpu_ns) ||
            !ticks_ns(c, cur->clk_tck, &cc->cpu_ns))
            return;
    }
    pc->vol_ctxsw = p->vcsw;
    cc->vol_ctxsw = c->vcsw;
    pc->nonvol_ctxsw = p->nvcsw;
    cc->nonvol_ctxsw = c->nvcsw;
    pc->have_cpu = TRUE;
    cc->have_cpu = TRUE;
}

/* The exits group: never subtract one source's count from another's. */
static void
counters_exits(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
               PolicyCounters *pc, PolicyCounters *cc)
{
    const ProbeExitCounters *p = &prev->exits, *c = &cur->exits;

    if (c->source == PROBE_EXIT_SOURCE_NONE || p->source != c->source ||
        !probe_exit_counters_has(p, PROBE_EXIT_EXITS) ||
        !probe_exit_counters_has(c, PROBE_EXIT_EXITS))
        return;
    pc->have_exits = TRUE;
    cc->have_exits = TRUE;
    pc->exits = p->v[PROBE_EXIT_EXITS];
    cc->exits = c->v[PROBE_EXIT_EXITS];
}

gboolean
probe_derive_iothread(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                      const char *id, PolicyMetrics *out)
{
    const ProbeIothreadSnap *a, *b;
    PolicyCounters pc = { 0 }, cc = { 0 };

    *out = (PolicyMetrics){ .when_ms = cur->when_ms };
    b = probe_target_snap_find(cur, id);
    if (b && b->have_triple)
        out->triple = b->triple;
    if (!b || !prev || prev->pid != cur->pid)
        return FALSE;
    a = probe_target_snap_find(prev, id);
    if (!a)
        return FALSE;

    pc.when_ms = prev->when_ms;
    pc.mono_ns = prev->mono_ns;
    cc.when_ms = cur->when_ms;
    cc.mono_ns = cur->mono_ns;
    cc.triple = out->triple;
    counters_io(a, b, &pc, &cc);
    counters_cpu(prev, cur, a, b, &pc, &cc);
    counters_exits(prev, cur, &pc, &cc);
    /* FALSE only when time did not advance: no rates, @out stays as set. */
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
