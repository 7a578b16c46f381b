/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-private: state and functions shared by the engine's files.  Not
 * installed, not for other components.
 */
#pragma once

#include "policy-memory.h"
#include "policy.h"

/*
 * The objectives' default judgements (docs/POLICY.md, "Objectives"):
 * balanced asks a core to buy >= 10.5% IOPS, efficiency >= 65%; an exit
 * costs the vCPU 12 us, the simulator's exit_cpu fitted to seed 004
 * (12.4 us, docs/SIMULATOR.md).
 */
#define POLICY_DEFAULT_BALANCED_CPU_WEIGHT 0.10
#define POLICY_DEFAULT_EFFICIENCY_CPU_WEIGHT 0.50
#define POLICY_DEFAULT_EXIT_COST_NS 12000.0

/*
 * Adaptive exploration candidates: off, the wide window, and a moderate
 * window (QEMU's default, or the triple in force when it is some other
 * window).  Every exploration measures all three, whatever it starts from
 * (the two polling candidates are POLICY_CAND_POLLING).
 */
enum {
    POLICY_CAND_OFF = 1 << 0,
    POLICY_CAND_WIDE = 1 << 1,
    POLICY_CAND_NARROW = 1 << 2,
    POLICY_CAND_POLLING = POLICY_CAND_WIDE | POLICY_CAND_NARROW,
    POLICY_CAND_ALL = POLICY_CAND_OFF | POLICY_CAND_POLLING,
};

/*
 * Ticks measured under one triple: the sums of the objective's per-tick
 * scores and of ln(IOPS), for means and the within-segment variance.
 */
typedef struct {
    PolicyTriple triple;
    guint n;
    double sum, sumsq;          /* objective score */
    double last_score, ssd;     /* the last score; squares of successive differences */
    double ln_iops_sum;
    double cpu_sum;             /* % of a core */
    double vm_cores_sum;        /* whole-VM cores (policy_config_vm_cores) */
    guint n_exits;              /* ticks with exit counters */
    /* ln(blocks per operation + SHAPE_FLOOR), ticks with CPU counters */
    guint n_shape;
    double shape_sum, shape_ssd, last_shape;
    PolicyMetrics last;
} PolicySegment;

/*
 * The adaptive policy's phase on one iothread.  Each tick runs the
 * handler of its phase (policy-adaptive-private.h), which may move it to another:
 *
 *   NEW -----------------------.      (nothing measured yet)
 *   IDLE ----------------------+--> START --> PROBE --> NEXT --> PROBE ...
 *   SETTLED --(a change)-------'              |          |
 *      ^                                      '----------+--> RETURN --.
 *      '-----------------------------------------------------------------'
 *
 * NEW and IDLE start an exploration on the first tick with load; SETTLED
 * when its change detectors fire.  START measures the triple in force;
 * each probe is written (the engine moves the phase to PROBE when it
 * applies one) and measured in PROBE; NEXT proposes the next candidate,
 * or ends the exploration: SETTLED on the start, or RETURN until the
 * winner is written back.  Before its first probe an exploration asks the
 * workload memory (IDLE before its write back to the baseline): a
 * remembered winner, or a workload not worth exploring, settles at once,
 * SETTLED or RETURN, without a probe.  Too little I/O sends any phase to IDLE with
 * polling off; an override, an external write or a guard's cut sends it
 * back to NEW.  The names are external (polltunectl explain's "phase").
 * The phase changes only in policy_adaptive_enter().
 */
typedef enum {
    POLICY_ADAPTIVE_NEW,
    POLICY_ADAPTIVE_IDLE,
    POLICY_ADAPTIVE_SETTLED,
    POLICY_ADAPTIVE_START,
    POLICY_ADAPTIVE_PROBE,
    POLICY_ADAPTIVE_NEXT,
    POLICY_ADAPTIVE_RETURN,
    POLICY_ADAPTIVE_MAX,
    POLICY_ADAPTIVE_INVALID = -1,
} PolicyAdaptivePhase;

const char *policy_adaptive_phase_to_string(PolicyAdaptivePhase phase);

/*
 * A tick that moved IOPS by a gross factor, waiting for a second tick the
 * same way to count as a new workload; in IDLE, the first tick of load.
 */
typedef enum {
    POLICY_GROSS_NONE,
    POLICY_GROSS_UP,
    POLICY_GROSS_DOWN,
} PolicyGrossMove;

/*
 * Polling's measured value on one iothread, for the contention and budget
 * guards: the best polling triple against off at the last exploration
 * that measured both.
 */
typedef struct {
    gboolean measured;          /* FALSE: nothing below is known */
    gboolean this_workload;     /* measured since the workload last changed */
    double gain;                /* objective gain of polling over off */
    double cores;               /* extra iothread CPU that buys it */
    gboolean net_measured;      /* exits counted under both: net_cores is known */
    double net_cores;           /* extra whole-VM CPU (< 0: polling saves vCPU time) */
    /* the best measured polling triple that beat off at no more whole-VM CPU */
    gboolean have_frugal;
    PolicySegment frugal;
} PolicyPollingValue;

/* The triple polltune last asked QEMU for, to tell its writes from others'. */
typedef struct {
    gboolean made;              /* FALSE: none yet */
    PolicyTriple triple;
} PolicyOwnWrite;

/*
 * The adaptive policy's write budget on one iothread: at most
 * POLICY_WRITES_SHORT_MAX writes in any POLICY_WRITES_SHORT_MS, and
 * POLICY_WRITES_LONG_MAX in any POLICY_WRITES_LONG_MS of one workload
 * (since the last change no noise can fake: a move by a factor of 3,
 * the load after an idle spell), every write the policy makes of its own
 * counted (probes, returns, idle): a host guard's cut is the host's
 * decision, neither counted nor held back, and an operator's override
 * is the operator's.  Every write resets QEMU's learned window, and a
 * policy that thrashes costs more than it finds.  An exploration is
 * admitted whole: its first probe is written only when all its probes and
 * the return after them fit, so that none is dropped half way; an idle
 * write waits until it fits.  Four in 30 s is one exploration (two probes and the return)
 * and an idle write; eight in ten minutes of one workload is an
 * exploration on each revalidation (every 300 s) and room to spare.
 */
#define POLICY_WRITES_SHORT_MS 30000
#define POLICY_WRITES_SHORT_MAX 4
#define POLICY_WRITES_LONG_MS 600000
#define POLICY_WRITES_LONG_MAX 8

/* Everything the engine remembers about one iothread between ticks. */
typedef struct {
    char *key;                  /* "target/iothread" */
    gboolean seen;
    PolicyTriple last_current;  /* as last reported */
    PolicyOwnWrite own_write;
    gint64 last_write_ms;       /* G_MININT64: never */
    /* the adaptive policy's last writes, a ring, for the write budget */
    gint64 write_log[POLICY_WRITES_LONG_MAX];
    guint write_log_next;
    gint64 write_epoch_ms;      /* the long window counts from here: the last certain change */

    PolicyAdaptivePhase phase;

    /*
     * The triple the iothread would have without polltune: the one it had
     * when the engine first saw it, or the last one written outside
     * polltune.  An exploration that cannot tell its candidates apart
     * ends there (do no harm), wherever it started.
     */
    PolicyTriple baseline;

    /*
     * SETTLED (and RETURN, once its winner lands): the reference the
     * workload is compared against, every steady tick under the settled
     * triple, and the change detector (two-sided CUSUMs of ln IOPS and of
     * the I/O's shape against the reference's means).
     */
    PolicySegment ref;
    gint64 ref_ms;
    double cusum_hi, cusum_lo;
    double shape_hi, shape_lo;  /* the same for the I/O's shape (blocks per op) */
    PolicyGrossMove gross;

    /* START .. RETURN: the exploration */
    guint pending;              /* POLICY_CAND_* not measured yet */
    const char *explore_why;    /* what began the exploration: a policy_adaptive_why_* */
    gboolean explore_contended; /* the contention guard let it poll on a contended host */
    PolicySegment seg_a;        /* the starting triple */
    PolicySegment seg_x;        /* PROBE: the probe being measured */
    PolicySegment done[2];      /* probes measured */
    guint n_done;
    PolicyTriple best;          /* RETURN: the triple to write back */
    PolicyCause best_cause;     /* RETURN: why (an exploration's rollback, a guard's cut) */

    /* per-tick noise of the score: within-segment squares of past explorations */
    double noise_ss, noise_df;

    PolicyPollingValue polling;
    gint64 holdoff_until_ms;    /* contention: no polling probes before */

    /*
     * The workload memory's part (docs/POLICY.md, "Memory").  A phase is
     * one workload, from the change that began it to the next change or
     * an idle spell; its signature is computed from its ticks.
     */
    gint64 phase_start_ms;      /* G_MININT64: no phase (new, idle) */
    guint phase_ticks;          /* ticks with I/O in this phase */
    gboolean have_sig;
    PolicySignature sig;        /* the phase's, as last looked up or learnt */
    gboolean mem_checked;       /* the memory was asked about this phase's exploration */
    gboolean recalled;          /* settled on a remembered winner, not yet confirmed */
    gboolean recalled_near;     /* ... of a neighbouring signature (policy_memory_lookup_near) */
    gboolean recall_contended;  /* this phase's remembered window was measured under contention */
    char *mem_note;             /* what the memory said last, for explain */
} PolicyIothreadState;

/* START, PROBE or NEXT: an exploration is measuring. */
gboolean policy_adaptive_exploring(const PolicyIothreadState *st);
/*
 * Move @st to @phase: the only place the phase changes.  NEW forgets the
 * exploration under way (an override, an external write, a guard's cut,
 * a probe that never landed); IDLE a gross move waiting for its second
 * tick.
 */
void policy_adaptive_enter(PolicyIothreadState *st, PolicyAdaptivePhase phase);

/* A decision in the making. */
typedef struct {
    PolicyIothreadState *st;
    const PolicyIothreadInput *in;
    const PolicyMetrics *m;     /* latest, NULL if none */
    gboolean adaptive;
    PolicyObjective objective;
    gboolean is_override;
    /*
     * Not held back by the dwell: a write that ends a deliberate
     * measurement or writes a settled winner back: policy_adaptive_step()
     * sets it from the tick's change of phase, the contention guard when
     * it falls back to the frugal triple.
     */
    gboolean dwell_exempt;
    guint trial_cand;           /* POLICY_CAND_* this proposal probes, or 0 */
    gboolean guard_cut;         /* contention/budget forced polling off */
    struct _PolicyMemory *mem;  /* adaptive: the iothread's workload memory */
    gboolean mem_changed;       /* the memory learnt something this tick */
    double probe_value;         /* budget: a probe's ceiling gain per core it needs */
    PolicyTriple triple;        /* proposed */
    PolicyCause cause;
    GString *reason;
    GString *evidence;
} PolicyProposal;

void policy_metrics_describe(GString *out, const char *prefix, const PolicyMetrics *m);

/* The operator's override in force on @in (its iothread, a member of its
 * group, or its target), as a tick resolves it; NULL when none. */
const PolicyOverrideInfo *policy_engine_override_in_force(const PolicyEngine *e,
                                                          const PolicyIothreadInput *in,
                                                          gint64 now_ms);

void policy_adaptive_step(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);

/* The adaptive policy and the workload memory (policy-adaptive-memory.c). */
void policy_adaptive_memory_note(PolicyIothreadState *st, const char *fmt, ...)
    G_GNUC_PRINTF(2, 3);
gint64 policy_adaptive_tick_ms(const PolicyProposal *p);
/* The signature of the phase's ticks in @p's history, from >= @min_ticks. */
gboolean policy_adaptive_memory_signature(const PolicyProposal *p, guint min_ticks,
                                          PolicySignature *out);
/* A workload's phase began at @start_ms, @ticks ticks ago. */
void policy_adaptive_memory_phase_begin(PolicyIothreadState *st, gint64 start_ms, guint ticks);
/* The phase ended at @end_ms: its length goes to the memory. */
void policy_adaptive_memory_phase_end(PolicyProposal *p, gint64 end_ms);
/* "remembered: workload W, best T, learned X ago, confirmed N times" */
char *policy_memory_entry_describe(const PolicyMemoryEntry *e, gint64 now_ms);
/* Whether exploring @sig, remembered without a winner, pays (the note and
 * the evidence say why). */
gboolean policy_adaptive_memory_pays(PolicyProposal *p, const PolicySignature *sig,
                                     gint64 now_ms);
/* What the exploration ending now found, keyed by the phase's signature. */
void policy_adaptive_memory_learn(PolicyProposal *p, const PolicyExploration *x, gint64 now_ms);
/*
 * A guard cut polling to @t (off) for the host's sake: the iothread
 * settles there, writing it back (RETURN, @cause) until it is in force,
 * and explores again only when its workload changes.
 */
void policy_adaptive_settle_cut(PolicyIothreadState *st, const PolicyTriple *t,
                                const PolicyTriple *current, PolicyCause cause, gint64 now_ms);
PolicyTriple policy_adaptive_off(const PolicyTriple *current);
/* The wide window, and QEMU's default window, within the configured bounds. */
PolicyTriple policy_adaptive_wide(const PolicyConfig *cfg);
PolicyTriple policy_adaptive_narrow(const PolicyConfig *cfg);
/*
 * The most polling could gain on @m, less what its core would cost
 * (objective units): a ceiling, for ordering probes, not an estimate.
 */
double policy_adaptive_polling_bound(const PolicyConfig *cfg, PolicyObjective o,
                                     const PolicyMetrics *m);
/*
 * Student's t at @df (> 0, may be fractional) degrees of freedom: its
 * distribution function and its @p quantile (0 < p < 1).
 */
double policy_t_cdf(double t, double df);
double policy_t_quantile(double p, double df);
/* Contention: settle on the measured frugal polling triple instead; FALSE if none. */
gboolean policy_adaptive_fall_back_frugal(PolicyProposal *p, gint64 now_ms);

void policy_guard_contention(const PolicyConfig *cfg, const PolicyHost *host,
                             PolicyProposal *props, guint n, gint64 now_ms);
void policy_guard_budget(const PolicyConfig *cfg, PolicyProposal *props, guint n, gint64 now_ms);

/*
 * One guard's condition, as the engine acts on it and explain shows it:
 * each guard is one function below, so the two cannot disagree.
 */
typedef struct {
    gboolean available;         /* measured, or configured; FALSE: holds is FALSE */
    gboolean holds;
    double value, limit;        /* the figure compared and its limit */
    gint64 until_ms;            /* when it stops holding; G_MININT64: not known */
} PolicyGuardCheck;

/* The minimum dwell since @st's last write (seconds). */
PolicyGuardCheck policy_guard_dwell(const PolicyConfig *cfg, const PolicyIothreadState *st,
                                    gint64 now_ms);
/* A contention signal: holds when measured (@have) at or above a set @limit (> 0). */
PolicyGuardCheck policy_guard_threshold(gboolean have, double value, double limit);
/* No polling probe while a contention cut's hold-off lasts (seconds left). */
PolicyGuardCheck policy_guard_holdoff(const PolicyConfig *cfg, const PolicyIothreadState *st,
                                      gint64 now_ms);
/*
 * What polling on an iothread (a group of @n_iothreads) is expected to
 * cost in cores, as the budget charges it: its measured cost, or an
 * estimate from the latest tick @m (NULL: none); @probe is the candidate
 * being proposed (0: the triple in force).
 */
double policy_guard_polling_cost(const PolicyIothreadState *st, guint n_iothreads,
                                 const PolicyMetrics *m, guint probe);
/* Over the budget: @used cores elsewhere and @cost more (value = their sum). */
PolicyGuardCheck policy_guard_budget_check(const PolicyConfig *cfg, double used, double cost);
/*
 * The write budget: holds when @n more writes of the policy would not fit
 * (value: writes in the short window; until_ms: when @n more would fit).
 */
PolicyGuardCheck policy_guard_writes(const PolicyIothreadState *st, guint n, gint64 now_ms);
/*
 * The writes the write budget must have room for before the exploration
 * under way on @st (NULL: none) makes its first probe, or before the next
 * one from @current does: its probes and the return.  0 once its first
 * probe is written: an exploration is admitted whole.
 */
guint policy_adaptive_admission_writes(const PolicyConfig *cfg, const PolicyIothreadState *st,
                                       const PolicyTriple *current);
/* Note a write of the policy to @st at @now_ms. */
void policy_writes_note(PolicyIothreadState *st, gint64 now_ms);

/* Set the proposal's outcome; the reason is printf-formatted. */
void policy_proposal_set(PolicyProposal *p, const PolicyTriple *t, PolicyCause cause,
                         const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* For policy-explain.c: the engine's configuration and the state of one
 * iothread (NULL if never seen), to read, never to change. */
const PolicyConfig *policy_engine_config(const PolicyEngine *engine);
const PolicyIothreadState *policy_engine_state_peek(const PolicyEngine *engine,
                                                    const char *target, const char *iothread);

/*
 * The engine's workload memories (policy-engine-memory.c): a PolicyMemory
 * per "target/iothread", and which of them changed since the caller last
 * saved them.  The adaptive policy reaches an iothread's memory through
 * policy_engine_memory_of() and marks it changed after learning.
 */
typedef struct {
    GHashTable *by_key;         /* "target/iothread" -> PolicyMemory * */
    GHashTable *changed;        /* set of keys of by_key */
} PolicyEngineMemories;

void policy_engine_memories_init(PolicyEngineMemories *m);
void policy_engine_memories_clear(PolicyEngineMemories *m);
PolicyEngineMemories *policy_engine_memories(PolicyEngine *engine);
const PolicyEngineMemories *policy_engine_memories_const(const PolicyEngine *engine);
/* @target/@iothread's memory, made empty on first use. */
struct _PolicyMemory *policy_engine_memory_of(PolicyEngine *engine, const char *target,
                                              const char *iothread);
void policy_engine_memory_mark_changed(PolicyEngine *engine, const char *target,
                                       const char *iothread);
