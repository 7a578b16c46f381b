/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-private: state and functions shared by the engine's files.  Not
 * installed, not for other components.
 */
#pragma once

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
 * Adaptive exploration candidates: off, the wide window, and QEMU's
 * default window, which is probed only from a start at the wide window
 * (the two polling candidates are POLICY_CAND_POLLING).
 */
enum {
    POLICY_CAND_OFF = 1 << 0,
    POLICY_CAND_WIDE = 1 << 1,
    POLICY_CAND_NARROW = 1 << 2,
    POLICY_CAND_POLLING = POLICY_CAND_WIDE | POLICY_CAND_NARROW,
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

/* Everything the engine remembers about one iothread between ticks. */
typedef struct {
    char *key;                  /* "target/iothread" */
    gboolean seen;
    PolicyTriple last_current;  /* as last reported */
    gboolean wrote;             /* we asked for expected at last_write_ms */
    PolicyTriple expected;
    gint64 last_write_ms;       /* G_MININT64: never */

    /*
     * adaptive: the settled reference the workload is compared against,
     * every steady tick under the settled triple, and the change detector
     * (two-sided CUSUMs of ln IOPS and of the I/O's shape against the
     * reference's means).
     */
    gboolean have_ref;
    PolicySegment ref;
    gint64 ref_ms;
    double cusum_hi, cusum_lo;
    double shape_hi, shape_lo;  /* the same for the I/O's shape (blocks per op) */
    /* The sign of the last tick that moved by a gross factor, or 0. */
    int gross_sign;

    /* adaptive: an exploration in progress */
    gboolean exploring;
    gboolean measuring_a;       /* still measuring the starting triple */
    guint pending;              /* POLICY_CAND_* not measured yet */
    PolicySegment seg_a;        /* the starting triple */
    PolicySegment seg_x;        /* the probe being measured */
    PolicySegment done[2];      /* probes measured */
    guint n_done;
    PolicyTriple best;
    gboolean trial;             /* a probe has been written, measuring it */
    gboolean want;              /* exploration done, best must be written */

    /* per-tick noise of the score: within-segment squares of past explorations */
    double noise_ss, noise_df;

    /* polling's measured value, for the contention and budget guards */
    gboolean have_benefit;
    double gain;                /* objective gain of polling over off */
    double poll_cores;          /* extra iothread CPU that buys it */
    gboolean have_net;          /* exits counted under both: net_cores is known */
    double net_cores;           /* extra whole-VM CPU (< 0: polling saves vCPU time) */
    /* the best measured polling triple that beat off at no more whole-VM CPU */
    gboolean have_frugal;
    PolicySegment frugal;
    gint64 holdoff_until_ms;    /* contention: no polling probes before */
} PolicyIothreadState;

/* A decision in the making. */
typedef struct {
    PolicyIothreadState *st;
    const PolicyIothreadInput *in;
    const PolicyMetrics *m;     /* latest, NULL if none */
    gboolean adaptive;
    PolicyObjective objective;
    gboolean is_override;
    gboolean returns_to_best;   /* ends a probe: not held back by dwell */
    guint trial_cand;           /* POLICY_CAND_* this proposal probes, or 0 */
    gboolean guard_cut;         /* contention/budget forced polling off */
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
void policy_adaptive_reset(PolicyIothreadState *st);
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
void policy_guard_budget(const PolicyConfig *cfg, PolicyProposal *props, guint n);

/* Set the proposal's outcome; the reason is printf-formatted. */
void policy_proposal_set(PolicyProposal *p, const PolicyTriple *t, PolicyCause cause,
                         const char *fmt, ...) G_GNUC_PRINTF(4, 5);

/* For policy-explain.c: the engine's configuration and the state of one
 * iothread (NULL if never seen), to read, never to change. */
const PolicyConfig *policy_engine_config(const PolicyEngine *engine);
const PolicyIothreadState *policy_engine_state_peek(const PolicyEngine *engine,
                                                    const char *target, const char *iothread);
