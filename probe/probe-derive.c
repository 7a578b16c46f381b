/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-derive: snapshots to one tick's delta, the policy's rates by
 * policy_metrics_from_delta().
 *
 * This file decides which counters of two snapshots belong together (same
 * pid, tid, device set, clk_tck, exit source), lays each side out as the
 * metric table's vector and leaves the subtraction to metric_vec_delta();
 * the store keeps the delta as it is and the policy turns it into rates.
 */
#include "probe-derive.h"
#include "policy-counters.h"

static gint64
sat_add(gint64 a, gint64 b)
{
    return b > G_MAXINT64 - a ? G_MAXINT64 : a + b;
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

/*
 * The block group: only over the same set of devices, each device paired
 * by name, none going backwards; the sum of the devices' deltas into @d.
 */
static void
delta_block(const ProbeIothreadSnap *a, const ProbeIothreadSnap *b, PolicyDelta *d)
{
    MetricVec sum;
    gint64 dev_ops[POLICY_MAX_DEVICES] = { 0 };

    if (!a->have_block || !b->have_block || a->devices->len != b->devices->len)
        return;
    metric_vec_init(&sum);
    metric_vec_zero_source(&sum, METRIC_SOURCE_BLOCK);
    for (guint i = 0; i < b->devices->len; i++) {
        const ProbeDevice *db = &g_array_index(b->devices, ProbeDevice, i);
        const ProbeDevice *da = device_find(a->devices, db->name);
        MetricVec dd;

        if (!da)
            return;
        metric_vec_delta(&da->v, &db->v, METRIC_SOURCE_BIT(METRIC_SOURCE_BLOCK), &dd);
        /* the block counters are present or absent as a group */
        if (!metric_vec_has(&dd, METRIC_RD_OPS))
            return;
        metric_vec_add(&sum, &dd);
        if (i < POLICY_MAX_DEVICES)
            dev_ops[i] = sat_add(sat_add(dd.v[METRIC_RD_OPS], dd.v[METRIC_WR_OPS]),
                                 dd.v[METRIC_FLUSH_OPS]);
    }
    for (int i = 0; i < METRIC_MAX; i++)
        if (metric_def(i)->source == METRIC_SOURCE_BLOCK)
            d->v.v[i] = sum.v[i];
    if (b->devices->len <= POLICY_MAX_DEVICES) {
        d->n_devices = b->devices->len;
        memcpy(d->dev_ops, dev_ops, sizeof(dev_ops));
    }
    if (b->group_size > 1)
        d->io_shared_by = b->group_size;
}

/* utime+stime in ns, floor(ticks * 1e9 / hz) without overflowing early. */
static gboolean
ticks_ns(const MetricVec *t, guint64 hz, guint64 *ns)
{
    guint64 ticks;

    if (!metric_vec_has(t, METRIC_UTIME_TICKS) || !metric_vec_has(t, METRIC_STIME_TICKS))
        return FALSE;
    /* each below 2^63: the sum fits */
    ticks = (guint64)t->v[METRIC_UTIME_TICKS] + (guint64)t->v[METRIC_STIME_TICKS];
    if (ticks / hz > G_MAXUINT64 / 1000000000 - 1)
        return FALSE;
    *ns = ticks / hz * 1000000000 + ticks % hz * 1000000000 / hz;
    return TRUE;
}

/*
 * The thread group of both snapshots into @va, @vb; FALSE when they are not
 * the same thread.  CPU time is schedstat's run time when both snapshots
 * have it, else utime+stime, and then only when both count ticks at the
 * same clk_tck and neither of utime and stime went back (the run-queue
 * wait is then unknown).
 */
static gboolean
thread_vecs(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
            const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
            MetricVec *va, MetricVec *vb)
{
    const MetricVec *p = &a->thread.v, *c = &b->thread.v;
    guint64 pns, cns;

    if (!a->have_thread || !b->have_thread || a->tid != b->tid)
        return FALSE;
    if (probe_thread_counters_have_schedstat(&a->thread) &&
        probe_thread_counters_have_schedstat(&b->thread)) {
        va->v[METRIC_CPU_NS] = p->v[METRIC_CPU_NS];
        vb->v[METRIC_CPU_NS] = c->v[METRIC_CPU_NS];
        va->v[METRIC_RUNQ_WAIT_NS] = p->v[METRIC_RUNQ_WAIT_NS];
        vb->v[METRIC_RUNQ_WAIT_NS] = c->v[METRIC_RUNQ_WAIT_NS];
    } else if (cur->clk_tck != 0 && prev->clk_tck == cur->clk_tck &&
               ticks_ns(p, cur->clk_tck, &pns) && ticks_ns(c, cur->clk_tck, &cns) &&
               c->v[METRIC_UTIME_TICKS] >= p->v[METRIC_UTIME_TICKS] &&
               c->v[METRIC_STIME_TICKS] >= p->v[METRIC_STIME_TICKS]) {
        va->v[METRIC_CPU_NS] = metric_reading(pns);
        vb->v[METRIC_CPU_NS] = metric_reading(cns);
    }
    va->v[METRIC_CTX_VOL] = p->v[METRIC_CTX_VOL];
    vb->v[METRIC_CTX_VOL] = c->v[METRIC_CTX_VOL];
    va->v[METRIC_CTX_INVOL] = p->v[METRIC_CTX_INVOL];
    vb->v[METRIC_CTX_INVOL] = c->v[METRIC_CTX_INVOL];
    return TRUE;
}

/* The exit counters the delta keeps: the table's exit figures. */
static void
exit_vec(const ProbeExitCounters *e, MetricVec *v)
{
    for (int i = 0; i < METRIC_MAX; i++)
        if (metric_def(i)->source == METRIC_SOURCE_EXITS)
            v->v[i] = e->v.v[i];
}

gboolean
probe_derive_delta(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                   const char *id, PolicyDelta *d)
{
    const ProbeIothreadSnap *a, *b;
    MetricVec va, vb;
    guint paired = 0;

    policy_delta_init(d);
    d->when_ms = cur->when_ms;
    b = probe_target_snap_find(cur, id);
    if (b)
        d->v = b->gauges;
    if (!b || !prev || prev->pid != cur->pid || cur->mono_ns <= prev->mono_ns)
        return FALSE;
    a = probe_target_snap_find(prev, id);
    if (!a)
        return FALSE;
    d->len_ns = cur->mono_ns - prev->mono_ns;
    /* The thread and exit groups of both sides, gauges as read in @cur. */
    metric_vec_init(&va);
    vb = b->gauges;
    if (thread_vecs(prev, cur, a, b, &va, &vb))
        paired |= METRIC_SOURCE_BIT(METRIC_SOURCE_THREAD);
    /* never subtract one exit source's count from another's */
    if (cur->exits.source != PROBE_EXIT_SOURCE_NONE &&
        prev->exits.source == cur->exits.source) {
        exit_vec(&prev->exits, &va);
        exit_vec(&cur->exits, &vb);
        paired |= METRIC_SOURCE_BIT(METRIC_SOURCE_EXITS);
    }
    metric_vec_delta(&va, &vb, paired, &d->v);
    delta_block(a, b, d);
    return TRUE;
}

gboolean
probe_derive_iothread(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                      const char *id, PolicyMetrics *out)
{
    PolicyDelta d;

    probe_derive_delta(prev, cur, id, &d);
    return policy_metrics_from_delta(&d, out) &&
           (out->have_io || out->have_cpu || out->have_exits);
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

/* The host's reading as the policy pairs it; the vCPU sum is the delta's
 * own (probe_derive_host_delta()). */
static void
host_counters(const ProbeHostSnap *s, PolicyHostCounters *hc)
{
    policy_host_counters_init(hc);
    hc->when_ms = s->when_ms;
    hc->mono_ns = s->mono_ns;
    if (probe_host_snap_has_psi(s)) {
        hc->psi_some_avg10 = s->psi_some_avg10;
        hc->psi_full_avg10 = s->psi_full_avg10;
    }
    if (probe_host_snap_has_stat(s))
        hc->n_cpus = s->n_cpus;
    hc->v = s->v;
}

gboolean
probe_derive_host_delta(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                        PolicyHostDelta *d)
{
    PolicyHostCounters pc, cc;
    MetricVec sum;
    guint n = 0;

    host_counters(cur, &cc);
    *d = (PolicyHostDelta){ .when_ms = cur->when_ms, .n_cpus = cc.n_cpus };
    metric_vec_init(&d->v);
    if (!prev)
        return FALSE;
    host_counters(prev, &pc);
    if (!policy_host_delta(&pc, &cc, d, NULL))
        return FALSE;
    /* The vCPU threads present in both: new threads and restarted
     * counters join at the next tick.  Each thread's wait is paired on
     * its own, and the sum is of their deltas. */
    metric_vec_init(&sum);
    metric_vec_zero_source(&sum, METRIC_SOURCE_HOST_VCPU);
    for (guint i = 0; i < cur->vcpus->len; i++) {
        const ProbeVcpuWait *c = &g_array_index(cur->vcpus, ProbeVcpuWait, i);
        const ProbeVcpuWait *p = vcpu_find(prev->vcpus, c->pid, c->tid);
        MetricVec va, vb, dt;

        if (!p)
            continue;
        metric_vec_init(&va);
        metric_vec_init(&vb);
        va.v[METRIC_HOST_VCPU_WAIT_NS] = metric_reading(p->wait_ns);
        vb.v[METRIC_HOST_VCPU_WAIT_NS] = metric_reading(c->wait_ns);
        metric_vec_delta(&va, &vb, METRIC_SOURCE_BIT(METRIC_SOURCE_HOST_VCPU), &dt);
        if (!metric_vec_has(&dt, METRIC_HOST_VCPU_WAIT_NS))
            continue;
        metric_vec_add(&sum, &dt);
        n++;
    }
    if (n > 0) {
        d->n_vcpus = n;
        d->v.v[METRIC_HOST_VCPU_WAIT_NS] = sum.v[METRIC_HOST_VCPU_WAIT_NS];
    }
    return TRUE;
}

gboolean
probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                  PolicyHost *out)
{
    PolicyHostDelta d;

    return probe_derive_host_from_delta(&d, probe_derive_host_delta(prev, cur, &d), out);
}

gboolean
probe_derive_host_from_delta(const PolicyHostDelta *d, gboolean paired, PolicyHost *out)
{
    if (!paired) {
        *out = (PolicyHost){ .when_ms = d->when_ms, .n_cpus = d->n_cpus };
        return FALSE;
    }
    policy_host_from_delta(d, out);
    return out->have_psi || out->have_stat || out->have_vcpu_delay;
}
