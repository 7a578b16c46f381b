/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-lifetime-goals: a lifetime run's figures, the goals on the lifetimes
 * (docs/POLICY.md's item 4) and their tables.  See sim-lifetime.h.
 */
#include <math.h>
#include <string.h>

#include "sim-lifetime.h"

/* The goals' windows: 10 minutes, one starting every minute. */
#define WINDOW_S 600
#define WINDOW_STEP_S 60
/*
 * A first arrival of a workload this long has settled on a winner: an
 * exploration is over in 12 ticks (sim-matrix.c's EXPLORATION_TICKS).
 */
#define SETTLE_S 15
/* A later arrival reaches the winner within this many ticks, with this many writes. */
#define LEARN_TICKS 2
#define LEARN_WRITES 1
/* The first and last hour; a third of a lifetime shorter than three hours. */
#define EXPLORE_S 3600

static const SimLifetimeRun judged[] = { SIM_LT_ADAPTIVE, SIM_LT_NEVER_WRITE, SIM_LT_OFF };

static guint
n_windows_of(const SimLifetime *lt)
{
    return lt->len_s > WINDOW_S ? (lt->len_s - WINDOW_S) / WINDOW_STEP_S + 1 : 1;
}

/*
 * The time-weighted objective of the loaded segments' parts in [from,
 * to), each scored on its own; 0 when none is loaded.  Idle spells are
 * left out: ln(IOPS) means nothing at none, and the few completions of
 * the load before that fall into the spell's first tick under one triple
 * and not another would swing it by whole units (ln of a fraction of an
 * operation per second against the objective's floor, ln 0.001).  What
 * an idle spell costs is its polling CPU, which the CPU goal counts.
 */
static double
span_score(const SimLifetime *lt, const SimRun *run, guint from, guint to)
{
    double sum = 0;
    guint loaded = 0;

    for (guint i = 0; i < lt->n_segments; i++) {
        const SimLifetimeSegment *s = &lt->segments[i];
        guint a = MAX(from, s->start_s), b = MIN(to, s->start_s + s->len_s);

        if (a < b && s->key != G_MAXUINT) {
            sum += (b - a) * sim_matrix_span_score(run, a, b);
            loaded += b - a;
        }
    }
    return loaded ? sum / loaded : 0;
}

static guint
ticks_sum_writes(const SimRun *run, guint from, guint to, gboolean probes)
{
    guint n = 0;

    for (guint t = from; t < MIN(to, run->n_ticks); t++)
        n += probes ? run->ticks[t].probes : run->ticks[t].writes;
    return n;
}

/*
 * A later arrival of a workload learnt: the triple the VM held at the end
 * of its first settled arrival is in force by the end of the arrival's
 * second tick, with at most one write on the way.
 */
static void
fill_learning(SimLifetime *lt, SimLifetimeRun which, const SimRun *run,
              const PolicyTriple *triples)
{
    g_autofree PolicyTriple *winner = g_new0(PolicyTriple, MAX(lt->n_keys, 1));
    g_autofree gboolean *known = g_new0(gboolean, MAX(lt->n_keys, 1));

    lt->arrivals[which] = lt->arrivals_fast[which] = 0;
    for (guint i = 0; i < lt->n_segments; i++) {
        const SimLifetimeSegment *s = &lt->segments[i];
        gboolean reached = FALSE;

        if (s->key == G_MAXUINT)
            continue;
        if (!known[s->key]) {
            if (s->len_s >= SETTLE_S) {
                known[s->key] = TRUE;
                winner[s->key] = triples[s->start_s + s->len_s - 1];
            }
            continue;
        }
        if (s->len_s < LEARN_TICKS)
            continue;
        lt->arrivals[which]++;
        for (guint t = s->start_s; t < s->start_s + LEARN_TICKS; t++)
            reached |= policy_triple_equal(&triples[t], &winner[s->key]);
        if (reached && ticks_sum_writes(run, s->start_s, s->start_s + LEARN_TICKS, FALSE) <=
                       LEARN_WRITES)
            lt->arrivals_fast[which]++;
    }
}

void
sim_lifetime_fill(SimLifetime *lt, SimLifetimeRun which, const SimRun *run,
                  const PolicyTriple *triples)
{
    guint explore_s = lt->len_s >= 3 * EXPLORE_S ? EXPLORE_S : lt->len_s / 3;

    lt->have_run[which] = TRUE;
    lt->poll_core_s[which] = 0;
    for (guint i = 0; i < lt->n_segments; i++) {
        SimLifetimeSegment *s = &lt->segments[i];

        s->score[which] = sim_matrix_span_score(run, s->start_s, s->start_s + s->len_s);
        s->poll_core_s[which] = 0;
        for (guint t = s->start_s; t < s->start_s + s->len_s; t++)
            s->poll_core_s[which] += run->ticks[t].poll_cores;
        lt->poll_core_s[which] += s->poll_core_s[which];
    }
    lt->score[which] = span_score(lt, run, 0, lt->len_s);
    lt->n_windows = n_windows_of(lt);
    if (!lt->windows)
        lt->windows = g_new0(double, lt->n_windows * SIM_LT_N_RUNS);
    for (guint w = 0; w < lt->n_windows; w++) {
        guint from = w * WINDOW_STEP_S;

        lt->windows[w * SIM_LT_N_RUNS + which] =
            span_score(lt, run, from, MIN(from + WINDOW_S, lt->len_s));
    }
    fill_learning(lt, which, run, triples);
    lt->explore_first[which] = ticks_sum_writes(run, 0, explore_s, TRUE);
    lt->explore_last[which] = ticks_sum_writes(run, lt->len_s - explore_s, lt->len_s, TRUE);
}

static SimLifetimeGoal *
goal_new(SimLifetimeResult *r, guint *n, const char *name)
{
    SimLifetimeGoal *g = &r->goals[(*n)++];

    g_assert(*n <= SIM_LT_N_GOALS);
    g->name = name;
    return g;
}

static SimLifetimeRun
no_restart_of(SimLifetimeRun p)
{
    return p == SIM_LT_ADAPTIVE ? SIM_LT_ADAPTIVE_NO_RESTART :
           p == SIM_LT_NEVER_WRITE ? SIM_LT_NEVER_WRITE_NO_RESTART : SIM_LT_OFF_NO_RESTART;
}

/* Goal 1: never worse than not running it. */
static void
judge_harm(SimLifetimeResult *r, guint *n_goals)
{
    SimLifetimeGoal *life = goal_new(r, n_goals, "no lifetime > 0.5% below never-write");
    SimLifetimeGoal *mean = goal_new(r, n_goals, "mean over lifetimes >= never-write's");
    SimLifetimeGoal *quiet = goal_new(r, n_goals, "no 10-min window > 3% below, noise <= 10%");
    SimLifetimeGoal *loud = goal_new(r, n_goals, "<= 1% of 10-min windows > 3% below, noise > 10%");

    for (guint j = 0; j < G_N_ELEMENTS(judged); j++) {
        SimLifetimeRun p = judged[j];
        guint below = 0, wq = 0, wq_below = 0, wl = 0, wl_below = 0;
        double worst = 1, ms = 0, mn = 0;

        for (guint i = 0; i < r->n_lifetimes; i++) {
            const SimLifetime *lt = &r->lifetimes[i];
            double x = exp(lt->score[p] - lt->score[SIM_LT_NEVER_WRITE]);

            below += x < 0.995;
            worst = MIN(worst, x);
            ms += lt->score[p] / r->n_lifetimes;
            mn += lt->score[SIM_LT_NEVER_WRITE] / r->n_lifetimes;
            for (guint w = 0; w < lt->n_windows; w++) {
                const double *ws = &lt->windows[w * SIM_LT_N_RUNS];
                gboolean bad = exp(ws[p] - ws[SIM_LT_NEVER_WRITE]) < 0.97;

                if (lt->noise <= 0.10 + 1e-9) {
                    wq++;
                    wq_below += bad;
                } else {
                    wl++;
                    wl_below += bad;
                }
            }
        }
        life->pass[p] = below == 0;
        g_snprintf(life->detail[p], sizeof(life->detail[p]), "%u of %u, worst %+.2f%%", below,
                   r->n_lifetimes, 100 * (worst - 1));
        mean->pass[p] = ms >= mn;
        g_snprintf(mean->detail[p], sizeof(mean->detail[p]), "%+.2f%%", 100 * (exp(ms - mn) - 1));
        quiet->pass[p] = wq_below == 0;
        g_snprintf(quiet->detail[p], sizeof(quiet->detail[p]), "%u of %u", wq_below, wq);
        loud->pass[p] = wl_below <= 0.01 * wl;
        g_snprintf(loud->detail[p], sizeof(loud->detail[p]), "%u of %u", wl_below, wl);
    }
}

/* Goal 2: capture the oracle's gain and the polling CPU that cannot pay. */
static void
judge_capture(SimLifetimeResult *r, guint *n_goals)
{
    SimLifetimeGoal *gain = goal_new(r, n_goals, ">= 80% of the oracle's gain over never-write");
    SimLifetimeGoal *cpu = goal_new(r, n_goals, ">= 80% of polling CPU saved where it cannot pay");

    for (guint j = 0; j < G_N_ELEMENTS(judged); j++) {
        SimLifetimeRun p = judged[j];
        double got = 0, avail = 0, saved = 0, spent = 0;

        for (guint i = 0; i < r->n_lifetimes; i++) {
            const SimLifetime *lt = &r->lifetimes[i];

            got += lt->score[p] - lt->score[SIM_LT_NEVER_WRITE];
            avail += lt->score[SIM_LT_ORACLE] - lt->score[SIM_LT_NEVER_WRITE];
            for (guint k = 0; k < lt->n_segments; k++) {
                const SimLifetimeSegment *s = &lt->segments[k];

                if (s->oracle.poll_max_ns)
                    continue;
                spent += s->poll_core_s[SIM_LT_NEVER_WRITE];
                saved += s->poll_core_s[SIM_LT_NEVER_WRITE] - s->poll_core_s[p];
            }
        }
        gain->pass[p] = avail <= 0 || got >= 0.8 * avail;
        g_snprintf(gain->detail[p], sizeof(gain->detail[p]), "%.0f%% of %.4f",
                   avail > 0 ? 100 * got / avail : 100.0, avail);
        cpu->pass[p] = spent <= 0 || saved >= 0.8 * spent;
        g_snprintf(cpu->detail[p], sizeof(cpu->detail[p]), "%.0f%% of %.1f core-s",
                   spent > 0 ? 100 * saved / spent : 100.0, spent);
    }
}

/* Goal 3: learning shows.  Goal 4: restarts cost nothing. */
static void
judge_learning(SimLifetimeResult *r, guint *n_goals)
{
    SimLifetimeGoal *again = goal_new(r, n_goals, "later arrivals at their winner in 2 ticks, <= 1 write");
    SimLifetimeGoal *fewer = goal_new(r, n_goals, "recurring: last hour <= 1/3 of first hour's explorations");
    SimLifetimeGoal *restart = goal_new(r, n_goals, "a restart costs <= 0.5% of the lifetime");

    for (guint j = 0; j < G_N_ELEMENTS(judged); j++) {
        SimLifetimeRun p = judged[j], q = no_restart_of(p);
        guint arrivals = 0, fast = 0, first = 0, last = 0, worse = 0, n_pairs = 0;
        double worst = 1;

        for (guint i = 0; i < r->n_lifetimes; i++) {
            const SimLifetime *lt = &r->lifetimes[i];

            arrivals += lt->arrivals[p];
            fast += lt->arrivals_fast[p];
            if (lt->recurring) {
                first += lt->explore_first[p];
                last += lt->explore_last[p];
            }
            if (lt->have_run[q]) {
                double x = exp(lt->score[p] - lt->score[q]);

                n_pairs++;
                worse += x < 0.995;
                worst = MIN(worst, x);
            }
        }
        again->pass[p] = fast == arrivals;
        g_snprintf(again->detail[p], sizeof(again->detail[p]), "%u of %u", fast, arrivals);
        fewer->pass[p] = 3 * last <= first;
        g_snprintf(fewer->detail[p], sizeof(fewer->detail[p]), "%u -> %u", first, last);
        restart->pass[p] = worse == 0;
        if (n_pairs)
            g_snprintf(restart->detail[p], sizeof(restart->detail[p]), "%u of %u, worst %+.2f%%",
                       worse, n_pairs, 100 * (worst - 1));
        else
            g_snprintf(restart->detail[p], sizeof(restart->detail[p]),
                       "not run (the test holds it)");
    }
}

void
sim_lifetime_judge(SimLifetimeResult *r)
{
    guint n = 0;

    memset(r->goals, 0, sizeof(r->goals));
    if (!r->n_lifetimes)
        return;
    judge_harm(r, &n);
    judge_capture(r, &n);
    judge_learning(r, &n);
    g_assert(n == SIM_LT_N_GOALS);
}

void
sim_lifetime_print(const SimLifetimeResult *r, FILE *out)
{
    const SimLifetimeParams *p = &r->params;

    fprintf(out, "lifetimes: qemu=%s, seeds %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
            ", %u per seed, %u min each%s\n\n", sim_qemu_model_to_string(p->qemu_model),
            p->first_seed, p->first_seed + p->n_seeds - 1, p->per_seed, p->minutes,
            p->sample > 1 ? " (sampled)" : "");
    fprintf(out, "| lifetime | adaptive | off | oracle | restart | learnt | explorations |\n");
    fprintf(out, "|---|---:|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < r->n_lifetimes; i++) {
        const SimLifetime *lt = &r->lifetimes[i];
        g_autofree char *name = sim_lifetime_format(lt);
        double n = lt->score[SIM_LT_NEVER_WRITE];

        fprintf(out, "| %s | %+.2f%% | %+.2f%% | %+.2f%% | %+.2f%% | %u/%u | %u -> %u |\n",
                name, 100 * (exp(lt->score[SIM_LT_ADAPTIVE] - n) - 1),
                100 * (exp(lt->score[SIM_LT_OFF] - n) - 1),
                100 * (exp(lt->score[SIM_LT_ORACLE] - n) - 1),
                100 * (exp(lt->score[SIM_LT_ADAPTIVE] - lt->score[SIM_LT_ADAPTIVE_NO_RESTART]) - 1),
                lt->arrivals_fast[SIM_LT_ADAPTIVE], lt->arrivals[SIM_LT_ADAPTIVE],
                lt->explore_first[SIM_LT_ADAPTIVE], lt->explore_last[SIM_LT_ADAPTIVE]);
    }
    fprintf(out, "\n(against never-write; restart: adaptive against itself without the "
            "restart; learnt: later arrivals at their winner; explorations: first and last "
            "hour)\n\n");
    fprintf(out, "| goal | adaptive | never-write | off |\n|---|---|---|---|\n");
    for (guint g = 0; g < SIM_LT_N_GOALS && r->n_lifetimes; g++) {
        const SimLifetimeGoal *goal = &r->goals[g];

        fprintf(out, "| %s |", goal->name);
        for (guint j = 0; j < G_N_ELEMENTS(judged); j++)
            fprintf(out, " %s (%s) |", goal->pass[judged[j]] ? "meets" : "MISSES",
                    goal->detail[judged[j]]);
        fprintf(out, "\n");
    }
    for (guint j = 0; j < G_N_ELEMENTS(judged); j++) {
        guint met = 0;

        for (guint g = 0; g < SIM_LT_N_GOALS; g++)
            met += r->goals[g].pass[judged[j]];
        fprintf(out, "%s%s meets %u of %u", j ? ", " : "\nlifetime goals: ",
                sim_lifetime_run_to_string(judged[j]), met, SIM_LT_N_GOALS);
    }
    fprintf(out, "\n");
}
