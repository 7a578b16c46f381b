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
 * exports and the CLI use too.  The host's rates come from two readings of
 * PolicyHostCounters.  Pure: no I/O.
 *
 * A host group is used only when both readings have it; a sampler that
 * knows a group's two readings do not belong together clears have_* on
 * one side.
 */
#pragma once

#include "metric-vec.h"
#include "policy-metrics.h"

typedef struct {
    gint64 when_ms;
    gint64 mono_ns;
    guint n_cpus;

    gboolean have_psi;          /* /proc/pressure/cpu */
    double psi_some_avg10, psi_full_avg10;  /* full: 0 when the kernel has none */
    guint64 psi_some_total_us;

    gboolean have_stat;         /* /proc/stat, all CPUs, any one unit */
    guint64 cpu_busy;           /* non-idle time */
    guint64 cpu_total;          /* busy + idle time */

    gboolean have_vcpu_delay;
    guint n_vcpus;              /* the same threads in both readings */
    guint64 vcpu_run_delay_ns;  /* summed over those vCPU threads */
} PolicyHostCounters;

/*
 * Rates over (prev, cur].  FALSE with an error when the interval is not
 * positive; a counter that went backwards (a restarted QEMU) clears the
 * have_* flag of its group instead of producing a negative rate.  The host's
 * CPU figures also need the same n_cpus in both readings, its vCPU figures
 * the same n_vcpus.
 */
gboolean policy_host_from_counters(const PolicyHostCounters *prev,
                                   const PolicyHostCounters *cur,
                                   PolicyHost *out, GError **error);
