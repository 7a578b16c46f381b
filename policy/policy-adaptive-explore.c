/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive-explore: the adaptive policy's exploration, START,
 * PROBE and NEXT.  It measures the starting triple, then each candidate
 * (off, the wide window, a moderate one) until the difference is clear,
 * and settles on the winner (docs/POLICY.md, "How adaptive decides").
 */
#include <math.h>

#include "policy-adaptive-private.h"

/*
 * A probe is measured for at most SEG_MAX ticks: three ticks of a triple
 * that is 30% worse cost 3% of a 30 s phase.  Six, as before, resolve
 * differences smaller by a factor of 1.4, but on the reduced matrix over
 * seeds 1-8 they lose half a point of cells within 3% of the oracle and
 * leave 0.75 more cells below the better trivial baseline; under the QEMU
 * 10 model (seed 1) three also lift the worst cell from 76.9% to 86.0%
 * (docs/POLICY-LOG.md).  Four let seed 3's worst cell fall to 71.2%.  The
 * starting triple is measured until its mean is known to SEG_A_SE (3%) or
 * for SEG_A_MAX ticks; it costs nothing.
 */
#define SEG_MAX 3
#define LUCKY_TICK_DF 3.0
#define LUCKY_NOISE_SD 0.10
#define SEG_A_MAX 4
#define SEG_A_SE 0.03
/* Old explorations' noise weighs half at each new one: the host changes too. */
#define NOISE_DECAY 0.5

/*
 * What probe @x must gain over the starting triple: a probe that costs
 * more iothread CPU must win by probe_margin, one that costs less may lose
 * up to rollback_tolerance (the cheaper of two equals wins).
 */
static double
probe_threshold(const PolicyConfig *cfg, const PolicySegment *x, const PolicySegment *a)
{
    return policy_segment_cpu(x) >= policy_segment_cpu(a) ? cfg->probe_margin
                                                          : -cfg->rollback_tolerance;
}

/* The standard error of the difference between @x's and @a's means. */
static double
diff_se(const PolicyIothreadState *st, const PolicySegment *x, const PolicySegment *a)
{
    return policy_adaptive_noise_sd(st) * sqrt(1.0 / MAX(a->n, 1) + 1.0 / MAX(x->n, 1));
}

/*
 * Probe @x's lead over @a by its threshold over @a, in standard errors of
 * the difference.
 */
static double
probe_z_over(const PolicyConfig *cfg, const PolicyIothreadState *st, const PolicySegment *x,
             const PolicySegment *a)
{
    double se = diff_se(st, x, a);
    double d = policy_segment_mean(x) - policy_segment_mean(a);

    return (d - probe_threshold(cfg, x, a)) / MAX(se, 1e-9);
}

/* The probe's lead over the starting triple. */
static double
probe_z(const PolicyConfig *cfg, const PolicyIothreadState *st, const PolicySegment *x)
{
    return probe_z_over(cfg, st, x, &st->seg_a);
}

/*
 * Nothing has measured the noise yet: one start tick, no probe of two
 * ticks or more, no earlier exploration.  The probes count: from a window
 * polling in vain (one start tick) the wide probe's two ticks are the
 * first measure, and counted, they end an off probe that clearly trails
 * the wide window on its first tick (the suite's S4 at 30 s: 97% of the
 * oracle's gain, 93% when off ran a second tick).
 */
static gboolean
noise_unmeasured(const PolicyIothreadState *st)
{
    double df;

    policy_adaptive_noise_sd_df(st, &df);
    return df < 1;
}

/*
 * Could one tick of a probe win by luck?  Until the noise is measured on
 * LUCKY_TICK_DF degrees of freedom, a probe that wins on its first tick
 * measures a second one.
 */
static gboolean
lucky_tick_possible(const PolicyIothreadState *st)
{
    double df;

    policy_adaptive_noise_sd_df(st, &df);
    return df < LUCKY_TICK_DF;
}

/*
 * Could one tick of QEMU's default have lost by bad luck?  Its ticks cost
 * nothing against leaving the iothread alone, so under noise (measured
 * above LUCKY_NOISE_SD) a default that loses its first tick measures a
 * second tick whenever it trails the start or an earlier probe: one draw
 * of +-50% noise put the default of a simulated nvme device on a shared
 * core at 60K where it runs 118K, the start (off, 106K) won, and the
 * phase lost a tenth of its IOPS.
 */
static gboolean
baseline_unlucky_tick(const PolicyIothreadState *st)
{
    double x = policy_segment_mean(&st->seg_x), best = policy_segment_mean(&st->seg_a);

    if (st->seg_x.n >= 2 || !policy_triple_equal(&st->seg_x.triple, &st->baseline) ||
        policy_adaptive_noise_sd(st) <= LUCKY_NOISE_SD)
        return FALSE;
    for (guint i = 0; i < st->n_done; i++)
        if (st->done[i].n)
            best = MAX(best, policy_segment_mean(&st->done[i]));
    return x < best;
}

/* More than one block per two operations: the window misses most events. */
static gboolean
polls_in_vain(const PolicySegment *g)
{
    return g->triple.poll_max_ns > 0 && g->last.have_cpu && g->last.blocks_per_op > 0.5;
}

/*
 * Is @x's difference from @a known to lie inside the band where switching
 * does not matter (between -rollback_tolerance and +probe_margin, widened
 * by EVIDENCE_Z standard errors)?  Then measuring a probe longer cannot
 * make it win: a probe as good as the start, costing a core more, would
 * otherwise run its full SEG_MAX ticks.
 */
static gboolean
segments_equivalent(const PolicyConfig *cfg, const PolicyIothreadState *st,
                    const PolicySegment *x, const PolicySegment *a)
{
    double se = diff_se(st, x, a);
    double d = policy_segment_mean(x) - policy_segment_mean(a);

    return fabs(d) + policy_adaptive_evidence_bar(st) * se <
           cfg->probe_margin + cfg->rollback_tolerance;
}

/*
 * Does probe @x clearly trail a probe measured earlier in this
 * exploration (its probe_z_over() that probe below minus the evidence
 * bar, as a probe that clearly loses to the start)?  Then it is not the
 * triple to commit to, whatever its lead over the start: measuring it
 * longer only costs ticks of a losing triple.
 * On the reduced matrix over seeds 1-4 this ends 0.7 (QEMU 7.2) and 0.5
 * (QEMU 10) points more of the cells within 3% of the oracle, and loses
 * on no seed (docs/POLICY-LOG.md).
 */
static gboolean
probe_trails_done(const PolicyConfig *cfg, const PolicyIothreadState *st,
                  const PolicySegment *x)
{
    /* The prior alone decides nothing. */
    if (noise_unmeasured(st))
        return FALSE;
    for (guint i = 0; i < st->n_done; i++) {
        if (st->done[i].n &&
            probe_z_over(cfg, st, x, &st->done[i]) < -policy_adaptive_evidence_bar(st))
            return TRUE;
    }
    return FALSE;
}

/*
 * The most polling could gain here, in objective units: each avoided block
 * saves at most saving_per_block_ns of the time one operation takes.
 * Minus what the polling core would cost.  Probing when this is negative
 * would burn a core for a tick to learn nothing.
 */
double
policy_adaptive_polling_bound(const PolicyConfig *cfg, PolicyObjective o, const PolicyMetrics *m)
{
    double iops = policy_metrics_iops(m);
    double per_op_ns = iops > 0 ? 1e9 / iops : G_MAXDOUBLE;
    double blocks = m->have_cpu ? m->blocks_per_op : 2.0;
    double idle = m->have_cpu ? MAX(0.0, 1.0 - m->cpu_pct / 100.0) : 1.0;

    return log1p(blocks * cfg->saving_per_block_ns / per_op_ns) -
           policy_config_cpu_weight(cfg, o) * idle;
}

/* Polling's measured value for the guards: the best polling triple against off. */
static void
record_benefit(PolicyIothreadState *st)
{
    const PolicySegment *all[3] = { &st->seg_a, NULL, NULL };
    const PolicySegment *off = NULL, *poll = NULL;

    for (guint i = 0; i < st->n_done; i++)
        all[i + 1] = &st->done[i];
    for (guint i = 0; i < G_N_ELEMENTS(all); i++) {
        const PolicySegment *g = all[i];

        if (!g || !g->n)
            continue;
        if (g->triple.poll_max_ns == 0)
            off = g;
        else if (!poll || policy_segment_mean(g) > policy_segment_mean(poll))
            poll = g;
    }
    /*
     * Frugal: costs no more whole-VM CPU than off (CPU is measured without
     * the IOPS' noise) and is not confidently worse than off.
     */
    st->polling.have_frugal = FALSE;
    for (guint i = 0; off && off->n_exits == off->n && i < G_N_ELEMENTS(all); i++) {
        const PolicySegment *g = all[i];
        double se;

        if (!g || !g->n || g->triple.poll_max_ns == 0 || g->n_exits != g->n ||
            g->vm_cores_sum / g->n > off->vm_cores_sum / off->n)
            continue;
        se = diff_se(st, g, off);
        if (policy_segment_mean(g) - policy_segment_mean(off) <
            -policy_adaptive_evidence_bar(st) * se)
            continue;
        if (!st->polling.have_frugal ||
            policy_segment_mean(g) > policy_segment_mean(&st->polling.frugal)) {
            st->polling.have_frugal = TRUE;
            st->polling.frugal = *g;
        }
    }
    if (off && poll) {
        st->polling.measured = TRUE;
        st->polling.this_workload = TRUE;
        st->polling.gain = policy_segment_mean(poll) - policy_segment_mean(off);
        st->polling.cores = MAX((policy_segment_cpu(poll) - policy_segment_cpu(off)) / 100.0, 0.01);
        st->polling.net_measured = off->n_exits == off->n && poll->n_exits == poll->n;
        st->polling.net_cores = poll->vm_cores_sum / poll->n - off->vm_cores_sum / off->n;
    }
}

static void
segment_describe(GString *out, const char *prefix, const PolicySegment *g)
{
    g_autofree char *t = policy_triple_format(&g->triple);

    g_string_append_printf(out, " %s=%s:n=%u:score=%.4f", prefix, t, g->n, policy_segment_mean(g));
}

/*
 * The segment the others must beat: the baseline's (the triple the
 * iothread would have without polltune) when the exploration measured
 * it, else the start's.
 */
static const PolicySegment *
explore_anchor(const PolicyIothreadState *st)
{
    for (guint i = 0; i < st->n_done; i++)
        if (policy_triple_equal(&st->done[i].triple, &st->baseline))
            return &st->done[i];
    return &st->seg_a;
}

/* ln of how far apart the exploration's segments' IOPS lie. */
static double
explore_iops_span(const PolicyIothreadState *st)
{
    double lo = G_MAXDOUBLE, hi = -G_MAXDOUBLE;

    for (guint i = 0; i <= st->n_done; i++) {
        const PolicySegment *g = i ? &st->done[i - 1] : &st->seg_a;

        if (!g->n)
            continue;
        lo = MIN(lo, g->ln_iops_sum / g->n);
        hi = MAX(hi, g->ln_iops_sum / g->n);
    }
    return hi > lo ? hi - lo : 0.0;
}

/*
 * What the exploration found, for the memory: the probes that lost cost
 * their ticks' lead below the winner (the start's ticks are spent whether
 * or not the iothread explores).  Not when its segments' IOPS lie a
 * factor of 3 apart: no triple moves IOPS that far (polling, by up to
 * 50%, seed 001), the workload changed under the exploration.  Learnt,
 * such an exploration kept a winner measured on another workload, with a
 * noise so wide that no surprise could undo it (a simulated lifetime's
 * QD16 load kept a wide window at 73% of off's IOPS).
 */
static void
explore_learn(PolicyProposal *p, const PolicySegment *win, const PolicySegment *anchor,
              gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    double span = explore_iops_span(st);
    PolicyExploration x;

    if (span > GROSS_CHANGE_LN) {
        policy_adaptive_memory_note(st, "not learnt: the workload changed under the "
                                    "exploration (its IOPS moved by a factor of %.1f)",
                                    exp(span));
        g_string_append(p->evidence, " learnt=no(workload changed)");
        return;
    }
    x = (PolicyExploration){
        .winner = win->triple,
        .winner_score = policy_segment_mean(win),
        .winner_ticks = win->n,
        .anchor = anchor->triple,
        .anchor_score = policy_segment_mean(anchor),
        .noise = policy_adaptive_noise_sd(st),
        .contended = st->explore_contended,
    };

    for (guint i = 0; i < st->n_done; i++) {
        const PolicySegment *g = &st->done[i];

        if (g == win)
            continue;
        x.probe_ticks += g->n;
        x.probe_loss += g->n * MAX(0.0, policy_segment_mean(win) - policy_segment_mean(g));
    }
    policy_adaptive_memory_learn(p, &x, now_ms);
}

/*
 * The exploration is over: the segment with the largest confident lead
 * over the anchor wins, else the anchor stays.  From QEMU's default the
 * anchor is the start; from off after an idle spell it is the default
 * window, probed: under noise that hides a difference the iothread is
 * left as it would be without polltune, not where the idle rule put it.
 * (The test guest's QD16 under TCG, +9% with polling by an A/B of 8
 * pairs, cannot be told from +-30% per-tick noise by a few ticks of each
 * triple; returning to off on such a draw lost the gain for good.)
 */
static void
explore_finish(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    const PolicySegment *anchor = explore_anchor(st), *win = anchor;
    const PolicySegment *all[G_N_ELEMENTS(st->done) + 1] = { &st->seg_a };
    double best_lead = 0;
    g_autofree char *bt = NULL;

    for (guint i = 0; i < st->n_done; i++)
        all[i + 1] = &st->done[i];
    g_string_append_printf(p->evidence, " noise_sd=%.4f", policy_adaptive_noise_sd(st));
    for (guint i = 0; i <= st->n_done; i++) {
        const PolicySegment *x = all[i];
        double z, lead;

        segment_describe(p->evidence, i ? "probe" : "start", x);
        if (x == anchor) {
            if (anchor != &st->seg_a)
                g_string_append(p->evidence, ":anchor");
            continue;
        }
        z = probe_z_over(cfg, st, x, anchor);
        lead = policy_segment_mean(x) - policy_segment_mean(anchor) -
               probe_threshold(cfg, x, anchor);
        g_string_append_printf(p->evidence, ":z=%.1f", z);
        if (z > policy_adaptive_evidence_bar(st) && lead > best_lead) {
            best_lead = lead;
            win = x;
        }
    }
    /*
     * Segments a factor of 3 apart measured two workloads (see
     * explore_learn()): a lead between them is the workload's, not the
     * triple's.  The anchor stays; its reference, the old workload's,
     * makes the new one a gross move two ticks on, which recalls or
     * explores it afresh.  (A lifetime's probe of off that met a QD16
     * load's arrival kept off, at 89% of QEMU's default, for the rest of
     * the lifetime.)
     */
    if (win != anchor && explore_iops_span(st) > GROSS_CHANGE_LN) {
        g_string_append(p->evidence, " winner=anchor(workload changed)");
        win = anchor;
    }
    /*
     * The segment in force also beat the anchor and is known to be as good
     * as the winner: it stays, and the write back with its reset of QEMU's
     * window is saved.  Known, not merely not shown worse: under noise
     * that rule kept whichever probe came last, off from a polling start.
     */
    for (guint i = 0; win != anchor && i <= st->n_done; i++) {
        const PolicySegment *x = all[i];

        if (x != win && x != anchor && policy_triple_equal(&x->triple, cur) &&
            probe_z_over(cfg, st, x, anchor) > policy_adaptive_evidence_bar(st) &&
            segments_equivalent(cfg, st, x, win)) {
            g_string_append(p->evidence, " kept_in_force=1");
            win = x;
        }
    }
    record_benefit(st);
    policy_adaptive_noise_pool(st, &st->seg_a);
    for (guint i = 0; i < st->n_done; i++)
        policy_adaptive_noise_pool(st, &st->done[i]);
    explore_learn(p, win, anchor, now_ms);
    st->best = win->triple;
    st->best_cause = POLICY_CAUSE_ROLLBACK;
    policy_adaptive_settle(st, win, policy_triple_equal(&win->triple, cur), now_ms);
    bt = policy_triple_format(&win->triple);
    if (!policy_triple_equal(&win->triple, cur)) {
        policy_proposal_set(p, &win->triple, POLICY_CAUSE_ROLLBACK,
                            win == anchor ? "adaptive: nothing beat %s with confidence, "
                                            "returning to it"
                                          : "adaptive: the objective was better at %s, "
                                            "returning to it", bt);
    } else {
        policy_proposal_set(p, cur, POLICY_CAUSE_ACCEPT,
                            "adaptive: %s measured best, keeping it", bt);
    }
}

static guint start_role(const PolicyConfig *cfg, const PolicyTriple *t);

/* The writes of an exploration from @a with candidates @pending left. */
static guint
explore_writes(const PolicyConfig *cfg, guint pending, const PolicyTriple *a)
{
    PolicyTriple w = policy_adaptive_wide(cfg), n = policy_adaptive_narrow(cfg);
    guint writes = 1;           /* the return */

    if ((pending & POLICY_CAND_OFF) && a->poll_max_ns > 0)
        writes++;
    if ((pending & POLICY_CAND_WIDE) && !policy_triple_equal(&w, a))
        writes++;
    if ((pending & POLICY_CAND_NARROW) && n.poll_max_ns > 0 && !policy_triple_equal(&n, &w) &&
        !policy_triple_equal(&n, a))
        writes++;
    return writes;
}

guint
policy_adaptive_admission_writes(const PolicyConfig *cfg, const PolicyIothreadState *st,
                                 const PolicyTriple *current)
{
    if (st && policy_adaptive_exploring(st)) {
        if (st->n_done || st->phase == POLICY_ADAPTIVE_PROBE)
            return 0;
        return explore_writes(cfg, st->pending, &st->seg_a.triple);
    }
    return explore_writes(cfg, POLICY_CAND_ALL & ~start_role(cfg, current), current);
}

/*
 * Propose the next unmeasured candidate, or finish the exploration.  A
 * candidate leaves st->pending only when its probe is written (the engine
 * commits it), so a probe deferred by dwell or a guard is retried.
 */
void
policy_adaptive_explore_next(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *a = &st->seg_a.triple;
    PolicyTriple w = policy_adaptive_wide(cfg);
    /*
     * Wide before off, whatever the start looked like.  The return to the
     * start then follows off, which takes requests in batches again: after
     * a wide window a device that batches can stay in the state where each
     * request is handled alone as it arrives, and the start, measured
     * again right after wide, would give less than it gave before the
     * probes (the simulator's QD64 batching device: 190K IOPS before, 152K
     * after).  For the same reason the moderate window, when it is not
     * the start, comes after off.  The order costs nothing: all are
     * measured.
     */
    static const guint order[] = { POLICY_CAND_WIDE, POLICY_CAND_OFF, POLICY_CAND_NARROW };

    for (guint i = 0; i < G_N_ELEMENTS(order); i++) {
        guint cand = order[i];
        PolicyTriple t;

        if (!(st->pending & cand))
            continue;
        if (cand == POLICY_CAND_OFF) {
            if (a->poll_max_ns == 0) {
                st->pending &= ~POLICY_CAND_OFF;
                continue;
            }
            t = policy_adaptive_off(a);
        } else {
            t = cand == POLICY_CAND_WIDE ? w : policy_adaptive_narrow(cfg);
            /* Held off by the contention guard: measured another time. */
            if (policy_guard_holdoff(cfg, st, now_ms).holds || policy_triple_equal(&t, a))
                continue;
        }
        /*
         * The write budget admits an exploration whole: its first probe
         * waits until every probe and the return fit, so that no later
         * probe is ever dropped.  Admitted a probe and its return at a
         * time, an exploration the budget cut short ended on what it had
         * measured, and a wide window that had beaten the start on one to
         * three ticks stayed without off ever measured against it (the
         * test guest's QD1: two phases on 262144, where an A/B of the same
         * guest finds off ahead).  While it waits, the iothread stays on
         * the triple it settled on.
         */
        if (!st->n_done &&
            !policy_adaptive_writes_fit(p, policy_adaptive_admission_writes(cfg, st, a),
                                        "the exploration's first probe", now_ms))
            return;
        policy_proposal_set(p, &t, POLICY_CAUSE_PROBE, "adaptive: %s",
                            cand == POLICY_CAND_OFF ? "measuring polling off" :
                            cand == POLICY_CAND_WIDE ? "measuring a wide poll window" :
                            "measuring QEMU's default poll window");
        /*
         * The first probe is the exploration's first write: its record
         * says what began it and what the memory said, which the ticks
         * that measured the start (no write, so no decision row) showed.
         */
        if (!st->n_done && st->explore_why && !strstr(p->evidence->str, " trigger="))
            g_string_append_printf(p->evidence, " trigger=\"%s\"%s%s%s", st->explore_why,
                                   st->mem_checked && st->mem_note ? " memory_note=\"" : "",
                                   st->mem_checked && st->mem_note ? st->mem_note : "",
                                   st->mem_checked && st->mem_note ? "\"" : "");
        p->trial_cand = cand;
        return;
    }
    /*
     * Off is measured or not wanted: a polling window still held off by
     * the contention guard, or equal to the start, is not probed this time.
     */
    st->pending &= ~POLICY_CAND_POLLING;
    explore_finish(cfg, p, now_ms);
}
/*
 * Is the starting triple's mean known well enough to compare probes with?
 * With no measured noise yet (a new iothread), two ticks: one tick says
 * nothing about the noise, and the prior alone would take +-50% noise for
 * a difference.
 */
static gboolean
start_measured(const PolicyIothreadState *st)
{
    const PolicySegment *a = &st->seg_a;
    double data_df, sd = policy_adaptive_noise_sd_df(st, &data_df);

    if (a->n >= SEG_A_MAX)
        return TRUE;
    /*
     * A window polling in vain points at its wide probe already: probe at
     * once, and learn the noise from the probe's own ticks instead.
     */
    if (data_df < 1)
        return a->n >= 2 || (a->n >= 1 && polls_in_vain(a));
    return a->n >= 1 && sd / sqrt(a->n) <= SEG_A_SE;
}

/*
 * The candidate a triple stands for: off, the wide window (or wider), or
 * the moderate window, QEMU's default or any other window.
 */
static guint
start_role(const PolicyConfig *cfg, const PolicyTriple *t)
{
    if (t->poll_max_ns == 0)
        return POLICY_CAND_OFF;
    if (t->poll_max_ns >= policy_adaptive_wide(cfg).poll_max_ns)
        return POLICY_CAND_WIDE;
    return POLICY_CAND_NARROW;
}

static void
explore_begin(const PolicyConfig *cfg, PolicyProposal *p, const char *why, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMetrics *m = p->m;
    const PolicyTriple *cur = &p->in->current;
    PolicyTriple w = policy_adaptive_wide(cfg), n = policy_adaptive_narrow(cfg);
    gboolean had_ref = policy_adaptive_has_ref(st);

    policy_adaptive_enter(st, POLICY_ADAPTIVE_START);
    st->n_done = 0;
    /*
     * A workload that is certainly new (the first, one after an idle
     * spell, a move no noise makes) opens a new epoch of the write budget's
     * ten minutes: they bound the writes of one workload, revalidation and
     * the change detectors' false alarms included, not those of workloads
     * that follow one another.
     */
    if (why == policy_adaptive_why_gross || why == policy_adaptive_why_load ||
        st->write_epoch_ms == G_MININT64)
        st->write_epoch_ms = now_ms;
    /*
     * A new workload is a new question for the contention guard too: where
     * exits are counted, the wide probe measures whole-VM CPU, so the
     * hold-off of a cut made for the old workload does not apply to it.
     */
    if ((why == policy_adaptive_why_moved || why == policy_adaptive_why_gross ||
         why == policy_adaptive_why_shape) && m->have_exits &&
        st->holdoff_until_ms > now_ms) {
        st->holdoff_until_ms = G_MININT64;
        g_string_append(p->evidence, " contention_holdoff=cleared(new workload)");
    }
    /*
     * So is what polling was worth: measured on the workload before, it
     * must not cut this exploration's polling probe before that probe has
     * measured it here (a shared core's QD16 load, where off had won,
     * cut the next workload's wide probe after one tick, where polling
     * gained half its IOPS).
     */
    if (why != policy_adaptive_why_revalidate)
        st->polling.this_workload = FALSE;
    st->noise_ss *= NOISE_DECAY;
    st->noise_df *= NOISE_DECAY;
    /* The settled ticks are the freshest measure of the noise. */
    if (had_ref)
        policy_adaptive_noise_pool(st, &st->ref);
    /*
     * Every exploration measures off, the wide window and a moderate one,
     * whichever of them it starts from: the start stands for its own
     * role, and a start that is some other window (an operator's) for the
     * moderate one.  No candidate is skipped on a prediction made from
     * the start's own ticks: what those show depends on the start.  At
     * off the iothread blocks once per operation or once per batch, and
     * the bound once used here, ln(1 + blocks/op x saving_per_block_ns /
     * time per op) less the CPU weight times the idle share, read the
     * test guest's QD16 under TCG (1 block per 16 operations at 8% of a
     * core) as -0.077 and never probed the window that an A/B of the same
     * guest finds 9% ahead at the same CPU (docs/BENCHMARKS.md).  From
     * QEMU's default the same bound was harmless, off being probed anyway;
     * from off it left nothing to measure.  Nor is off skipped when the
     * wide window beat a start that polls in vain: that reasoned that off
     * could not beat the fruitless window's IOPS at no CPU, but a window
     * that spins for nothing takes CPU the guest may need (the test
     * guest's QD1 on a loaded host: 7.1K IOPS at off, 5.5K with a 65536
     * window in an A/B), and the iothread stayed on 262144 for 89 of 89
     * QD1 ticks, at 63% of a core, without off ever measured.
     */
    st->pending = POLICY_CAND_ALL & ~start_role(cfg, cur);
    if (n.poll_max_ns == 0 || policy_triple_equal(&n, &w))
        st->pending &= ~POLICY_CAND_NARROW;
    policy_segment_start(&st->seg_a, cur);
    policy_segment_add(cfg, &st->seg_a, p->objective, m);
    st->explore_why = why;
    st->explore_contended = FALSE;
    st->recall_contended = FALSE;
    g_string_append_printf(p->evidence, " trigger=\"%s\"", why);
}

/* PROBE: one more tick of the probe in force, until it is clear. */
void
policy_adaptive_step_probe(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    double z;

    if (!policy_triple_equal(cur, &st->own_write.triple)) {
        /* The probe never landed (the write failed): nothing was measured. */
        policy_adaptive_enter(st, POLICY_ADAPTIVE_NEW);
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: the probe was not applied, exploring again next tick");
        return;
    }
    if (!st->seg_x.n || !policy_triple_equal(&st->seg_x.triple, cur))
        policy_segment_start(&st->seg_x, cur);
    policy_segment_add(cfg, &st->seg_x, p->objective, p->m);
    z = probe_z(cfg, st, &st->seg_x);
    /*
     * Go on while the probe neither clearly wins, nor clearly loses,
     * nor is clearly equivalent to the start, nor clearly trails an
     * earlier probe, and for a second tick when nothing measured the
     * noise yet.
     */
    if (st->seg_x.n < SEG_MAX &&
        ((!probe_trails_done(cfg, st, &st->seg_x) &&
          ((fabs(z) <= policy_adaptive_evidence_bar(st) &&
            !segments_equivalent(cfg, st, &st->seg_x, &st->seg_a)) ||
           (st->seg_x.n < 2 && (noise_unmeasured(st) ||
                                (z > 0 && lucky_tick_possible(st)))))) ||
         baseline_unlucky_tick(st))) {
        g_autofree char *t = policy_triple_format(cur);

        g_string_append_printf(p->evidence, " z=%.2f noise_sd=%.4f", z,
                               policy_adaptive_noise_sd(st));
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: measuring %s, tick %u of at most %u, not yet clear",
                            t, st->seg_x.n, SEG_MAX);
        return;
    }
    /*
     * The probe is over: whatever is written next (the next probe or
     * the winner) ends a deliberate measurement and is not held back
     * by the dwell, which would only prolong a probe that lost
     * (dwell_exempt()).
     */
    policy_adaptive_enter(st, POLICY_ADAPTIVE_NEXT);
    st->done[st->n_done++] = st->seg_x;
    st->seg_x.n = 0;
    policy_adaptive_explore_next(cfg, p, now_ms);
}

/* START: the triple in force, measured until its mean is known. */
void
policy_adaptive_step_start(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;

    if (policy_triple_equal(&p->in->current, &st->seg_a.triple))
        policy_segment_add(cfg, &st->seg_a, p->objective, p->m);
    if (policy_adaptive_memory_gate(cfg, p, now_ms) != POLICY_MEMORY_EXPLORE)
        return;
    if (!start_measured(st)) {
        g_string_append_printf(p->evidence, " noise_sd=%.4f", policy_adaptive_noise_sd(st));
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: measuring the starting triple, tick %u of at most %u",
                            st->seg_a.n, SEG_A_MAX);
        return;
    }
    policy_adaptive_enter(st, POLICY_ADAPTIVE_NEXT);
    policy_adaptive_explore_next(cfg, p, now_ms);
}

/*
 * The exploration that starts at this tick, from any phase at rest, when
 * the memory neither remembers the workload nor finds exploring it
 * worthless.
 */
void
policy_adaptive_explore_now(const PolicyConfig *cfg, PolicyProposal *p, const char *why,
                            gint64 now_ms)
{
    explore_begin(cfg, p, why, now_ms);
    if (policy_adaptive_memory_gate(cfg, p, now_ms) != POLICY_MEMORY_EXPLORE)
        return;
    if (!start_measured(p->st)) {
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: %s, measuring the starting triple", why);
        return;
    }
    policy_adaptive_enter(p->st, POLICY_ADAPTIVE_NEXT);
    policy_adaptive_explore_next(cfg, p, now_ms);
}
