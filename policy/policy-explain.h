/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-explain: a read-only view of what the engine thinks about one
 * iothread, for operators asking "why is it not acting?".
 *
 * Contract:
 *  - Pure and read-only: it reads the engine's state and the caller's
 *    inputs and changes nothing, so asking cannot alter a decision.
 *  - It restates the guards' conditions from the same configuration and
 *    host figures the last tick used; it does not re-run the decision.
 *    "holds" means the guard's condition is met now: for contention and
 *    budget that is what stops a polling probe or cuts polling on the
 *    next tick of an adaptive policy.
 *  - Times are UTC milliseconds; G_MININT64 means "none".
 */
#pragma once

#include "policy.h"

/* What can hold the policy back on one iothread. */
typedef enum {
    POLICY_GUARD_OVERRIDE,          /* an operator's override pins the triple */
    POLICY_GUARD_EXTERNAL_HOLD,     /* a write made outside polltune, held */
    POLICY_GUARD_DWELL,             /* minimum time between writes */
    POLICY_GUARD_PSI,               /* host CPU pressure (PSI some) */
    POLICY_GUARD_VCPU_DELAY,        /* vCPU run-queue wait */
    POLICY_GUARD_IOTHREAD_DELAY,    /* this iothread's run-queue wait */
    POLICY_GUARD_HOLDOFF,           /* contention hold-off: no polling probes */
    POLICY_GUARD_BUDGET,            /* host-wide polling CPU budget */
    POLICY_GUARD_WRITE_BUDGET,      /* adaptive's writes per 30 s and per 10 minutes */
    POLICY_GUARD_MAX,
    POLICY_GUARD_INVALID = -1,
} PolicyGuard;

const char *policy_guard_to_string(PolicyGuard guard);
PolicyGuard policy_guard_from_string(const char *s);

typedef struct {
    gboolean available;     /* FALSE: not measured or not configured (detail says which) */
    gboolean holds;
    double value, limit;    /* in @unit; limit < 0: the guard has none */
    const char *unit;       /* "%", "s", "cores" */
    gint64 until_ms;        /* when it stops holding, if known; G_MININT64 otherwise */
    char *detail;           /* one phrase for operators */
} PolicyGuardView;

/* A triple the adaptive policy measured or means to measure. */
typedef struct {
    PolicyTriple triple;
    const char *role;       /* "settled", "start", "probe", "measuring", "pending" */
    gboolean chosen;        /* the triple the last exploration settled on */
    guint n;                /* ticks measured; 0 for pending */
    double score;           /* mean objective score (natural-log units) */
    double iops;            /* geometric mean */
    double cpu_pct;         /* mean iothread CPU, 100 = one core */
    gint64 measured_ms;     /* end of its last measured tick; G_MININT64 if none */
} PolicyCandidateView;

#define POLICY_EXPLAIN_MAX_CANDIDATES 6

typedef struct {
    char *target;
    char *iothread;
    PolicySpec spec;
    PolicyMode mode;
    PolicyTriple current;
    gboolean known;         /* the engine has decided for it before */

    gboolean have_metrics;
    PolicyMetrics last;     /* the newest tick */

    const char *phase;      /* "new", "steady", "exploring", ... */
    PolicyCandidateView candidates[POLICY_EXPLAIN_MAX_CANDIDATES];
    guint n_candidates;

    gboolean have_benefit;  /* polling measured against off */
    double gain;            /* objective units */
    double poll_cores;

    gint64 last_write_ms;   /* G_MININT64: never written */
    PolicyGuardView guards[POLICY_GUARD_MAX];

    gint64 next_look_ms;    /* G_MININT64: not before something else changes */
    char *next_look;        /* why then */

    /*
     * The workload memory's part (adaptive only; NULL: none): what it
     * remembers of the workload now, "remembered: workload W, best T,
     * learned X ago, confirmed N times", or else what it last said, e.g.
     * why exploring did or did not pay.
     */
    char *memory;
    guint memory_entries;   /* workloads the iothread's memory holds */
} PolicyExplain;

void policy_explain_free(PolicyExplain *x);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyExplain, policy_explain_free)

/* What the caller knows beyond the engine. */
typedef struct {
    const PolicyHost *host;         /* the last tick's host figures, or NULL */
    double host_polling_cores;      /* polling CPU across the host, last tick */
    gint64 next_tick_ms;            /* when the engine runs next */
} PolicyExplainContext;

/*
 * The engine's view of @in (its target, iothread, current triple and
 * history) at @now_ms.  Never fails: an iothread the engine has not seen
 * yet is explained as "new".
 */
PolicyExplain *policy_engine_explain(const PolicyEngine *engine,
                                     const PolicyExplainContext *ctx,
                                     const PolicyIothreadInput *in, gint64 now_ms);
