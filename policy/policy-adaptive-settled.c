/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive-settled: the adaptive policy's phases at rest, NEW,
 * IDLE, SETTLED and RETURN: the idle rule, the write back of a winner,
 * and the change detectors that start the next exploration.
 */
#include <math.h>

#include "policy-adaptive-private.h"

/*
 * The change detector fires when the CUSUM of ln IOPS passes CUSUM_SDS
 * per-tick standard deviations (and at least ln(1 + change_ratio)); its
 * slack is half a change_ratio step or half a standard deviation, whichever
 * is larger, plus the standard error of the reference's mean; the
 * standard deviation is policy_adaptive_change_sd()'s.  Under +-50% noise,
 * noise alone then alarms in 0.4-1.8% of 25-tick steady phases, and the
 * mean run to a false alarm is longer than the 300 s revalidation; without
 * noise a step of 27% shows on its fourth tick.
 */
#define CUSUM_SDS 5.0
/*
 * One tick adds at most CUSUM_TICK_SHARE of the limit to the sum, and a
 * gross change must hold for two ticks in the same direction: on a TCG
 * guest a single tick dips or jumps by 30% to a factor of 3 inside a steady
 * phase (a timer or a compile on the host), and the tick that straddles a
 * phase change is half one workload and half the next.  Exploring on such
 * a tick measured the probe against a start that was not the workload, and
 * the settled rate started a second exploration (4 writes at one change,
 * 2-4 inside a steady 40 s QD1 phase in docs/BENCHMARKS.md's e2e runs).  A
 * real change still shows in two ticks.
 */
#define CUSUM_TICK_SHARE 0.6

/*
 * One tick of a two-sided CUSUM: @x is the tick's distance from the
 * reference's mean of @n ticks, @sd the per-tick deviation.  The limit
 * (returned in @limit) is CUSUM_SDS deviations and at least a
 * change_ratio step; the slack is half a step or half a deviation,
 * whichever is larger, plus the standard error of the reference's mean:
 * without that, a reference of a few noisy ticks biases every tick the
 * same way and the sum drifts to a false alarm within a phase.  One tick
 * adds at most CUSUM_TICK_SHARE of the limit.  TRUE when a side passes
 * the limit.
 */
static gboolean
cusum_step(const PolicyConfig *cfg, double sd, guint n, double x, double *hi, double *lo,
           double *limit)
{
    double step = log1p(cfg->change_ratio);
    double h = MAX(step, CUSUM_SDS * sd);
    double slack = MAX(step, sd) / 2 + sd / sqrt(n);

    x = CLAMP(x, -CUSUM_TICK_SHARE * h - slack, CUSUM_TICK_SHARE * h + slack);
    *hi = MAX(0.0, *hi + x - slack);
    *lo = MAX(0.0, *lo - x - slack);
    *limit = h;
    return *hi > h || *lo > h;
}

const char policy_adaptive_why_moved[] = "IOPS moved away from the settled reference";
const char policy_adaptive_why_gross[] = "IOPS moved by a factor of 3 or more";
const char policy_adaptive_why_shape[] =
    "blocks per operation moved away from the settled reference";
const char policy_adaptive_why_load[] = "I/O after an idle spell";
const char policy_adaptive_why_first[] = "first measurement";
const char policy_adaptive_why_revalidate[] = "periodic revalidation";
const char policy_adaptive_why_surprise[] =
    "the remembered winner scored clearly below its remembered score";

/*
 * Did the I/O change shape?  Under polling off a new workload can move
 * IOPS by less than a change_ratio step and still be a different
 * question: an open load at half the device's rate turning into QD1
 * moved the simulator's IOPS by 15% under off, so the CUSUM of ln IOPS
 * never reached its limit, while blocks per operation went from 1.35 to
 * 2.00 and polling would have gained 46% (docs/BENCHMARKS.md).  So a
 * second CUSUM, of the shape's ln against the reference's mean, sized
 * like the first: slack half a step or half a standard deviation plus
 * the reference mean's standard error, limit CUSUM_SDS deviations, each
 * tick clamped to CUSUM_TICK_SHARE of it.  The deviation is the
 * reference's own, from successive differences, raised by CHANGE_SD_SES
 * standard errors and at least SHAPE_SD_MIN: a few steady ticks of a
 * noise-free run can agree to a fraction of a percent.
 */
#define SHAPE_SD_MIN 0.05

static gboolean
shape_changed(const PolicyConfig *cfg, PolicyIothreadState *st, const PolicyMetrics *m,
              GString *evidence)
{
    const PolicySegment *r = &st->ref;
    double df, sd, h;
    gboolean fired;

    if (!m->have_cpu || r->n_shape < REF_MIN_TICKS)
        return FALSE;
    df = (r->n_shape - 1) * REF_DF_SHARE;
    sd = sqrt(r->shape_ssd / 2 / (r->n_shape - 1)) * (1.0 + CHANGE_SD_SES / sqrt(2.0 * df));
    sd = MAX(sd, SHAPE_SD_MIN);
    fired = cusum_step(cfg, sd, r->n_shape, policy_adaptive_shape_of(m) - r->shape_sum / r->n_shape,
                       &st->shape_hi, &st->shape_lo, &h);
    g_string_append_printf(evidence, " shape_cusum=%.3f/%.3f shape_limit=%.3f", st->shape_hi,
                           st->shape_lo, h);
    return fired;
}

/*
 * Has the workload changed?  A two-sided CUSUM of ln IOPS against the
 * settled mean, with a threshold sized to the measured noise, so that noise
 * alone does not trigger and a real change does within a few ticks.
 */
static gboolean
workload_changed(const PolicyConfig *cfg, PolicyIothreadState *st, const PolicyMetrics *m,
                 gint64 now_ms, const char **why, GString *evidence)
{
    double sd = policy_adaptive_change_sd(st), h, x;
    gboolean fired;

    if (st->phase == POLICY_ADAPTIVE_NEW) {
        *why = policy_adaptive_why_first;
        return TRUE;
    }
    /* Settled without a measurement (a guard's cut): this tick starts the reference. */
    if (!st->ref.n)
        return FALSE;
    x = log(MAX(policy_metrics_iops(m), 1e-3)) - st->ref.ln_iops_sum / st->ref.n;
    /*
     * No noise up to +-50% moves two ticks in a row by a factor of 3 the
     * same way: that is a new workload.
     */
    if (fabs(x) > GROSS_CHANGE_LN) {
        PolicyGrossMove move = x > 0 ? POLICY_GROSS_UP : POLICY_GROSS_DOWN;

        if (st->gross == move) {
            st->gross = POLICY_GROSS_NONE;
            *why = policy_adaptive_why_gross;
            return TRUE;
        }
        st->gross = move;
        g_string_append(evidence, " gross_move=1/2");
        return FALSE;
    }
    st->gross = POLICY_GROSS_NONE;
    /* The reference's mean and spread are learned from its first ticks. */
    if (st->ref.n < REF_MIN_TICKS)
        return FALSE;
    fired = cusum_step(cfg, sd, st->ref.n, x, &st->cusum_hi, &st->cusum_lo, &h);
    g_string_append_printf(evidence, " cusum=%.3f/%.3f limit=%.3f", st->cusum_hi,
                           st->cusum_lo, h);
    if (fired) {
        *why = policy_adaptive_why_moved;
        return TRUE;
    }
    if (shape_changed(cfg, st, m, evidence)) {
        *why = policy_adaptive_why_shape;
        return TRUE;
    }
    if (cfg->revalidate_ms > 0 && now_ms - st->ref_ms >= cfg->revalidate_ms) {
        *why = policy_adaptive_why_revalidate;
        return TRUE;
    }
    return FALSE;
}


/*
 * RETURN: the winner is written back until it is in force; that tick is
 * then SETTLED's (FALSE: not decided here).
 */
gboolean
policy_adaptive_step_return(PolicyProposal *p)
{
    PolicyIothreadState *st = p->st;
    g_autofree char *bt = NULL;

    if (policy_triple_equal(&st->best, &p->in->current)) {
        policy_adaptive_enter(st, POLICY_ADAPTIVE_SETTLED);
        return FALSE;
    }
    bt = policy_triple_format(&st->best);
    if (st->best_cause == POLICY_CAUSE_ROLLBACK)
        policy_proposal_set(p, &st->best, POLICY_CAUSE_ROLLBACK,
                            "adaptive: the objective was better at %s, returning to it", bt);
    else if (st->best_cause == POLICY_CAUSE_REMEMBERED)
        policy_proposal_set(p, &st->best, POLICY_CAUSE_REMEMBERED, "adaptive: %s; writing it",
                            st->mem_note ? st->mem_note : "remembered");
    else
        policy_proposal_set(p, &st->best, st->best_cause,
                            "adaptive: the %s guard cut polling, writing %s",
                            policy_cause_to_string(st->best_cause), bt);
    return TRUE;
}

/*
 * Below idle_iops, from any phase at rest: IDLE, polling off.  Nothing
 * is measured there; the first I/O after it is a new workload.
 */
gboolean
policy_adaptive_step_idle_rule(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyTriple off = policy_adaptive_off(&p->in->current);

    if (policy_metrics_iops(p->m) >= cfg->idle_iops)
        return FALSE;
    /* An idle spell ends the workload's phase. */
    if (p->st->phase != POLICY_ADAPTIVE_IDLE)
        policy_adaptive_memory_phase_end(p, now_ms - policy_adaptive_tick_ms(p));
    policy_adaptive_enter(p->st, POLICY_ADAPTIVE_IDLE);
    if (!policy_triple_equal(&off, &p->in->current) &&
        !policy_adaptive_writes_fit(p, 1, "the idle rule's polling off", now_ms))
        return TRUE;
    policy_proposal_set(p, &off, POLICY_CAUSE_IDLE,
                        "adaptive: %.0f IOPS is below %.0f, gaps this long cannot be "
                        "polled for, polling off", policy_metrics_iops(p->m), cfg->idle_iops);
    return TRUE;
}

/*
 * IDLE, and I/O: a new workload, explored from its second tick with I/O,
 * as a gross change is (the first is partly the idle spell's).  The load
 * starts where it would without polltune: the idle rule's off is put back
 * to the baseline first, and the exploration starts from there on the
 * next tick, when the budget has room for that write and the whole
 * exploration after it.  Explored from off, the start's own ticks cost
 * the load what off costs it (a QD16 load on a 32 us device, where off is
 * 57% of the oracle, lost 6% of a 30 s phase to them in the matrix's boot
 * cells) while the baseline is measured anyway.  After a short idle spell
 * the idle write still counts, and the write back would leave room for
 * one probe only: the matrix's 10 s boot cells then lost the probe of off
 * where off wins (62.5% of them within 3% of the oracle, against 75.0%
 * exploring from off), so the exploration starts from off instead.
 */
void
policy_adaptive_step_idle(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;

    /* The load is a move up from nothing: it counts on its second tick. */
    if (st->gross != POLICY_GROSS_UP) {
        st->gross = POLICY_GROSS_UP;
        g_string_append(p->evidence, " load_after_idle=1/2");
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: I/O after an idle spell, measured from the next tick");
        return;
    }
    /*
     * The load's phase began a tick ago.  A workload remembered gets its
     * winner now, in one write, instead of the write back to the baseline
     * and an exploration; one not worth exploring, the baseline.
     */
    if (st->phase_start_ms == G_MININT64)
        policy_adaptive_memory_phase_begin(st, now_ms - 2 * policy_adaptive_tick_ms(p), 2);
    /*
     * Load after idle is a certain change: it opens the write budget's
     * epoch before the memory is asked, so that a remembered winner is not
     * held back by the writes of the workloads before the idle spell
     * (explore_begin() opens it too, for the exploration).  A restarted
     * daemon, whose budget counts every write of the last ten minutes,
     * otherwise kept the test guest's returning QD1 at off for its whole
     * phase.
     */
    st->write_epoch_ms = now_ms;
    if (policy_adaptive_memory_gate(cfg, p, now_ms) != POLICY_MEMORY_EXPLORE)
        return;
    if (!policy_triple_equal(cur, &st->baseline) && st->baseline.poll_max_ns > 0 &&
        !policy_guard_writes(st, 1 + policy_adaptive_admission_writes(cfg, st, &st->baseline),
                             now_ms).holds) {
        g_autofree char *bt = policy_triple_format(&st->baseline);

        policy_proposal_set(p, &st->baseline, POLICY_CAUSE_ROLLBACK,
                            "adaptive: I/O after an idle spell, back to %s, the triple without "
                            "polltune, before measuring", bt);
        return;
    }
    st->gross = POLICY_GROSS_NONE;
    policy_adaptive_explore_now(cfg, p, policy_adaptive_why_load, now_ms);
}

/*
 * NEW and SETTLED: an exploration when nothing was measured yet or the
 * change detectors fire.
 */
void
policy_adaptive_step_settled(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMetrics *m = p->m;
    const PolicyTriple *cur = &p->in->current;
    const char *why = NULL;

    gint64 tick_ms = policy_adaptive_tick_ms(p);

    if (!workload_changed(cfg, st, m, now_ms, &why, p->evidence)) {
        /* A tick that moved grossly waits for the next one, outside the reference. */
        if (st->gross == POLICY_GROSS_NONE)
            policy_segment_add(cfg, &st->ref, p->objective, m);
        if (policy_adaptive_memory_confirm(cfg, p, now_ms))
            return;
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: steady");
        return;
    }
    /*
     * The memory's phases: the first measurement begins one, revalidation
     * goes on with it, a change ends it where the new one began, the two
     * ticks that showed it (a gross move's; a CUSUM's last two).
     */
    if (why == policy_adaptive_why_first) {
        policy_adaptive_memory_phase_begin(st, now_ms - tick_ms, 1);
    } else if (why == policy_adaptive_why_revalidate) {
        if (policy_adaptive_memory_revalidate(p, now_ms))
            return;
    } else {
        policy_adaptive_memory_phase_end(p, now_ms - 2 * tick_ms);
        policy_adaptive_memory_phase_begin(st, now_ms - 2 * tick_ms, 2);
    }
    policy_adaptive_explore_now(cfg, p, why, now_ms);
}
