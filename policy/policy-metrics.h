/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-metrics: the policy's input types.
 *
 * These structs are the contract between whoever measures (the daemon's
 * samplers, the polling simulator) and the policy that decides.  The policy
 * owns them: the samplers fill them, the simulator fills them.  The only
 * other project headers policy/ includes are metric/'s (pure data: the
 * metric table, whose rates name the figures below, and the vector a
 * tick's delta is kept in).
 *
 * Every rate is over one tick, the interval that ends at @when_ms.  A group
 * of fields whose source was unavailable has its have_* flag FALSE and its
 * values 0; per-operation ratios are also 0 when there was no I/O in the tick
 * (have_io TRUE, ops 0).
 */
#pragma once

#include <glib.h>

#include "metric-vec.h"

/* An iothread's polling parameters, as QEMU names them. */
typedef struct {
    guint64 poll_max_ns;
    guint64 poll_grow;      /* 0: QEMU's default factor of 2 */
    guint64 poll_shrink;    /* 0: reset the window to 0 on shrink */
} PolicyTriple;

#define POLICY_TRIPLE_QEMU_DEFAULT ((PolicyTriple){ 32768, 0, 0 })

/*
 * The members of PolicyTriple one by one, in the order they are written to
 * QEMU (grow and shrink before the ceiling, so that the new ceiling starts
 * clean).  Code that only moves knobs between QEMU and the policy loops
 * over these instead of naming each member, so that a fourth knob is a
 * member, an entry here and its bounds (docs/POLICY.md).
 */
typedef enum {
    POLICY_KNOB_POLL_GROW,
    POLICY_KNOB_POLL_SHRINK,
    POLICY_KNOB_POLL_MAX_NS,
    POLICY_KNOB_MAX,
    POLICY_KNOB_INVALID = -1,
} PolicyKnob;

/* QEMU's property name: "poll-max-ns", "poll-grow", "poll-shrink". */
const char *policy_knob_to_string(PolicyKnob knob);
PolicyKnob policy_knob_from_string(const char *s);
guint64 policy_triple_get(const PolicyTriple *t, PolicyKnob knob);

/*
 * What the triple means on the QEMU that is tuned (docs/POLICY.md, "The
 * triple on each QEMU release").  Decided from the QEMU version at attach.
 */
typedef enum {
    POLICY_POLL_MODEL_UNKNOWN,  /* version not known; read as 7.2 */
    POLICY_POLL_MODEL_72,       /* before 10.0: one window per iothread */
    POLICY_POLL_MODEL_10,       /* 10.0 on: one window per handler */
    POLICY_POLL_MODEL_MAX,
    POLICY_POLL_MODEL_INVALID = -1,
} PolicyPollModel;

const char *policy_poll_model_to_string(PolicyPollModel model);
PolicyPollModel policy_poll_model_from_string(const char *s);
/* The model of QEMU @qemu_version (major * 1000000 + minor * 1000 + micro;
 * 0: unknown). */
PolicyPollModel policy_poll_model_for_version(guint32 qemu_version);

/*
 * Devices of one iothread counted one by one, at most.  A guest with more
 * virtio disks on one iothread than this is unusual (libvirt's examples
 * and the seeds' benchmarks use one to four); beyond it the sampler leaves
 * n_devices 0 and the policy sees the total only.
 */
#define POLICY_MAX_DEVICES 16

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
    /*
     * Operations per second of each device (rd+wr+flush), in the sampler's
     * order, when it counts devices one by one (0: not counted).  With two
     * or more the objective weighs each device's IOPS on its own, so that
     * one device's gain cannot hide another's loss.
     */
    guint n_devices;
    double dev_iops[POLICY_MAX_DEVICES];

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

/*
 * What one iothread's counters did during one tick: the one delta the
 * probe derives per tick (and the simulator emits), which the store's row
 * and the policy's rates (policy_metrics_from_delta()) both read.
 */
typedef struct {
    gint64 when_ms;             /* end of the tick, UTC ms */
    gint64 len_ns;              /* length of the tick; 0: no pair, gauges only */
    /* By MetricId: a counter's increase over the tick, a gauge's value in
     * force; METRIC_ABSENT where the pair cannot give it.  The block
     * counters are present or absent as a group. */
    MetricVec v;
    /* Operations (rd+wr+flush) of each device in the tick, with the block
     * group and at most POLICY_MAX_DEVICES devices; 0: not counted. */
    guint n_devices;
    gint64 dev_ops[POLICY_MAX_DEVICES];
    guint io_shared_by;         /* as PolicyMetrics' */
} PolicyDelta;

/* Every value absent, no devices. */
void policy_delta_init(PolicyDelta *d);

/*
 * The policy's rates of one tick, the one place they are computed: the
 * rates the metric table declares by metric_rate_value(), the rest here.
 * A group whose counters are absent has its have_* FALSE.  FALSE when the
 * tick has no length (@out then holds the triple and when_ms only).
 */
gboolean policy_metrics_from_delta(const PolicyDelta *d, PolicyMetrics *out);

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

/*
 * Rate @rate of the metric table as @m carries it, for whoever reports
 * PolicyMetrics by the table (the status reply).  FALSE when the rate's
 * source groups are absent from @m (its terms' sources, and the I/O group
 * when it is per operation), or when PolicyMetrics has no field for it.
 */
gboolean policy_metrics_rate(const PolicyMetrics *m, MetricRate rate, double *out);
