/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-snap: counter snapshots, the raw material of one tick.
 *
 * A snapshot holds cumulative counters only, as read; rates come from two
 * snapshots in probe-derive.h.  The daemon fills a ProbeTargetSnap per VM
 * per tick: the poll triple and the block statistics from QMP or libvirt,
 * the thread counters and exit counters from probe-target.h (or
 * query-stats).  A ProbeHostSnap holds the host-wide figures and the run
 * delay of every vCPU thread of every VM.
 *
 * Block statistics are kept per device, not summed, so that a device that
 * appears, disappears or restarts from zero between two ticks is seen as
 * such instead of as a jump in a sum.
 */
#pragma once

#include <glib.h>
#include "metric-vec.h"
#include "policy-metrics.h"
#include "probe-exits.h"
#include "probe-host.h"
#include "probe-thread.h"

/* One block device: its counters (the metric table's METRIC_SOURCE_BLOCK
 * entries) as query-blockstats or libvirt report them, cumulative. */
typedef struct {
    char *name;
    char *source;               /* what backs it (probe-devmap.h); NULL: unknown */
    MetricVec v;
} ProbeDevice;

typedef struct {
    char *id;                   /* iothread id, e.g. "iothread1" */
    gboolean have_triple;
    PolicyTriple triple;
    gboolean have_block;        /* blockstats were read this tick */
    GArray *devices;            /* ProbeDevice of the devices it serves */
    /* Iothreads that share devices form a group (probe-devmap.h): each
     * member's devices are then the whole group's, and its block figures
     * the group's, not its own.  @group is the group's first iothread id,
     * NULL (and @group_size 1) for an iothread on its own. */
    char *group;
    guint group_size;
    int tid;                    /* before sampling: QEMU's thread-id or 0 */
    gboolean have_thread;
    ProbeThreadCounters thread;
    /* Settings in force (the metric table's METRIC_RESET_GAUGE entries),
     * absent until read; the triple's are set with it. */
    MetricVec gauges;
} ProbeIothreadSnap;

typedef struct {
    int pid;                    /* QEMU's pid: a new pid is a new baseline */
    gint64 mono_ns;             /* monotonic time of the sample */
    gint64 when_ms;             /* wall clock, UTC ms */
    guint64 clk_tck;            /* ticks per second of utime/stime */
    GPtrArray *iothreads;       /* ProbeIothreadSnap */
    ProbeExitCounters exits;    /* source NONE: no exit figures */
} ProbeTargetSnap;

ProbeTargetSnap *probe_target_snap_new(int pid, gint64 mono_ns, gint64 when_ms);
void probe_target_snap_free(ProbeTargetSnap *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeTargetSnap, probe_target_snap_free)

/* The iothread @id, added if missing. */
ProbeIothreadSnap *probe_target_snap_iothread(ProbeTargetSnap *s, const char *id);
/* The iothread @id, or NULL. */
const ProbeIothreadSnap *probe_target_snap_find(const ProbeTargetSnap *s,
                                                const char *id);

void probe_iothread_snap_set_triple(ProbeIothreadSnap *io,
                                    const PolicyTriple *triple);
/* Record gauge @id (a METRIC_RESET_GAUGE entry of the metric table) as read. */
void probe_iothread_snap_set_gauge(ProbeIothreadSnap *io, MetricId id, guint64 value);
/* Record device @name's counters and @source (NULL: unknown), replacing an
 * earlier record of it, and mark the iothread's blockstats as read. */
void probe_iothread_snap_add_device(ProbeIothreadSnap *io, const char *name,
                                    const char *source, const MetricVec *v);
/* Mark blockstats as read even if the iothread serves no device. */
void probe_iothread_snap_set_block_read(ProbeIothreadSnap *io);
void probe_iothread_snap_set_thread(ProbeIothreadSnap *io, int tid,
                                    const ProbeThreadCounters *c);

typedef struct {
    int pid;
    int tid;
    guint64 wait_ns;            /* schedstat run-queue wait */
} ProbeVcpuWait;

/*
 * The host's reading: its counters as the metric vector's METRIC_HOST_*
 * entries (PSI's total, /proc/stat's busy and total ticks), absent until
 * read, with what comes along with them; the vCPU threads' waits each
 * on its own (their sum is the delta's, probe_derive_host_delta()).
 */
typedef struct {
    gint64 mono_ns;
    gint64 when_ms;
    double psi_some_avg10;      /* with METRIC_HOST_PSI_SOME_US */
    double psi_full_avg10;      /* 0 when the kernel has no "full" line */
    guint n_cpus;               /* with METRIC_HOST_CPU_BUSY and _TOTAL */
    MetricVec v;
    GArray *vcpus;              /* ProbeVcpuWait */
} ProbeHostSnap;

ProbeHostSnap *probe_host_snap_new(gint64 mono_ns, gint64 when_ms);
void probe_host_snap_free(ProbeHostSnap *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeHostSnap, probe_host_snap_free)

void probe_host_snap_add_vcpu(ProbeHostSnap *s, int pid, int tid,
                              guint64 wait_ns);
/* Record /proc/pressure/cpu's reading. */
void probe_host_snap_set_psi(ProbeHostSnap *s, const ProbePsi *psi);
/* Record /proc/stat's reading. */
void probe_host_snap_set_cpu_stat(ProbeHostSnap *s, const ProbeCpuStat *stat);
/* Whether PSI, /proc/stat were read. */
static inline gboolean
probe_host_snap_has_psi(const ProbeHostSnap *s)
{
    return metric_vec_has(&s->v, METRIC_HOST_PSI_SOME_US);
}

static inline gboolean
probe_host_snap_has_stat(const ProbeHostSnap *s)
{
    return metric_vec_has(&s->v, METRIC_HOST_CPU_TOTAL);
}
