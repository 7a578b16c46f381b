/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-adaptive: the adaptive policy.
 *
 * QEMU already sizes the poll window at the microsecond scale; what it cannot
 * know is whether polling pays at all here, and whether its ceiling is too
 * low for the gaps this device shows.  So the adaptive policy does not guess
 * windows: it measures.  When the workload changes (a CUSUM of ln IOPS and
 * one of blocks per operation, each sized to the measured noise) it
 * measures the starting triple, then every candidate it is not: polling
 * off, a wide window (probe_poll_max_ns, QEMU's own growth below it) and
 * QEMU's default window, each until the difference is clear or for at
 * most SEG_MAX ticks, and switches only when a candidate wins by more
 * than a confidence bound.  What it finds is remembered per workload
 * (policy-memory.h), and a workload met before gets its winner without
 * probes.  Between explorations it writes nothing: every write resets
 * QEMU's window.
 *
 * This file holds what every phase uses: the phases and their one place
 * of change, the score, the segments and the noise, settling, and the
 * tick's dispatch to its phase (policy-adaptive-private.h says where the
 * phases' own ticks are).
 */
#include <math.h>

#include "common/pt-enum-table.h"
#include "policy-adaptive-private.h"


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
gboolean
policy_adaptive_has_ref(const PolicyIothreadState *st)
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

double
policy_adaptive_shape_of(const PolicyMetrics *m)
{
    return log(MAX(m->blocks_per_op, 0.0) + SHAPE_FLOOR);
}

void
policy_segment_start(PolicySegment *g, const PolicyTriple *t)
{
    *g = (PolicySegment){ .triple = *t };
}

void
policy_segment_add(const PolicyConfig *cfg, PolicySegment *g, PolicyObjective o,
                   const PolicyMetrics *m)
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
        double y = policy_adaptive_shape_of(m);

        if (g->n_shape)
            g->shape_ssd += (y - g->last_shape) * (y - g->last_shape);
        g->last_shape = y;
        g->n_shape++;
        g->shape_sum += y;
    }
    g->last = *m;
}

double
policy_segment_mean(const PolicySegment *g)
{
    return g->n ? g->sum / g->n : 0.0;
}

double
policy_segment_cpu(const PolicySegment *g)
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
 * for the standard error of policy_adaptive_change_sd()).
 */
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
    const PolicySegment *live[] = { policy_adaptive_has_ref(st) ? &st->ref : NULL,
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

double
policy_adaptive_noise_sd_df(const PolicyIothreadState *st, double *data_df)
{
    return noise_sd_eff(st, data_df, NULL);
}

double
policy_adaptive_noise_sd(const PolicyIothreadState *st)
{
    return policy_adaptive_noise_sd_df(st, NULL);
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
double
policy_adaptive_change_sd(const PolicyIothreadState *st)
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
double
policy_adaptive_evidence_bar(const PolicyIothreadState *st)
{
    double df;

    policy_adaptive_noise_sd_df(st, &df);
    return policy_t_quantile(0.5 * erfc(-EVIDENCE_Z / M_SQRT2), MAX(df, 1.0));
}

void
policy_adaptive_noise_pool(PolicyIothreadState *st, const PolicySegment *g)
{
    if (g->n > 1) {
        st->noise_ss += noise_ss_of(st, g);
        st->noise_df += g->n - 1;
    }
}

/*
 * Settled on @g: its ticks are the reference the change detectors watch.
 * SETTLED when @g's triple is @in_force, else RETURN until it is.
 */
void
policy_adaptive_settle(PolicyIothreadState *st, const PolicySegment *g, gboolean in_force,
                       gint64 now_ms)
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
    policy_adaptive_settle(st, &st->polling.frugal,
                           policy_triple_equal(&st->best, &p->in->current), now_ms);
    p->dwell_exempt = TRUE;
    policy_proposal_set(p, &st->polling.frugal.triple, POLICY_CAUSE_CONTENTION,
                        "adaptive: host contention, polling at %s, measured to beat off at no "
                        "more whole-VM CPU (it saves the vCPUs more exits than it burns)", t);
    return TRUE;
}

/* Settle on @g's triple, chosen for @cause without (more) probes; RETURN
 * until it is in force. */
void
policy_adaptive_settle_best(PolicyIothreadState *st, const PolicySegment *g,
                            const PolicyTriple *current, PolicyCause cause, gint64 now_ms)
{
    st->pending = 0;
    st->n_done = 0;
    st->seg_x.n = 0;
    st->best = g->triple;
    st->best_cause = cause;
    policy_adaptive_settle(st, g, policy_triple_equal(&g->triple, current), now_ms);
}

void
policy_adaptive_settle_cut(PolicyIothreadState *st, const PolicyTriple *t,
                           const PolicyTriple *current, PolicyCause cause, gint64 now_ms)
{
    PolicySegment g;

    policy_segment_start(&g, t);
    policy_adaptive_settle_best(st, &g, current, cause, now_ms);
    /* A remembered winner cut for the host's sake is not measured. */
    st->recalled = FALSE;
    st->recalled_near = FALSE;
}

/*
 * Whether @n writes fit the write budget; when they do not, the proposal
 * says so and leaves the iothread as it is.
 */
gboolean
policy_adaptive_writes_fit(PolicyProposal *p, guint n, const char *what, gint64 now_ms)
{
    PolicyGuardCheck g = policy_guard_writes(p->st, n, now_ms);

    if (!g.holds)
        return TRUE;
    g_string_append_printf(p->evidence,
                           " write_budget=%.0f/%u write_budget_until_ms=%" G_GINT64_FORMAT,
                           g.value, POLICY_WRITES_SHORT_MAX, g.until_ms);
    policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                        "adaptive: %s waits for the write budget (at most %u writes in %u s, "
                        "%u in %u min) for another %.0f s", what, POLICY_WRITES_SHORT_MAX,
                        POLICY_WRITES_SHORT_MS / 1000, POLICY_WRITES_LONG_MAX,
                        POLICY_WRITES_LONG_MS / 60000, (g.until_ms - now_ms) / 1000.0);
    return FALSE;
}

/* The tick of the phase @p's iothread is in. */
static void
step_phase(const PolicyConfig *cfg, PolicyProposal *p, gint64 now_ms)
{
    switch (p->st->phase) {
    case POLICY_ADAPTIVE_RETURN:
        if (policy_adaptive_step_return(p) || policy_adaptive_step_idle_rule(cfg, p, now_ms))
            return;
        policy_adaptive_step_settled(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_PROBE:
        policy_adaptive_step_probe(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_START:
        policy_adaptive_step_start(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_NEXT:
        /* A probe deferred (dwell, budget, contention): try it again. */
        policy_adaptive_explore_next(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_IDLE:
        if (!policy_adaptive_step_idle_rule(cfg, p, now_ms))
            policy_adaptive_step_idle(cfg, p, now_ms);
        return;
    case POLICY_ADAPTIVE_NEW:
    case POLICY_ADAPTIVE_SETTLED:
    default:
        if (!policy_adaptive_step_idle_rule(cfg, p, now_ms))
            policy_adaptive_step_settled(cfg, p, now_ms);
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

