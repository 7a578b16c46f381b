/*
 * policy-metrics: the policy's input types.
 *
 * These structs are the contract between whoever measures (the daemon's
 * samplers, the polling simulator) and the policy that decides.  The policy
 * owns them: the samplers fill them, the simulator fills them, and nothing
 * in policy/ includes any other project header.
 *
 * Every rate is over one tick, the interval that ends at @when_ms.  A group
 * of fields whose source was unavailable has its have_* flag FALSE and its
 * values 0; per-operation ratios are also 0 when there was no I/O in the tick
 * (have_io TRUE, ops 0).
 */
#pragma once

#include <glib.h>

/* An iothread's polling parameters, as QEMU names them. */
typedef struct {
    guint64 poll_max_ns;
    guint64 poll_grow;      /* 0: QEMU's default factor of 2 */
    guint64 poll_shrink;    /* 0: reset the window to 0 on shrink */
} PolicyTriple;

#define POLICY_TRIPLE_QEMU_DEFAULT ((PolicyTriple){ 32768, 0, 0 })

/* What one iothread did during one tick. */
typedef struct {
    gint64 when_ms;             /* end of the tick, UTC ms since the epoch */
    gint64 interval_ns;         /* length of the tick */
    PolicyTriple triple;        /* in force during the tick */

    gboolean have_io;           /* blockstats of the iothread's devices */
    double rd_iops, wr_iops, flush_iops;
    double rd_mbps, wr_mbps;    /* 10^6 bytes per second */
    double lat_mean_ns;         /* mean per rd+wr+flush operation */
    double queue_depth;         /* Little's law: sum of total_time_ns / interval */
    /* > 1: the iothread is one of a group this large whose I/O cannot be
     * split per iothread (shared devices); the io figures above are the
     * whole group's, the same on every member.  0 or 1: its own. */
    guint io_shared_by;

    gboolean have_cpu;          /* /proc/<pid>/task/<tid>/{stat,status,schedstat} */
    double cpu_pct;             /* utime+stime over the interval; 100 = one core */
    double blocks_per_s;        /* voluntary context switches per second */
    double blocks_per_op;       /* voluntary switches per I/O operation */
    double nvcsw_per_s;         /* involuntary switches per second */
    double run_delay_pct;       /* run-queue wait over the interval, % */

    gboolean have_exits;        /* KVM exits of the guest (whole VM) */
    double exits_per_s;
    double exits_per_op;        /* exits per I/O operation of this iothread */
} PolicyMetrics;

/* The host during one tick. */
typedef struct {
    gint64 when_ms;
    guint n_cpus;

    gboolean have_psi;          /* /proc/pressure/cpu */
    double psi_some_avg10;      /* % */
    double psi_full_avg10;      /* % */
    double psi_some_pct;        /* from the total counter, over this tick */

    gboolean have_stat;         /* /proc/stat */
    double cpu_busy_pct;        /* all CPUs; 100 * n_cpus = every CPU busy */

    gboolean have_vcpu_delay;   /* schedstat of the VMs' vCPU threads */
    double vcpu_run_delay_pct;  /* mean over vCPU threads, % */
} PolicyHost;

static inline double
policy_metrics_iops(const PolicyMetrics *m)
{
    return m->rd_iops + m->wr_iops + m->flush_iops;
}
