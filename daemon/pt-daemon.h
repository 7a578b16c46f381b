/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon: polltuned's state and its tick.
 *
 * One tick (every conf->interval_ms):
 *   1. read the clocks once; sample the host, and start a sample of every
 *      attached target at once (each asynchronous, none waits for another);
 *   2. when all have answered, or at the tick's deadline (80% of the
 *      interval) for those that have not, derive metrics per iothread;
 *   3. write the tick to the store in one transaction;
 *   4. run the policy over the fresh metrics and their history;
 *   5. apply its decisions through each target's own channel, asynchronously;
 *   6. record each decision with its outcome when the write completes.
 * A target that has not answered by the deadline is skipped this tick and
 * its late answer dropped; the QMP timeout then marks it lost.
 *
 * The daemon captures each iothread's original triple at first attach (and
 * persists it), restores it on detach, in observe, and at exit when
 * restore-on-exit is set, and after an unclean exit when on-restart says so.
 */
#pragma once

#include <gio/gio.h>

#include "pt-conf.h"
#include "pt-target.h"
#include "policy-explain.h"
#include "store.h"

typedef struct PtDaemon PtDaemon;

/* Upper bounds (seconds) of the tick duration histogram's buckets; a last,
 * implicit bucket holds everything longer. */
#define PT_TICK_BUCKETS 14
extern const double pt_tick_bucket_le[PT_TICK_BUCKETS];

typedef struct {
    guint64 ticks;
    guint64 overruns;           /* ticks that took longer than the interval */
    guint64 late_targets;       /* target samples that missed a deadline */
    guint64 store_errors;
    guint64 decisions_applied, decisions_failed, decisions_recommended;
    double last_tick_ms;
    double tick_ms_p50, tick_ms_p99;
    /* Where tick time goes: waiting for the targets' answers (from the
     * tick's start to the last answer or the deadline), and the daemon's
     * own work after that (derive, store, policy, maintenance). */
    double last_wait_ms, last_work_ms;
    double wait_s_total, work_s_total;
    /* Tick durations, not cumulative: bucket i counts ticks in
     * (le[i-1], le[i]], the last one those longer than every bound. */
    guint64 tick_hist[PT_TICK_BUCKETS + 1];
    double tick_s_sum;
    gint64 started_ms;
} PtDaemonStats;

typedef struct {
    const char *proc_root;      /* NULL: /proc (tests point these elsewhere) */
    const char *debugfs_root;
    const char *tracefs_root;
} PtDaemonRoots;

/* The directory of @database exists, or is the state directory and was
 * created; fails naming it otherwise. */
gboolean pt_daemon_prepare_state_dir(const char *database, GError **error);

/* Takes @conf.  Opens the store; nothing runs until pt_daemon_start(). */
PtDaemon *pt_daemon_new(PtConf *conf, const PtDaemonRoots *roots, GError **error);
void pt_daemon_free(PtDaemon *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtDaemon, pt_daemon_free)

/* Attach configured targets, start the tick timer. */
gboolean pt_daemon_start(PtDaemon *d, GError **error);

/*
 * Stop ticking; restore originals when restore-on-exit is set, waiting at
 * most @timeout_ms for the writes; then call @done.  After a kill -9 the
 * next start recovers instead (see on-restart).
 */
void pt_daemon_shutdown(PtDaemon *d, guint timeout_ms, GCallback done, gpointer user_data);
/* The time a stop gets now: sized from the writes it may have to make. */
guint pt_daemon_stop_timeout_ms(PtDaemon *d);

/* Replace the configuration with @conf (taken).  On error nothing
 * changes: a key read only at start that differs is refused, naming it. */
gboolean pt_daemon_reload(PtDaemon *d, PtConf *conf, GError **error);
/* The one reload path, for SIGHUP and the control command `reload`: read
 * the running configuration's file again, put the command-line settings in
 * front as at start, and pt_daemon_reload() it.  Logs the outcome. */
gboolean pt_daemon_reload_file(PtDaemon *d, GError **error);

const PtConf *pt_daemon_get_conf(PtDaemon *d);
StoreDb *pt_daemon_get_store(PtDaemon *d);
PtMode pt_daemon_get_mode(PtDaemon *d);
void pt_daemon_get_stats(PtDaemon *d, PtDaemonStats *stats);
const PolicyHost *pt_daemon_get_host(PtDaemon *d);
/* Targets sorted by name (PtTarget *, borrowed). */
GPtrArray *pt_daemon_list_targets(PtDaemon *d);
/* The target whose identity is @name (pt-target.h), or NULL. */
PtTarget *pt_daemon_find_target(PtDaemon *d, const char *name);
/* The target @name names: its identity, or else the display name of one
 * target alone (QEMU's -name, or the name given to attach).  Fails with
 * G_IO_ERROR_NOT_FOUND, or G_IO_ERROR_INVALID_ARGUMENT naming the paths of
 * the targets that share the name. */
PtTarget *pt_daemon_resolve_target(PtDaemon *d, const char *name, GError **error);
/* The policy in force for a target or iothread (formatted spec). */
char *pt_daemon_policy_for(PtDaemon *d, const char *target, const char *iothread);
/* The operator's override in force on @target/@iothread (set on it or on
 * the whole target), or NULL; borrowed until the overrides next change. */
const PolicyOverrideInfo *pt_daemon_override_for(PtDaemon *d, const char *target,
                                                 const char *iothread);
/* A write made outside polltune that the policy holds as an implicit
 * override (docs/POLICY.md): FALSE when none.  Out-parameters may be NULL. */
gboolean pt_daemon_external_hold_for(PtDaemon *d, const char *target, const char *iothread,
                                     PolicyTriple *triple, gint64 *since_ms, gint64 *until_ms);
/* The policy's current view of @io (pt-daemon-explain.c). */
PolicyExplain *pt_daemon_explain(PtDaemon *d, PtTarget *t, PtIothread *io);
/* Where the policy in force for @target/@iothread comes from: "default",
 * "config", "policy-set" or "libvirt-metadata"; *@detail (to free) says
 * which rule. */
const char *pt_daemon_policy_source(PtDaemon *d, const char *target, const char *iothread,
                                    char **detail);
/* Whether libvirt is in use (*enabled) and connected now; *connects is
 * how many times the connection came up since the start (0: never, as on
 * a host without libvirtd). */
gboolean pt_daemon_libvirt_connected(PtDaemon *d, gboolean *enabled, guint64 *connects);
/* Estimated polling CPU across all iothreads, in cores, last tick. */
double pt_daemon_polling_cores(PtDaemon *d);

/* Control operations.  Each validates and fails with a message for operators. */
gboolean pt_daemon_set_mode(PtDaemon *d, PtMode mode, GError **error);
/* The same, from an operator at run time: the mode then holds across
 * reloads (the file's mode no longer replaces it) until the next stop. */
gboolean pt_daemon_set_runtime_mode(PtDaemon *d, PtMode mode, GError **error);
/* The mode set at run time, or PT_MODE_INVALID when the file's holds. */
PtMode pt_daemon_get_runtime_mode(PtDaemon *d);
/* Attach again libvirt domain @domain (name or UUID) detached by request. */
gboolean pt_daemon_attach_libvirt(PtDaemon *d, const char *domain, char **name_out,
                                  GError **error);
/* Attach the QMP socket at @path for a caller with @reach (NULL: root):
 * every connect to it, now and later, is held to what she could reach. */
gboolean pt_daemon_attach_qmp(PtDaemon *d, const char *path, const char *name,
                              const PtCred *reach, char **name_out, GError **error);
gboolean pt_daemon_detach(PtDaemon *d, const char *name, GError **error);
/* Rules set at run time are stored and outlive reloads and restarts. */
gboolean pt_daemon_policy_set(PtDaemon *d, const char *glob, const char *spec,
                              const char *who, GError **error);
gboolean pt_daemon_policy_clear(PtDaemon *d, const char *glob, GError **error);
/*
 * The longest an override may be set for.  An override is the operator's
 * temporary hand on an iothread: a maintenance window, a benchmark, an
 * incident; one meant to outlast a year is a rule (policy-set) or an
 * override without expiry.  The bound also keeps now + for far from the
 * end of gint64: "106751991d" is within gint64 as milliseconds, and the
 * expiry used to wrap to a negative time, stored already expired.
 */
#define PT_OVERRIDE_FOR_MAX_MS (366 * G_GINT64_CONSTANT(86400000))
#define PT_OVERRIDE_FOR_MAX_TEXT "366d"
/* poll_grow/poll_shrink < 0: keep the current value.  @for_ms 0: no expiry;
 * otherwise 1..PT_OVERRIDE_FOR_MAX_MS.  Replaces the override of exactly
 * @target and @iothread (the whole target when NULL), whose id goes to
 * @replaced_out (0: there was none). */
gboolean pt_daemon_override_set(PtDaemon *d, const char *target, const char *iothread,
                                gint64 poll_max_ns, gint64 poll_grow, gint64 poll_shrink,
                                gint64 for_ms, const char *who, const char *reason,
                                gint64 *id_out, gint64 *expires_out, gint64 *replaced_out,
                                GError **error);
/* By @id when > 0, else by @target (required then) and @iothread.
 * Returns how many, with @error set when none. */
guint pt_daemon_override_clear(PtDaemon *d, const char *target, const char *iothread,
                               gint64 id, GError **error);

/*
 * The workload memory (pt-daemon-memory.c) of @vm, the name the VM goes by
 * (pt_daemon_vm_name()), one listing per iothread (@iothread NULL: every
 * iothread with entries), read from the engine while it holds it, else
 * from the store.  @t: the attached target of that name, or NULL for a VM
 * the daemon does not reach now.
 */
typedef struct {
    char *iothread;
    GPtrArray *rows;            /* PtMemoryRow *, ordered by signature */
} PtMemoryListing;
void pt_memory_listing_free(PtMemoryListing *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtMemoryListing, pt_memory_listing_free)
GPtrArray *pt_daemon_memory_list(PtDaemon *d, PtTarget *t, const char *vm,
                                 const char *iothread, GError **error);
/* Forgets it, in the store and in the engine; @dropped: how many entries. */
gboolean pt_daemon_memory_forget(PtDaemon *d, PtTarget *t, const char *vm,
                                 const char *iothread, guint *dropped, GError **error);
/* The name a VM's memory is kept under: the name status shows. */
const char *pt_daemon_vm_name(const PtTarget *t);

/* Render the exposition (pt-metrics.c): OpenMetrics 1.0, or the Prometheus
 * text format 0.0.4 when @openmetrics is FALSE. */
char *pt_daemon_render_metrics(PtDaemon *d, gboolean openmetrics);
