/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-counters: counters to rates.  See policy-counters.h.
 */
#include "policy-counters.h"
#include "policy.h"

static gboolean
delta(guint64 a, guint64 b, double *out)
{
    if (b < a)
        return FALSE;
    *out = (double)(b - a);
    return TRUE;
}

static gboolean
interval_ok(gint64 prev_ns, gint64 cur_ns, GError **error)
{
    if (cur_ns <= prev_ns) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "counters: interval of %" G_GINT64_FORMAT " ns is not positive",
                    cur_ns - prev_ns);
        return FALSE;
    }
    return TRUE;
}

gboolean
policy_metrics_from_counters(const PolicyCounters *prev, const PolicyCounters *cur,
                             PolicyMetrics *out, GError **error)
{
    double secs, rd, wr, fl, rb, wb, rt, wt, ft, cpu, vol, nvol, delay, ex;
    double ops = 0;             /* I/O operations in the tick, 0 without I/O figures */
    PolicyMetrics m = { 0 };

    if (!interval_ok(prev->mono_ns, cur->mono_ns, error))
        return FALSE;
    m.when_ms = cur->when_ms;
    m.interval_ns = cur->mono_ns - prev->mono_ns;
    m.triple = cur->triple;
    secs = m.interval_ns / 1e9;

    if (prev->have_io && cur->have_io &&
        delta(prev->rd_ops, cur->rd_ops, &rd) && delta(prev->wr_ops, cur->wr_ops, &wr) &&
        delta(prev->flush_ops, cur->flush_ops, &fl) &&
        delta(prev->rd_bytes, cur->rd_bytes, &rb) && delta(prev->wr_bytes, cur->wr_bytes, &wb) &&
        delta(prev->rd_time_ns, cur->rd_time_ns, &rt) &&
        delta(prev->wr_time_ns, cur->wr_time_ns, &wt) &&
        delta(prev->flush_time_ns, cur->flush_time_ns, &ft)) {
        ops = rd + wr + fl;
        m.have_io = TRUE;
        m.rd_iops = rd / secs;
        m.wr_iops = wr / secs;
        m.flush_iops = fl / secs;
        m.rd_mbps = rb / secs / 1e6;
        m.wr_mbps = wb / secs / 1e6;
        m.lat_mean_ns = ops > 0 ? (rt + wt + ft) / ops : 0.0;
        /* Little's law: request time per unit of time is the mean depth. */
        m.queue_depth = (rt + wt + ft) / m.interval_ns;
    }
    if (prev->have_cpu && cur->have_cpu && delta(prev->cpu_ns, cur->cpu_ns, &cpu) &&
        delta(prev->ctx_vol, cur->ctx_vol, &vol) &&
        delta(prev->ctx_invol, cur->ctx_invol, &nvol) &&
        delta(prev->runq_wait_ns, cur->runq_wait_ns, &delay)) {
        m.have_cpu = TRUE;
        m.cpu_pct = 100.0 * cpu / m.interval_ns;
        m.blocks_per_s = vol / secs;
        m.blocks_per_op = ops > 0 ? vol / ops : 0.0;
        m.nvcsw_per_s = nvol / secs;
        m.run_delay_pct = 100.0 * delay / m.interval_ns;
    }
    if (prev->have_exits && cur->have_exits && delta(prev->exits, cur->exits, &ex)) {
        m.have_exits = TRUE;
        m.exits_per_s = ex / secs;
        m.exits_per_op = ops > 0 ? ex / ops : 0.0;
    }
    *out = m;
    return TRUE;
}

gboolean
policy_host_from_counters(const PolicyHostCounters *prev, const PolicyHostCounters *cur,
                          PolicyHost *out, GError **error)
{
    PolicyHost h = { 0 };
    double d, busy, total, interval;

    if (!interval_ok(prev->mono_ns, cur->mono_ns, error))
        return FALSE;
    interval = (double)(cur->mono_ns - prev->mono_ns);
    h.when_ms = cur->when_ms;
    h.n_cpus = cur->n_cpus;
    /* The averages come with the total: one group, present only when the
     * total gives this tick's share (not on a first reading). */
    if (prev->have_psi && cur->have_psi &&
        delta(prev->psi_some_total_us, cur->psi_some_total_us, &d)) {
        h.have_psi = TRUE;
        h.psi_some_avg10 = cur->psi_some_avg10;
        h.psi_full_avg10 = cur->psi_full_avg10;
        h.psi_some_pct = 100.0 * d * 1000.0 / interval;
    }
    /* Busy over total time, not over the interval: exact whatever the unit
     * (clock ticks) and however far the reading is from mono_ns. */
    if (prev->have_stat && cur->have_stat && prev->n_cpus == cur->n_cpus &&
        delta(prev->cpu_busy, cur->cpu_busy, &busy) &&
        delta(prev->cpu_total, cur->cpu_total, &total) && total > 0) {
        h.have_stat = TRUE;
        h.cpu_busy_pct = 100.0 * cur->n_cpus * busy / total;
    }
    if (prev->have_vcpu_delay && cur->have_vcpu_delay && cur->n_vcpus > 0 &&
        prev->n_vcpus == cur->n_vcpus &&
        delta(prev->vcpu_run_delay_ns, cur->vcpu_run_delay_ns, &d)) {
        h.have_vcpu_delay = TRUE;
        h.vcpu_run_delay_pct = 100.0 * d / cur->n_vcpus / interval;
    }
    *out = h;
    return TRUE;
}
