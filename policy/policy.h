/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy: decides each iothread's polling triple.
 *
 * Contract:
 *  - Pure.  No I/O, no clock reads, no globals.  Time comes in as @now_ms,
 *    measurements as PolicyMetrics / PolicyHost (policy-metrics.h), and the
 *    only state is the PolicyEngine the caller owns and passes back in.
 *  - One call of policy_engine_tick() per tick returns one PolicyDecision per
 *    input iothread: either no change, or a new triple, always with a
 *    human-readable reason and the evidence behind it.
 *  - In POLICY_MODE_RECOMMEND decisions carry apply = FALSE; the caller
 *    records and shows them but does not write.
 *  - Errors follow GLib: GError **error last, FALSE/NULL on failure.
 *
 * docs/POLICY.md explains every policy, objective and guard rail.
 */
#pragma once

#include <glib.h>

#include "common/pt-memory-row.h"
#include "policy-metrics.h"

#define POLICY_ERROR (policy_error_quark())
GQuark policy_error_quark(void);

typedef enum {
    POLICY_ERROR_INVALID,       /* a name, triple or setting is not acceptable */
} PolicyErrorCode;

typedef enum {
    POLICY_KIND_OBSERVE,
    POLICY_KIND_OFF,
    POLICY_KIND_STATIC,
    POLICY_KIND_QEMU_DEFAULT,
    POLICY_KIND_ADAPTIVE,
    POLICY_KIND_MAX,
    POLICY_KIND_INVALID = -1,
} PolicyKind;

typedef enum {
    POLICY_OBJECTIVE_LATENCY,
    POLICY_OBJECTIVE_EFFICIENCY,
    POLICY_OBJECTIVE_BALANCED,
    POLICY_OBJECTIVE_MAX,
    POLICY_OBJECTIVE_INVALID = -1,
} PolicyObjective;

typedef enum {
    POLICY_MODE_ENFORCE,
    POLICY_MODE_RECOMMEND,
    POLICY_MODE_MAX,
    POLICY_MODE_INVALID = -1,
} PolicyMode;

/* Which rule produced a decision. */
typedef enum {
    POLICY_CAUSE_NONE,          /* no change */
    POLICY_CAUSE_OVERRIDE,
    POLICY_CAUSE_POLICY,        /* off / static / qemu-default */
    POLICY_CAUSE_IDLE,          /* adaptive: too little I/O to poll for */
    POLICY_CAUSE_PROBE,         /* adaptive: trying an alternative */
    POLICY_CAUSE_ACCEPT,        /* adaptive: a probe paid off, kept */
    POLICY_CAUSE_ROLLBACK,      /* hysteresis: objective got worse */
    POLICY_CAUSE_CONTENTION,    /* host contention guard */
    POLICY_CAUSE_BUDGET,        /* host polling CPU budget */
    POLICY_CAUSE_REMEMBERED,    /* adaptive: the winner remembered for this workload */
    POLICY_CAUSE_MAX,
    POLICY_CAUSE_INVALID = -1,
} PolicyCause;

const char *policy_kind_to_string(PolicyKind kind);
PolicyKind policy_kind_from_string(const char *s);
const char *policy_objective_to_string(PolicyObjective objective);
PolicyObjective policy_objective_from_string(const char *s);
const char *policy_mode_to_string(PolicyMode mode);
PolicyMode policy_mode_from_string(const char *s);
const char *policy_cause_to_string(PolicyCause cause);
PolicyCause policy_cause_from_string(const char *s);

/*
 * What an objective maximises for one tick of one iothread, in natural-log
 * units of IOPS (0.01 is about 1%):
 *   latency     ln(IOPS) - ln(mean latency in us)
 *   balanced    ln(IOPS) - 0.10 * whole-VM polling cores
 *   efficiency  ln(IOPS) - 0.50 * whole-VM polling cores
 * Whole-VM cores are the iothread's CPU plus, where exit counters exist,
 * the vCPU time the guest's exits cost (exits/s x exit_cost_ns): polling
 * that suppresses kicks gives that time back to the vCPUs.  The weights and
 * the exit cost are PolicyConfig fields (docs/POLICY.md, "Objectives");
 * these two functions use their defaults.
 */
double policy_objective_score(PolicyObjective o, const PolicyMetrics *m);
double policy_objective_cpu_weight(PolicyObjective o);

gboolean policy_triple_equal(const PolicyTriple *a, const PolicyTriple *b);
/* "poll-max-ns/poll-grow/poll-shrink", e.g. "32768/0/0". */
char *policy_triple_format(const PolicyTriple *t);
gboolean policy_triple_parse(const char *s, PolicyTriple *out, GError **error);

/* What to run on one target or iothread. */
typedef struct {
    PolicyKind kind;
    PolicyObjective objective;  /* adaptive only */
    PolicyTriple triple;        /* static only */
} PolicySpec;

/*
 * Text form: "observe", "off", "qemu-default", "static:70000/2/2",
 * "adaptive" (balanced), "adaptive:latency".
 */
gboolean policy_spec_parse(const char *s, PolicySpec *out, GError **error);
char *policy_spec_format(const PolicySpec *spec);

/*
 * Where a rule or an override comes from, lowest precedence first: a rule
 * of a later origin wins over one of an earlier origin whatever their
 * globs.  The names are external (policy get's "source", the log).
 */
typedef enum {
    POLICY_ORIGIN_CONFIG,           /* the configuration file's [rule] groups */
    POLICY_ORIGIN_LIBVIRT_METADATA, /* a libvirt domain's <metadata> */
    POLICY_ORIGIN_POLICY_SET,       /* policy-set at run time, kept in the store */
    POLICY_ORIGIN_EXTERNAL_WRITE,   /* implicit: someone else wrote the triple */
    POLICY_ORIGIN_OVERRIDE,         /* override set by an operator */
    POLICY_ORIGIN_MAX,
    POLICY_ORIGIN_INVALID = -1,
} PolicyOrigin;

const char *policy_origin_to_string(PolicyOrigin origin);
PolicyOrigin policy_origin_from_string(const char *s);

typedef struct {
    char *glob;                 /* matched against "target" and "target/iothread" */
    PolicySpec spec;
    PolicyOrigin origin;
    char *who;                  /* who set it (NULL for the file's) */
    gint64 set_ms;              /* when (0 for the file's) */
} PolicyRule;

typedef struct {
    PolicyMode mode;
    PolicySpec default_spec;    /* when no rule matches */
    GPtrArray *rules;           /* PolicyRule *, first match wins */

    /* Bounds (guard rail). grow/shrink 0 means QEMU's default and is allowed. */
    guint64 max_poll_max_ns;
    guint64 grow_min, grow_max;
    guint64 shrink_min, shrink_max;

    gint64 min_dwell_ms;        /* minimum time between writes to one iothread */
    gint64 revalidate_ms;       /* adaptive re-probes a settled choice this often */
    gint64 memory_ttl_ms;       /* a remembered winner not confirmed this long is explored again (0: 7 days) */
    double rollback_tolerance;  /* objective units (natural log of IOPS) */
    double probe_margin;        /* a probe that costs more CPU must win by this */
    double change_ratio;        /* relative IOPS change that means a new workload */
    double idle_iops;           /* below this adaptive turns polling off */
    guint64 probe_poll_max_ns;  /* the wide window adaptive tries */
    double saving_per_block_ns; /* at most what one avoided block saves */

    /*
     * The objectives' judgements (docs/POLICY.md, "Objectives"): what a
     * core of CPU is worth in ln IOPS for balanced and efficiency, and the
     * vCPU time one KVM exit costs, which counts as CPU where exit
     * counters exist (0: exits are not counted).
     */
    double balanced_cpu_weight;
    double efficiency_cpu_weight;
    double exit_cost_ns;

    /* Contention guard: thresholds in %, 0 disables the signal. */
    double psi_some_limit;
    double vcpu_delay_limit;
    double iothread_delay_limit;
    gint64 contention_holdoff_ms;

    /*
     * A triple someone else wrote (an operator, virsh iothreadset, another
     * tool) is held as an implicit override for this long; 0 disables it.
     */
    gint64 external_hold_ms;

    double budget_cores;        /* host-wide polling CPU, 0 = unlimited */
} PolicyConfig;

PolicyConfig *policy_config_new(void);
void policy_config_free(PolicyConfig *config);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyConfig, policy_config_free)

/* Appends a rule of the configuration file: the file's first match wins. */
gboolean policy_config_add_rule(PolicyConfig *config, const char *glob,
                                const PolicySpec *spec, GError **error);
/*
 * Sets the rule for @glob of @origin (not CONFIG), replacing the one
 * @glob had from that origin: it goes in front of the rules of its origin
 * (the newest wins) and of every lower one, behind those of higher ones.
 */
gboolean policy_config_set_rule(PolicyConfig *config, PolicyOrigin origin, const char *glob,
                                const PolicySpec *spec, const char *who, gint64 set_ms,
                                GError **error);
/* The rule for @glob of @origin, or NULL. */
const PolicyRule *policy_config_find_rule(const PolicyConfig *config, PolicyOrigin origin,
                                          const char *glob);
/* Removes the rule for @glob of @origin; FALSE when there is none. */
gboolean policy_config_clear_rule(PolicyConfig *config, PolicyOrigin origin,
                                  const char *glob);
/* Puts the rules of @origin that @from holds into @to, in their order, as
 * policy_config_set_rule() would.  Fails naming the first one @to's bounds
 * reject; @to is then unchanged. */
gboolean policy_config_copy_rules(PolicyConfig *to, const PolicyConfig *from,
                                  PolicyOrigin origin, GError **error);
gboolean policy_config_validate(const PolicyConfig *config, GError **error);
/* The spec that applies to @target/@iothread (@iothread may be NULL), for
 * a target that may also go by @name (NULL: none), such as a QMP target,
 * whose identity is its socket path and whose name is QEMU's -name: a
 * rule's glob may match either, the first rule that does wins. */
const PolicySpec *policy_config_lookup_named(const PolicyConfig *config, const char *target,
                                             const char *name, const char *iothread);
/* The objective's per-core weight and per-tick score under @config's judgements. */
double policy_config_cpu_weight(const PolicyConfig *config, PolicyObjective o);
double policy_config_score(const PolicyConfig *config, PolicyObjective o,
                           const PolicyMetrics *m);
/* Whole-VM cores of one tick: iothread CPU plus the exits' vCPU time. */
double policy_config_vm_cores(const PolicyConfig *config, const PolicyMetrics *m);
/* TRUE if @t is inside the configured bounds; else an error naming why. */
gboolean policy_config_check_triple(const PolicyConfig *config,
                                    const PolicyTriple *t, GError **error);
/* Clamp @t into the bounds; returns TRUE if anything changed. */
gboolean policy_config_clamp_triple(const PolicyConfig *config, PolicyTriple *t);

/* One iothread as the engine sees it during a tick. */
typedef struct {
    const char *target;
    const char *iothread;
    PolicyTriple current;           /* as read back from QEMU */
    const PolicyMetrics *history;   /* oldest first; the last is this tick */
    guint n_history;
    /* > 1: a group of iothreads that share devices, decided as one (the
     * caller applies the decision to each); its history's CPU figures are
     * the members' sum.  0 or 1: a single iothread. */
    guint n_iothreads;
    /* The QEMU that runs the iothread (0: unknown) and what the triple
     * means there; zero-initialised callers get UNKNOWN, read as 7.2. */
    guint32 qemu_version;
    PolicyPollModel poll_model;
    /* A group: the ids of its members, NULL-terminated (NULL: none given),
     * so that an override on any member pins the group. */
    const char *const *members;
    /* The name the target also goes by, which rules may match (a QMP
     * target's QEMU -name); NULL: none. */
    const char *name;
    /* The devices behind the iothread, as policy_signature_device_key()
     * writes them: part of every workload signature the memory keeps, so
     * that a new disk is learnt anew.  NULL: none known. */
    const char *device_key;
} PolicyIothreadInput;

typedef struct {
    char *target;
    char *iothread;
    gboolean change;        /* FALSE: leave the iothread alone */
    gboolean apply;         /* change && mode == enforce */
    PolicyTriple triple;    /* the new triple, or the current one */
    PolicyCause cause;
    char *reason;           /* one sentence for operators */
    char *evidence;         /* "key=value ..." measurements behind it */
} PolicyDecision;

void policy_decision_free(PolicyDecision *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyDecision, policy_decision_free)

typedef struct _PolicyEngine PolicyEngine;

/*
 * The engine copies nothing from @config: it keeps the pointer until freed,
 * so a configuration the caller edits (a reload) applies from the next tick.
 */
PolicyEngine *policy_engine_new(const PolicyConfig *config, GError **error);
void policy_engine_free(PolicyEngine *engine);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyEngine, policy_engine_free)

/*
 * Pin @triple on @target (every iothread when @iothread is NULL) until
 * @expires_ms (0: until cleared).  Overrides win over policies and guard
 * rails, but the triple must be inside the bounds.
 */
gboolean policy_engine_set_override(PolicyEngine *engine, const char *target,
                                    const char *iothread, const PolicyTriple *triple,
                                    gint64 expires_ms, GError **error);
gboolean policy_engine_clear_override(PolicyEngine *engine, const char *target,
                                      const char *iothread);
/* An active override, as listed for operators. */
typedef struct {
    char *target;
    char *iothread;             /* NULL: every iothread of the target */
    PolicyTriple triple;
    gint64 expires_ms;          /* 0: until cleared */
    PolicyOrigin origin;        /* OVERRIDE or EXTERNAL_WRITE */
    gint64 id;                  /* the caller's handle (the store's row id); 0: none */
    char *who;                  /* who set it; NULL: unknown */
    char *reason;               /* why; NULL: not given */
    gint64 set_ms;              /* when it was set */
    /* TRUE: the iothread keeps its live poll-grow / poll-shrink, only the
     * other members of the triple are pinned. */
    gboolean keep_grow, keep_shrink;
} PolicyOverrideInfo;

void policy_override_info_free(PolicyOverrideInfo *o);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyOverrideInfo, policy_override_info_free)

/*
 * The engine owns the overrides: one ordered list, oldest first, of
 * operator overrides (POLICY_ORIGIN_OVERRIDE) and of external writes held
 * as implicit ones (POLICY_ORIGIN_EXTERNAL_WRITE, which the engine adds
 * itself).  For an iothread, an override of a later origin wins over one of
 * an earlier origin; within an origin the newest that covers it wins,
 * whether set on the iothread, on any member of its group or on the whole
 * target.  An entry expires when now reaches expires_ms.
 * policy_engine_set_override() replaces the operator's override for exactly
 * @target and @iothread; policy_engine_clear_override() removes it.
 */
/*
 * Appends a copy of @o to the list, newest.  It replaces the entry of the
 * same origin set for exactly the same target and iothread, whose id goes
 * to @replaced_id (0: none replaced): a value set again is the value, as
 * with virsh iothreadset, and the older one does not come back when the
 * newer ends.  Entries for the whole target and for one iothread of it
 * are different entries.  The triple must be inside the bounds (a kept
 * member counts as 0).
 */
gboolean policy_engine_add_override(PolicyEngine *engine, const PolicyOverrideInfo *o,
                                    gint64 *replaced_id, GError **error);
/* Removes the entry whose id is @id (not 0); FALSE when there is none. */
gboolean policy_engine_remove_override(PolicyEngine *engine, gint64 id);
/*
 * The entry of @origin in force on @target/@iothread at @now_ms (set on the
 * iothread or the whole target; @iothread NULL: whole-target ones only), or
 * NULL.  Valid until the list next changes.
 */
const PolicyOverrideInfo *policy_engine_find_override(const PolicyEngine *engine,
                                                      PolicyOrigin origin, const char *target,
                                                      const char *iothread, gint64 now_ms);
/* PolicyOverrideInfo *, those not expired at @now_ms, in the order set. */
GPtrArray *policy_engine_list_overrides(const PolicyEngine *engine, gint64 now_ms);
/* Removes the entries of @origin expired at @now_ms and returns them
 * (PolicyOverrideInfo *, oldest first), for the caller to log. */
GPtrArray *policy_engine_take_expired(PolicyEngine *engine, PolicyOrigin origin,
                                      gint64 now_ms);

/* Drop all state of a target that went away. */
void policy_engine_forget(PolicyEngine *engine, const char *target);

/*
 * The caller wrote @t to an iothread itself, outside a decision (the
 * originals put back after an unclean exit, for observe mode or a
 * detach): when the live triple becomes @t, it is not an external write
 * to hold.
 */
void policy_engine_note_write(PolicyEngine *engine, const char *target, const char *iothread,
                              const PolicyTriple *t);

/*
 * The external write the policy holds on an iothread at @now_ms, as an
 * implicit override: FALSE when none is in force.  @triple, @since_ms and
 * @until_ms may be NULL.
 */
gboolean policy_engine_external_hold(const PolicyEngine *engine, const char *target,
                                     const char *iothread, gint64 now_ms, PolicyTriple *triple,
                                     gint64 *since_ms, gint64 *until_ms);

/*
 * The workload memory (policy/policy-memory.h) of each iothread, keyed as
 * the engine's other per-iothread state is, by target and iothread.  The
 * engine only holds it; the caller keeps it across restarts: it loads an
 * iothread's rows (PtMemoryRow) before that iothread's first tick, and
 * after each tick saves the rows of the iothreads that
 * policy_engine_memory_take_changed() names.  policy_engine_forget() keeps
 * the memory: a target that comes back finds what it had learnt.
 */
gboolean policy_engine_memory_load(PolicyEngine *engine, const char *target,
                                   const char *iothread, PtMemoryRow *const *rows, guint n,
                                   GError **error);
/*
 * The write budget's record (at most POLICY_WRITES_SHORT_MAX writes in 30 s
 * and POLICY_WRITES_LONG_MAX in 10 min of the policy's own, policy-private.h)
 * outlives a restart the same way: the caller reads back the times of
 * @target/@iothread's applied writes whose cause
 * policy_cause_is_own_write() (the store's decisions) and restores them
 * before the iothread's first tick, replacing what the engine holds.  A
 * restart then neither reopens the budget to a burst of writes nor, in a
 * lifetime, leaves the restarted run's writes out of step with the run
 * without it (the simulator's: -8% over the lifetime, on budget timing
 * alone).
 */
gboolean policy_cause_is_own_write(PolicyCause cause);
void policy_engine_writes_restore(PolicyEngine *engine, const char *target,
                                  const char *iothread, const gint64 *ts_ms, guint n);
/* The times (ms) of @target/@iothread's own writes the budget holds, as gint64. */
GArray *policy_engine_writes_recent(const PolicyEngine *engine, const char *target,
                                    const char *iothread);
/* PtMemoryRow * of @target/@iothread's memory; empty when it has none. */
GPtrArray *policy_engine_memory_rows(const PolicyEngine *engine, const char *target,
                                     const char *iothread);
/* The iothreads whose memory changed since the last call, as
 * PolicyIothreadKey *, and clears the mark. */
typedef struct {
    char *target;
    char *iothread;
} PolicyIothreadKey;
void policy_iothread_key_free(PolicyIothreadKey *k);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyIothreadKey, policy_iothread_key_free)
GPtrArray *policy_engine_memory_take_changed(PolicyEngine *engine);
/* Drops what @target/@iothread learnt (@iothread NULL: every iothread of
 * @target); the next tick of each explores afresh. */
void policy_engine_memory_forget(PolicyEngine *engine, const char *target,
                                 const char *iothread);

/* Returns PolicyDecision *, one per input, in input order. */
GPtrArray *policy_engine_tick(PolicyEngine *engine, const PolicyHost *host,
                              const PolicyIothreadInput *inputs, guint n_inputs,
                              gint64 now_ms);
