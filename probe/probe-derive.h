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
 * The rates themselves are policy_metrics_from_delta()'s, which the polling
 * simulator's deltas go through too; the host's are policy-counters.h's
 * (PolicyHostDelta).
 */
#pragma once

#include <glib.h>
#include "metric-vec.h"
#include "policy-counters.h"
#include "policy-metrics.h"
#include "probe-snap.h"

/*
 * One tick's delta of iothread @id over prev -> cur (policy-metrics.h's
 * PolicyDelta): the one place the pairing rules above live, and, through
 * metric_vec_delta(), the one subtraction of its counters.  The daemon
 * derives it once per tick; the store's row and the policy's rates are
 * both read from it.  FALSE (with @d holding @cur's gauges only and
 * len_ns 0) when there is no pair: no such iothread now, no previous
 * snapshot, another QEMU, or time did not advance.
 */
gboolean probe_derive_delta(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                            const char *id, PolicyDelta *d);

/*
 * The policy's metrics of iothread @id over prev -> cur: the delta, then
 * policy_metrics_from_delta().  TRUE when at least one group (io, cpu,
 * exits) has rates; @out is filled either way (when_ms, triple).
 */
gboolean probe_derive_iothread(const ProbeTargetSnap *prev,
                               const ProbeTargetSnap *cur, const char *id,
                               PolicyMetrics *out);

/*
 * The host's delta over prev -> cur (policy-counters.h's PolicyHostDelta),
 * the one subtraction of the host's counters, through metric_vec_delta():
 * the vCPU threads' run delay is the sum of the deltas of the threads in
 * both snapshots.  The daemon derives it once per tick for the store's
 * host rows and the policy's host rates.  FALSE (every counter absent,
 * @cur's time and CPU count kept) when @prev is NULL or time did not
 * advance.
 */
gboolean probe_derive_host_delta(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                                 PolicyHostDelta *d);

/* The host's metrics of a delta of probe_derive_host_delta(), which
 * returned @paired.  TRUE if any group. */
gboolean probe_derive_host_from_delta(const PolicyHostDelta *d, gboolean paired,
                                      PolicyHost *out);

/* Host metrics over prev -> cur; @prev may be NULL.  TRUE if any group. */
gboolean probe_derive_host(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                           PolicyHost *out);
