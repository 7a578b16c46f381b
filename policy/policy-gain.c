/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-gain: gains against QEMU's default, charged causally
 * (policy-gain.h).
 */
#include <math.h>

#include "metric-table.h"
#include "policy-gain.h"

static const PolicyGainCounterDef counter_defs[POLICY_GAIN_MAX] = {
    [POLICY_GAIN_KNOWN_S] = {
        "polltune_iothread_gain_known_seconds", "seconds",
        "Time whose poll-max-ns was known: the denominator of the gain figures." },
    [POLICY_GAIN_DEFAULT_S] = {
        "polltune_iothread_gain_default_seconds", "seconds",
        "Of that time, at QEMU's default poll-max-ns (charged zero)." },
    [POLICY_GAIN_MEASURED_S] = {
        "polltune_iothread_gain_measured_seconds", "seconds",
        "Of that time, at another setting and charged by a pair of the same workload "
        "against the default." },
    [POLICY_GAIN_OPS_GAINED] = {
        "polltune_iothread_gain_ops", NULL,
        "Operations gained against QEMU's default, where the setting gave more." },
    [POLICY_GAIN_OPS_LOST] = {
        "polltune_iothread_gain_lost_ops", NULL,
        "Operations lost against QEMU's default, where the setting gave fewer." },
    [POLICY_GAIN_CPU_SAVED_S] = {
        "polltune_iothread_cpu_saved_seconds", "seconds",
        "Iothread CPU saved against QEMU's default, where the setting cost less." },
    [POLICY_GAIN_CPU_SPENT_S] = {
        "polltune_iothread_cpu_spent_seconds", "seconds",
        "Iothread CPU spent beyond QEMU's default, where the setting cost more." },
    [POLICY_GAIN_POLLING_CPU_S] = {
        "polltune_iothread_polling_cpu_seconds", "seconds",
        "Iothread CPU spent polling, as off/on pairs of the same workload measured it." },
    [POLICY_GAIN_POLLING_MEASURED_S] = {
        "polltune_iothread_polling_measured_seconds", "seconds",
        "Time with polling off, or on and charged by an off/on pair." },
    [POLICY_GAIN_POLLING_ON_S] = {
        "polltune_iothread_polling_on_seconds", "seconds",
        "Time with polling on and charged by an off/on pair: polling CPU over it is "
        "polling's cost while on." },
};

/* The totals' fields in PolicyGainCounter order. */
static const gsize counter_offsets[POLICY_GAIN_MAX] = {
    [POLICY_GAIN_KNOWN_S] = G_STRUCT_OFFSET(PolicyGainTotals, known_s),
    [POLICY_GAIN_DEFAULT_S] = G_STRUCT_OFFSET(PolicyGainTotals, default_s),
    [POLICY_GAIN_MEASURED_S] = G_STRUCT_OFFSET(PolicyGainTotals, measured_s),
    [POLICY_GAIN_OPS_GAINED] = G_STRUCT_OFFSET(PolicyGainTotals, ops_gained),
    [POLICY_GAIN_OPS_LOST] = G_STRUCT_OFFSET(PolicyGainTotals, ops_lost),
    [POLICY_GAIN_CPU_SAVED_S] = G_STRUCT_OFFSET(PolicyGainTotals, cpu_saved_s),
    [POLICY_GAIN_CPU_SPENT_S] = G_STRUCT_OFFSET(PolicyGainTotals, cpu_spent_s),
    [POLICY_GAIN_POLLING_CPU_S] = G_STRUCT_OFFSET(PolicyGainTotals, polling_cpu_s),
    [POLICY_GAIN_POLLING_MEASURED_S] = G_STRUCT_OFFSET(PolicyGainTotals, polling_measured_s),
    [POLICY_GAIN_POLLING_ON_S] = G_STRUCT_OFFSET(PolicyGainTotals, polling_on_s),
};

const PolicyGainCounterDef *
policy_gain_counter_def(PolicyGainCounter c)
{
    g_return_val_if_fail(c >= 0 && c < POLICY_GAIN_MAX, NULL);
    return &counter_defs[c];
}

double
policy_gain_totals_get(const PolicyGainTotals *t, PolicyGainCounter c)
{
    g_return_val_if_fail(c >= 0 && c < POLICY_GAIN_MAX, NAN);
    return G_STRUCT_MEMBER(double, t, counter_offsets[c]);
}

void
policy_gain_totals_set(PolicyGainTotals *t, PolicyGainCounter c, double v)
{
    g_return_if_fail(c >= 0 && c < POLICY_GAIN_MAX);
    G_STRUCT_MEMBER(double, t, counter_offsets[c]) = v;
}

void
policy_gain_figures(const PolicyGainTotals *t, PolicyGainFigures *out)
{
    double known = t->known_s;

    *out = (PolicyGainFigures){ NAN, NAN, NAN, NAN, NAN, NAN, NAN };
    if (!(known > 0))
        return;
    out->default_share = t->default_s / known;
    out->measured_share = t->measured_s / known;
    out->unmeasured_share = MAX(0.0, 1.0 - out->default_share - out->measured_share);
    /* Nothing measured but the default is a measured zero; counters read
     * through increase() are extrapolated, so "all" is within rounding. */
    if (t->measured_s > 0 || t->default_s >= known * (1 - 1e-9)) {
        out->saved_cores = (t->cpu_saved_s - t->cpu_spent_s) / known;
        out->gained_iops = (t->ops_gained - t->ops_lost) / known;
    }
    if (t->polling_measured_s > 0)
        out->polling_cores = t->polling_cpu_s / known;
    if (t->polling_on_s > 0)
        out->polling_on_pct = 100.0 * t->polling_cpu_s / t->polling_on_s;
}

void
policy_gain_tick_from_vec(const MetricVec *v, gint64 ts_ms, gint64 len_ns, PolicyGainTick *out)
{
    gint64 max_ns = v->v[METRIC_POLL_MAX_NS];

    *out = (PolicyGainTick){ .ts_ms = ts_ms, .iops = NAN, .lat_us = NAN, .cpu_pct = NAN,
                             .max_ns = max_ns == METRIC_ABSENT || max_ns < 0 ? -1 : max_ns };
    if (!metric_rate_value(METRIC_RATE_IOPS, v, len_ns, &out->iops))
        out->iops = NAN;
    if (!metric_rate_value(METRIC_RATE_LAT_US, v, len_ns, &out->lat_us))
        out->lat_us = NAN;
    if (!metric_rate_value(METRIC_RATE_CPU_PCT, v, len_ns, &out->cpu_pct))
        out->cpu_pct = NAN;
}

/* A run of ticks at one setting, its first tick left out (a write resets
 * QEMU's window, so that tick describes neither setting). */
typedef struct {
    gint64 from_ms, to_ms, max_ns;
    guint n;
    double cpu_sum, iops_sum, lat_wsum, lat_w;
    guint cpu_n, iops_n;
} GainRun;

typedef enum {
    PAIR_DEFAULT,                       /* a setting against QEMU's default */
    PAIR_ONOFF,                         /* polling on against off */
} PairKind;

/* A closed pair as it is charged: the workload it measured (the side of
 * the setting, or of polling on) and what the setting did there. */
typedef struct {
    gint64 ts_ms;                       /* end of the later run */
    PairKind kind;
    gint64 max_ns;                      /* PAIR_DEFAULT: the setting's */
    gboolean loaded;
    double iops, qd;
    double d_cpu_pct;                   /* setting (on) minus default (off) */
    double iops_ratio;                  /* default's IOPS over the setting's */
    double w;                           /* the shorter run: a one-tick probe says less */
} GainPair;

struct PolicyGain {
    GainRun cur, prev;
    gboolean open, have_prev;
    gint64 last_ts, last_known_ts;
    gboolean have_last;
    GArray *pairs;                      /* GainPair, oldest first */
    guint n_default, n_onoff;
    PolicyGainTotals tot;
};

PolicyGain *
policy_gain_new(void)
{
    PolicyGain *g = g_new0(PolicyGain, 1);

    g->pairs = g_array_new(FALSE, TRUE, sizeof(GainPair));
    return g;
}

PolicyGain *
policy_gain_copy(const PolicyGain *g)
{
    PolicyGain *c = g_memdup2(g, sizeof(*g));

    c->pairs = g_array_copy(g->pairs);
    return c;
}

void
policy_gain_free(PolicyGain *g)
{
    if (!g)
        return;
    g_array_unref(g->pairs);
    g_free(g);
}

const PolicyGainTotals *
policy_gain_totals(const PolicyGain *g)
{
    return &g->tot;
}

guint
policy_gain_pairs_default(const PolicyGain *g)
{
    return g->n_default;
}

guint
policy_gain_pairs_onoff(const PolicyGain *g)
{
    return g->n_onoff;
}

static double
run_cpu(const GainRun *r)
{
    return r->cpu_n ? r->cpu_sum / r->cpu_n : NAN;
}

static double
run_iops(const GainRun *r)
{
    return r->iops_n ? r->iops_sum / r->iops_n : NAN;
}

/* Requests in flight (Little's law), NAN without a latency. */
static double
run_qd(const GainRun *r)
{
    return r->lat_w > 0 ? run_iops(r) * (r->lat_wsum / r->lat_w) / 1e6 : NAN;
}

static gboolean
loaded(double iops)
{
    return !isnan(iops) && iops >= POLICY_GAIN_LOAD_MIN_IOPS;
}

static gboolean
within_band(double x, double y)
{
    return x > 0 && y > 0 && MAX(x, y) <= POLICY_GAIN_BAND * MIN(x, y);
}

gboolean
policy_gain_workload_alike(double iops_a, double qd_a, double iops_b, double qd_b)
{
    if (loaded(iops_a) != loaded(iops_b))
        return FALSE;
    if (!loaded(iops_a))
        return TRUE;
    if (!within_band(iops_a, iops_b))
        return FALSE;
    return isnan(qd_a) || isnan(qd_b) || within_band(qd_a, qd_b);
}

static void
pair_add(PolicyGain *g, const GainPair *p)
{
    if (g->pairs->len >= POLICY_GAIN_MAX_PAIRS)
        g_array_remove_index(g->pairs, 0);
    g_array_append_val(g->pairs, *p);
    if (p->kind == PAIR_DEFAULT)
        g->n_default++;
    else
        g->n_onoff++;
}

/* Run @b closed right after run @a: a pair when they are the same
 * workload at different settings, with CPU measured on both sides. */
static void
runs_pair(PolicyGain *g, const GainRun *a, const GainRun *b)
{
    gint64 dflt = (gint64)POLICY_TRIPLE_QEMU_DEFAULT.poll_max_ns;
    double ia = run_iops(a), ib = run_iops(b), qa = run_qd(a), qb = run_qd(b);
    GainPair p = { .ts_ms = b->to_ms, .w = MIN(a->n, b->n) };

    if (a->max_ns == b->max_ns || isnan(run_cpu(a)) || isnan(run_cpu(b)) ||
        !policy_gain_workload_alike(ia, qa, ib, qb))
        return;
    p.loaded = loaded(ia) && loaded(ib);
    if ((a->max_ns == dflt || b->max_ns == dflt) && p.loaded) {
        const GainRun *d = a->max_ns == dflt ? a : b, *x = a->max_ns == dflt ? b : a;

        p.kind = PAIR_DEFAULT;
        p.max_ns = x->max_ns;
        p.iops = run_iops(x);
        p.qd = run_qd(x);
        p.d_cpu_pct = run_cpu(x) - run_cpu(d);
        p.iops_ratio = p.iops > 0 ? run_iops(d) / p.iops : NAN;
        pair_add(g, &p);
    }
    if ((a->max_ns == 0) != (b->max_ns == 0)) {
        const GainRun *off = a->max_ns == 0 ? a : b, *on = a->max_ns == 0 ? b : a;

        p.kind = PAIR_ONOFF;
        p.max_ns = on->max_ns;
        p.iops = run_iops(on);
        p.qd = run_qd(on);
        p.d_cpu_pct = run_cpu(on) - run_cpu(off);
        p.iops_ratio = NAN;
        pair_add(g, &p);
    }
}

static void
run_close(PolicyGain *g)
{
    if (!g->open || g->cur.n == 0)
        return;
    if (g->have_prev)
        runs_pair(g, &g->prev, &g->cur);
    g->prev = g->cur;
    g->have_prev = TRUE;
}

/* Takes @t into the runs: a new run at a new setting or after a gap. */
static void
runs_take(PolicyGain *g, const PolicyGainTick *t)
{
    gboolean gap = g->open && t->ts_ms - g->last_known_ts > POLICY_GAIN_MAX_GAP_MS;

    g->last_known_ts = t->ts_ms;
    if (!g->open || gap || t->max_ns != g->cur.max_ns) {
        run_close(g);
        if (gap)
            g->have_prev = FALSE;
        g->cur = (GainRun){ .from_ms = t->ts_ms, .to_ms = t->ts_ms, .max_ns = t->max_ns };
        g->open = TRUE;
        return;
    }
    g->cur.to_ms = t->ts_ms;
    g->cur.n++;
    if (!isnan(t->cpu_pct)) {
        g->cur.cpu_sum += t->cpu_pct;
        g->cur.cpu_n++;
    }
    if (!isnan(t->iops)) {
        g->cur.iops_sum += t->iops;
        g->cur.iops_n++;
        if (!isnan(t->lat_us) && t->iops > 0) {
            g->cur.lat_wsum += t->lat_us * t->iops;
            g->cur.lat_w += t->iops;
        }
    }
}

/* The pairs of @kind (and setting @max_ns for PAIR_DEFAULT) of @t's
 * workload, averaged weighting each by its shorter run; FALSE when none. */
static gboolean
pairs_at(const PolicyGain *g, PairKind kind, const PolicyGainTick *t, double *d_cpu_pct,
         double *iops_ratio)
{
    double qd = isnan(t->lat_us) || isnan(t->iops) ? NAN : t->iops * t->lat_us / 1e6;
    double w = 0, wd = 0, wr = 0, wr_n = 0;

    for (guint i = 0; i < g->pairs->len; i++) {
        const GainPair *p = &g_array_index(g->pairs, GainPair, i);

        if (p->kind != kind || (kind == PAIR_DEFAULT && p->max_ns != t->max_ns) ||
            !policy_gain_workload_alike(t->iops, qd, p->iops, p->qd))
            continue;
        w += p->w;
        wd += p->w * p->d_cpu_pct;
        if (!isnan(p->iops_ratio)) {
            wr += p->w * p->iops_ratio;
            wr_n += p->w;
        }
    }
    if (w <= 0)
        return FALSE;
    *d_cpu_pct = wd / w;
    *iops_ratio = wr_n > 0 ? wr / wr_n : NAN;
    return TRUE;
}

static void
split_add(double v, double *pos, double *neg)
{
    if (v > 0)
        *pos += v;
    else
        *neg -= v;
}

/* Charges @t, @dt_s long, by the pairs closed before it. */
static void
tick_charge(PolicyGain *g, const PolicyGainTick *t, double dt_s)
{
    PolicyGainTotals *tot = &g->tot;
    double d_cpu, ratio;

    tot->known_s += dt_s;
    if (t->max_ns == (gint64)POLICY_TRIPLE_QEMU_DEFAULT.poll_max_ns) {
        tot->default_s += dt_s;
    } else if (loaded(t->iops) && pairs_at(g, PAIR_DEFAULT, t, &d_cpu, &ratio)) {
        tot->measured_s += dt_s;
        split_add(-d_cpu / 100.0 * dt_s, &tot->cpu_saved_s, &tot->cpu_spent_s);
        if (!isnan(ratio))
            split_add(t->iops * (1.0 - ratio) * dt_s, &tot->ops_gained, &tot->ops_lost);
    }
    if (t->max_ns == 0) {
        tot->polling_measured_s += dt_s;
    } else if (pairs_at(g, PAIR_ONOFF, t, &d_cpu, &ratio)) {
        /* Polling measured cheaper than off is noise around zero; and it
         * never costs more than the whole iothread did. */
        d_cpu = MAX(d_cpu, 0.0);
        if (!isnan(t->cpu_pct))
            d_cpu = MIN(d_cpu, t->cpu_pct);
        tot->polling_cpu_s += d_cpu / 100.0 * dt_s;
        tot->polling_measured_s += dt_s;
        tot->polling_on_s += dt_s;
    }
}

void
policy_gain_tick(PolicyGain *g, const PolicyGainTick *t)
{
    double dt_s = 0;
    guint aged = 0;

    if (g->have_last && t->ts_ms <= g->last_ts)
        return;
    /* A tick's length is the time since the one before; after a gap it
     * is unknown and the tick is not charged. */
    if (g->have_last && t->ts_ms - g->last_ts <= POLICY_GAIN_MAX_GAP_MS)
        dt_s = (t->ts_ms - g->last_ts) / 1000.0;
    g->last_ts = t->ts_ms;
    g->have_last = TRUE;
    while (aged < g->pairs->len &&
           g_array_index(g->pairs, GainPair, aged).ts_ms < t->ts_ms - POLICY_GAIN_PAIR_MAX_AGE_MS)
        aged++;
    if (aged)
        g_array_remove_range(g->pairs, 0, aged);
    if (t->max_ns < 0)
        return;
    /* The runs first: a run that this tick's new setting closes is all
     * before the tick, so it may charge it. */
    runs_take(g, t);
    if (dt_s > 0)
        tick_charge(g, t, dt_s);
}
