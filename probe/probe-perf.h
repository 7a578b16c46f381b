/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-perf: KVM exits counted with perf tracepoints, per thread of a QEMU
 * process, without QEMU's help.
 *
 * For each thread of @pid it opens one counter group (perf_event_open with
 * PERF_TYPE_TRACEPOINT, pid = tid, any CPU): kvm:kvm_exit as the leader,
 * kvm:kvm_userspace_exit and kvm:kvm_fast_mmio as members, so one read()
 * gives all three.  Tracepoint ids come from <tracefs>/events/kvm/<name>/id.
 *
 * Each read first lists <proc_root>/<pid>/task: threads that appeared since
 * are opened (they count from then on), threads that are gone are read a
 * last time, their counts kept, and their descriptors closed.  Totals thus
 * never go backwards while the process lives.  A tid reused between two
 * reads is not noticed; the kernel recycles tids slowly, so this is rare.
 *
 * Counting needs CAP_PERFMON (or root, or perf_event_paranoid <= 1 for own
 * processes).  Where it is refused, construction fails with the reason.
 */
#pragma once

#include <glib.h>
#include "probe-exits.h"

#define PROBE_PERF_MAX_EVENTS 3

typedef struct {
    const char *name;       /* for messages */
    guint32 type;           /* PERF_TYPE_* */
    guint64 config;
} ProbePerfEvent;

typedef struct ProbePerf ProbePerf;

/*
 * Look @name up in @tracefs_root/events/kvm/<name>/id.  @tracefs_root NULL
 * tries /sys/kernel/tracing, then /sys/kernel/debug/tracing.
 */
gboolean probe_perf_tracepoint_id(const char *tracefs_root, const char *name,
                                  guint64 *id, GError **error);

/* The three KVM tracepoints for @pid.  Fails when any id is unreadable or
 * the kernel refuses to count. */
ProbePerf *probe_perf_new_kvm(const char *proc_root, const char *tracefs_root,
                              int pid, GError **error);

/* Any 1..PROBE_PERF_MAX_EVENTS events: tests use software events. */
ProbePerf *probe_perf_new(const char *proc_root, int pid,
                          const ProbePerfEvent *events, guint n_events,
                          GError **error);

void probe_perf_free(ProbePerf *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbePerf, probe_perf_free)

/* Follow the thread list, then total each event over all threads seen. */
gboolean probe_perf_read_totals(ProbePerf *p, guint64 *totals, GError **error);

/* probe_perf_read_totals() for a KVM ProbePerf, as exit counters. */
gboolean probe_perf_read(ProbePerf *p, ProbeExitCounters *out, GError **error);

/* Threads currently counted. */
guint probe_perf_n_threads(const ProbePerf *p);
