/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-counters: counters to rates.  See policy-counters.h.
 */
#include "policy-counters.h"
#include "policy.h"

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

void
policy_delta_init(PolicyDelta *d)
{
    *d = (PolicyDelta){ 0 };
    metric_vec_init(&d->v);
}

/* Rate @r of the metric table over the tick, or 0 where the table has none
 * (an absent group, or a per-operation figure of a tick without I/O):
 * PolicyMetrics keeps 0 there (policy-metrics.h). */
static double
table_rate(MetricRate r, const MetricVec *d, gint64 len_ns)
{
    double v;

    return metric_rate_value(r, d, len_ns, &v) ? v : 0.0;
}

/* Whether every one of @ids is present in @d. */
static gboolean
delta_has_all(const MetricVec *d, const MetricId *ids, guint n)
{
    for (guint i = 0; i < n; i++)
        if (!metric_vec_has(d, ids[i]))
            return FALSE;
    return TRUE;
}

/* A gauge as the triple's member: absent is 0, as an unread triple. */
static guint64
gauge(const MetricVec *d, MetricId id)
{
    return metric_vec_has(d, id) && d->v[id] >= 0 ? (guint64)d->v[id] : 0;
}

/*
 * The rates the metric table declares (formula and scale) come from the
 * table, the same function the store's history rows, exports and the CLI
 * use; the figures it does not declare (per-direction MB/s, involuntary
 * switches, per device) are computed here.
 */
gboolean
policy_metrics_from_delta(const PolicyDelta *delta, PolicyMetrics *out)
{
    /* The run-queue wait is known with schedstat only: 0 without. */
    static const MetricId cpu_ids[] = { METRIC_CPU_NS, METRIC_CTX_VOL, METRIC_CTX_INVOL };
    static const MetricId exit_ids[] = { METRIC_KVM_EXITS };
    const MetricVec *d = &delta->v;
    PolicyMetrics m = { 0 };
    double secs;

    m.when_ms = delta->when_ms;
    m.triple = (PolicyTriple){ gauge(d, METRIC_POLL_MAX_NS), gauge(d, METRIC_POLL_GROW),
                               gauge(d, METRIC_POLL_SHRINK) };
    if (delta->len_ns <= 0) {
        *out = m;
        return FALSE;
    }
    m.interval_ns = delta->len_ns;
    secs = m.interval_ns / 1e9;

    /* the block counters are present or absent as a group */
    if (metric_vec_has(d, METRIC_RD_OPS)) {
        m.have_io = TRUE;
        m.rd_iops = table_rate(METRIC_RATE_RD_IOPS, d, m.interval_ns);
        m.wr_iops = table_rate(METRIC_RATE_WR_IOPS, d, m.interval_ns);
        m.flush_iops = table_rate(METRIC_RATE_FLUSH_IOPS, d, m.interval_ns);
        m.rd_mbps = d->v[METRIC_RD_BYTES] / secs / 1e6;
        m.wr_mbps = d->v[METRIC_WR_BYTES] / secs / 1e6;
        /* the table's latency is in us; the policy's in ns */
        m.lat_mean_ns = table_rate(METRIC_RATE_LAT_US, d, m.interval_ns) /
                        metric_rate_def(METRIC_RATE_LAT_US)->scale;
        /* Little's law: request time per unit of time is the mean depth. */
        m.queue_depth = table_rate(METRIC_RATE_QUEUE_DEPTH, d, m.interval_ns);
        if (delta->n_devices > 0 && delta->n_devices <= POLICY_MAX_DEVICES) {
            m.n_devices = delta->n_devices;
            for (guint i = 0; i < m.n_devices; i++)
                m.dev_iops[i] = (double)delta->dev_ops[i] / secs;
        }
        if (delta->io_shared_by > 1)
            m.io_shared_by = delta->io_shared_by;
    }
    if (delta_has_all(d, cpu_ids, G_N_ELEMENTS(cpu_ids))) {
        m.have_cpu = TRUE;
        m.cpu_pct = table_rate(METRIC_RATE_CPU_PCT, d, m.interval_ns);
        m.blocks_per_s = table_rate(METRIC_RATE_BLOCKS_PER_S, d, m.interval_ns);
        m.blocks_per_op = table_rate(METRIC_RATE_BLOCKS_PER_OP, d, m.interval_ns);
        m.nvcsw_per_s = d->v[METRIC_CTX_INVOL] / secs;
        m.run_delay_pct = table_rate(METRIC_RATE_RUN_DELAY_PCT, d, m.interval_ns);
    }
    if (delta_has_all(d, exit_ids, G_N_ELEMENTS(exit_ids))) {
        m.have_exits = TRUE;
        m.exits_per_s = table_rate(METRIC_RATE_EXITS_PER_S, d, m.interval_ns);
        m.exits_per_op = table_rate(METRIC_RATE_EXITS_PER_OP, d, m.interval_ns);
    }
    *out = m;
    return TRUE;
}

void
policy_host_counters_init(PolicyHostCounters *c)
{
    *c = (PolicyHostCounters){ 0 };
    metric_vec_init(&c->v);
}

gboolean
policy_host_delta(const PolicyHostCounters *prev, const PolicyHostCounters *cur,
                  PolicyHostDelta *d, GError **error)
{
    guint paired = METRIC_SOURCE_BIT(METRIC_SOURCE_HOST_PSI) |
                   METRIC_SOURCE_BIT(METRIC_SOURCE_HOST_STAT);

    if (!interval_ok(prev->mono_ns, cur->mono_ns, error))
        return FALSE;
    *d = (PolicyHostDelta){
        .when_ms = cur->when_ms,
        .len_ns = cur->mono_ns - prev->mono_ns,
        .n_cpus = cur->n_cpus,
        .n_cpus_changed = prev->n_cpus != cur->n_cpus,
        .n_vcpus = cur->n_vcpus,
        .psi_some_avg10 = cur->psi_some_avg10,
        .psi_full_avg10 = cur->psi_full_avg10,
    };
    /* a sum over other threads is not the same counter */
    if (cur->n_vcpus > 0 && prev->n_vcpus == cur->n_vcpus)
        paired |= METRIC_SOURCE_BIT(METRIC_SOURCE_HOST_VCPU);
    metric_vec_delta(&prev->v, &cur->v, paired, &d->v);
    return TRUE;
}

void
policy_host_from_delta(const PolicyHostDelta *d, PolicyHost *out)
{
    const MetricVec *v = &d->v;
    PolicyHost h = { 0 };
    double interval = (double)d->len_ns;

    h.when_ms = d->when_ms;
    h.n_cpus = d->n_cpus;
    /* The averages come with the total: one group, present only when the
     * total gives this tick's share (not on a first reading). */
    if (metric_vec_has(v, METRIC_HOST_PSI_SOME_US)) {
        h.have_psi = TRUE;
        h.psi_some_avg10 = d->psi_some_avg10;
        h.psi_full_avg10 = d->psi_full_avg10;
        h.psi_some_pct = 100.0 * (double)v->v[METRIC_HOST_PSI_SOME_US] * 1000.0 / interval;
    }
    /* Busy over total time, not over the interval: exact whatever the unit
     * (clock ticks) and however far the reading is from mono_ns. */
    if (!d->n_cpus_changed && metric_vec_has(v, METRIC_HOST_CPU_BUSY) &&
        metric_vec_has(v, METRIC_HOST_CPU_TOTAL) && v->v[METRIC_HOST_CPU_TOTAL] > 0) {
        h.have_stat = TRUE;
        h.cpu_busy_pct = 100.0 * d->n_cpus * (double)v->v[METRIC_HOST_CPU_BUSY] /
                         (double)v->v[METRIC_HOST_CPU_TOTAL];
    }
    if (metric_vec_has(v, METRIC_HOST_VCPU_WAIT_NS) && d->n_vcpus > 0) {
        h.have_vcpu_delay = TRUE;
        h.vcpu_run_delay_pct = 100.0 * (double)v->v[METRIC_HOST_VCPU_WAIT_NS] / d->n_vcpus /
                               interval;
    }
    *out = h;
}

gboolean
policy_host_from_counters(const PolicyHostCounters *prev, const PolicyHostCounters *cur,
                          PolicyHost *out, GError **error)
{
    PolicyHostDelta d;

    if (!policy_host_delta(prev, cur, &d, error))
        return FALSE;
    policy_host_from_delta(&d, out);
    return TRUE;
}
