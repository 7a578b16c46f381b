/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-sampler: everything the host can tell about one VM, and about the
 * host, in one call per tick each.
 *
 * A ProbeTarget belongs to one QEMU process (by pid).  It resolves iothread
 * and vCPU thread ids, keeps them across ticks and resolves again when a
 * thread is gone or renamed, reads the thread counters into a snapshot, and
 * reads the VM's exit counters from debugfs or perf.  QMP and libvirt are
 * not its business: the daemon puts their figures (triple, blockstats,
 * query-stats) into the same snapshot.
 *
 * A ProbeHostSampler reads PSI and /proc/stat.
 *
 * Every source keeps a ProbeSource state (probe-source.h); a source that
 * fails is "unavailable: <reason>" and the others carry on.  Nothing here
 * reads a clock: the caller stamps the snapshots.
 */
#pragma once

#include <glib.h>
#include "probe-exits.h"
#include "probe-snap.h"
#include "probe-source.h"

typedef struct {
    const char *proc;       /* NULL: "/proc" */
    const char *debugfs;    /* NULL: "/sys/kernel/debug" */
    const char *tracefs;    /* NULL: /sys/kernel/tracing, then <debugfs>/tracing */
} ProbeRoots;

/* The host-side exit sources a target may use; QEMU's own query-stats is
 * preferred over them whenever the caller has it (except with OFF). */
typedef enum {
    PROBE_EXITS_OFF,        /* no exit figures at all */
    PROBE_EXITS_AUTO,       /* debugfs; perf when nothing better counts */
    PROBE_EXITS_DEBUGFS,
    PROBE_EXITS_PERF,
    PROBE_EXITS_MODE_MAX,
    PROBE_EXITS_MODE_INVALID = -1,
} ProbeExitsMode;

const char *probe_exits_mode_to_string(ProbeExitsMode m);
ProbeExitsMode probe_exits_mode_from_string(const char *s);

typedef struct ProbeTarget ProbeTarget;

ProbeTarget *probe_target_new(const ProbeRoots *roots, int pid);
void probe_target_free(ProbeTarget *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeTarget, probe_target_free)

int probe_target_pid(const ProbeTarget *t);

/*
 * Read the thread counters of iothread io->id into @io.  @tid_hint is the
 * thread-id QEMU reported (query-iothreads), or 0 to find the thread by
 * its name "IO <id>" (libvirt, debug-threads=on).  A given tid must be a
 * thread of the target.  On failure io->have_thread stays FALSE.
 */
gboolean probe_target_sample_iothread(ProbeTarget *t, ProbeIothreadSnap *io,
                                      int tid_hint, GError **error);

/* The tid the last sample of iothread @id used, or 0. */
int probe_target_iothread_tid(const ProbeTarget *t, const char *id);

/* Close what is kept open for iothread @id (it was deleted). */
void probe_target_forget_iothread(ProbeTarget *t, const char *id);

/*
 * One call per tick for the whole VM: sample every iothread of @snap (each
 * io->tid, when set, is QEMU's thread-id and used as the hint), forget the
 * iothreads @snap no longer has, and fill the exits per @mode.  Returns
 * how many iothreads were read; the errors of the others are appended to
 * @errors (if non-NULL) as strings.
 */
guint probe_target_sample_snap(ProbeTarget *t, ProbeTargetSnap *snap,
                               ProbeExitsMode mode, GPtrArray *errors);

/*
 * Add the run-queue wait of every vCPU thread ("CPU <n>/KVM" or "/TCG") to
 * @host.  Returns the number of vCPU threads read; 0 with the VCPU source
 * unavailable when there are none or schedstat is unusable.
 */
guint probe_target_sample_vcpus(ProbeTarget *t, ProbeHostSnap *host);

/*
 * Fill @snap->exits from the sources @mode allows.  Returns FALSE (and
 * leaves source NONE) when none could supply them; each failed source is
 * then unavailable with its reason.  snap->exits.source tells which source
 * supplied the figures.
 */
gboolean probe_target_sample_exits(ProbeTarget *t, ProbeExitsMode mode,
                                   ProbeTargetSnap *snap);

/*
 * Choose this tick's exit figures for the VM (probe-exits.h,
 * ProbeExitChoice).  On entry @snap->exits holds what QEMU reported
 * (query-stats) or nothing; @reported_why then says why (NULL: "not
 * offered").  Host-side sources are read per @mode: debugfs whenever it is
 * allowed, since it is cheap and cross-checks the others; perf only while
 * nothing better has live figures, since it holds descriptors per thread.
 * On return @snap->exits is the chosen source's reading, or source NONE.
 * @no_kvm, when non-NULL, says the guest runs without KVM: it has no exits,
 * no source is read, and the figures are absent rather than zero.
 */
ProbeExitSource probe_target_choose_exits(ProbeTarget *t, ProbeExitsMode mode,
                                          ProbeTargetSnap *snap,
                                          const char *reported_why,
                                          const char *no_kvm);
/* The last choice and why (never NULL once chosen; NULL before). */
ProbeExitSource probe_target_exit_source(const ProbeTarget *t, const char **why);

/* The state of one of the target's sources (THREAD .. PERF). */
const ProbeSource *probe_target_source(const ProbeTarget *t, ProbeSourceKind k);
/* Messages about sources whose state changed since the last call, or NULL. */
GPtrArray *probe_target_take_news(ProbeTarget *t);

typedef struct ProbeHostSampler ProbeHostSampler;

ProbeHostSampler *probe_host_sampler_new(const ProbeRoots *roots);
void probe_host_sampler_free(ProbeHostSampler *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeHostSampler, probe_host_sampler_free)

/* Fill PSI and /proc/stat of @snap; TRUE if either was read. */
gboolean probe_host_sampler_sample(ProbeHostSampler *h, ProbeHostSnap *snap);
const ProbeSource *probe_host_sampler_source(const ProbeHostSampler *h,
                                             ProbeSourceKind k);
GPtrArray *probe_host_sampler_take_news(ProbeHostSampler *h);
