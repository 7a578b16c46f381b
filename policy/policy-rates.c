/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-rates: PolicyMetrics read by the metric table's rates.  See
 * policy-metrics.h.
 */
#include "policy-metrics.h"

/* Whether @m has the source group @s (the groups of policy-counters.h). */
static gboolean
metrics_have_source(const PolicyMetrics *m, MetricSource s)
{
    switch (s) {
    case METRIC_SOURCE_BLOCK:
        return m->have_io;
    case METRIC_SOURCE_THREAD:
        return m->have_cpu;
    case METRIC_SOURCE_EXITS:
        return m->have_exits;
    default:
        /* query-iothreads' gauges are the triple, not a rate's term */
        return FALSE;
    }
}

/* The table decides presence: every term's group, and the I/O group for a
 * rate that is per operation or needs the operation count. */
static gboolean
metrics_have_rate(const PolicyMetrics *m, const MetricRateDef *r)
{
    for (int i = 0; i < METRIC_RATE_TERMS && r->terms[i] != METRIC_INVALID; i++)
        if (!metrics_have_source(m, metric_def(r->terms[i])->source))
            return FALSE;
    if ((r->needs_ops || r->per == METRIC_PER_OP_SKIP_IDLE) && !m->have_io)
        return FALSE;
    /* PolicyMetrics keeps 0 for a per-operation figure of a tick without
     * I/O; the table has none. */
    if (r->per == METRIC_PER_OP_SKIP_IDLE && !(policy_metrics_iops(m) > 0))
        return FALSE;
    return TRUE;
}

/* The rates PolicyMetrics holds in one field of the table's unit; the
 * sums and the latency are in policy_metrics_rate(); 0: no field. */
static const gsize rate_field[METRIC_RATE_MAX] = {
    [METRIC_RATE_RD_IOPS] = G_STRUCT_OFFSET(PolicyMetrics, rd_iops),
    [METRIC_RATE_WR_IOPS] = G_STRUCT_OFFSET(PolicyMetrics, wr_iops),
    [METRIC_RATE_FLUSH_IOPS] = G_STRUCT_OFFSET(PolicyMetrics, flush_iops),
    [METRIC_RATE_QUEUE_DEPTH] = G_STRUCT_OFFSET(PolicyMetrics, queue_depth),
    [METRIC_RATE_CPU_PCT] = G_STRUCT_OFFSET(PolicyMetrics, cpu_pct),
    [METRIC_RATE_BLOCKS_PER_S] = G_STRUCT_OFFSET(PolicyMetrics, blocks_per_s),
    [METRIC_RATE_BLOCKS_PER_OP] = G_STRUCT_OFFSET(PolicyMetrics, blocks_per_op),
    [METRIC_RATE_RUN_DELAY_PCT] = G_STRUCT_OFFSET(PolicyMetrics, run_delay_pct),
    [METRIC_RATE_EXITS_PER_S] = G_STRUCT_OFFSET(PolicyMetrics, exits_per_s),
    [METRIC_RATE_EXITS_PER_OP] = G_STRUCT_OFFSET(PolicyMetrics, exits_per_op),
};

gboolean
policy_metrics_rate(const PolicyMetrics *m, MetricRate rate, double *out)
{
    const MetricRateDef *r = metric_rate_def(rate);

    if (!r || !metrics_have_rate(m, r))
        return FALSE;
    switch (rate) {
    case METRIC_RATE_IOPS:
        *out = policy_metrics_iops(m);
        return TRUE;
    case METRIC_RATE_MBPS:
        *out = m->rd_mbps + m->wr_mbps;
        return TRUE;
    case METRIC_RATE_LAT_US:
        /* PolicyMetrics keeps ns */
        *out = m->lat_mean_ns / 1000.0;
        return TRUE;
    default:
        /* a rate the table declares but the policy does not read: none */
        if (rate_field[rate] == 0)
            return FALSE;
        *out = G_STRUCT_MEMBER(double, m, rate_field[rate]);
        return TRUE;
    }
}
