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
#include "policy-metrics.h"
#include "probe-snap.h"

/*
 * Metrics of iothread @id over prev -> cur.  @prev may be NULL.  Returns
 * TRUE when at least one group (io, cpu, exits) has rates; @out is filled
 * either way (when_ms, interval, triple, the have_* flags).
 */
/*
 * One tick's increase of an iothread's counters, paired by the rules below;
 * the one place those rules live.  PROBE_DELTA_ABSENT marks a figure the
 * pair cannot give (counter went backwards, source/pid/tid/device set or
 * clk_tck changed, not read): absent, never a wrong number.  The policy's
 * rates (probe_derive_iothread) and the store's per-tick deltas
 * (pt_history_sample) are both read from this.
 */
#define PROBE_DELTA_ABSENT G_MININT64

typedef struct {
    gint64 mono_ns, when_ms;            /* of the two snapshots */
    gint64 prev_mono_ns, prev_when_ms;
    /* I/O over the same device set, each device paired by name: absent as
     * a group when any device's counter went backwards. */
    gboolean have_io;
    gint64 rd_ops, wr_ops, flush_ops, rd_bytes, wr_bytes;
    gint64 rd_time_ns, wr_time_ns, flush_time_ns;
    /* With have_io and at most POLICY_MAX_DEVICES devices: each device's
     * operations (rd+wr+flush), in the current snapshot's order; else 0. */
    guint n_devices;
    gint64 dev_ops[POLICY_MAX_DEVICES];
    /* Same tid only.  run_delay_ns is read only with schedstat
     * (have_schedstat); it is absent without. */
    gboolean have_schedstat;
    gint64 cpu_ns, run_delay_ns, vol_ctxsw, nonvol_ctxsw;
    /* Same exit source only; by ProbeExitCounter. */
    gint64 exits[PROBE_EXIT_COUNTER_MAX];
} ProbeIothreadDeltas;

/* FALSE (with @d all absent) when there is no pair: no such iothread now,
 * no previous snapshot, another QEMU, or time did not advance. */
gboolean probe_derive_deltas(const ProbeTargetSnap *prev,
                             const ProbeTargetSnap *cur, const char *id,
                             ProbeIothreadDeltas *d);

gboolean probe_derive_iothread(const ProbeTargetSnap *prev,
                               const ProbeTargetSnap *cur, const char *id,
                               PolicyMetrics *out);

/* Host metrics over prev -> cur; @prev may be NULL.  TRUE if any group. */
gboolean probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                           PolicyHost *out);
