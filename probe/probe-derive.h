/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-derive: two snapshots in, the policy's metrics out.
 *
 * Pure: no I/O, no clock.  The interval is cur->mono_ns - prev->mono_ns.
 *
 * Rules, so that a rate is either right or absent (its have_* FALSE):
 *   - no previous snapshot, a different QEMU pid, or an interval <= 0:
 *     no rates at all (the first sample of a target is a baseline);
 *   - a counter that went backwards makes its group absent for this tick;
 *     the current snapshot is the new baseline.  No rate is ever negative;
 *   - block rates need the same set of devices in both snapshots: a device
 *     that appeared or disappeared makes have_io FALSE for one tick;
 *   - CPU figures need the same tid in both snapshots (a restarted or
 *     re-resolved thread starts over).  CPU time is schedstat's run time
 *     (ns) when both snapshots have it, else utime+stime in clock ticks;
 *   - exit figures need the same exit source in both snapshots;
 *   - per-operation ratios are 0 when there was no I/O (or no I/O figures).
 * The rates themselves are policy-counters.h's: the snapshots are laid out
 * as a pair of PolicyCounters (PolicyHostCounters), so the daemon and the
 * polling simulator share every formula.
 */
#pragma once

#include <glib.h>
#include "metric-vec.h"
#include "policy-metrics.h"
#include "probe-snap.h"

/*
 * Metrics of iothread @id over prev -> cur.  @prev may be NULL.  Returns
 * TRUE when at least one group (io, cpu, exits) has rates; @out is filled
 * either way (when_ms, interval, triple, the have_* flags).
 */
/*
 * One tick's increase of an iothread's counters, paired by the rules below;
 * the one place those rules live.  METRIC_ABSENT marks a figure the
 * pair cannot give (counter went backwards, source/pid/tid/device set or
 * clk_tck changed, not read): absent, never a wrong number.  The policy's
 * rates (probe_derive_iothread) and the store's per-tick deltas
 * (pt_history_sample) are both read from this.
 */

typedef struct {
    gint64 mono_ns, when_ms;            /* of the two snapshots */
    gint64 prev_mono_ns, prev_when_ms;
    gboolean have_io;                   /* the block group is present */
    gboolean have_schedstat;            /* cpu_ns and runq_wait_ns are schedstat's */
    /*
     * One value per metric of the table (metric-table.h), paired by its
     * source group and reset rule:
     *  - gauges (the triple, ...) as read in @cur, even without a pair;
     *  - block counters over the same device set, each device paired by
     *    name: absent as a group when any device's counter went backwards;
     *  - thread counters for the same tid only; runq_wait_ns only with
     *    schedstat, cpu_ns from utime+stime without it;
     *  - exit counters from the same exit source only.
     * The named members alias m[] in table order.
     */
    union {
        gint64 m[METRIC_MAX];
        struct {
            gint64 poll_max_ns, poll_grow, poll_shrink;
            gint64 cpu_ns, ctx_vol, ctx_invol, runq_wait_ns;
            gint64 rd_ops, rd_bytes, rd_time_ns;
            gint64 wr_ops, wr_bytes, wr_time_ns;
            gint64 flush_ops, flush_time_ns;
            gint64 kvm_exits, io_exits, mmio_exits, halt_exits;
        };
    };
    /* With have_io and at most POLICY_MAX_DEVICES devices: each device's
     * operations (rd+wr+flush), in the current snapshot's order; else 0. */
    guint n_devices;
    gint64 dev_ops[POLICY_MAX_DEVICES];
    /* Every exit counter, by ProbeExitCounter (the table keeps four). */
    gint64 exits[PROBE_EXIT_COUNTER_MAX];
} ProbeIothreadDeltas;

/* FALSE (with @d all absent but the gauges) when there is no pair: no
 * such iothread now, no previous snapshot, another QEMU, or time did not
 * advance. */
gboolean probe_derive_deltas(const ProbeTargetSnap *prev,
                             const ProbeTargetSnap *cur, const char *id,
                             ProbeIothreadDeltas *d);

gboolean probe_derive_iothread(const ProbeTargetSnap *prev,
                               const ProbeTargetSnap *cur, const char *id,
                               PolicyMetrics *out);

/* Host metrics over prev -> cur; @prev may be NULL.  TRUE if any group. */
gboolean probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                           PolicyHost *out);
