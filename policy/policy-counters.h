/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-counters: the policy's rates of one tick, computed in one place.
 *
 * An iothread's rates come from its tick's delta (PolicyDelta,
 * policy-metrics.h), which the daemon's probe derives once per tick and
 * the polling simulator emits: policy_metrics_from_delta(), in
 * policy-counters.c, so that production and simulation derive every
 * figure the same way; the rates the metric table declares (formula and
 * scale) are metric_rate_value()'s, which the store's history rows and
 * exports and the CLI use too.  The host's rates come from one tick's
 * PolicyHostDelta, the delta of two readings of PolicyHostCounters by the
 * same metric_vec_delta().  Pure: no I/O.
 *
 * A host group is used only when both readings have it; a sampler that
 * knows a group's two readings do not belong together leaves its entries
 * absent on one side.
 */
#pragma once

#include "metric-vec.h"
#include "policy-metrics.h"

/*
 * One host reading: the host's counters as entries of the metric vector
 * (the METRIC_HOST_* ids, cumulative; absent when not read), and what
 * decides whether two readings' counters belong together.
 */
typedef struct {
    gint64 when_ms;
    gint64 mono_ns;
    guint n_cpus;               /* of /proc/stat's sums */
    guint n_vcpus;              /* threads summed in METRIC_HOST_VCPU_WAIT_NS */
    /* with METRIC_HOST_PSI_SOME_US: the kernel's own averages, gauges */
    double psi_some_avg10, psi_full_avg10;  /* full: 0 when the kernel has none */
    MetricVec v;
} PolicyHostCounters;

/* No counter read yet. */
void policy_host_counters_init(PolicyHostCounters *c);

/*
 * One tick's host delta: the counters' increase by metric_vec_delta()
 * (METRIC_HOST_* entries, absent when a reading lacks one or it went
 * back), the gauges in force at its end.  The daemon derives it once per
 * tick for the store's host rows and the policy's host rates.
 */
typedef struct {
    gint64 when_ms;
    gint64 len_ns;
    guint n_cpus;               /* at the end */
    /* The CPU count changed: the store keeps the busy and total time,
     * whose ratio the policy does not compare across CPU counts. */
    gboolean n_cpus_changed;
    guint n_vcpus;              /* threads in METRIC_HOST_VCPU_WAIT_NS */
    double psi_some_avg10, psi_full_avg10;
    MetricVec v;
} PolicyHostDelta;

/*
 * The delta over (prev, cur]: each host group is paired when both readings
 * have it, the vCPU sum only over the same number of threads (at least
 * one).  FALSE with an error when the interval is not positive.
 */
gboolean policy_host_delta(const PolicyHostCounters *prev, const PolicyHostCounters *cur,
                           PolicyHostDelta *d, GError **error);

/*
 * The host's rates of one tick's delta @d; a group absent from @d is
 * have_* FALSE, as is the CPU group when the CPU count changed.
 */
void policy_host_from_delta(const PolicyHostDelta *d, PolicyHost *out);

/* policy_host_delta(), then policy_host_from_delta(). */
gboolean policy_host_from_counters(const PolicyHostCounters *prev,
                                   const PolicyHostCounters *cur,
                                   PolicyHost *out, GError **error);
