/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-counters: raw cumulative counters and their conversion into the
 * per-tick rates of policy-metrics.h.
 *
 * Whoever samples (the daemon's samplers through probe-derive, the polling
 * simulator) fills a PolicyCounters per iothread and a PolicyHostCounters per
 * host each tick and converts consecutive pairs with the functions below.
 * This is the only place where the policy's rates are computed, so that
 * production and simulation derive every figure the same way; the rates
 * the metric table declares (metric-table.h: formula and scale) are taken
 * from metric_rate_value(), the function the store's history rows and
 * exports and the CLI use too.  Pure: no I/O.
 *
 * Only differences between the two readings matter, so a sampler may rebase
 * a group (give prev zeros and cur the per-tick increase), e.g. when its
 * counters are sums that could exceed 64 bits.  A group is used only when
 * both readings have it; a sampler that knows a group's two readings do not
 * belong together (another device set, another thread) clears have_* on one
 * side.
 *
 * Counters carry the names the metric table gives them (metric-table.h:
 * rd_time_ns, ctx_vol, runq_wait_ns, ...), the same in the probe's deltas,
 * the store and the exports.
 */
#pragma once

#include "metric-vec.h"
#include "policy-metrics.h"

typedef struct {
    gint64 when_ms;             /* UTC ms of the reading */
    gint64 mono_ns;             /* monotonic ns of the reading */
    PolicyTriple triple;        /* in force since the previous reading */

    gboolean have_io;           /* query-blockstats, summed over the devices */
    guint64 rd_ops, wr_ops, flush_ops;
    guint64 rd_bytes, wr_bytes;
    guint64 rd_time_ns, wr_time_ns, flush_time_ns;
    /* Operations (rd+wr+flush) of each device, the same devices in the same
     * order in both readings; 0 devices: not counted one by one. */
    guint n_devices;
    guint64 dev_ops[POLICY_MAX_DEVICES];

    gboolean have_cpu;          /* /proc/<pid>/task/<tid>/{stat,status,schedstat} */
    guint64 cpu_ns;             /* time on a CPU: schedstat run time, or utime+stime */
    guint64 ctx_vol, ctx_invol; /* context switches, as metric-table.h names them */
    guint64 runq_wait_ns;       /* schedstat run-queue wait; 0 in both when unknown */

    gboolean have_exits;        /* KVM exits of the whole VM */
    guint64 exits;
} PolicyCounters;

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
gboolean policy_metrics_from_counters(const PolicyCounters *prev, const PolicyCounters *cur,
                                      PolicyMetrics *out, GError **error);
gboolean policy_host_from_counters(const PolicyHostCounters *prev,
                                   const PolicyHostCounters *cur,
                                   PolicyHost *out, GError **error);
