/*
 * probe-exits: the KVM exit counters of one VM, from whichever source has
 * them, and the debugfs reader.
 *
 * Three sources count the same exits:
 *   query-stats   QEMU's KVM stats (vcpu target, summed over vCPUs), fed in
 *                 by the caller with probe_exit_counters_add_named();
 *   debugfs       <debugfs>/kvm/<pid>-<anything>/<stat>: KVM's per-VM sums,
 *                 matched on the pid prefix only;
 *   perf          kvm:kvm_exit, kvm:kvm_userspace_exit and kvm:kvm_fast_mmio
 *                 tracepoints counted per thread (probe-perf.h).
 * A ProbeExitCounters records which source filled it; figures from two
 * sources are never subtracted from each other.
 */
#pragma once

#include <glib.h>
#include "probe-read.h"

typedef enum {
    PROBE_EXIT_SOURCE_NONE,
    PROBE_EXIT_SOURCE_QUERY_STATS,
    PROBE_EXIT_SOURCE_DEBUGFS,
    PROBE_EXIT_SOURCE_PERF,
    PROBE_EXIT_SOURCE_MAX,
    PROBE_EXIT_SOURCE_INVALID = -1,
} ProbeExitSource;

const char *probe_exit_source_to_string(ProbeExitSource s);
ProbeExitSource probe_exit_source_from_string(const char *s);

/* Names are KVM's stat names; the last two exist only as tracepoints. */
typedef enum {
    PROBE_EXIT_EXITS,                   /* every exit (kvm_exit) */
    PROBE_EXIT_IO_EXITS,
    PROBE_EXIT_MMIO_EXITS,
    PROBE_EXIT_HALT_EXITS,
    PROBE_EXIT_HALT_SUCCESSFUL_POLL,
    PROBE_EXIT_HALT_ATTEMPTED_POLL,
    PROBE_EXIT_HALT_POLL_INVALID,
    PROBE_EXIT_HALT_WAKEUP,
    PROBE_EXIT_HALT_POLL_SUCCESS_NS,
    PROBE_EXIT_HALT_POLL_FAIL_NS,
    PROBE_EXIT_HALT_WAIT_NS,
    PROBE_EXIT_USERSPACE_EXITS,         /* kvm_userspace_exit */
    PROBE_EXIT_FAST_MMIO,               /* kvm_fast_mmio */
    PROBE_EXIT_COUNTER_MAX,
    PROBE_EXIT_COUNTER_INVALID = -1,
} ProbeExitCounter;

const char *probe_exit_counter_to_string(ProbeExitCounter c);
ProbeExitCounter probe_exit_counter_from_string(const char *s);

typedef struct {
    ProbeExitSource source;
    guint32 present;                    /* bit (1 << ProbeExitCounter) */
    guint64 v[PROBE_EXIT_COUNTER_MAX];
} ProbeExitCounters;

static inline gboolean
probe_exit_counters_has(const ProbeExitCounters *c, ProbeExitCounter k)
{
    return (c->present >> k) & 1;
}

/*
 * Add @value to the counter KVM calls @name (query-stats, libvirt's vcpu.N.*
 * after the prefix).  Unknown names are ignored: FALSE.  Saturates instead
 * of wrapping.
 */
gboolean probe_exit_counters_add_named(ProbeExitCounters *c, const char *name,
                                       guint64 value);

/* The debugfs source of one VM, found by its QEMU pid. */
typedef struct ProbeKvmDebugfs ProbeKvmDebugfs;

ProbeKvmDebugfs *probe_kvm_debugfs_new(const char *debugfs_root, int pid);
void probe_kvm_debugfs_free(ProbeKvmDebugfs *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeKvmDebugfs, probe_kvm_debugfs_free)

/*
 * Read the VM's counters (summed over every directory of the pid).  The
 * "exits" file is required; the others are taken when present.  Errors:
 * PROBE_ERROR_MISSING (no kvm directory, no directory for the pid),
 * PROBE_ERROR_ACCESS, PROBE_ERROR_PARSE.
 */
gboolean probe_kvm_debugfs_read(ProbeKvmDebugfs *d, ProbeExitCounters *out,
                                GError **error);
