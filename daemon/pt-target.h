/* SPDX-License-Identifier: GPL-2.0-or-later */
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
#include "policy-gain.h"
#include "pt-access.h"
#include "probe-sampler.h"
#include "store.h"
#include "pt-enum.h"

typedef enum {
    PT_TARGET_CONNECTING,
    PT_TARGET_ATTACHED,
    /* The channel failed while the QEMU may still run (its process is
     * there, or libvirt has the domain): retried with backoff. */
    PT_TARGET_LOST,
    /* Its QEMU exited: the process is gone, whether or not its socket
     * file was left behind (kill -9 leaves it).  Nothing is left to tune
     * or restore (pt_daemon_target_gone()). */
    PT_TARGET_GONE,
    PT_TARGET_STATE_MAX,
    PT_TARGET_STATE_INVALID = -1,
} PtTargetState;

PT_ENUM_DECL(pt_target_state, PtTargetState);

/* What became of a decision. */
typedef enum {
    PT_OUTCOME_APPLIED,             /* written */
    PT_OUTCOME_RECOMMENDED,         /* recorded only (recommend mode, or no write needed) */
    PT_OUTCOME_FAILED,              /* the write failed; last_failure says why */
    PT_OUTCOME_NOT_TAKEN,           /* answered, but the read-back still has the old value */
    PT_OUTCOME_MAX,
    PT_OUTCOME_INVALID = -1,
} PtOutcome;

PT_ENUM_DECL(pt_outcome, PtOutcome);

/* Metrics kept in memory per iothread, for `show` and the metrics
 * endpoint (the policy reads only the latest).  Older ticks are in the
 * store: 3600 here would be 75 MB at 100 VMs with two iothreads. */
#define PT_HISTORY_TICKS 120

/*
 * Every metric of the table (metric-table.h) since the daemon first saw
 * the iothread: for a counter the sums of the store's per-tick deltas, so
 * that the metrics endpoint can export counters that Prometheus rate()s
 * over any scrape interval, split by whether poll-max-ns was above 0
 * during the tick; for a gauge the last value read.  A source group stays
 * absent until it first gives a figure.
 */
typedef struct {
    gboolean have[METRIC_SOURCE_MAX];
    gboolean have_gauge[METRIC_MAX];    /* a gauge is there once read */
    gint64 v[METRIC_MAX][2];        /* [0] polling off, [1] poll-max-ns > 0 */
} PtIothreadTotals;

void pt_iothread_totals_add(PtIothreadTotals *tot, const StoreSample *s);

typedef struct {
    char *id;
    int tid;
    PtIothreadTotals totals;        /* read with pt_iothread_metric() */
    gboolean have_triple;
    PolicyTriple triple;            /* as last read */
    gboolean have_original;
    /* The originals are in the store: only then may the policy write,
     * since a crash must leave them to restore (a full disk can refuse
     * the save; it is tried again every tick). */
    gboolean original_saved;
    gboolean original_saved_failed; /* said once in the log */
    PolicyTriple original;
    GArray *history;                /* PolicyMetrics, oldest first, bounded */
    /* The gains against QEMU's default charged tick by tick, exported as
     * counters (policy-gain.h). */
    PolicyGain *gain;
    PolicyDecision *last_decision;  /* may be NULL */
    PtOutcome last_outcome;         /* of last_decision, when there is one */
    char *last_failure;             /* why, when PT_OUTCOME_FAILED */
    char *last_policy;              /* the policy that decided it */
    gint64 last_decision_ms;        /* when it was recorded */
    PolicyTriple last_old;          /* the triple it replaced */
    gboolean seen;                  /* present in the latest sample */
    /* Iothreads sharing devices are tuned as one group (probe-devmap.h):
     * @group is its first iothread's id, which the policy sees; NULL when
     * the iothread is on its own. */
    char *group;
    guint group_size;
    gboolean restored;              /* originals put back for observe */
    gboolean restoring;             /* a write of the originals is in flight */
    /* Writes are read back (PT_WRITE_BACKOFF_FIRST_MS): the next sample
     * taken after one completed shows whether it took. */
    gboolean write_verify;          /* a write waits for that sample */
    PolicyTriple write_expect;      /* what it wrote */
    PolicyTriple write_from;        /* what was there before it */
    gint64 write_done_us;           /* monotonic, when it ended */
    guint write_failures;           /* failed or without effect, in a row */
    gint64 write_retry_at_us;       /* monotonic: no policy write before */
    /* What tells a write of someone else's from ours (pt_daemon_note_read()):
     * the triple last read, the last one we wrote, and our writes still
     * in flight (write_done_us is when the last one ended, even failed). */
    gboolean have_read;
    PolicyTriple read;
    gboolean have_written;
    PolicyTriple written;
    guint writes_in_flight;
} PtIothread;

/*
 * A write that fails, or that QEMU answers but does not take (the next
 * sample still shows the old values), is not made again at once: the
 * policy's writes to the iothread wait 2 s, then twice as long after each
 * further failure, up to 10 minutes, and resume at once after a write
 * that takes.  One line when they start failing and one when they take
 * again; the attempts between are in the store's decisions only.  A peer
 * that fails every write so costs a few writes an hour, not one a tick.
 */
#define PT_WRITE_BACKOFF_FIRST_MS 2000
#define PT_WRITE_BACKOFF_MAX_MS (10 * 60 * 1000)

/* Metric @id of @io for the metrics endpoint: a counter's total (both
 * polling states, or only @polling's when 0 or 1; -1: both), a gauge's
 * value in force, the triple as last read or written.  FALSE while its
 * source has given no figure. */
gboolean pt_iothread_metric(const PtIothread *io, MetricId id, int polling, gint64 *v);

/*
 * A target whose channel keeps failing (refused, a bad greeting, garbage,
 * replies of the wrong shape) is retried with backoff: the first retry
 * after 1 s, each further one after twice the wait, up to 60 s; a minute of
 * good samples forgets the failures.  It is logged once when it breaks,
 * once when it recovers, and reminded of every 10 minutes in between;
 * state_reason says why and when the next attempt is as long as it is not
 * healthy.  A QMP socket that is created anew (a restarted QEMU) is tried
 * at once, whatever the wait.
 */
#define PT_BACKOFF_FIRST_MS 1000
#define PT_BACKOFF_MAX_MS 60000
#define PT_BACKOFF_RESET_MS 60000
#define PT_BROKEN_REMIND_MS (10 * 60 * 1000)

typedef struct {
    guint failures;             /* failed attempts since the last healthy minute */
    guint backoff_ms;           /* the wait after the last failure */
    gint64 retry_at_us;         /* monotonic: no attempt before */
    gint64 broken_since_us;     /* first failure since the last good sample; 0: healthy */
    gint64 reminded_us;         /* the last line logged about it */
    gint64 healthy_since_us;    /* first good sample since the last failure; 0: none */
    char *last_failure;
} PtTargetHealth;

typedef struct PtTarget PtTarget;

/* Asked by the backend at every connect, once the peer's process is known
 * (t->pid, t->process) and before a byte is exchanged: may @t reach it?
 * FALSE with @error when it may not (another target has that QEMU). */
typedef gboolean (*PtTargetAdmit)(PtTarget *t, gpointer data, GError **error);

typedef void (*PtSampleDone)(PtTarget *t, ProbeTargetSnap *snap, const GError *error,
                             gpointer user_data);
typedef void (*PtApplyDone)(PtTarget *t, const GError *error, gpointer user_data);

typedef struct {
    /* Fill @snap (owned by the caller until done) and call pt_target_sample_finish(). */
    void (*sample)(PtTarget *t, ProbeTargetSnap *snap);
    /* Write the members of @to that differ from @from; call pt_target_apply_finish(). */
    void (*apply)(PtTarget *t, const char *iothread, const PolicyTriple *from,
                  const PolicyTriple *to, gint64 bound, gpointer job);
    /* Once a tick: reach a lost target again if its channel is back, with
     * the backoff of PtTargetHealth.  NULL when the channel reconnects by
     * itself (libvirt's connection brings its domains back). */
    void (*retry)(PtTarget *t);
    /* A stop: reach a lost target at once, whatever its backoff, so that
     * its originals can be put back; called again while it returns TRUE,
     * which it does while the channel is being made or may still be made
     * (its QEMU runs).  NULL: as for retry. */
    gboolean (*reach_now)(PtTarget *t);
    /* Called once attached -> about to be dropped; release the channel. */
    void (*close)(PtTarget *t);
    void (*free)(PtTarget *t);
} PtTargetOps;

struct PtTarget {
    gint ref;
    const PtTargetOps *ops;
    /* The identity: unique among the targets, stable across restarts of
     * the VM and of the daemon, and the key of everything kept about the
     * target (the daemon's table, the store's rows and originals, the
     * engine's state, the metrics' socket label).  A libvirt domain's
     * name; a QMP target's socket path, since a socket's file name
     * (every /srv/vms/NAME/qmp.sock is "qmp") or QEMU's -name (which two
     * VMs may share, and which is known only once connected) is not. */
    char *name;
    /* The name shown beside it and accepted for it by commands: a QMP
     * target's name given to attach, else QEMU's own (query-name, its
     * -name), else its socket's file name without the extension; NULL
     * when it has none but @name (libvirt). */
    char *display;
    gboolean display_given;         /* given by the operator: QEMU's does not replace it */
    /* Settled (given, or QEMU answered query-name) and not yet checked
     * against the other targets' names (pt_daemon_check_name()). */
    gboolean display_changed;
    char *name_clash;               /* the name another target shares, said once */
    /* The name the store kept it under before identities were socket paths
     * (a QMP socket's file name, or the name given to attach), where the
     * originals of a run that crashed before an upgrade are; NULL: none. */
    char *former_name;
    char *uuid;                     /* libvirt only */
    StoreTargetKind kind;
    PtTargetState state;
    char *state_reason;             /* why connecting or lost */
    int pid;
    /* The QEMU process behind the channel (pt_instance_for_pid(),
     * pt_instance_for_domain()); NULL while unknown.  Originals belong to
     * one instance. */
    char *instance;
    /* The QEMU process itself, pt_instance_for_pid() of @pid, whatever the
     * channel: one QEMU is one target, however many paths lead to it
     * (pt_daemon_admit()).  NULL while unknown. */
    char *process;
    PtTargetAdmit admit;            /* NULL: every connect is admitted */
    gpointer admit_data;
    /* Why a connect was refused (another target has this QEMU, the path
     * now leads elsewhere, or whoever attached it may no longer reach it):
     * the daemon drops the target with this line.  NULL: not refused. */
    char *refused;
    gboolean detached;              /* dropped by the daemon */
    gboolean gone_pending;          /* GONE, for the daemon to act on */

    ProbeTarget *probe;             /* NULL until the pid is known */
    ProbeExitsMode exits_mode;
    /* Set by the backend: why the guest has no KVM exits at all (TCG,
     * -machine none), or NULL; and why QEMU reports no exits itself
     * (query-stats), or NULL. */
    char *exits_no_kvm;
    char *exits_unreported;
    /* The QEMU release, e.g. 10002001 for 10.2.1 (libvirt's encoding,
     * major * 1000000 + minor * 1000 + micro); 0: not known. */
    guint32 qemu_version;
    ProbeTargetSnap *prev;          /* last completed sample */
    GHashTable *iothreads;          /* id -> PtIothread */
    gboolean have_exits_total;
    gint64 exits_total;             /* KVM exits of the VM since first seen */
    /* The iothread ids this QEMU process brought (pt_target_admit_iothread()). */
    GHashTable *admitted;
    guint admitted_peak;            /* the most it reported at once */
    gboolean admit_full_said;

    gboolean sampling;
    /* A stop found it attached but never sampled: its iothreads were read
     * once more, so that their originals could be put back. */
    gboolean stop_read;
    /* A stop found it lost and tries to reach it at once: once attached
     * again it is read like a target never sampled. */
    gboolean stop_reconnect;
    gint64 sample_start_us;         /* monotonic, of the running sample */
    double sample_ms;               /* the last sample took; < 0: none yet */
    guint failed_samples;           /* consecutive, reset by a good one */
    guint64 sample_tick;            /* the tick that started the running sample */
    guint late_ticks;               /* consecutive ticks it gave no sample
                                     * by their deadline, reset by one in time */
    PtTargetHealth health;
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
/* Moving to LOST counts one failed attempt (see PtTargetHealth); @reason
 * NULL while broken keeps the last failure as the reason. */
void pt_target_set_state(PtTarget *t, PtTargetState state, const char *reason);
void pt_target_set_state_at(PtTarget *t, PtTargetState state, const char *reason,
                            gint64 now_us);
/* The outcome of a sample: a good one makes the target healthy, failed ones
 * make an attached target lost (at once when it is already broken). */
void pt_target_sample_result(PtTarget *t, const GError *error, gint64 now_us);
/* TRUE when the backoff allows another attempt. */
gboolean pt_target_retry_due(const PtTarget *t, gint64 now_us);
/* Once a tick: ops->retry, when the kind has one. */
void pt_target_retry(PtTarget *t);
/* A stop: ops->reach_now, FALSE when the kind has none. */
gboolean pt_target_reach_now(PtTarget *t);
/* Once a tick: the reminder of a target that stays broken. */
void pt_target_health_tick(PtTarget *t, gint64 now_us);
/* Learn (or change) the QEMU pid, and with it the process; a new pid
 * starts a new ProbeTarget. */
void pt_target_set_pid(PtTarget *t, int pid, const ProbeRoots *roots);
/* For backends, at a connect: t->admit's answer (TRUE without one); on
 * FALSE t->refused says why. */
gboolean pt_target_admit(PtTarget *t);

/* Learn which QEMU instance the target reaches now (@instance is taken,
 * may be NULL).  A different one forgets the originals held in memory:
 * they are looked up again, and captured again if they were another's. */
void pt_target_set_instance(PtTarget *t, char *instance);
/* "BOOT/PID/START": the QEMU process @pid for this boot, or NULL when its
 * start time cannot be read (no pid, another pid namespace). */
char *pt_instance_for_pid(const ProbeRoots *roots, int pid);
/* "BOOT/libvirt/UUID/ID": libvirt gives a domain a new id at every start. */
char *pt_instance_for_domain(const ProbeRoots *roots, const char *uuid, int id);

/* Start a sample; @done is called exactly once, possibly with an error. */
void pt_target_sample(PtTarget *t, gint64 mono_ns, gint64 when_ms,
                      PtSampleDone done, gpointer user_data);
/* For backends: end the sample started by ops->sample. */
void pt_target_sample_finish(PtTarget *t, ProbeTargetSnap *snap, GError *error);

/* Read thread counters of each iothread in @snap (by tid hint or name) and
 * choose the exit figures (QEMU's own in @snap->exits, if any, or a
 * host-side source; probe_target_choose_exits()).  For backends. */
void pt_target_sample_host_side(PtTarget *t, ProbeTargetSnap *snap);

/* Apply @to on @iothread; @done exactly once.  @bound caps poll-max-ns. */
void pt_target_apply(PtTarget *t, const char *iothread, const PolicyTriple *to,
                     gint64 bound, PtApplyDone done, gpointer user_data);
/* For backends: end an apply started by ops->apply. */
void pt_target_apply_finish(gpointer job, GError *error);

/* Record why the guest has no KVM exits (NULL: it may have) and why QEMU
 * itself reports none (NULL: it does, or it is not known yet). */
void pt_target_set_exits_facts(PtTarget *t, const char *no_kvm, const char *unreported);
/* The exit source chosen at the last sample and why; NONE before. */
ProbeExitSource pt_target_exit_source(const PtTarget *t, const char **why);
/* "10.2.1" from qemu_version, or NULL when unknown. */
char *pt_target_qemu_version_string(const PtTarget *t);

/* The name to show: the display name, else the identity. */
const char *pt_target_display(const PtTarget *t);
/* Set the display name (NULL: none), settled: to be checked against the
 * others' once more. */
void pt_target_set_display(PtTarget *t, const char *display);

/*
 * The iothreads one QEMU process may bring, by distinct id over its life.
 * A VM's iothreads are those of its command line and the few added while
 * it runs (object-add with a disk's hot-plug); ids that are new at every
 * query are no VM's, and each would leave a row and an original in the
 * store.  So a process may bring twice the most it reported at once, plus
 * PT_IOTHREAD_IDS_SPARE for hot-plugs over its life, and PT_IOTHREADS_MAX
 * in all.  PT_IOTHREADS_MAX is sized from the largest VM QEMU runs: q35
 * takes up to 4096 vCPUs since QEMU 9.0 (288 in 7.2), and a VM has no use
 * for more iothreads than vCPUs, whose requests they serve (one per queue
 * at the most, with iothread-vq-mapping; a virtio-blk device's queues
 * default to one per vCPU).
 */
#define PT_IOTHREADS_MAX 4096
#define PT_IOTHREAD_IDS_SPARE 64

/* TRUE when iothread @id, one of the @reported of a sample, may be kept;
 * the first one refused is said once (t->news). */
gboolean pt_target_admit_iothread(PtTarget *t, const char *id, guint reported);

PtIothread *pt_target_iothread(PtTarget *t, const char *id);
/* "applied", "recommended" or "failed: @failure", as the control protocol,
 * the store's reasons and the log show an outcome. */
char *pt_outcome_format(PtOutcome outcome, const char *failure);
/* Append metrics to the iothread's bounded history. */
void pt_iothread_push_metrics(PtIothread *io, const PolicyMetrics *m);

typedef struct {
    guint timeout_ms;
    const ProbeRoots *roots;            /* NULL: the host's */
    ProbeExitsMode exits;
    /* Whose reach the path is held to at every connect (copied); NULL:
     * the daemon's own (the configuration, a glob, root's attach). */
    const PtCred *reach;
    PtTargetAdmit admit;
    gpointer admit_data;
} PtQmpTargetOptions;

/* Direct QMP backend: @path is the monitor socket.  It connects at once:
 * t->refused set on return means the connect was refused. */
PtTarget *pt_target_qmp_new(const char *name, const char *path,
                            const PtQmpTargetOptions *opts);
/* The socket's path with every symbolic link resolved (realpath) at the
 * first connect that found it; NULL before.  A later connect that finds
 * the path leading elsewhere is refused. */
const char *pt_target_qmp_canonical(PtTarget *t);
const char *pt_target_qmp_path(PtTarget *t);
/* The name a QMP target goes by until QEMU tells its own: the socket's
 * file name without its extension, "vm-a" for /run/vm-a.qmp. */
char *pt_target_qmp_file_name(const char *path);
/* Reconnect a lost QMP target if its socket is back; no-op otherwise. */
void pt_target_qmp_retry(PtTarget *t);
/* The deadline of each command sent from now on. */
void pt_target_qmp_set_timeout(PtTarget *t, guint timeout_ms);
