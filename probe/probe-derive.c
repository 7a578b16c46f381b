#include "probe-derive.h"

/* cur - prev, or FALSE if the counter went backwards. */
static inline gboolean
delta(guint64 prev, guint64 cur, guint64 *d)
{
    if (cur < prev)
        return FALSE;
    *d = cur - prev;
    return TRUE;
}

/* Per-device deltas summed in doubles: no overflow with huge counters. */
typedef struct {
    double rd_ops, wr_ops, flush_ops;
    double rd_bytes, wr_bytes;
    double time_ns;
} BlockDelta;

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

static gboolean
block_delta(const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
            BlockDelta *out)
{
    BlockDelta sum = { 0 };

    if (!a->have_block || !b->have_block || a->devices->len != b->devices->len)
        return FALSE;
    for (guint i = 0; i < b->devices->len; i++) {
        const ProbeDevice *db = &g_array_index(b->devices, ProbeDevice, i);
        const ProbeDevice *da = device_find(a->devices, db->name);
        const ProbeBlockCounters *p, *c;
        guint64 d[8];

        if (!da)
            return FALSE;
        p = &da->c;
        c = &db->c;
        if (!delta(p->rd_ops, c->rd_ops, &d[0]) ||
            !delta(p->wr_ops, c->wr_ops, &d[1]) ||
            !delta(p->flush_ops, c->flush_ops, &d[2]) ||
            !delta(p->rd_bytes, c->rd_bytes, &d[3]) ||
            !delta(p->wr_bytes, c->wr_bytes, &d[4]) ||
            !delta(p->rd_time_ns, c->rd_time_ns, &d[5]) ||
            !delta(p->wr_time_ns, c->wr_time_ns, &d[6]) ||
            !delta(p->flush_time_ns, c->flush_time_ns, &d[7]))
            return FALSE;
        sum.rd_ops += (double)d[0];
        sum.wr_ops += (double)d[1];
        sum.flush_ops += (double)d[2];
        sum.rd_bytes += (double)d[3];
        sum.wr_bytes += (double)d[4];
        sum.time_ns += (double)d[5] + (double)d[6] + (double)d[7];
    }
    *out = sum;
    return TRUE;
}

static void
derive_io(const ProbeIothreadSnap *a, const ProbeIothreadSnap *b, double secs,
          double interval_ns, PolicyMetrics *m, double *ops)
{
    BlockDelta d;

    *ops = 0;
    if (!block_delta(a, b, &d))
        return;
    *ops = d.rd_ops + d.wr_ops + d.flush_ops;
    m->have_io = TRUE;
    m->rd_iops = d.rd_ops / secs;
    m->wr_iops = d.wr_ops / secs;
    m->flush_iops = d.flush_ops / secs;
    m->rd_mbps = d.rd_bytes / 1e6 / secs;
    m->wr_mbps = d.wr_bytes / 1e6 / secs;
    m->lat_mean_ns = *ops > 0 ? d.time_ns / *ops : 0;
    /* Little's law: busy request-time per unit of time is the mean depth. */
    m->queue_depth = d.time_ns / interval_ns;
}

static void
derive_cpu(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
           const ProbeIothreadSnap *a, const ProbeIothreadSnap *b,
           double secs, double interval_ns, double ops, PolicyMetrics *m)
{
    const ProbeThreadCounters *p = &a->thread, *c = &b->thread;
    guint64 vcsw, nvcsw, cpu, wait = 0;
    double cpu_ns;
    gboolean sched = p->have_schedstat && c->have_schedstat;

    if (!a->have_thread || !b->have_thread || a->tid != b->tid)
        return;
    if (!delta(p->vcsw, c->vcsw, &vcsw) || !delta(p->nvcsw, c->nvcsw, &nvcsw))
        return;
    if (sched) {
        if (!delta(p->run_ns, c->run_ns, &cpu) ||
            !delta(p->wait_ns, c->wait_ns, &wait))
            return;
        cpu_ns = (double)cpu;
    } else {
        guint64 du, ds;

        if (!delta(p->utime_ticks, c->utime_ticks, &du) ||
            !delta(p->stime_ticks, c->stime_ticks, &ds) || cur->clk_tck == 0 ||
            prev->clk_tck != cur->clk_tck)
            return;
        cpu_ns = ((double)du + (double)ds) * 1e9 / (double)cur->clk_tck;
    }
    m->have_cpu = TRUE;
    m->cpu_pct = 100.0 * cpu_ns / interval_ns;
    m->blocks_per_s = (double)vcsw / secs;
    m->blocks_per_op = ops > 0 ? (double)vcsw / ops : 0;
    m->nvcsw_per_s = (double)nvcsw / secs;
    m->run_delay_pct = 100.0 * (double)wait / interval_ns;
}

static void
derive_exits(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
             double secs, double ops, PolicyMetrics *m)
{
    const ProbeExitCounters *p = &prev->exits, *c = &cur->exits;
    guint64 d;

    if (c->source == PROBE_EXIT_SOURCE_NONE || p->source != c->source ||
        !probe_exit_counters_has(p, PROBE_EXIT_EXITS) ||
        !probe_exit_counters_has(c, PROBE_EXIT_EXITS) ||
        !delta(p->v[PROBE_EXIT_EXITS], c->v[PROBE_EXIT_EXITS], &d))
        return;
    m->have_exits = TRUE;
    m->exits_per_s = (double)d / secs;
    m->exits_per_op = ops > 0 ? (double)d / ops : 0;
}

gboolean
probe_derive_iothread(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                      const char *id, PolicyMetrics *out)
{
    const ProbeIothreadSnap *a, *b;
    double interval_ns, secs, ops;
    PolicyMetrics m = { 0 };

    m.when_ms = cur->when_ms;
    b = probe_target_snap_find(cur, id);
    if (b && b->have_triple)
        m.triple = b->triple;
    *out = m;
    if (!b || !prev || prev->pid != cur->pid || cur->mono_ns <= prev->mono_ns)
        return FALSE;
    a = probe_target_snap_find(prev, id);
    if (!a)
        return FALSE;

    m.interval_ns = cur->mono_ns - prev->mono_ns;
    interval_ns = (double)m.interval_ns;
    secs = interval_ns / 1e9;
    derive_io(a, b, secs, interval_ns, &m, &ops);
    derive_cpu(prev, cur, a, b, secs, interval_ns, ops, &m);
    derive_exits(prev, cur, secs, ops, &m);
    *out = m;
    return m.have_io || m.have_cpu || m.have_exits;
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
derive_vcpu_delay(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                  double interval_ns, PolicyHost *h)
{
    double sum = 0;
    guint n = 0;

    for (guint i = 0; i < cur->vcpus->len; i++) {
        const ProbeVcpuWait *c = &g_array_index(cur->vcpus, ProbeVcpuWait, i);
        const ProbeVcpuWait *p = vcpu_find(prev->vcpus, c->pid, c->tid);
        guint64 d;

        /* New threads and restarted counters join at the next tick. */
        if (!p || !delta(p->wait_ns, c->wait_ns, &d))
            continue;
        sum += 100.0 * (double)d / interval_ns;
        n++;
    }
    if (n == 0)
        return;
    h->have_vcpu_delay = TRUE;
    h->vcpu_run_delay_pct = sum / n;
}

gboolean
probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                  PolicyHost *out)
{
    PolicyHost h = { 0 };
    double interval_ns;
    guint64 d, busy, total;

    h.when_ms = cur->when_ms;
    if (cur->have_stat)
        h.n_cpus = cur->stat.n_cpus;
    *out = h;
    if (!prev || cur->mono_ns <= prev->mono_ns)
        return FALSE;
    interval_ns = (double)(cur->mono_ns - prev->mono_ns);

    if (prev->have_psi && cur->have_psi &&
        delta(prev->psi.some_total_us, cur->psi.some_total_us, &d)) {
        h.have_psi = TRUE;
        h.psi_some_avg10 = cur->psi.some_avg10;
        h.psi_full_avg10 = cur->psi.have_full ? cur->psi.full_avg10 : 0;
        h.psi_some_pct = 100.0 * (double)d * 1000.0 / interval_ns;
    }
    /* Ticks, not time: busy over total is exact whatever the tick rate. */
    if (prev->have_stat && cur->have_stat &&
        prev->stat.n_cpus == cur->stat.n_cpus &&
        delta(prev->stat.busy_ticks, cur->stat.busy_ticks, &busy) &&
        delta(prev->stat.total_ticks, cur->stat.total_ticks, &total) &&
        total > 0) {
        h.have_stat = TRUE;
        h.cpu_busy_pct = 100.0 * cur->stat.n_cpus * (double)busy / (double)total;
    }
    derive_vcpu_delay(prev, cur, interval_ns, &h);
    *out = h;
    return h.have_psi || h.have_stat || h.have_vcpu_delay;
}
