/*
 * policy-counters: raw cumulative counters and their conversion into the
 * per-tick rates of policy-metrics.h.
 *
 * Whoever samples (the daemon's samplers, the polling simulator) fills a
 * PolicyCounters per iothread and a PolicyHostCounters per host each tick and
 * converts consecutive pairs with the functions below, so that production
 * and simulation derive every rate the same way.  Pure: no I/O.
 */
#pragma once

#include "policy-metrics.h"

typedef struct {
    gint64 when_ms;             /* UTC ms of the reading */
    gint64 mono_ns;             /* monotonic ns of the reading */
    PolicyTriple triple;        /* in force since the previous reading */

    gboolean have_io;           /* query-blockstats, summed over the devices */
    guint64 rd_ops, wr_ops, flush_ops;
    guint64 rd_bytes, wr_bytes;
    guint64 rd_total_ns, wr_total_ns, flush_total_ns;

    gboolean have_cpu;          /* /proc/<pid>/task/<tid>/{stat,status,schedstat} */
    guint64 cpu_ns;             /* utime + stime */
    guint64 vol_ctxsw, nonvol_ctxsw;
    guint64 run_delay_ns;       /* schedstat field 2 */

    gboolean have_exits;        /* KVM exits of the whole VM */
    guint64 exits;
} PolicyCounters;

typedef struct {
    gint64 when_ms;
    gint64 mono_ns;
    guint n_cpus;

    gboolean have_psi;
    double psi_some_avg10, psi_full_avg10;
    guint64 psi_some_total_us;

    gboolean have_stat;
    guint64 busy_ns;            /* all CPUs, non-idle time */

    gboolean have_vcpu_delay;
    guint n_vcpus;
    guint64 vcpu_run_delay_ns;  /* summed over vCPU threads */
} PolicyHostCounters;

/*
 * Rates over (prev, cur].  FALSE with an error when the interval is not
 * positive; a counter that went backwards (a restarted QEMU) clears the
 * have_* flag of its group instead of producing a negative rate.
 */
gboolean policy_metrics_from_counters(const PolicyCounters *prev, const PolicyCounters *cur,
                                      PolicyMetrics *out, GError **error);
gboolean policy_host_from_counters(const PolicyHostCounters *prev,
                                   const PolicyHostCounters *cur,
                                   PolicyHost *out, GError **error);
