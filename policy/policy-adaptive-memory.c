/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive-memory: what the adaptive policy asks of and tells the
 * iothread's workload memory (policy-memory.h): the phase a workload lasts
 * and its signature, what a remembered entry says, whether an exploration
 * pays, and what an exploration found.  The phases' transitions that follow
 * from the answers are policy-adaptive.c's; docs/POLICY.md, "Memory", says
 * why.
 */
#include <stdarg.h>

#include "policy-private.h"

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
    p->mem_changed = TRUE;
    s = policy_signature_to_string(&sig);
    policy_adaptive_memory_note(st, "learnt: workload %s", s);
    g_string_append_printf(p->evidence, " learnt=%s", s);
}
