/*
 * policy-private: state and functions shared by the engine's files.  Not
 * installed, not for other components.
 */
#pragma once

#include "policy.h"

/* Adaptive exploration candidates. */
enum {
    POLICY_CAND_OFF = 1 << 0,
    POLICY_CAND_WIDE = 1 << 1,
};

/* Everything the engine remembers about one iothread between ticks. */
typedef struct {
    char *key;                  /* "target/iothread" */
    gboolean seen;
    PolicyTriple last_current;  /* as last reported */
    gboolean wrote;             /* we asked for expected at last_write_ms */
    PolicyTriple expected;
    gint64 last_write_ms;       /* G_MININT64: never */

    /* adaptive: the settled reference the workload is compared against */
    gboolean have_ref;
    PolicyMetrics ref;
    gint64 ref_ms;

    /* adaptive: an exploration in progress */
    gboolean exploring;
    guint pending;              /* POLICY_CAND_* not measured yet */
    PolicyTriple best;
    PolicyMetrics best_m;
    gboolean trial;             /* a probe has been written, measure next */
    gboolean want;              /* exploration done, best must be written */
    gboolean have_off, have_poll;
    PolicyMetrics off_m, poll_m;

    /* polling's measured value, for the contention and budget guards */
    gboolean have_benefit;
    double gain;                /* objective gain of polling over off */
    double poll_cores;          /* extra iothread CPU that buys it */
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
    PolicyTriple triple;        /* proposed */
    PolicyCause cause;
    GString *reason;
    GString *evidence;
} PolicyProposal;

void policy_metrics_describe(GString *out, const char *prefix, const PolicyMetrics *m);

void policy_adaptive_step(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);
void policy_adaptive_reset(PolicyIothreadState *st);
PolicyTriple policy_adaptive_off(const PolicyTriple *current);

void policy_guard_contention(const PolicyConfig *cfg, const PolicyHost *host,
                             PolicyProposal *props, guint n, gint64 now_ms);
void policy_guard_budget(const PolicyConfig *cfg, PolicyProposal *props, guint n);

/* Set the proposal's outcome; the reason is printf-formatted. */
void policy_proposal_set(PolicyProposal *p, const PolicyTriple *t, PolicyCause cause,
                         const char *fmt, ...) G_GNUC_PRINTF(4, 5);
