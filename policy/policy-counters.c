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

/* Per-device rates, only when both readings count the same devices. */
static void
devices_from_counters(const PolicyCounters *prev, const PolicyCounters *cur, double secs,
                      PolicyMetrics *m)
{
    guint n = cur->n_devices;
    double d;

    if (n == 0 || n != prev->n_devices || n > POLICY_MAX_DEVICES)
        return;
    for (guint i = 0; i < n; i++) {
        if (!delta(prev->dev_ops[i], cur->dev_ops[i], &d))
            return;
        m->dev_iops[i] = d / secs;
    }
    m->n_devices = n;
}

/* One tick's increase as the table's values hold it: FALSE when the counter
 * went backwards, or rose by more than a tick's value can hold (no real
 * counter rises by 2^63 in one tick). */
static gboolean
delta64(guint64 a, guint64 b, gint64 *out)
{
    if (b < a || b - a > (guint64)G_MAXINT64)
        return FALSE;
    *out = (gint64)(b - a);
    return TRUE;
}

/* A group's increases into @d, all or none: one counter going backwards
 * drops the group (policy-counters.h). */
static gboolean
group_deltas(const MetricId *ids, const guint64 *prev, const guint64 *cur, guint n, gint64 *d)
{
    gint64 v[METRIC_MAX];

    for (guint i = 0; i < n; i++)
        if (!delta64(prev[i], cur[i], &v[i]))
            return FALSE;
    for (guint i = 0; i < n; i++)
        d[ids[i]] = v[i];
    return TRUE;
}

/* Rate @r of the metric table over the tick, or 0 where the table has none
 * (an absent group, or a per-operation figure of a tick without I/O):
 * PolicyMetrics keeps 0 there (policy-metrics.h). */
static double
table_rate(MetricRate r, const gint64 *d, gint64 len_ns)
{
    double v;

    return metric_rate_value(r, d, len_ns, &v) ? v : 0.0;
}

/*
 * The rates the metric table declares (formula and scale) come from the
 * table, the same function the store's history rows, exports and the CLI
 * use; the figures it does not declare (per-direction MB/s, involuntary
 * switches) are computed here.
 */
gboolean
policy_metrics_from_counters(const PolicyCounters *prev, const PolicyCounters *cur,
                             PolicyMetrics *out, GError **error)
{
    static const MetricId io_ids[] = {
        METRIC_RD_OPS, METRIC_WR_OPS, METRIC_FLUSH_OPS, METRIC_RD_BYTES, METRIC_WR_BYTES,
        METRIC_RD_TIME_NS, METRIC_WR_TIME_NS, METRIC_FLUSH_TIME_NS,
    };
    static const MetricId cpu_ids[] = {
        METRIC_CPU_NS, METRIC_CTX_VOL, METRIC_CTX_INVOL, METRIC_RUNQ_WAIT_NS,
    };
    static const MetricId exit_ids[] = { METRIC_KVM_EXITS };
    PolicyMetrics m = { 0 };
    gint64 d[METRIC_MAX];
    double secs;

    if (!interval_ok(prev->mono_ns, cur->mono_ns, error))
        return FALSE;
    m.when_ms = cur->when_ms;
    m.interval_ns = cur->mono_ns - prev->mono_ns;
    m.triple = cur->triple;
    secs = m.interval_ns / 1e9;
    for (int i = 0; i < METRIC_MAX; i++)
        d[i] = METRIC_ABSENT;

    if (prev->have_io && cur->have_io &&
        group_deltas(io_ids,
                     (const guint64[]){ prev->rd_ops, prev->wr_ops, prev->flush_ops,
                                        prev->rd_bytes, prev->wr_bytes, prev->rd_time_ns,
                                        prev->wr_time_ns, prev->flush_time_ns },
                     (const guint64[]){ cur->rd_ops, cur->wr_ops, cur->flush_ops,
                                        cur->rd_bytes, cur->wr_bytes, cur->rd_time_ns,
                                        cur->wr_time_ns, cur->flush_time_ns },
                     G_N_ELEMENTS(io_ids), d)) {
        m.have_io = TRUE;
        m.rd_iops = table_rate(METRIC_RATE_RD_IOPS, d, m.interval_ns);
        m.wr_iops = table_rate(METRIC_RATE_WR_IOPS, d, m.interval_ns);
        m.flush_iops = table_rate(METRIC_RATE_FLUSH_IOPS, d, m.interval_ns);
        m.rd_mbps = d[METRIC_RD_BYTES] / secs / 1e6;
        m.wr_mbps = d[METRIC_WR_BYTES] / secs / 1e6;
        /* the table's latency is in us; the policy's in ns */
        m.lat_mean_ns = table_rate(METRIC_RATE_LAT_US, d, m.interval_ns) /
                        metric_rate_def(METRIC_RATE_LAT_US)->scale;
        /* Little's law: request time per unit of time is the mean depth. */
        m.queue_depth = table_rate(METRIC_RATE_QUEUE_DEPTH, d, m.interval_ns);
        devices_from_counters(prev, cur, secs, &m);
    }
    if (prev->have_cpu && cur->have_cpu &&
        group_deltas(cpu_ids,
                     (const guint64[]){ prev->cpu_ns, prev->ctx_vol, prev->ctx_invol,
                                        prev->runq_wait_ns },
                     (const guint64[]){ cur->cpu_ns, cur->ctx_vol, cur->ctx_invol,
                                        cur->runq_wait_ns },
                     G_N_ELEMENTS(cpu_ids), d)) {
        m.have_cpu = TRUE;
        m.cpu_pct = table_rate(METRIC_RATE_CPU_PCT, d, m.interval_ns);
        m.blocks_per_s = table_rate(METRIC_RATE_BLOCKS_PER_S, d, m.interval_ns);
        m.blocks_per_op = table_rate(METRIC_RATE_BLOCKS_PER_OP, d, m.interval_ns);
        m.nvcsw_per_s = d[METRIC_CTX_INVOL] / secs;
        m.run_delay_pct = table_rate(METRIC_RATE_RUN_DELAY_PCT, d, m.interval_ns);
    }
    if (prev->have_exits && cur->have_exits &&
        group_deltas(exit_ids, &prev->exits, &cur->exits, G_N_ELEMENTS(exit_ids), d)) {
        m.have_exits = TRUE;
        m.exits_per_s = table_rate(METRIC_RATE_EXITS_PER_S, d, m.interval_ns);
        m.exits_per_op = table_rate(METRIC_RATE_EXITS_PER_OP, d, m.interval_ns);
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
