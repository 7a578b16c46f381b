/*
 * pt-target: one VM the daemon tunes, whatever the channel to it.
 *
 * A target is a QEMU reached either through libvirt or through a QMP socket
 * of its own.  Both fill the same ProbeTargetSnap each tick (triples,
 * blockstats per iothread, thread counters, exits) and both apply a triple
 * to one iothread; the backend's ops do the channel-specific part.
 *
 * A target keeps, per iothread, the recent metrics the policy reads, the
 * original triple seen at first attach, and the last decision.
 *
 * Sampling and applying are asynchronous and each completes exactly once.
 * A target is reference counted so that a completion that arrives after the
 * daemon dropped it (detach, domain gone) finds it still valid and can see
 * it is detached.
 */
#pragma once

#include <gio/gio.h>

#include "policy.h"
#include "probe-sampler.h"
#include "store.h"

typedef enum {
    PT_TARGET_CONNECTING,
    PT_TARGET_ATTACHED,
    PT_TARGET_LOST,
    PT_TARGET_STATE_MAX,
} PtTargetState;

const char *pt_target_state_to_string(PtTargetState s);

/* Metrics kept in memory per iothread, for `show` and the metrics
 * endpoint (the policy reads only the latest).  Older ticks are in the
 * store: 3600 here would be 75 MB at 100 VMs with two iothreads. */
#define PT_HISTORY_TICKS 120

/*
 * Counters since the daemon first saw the iothread: the sums of the
 * store's per-tick deltas, so that the metrics endpoint can export
 * counters that Prometheus rate()s over any scrape interval.  A group
 * stays absent until its source first gives a figure.
 */
typedef struct {
    gboolean have_io, have_cpu;
    gint64 rd_ops, wr_ops, flush_ops;
    gint64 rd_bytes, wr_bytes;
    gint64 io_time_ns;              /* rd+wr+flush total_time: busy time */
    gint64 cpu_ns[2];               /* [0] polling off, [1] poll-max-ns > 0 */
    gint64 ctx_vol;                 /* voluntary switches: real blocks */
    gint64 runq_wait_ns;
} PtIothreadTotals;

void pt_iothread_totals_add(PtIothreadTotals *tot, const StoreSample *s);

typedef struct {
    char *id;
    int tid;
    PtIothreadTotals totals;
    gboolean have_triple;
    PolicyTriple triple;            /* as last read */
    gboolean have_original;
    PolicyTriple original;
    GArray *history;                /* PolicyMetrics, oldest first, bounded */
    PolicyDecision *last_decision;  /* may be NULL */
    char *last_outcome;             /* applied, recommended, failed: ... */
    char *last_policy;              /* the policy that decided it */
    gint64 last_decision_ms;        /* when it was recorded */
    PolicyTriple last_old;          /* the triple it replaced */
    gboolean seen;                  /* present in the latest sample */
    gboolean restored;              /* originals put back for observe */
} PtIothread;

typedef struct PtTarget PtTarget;

typedef void (*PtSampleDone)(PtTarget *t, ProbeTargetSnap *snap, const GError *error,
                             gpointer user_data);
typedef void (*PtApplyDone)(PtTarget *t, const GError *error, gpointer user_data);

typedef struct {
    /* Fill @snap (owned by the caller until done) and call pt_target_sample_finish(). */
    void (*sample)(PtTarget *t, ProbeTargetSnap *snap);
    /* Write the members of @to that differ from @from; call pt_target_apply_finish(). */
    void (*apply)(PtTarget *t, const char *iothread, const PolicyTriple *from,
                  const PolicyTriple *to, gint64 bound, gpointer job);
    /* Called once attached -> about to be dropped; release the channel. */
    void (*close)(PtTarget *t);
    void (*free)(PtTarget *t);
} PtTargetOps;

struct PtTarget {
    gint ref;
    const PtTargetOps *ops;
    char *name;
    char *uuid;                     /* libvirt only */
    StoreTargetKind kind;
    PtTargetState state;
    char *state_reason;             /* why connecting or lost */
    int pid;
    gboolean detached;              /* dropped by the daemon */

    ProbeTarget *probe;             /* NULL until the pid is known */
    ProbeExitsMode exits_mode;
    ProbeTargetSnap *prev;          /* last completed sample */
    GHashTable *iothreads;          /* id -> PtIothread */
    gboolean have_exits_total;
    gint64 exits_total;             /* KVM exits of the VM since first seen */

    gboolean sampling;
    gint64 sample_start_us;         /* monotonic, of the running sample */
    double sample_ms;               /* the last sample took; < 0: none yet */
    guint failed_samples;           /* consecutive, reset by a good one */
    PtSampleDone sample_done;
    gpointer sample_data;
    GPtrArray *news;                /* messages to log once (source states) */
};

PtTarget *pt_target_ref(PtTarget *t);
void pt_target_unref(PtTarget *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTarget, pt_target_unref)

/* For backends: allocate the common part (@size >= sizeof(PtTarget)). */
PtTarget *pt_target_alloc(gsize size, const PtTargetOps *ops, const char *name,
                          StoreTargetKind kind);
void pt_target_set_state(PtTarget *t, PtTargetState state, const char *reason);
/* Learn (or change) the QEMU pid; a new pid starts a new ProbeTarget. */
void pt_target_set_pid(PtTarget *t, int pid, const ProbeRoots *roots);

/* Start a sample; @done is called exactly once, possibly with an error. */
void pt_target_sample(PtTarget *t, gint64 mono_ns, gint64 when_ms,
                      PtSampleDone done, gpointer user_data);
/* For backends: end the sample started by ops->sample. */
void pt_target_sample_finish(PtTarget *t, ProbeTargetSnap *snap, GError *error);

/* Read thread counters of each iothread in @snap (by tid hint or name) and
 * the exits when the snapshot has none yet.  For backends. */
void pt_target_sample_host_side(PtTarget *t, ProbeTargetSnap *snap);

/* Apply @to on @iothread; @done exactly once.  @bound caps poll-max-ns. */
void pt_target_apply(PtTarget *t, const char *iothread, const PolicyTriple *to,
                     gint64 bound, PtApplyDone done, gpointer user_data);
/* For backends: end an apply started by ops->apply. */
void pt_target_apply_finish(gpointer job, GError *error);

PtIothread *pt_target_iothread(PtTarget *t, const char *id);
/* Append metrics to the iothread's bounded history. */
void pt_iothread_push_metrics(PtIothread *io, const PolicyMetrics *m);

/* Direct QMP backend: @path is the monitor socket. */
PtTarget *pt_target_qmp_new(const char *name, const char *path, guint timeout_ms,
                            const ProbeRoots *roots, ProbeExitsMode exits);
const char *pt_target_qmp_path(PtTarget *t);
/* Reconnect a lost QMP target if its socket is back; no-op otherwise. */
void pt_target_qmp_retry(PtTarget *t);
