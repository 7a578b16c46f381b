/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-goals: see sim-goals.h.  The goals are the project's targets for the
 * policy; docs/BENCHMARKS.md lists them with the numbers.
 */
#include <math.h>

#include "sim-goals.h"

void
sim_result_free(SimResult *r)
{
    if (!r)
        return;
    sim_run_free(r->off);
    sim_run_free(r->qemu_default);
    sim_run_free(r->adaptive);
    sim_run_free(r->oracle);
    g_free(r);
}

SimResult *
sim_result_run(const SimScenario *scn, double scale, guint64 seed)
{
    SimResult *r = g_new0(SimResult, 1);
    PolicySpec spec = { .objective = POLICY_OBJECTIVE_BALANCED };

    spec.kind = POLICY_KIND_OFF;
    r->off = sim_scenario_run(scn, &spec, NULL, scale, seed);
    spec.kind = POLICY_KIND_QEMU_DEFAULT;
    r->qemu_default = sim_scenario_run(scn, &spec, NULL, scale, seed);
    spec.kind = POLICY_KIND_ADAPTIVE;
    r->adaptive = sim_scenario_run(scn, &spec, NULL, scale, seed);
    sim_scenario_oracle(scn, scale, seed, r->oracle_triples);
    r->oracle = sim_scenario_run(scn, NULL, r->oracle_triples, scale, seed);
    return r;
}

void
sim_goal_free(SimGoal *g)
{
    if (!g)
        return;
    g_free(g->scenario);
    g_free(g->goal);
    g_free(g->detail);
    g_free(g);
}

static void G_GNUC_PRINTF(5, 6)
add(GPtrArray *out, const SimScenario *scn, const char *goal, gboolean pass,
    const char *fmt, ...)
{
    SimGoal *g = g_new0(SimGoal, 1);
    va_list ap;

    g->scenario = g_strdup(scn->name);
    g->goal = g_strdup(goal);
    va_start(ap, fmt);
    g->detail = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g->pass = pass;
    g_ptr_array_add(out, g);
}

static gboolean
is(const SimScenario *scn, const char *name)
{
    return g_str_equal(scn->name, name);
}

/*
 * From SETTLED_FROM_S seconds into a run the first exploration is over (a
 * start of up to 4 ticks, two probes of up to 3, the return).  It may
 * poll for EXPLORE_CORE_S core-seconds: three ticks of a window that
 * spins a core.
 */
#define SETTLED_FROM_S 15
#define EXPLORE_CORE_S 3.0

/* The first tick at or after @s seconds of @r's time, scaled like its phases. */
static guint
ticks_after(const SimRun *r, double scale, double s)
{
    return MIN((guint)lround(s * scale), r->n_ticks);
}

/* Polling core-seconds of @r's ticks from @from on. */
static double
poll_core_s_from(const SimRun *r, guint from)
{
    double sum = 0;

    for (guint t = MAX(from, 1); t < r->n_ticks; t++)
        sum += r->ticks[t].poll_cores;
    return sum;
}

/* Ticks of phase @p until adaptive is within 5% of the phase oracle. */
static guint
recovery_ticks(const SimScenario *scn, const SimResult *r, double scale, guint p)
{
    guint tpp = r->adaptive->n_ticks / scn->n_phases;
    double target = sim_run_phase_iops(r->oracle, scn, scale, p, 1);
    double slack = MAX(0.05 * target, 50.0);

    for (guint k = 0; k < tpp; k++)
        if (fabs(r->adaptive->ticks[p * tpp + k].iops - target) <= slack)
            return k + 1;
    return G_MAXUINT;
}

void
sim_goals_check(const SimScenario *scn, const SimResult *r, double scale, GPtrArray *out)
{
    const SimRun *a = r->adaptive, *off = r->off, *d = r->qemu_default, *o = r->oracle;

    if (is(scn, "S1") || is(scn, "S2") || is(scn, "S4")) {
        double gain = o->iops - off->iops, got = a->iops - off->iops;
        double share = gain > 0 ? got / gain : 1.0;

        add(out, scn, ">= 95% of the oracle's IOPS gain over off", share >= 0.95,
            "off %.0f, oracle %.0f, adaptive %.0f: %.0f%% of the gain",
            off->iops, o->iops, a->iops, 100 * share);
    }
    /* Steady single-VM scenarios; S7 and S8 trade IOPS for their own goals. */
    if (scn->n_phases == 1 && sim_scenario_n_vms(scn) == 1) {
        add(out, scn, "never > 3% below the best static IOPS", a->iops >= 0.97 * o->iops,
            "adaptive %.0f vs oracle %.0f (%+.1f%%)", a->iops, o->iops,
            100 * (a->iops / MAX(o->iops, 1e-9) - 1));
    }
    /*
     * Where polling cannot pay, adaptive polls a tenth of what QEMU's
     * default does once it has measured so; its one exploration, which
     * measures every candidate whatever it starts from, may cost a few
     * ticks of a polling window (at most EXPLORE_CORE_S).  Before the
     * candidates were the same from every start, a bound skipped the wide
     * probe here; the same bound skipped every polling window on a real
     * guest where polling wins (docs/POLICY.md, step 5).
     */
    if (is(scn, "S3") || is(scn, "S5")) {
        guint from = ticks_after(a, scale, SETTLED_FROM_S);
        double a_late = poll_core_s_from(a, from), d_late = poll_core_s_from(d, from);
        double a_early = a->poll_core_s - a_late;
        gboolean ok = a_late <= 0.10 * d_late + 1e-9 && a_early <= EXPLORE_CORE_S;

        add(out, scn, "settled polling CPU <= 10% of qemu-default's; exploring <= 3 core-s", ok,
            "from %u s: adaptive %.3f core-s, qemu-default %.3f core-s; before: adaptive %.3f "
            "core-s", SETTLED_FROM_S, a_late, d_late, a_early);
    }
    /*
     * The wide window catches the gaps QEMU's default misses: adaptive must
     * find it, keeping 95% of the oracle's IOPS margin over qemu-default
     * (or saving 20% of its CPU).  The margin is the oracle's, not a fixed
     * 20%: the oracle itself has +20.3%, and a policy that measures off for
     * a tick before it commits (as it must: docs/POLICY.md, step 5) spends
     * more than the 0.3 point a fixed 20% left.
     */
    if (is(scn, "S4")) {
        double margin = o->iops - d->iops, got = a->iops - d->iops;
        gboolean ok = (margin > 0 && got >= 0.95 * margin) || a->iot_core_s <= 0.8 * d->iot_core_s;

        add(out, scn, "beats qemu-default by >= 95% of the oracle's IOPS margin, or 20% on CPU",
            ok, "IOPS %.0f vs %.0f (%+.1f%%; oracle %+.1f%%), iothread CPU %.1f vs %.1f core-s",
            a->iops, d->iops, 100 * (a->iops / MAX(d->iops, 1e-9) - 1),
            100 * (o->iops / MAX(d->iops, 1e-9) - 1), a->iot_core_s, d->iot_core_s);
    }
    if (is(scn, "S6")) {
        for (guint p = 0; p < scn->n_phases; p++) {
            double ai = sim_run_phase_iops(a, scn, scale, p, 5);
            double oi = sim_run_phase_iops(o, scn, scale, p, 5);
            g_autofree char *goal = g_strdup_printf("phase %u: never > 3%% below the best static", p + 1);

            add(out, scn, goal, ai >= 0.97 * oi - 50, "adaptive %.0f vs oracle %.0f", ai, oi);
            if (p > 0) {
                guint k = recovery_ticks(scn, r, scale, p);
                g_autofree char *g2 = g_strdup_printf("phase %u: within 5%% of the oracle in <= 5 ticks",
                                                      p + 1);

                add(out, scn, g2, k <= 5, k == G_MAXUINT ? "never" : "after %u ticks", k);
            }
        }
    }
    if (is(scn, "S7")) {
        gboolean ok = a->vcpu_cores >= 0.99 * off->vcpu_cores && a->iops >= 0.99 * off->iops;

        add(out, scn, "vCPU throughput and I/O at least as under off (1% noise)", ok,
            "vCPU %.3f vs %.3f cores, IOPS %.0f vs %.0f", a->vcpu_cores, off->vcpu_cores,
            a->iops, off->iops);
    }
    if (is(scn, "S8")) {
        guint run = 0, worst = 0, tail = MIN(10, a->n_ticks), got = 0;
        guint n_benef = scn->groups[scn->beneficiary_group].count;
        double peak = 0;

        for (guint t = 0; t < a->n_ticks; t++) {
            peak = MAX(peak, a->ticks[t].poll_cores);
            run = a->ticks[t].poll_cores > 1.05 * scn->budget_cores ? run + 1 : 0;
            worst = MAX(worst, run);
        }
        add(out, scn, "budget never exceeded by > 5% for > 2 ticks in a row", worst <= 2,
            "peak %.2f cores of %.2f, longest excess %u ticks", peak, scn->budget_cores, worst);
        for (guint t = a->n_ticks - tail; t < a->n_ticks; t++)
            got += a->ticks[t].benef_polling == n_benef && a->ticks[t].n_polling == n_benef;
        add(out, scn, "the beneficiaries get the polling", got == tail,
            "last %u ticks: %u with exactly the %u beneficiaries polling (now %u polling)",
            tail, got, n_benef, a->ticks[a->n_ticks - 1].n_polling);
    }
}
