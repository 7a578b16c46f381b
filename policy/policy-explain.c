/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-explain: the engine's view of one iothread, read-only.  See
 * policy-explain.h for the contract.
 *
 * It reads PolicyIothreadState through policy_engine_state_peek() and
 * restates each guard's condition with the figures the guard compares, so
 * that the decision logic stays where it is and asking changes nothing.
 */
#include <math.h>
#include <stdarg.h>

#include "common/pt-conf-key-names.h"
#include "common/pt-enum-table.h"
#include "policy-explain.h"
#include "policy-private.h"

PT_ENUM_IMPL(policy_guard, PolicyGuard, POLICY_GUARD_MAX,
             [POLICY_GUARD_OVERRIDE] = "override",
             [POLICY_GUARD_EXTERNAL_HOLD] = "external-hold",
             [POLICY_GUARD_DWELL] = "dwell",
             [POLICY_GUARD_PSI] = "psi",
             [POLICY_GUARD_VCPU_DELAY] = "vcpu-run-delay",
             [POLICY_GUARD_IOTHREAD_DELAY] = "iothread-run-delay",
             [POLICY_GUARD_HOLDOFF] = "contention-holdoff",
             [POLICY_GUARD_BUDGET] = "budget",
             [POLICY_GUARD_WRITE_BUDGET] = "write-budget")

void
policy_explain_free(PolicyExplain *x)
{
    if (!x)
        return;
    g_free(x->target);
    g_free(x->iothread);
    for (guint i = 0; i < POLICY_GUARD_MAX; i++)
        g_free(x->guards[i].detail);
    g_free(x->next_look);
    g_free(x->memory);
    g_free(x);
}

static void
guard_set(PolicyGuardView *g, gboolean available, gboolean holds, double value, double limit,
          const char *unit, gint64 until_ms, const char *fmt, ...) G_GNUC_PRINTF(8, 9);

static void
guard_set(PolicyGuardView *g, gboolean available, gboolean holds, double value, double limit,
          const char *unit, gint64 until_ms, const char *fmt, ...)
{
    va_list ap;

    g->available = available;
    g->holds = holds;
    g->value = value;
    g->limit = limit;
    g->unit = unit;
    g->until_ms = until_ms;
    g_free(g->detail);
    va_start(ap, fmt);
    g->detail = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

/* A threshold guard: holds when the measured value reaches a set limit. */
static void
guard_threshold(PolicyGuardView *g, gboolean have, double value, double limit,
                const char *key, const char *what)
{
    PolicyGuardCheck c = policy_guard_threshold(have, value, limit);

    if (limit <= 0)
        guard_set(g, have, FALSE, c.value, 0, "%", G_MININT64,
                  "%s: disabled (%s = 0)", what, key);
    else if (!have)
        guard_set(g, FALSE, FALSE, 0, limit, "%", G_MININT64, "%s: not measured", what);
    else
        guard_set(g, TRUE, c.holds, c.value, limit, "%", G_MININT64,
                  c.holds ? "%s %.1f%% is at or above %s %.1f%%: no polling probe, "
                            "and polling is cut where it buys least"
                          : "%s %.1f%% is below %s %.1f%%",
                  what, value, key, limit);
}

/* The operator's override in force on @in, as the engine resolves it. */
static gboolean
override_lookup(const PolicyEngine *e, const PolicyIothreadInput *in, gint64 now_ms,
                PolicyOverrideInfo *out)
{
    const PolicyOverrideInfo *o = policy_engine_override_in_force(e, in, now_ms);

    if (!o)
        return FALSE;
    out->triple = o->triple;
    if (o->keep_grow)
        out->triple.poll_grow = in->current.poll_grow;
    if (o->keep_shrink)
        out->triple.poll_shrink = in->current.poll_shrink;
    out->expires_ms = o->expires_ms;
    return TRUE;
}

static void
candidate_add(PolicyExplain *x, const PolicySegment *g, const char *role, gboolean chosen)
{
    PolicyCandidateView *c;

    if (x->n_candidates >= POLICY_EXPLAIN_MAX_CANDIDATES)
        return;
    c = &x->candidates[x->n_candidates++];
    c->triple = g->triple;
    c->role = role;
    c->chosen = chosen;
    c->n = g->n;
    c->score = g->n ? g->sum / g->n : 0;
    c->iops = g->n ? exp(g->ln_iops_sum / g->n) : 0;
    c->cpu_pct = g->n ? g->cpu_sum / g->n : 0;
    c->measured_ms = g->n ? g->last.when_ms : G_MININT64;
}

static void
candidate_pending(PolicyExplain *x, const PolicyTriple *t)
{
    PolicySegment g = { .triple = *t };

    candidate_add(x, &g, "pending", FALSE);
}

static void
explain_candidates(PolicyExplain *x, const PolicyConfig *cfg, const PolicyIothreadState *st)
{
    gboolean explored = st->seg_a.n > 0, exploring = policy_adaptive_exploring(st);

    if ((st->phase == POLICY_ADAPTIVE_SETTLED || st->phase == POLICY_ADAPTIVE_RETURN) &&
        st->ref.n)
        candidate_add(x, &st->ref, "settled", FALSE);
    if (!explored)
        return;
    candidate_add(x, &st->seg_a, "start",
                  !exploring && policy_triple_equal(&st->best, &st->seg_a.triple));
    for (guint i = 0; i < st->n_done && i < G_N_ELEMENTS(st->done); i++)
        candidate_add(x, &st->done[i], "probe",
                      !exploring && policy_triple_equal(&st->best, &st->done[i].triple));
    if (st->phase == POLICY_ADAPTIVE_PROBE && st->seg_x.n)
        candidate_add(x, &st->seg_x, "measuring", FALSE);
    if (exploring) {
        PolicyTriple off = policy_adaptive_off(&st->seg_a.triple);
        PolicyTriple wide = policy_adaptive_wide(cfg), narrow = policy_adaptive_narrow(cfg);

        if (st->pending & POLICY_CAND_OFF)
            candidate_pending(x, &off);
        if (st->pending & POLICY_CAND_WIDE)
            candidate_pending(x, &wide);
        if (st->pending & POLICY_CAND_NARROW)
            candidate_pending(x, &narrow);
    }
}

static const char *
explain_phase(const PolicyIothreadState *st, const PolicyExplain *x)
{
    if (!st)
        return "new";
    if (x->guards[POLICY_GUARD_OVERRIDE].holds)
        return "overridden";
    if (x->guards[POLICY_GUARD_EXTERNAL_HOLD].holds)
        return "held";
    if (x->spec.kind == POLICY_KIND_OBSERVE)
        return "observing";
    if (x->spec.kind != POLICY_KIND_ADAPTIVE)
        return "fixed";
    if (!x->have_metrics || !x->last.have_io)
        return "waiting for I/O measurements";
    return policy_adaptive_phase_to_string(st->phase);
}

static void
next_look_set(PolicyExplain *x, gint64 ms, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

static void
next_look_set(PolicyExplain *x, gint64 ms, const char *fmt, ...)
{
    va_list ap;

    x->next_look_ms = ms;
    g_free(x->next_look);
    va_start(ap, fmt);
    x->next_look = g_strdup_vprintf(fmt, ap);
    va_end(ap);
}

static void
explain_next_look(PolicyExplain *x, const PolicyConfig *cfg, const PolicyIothreadState *st,
                  gint64 next_tick_ms, gint64 now_ms)
{
    const PolicyGuardView *g = x->guards;

    if (g[POLICY_GUARD_OVERRIDE].holds) {
        if (g[POLICY_GUARD_OVERRIDE].until_ms != G_MININT64)
            next_look_set(x, g[POLICY_GUARD_OVERRIDE].until_ms, "when the override expires");
        else
            next_look_set(x, G_MININT64, "when the override is cleared");
        return;
    }
    if (g[POLICY_GUARD_EXTERNAL_HOLD].holds) {
        next_look_set(x, g[POLICY_GUARD_EXTERNAL_HOLD].until_ms,
                      "when the hold of the external write ends");
        return;
    }
    if (x->spec.kind == POLICY_KIND_OBSERVE) {
        next_look_set(x, G_MININT64, "never: observe does not write");
        return;
    }
    if (x->spec.kind == POLICY_KIND_ADAPTIVE && st && st->phase == POLICY_ADAPTIVE_IDLE) {
        next_look_set(x, G_MININT64, "when the iothread has I/O again");
        return;
    }
    if (x->spec.kind != POLICY_KIND_ADAPTIVE || !st || st->phase != POLICY_ADAPTIVE_SETTLED) {
        gint64 at = next_tick_ms;
        const char *why = x->spec.kind == POLICY_KIND_ADAPTIVE ?
            "next tick: the measurement goes on" : "next tick: the policy names its triple";

        if (g[POLICY_GUARD_DWELL].holds && g[POLICY_GUARD_DWELL].until_ms > at) {
            at = g[POLICY_GUARD_DWELL].until_ms;
            why = "when the minimum dwell since the last write ends";
        } else if (st && policy_adaptive_exploring(st) && (st->pending & POLICY_CAND_POLLING) &&
                   st->holdoff_until_ms > at) {
            at = st->holdoff_until_ms;
            why = "when the contention hold-off ends and a polling probe may start";
        }
        next_look_set(x, at, "%s", why);
        return;
    }
    if (cfg->revalidate_ms > 0)
        next_look_set(x, MAX(st->ref_ms + cfg->revalidate_ms, next_tick_ms),
                      "periodic revalidation; every tick sooner if IOPS move away from "
                      "the settled reference");
    else
        next_look_set(x, G_MININT64, "when IOPS move away from the settled reference "
                      "(revalidation is off)");
    (void)now_ms;
}

/*
 * The memory's part: the entry of the workload in force when it has a
 * fresh winner (the decision came, or could have come, from memory), else
 * what the memory said at the phase's last trigger.
 */
static void
explain_memory(PolicyExplain *x, const PolicyEngine *e, const PolicyIothreadState *st,
               gint64 now_ms)
{
    g_autofree char *key = g_strdup_printf("%s/%s", x->target, x->iothread);
    const PolicyMemory *mem = g_hash_table_lookup(policy_engine_memories_const(e)->by_key, key);
    const PolicyMemoryEntry *entry = NULL;

    x->memory_entries = mem ? policy_memory_size(mem) : 0;
    if (mem && st && st->have_sig)
        entry = policy_memory_lookup_near(mem, &st->sig, now_ms);
    if (entry)
        x->memory = policy_memory_entry_describe(entry, now_ms);
    else if (st && st->mem_note)
        x->memory = g_strdup(st->mem_note);
}

PolicyExplain *
policy_engine_explain(const PolicyEngine *e, const PolicyExplainContext *ctx,
                      const PolicyIothreadInput *in, gint64 now_ms)
{
    const PolicyConfig *cfg = policy_engine_config(e);
    const PolicyIothreadState *st = policy_engine_state_peek(e, in->target, in->iothread);
    const PolicyHost *host = ctx ? ctx->host : NULL;
    PolicyExplain *x = g_new0(PolicyExplain, 1);
    PolicyGuardView *g = x->guards;
    const PolicyMetrics *m = in->n_history ? &in->history[in->n_history - 1] : NULL;
    PolicyOverrideInfo ov = { 0 };
    PolicyTriple held;
    gint64 since, until;

    x->target = g_strdup(in->target);
    x->iothread = g_strdup(in->iothread);
    x->spec = *policy_config_lookup_named(cfg, in->target, in->name, in->iothread);
    x->mode = cfg->mode;
    x->current = in->current;
    x->known = st != NULL;
    x->have_metrics = m != NULL;
    if (m)
        x->last = *m;
    x->last_write_ms = st ? st->last_write_ms : G_MININT64;

    if (override_lookup(e, in, now_ms, &ov)) {
        g_autofree char *t = policy_triple_format(&ov.triple);

        guard_set(&g[POLICY_GUARD_OVERRIDE], ov.expires_ms != 0, TRUE,
                  ov.expires_ms ? (ov.expires_ms - now_ms) / 1000.0 : 0, -1, "s",
                  ov.expires_ms ? ov.expires_ms : G_MININT64,
                  "an override pins %s %s", t, ov.expires_ms ? "until it expires"
                                                             : "until cleared");
    } else {
        guard_set(&g[POLICY_GUARD_OVERRIDE], FALSE, FALSE, 0, -1, "s", G_MININT64, "none");
    }

    if (policy_engine_external_hold(e, in->target, in->iothread, now_ms, &held, &since,
                                    &until)) {
        g_autofree char *t = policy_triple_format(&held);

        guard_set(&g[POLICY_GUARD_EXTERNAL_HOLD], TRUE, TRUE, (now_ms - since) / 1000.0,
                  cfg->external_hold_ms / 1000.0, "s", until,
                  "%s was written outside polltune %.0f s ago; held as an implicit "
                  "override for %.0f s", t, (now_ms - since) / 1000.0,
                  cfg->external_hold_ms / 1000.0);
    } else {
        guard_set(&g[POLICY_GUARD_EXTERNAL_HOLD], FALSE, FALSE, 0,
                  cfg->external_hold_ms / 1000.0, "s", G_MININT64,
                  cfg->external_hold_ms > 0 ? "no external write held"
                                            : "disabled (external-hold = 0)");
    }

    {
        PolicyGuardCheck c = policy_guard_dwell(cfg, st, now_ms);

        if (!c.available)
            guard_set(&g[POLICY_GUARD_DWELL], FALSE, FALSE, 0, c.limit, "s", G_MININT64,
                      "no write yet");
        else
            guard_set(&g[POLICY_GUARD_DWELL], TRUE, c.holds, c.value, c.limit, "s", c.until_ms,
                      c.holds ? "last write %.1f s ago, minimum %.1f s: a new triple waits"
                              : "last write %.1f s ago, minimum %.1f s", c.value, c.limit);
    }

    guard_threshold(&g[POLICY_GUARD_PSI], host && host->have_psi,
                    host ? host->psi_some_pct : 0, cfg->psi_some_limit,
                    pt_conf_key_name(PT_CONF_KEY_psi_some_limit), "host CPU pressure (PSI some)");
    guard_threshold(&g[POLICY_GUARD_VCPU_DELAY], host && host->have_vcpu_delay,
                    host ? host->vcpu_run_delay_pct : 0, cfg->vcpu_delay_limit,
                    pt_conf_key_name(PT_CONF_KEY_vcpu_delay_limit), "vCPU run-queue wait");
    guard_threshold(&g[POLICY_GUARD_IOTHREAD_DELAY], m && m->have_cpu,
                    m ? m->run_delay_pct : 0, cfg->iothread_delay_limit,
                    pt_conf_key_name(PT_CONF_KEY_iothread_delay_limit),
                    "iothread run-queue wait");

    {
        PolicyGuardCheck c = policy_guard_holdoff(cfg, st, now_ms);

        if (c.holds)
            guard_set(&g[POLICY_GUARD_HOLDOFF], TRUE, TRUE, c.value, c.limit, "s", c.until_ms,
                      "contention cut polling: no polling probe for another %.0f s", c.value);
        else
            guard_set(&g[POLICY_GUARD_HOLDOFF], TRUE, FALSE, 0, c.limit, "s", G_MININT64,
                      "no contention hold-off");
    }

    if (cfg->budget_cores <= 0) {
        guard_set(&g[POLICY_GUARD_BUDGET], ctx != NULL, FALSE,
                  ctx ? ctx->host_polling_cores : 0, 0, "cores", G_MININT64,
                  "no budget (%s = 0)", pt_conf_key_name(PT_CONF_KEY_budget_cores));
    } else {
        double cost = policy_guard_polling_cost(st, in->n_iothreads, m, 0);
        /* An iothread that polls now is inside the host's figure already. */
        double own = m && m->have_cpu && in->current.poll_max_ns > 0 ? m->cpu_pct / 100.0 : 0;
        double used = ctx ? MAX(ctx->host_polling_cores - own, 0) : 0;
        gboolean holds = policy_guard_budget_check(cfg, used, cost).holds;

        guard_set(&g[POLICY_GUARD_BUDGET], ctx != NULL, holds, used + cost, cfg->budget_cores,
                  "cores", G_MININT64,
                  holds ? "polling here needs about %.2f cores and %.2f are in use elsewhere: "
                          "over the budget of %.2f cores"
                        : "polling here needs about %.2f cores and %.2f are in use elsewhere: "
                          "within the budget of %.2f cores", cost, used, cfg->budget_cores);
    }

    {
        /* What the exploration under way, or the next one, needs to start. */
        PolicyGuardCheck c = policy_guard_writes(
            st, policy_adaptive_admission_writes(cfg, st, &in->current), now_ms);

        if (x->spec.kind != POLICY_KIND_ADAPTIVE)
            guard_set(&g[POLICY_GUARD_WRITE_BUDGET], TRUE, FALSE, c.value, c.limit, "writes",
                      G_MININT64, "not in force: policy %s is not adaptive",
                      policy_kind_to_string(x->spec.kind));
        else
            guard_set(&g[POLICY_GUARD_WRITE_BUDGET], TRUE, c.holds, c.value, c.limit, "writes",
                      c.until_ms,
                      c.holds ? "%.0f writes in the last %u s (at most %u, and %u in %u min): "
                                "no exploration until the budget allows its probes and return"
                              : "%.0f writes in the last %u s (at most %u, and %u in %u min)",
                      c.value, POLICY_WRITES_SHORT_MS / 1000, POLICY_WRITES_SHORT_MAX,
                      POLICY_WRITES_LONG_MAX, POLICY_WRITES_LONG_MS / 60000);
    }

    /* The host guards cut only what an adaptive policy proposes. */
    if (x->spec.kind != POLICY_KIND_ADAPTIVE) {
        static const PolicyGuard host_guards[] = { POLICY_GUARD_PSI, POLICY_GUARD_VCPU_DELAY,
                                                   POLICY_GUARD_IOTHREAD_DELAY,
                                                   POLICY_GUARD_HOLDOFF, POLICY_GUARD_BUDGET };
        g_autofree char *spec = policy_spec_format(&x->spec);

        for (guint i = 0; i < G_N_ELEMENTS(host_guards); i++) {
            PolicyGuardView *h = &g[host_guards[i]];
            char *d;

            if (!h->holds)
                continue;
            h->holds = FALSE;
            d = g_strdup_printf("%s; not in force: policy %s is not adaptive", h->detail, spec);
            g_free(h->detail);
            h->detail = d;
        }
    }

    if (st) {
        x->have_benefit = st->polling.measured;
        x->gain = st->polling.gain;
        x->poll_cores = st->polling.cores;
        if (x->spec.kind == POLICY_KIND_ADAPTIVE)
            explain_candidates(x, cfg, st);
    }
    x->phase = explain_phase(st, x);
    explain_next_look(x, cfg, st, ctx ? ctx->next_tick_ms : now_ms, now_ms);
    if (x->spec.kind == POLICY_KIND_ADAPTIVE)
        explain_memory(x, e, st, now_ms);
    return x;
}
