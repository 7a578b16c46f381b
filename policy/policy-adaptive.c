/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive: the adaptive policy.
 *
 * QEMU already sizes the poll window at the microsecond scale; what it cannot
 * know is whether polling pays at all here, and whether its ceiling is too
 * low for the gaps this device shows.  So the adaptive policy does not guess
 * windows: it measures.  When the workload changes (a CUSUM of ln IOPS and
 * one of blocks per operation, each sized to the measured noise) it
 * measures the starting triple, then up to two candidates, polling off and
 * a wide window (probe_poll_max_ns, QEMU's own growth below it), each until
 * the difference is clear or for at most SEG_MAX ticks, and switches only
 * when a candidate wins by more than a confidence bound.  A wide probe is
 * skipped only when even the best case cannot pay for its core.  Between
 * explorations it writes nothing: every write resets QEMU's window.
 */
#include <math.h>

#include "common/pt-enum-table.h"
#include "policy-private.h"

PT_ENUM_IMPL_TO_STRING(policy_adaptive_phase, PolicyAdaptivePhase, POLICY_ADAPTIVE_MAX,
                       [POLICY_ADAPTIVE_NEW] = "waiting for a measurement",
                       [POLICY_ADAPTIVE_IDLE] = "idle",
                       [POLICY_ADAPTIVE_SETTLED] = "steady",
                       [POLICY_ADAPTIVE_START] = "measuring the starting triple",
                       [POLICY_ADAPTIVE_PROBE] = "measuring a probe",
                       [POLICY_ADAPTIVE_NEXT] = "exploring",
                       [POLICY_ADAPTIVE_RETURN] = "returning to the best triple")

gboolean
policy_adaptive_exploring(const PolicyIothreadState *st)
{
    return st->phase == POLICY_ADAPTIVE_START || st->phase == POLICY_ADAPTIVE_PROBE ||
           st->phase == POLICY_ADAPTIVE_NEXT;
}

/* SETTLED, or RETURN (settled on a winner not yet written back): a reference. */
static gboolean
has_ref(const PolicyIothreadState *st)
{
    return st->phase == POLICY_ADAPTIVE_SETTLED || st->phase == POLICY_ADAPTIVE_RETURN;
}

/*
 * Evidence before a switch.  Per-tick figures are noisy: a TCG guest shows
 * +-50% from one second to the next, a busy host +-10%.  So each triple is
 * measured over several ticks and a probe replaces the starting triple only
 * when its mean beats it by more than EVIDENCE_Z standard errors of the
 * difference (one-sided, 84%), and a probe ends as soon as it leads or
 * trails by that much.  One standard error, not two: the write at the end
 * of an exploration happens whichever triple wins (the start is written
 * back), so the bar does not guard against thrashing, the change detector
 * does; what a high bar buys is longer probes of losing triples, which in
 * 30 s phases cost more than the wrong picks it avoids.  On the reduced
 * scenario matrix over four seeds, two standard errors gave 59.4% of the
 * cells within 3% of the oracle and a mean objective of 10.5740, one
 * gives 72.1% and 10.5810, half gives 76.9% but a worst cell of 73.3%
 * (docs/POLICY-LOG.md).  The per-tick standard deviation is
 * pooled from every segment measured on this iothread, starting from a
 * prior of NOISE_PRIOR_SD worth NOISE_PRIOR_DF ticks: the simulator's
 * noise-free runs vary by about 1% per tick, and that prior lets a clear
 * difference be decided after one tick of each triple.
 */
#define EVIDENCE_Z 1.0
#define NOISE_PRIOR_SD 0.01
#define NOISE_PRIOR_DF 2.0
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
#define SEG_A_MAX 4
#define SEG_A_SE 0.03
/*
 * The change detector fires when the CUSUM of ln IOPS passes CUSUM_SDS
 * per-tick standard deviations (and at least ln(1 + change_ratio)); its
 * slack is half a change_ratio step or half a standard deviation, whichever
 * is larger, plus the standard error of the reference's mean; the standard
 * deviation is change_sd()'s.  Under +-50% noise, noise alone then alarms
 * in 0.4-1.8% of 25-tick steady phases, and the mean run to a false alarm is
 * longer than the 300 s revalidation; without noise a step of 27% shows
 * on its fourth tick.
 */
#define CUSUM_SDS 5.0
/*
 * Until the settled reference has REF_MIN_TICKS ticks its mean is too
 * noisy to accumulate against; only a gross change (a factor of 3, which
 * +-50% noise cannot produce) counts then.
 */
#define REF_MIN_TICKS 3
#define GROSS_CHANGE_LN 1.0986
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
/* Old explorations' noise weighs half at each new one: the host changes too. */
#define NOISE_DECAY 0.5

/*
 * Score in natural-log units of IOPS, so 0.01 is about 1%.
 *  latency:    ln(IOPS) - ln(mean latency); CPU does not count.
 *  balanced:   ln(IOPS) - balanced_cpu_weight x whole-VM cores.
 *  efficiency: ln(IOPS) - efficiency_cpu_weight x whole-VM cores.
 * Whole-VM cores: the iothread's CPU, plus the vCPU time of the guest's
 * exits where they are counted: polling that suppresses a kick saves an
 * exit, and on a shared core that time goes to the guest's application.
 */
static double
weight_of(double balanced, double efficiency, PolicyObjective o)
{
    switch (o) {
    case POLICY_OBJECTIVE_LATENCY:
        return 0.0;
    case POLICY_OBJECTIVE_EFFICIENCY:
        return efficiency;
    case POLICY_OBJECTIVE_BALANCED:
    default:
        return balanced;
    }
}

static double
vm_cores(double exit_cost_ns, const PolicyMetrics *m)
{
    double cores = m->have_cpu ? m->cpu_pct / 100.0 : 0.0;

    if (m->have_exits)
        cores += m->exits_per_s * exit_cost_ns / 1e9;
    return cores;
}

/*
 * The IOPS term: ln(IOPS), or with two or more devices counted one by one
 * the mean over devices of ln(1 + device IOPS), the log of their geometric
 * mean: a triple that gives one device +10% and takes 10% from another
 * scores about 0, however unequal their rates, where ln(total IOPS) would
 * follow the busier one.  For one device both are ln(IOPS), so a core must
 * buy the same share of every device's IOPS as of one device's.
 */
static double
iops_term(const PolicyMetrics *m)
{
    double s = 0;

    if (m->n_devices < 2 || m->n_devices > POLICY_MAX_DEVICES)
        return log(MAX(policy_metrics_iops(m), 1e-3));
    for (guint i = 0; i < m->n_devices; i++)
        s += log1p(MAX(m->dev_iops[i], 0.0));
    return s / m->n_devices;
}

static double
score_of(double weight, double exit_cost_ns, PolicyObjective o, const PolicyMetrics *m)
{
    double s = iops_term(m) - weight * vm_cores(exit_cost_ns, m);

    if (o == POLICY_OBJECTIVE_LATENCY && m->lat_mean_ns > 0)
        s -= log(m->lat_mean_ns / 1000.0);
    return s;
}

double
policy_objective_cpu_weight(PolicyObjective o)
{
    return weight_of(POLICY_DEFAULT_BALANCED_CPU_WEIGHT, POLICY_DEFAULT_EFFICIENCY_CPU_WEIGHT, o);
}

double
policy_objective_score(PolicyObjective o, const PolicyMetrics *m)
{
    return score_of(policy_objective_cpu_weight(o), POLICY_DEFAULT_EXIT_COST_NS, o, m);
}

double
policy_config_cpu_weight(const PolicyConfig *cfg, PolicyObjective o)
{
    return weight_of(cfg->balanced_cpu_weight, cfg->efficiency_cpu_weight, o);
}

double
policy_config_vm_cores(const PolicyConfig *cfg, const PolicyMetrics *m)
{
    return vm_cores(cfg->exit_cost_ns, m);
}

double
policy_config_score(const PolicyConfig *cfg, PolicyObjective o, const PolicyMetrics *m)
{
    return score_of(policy_config_cpu_weight(cfg, o), cfg->exit_cost_ns, o, m);
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
policy_adaptive_enter(PolicyIothreadState *st, PolicyAdaptivePhase phase)
{
    st->phase = phase;
    switch (phase) {
    case POLICY_ADAPTIVE_NEW:
        st->pending = 0;
        st->n_done = 0;
        st->seg_x.n = 0;
        break;
    case POLICY_ADAPTIVE_IDLE:
        st->gross = POLICY_GROSS_NONE;
        break;
    default:
        break;
    }
}

/*
 * Whether the tick's write, moving the phase from @from to @to, is exempt
 * from the dwell: it writes a settled winner back (RETURN), ends a probe
 * (whatever follows it: the next probe, the winner, the idle rule), or
 * ends an exploration the load left (to IDLE).  A probe that goes on, or
 * never landed (back to NEW), writes nothing of its own.
 */
static gboolean
dwell_exempt(PolicyAdaptivePhase from, PolicyAdaptivePhase to)
{
    if (to == POLICY_ADAPTIVE_RETURN)
        return TRUE;
    if (from == POLICY_ADAPTIVE_PROBE)
        return to != POLICY_ADAPTIVE_PROBE && to != POLICY_ADAPTIVE_NEW;
    return to == POLICY_ADAPTIVE_IDLE &&
           (from == POLICY_ADAPTIVE_START || from == POLICY_ADAPTIVE_NEXT ||
            from == POLICY_ADAPTIVE_RETURN);
}

PolicyTriple
policy_adaptive_wide(const PolicyConfig *cfg)
{
    return (PolicyTriple){ MIN(cfg->probe_poll_max_ns, cfg->max_poll_max_ns), 0, 0 };
}

PolicyTriple
policy_adaptive_narrow(const PolicyConfig *cfg)
{
    PolicyTriple t = POLICY_TRIPLE_QEMU_DEFAULT;

    t.poll_max_ns = MIN(t.poll_max_ns, cfg->max_poll_max_ns);
    return t;
}

/*
 * The I/O's shape, for the change detector: ln(blocks per operation +
 * SHAPE_FLOOR).  The floor keeps a window that catches nearly everything
 * (0.00-0.05 blocks per operation) from looking like a change of several
 * times; below a block per ten operations the difference does not matter.
 */
#define SHAPE_FLOOR 0.1

static double
shape_of(const PolicyMetrics *m)
{
    return log(MAX(m->blocks_per_op, 0.0) + SHAPE_FLOOR);
}

static void
segment_start(PolicySegment *g, const PolicyTriple *t)
{
    *g = (PolicySegment){ .triple = *t };
}

static void
segment_add(const PolicyConfig *cfg, PolicySegment *g, PolicyObjective o, const PolicyMetrics *m)
{
    double s = policy_config_score(cfg, o, m);

    if (g->n)
        g->ssd += (s - g->last_score) * (s - g->last_score);
    g->last_score = s;
    g->n++;
    g->sum += s;
    g->sumsq += s * s;
    g->ln_iops_sum += log(MAX(policy_metrics_iops(m), 1e-3));
    g->cpu_sum += m->have_cpu ? m->cpu_pct : 0.0;
    g->vm_cores_sum += policy_config_vm_cores(cfg, m);
    g->n_exits += m->have_exits;
    if (m->have_cpu) {
        double y = shape_of(m);

        if (g->n_shape)
            g->shape_ssd += (y - g->last_shape) * (y - g->last_shape);
        g->last_shape = y;
        g->n_shape++;
        g->shape_sum += y;
    }
    g->last = *m;
}

static double
segment_mean(const PolicySegment *g)
{
    return g->n ? g->sum / g->n : 0.0;
}

static double
segment_cpu(const PolicySegment *g)
{
    return g->n ? g->cpu_sum / g->n : 0.0;
}

/* Sum of squares about the segment's own mean. */
static double
segment_ss(const PolicySegment *g)
{
    return g->n > 1 ? MAX(g->sumsq - g->sum * g->sum / g->n, 0.0) : 0.0;
}

/*
 * The settled reference's sum of squares, from its successive differences
 * (half their squares, von Neumann's estimate): a step in the workload
 * adds one large difference, where it adds a large square about the mean
 * to every tick.  Squares about the mean made a noise-free step of 27%
 * raise the CUSUM's limit faster than the step could reach it (0.223 to
 * 0.668 over ten ticks): the change was never seen.  For independent
 * noise the two estimates agree on average, but successive differences
 * are worth only about two thirds of the degrees of freedom (REF_DF_SHARE,
 * for the standard error of change_sd()).
 */
#define REF_DF_SHARE (2.0 / 3.0)
static double
ref_ss(const PolicySegment *g)
{
    return g->n > 1 ? g->ssd / 2 : 0.0;
}

/* @g's sum of squares as a measure of the noise: the settled reference
 * may end in a change, a probe's or the start's ticks may not. */
static double
noise_ss_of(const PolicyIothreadState *st, const PolicySegment *g)
{
    return g == &st->ref ? ref_ss(g) : segment_ss(g);
}

/*
 * The pooled per-tick standard deviation of the score; @data_df, if not
 * NULL, gets the degrees of freedom that came from measurements, @eff_df
 * the same with the live settled reference's counted at REF_DF_SHARE
 * (a reference pooled at an earlier exploration counts in full: an
 * approximation that errs towards a lower limit, by at most a third of
 * that reference's degrees of freedom).
 */
static double
noise_sd_eff(const PolicyIothreadState *st, double *data_df, double *eff_df)
{
    double ss = NOISE_PRIOR_SD * NOISE_PRIOR_SD * NOISE_PRIOR_DF + st->noise_ss;
    double df = NOISE_PRIOR_DF + st->noise_df, eff = st->noise_df;
    gboolean exploring = policy_adaptive_exploring(st);
    const PolicySegment *live[] = { has_ref(st) ? &st->ref : NULL,
                                    exploring ? &st->seg_a : NULL,
                                    st->phase == POLICY_ADAPTIVE_PROBE ? &st->seg_x : NULL,
                                    exploring && st->n_done > 0 ? &st->done[0] : NULL,
                                    exploring && st->n_done > 1 ? &st->done[1] : NULL };

    for (guint i = 0; i < G_N_ELEMENTS(live); i++) {
        if (live[i] && live[i]->n > 1) {
            ss += noise_ss_of(st, live[i]);
            df += live[i]->n - 1;
            eff += (live[i]->n - 1) * (live[i] == &st->ref ? REF_DF_SHARE : 1.0);
        }
    }
    if (data_df)
        *data_df = df - NOISE_PRIOR_DF;
    if (eff_df)
        *eff_df = eff;
    return sqrt(ss / df);
}

static double
noise_sd_df(const PolicyIothreadState *st, double *data_df)
{
    return noise_sd_eff(st, data_df, NULL);
}

static double
noise_sd(const PolicyIothreadState *st)
{
    return noise_sd_df(st, NULL);
}

/*
 * The per-tick standard deviation the change detector sizes its limit
 * with: the measured ticks' alone, raised by CHANGE_SD_SES standard errors
 * of the estimate, sd / sqrt(2 df).  The pooled figure above suits the
 * evidence bar, whose Student's t already pays for few ticks; the CUSUM
 * has no such term, and its false-alarm rate is steep in the sd it is
 * given.  Under +-50% noise (a per-tick sd of 0.31 in ln IOPS) a limit
 * sized to 0.8 of the true sd alarms once in about 220 ticks, to the true
 * sd once in 1200.  The pooled estimate from 6-20 ticks, pulled down by
 * the 1% prior, made 6-19% of 25-tick steady phases alarm; the measured
 * ticks' own, raised by one standard error, 1.4-3.1%.  With the reference's
 * spread taken from successive differences (ref_ss()), which vary more,
 * one standard error let 11 of the 300 noise sequences of
 * test-policy-engine's noise-false-alarms explore again, two let 3, as
 * many as before; in the model of bench/pollsim/cusum-false-alarms.py,
 * 0.4-1.8% of the phases alarm.  Without measured ticks, the pooled
 * figure.
 */
#define CHANGE_SD_SES 2.0

static double
change_sd(const PolicyIothreadState *st)
{
    double data_df, eff_df, sd = noise_sd_eff(st, &data_df, &eff_df), ss;

    if (data_df < 1)
        return sd;
    ss = sd * sd * (data_df + NOISE_PRIOR_DF) - NOISE_PRIOR_SD * NOISE_PRIOR_SD * NOISE_PRIOR_DF;
    return sqrt(MAX(ss, 0.0) / data_df) * (1.0 + CHANGE_SD_SES / sqrt(2.0 * MAX(eff_df, 0.5)));
}

/*
 * The evidence bar: how many standard errors a difference must exceed,
 * as Student's t at EVIDENCE_Z's level (a normal quantile) and the
 * degrees of freedom of the ticks measured (at least one, so that the
 * prior alone never lets a difference count as known).  At one degree of
 * freedom the bar is 1.84 standard errors for z = 1 and 14 for z = 2: two
 * ticks that happen to agree make +-50% noise look like 4%.
 */
static double
evidence_bar(const PolicyIothreadState *st)
{
    double df;

    noise_sd_df(st, &df);
    return policy_t_quantile(0.5 * erfc(-EVIDENCE_Z / M_SQRT2), MAX(df, 1.0));
}

static void
noise_pool(PolicyIothreadState *st, const PolicySegment *g)
{
    if (g->n > 1) {
        st->noise_ss += noise_ss_of(st, g);
        st->noise_df += g->n - 1;
    }
}

/*
 * What probe @x must gain over the starting triple: a probe that costs
 * more iothread CPU must win by probe_margin, one that costs less may lose
 * up to rollback_tolerance (the cheaper of two equals wins).
 */
static double
probe_threshold(const PolicyConfig *cfg, const PolicySegment *x, const PolicySegment *a)
{
    return segment_cpu(x) >= segment_cpu(a) ? cfg->probe_margin : -cfg->rollback_tolerance;
}

/* The standard error of the difference between @x's and @a's means. */
static double
diff_se(const PolicyIothreadState *st, const PolicySegment *x, const PolicySegment *a)
{
    return noise_sd(st) * sqrt(1.0 / MAX(a->n, 1) + 1.0 / MAX(x->n, 1));
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
    double d = segment_mean(x) - segment_mean(a);

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

    noise_sd_df(st, &df);
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

    noise_sd_df(st, &df);
    return df < LUCKY_TICK_DF;
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
    double d = segment_mean(x) - segment_mean(a);

    return fabs(d) + evidence_bar(st) * se < cfg->probe_margin + cfg->rollback_tolerance;
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
        if (st->done[i].n && probe_z_over(cfg, st, x, &st->done[i]) < -evidence_bar(st))
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
        else if (!poll || segment_mean(g) > segment_mean(poll))
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
        if (segment_mean(g) - segment_mean(off) < -evidence_bar(st) * se)
            continue;
        if (!st->polling.have_frugal || segment_mean(g) > segment_mean(&st->polling.frugal)) {
            st->polling.have_frugal = TRUE;
            st->polling.frugal = *g;
        }
    }
    if (off && poll) {
        st->polling.measured = TRUE;
        st->polling.gain = segment_mean(poll) - segment_mean(off);
        st->polling.cores = MAX((segment_cpu(poll) - segment_cpu(off)) / 100.0, 0.01);
        st->polling.net_measured = off->n_exits == off->n && poll->n_exits == poll->n;
        st->polling.net_cores = poll->vm_cores_sum / poll->n - off->vm_cores_sum / off->n;
    }
}

/*
 * Settled on @g: its ticks are the reference the change detectors watch.
 * SETTLED when @g's triple is @in_force, else RETURN until it is.
 */
static void
settle(PolicyIothreadState *st, const PolicySegment *g, gboolean in_force, gint64 now_ms)
{
    policy_adaptive_enter(st, in_force ? POLICY_ADAPTIVE_SETTLED : POLICY_ADAPTIVE_RETURN);
    st->ref = *g;
    st->ref_ms = now_ms;
    st->cusum_hi = st->cusum_lo = 0;
    st->shape_hi = st->shape_lo = 0;
    st->gross = POLICY_GROSS_NONE;
}

gboolean
policy_adaptive_fall_back_frugal(PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    g_autofree char *t = NULL;

    if (!st->polling.have_frugal || policy_adaptive_exploring(st) ||
        policy_guard_writes(st, 1, now_ms).holds)
        return FALSE;
    t = policy_triple_format(&st->polling.frugal.triple);
    st->best = st->polling.frugal.triple;
    st->best_cause = POLICY_CAUSE_CONTENTION;
    settle(st, &st->polling.frugal, policy_triple_equal(&st->best, &p->in->current), now_ms);
    p->dwell_exempt = TRUE;
    policy_proposal_set(p, &st->polling.frugal.triple, POLICY_CAUSE_CONTENTION,
                        "adaptive: host contention, polling at %s, measured to beat off at no "
                        "more whole-VM CPU (it saves the vCPUs more exits than it burns)", t);
    return TRUE;
}

/* Settle on @g's triple, chosen for @cause without (more) probes; RETURN
 * until it is in force. */
static void
settle_best(PolicyIothreadState *st, const PolicySegment *g, const PolicyTriple *current,
            PolicyCause cause, gint64 now_ms)
{
    st->pending = 0;
    st->n_done = 0;
    st->seg_x.n = 0;
    st->best = g->triple;
    st->best_cause = cause;
    settle(st, g, policy_triple_equal(&g->triple, current), now_ms);
}

void
policy_adaptive_settle_cut(PolicyIothreadState *st, const PolicyTriple *t,
                           const PolicyTriple *current, PolicyCause cause, gint64 now_ms)
{
    PolicySegment g;

    segment_start(&g, t);
    settle_best(st, &g, current, cause, now_ms);
    /* A remembered winner cut for the host's sake is not measured. */
    st->recalled = FALSE;
}

static void
segment_describe(GString *out, const char *prefix, const PolicySegment *g)
{
    g_autofree char *t = policy_triple_format(&g->triple);

    g_string_append_printf(out, " %s=%s:n=%u:score=%.4f", prefix, t, g->n, segment_mean(g));
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
        .winner_score = segment_mean(win),
        .winner_ticks = win->n,
        .anchor = anchor->triple,
        .anchor_score = segment_mean(anchor),
        .noise = noise_sd(st),
    };

    for (guint i = 0; i < st->n_done; i++) {
        const PolicySegment *g = &st->done[i];

        if (g == win)
            continue;
        x.probe_ticks += g->n;
        x.probe_loss += g->n * MAX(0.0, segment_mean(win) - segment_mean(g));
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
    g_string_append_printf(p->evidence, " noise_sd=%.4f", noise_sd(st));
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
        lead = segment_mean(x) - segment_mean(anchor) - probe_threshold(cfg, x, anchor);
        g_string_append_printf(p->evidence, ":z=%.1f", z);
        if (z > evidence_bar(st) && lead > best_lead) {
            best_lead = lead;
            win = x;
        }
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
            probe_z_over(cfg, st, x, anchor) > evidence_bar(st) &&
            segments_equivalent(cfg, st, x, win)) {
            g_string_append(p->evidence, " kept_in_force=1");
            win = x;
        }
    }
    record_benefit(st);
    noise_pool(st, &st->seg_a);
    for (guint i = 0; i < st->n_done; i++)
        noise_pool(st, &st->done[i]);
    explore_learn(p, win, anchor, now_ms);
    st->best = win->triple;
    st->best_cause = POLICY_CAUSE_ROLLBACK;
    settle(st, win, policy_triple_equal(&win->triple, cur), now_ms);
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

/*
 * Whether @n writes fit the write budget; when they do not, the proposal
 * says so and leaves the iothread as it is.
 */
static gboolean
writes_fit(PolicyProposal *p, guint n, const char *what, gint64 now_ms)
{
    PolicyGuardCheck g = policy_guard_writes(p->st, n, now_ms);

    if (!g.holds)
        return TRUE;
    g_string_append_printf(p->evidence, " write_budget=%.0f/%u write_budget_until_ms=%" G_GINT64_FORMAT,
                           g.value, POLICY_WRITES_SHORT_MAX, g.until_ms);
    policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                        "adaptive: %s waits for the write budget (at most %u writes in %u s, "
                        "%u in %u min) for another %.0f s", what, POLICY_WRITES_SHORT_MAX,
                        POLICY_WRITES_SHORT_MS / 1000, POLICY_WRITES_LONG_MAX,
                        POLICY_WRITES_LONG_MS / 60000, (g.until_ms - now_ms) / 1000.0);
    return FALSE;
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
static void
explore_next(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
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
            !writes_fit(p, policy_adaptive_admission_writes(cfg, st, a),
                        "the exploration's first probe", now_ms))
            return;
        policy_proposal_set(p, &t, POLICY_CAUSE_PROBE, "adaptive: %s",
                            cand == POLICY_CAND_OFF ? "measuring polling off" :
                            cand == POLICY_CAND_WIDE ? "measuring a wide poll window" :
                            "measuring QEMU's default poll window");
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

static const char WHY_MOVED[] = "IOPS moved away from the settled reference";
static const char WHY_GROSS[] = "IOPS moved by a factor of 3 or more";
static const char WHY_SHAPE[] = "blocks per operation moved away from the settled reference";
static const char WHY_LOAD[] = "I/O after an idle spell";
static const char WHY_FIRST[] = "first measurement";
static const char WHY_REVALIDATE[] = "periodic revalidation";
static const char WHY_SURPRISE[] = "the remembered winner scored clearly below its remembered score";

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
    fired = cusum_step(cfg, sd, r->n_shape, shape_of(m) - r->shape_sum / r->n_shape,
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
    double sd = change_sd(st), h, x;
    gboolean fired;

    if (st->phase == POLICY_ADAPTIVE_NEW) {
        *why = WHY_FIRST;
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
            *why = WHY_GROSS;
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
        *why = WHY_MOVED;
        return TRUE;
    }
    if (shape_changed(cfg, st, m, evidence)) {
        *why = WHY_SHAPE;
        return TRUE;
    }
    if (cfg->revalidate_ms > 0 && now_ms - st->ref_ms >= cfg->revalidate_ms) {
        *why = WHY_REVALIDATE;
        return TRUE;
    }
    return FALSE;
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
    double data_df, sd = noise_sd_df(st, &data_df);

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
    gboolean had_ref = has_ref(st);

    policy_adaptive_enter(st, POLICY_ADAPTIVE_START);
    st->n_done = 0;
    /*
     * A workload that is certainly new (the first, one after an idle
     * spell, a move no noise makes) opens a new epoch of the write budget's
     * ten minutes: they bound the writes of one workload, revalidation and
     * the change detectors' false alarms included, not those of workloads
     * that follow one another.
     */
    if (why == WHY_GROSS || why == WHY_LOAD || st->write_epoch_ms == G_MININT64)
        st->write_epoch_ms = now_ms;
    /*
     * A new workload is a new question for the contention guard too: where
     * exits are counted, the wide probe measures whole-VM CPU, so the
     * hold-off of a cut made for the old workload does not apply to it.
     */
    if ((why == WHY_MOVED || why == WHY_GROSS || why == WHY_SHAPE) && m->have_exits &&
        st->holdoff_until_ms > now_ms) {
        st->holdoff_until_ms = G_MININT64;
        g_string_append(p->evidence, " contention_holdoff=cleared(new workload)");
    }
    st->noise_ss *= NOISE_DECAY;
    st->noise_df *= NOISE_DECAY;
    /* The settled ticks are the freshest measure of the noise. */
    if (had_ref)
        noise_pool(st, &st->ref);
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
    segment_start(&st->seg_a, cur);
    segment_add(cfg, &st->seg_a, p->objective, m);
    g_string_append_printf(p->evidence, " trigger=\"%s\"", why);
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

typedef enum {
    MEMORY_EXPLORE,             /* explore: nothing remembered, and it pays */
    MEMORY_WAIT,                /* the proposal waits a tick (signature, write budget) */
    MEMORY_DECIDED,             /* remembered, or not worth exploring: settled */
} MemoryVerdict;

static void explore_now(const PolicyConfig *cfg, PolicyProposal *p, const char *why,
                        gint64 now_ms);

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
        segment_start(&g, t);
    settle_best(st, &g, cur, cause, now_ms);
}

/* A winner remembered for the workload: written, or kept when in force. */
static MemoryVerdict
memory_recall(const PolicyConfig *cfg, PolicyProposal *p, const PolicyMemoryEntry *e,
              gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyTriple *cur = &p->in->current;
    PolicyTriple w = e->last.winner;
    g_autofree char *desc = policy_memory_entry_describe(e, now_ms);

    policy_config_clamp_triple(cfg, &w);
    if (!policy_triple_equal(&w, cur) && !writes_fit(p, 1, "the remembered winner", now_ms))
        return MEMORY_WAIT;
    st->mem_checked = TRUE;
    policy_adaptive_memory_note(st, "%s", desc);
    g_string_append(p->evidence, " memory=remembered");
    memory_settle(p, &w, POLICY_CAUSE_REMEMBERED, now_ms);
    st->recalled = TRUE;
    if (policy_triple_equal(&w, cur))
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: %s; in force already", desc);
    else
        policy_proposal_set(p, &w, POLICY_CAUSE_REMEMBERED, "adaptive: %s; writing it", desc);
    return MEMORY_DECIDED;
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
static MemoryVerdict
memory_gate(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    PolicySignature sig;
    const PolicyMemoryEntry *e;

    if (!p->mem || st->mem_checked)
        return MEMORY_EXPLORE;
    /*
     * Nothing learnt yet: the rule's priors always pay (a phase is expected
     * to last 300 s and more, the probes to cost 0.6), and no tick need
     * wait for a signature.
     */
    if (!policy_memory_size(p->mem)) {
        st->mem_checked = TRUE;
        policy_adaptive_memory_note(st, "nothing remembered on this iothread yet: exploring");
        return MEMORY_EXPLORE;
    }
    if (!policy_adaptive_memory_signature(p, POLICY_SIGNATURE_LOOKUP_TICKS, &sig)) {
        if (st->phase_ticks >= POLICY_SIGNATURE_LOOKUP_TICKS) {
            st->mem_checked = TRUE;     /* ticks without I/O figures: no signature */
            return MEMORY_EXPLORE;
        }
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: a new workload, reading its signature (tick %u of %u)",
                            st->phase_ticks, POLICY_SIGNATURE_LOOKUP_TICKS);
        return MEMORY_WAIT;
    }
    st->sig = sig;
    st->have_sig = TRUE;
    e = policy_memory_lookup(p->mem, &sig, now_ms);
    if (e)
        return memory_recall(cfg, p, e, now_ms);
    st->mem_checked = TRUE;
    if (policy_adaptive_memory_pays(p, &sig, now_ms))
        return MEMORY_EXPLORE;
    memory_stay(p, now_ms);
    return MEMORY_DECIDED;
}

/*
 * SETTLED on a remembered winner: once MEMORY_CONFIRM_TICKS ticks are
 * measured, confirm it, or explore on a surprise.  TRUE: explored.
 */
static gboolean
memory_confirm(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMemoryEntry *e;
    double score = segment_mean(&st->ref), remembered;
    g_autofree char *s = NULL;

    if (!st->recalled || !p->mem || !st->have_sig || st->ref.n < MEMORY_CONFIRM_TICKS ||
        st->best_cause != POLICY_CAUSE_REMEMBERED ||
        !policy_triple_equal(&st->ref.triple, &st->best))
        return FALSE;
    st->recalled = FALSE;
    e = policy_memory_peek(p->mem, &st->sig);
    if (!e || !e->have_winner)
        return FALSE;
    remembered = e->last.winner_score;
    p->mem_changed = TRUE;
    g_string_append_printf(p->evidence, " memory_score=%.4f remembered_score=%.4f", score,
                           remembered);
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
    explore_now(cfg, p, WHY_SURPRISE, now_ms);
    return TRUE;
}

/*
 * Revalidation where the memory holds the winner in force for the
 * workload: the settled ticks confirm it instead of an exploration.  TRUE:
 * confirmed, settled again; FALSE: explore (a surprise, or nothing to
 * confirm).
 */
static gboolean
memory_revalidate(PolicyProposal *p, gint64 now_ms)
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
    e = policy_memory_lookup(p->mem, &sig, now_ms);
    if (!e || !policy_triple_equal(&e->last.winner, &p->in->current))
        return FALSE;
    st->sig = sig;
    st->have_sig = TRUE;
    st->mem_checked = TRUE;
    remembered = e->last.winner_score;
    p->mem_changed = TRUE;
    if (policy_memory_confirm(p->mem, &sig, segment_mean(&ref), ref.n, now_ms)) {
        g_autofree char *s = policy_signature_to_string(&sig);

        policy_adaptive_memory_note(st, "workload %s: its remembered winner scored %.4f, "
                                    "clearly below %.4f: forgotten, exploring", s,
                                    segment_mean(&ref), remembered);
        return FALSE;
    }
    desc = policy_memory_entry_describe(e, now_ms);
    policy_adaptive_memory_note(st, "%s", desc);
    settle(st, &ref, TRUE, now_ms);
    g_string_append_printf(p->evidence, " memory=confirmed memory_score=%.4f "
                           "remembered_score=%.4f", segment_mean(&ref), remembered);
    policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                        "adaptive: periodic revalidation: %s; the settled ticks confirm it",
                        desc);
    return TRUE;
}

/*
 * RETURN: the winner is written back until it is in force; that tick is
 * then SETTLED's (FALSE: not decided here).
 */
static gboolean
step_return(PolicyProposal *p)
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

/* PROBE: one more tick of the probe in force, until it is clear. */
static void
step_probe(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
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
        segment_start(&st->seg_x, cur);
    segment_add(cfg, &st->seg_x, p->objective, p->m);
    z = probe_z(cfg, st, &st->seg_x);
    /*
     * Go on while the probe neither clearly wins, nor clearly loses,
     * nor is clearly equivalent to the start, nor clearly trails an
     * earlier probe, and for a second tick when nothing measured the
     * noise yet.
     */
    if (st->seg_x.n < SEG_MAX && !probe_trails_done(cfg, st, &st->seg_x) &&
        ((fabs(z) <= evidence_bar(st) &&
          !segments_equivalent(cfg, st, &st->seg_x, &st->seg_a)) ||
         (st->seg_x.n < 2 && (noise_unmeasured(st) ||
                              (z > 0 && lucky_tick_possible(st)))))) {
        g_autofree char *t = policy_triple_format(cur);

        g_string_append_printf(p->evidence, " z=%.2f noise_sd=%.4f", z, noise_sd(st));
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
    explore_next(cfg, p, now_ms);
}

/* START: the triple in force, measured until its mean is known. */
static void
step_start(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;

    if (policy_triple_equal(&p->in->current, &st->seg_a.triple))
        segment_add(cfg, &st->seg_a, p->objective, p->m);
    if (memory_gate(cfg, p, now_ms) != MEMORY_EXPLORE)
        return;
    if (!start_measured(st)) {
        g_string_append_printf(p->evidence, " noise_sd=%.4f", noise_sd(st));
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: measuring the starting triple, tick %u of at most %u",
                            st->seg_a.n, SEG_A_MAX);
        return;
    }
    policy_adaptive_enter(st, POLICY_ADAPTIVE_NEXT);
    explore_next(cfg, p, now_ms);
}

/*
 * The exploration that starts at this tick, from any phase at rest, when
 * the memory neither remembers the workload nor finds exploring it
 * worthless.
 */
static void
explore_now(const PolicyConfig *cfg, PolicyProposal *p, const char *why, gint64 now_ms)
{
    explore_begin(cfg, p, why, now_ms);
    if (memory_gate(cfg, p, now_ms) != MEMORY_EXPLORE)
        return;
    if (!start_measured(p->st)) {
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: %s, measuring the starting triple", why);
        return;
    }
    policy_adaptive_enter(p->st, POLICY_ADAPTIVE_NEXT);
    explore_next(cfg, p, now_ms);
}

/*
 * Below idle_iops, from any phase at rest: IDLE, polling off.  Nothing
 * is measured there; the first I/O after it is a new workload.
 */
static gboolean
step_idle_rule(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyTriple off = policy_adaptive_off(&p->in->current);

    if (policy_metrics_iops(p->m) >= cfg->idle_iops)
        return FALSE;
    /* An idle spell ends the workload's phase. */
    if (p->st->phase != POLICY_ADAPTIVE_IDLE)
        policy_adaptive_memory_phase_end(p, now_ms - policy_adaptive_tick_ms(p));
    policy_adaptive_enter(p->st, POLICY_ADAPTIVE_IDLE);
    if (!policy_triple_equal(&off, &p->in->current) &&
        !writes_fit(p, 1, "the idle rule's polling off", now_ms))
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
static void
step_idle(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
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
    if (memory_gate(cfg, p, now_ms) != MEMORY_EXPLORE)
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
    explore_now(cfg, p, WHY_LOAD, now_ms);
}

/*
 * NEW and SETTLED: an exploration when nothing was measured yet or the
 * change detectors fire.
 */
static void
step_settled(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMetrics *m = p->m;
    const PolicyTriple *cur = &p->in->current;
    const char *why = NULL;

    gint64 tick_ms = policy_adaptive_tick_ms(p);

    if (!workload_changed(cfg, st, m, now_ms, &why, p->evidence)) {
        /* A tick that moved grossly waits for the next one, outside the reference. */
        if (st->gross == POLICY_GROSS_NONE)
            segment_add(cfg, &st->ref, p->objective, m);
        if (memory_confirm(cfg, p, now_ms))
            return;
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: steady");
        return;
    }
    /*
     * The memory's phases: the first measurement begins one, revalidation
     * goes on with it, a change ends it where the new one began, the two
     * ticks that showed it (a gross move's; a CUSUM's last two).
     */
    if (why == WHY_FIRST) {
        policy_adaptive_memory_phase_begin(st, now_ms - tick_ms, 1);
    } else if (why == WHY_REVALIDATE) {
        if (memory_revalidate(p, now_ms))
            return;
    } else {
        policy_adaptive_memory_phase_end(p, now_ms - 2 * tick_ms);
        policy_adaptive_memory_phase_begin(st, now_ms - 2 * tick_ms, 2);
    }
    explore_now(cfg, p, why, now_ms);
}

/* The tick of the phase @p's iothread is in. */
static void
step_phase(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    switch (p->st->phase) {
    case POLICY_ADAPTIVE_RETURN:
        if (step_return(p) || step_idle_rule(cfg, p, now_ms))
            return;
        step_settled(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_PROBE:
        step_probe(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_START:
        step_start(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_NEXT:
        /* A probe deferred (dwell, budget, contention): try it again. */
        explore_next(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_IDLE:
        if (!step_idle_rule(cfg, p, now_ms))
            step_idle(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_NEW:
    case POLICY_ADAPTIVE_SETTLED:
    default:
        if (!step_idle_rule(cfg, p, now_ms))
            step_settled(cfg, p, now_ms);
        return;
    }
}

void
policy_adaptive_step(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    PolicyIothreadState *st = p->st;
    const PolicyMetrics *m = p->m;
    const PolicyTriple *cur = &p->in->current;
    PolicyAdaptivePhase from = st->phase;

    if (!m || !m->have_io) {
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE, "adaptive: no I/O measurements yet");
        return;
    }
    policy_metrics_describe(p->evidence, "", m);
    g_string_append_printf(p->evidence, " score=%.4f", policy_config_score(cfg, p->objective, m));
    /* The phase's ticks, for its signature. */
    if (policy_metrics_iops(m) >= cfg->idle_iops && st->phase_ticks < G_MAXUINT)
        st->phase_ticks++;

    /* A write landed inside this tick: its numbers describe neither triple. */
    if (!policy_triple_equal(&m->triple, cur) ||
        (st->last_write_ms != G_MININT64 &&
         m->when_ms - m->interval_ns / 1000000 < st->last_write_ms)) {
        policy_proposal_set(p, cur, POLICY_CAUSE_NONE,
                            "adaptive: settling, this tick straddles a write");
        return;
    }
    /*
     * The workload went idle under an exploration: its probes would be
     * measured at no I/O (a wide window polling for nothing, then the
     * rollback), so it ends here and the idle rule turns polling off.
     */
    if (policy_metrics_iops(m) < cfg->idle_iops &&
        (policy_adaptive_exploring(st) || st->phase == POLICY_ADAPTIVE_RETURN))
        policy_adaptive_enter(st, POLICY_ADAPTIVE_NEW);
    step_phase(cfg, p, now_ms);
    p->dwell_exempt = dwell_exempt(from, st->phase);
}
