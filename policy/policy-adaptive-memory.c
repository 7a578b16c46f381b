/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive-memory: what the adaptive policy asks of and tells the
 * iothread's workload memory (policy-memory.h): the phase a workload lasts
 * and its signature, what a remembered entry says, whether an exploration
 * pays, and what an exploration found; and the answers' part in the
 * phases: a remembered winner settled on and confirmed, a workload not
 * worth exploring left as it is.  docs/POLICY.md, "Memory", says why.
 */
#include <stdarg.h>

#include "policy-adaptive-private.h"

void
policy_adaptive_memory_note(PolicyIothreadState *st, const char *fmt, ...)
{
    va_list ap;

    g_free(st->mem_note);
    va_start(ap, fmt);
    st->mem_note = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

/* The length of one tick of @p's history (1 s when not given). */
gint64
policy_adaptive_tick_ms(const PolicyProposal *p)
{
    gint64 ms = p->m ? (gint64)(p->m->interval_ns / 1000000) : 0;

    return ms > 0 ? ms : 1000;
}

gboolean
policy_adaptive_memory_signature(const PolicyProposal *p, guint min_ticks, PolicySignature *out)
{
    guint n = MIN(p->st->phase_ticks, p->in->n_history);

    return n >= min_ticks &&
           policy_signature_compute_min(&p->in->history[p->in->n_history - n], n, min_ticks,
                                        p->in->qemu_version, p->in->device_key, out);
}

void
policy_adaptive_memory_phase_begin(PolicyIothreadState *st, gint64 start_ms, guint ticks)
{
    st->phase_start_ms = start_ms;
    st->phase_ticks = ticks;
    st->have_sig = FALSE;
    st->mem_checked = FALSE;
    st->recalled = FALSE;
    st->recalled_near = FALSE;
    st->recall_contended = FALSE;
}

void
policy_adaptive_memory_phase_end(PolicyProposal *p, gint64 end_ms)
{
    PolicyIothreadState *st = p->st;

    if (p->mem && st->have_sig && st->phase_start_ms != G_MININT64 &&
        end_ms > st->phase_start_ms) {
        policy_memory_record_phase_end(p->mem, &st->sig, end_ms - st->phase_start_ms, end_ms);
        p->mem_changed = TRUE;
    }
    st->phase_start_ms = G_MININT64;
    st->phase_ticks = 0;
    st->have_sig = FALSE;
    st->recalled = FALSE;
    st->recalled_near = FALSE;
}

/* "40 s", "12 min", "5 h", "3 d": how long ago, for operators. */
static char *
duration_format(gint64 ms)
{
    gint64 s = MAX(ms, 0) / 1000;

    if (s < 120)
        return g_strdup_printf("%" G_GINT64_FORMAT " s", s);
    if (s < 2 * 3600)
        return g_strdup_printf("%" G_GINT64_FORMAT " min", s / 60);
    if (s < 2 * 86400)
        return g_strdup_printf("%" G_GINT64_FORMAT " h", s / 3600);
    return g_strdup_printf("%" G_GINT64_FORMAT " d", s / 86400);
}

char *
policy_memory_entry_describe(const PolicyMemoryEntry *e, gint64 now_ms)
{
    g_autofree char *sig = policy_signature_to_string(&e->sig);
    g_autofree char *best = policy_triple_format(&e->last.winner);
    g_autofree char *ago = duration_format(now_ms - e->learned_ms);

    return g_strdup_printf("remembered: workload %s, best %s, learned %s ago, confirmed %u "
                           "time%s", sig, best, ago, e->n_confirmed,
                           e->n_confirmed == 1 ? "" : "s");
}

gboolean
policy_adaptive_memory_pays(PolicyProposal *p, const PolicySignature *sig, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    PolicyMemoryStats stats;
    g_autofree char *why = NULL, *s = policy_signature_to_string(sig);
    gint64 elapsed = st->phase_start_ms == G_MININT64 ? 0 : now_ms - st->phase_start_ms;
    double remaining = policy_memory_expected_remaining_ms(p->mem, sig, elapsed);
    /* The slow schedule of a device where the VM's own triple keeps
     * winning: once per the memory's ttl, as an entry decays. */
    gboolean pays;

    policy_memory_stats(p->mem, sig, &stats);
    pays = policy_memory_exploration_pays(&stats, remaining, policy_adaptive_tick_ms(p),
                                          policy_memory_ttl(p->mem), now_ms, &why);
    policy_adaptive_memory_note(st, "workload %s: nothing remembered; %s", s, why);
    g_string_append_printf(p->evidence, " memory=%s expected_rest_s=%.0f gain=%.4f "
                           "default_streak=%u", pays ? "explore" : "stay", remaining / 1000.0,
                           stats.gain_per_tick, stats.default_streak);
    return pays;
}

void
policy_adaptive_memory_learn(PolicyProposal *p, const PolicyExploration *x, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    PolicySignature sig;
    g_autofree char *s = NULL;

    if (!p->mem)
        return;
    /* Keyed from every tick of the phase, probes included: a signature
     * hardly moves with the triple, and more ticks place it better. */
    if (!policy_adaptive_memory_signature(p, POLICY_SIGNATURE_MIN_TICKS, &sig)) {
        if (!st->have_sig)
            return;
        sig = st->sig;
    }
    policy_memory_learn(p->mem, &sig, x, now_ms);
    st->sig = sig;
    st->have_sig = TRUE;
    st->recalled = FALSE;
    st->recalled_near = FALSE;
    p->mem_changed = TRUE;
    s = policy_signature_to_string(&sig);
    policy_adaptive_memory_note(st, "learnt: workload %s", s);
    g_string_append_printf(p->evidence, " learnt=%s", s);
}

/*
 * The workload memory's part in the phases (docs/POLICY.md, "Memory").
 * At each exploration's trigger the memory is asked about the workload,
 * by its signature from the phase's first POLICY_SIGNATURE_LOOKUP_TICKS
 * ticks: a winner remembered and fresh is written at once (one write, no
 * probes) and settled on, then confirmed by MEMORY_CONFIRM_TICKS settled
 * ticks, or found a surprise and explored; with none, the exploration goes
 * on only where it pays for itself, and otherwise the iothread is left on
 * the triple it would have without polltune.
 */
/*
 * Settled ticks that confirm a remembered winner: three, as many as a
 * probe measures at most (SEG_MAX); the surprise's bar is two standard
 * errors of them and of the remembered ticks, and at least 0.10.
 */
#define MEMORY_CONFIRM_TICKS 3

/* START with the triple in force measured: its ticks are the workload's. */
static gboolean
start_in_force(const PolicyIothreadState *st, const PolicyTriple *cur)
{
    return st->phase == POLICY_ADAPTIVE_START && policy_triple_equal(&st->seg_a.triple, cur);
}

/* Settle on @t: on the start's ticks when they are @t's, else on none yet;
 * RETURN until @t is in force. */
static void
memory_settle(PolicyProposal *p, const PolicyTriple *t, PolicyCause cause, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    PolicySegment g;

    if (start_in_force(st, cur) && policy_triple_equal(t, cur))
        g = st->seg_a;
    else
        policy_segment_start(&g, t);
    policy_adaptive_settle_best(st, &g, cur, cause, now_ms);
}

/* A winner remembered for the workload: written, or kept when in force. */
static PolicyMemoryVerdict
memory_recall(const PolicyConfig *cfg, PolicyProposal *p, const PolicyMemoryEntry *e,
              gboolean near, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    PolicyTriple w = e->last.winner;
    g_autofree char *desc = policy_memory_entry_describe(e, now_ms);

    policy_config_clamp_triple(cfg, &w);
    if (!policy_triple_equal(&w, cur) &&
        !policy_adaptive_writes_fit(p, 1, "the remembered winner", now_ms))
        return POLICY_MEMORY_WAIT;
    st->mem_checked = TRUE;
    policy_adaptive_memory_note(st, "%s", desc);
    g_string_append(p->evidence, " memory=remembered");
    memory_settle(p, &w, POLICY_CAUSE_REMEMBERED, now_ms);
    st->recalled = TRUE;
    st->recalled_near = near;
    /* What polling was worth belongs to the workload before: this one's
     * winner is the evidence now (policy_guard_contention()). */
    st->polling.this_workload = FALSE;
    st->recall_contended = e->last.contended && w.poll_max_ns > 0;
    if (near)
        g_string_append(p->evidence, " memory_near=1");
    if (policy_triple_equal(&w, cur))
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: %s; in force already", desc);
    else
        policy_proposal_set(p, &w, POLICY_CAUSE_REMEMBERED, "adaptive: %s; writing it", desc);
    return POLICY_MEMORY_DECIDED;
}

/*
 * Exploring does not pay: do no harm, leave (or put back) the triple the
 * iothread would have without polltune.
 */
static void
memory_stay(PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    PolicyTriple base = st->baseline;
    g_autofree char *bt = policy_triple_format(&base);

    memory_settle(p, &base, POLICY_CAUSE_ROLLBACK, now_ms);
    if (policy_triple_equal(&base, cur))
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: %s; leaving %s as it is",
                            st->mem_note, bt);
    else
        policy_proposal_set(p, &base, POLICY_CAUSE_ROLLBACK,
                            "adaptive: %s; back to %s, the triple without polltune",
                            st->mem_note, bt);
}

/* Ask the memory about the phase's workload, once per exploration's trigger. */
PolicyMemoryVerdict
policy_adaptive_memory_gate(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    PolicySignature sig;
    const PolicyMemoryEntry *e;

    if (!p->mem || st->mem_checked)
        return POLICY_MEMORY_EXPLORE;
    /*
     * Nothing learnt yet: the rule's priors always pay (a phase is expected
     * to last 300 s and more, the probes to cost 0.6), and no tick need
     * wait for a signature.
     */
    if (!policy_memory_size(p->mem)) {
        st->mem_checked = TRUE;
        policy_adaptive_memory_note(st, "nothing remembered on this iothread yet: exploring");
        return POLICY_MEMORY_EXPLORE;
    }
    if (!policy_adaptive_memory_signature(p, POLICY_SIGNATURE_LOOKUP_TICKS, &sig)) {
        if (st->phase_ticks >= POLICY_SIGNATURE_LOOKUP_TICKS) {
            st->mem_checked = TRUE;     /* ticks without I/O figures: no signature */
            policy_adaptive_memory_note(st, "no signature: the phase's ticks have no I/O "
                                        "figures");
            return POLICY_MEMORY_EXPLORE;
        }
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: a new workload, reading its signature (tick %u of %u)",
                            st->phase_ticks, POLICY_SIGNATURE_LOOKUP_TICKS);
        return POLICY_MEMORY_WAIT;
    }
    st->sig = sig;
    st->have_sig = TRUE;
    e = policy_memory_lookup_near(p->mem, &sig, now_ms);
    if (e) {
        /* A neighbour's winner is tried as this workload's; its ticks tell
         * whether the two are one (memory_confirm_near()). */
        gboolean near = !policy_signature_equal(&e->sig, &sig);

        if (near)
            st->sig = e->sig;
        return memory_recall(cfg, p, e, near, now_ms);
    }
    st->mem_checked = TRUE;
    if (policy_adaptive_memory_pays(p, &sig, now_ms))
        return POLICY_MEMORY_EXPLORE;
    memory_stay(p, now_ms);
    return POLICY_MEMORY_DECIDED;
}

/*
 * SETTLED on a remembered winner: once MEMORY_CONFIRM_TICKS ticks are
 * measured, confirm it, or explore on a surprise.  TRUE: explored.
 */
gboolean
policy_adaptive_memory_confirm(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMemoryEntry *e;
    double score = policy_segment_mean(&st->ref), remembered;
    g_autofree char *s = NULL;

    if (!st->recalled || !p->mem || !st->have_sig || st->ref.n < MEMORY_CONFIRM_TICKS ||
        st->best_cause != POLICY_CAUSE_REMEMBERED ||
        !policy_triple_equal(&st->ref.triple, &st->best))
        return FALSE;
    st->recalled = FALSE;
    st->recalled_near = FALSE;
    e = policy_memory_peek(p->mem, &st->sig);
    if (!e || !e->have_winner)
        return FALSE;
    remembered = e->last.winner_score;
    p->mem_changed = TRUE;
    g_string_append_printf(p->evidence, " memory_score=%.4f remembered_score=%.4f", score,
                           remembered);
    if (st->recalled_near && policy_memory_surprised(e, score, st->ref.n)) {
        /* Not the neighbour's workload after all: its entry stays. */
        s = policy_signature_to_string(&st->sig);
        policy_adaptive_memory_note(st, "workload %s's winner, tried for a neighbouring "
                                    "signature, scored %.4f over %u ticks, clearly below %.4f: "
                                    "exploring", s, score, st->ref.n, remembered);
        st->recalled_near = FALSE;
        st->mem_checked = TRUE;
        policy_adaptive_explore_now(cfg, p, policy_adaptive_why_surprise, now_ms);
        return TRUE;
    }
    st->recalled_near = FALSE;
    if (!policy_memory_confirm(p->mem, &st->sig, score, st->ref.n, now_ms)) {
        g_autofree char *desc = policy_memory_entry_describe(e, now_ms);

        policy_adaptive_memory_note(st, "%s", desc);
        return FALSE;
    }
    s = policy_signature_to_string(&st->sig);
    policy_adaptive_memory_note(st, "workload %s: its remembered winner scored %.4f over %u "
                                "ticks, clearly below %.4f: forgotten, exploring", s, score,
                                st->ref.n, remembered);
    st->mem_checked = TRUE;
    policy_adaptive_explore_now(cfg, p, policy_adaptive_why_surprise, now_ms);
    return TRUE;
}

/*
 * Revalidation where the memory holds the winner in force for the
 * workload: the settled ticks confirm it instead of an exploration.  TRUE:
 * confirmed, settled again; FALSE: explore (a surprise, or nothing to
 * confirm).
 */
gboolean
policy_adaptive_memory_revalidate(PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    PolicySignature sig;
    const PolicyMemoryEntry *e;
    PolicySegment ref = st->ref;
    double remembered;
    g_autofree char *desc = NULL;

    st->mem_checked = FALSE;
    if (!p->mem || st->ref.n < MEMORY_CONFIRM_TICKS ||
        !policy_adaptive_memory_signature(p, POLICY_SIGNATURE_MIN_TICKS, &sig))
        return FALSE;
    e = policy_memory_lookup_near(p->mem, &sig, now_ms);
    if (!e || !policy_triple_equal(&e->last.winner, &p->in->current))
        return FALSE;
    /* A neighbour's entry is confirmed by the ticks, never forgotten by them. */
    if (!policy_signature_equal(&e->sig, &sig)) {
        if (policy_memory_surprised(e, policy_segment_mean(&ref), ref.n))
            return FALSE;
        sig = e->sig;
    }
    st->sig = sig;
    st->have_sig = TRUE;
    st->mem_checked = TRUE;
    remembered = e->last.winner_score;
    p->mem_changed = TRUE;
    if (policy_memory_confirm(p->mem, &sig, policy_segment_mean(&ref), ref.n, now_ms)) {
        g_autofree char *s = policy_signature_to_string(&sig);

        policy_adaptive_memory_note(st, "workload %s: its remembered winner scored %.4f, "
                                    "clearly below %.4f: forgotten, exploring", s,
                                    policy_segment_mean(&ref), remembered);
        return FALSE;
    }
    desc = policy_memory_entry_describe(e, now_ms);
    policy_adaptive_memory_note(st, "%s", desc);
    policy_adaptive_settle(st, &ref, TRUE, now_ms);
    g_string_append_printf(p->evidence, " memory=confirmed memory_score=%.4f "
                           "remembered_score=%.4f", policy_segment_mean(&ref), remembered);
    policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                        "adaptive: periodic revalidation: %s; the settled ticks confirm it",
                        desc);
    return TRUE;
}
