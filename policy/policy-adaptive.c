/*
 * policy-adaptive: the adaptive policy.
 *
 * QEMU already sizes the poll window at the microsecond scale; what it cannot
 * know is whether polling pays at all here, and whether its ceiling is too
 * low for the gaps this device shows.  So the adaptive policy does not guess
 * windows: it measures.  When the workload changes it explores up to two
 * candidates, polling off and a wide window (probe_poll_max_ns, QEMU's own
 * growth below it), one tick each, compares them with the objective, and
 * settles on the best one measured, the starting triple included.  Probes
 * that cannot win are skipped: a wider window when the current one already
 * catches, a wide one when even the best case cannot pay for its core.
 * Between explorations it writes nothing: every write resets QEMU's window.
 */
#include <math.h>

#include "policy-private.h"

/* Below this many blocks per I/O a polling window catches most events. */
#define POLICY_CATCHING_BLOCKS_PER_OP 0.5

/*
 * Score in natural-log units of IOPS, so 0.01 is about 1%.
 *  latency:    ln(IOPS) - ln(mean latency); CPU does not count.
 *  balanced:   ln(IOPS) - 0.10 * iothread cores; a core must buy >= 10.5%.
 *  efficiency: ln(IOPS) - 0.50 * iothread cores; a core must buy >= 65%.
 */
double
policy_objective_cpu_weight(PolicyObjective o)
{
    switch (o) {
    case POLICY_OBJECTIVE_LATENCY:
        return 0.0;
    case POLICY_OBJECTIVE_EFFICIENCY:
        return 0.50;
    case POLICY_OBJECTIVE_BALANCED:
    default:
        return 0.10;
    }
}

double
policy_objective_score(PolicyObjective o, const PolicyMetrics *m)
{
    double iops = MAX(policy_metrics_iops(m), 1e-3);
    double cores = m->have_cpu ? m->cpu_pct / 100.0 : 0.0;
    double s = log(iops) - policy_objective_cpu_weight(o) * cores;

    if (o == POLICY_OBJECTIVE_LATENCY && m->lat_mean_ns > 0)
        s -= log(m->lat_mean_ns / 1000.0);
    return s;
}

void
policy_metrics_describe(GString *out, const char *prefix, const PolicyMetrics *m)
{
    g_autofree char *t = policy_triple_format(&m->triple);

    g_string_append_printf(out, "%striple=%s %siops=%.0f %slat_us=%.1f %sqd=%.2f",
                           prefix, t, prefix, policy_metrics_iops(m), prefix,
                           m->lat_mean_ns / 1000.0, prefix, m->queue_depth);
    if (m->have_cpu)
        g_string_append_printf(out, " %scpu_pct=%.1f %sblocks_per_op=%.2f", prefix,
                               m->cpu_pct, prefix, m->blocks_per_op);
    if (m->have_exits)
        g_string_append_printf(out, " %sexits_per_op=%.2f", prefix, m->exits_per_op);
}

PolicyTriple
policy_adaptive_off(const PolicyTriple *current)
{
    return (PolicyTriple){ 0, current->poll_grow, current->poll_shrink };
}

void
policy_adaptive_reset(PolicyIothreadState *st)
{
    st->have_ref = FALSE;
    st->exploring = FALSE;
    st->trial = FALSE;
    st->want = FALSE;
    st->pending = 0;
}

static PolicyTriple
wide_triple(const PolicyConfig *cfg)
{
    return (PolicyTriple){ MIN(cfg->probe_poll_max_ns, cfg->max_poll_max_ns), 0, 0 };
}

/* Does measurement @c beat the best so far?  Costlier candidates must win. */
static gboolean
candidate_wins(const PolicyConfig *cfg, PolicyObjective o, const PolicyMetrics *c,
               const PolicyMetrics *best)
{
    double sc = policy_objective_score(o, c), sb = policy_objective_score(o, best);

    if (c->have_cpu && best->have_cpu && c->cpu_pct > best->cpu_pct)
        return sc >= sb + cfg->probe_margin;
    return sc >= sb - cfg->rollback_tolerance;
}

/* Polling that catches most events, as opposed to a window cycling in vain. */
static gboolean
catches(const PolicyMetrics *m)
{
    return m->triple.poll_max_ns > 0 && m->have_cpu &&
           m->blocks_per_op <= POLICY_CATCHING_BLOCKS_PER_OP;
}

/*
 * The most polling could gain here, in objective units: each avoided block
 * saves at most saving_per_block_ns of the time one operation takes.
 * Minus what the polling core would cost.  Probing when this is negative
 * would burn a core for a tick to learn nothing.
 */
static double
polling_upper_bound(const PolicyConfig *cfg, PolicyObjective o, const PolicyMetrics *m)
{
    double iops = policy_metrics_iops(m);
    double per_op_ns = iops > 0 ? 1e9 / iops : G_MAXDOUBLE;
    double blocks = m->have_cpu ? m->blocks_per_op : 2.0;
    double idle = m->have_cpu ? MAX(0.0, 1.0 - m->cpu_pct / 100.0) : 1.0;

    return log1p(blocks * cfg->saving_per_block_ns / per_op_ns) -
           policy_objective_cpu_weight(o) * idle;
}

static void
record_sample(PolicyIothreadState *st, PolicyObjective o, const PolicyMetrics *m)
{
    /* A window that catches nothing behaves like polling off, at a cost. */
    if (!catches(m)) {
        st->off_m = *m;
        st->have_off = TRUE;
    } else {
        st->poll_m = *m;
        st->have_poll = TRUE;
    }
    if (st->have_off && st->have_poll) {
        double dc = (st->poll_m.cpu_pct - st->off_m.cpu_pct) / 100.0;

        st->have_benefit = TRUE;
        st->gain = policy_objective_score(o, &st->poll_m) -
                   policy_objective_score(o, &st->off_m);
        st->poll_cores = MAX(dc, 0.01);
    }
}

static void
settle(PolicyIothreadState *st, const PolicyMetrics *m, gint64 now_ms)
{
    st->have_ref = TRUE;
    st->ref = *m;
    st->ref_ms = now_ms;
}

/*
 * Propose the next unmeasured candidate, or finish the exploration.  A
 * candidate leaves st->pending only when its probe is written (the engine
 * commits it), so a probe deferred by dwell or a guard is retried.
 */
static void
explore_next(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    g_autofree char *bt = NULL;

    if (st->pending & POLICY_CAND_WIDE && cur->poll_max_ns > 0 && !catches(&st->best_m) &&
        now_ms >= st->holdoff_until_ms) {
        /* Polling in vain now: first see whether a wider window catches. */
        PolicyTriple w = wide_triple(cfg);

        policy_proposal_set(p, &w, POLICY_CAUSE_PROBE, "adaptive: measuring a wide poll window");
        p->trial_cand = POLICY_CAND_WIDE;
        return;
    }
    if (st->pending & POLICY_CAND_OFF) {
        if (cur->poll_max_ns > 0) {
            PolicyTriple off = policy_adaptive_off(cur);

            policy_proposal_set(p, &off, POLICY_CAUSE_PROBE,
                                "adaptive: measuring polling off");
            p->trial_cand = POLICY_CAND_OFF;
            return;
        }
        st->pending &= ~POLICY_CAND_OFF;
    }
    if (st->pending & POLICY_CAND_WIDE) {
        PolicyTriple w = wide_triple(cfg);

        if (now_ms >= st->holdoff_until_ms && !policy_triple_equal(&w, cur)) {
            policy_proposal_set(p, &w, POLICY_CAUSE_PROBE,
                                "adaptive: measuring a wide poll window");
            p->trial_cand = POLICY_CAND_WIDE;
            return;
        }
        st->pending &= ~POLICY_CAND_WIDE;
    }
    /* Done: the best measured candidate wins. */
    st->exploring = FALSE;
    settle(st, &st->best_m, now_ms);
    bt = policy_triple_format(&st->best);
    g_string_append(p->evidence, " ");
    policy_metrics_describe(p->evidence, "best_", &st->best_m);
    if (!policy_triple_equal(&st->best, cur)) {
        st->want = TRUE;
        p->returns_to_best = TRUE;
        policy_proposal_set(p, &st->best, POLICY_CAUSE_ROLLBACK,
                            "adaptive: the objective was better at %s, returning to it", bt);
    } else {
        policy_proposal_set(p, cur, POLICY_CAUSE_ACCEPT,
                            "adaptive: %s measured best, keeping it", bt);
    }
}

static gboolean
workload_changed(const PolicyConfig *cfg, const PolicyIothreadState *st,
                 const PolicyMetrics *m, gint64 now_ms, const char **why)
{
    double ref = policy_metrics_iops(&st->ref), cur = policy_metrics_iops(m);

    if (!st->have_ref) {
        *why = "first measurement";
        return TRUE;
    }
    if (fabs(cur - ref) > cfg->change_ratio * MAX(ref, cfg->idle_iops)) {
        *why = "IOPS moved away from the settled reference";
        return TRUE;
    }
    if (cfg->revalidate_ms > 0 && now_ms - st->ref_ms >= cfg->revalidate_ms) {
        *why = "periodic revalidation";
        return TRUE;
    }
    return FALSE;
}

void
policy_adaptive_step(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMetrics *m = p->m;
    const PolicyTriple *cur = &p->in->current;
    PolicyObjective o = p->objective;
    const char *why = NULL;

    if (!m || !m->have_io) {
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: no I/O measurements yet");
        return;
    }
    policy_metrics_describe(p->evidence, "", m);
    g_string_append_printf(p->evidence, " score=%.4f", policy_objective_score(o, m));

    /* A write landed inside this tick: its numbers describe neither triple. */
    if (!policy_triple_equal(&m->triple, cur) ||
        (st->last_write_ms != G_MININT64 &&
         m->when_ms - m->interval_ns / 1000000 < st->last_write_ms)) {
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: settling, this tick straddles a write");
        return;
    }
    if (st->want) {
        if (policy_triple_equal(&st->best, cur)) {
            st->want = FALSE;
            settle(st, m, now_ms);
        } else {
            g_autofree char *bt = policy_triple_format(&st->best);

            policy_proposal_set(p, &st->best, POLICY_CAUSE_ROLLBACK,
                                "adaptive: the objective was better at %s, returning to it", bt);
            p->returns_to_best = TRUE;
            return;
        }
    }
    if (st->trial && !policy_triple_equal(cur, &st->expected)) {
        /* The probe never landed (the write failed): nothing was measured. */
        policy_adaptive_reset(st);
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: the probe was not applied, exploring again next tick");
        return;
    }
    if (st->trial) {
        st->trial = FALSE;
        record_sample(st, o, m);
        if (candidate_wins(cfg, o, m, &st->best_m)) {
            /*
             * A wide window that beat a window catching nothing also beats
             * off: the off probe would only cost a tick.
             */
            if (cur->poll_max_ns > 0 && !catches(&st->best_m))
                st->pending &= ~POLICY_CAND_OFF;
            st->best = *cur;
            st->best_m = *m;
        }
        explore_next(cfg, p, now_ms);
        return;
    }
    if (st->exploring) {
        /* A probe was deferred (dwell, budget, contention): try again. */
        explore_next(cfg, p, now_ms);
        return;
    }
    if (policy_metrics_iops(m) < cfg->idle_iops) {
        PolicyTriple off = policy_adaptive_off(cur);

        settle(st, m, now_ms);
        policy_proposal_set(p, &off, POLICY_CAUSE_IDLE,
                            "adaptive: %.0f IOPS is below %.0f, gaps this long cannot be "
                            "polled for, polling off", policy_metrics_iops(m), cfg->idle_iops);
        return;
    }
    if (!workload_changed(cfg, st, m, now_ms, &why)) {
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: steady");
        return;
    }
    st->exploring = TRUE;
    st->pending = POLICY_CAND_OFF | POLICY_CAND_WIDE;
    {
        PolicyTriple w = wide_triple(cfg);

        /*
         * A window that already catches the events (few blocks per
         * operation) would gain nothing from being wider: only off is
         * worth a probe then.
         */
        if (policy_triple_equal(&w, cur) || catches(m))
            st->pending &= ~POLICY_CAND_WIDE;
        if (st->pending & POLICY_CAND_WIDE && polling_upper_bound(cfg, o, m) < 0) {
            st->pending &= ~POLICY_CAND_WIDE;
            g_string_append_printf(p->evidence, " polling_bound=%.3f",
                                   polling_upper_bound(cfg, o, m));
        }
    }
    st->have_off = st->have_poll = FALSE;
    st->best = *cur;
    st->best_m = *m;
    record_sample(st, o, m);
    g_string_append_printf(p->evidence, " trigger=\"%s\"", why);
    explore_next(cfg, p, now_ms);
}
