/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive-private: what the adaptive policy's files share.  The
 * phases' ticks are split by what they do: the measurement and its
 * statistics, the settling and the dispatch (policy-adaptive.c); an
 * exploration, START, PROBE and NEXT (policy-adaptive-explore.c); the
 * phases at rest, NEW, IDLE, SETTLED and RETURN, with the change
 * detectors (policy-adaptive-settled.c); the workload memory's part
 * (policy-adaptive-memory.c).  Not for the engine's other files.
 */
#pragma once

#include "policy-private.h"

/*
 * Until the settled reference has REF_MIN_TICKS ticks its mean is too
 * noisy to accumulate against; only a gross change (a factor of 3, which
 * +-50% noise cannot produce) counts then.
 */
#define REF_MIN_TICKS 3
#define GROSS_CHANGE_LN 1.0986
/* Successive differences' share of the degrees of freedom (see ref_ss()). */
#define REF_DF_SHARE (2.0 / 3.0)
/* Standard errors the change detectors' deviation is raised by (see
 * policy_adaptive_change_sd()). */
#define CHANGE_SD_SES 2.0

/* Why an exploration starts: compared by address, not by text. */
extern const char policy_adaptive_why_moved[];
extern const char policy_adaptive_why_gross[];
extern const char policy_adaptive_why_shape[];
extern const char policy_adaptive_why_load[];
extern const char policy_adaptive_why_first[];
extern const char policy_adaptive_why_revalidate[];
extern const char policy_adaptive_why_surprise[];

/* SETTLED, or RETURN (settled on a winner not yet written back): a reference. */
gboolean policy_adaptive_has_ref(const PolicyIothreadState *st);

/* Segments: the ticks measured under one triple. */
void policy_segment_start(PolicySegment *g, const PolicyTriple *t);
void policy_segment_add(const PolicyConfig *cfg, PolicySegment *g, PolicyObjective o,
                        const PolicyMetrics *m);
double policy_segment_mean(const PolicySegment *g);
double policy_segment_cpu(const PolicySegment *g);
/* ln(blocks per operation + a floor): the I/O's shape. */
double policy_adaptive_shape_of(const PolicyMetrics *m);

/* The noise: the pooled per-tick standard deviation of the score (@data_df,
 * if not NULL: its measured degrees of freedom), the change detectors'
 * deviation, the evidence bar, and pooling a segment's ticks into it. */
double policy_adaptive_noise_sd(const PolicyIothreadState *st);
double policy_adaptive_noise_sd_df(const PolicyIothreadState *st, double *data_df);
double policy_adaptive_change_sd(const PolicyIothreadState *st);
double policy_adaptive_evidence_bar(const PolicyIothreadState *st);
void policy_adaptive_noise_pool(PolicyIothreadState *st, const PolicySegment *g);

/* Settled on @g: SETTLED when its triple is @in_force, else RETURN. */
void policy_adaptive_settle(PolicyIothreadState *st, const PolicySegment *g, gboolean in_force,
                            gint64 now_ms);
/* Settle on @g's triple, chosen for @cause without (more) probes. */
void policy_adaptive_settle_best(PolicyIothreadState *st, const PolicySegment *g,
                                 const PolicyTriple *current, PolicyCause cause, gint64 now_ms);
/* Whether @n writes fit the write budget; if not, the proposal says so. */
gboolean policy_adaptive_writes_fit(PolicyProposal *p, guint n, const char *what, gint64 now_ms);

/* The phases' ticks (policy_adaptive_step() dispatches). */
void policy_adaptive_step_start(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);
void policy_adaptive_step_probe(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);
/* NEXT: propose the next candidate, or finish the exploration. */
void policy_adaptive_explore_next(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);
/* An exploration starting at this tick, from a phase at rest, for @why. */
void policy_adaptive_explore_now(const PolicyConfig *cfg, PolicyProposal *p, const char *why,
                                 gint64 now_ms);
/* RETURN: FALSE when the winner is in force (the tick is SETTLED's). */
gboolean policy_adaptive_step_return(PolicyProposal *p);
/* Below idle_iops: IDLE, polling off (FALSE: not idle). */
gboolean policy_adaptive_step_idle_rule(const PolicyConfig *cfg, PolicyProposal *p,
                                        gint64 now_ms);
void policy_adaptive_step_idle(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);
void policy_adaptive_step_settled(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms);

/* What the workload memory says at an exploration's trigger. */
typedef enum {
    POLICY_MEMORY_EXPLORE,      /* explore: nothing remembered, and it pays */
    POLICY_MEMORY_WAIT,         /* the proposal waits a tick (signature, write budget) */
    POLICY_MEMORY_DECIDED,      /* remembered, or not worth exploring: settled */
} PolicyMemoryVerdict;

/* Ask the memory about the phase's workload, once per exploration's trigger. */
PolicyMemoryVerdict policy_adaptive_memory_gate(const PolicyConfig *cfg, PolicyProposal *p,
                                                gint64 now_ms);
/* SETTLED on a remembered winner: confirm it, or explore on a surprise (TRUE). */
gboolean policy_adaptive_memory_confirm(const PolicyConfig *cfg, PolicyProposal *p,
                                        gint64 now_ms);
/* Revalidation the settled ticks confirm (TRUE), or explore (FALSE). */
gboolean policy_adaptive_memory_revalidate(PolicyProposal *p, gint64 now_ms);
