/* SPDX-License-Identifier: GPL-2.0-or-later */
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
#include "metric-vec.h"
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

/*
 * A VM's exit counters, summed over its vCPUs: the metric vector's
 * METRIC_SOURCE_EXITS entries (METRIC_KVM_EXITS, ..., METRIC_FAST_MMIO),
 * cumulative, absent when the source has no such counter.
 */
typedef struct {
    ProbeExitSource source;
    MetricVec v;
} ProbeExitCounters;

/* Source @source, no counter read yet. */
void probe_exit_counters_init(ProbeExitCounters *c, ProbeExitSource source);

static inline gboolean
probe_exit_counters_has(const ProbeExitCounters *c, MetricId id)
{
    return metric_vec_has(&c->v, id);
}

/* The name KVM gives counter @id (its debugfs file, its query-stats and
 * libvirt name), or NULL for an entry that is no exit counter. */
const char *probe_exit_counter_to_string(MetricId id);
/* The entry KVM's counter @name is, or METRIC_INVALID. */
MetricId probe_exit_counter_from_string(const char *name);

/*
 * Add @value to the counter KVM calls @name (query-stats, libvirt's vcpu.N.*
 * after the prefix).  Unknown names are ignored: FALSE.  Saturates instead
 * of wrapping (at 2^63-1, as the vector holds a reading).  These figures are QEMU's own: a counter set without a
 * source becomes a query-stats one, so that no other source is taken for
 * it.
 */
gboolean probe_exit_counters_add_named(ProbeExitCounters *c, const char *name,
                                       guint64 value);

/*
 * Which source to believe for one VM, tick by tick.
 *
 * Sources are preferred in the order of the enum: QEMU's own query-stats,
 * then debugfs, then perf.  Preference alone is not enough: on some hosts
 * a source reads but never moves (perf's kvm:kvm_exit does not fire where
 * the exits are handled by an outer hypervisor), and its zeros would pass
 * for an idle guest.  So a source whose "exits" did not change over a tick
 * in which another source counted exits is dead, and stays dead until it
 * counts again; the first source with a reading that is not dead is
 * chosen.  Each change of the choice, or of why, is news for one log line.
 */
typedef struct {
    ProbeExitSource chosen;             /* NONE: no exit figures */
    char *why;                          /* why this one, and not the better */
    gboolean news;
    gboolean have_prev[PROBE_EXIT_SOURCE_MAX];
    guint64 prev[PROBE_EXIT_SOURCE_MAX];
    /* Per source: NONE while alive, else the source that counted when
     * this one did not. */
    ProbeExitSource dead[PROBE_EXIT_SOURCE_MAX];
} ProbeExitChoice;

void probe_exit_choice_init(ProbeExitChoice *ch);
void probe_exit_choice_clear(ProbeExitChoice *ch);

/*
 * Pick from this tick's @readings (indexed by source; NULL: not read).
 * @why_not[s] says why source s has no reading (NULL: not asked for).
 * Returns the chosen source; its reading is @readings[chosen].
 */
ProbeExitSource probe_exit_choice_pick(ProbeExitChoice *ch,
    const ProbeExitCounters *const readings[PROBE_EXIT_SOURCE_MAX],
    const char *const why_not[PROBE_EXIT_SOURCE_MAX]);

/* No exit figures at all, for a reason that is no source's (a guest
 * without KVM has no exits to count). */
void probe_exit_choice_set_absent(ProbeExitChoice *ch, const char *why);

/* TRUE while source @s reads but is dead (see above). */
gboolean probe_exit_choice_is_dead(const ProbeExitChoice *ch, ProbeExitSource s);

/* If the choice or its reason changed since the last call, TRUE and
 * "exits: <source>: <why>" for the log. */
gboolean probe_exit_choice_take_news(ProbeExitChoice *ch, char **message);

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
