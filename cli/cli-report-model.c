/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-model: what the report estimates from an iothread's points.
 *
 * The policy measures by changing poll-max-ns and holding it: a probe with
 * polling off next to a run with it on, a candidate next to QEMU's
 * default.  Those runs are in the history as consecutive ticks at one
 * setting.  Two adjacent runs at different settings are a pair: the same
 * workload a few seconds apart, one knob changed, when the two runs are of
 * the same phase of the workload (REPORT_PAIR_BAND); runs either side of a
 * change of load (idle ticks after attach, a burst) are not a pair.  The
 * CPU polling costs is the iothread's CPU with polling on minus its CPU
 * with it off, from such pairs only; the iothread's whole CPU is never
 * called polling.
 */
#include <math.h>

#include "cli-report-private.h"

/* A run of ticks stops at a gap this many intervals long: the daemon was
 * down or the VM off, and what follows is not the same workload. */
#define SEGMENT_MAX_GAP 3

static gint64
series_gap_limit(const CliReport *r)
{
    return SEGMENT_MAX_GAP * MAX(r->tick_ms, 1000);
}

typedef struct {
    double cpu_sum, cpu_sq, iops_sum, lat_wsum, lat_w;
    guint cpu_n, iops_n;
} SegmentAcc;

static void
segment_close(ReportSegment *g, const SegmentAcc *acc)
{
    g->cpu = acc->cpu_n ? acc->cpu_sum / acc->cpu_n : NAN;
    g->cpu_var = acc->cpu_n > 1 ? MAX(0.0, (acc->cpu_sq - acc->cpu_sum * acc->cpu_sum /
                                            acc->cpu_n) / (acc->cpu_n - 1)) : NAN;
    g->iops = acc->iops_n ? acc->iops_sum / acc->iops_n : NAN;
    g->lat = acc->lat_w > 0 ? acc->lat_wsum / acc->lat_w : NAN;
    g->qd = g->iops * g->lat / 1e6;
}

static gboolean
segment_loaded(const ReportSegment *g)
{
    return !isnan(g->iops) && g->iops >= REPORT_LOAD_MIN_IOPS;
}

/* The same phase of the workload (policy_gain_workload_alike()). */
static gboolean
segments_comparable(const ReportSegment *a, const ReportSegment *b)
{
    return policy_gain_workload_alike(a->iops, a->qd, b->iops, b->qd);
}

/* Runs of ticks at one setting, each without its first tick. */
static GArray *
series_segments(const CliReport *r, GArray *ticks)
{
    GArray *segs = g_array_new(FALSE, TRUE, sizeof(ReportSegment));
    ReportSegment cur = { .max_ns = -1 };
    SegmentAcc acc = { 0 };
    gint64 prev_ts = 0, gap = series_gap_limit(r);
    gboolean open = FALSE;

    for (guint i = 0; i < ticks->len; i++) {
        const ReportPoint *p = &g_array_index(ticks, ReportPoint, i);

        if (p->max_ns < 0)
            continue;
        if (!open || p->max_ns != cur.max_ns || p->ts_ms - prev_ts > gap) {
            if (open && cur.n > 0) {
                segment_close(&cur, &acc);
                g_array_append_val(segs, cur);
            }
            /* The first tick straddles the write that reset QEMU's window. */
            cur = (ReportSegment){ .from_ms = p->ts_ms, .to_ms = p->ts_ms,
                                   .max_ns = p->max_ns };
            acc = (SegmentAcc){ 0 };
            open = TRUE;
            prev_ts = p->ts_ms;
            continue;
        }
        prev_ts = cur.to_ms = p->ts_ms;
        cur.n++;
        if (!isnan(p->cpu_pct)) {
            acc.cpu_sum += p->cpu_pct;
            acc.cpu_sq += (double)p->cpu_pct * p->cpu_pct;
            acc.cpu_n++;
        }
        if (!isnan(p->iops)) {
            acc.iops_sum += p->iops;
            acc.iops_n++;
            if (!isnan(p->lat_us) && p->iops > 0) {
                acc.lat_wsum += (double)p->lat_us * p->iops;
                acc.lat_w += p->iops;
            }
        }
    }
    if (open && cur.n > 0) {
        segment_close(&cur, &acc);
        g_array_append_val(segs, cur);
    }
    return segs;
}

/* Adjacent runs at different settings with CPU measured on both sides,
 * marked with whether they are a measurement (the same workload). */
static GArray *
series_pairs(const CliReport *r, GArray *segs)
{
    GArray *pairs = g_array_new(FALSE, TRUE, sizeof(ReportPair));
    /* The left-out first tick sits between two runs: one interval more. */
    gint64 gap = series_gap_limit(r) + MAX(r->tick_ms, 1000);

    for (guint i = 1; i < segs->len; i++) {
        const ReportSegment *a = &g_array_index(segs, ReportSegment, i - 1);
        const ReportSegment *b = &g_array_index(segs, ReportSegment, i);
        ReportPair p;

        if (a->max_ns == b->max_ns || b->from_ms - a->to_ms > gap || isnan(a->cpu) ||
            isnan(b->cpu))
            continue;
        p = (ReportPair){ b->to_ms, *a, *b, segments_comparable(a, b),
                          segment_loaded(a) && segment_loaded(b) };
        g_array_append_val(pairs, p);
    }
    return pairs;
}

typedef gboolean (*PairOrient)(const ReportPair *p, const ReportSegment **a,
                               const ReportSegment **b, gpointer data);

/* A pair @orient accepts that measures: the same workload on both sides,
 * and with @need_load, load on both. */
static gboolean
pair_measures(const ReportPair *p, PairOrient orient, gpointer data, gboolean need_load,
              const ReportSegment **a, const ReportSegment **b)
{
    return orient(p, a, b, data) && p->comparable && (!need_load || p->loaded);
}

/* Averages the pairs @orient accepts, weighting each by its shorter run:
 * a one-tick probe says less than a minute-long one.  Adjacent runs of
 * the right settings that are not the same workload are counted apart. */
static void
compare_pairs(GArray *pairs, PairOrient orient, gpointer data, gboolean need_load,
              ReportCompare *c)
{
    double w_sum = 0, d_sum = 0, ia = 0, ib = 0, la = 0, lb = 0, lw = 0, var = 0;
    guint nd = 0;

    *c = (ReportCompare){ .d_cpu_pct = NAN, .d_cpu_se = NAN, .iops_a = NAN, .iops_b = NAN,
                          .lat_a = NAN, .lat_b = NAN };
    for (guint i = 0; i < pairs->len; i++) {
        const ReportPair *p = &g_array_index(pairs, ReportPair, i);
        const ReportSegment *a, *b;
        double w, d;

        if (!pair_measures(p, orient, data, need_load, &a, &b)) {
            c->n_unlike += orient(p, &a, &b, data);
            continue;
        }
        w = MIN(a->n, b->n);
        d = b->cpu - a->cpu;
        c->n_pairs++;
        c->n_ticks_a += a->n;
        c->n_ticks_b += b->n;
        c->newest_ms = MAX(c->newest_ms, p->ts_ms);
        w_sum += w;
        d_sum += w * d;
        nd++;
        if (!isnan(a->cpu_var) && !isnan(b->cpu_var))
            var = a->cpu_var / a->n + b->cpu_var / b->n;
        if (!isnan(a->iops) && !isnan(b->iops)) {
            ia += w * a->iops;
            ib += w * b->iops;
        }
        if (!isnan(a->lat) && !isnan(b->lat)) {
            la += w * a->lat;
            lb += w * b->lat;
            lw += w;
        }
    }
    if (nd == 0)
        return;
    c->d_cpu_pct = d_sum / w_sum;
    c->iops_a = ia / w_sum;
    c->iops_b = ib / w_sum;
    if (lw > 0) {
        c->lat_a = la / lw;
        c->lat_b = lb / lw;
    }
    /* Across pairs when there are several (the workload moved between
     * them: that spread is the honest error), else within the one pair. */
    if (nd > 1) {
        double mean = 0, ss = 0;

        for (guint i = 0; i < pairs->len; i++) {
            const ReportPair *p = &g_array_index(pairs, ReportPair, i);
            const ReportSegment *a, *b;

            if (pair_measures(p, orient, data, need_load, &a, &b))
                mean += (b->cpu - a->cpu) / nd;
        }
        for (guint i = 0; i < pairs->len; i++) {
            const ReportPair *p = &g_array_index(pairs, ReportPair, i);
            const ReportSegment *a, *b;

            if (pair_measures(p, orient, data, need_load, &a, &b))
                ss += ((b->cpu - a->cpu) - mean) * ((b->cpu - a->cpu) - mean);
        }
        c->d_cpu_se = sqrt(ss / (nd - 1) / nd);
    } else if (var > 0) {
        c->d_cpu_se = sqrt(var);
    }
}

/* a: polling off, b: polling on. */
static gboolean
orient_onoff(const ReportPair *p, const ReportSegment **a, const ReportSegment **b,
             gpointer data)
{
    (void)data;
    if ((p->a.max_ns == 0) == (p->b.max_ns == 0))
        return FALSE;
    *a = p->a.max_ns == 0 ? &p->a : &p->b;
    *b = p->a.max_ns == 0 ? &p->b : &p->a;
    return TRUE;
}

/* a: QEMU's default, b: the setting in *data. */
static gboolean
orient_default(const ReportPair *p, const ReportSegment **a, const ReportSegment **b,
               gpointer data)
{
    gint32 x = *(const gint32 *)data;

    if (p->a.max_ns == REPORT_QEMU_DEFAULT_MAX_NS && p->b.max_ns == x) {
        *a = &p->a;
        *b = &p->b;
        return TRUE;
    }
    if (p->b.max_ns == REPORT_QEMU_DEFAULT_MAX_NS && p->a.max_ns == x) {
        *a = &p->b;
        *b = &p->a;
        return TRUE;
    }
    return FALSE;
}

static ReportConfidence
compare_confidence(const ReportCompare *c)
{
    double d = fabs(c->d_cpu_pct);

    if (c->n_pairs == 0)
        return REPORT_CONFIDENCE_NONE;
    if (isnan(c->d_cpu_se))
        return REPORT_CONFIDENCE_LOW;
    if (c->n_pairs >= 3 && d >= 3 * c->d_cpu_se)
        return REPORT_CONFIDENCE_HIGH;
    if (d >= 2 * c->d_cpu_se)
        return REPORT_CONFIDENCE_MEDIUM;
    return REPORT_CONFIDENCE_LOW;
}

/* a: QEMU's default, b: whichever other setting is paired with it. */
static gboolean
orient_any_default(const ReportPair *p, const ReportSegment **a, const ReportSegment **b,
                   gpointer data)
{
    gint32 x = p->a.max_ns == REPORT_QEMU_DEFAULT_MAX_NS ? p->b.max_ns : p->a.max_ns;

    (void)data;
    return orient_default(p, a, b, &x);
}

/*
 * The gain figures: the ticks replayed through policy-gain, the code the
 * daemon runs tick by tick for its counters (docs/METRICS.md), so that a
 * fleet report of the same range gives the same figures.  Each tick is
 * charged by the pairs closed before it of its own workload; the polling
 * CPU it is charged goes to its bucket too.  A fleet's series has the
 * counters' increases instead (cli_report_set_gain()).  The ticks before
 * the range (cli_report_add_warmup()) only close pairs, as they had for
 * the daemon when the range began.
 */
static void
series_gain(CliReport *r, ReportSeries *s, GArray *ticks)
{
    g_autoptr(PolicyGain) g = s->gain_warm ? policy_gain_copy(s->gain_warm) : policy_gain_new();
    g_autofree double *poll_s = g_new0(double, r->nb);
    g_autofree double *known_s = g_new0(double, r->nb);
    PolicyGainFigures f;
    ReportCompare c;

    compare_pairs(s->pairs, orient_any_default, NULL, TRUE, &c);
    s->vs_default_pairs = c.n_pairs;
    s->vs_default_unlike = c.n_unlike;
    s->vs_default_newest_ms = c.newest_ms;
    for (guint i = 0; i < r->nb; i++)
        s->poll_cpu[i] = NAN;
    if (!s->gain_given) {
        const PolicyGainTotals *tot = policy_gain_totals(g);
        PolicyGainTotals before = *tot;

        for (guint i = 0; i < ticks->len; i++) {
            const ReportPoint *p = &g_array_index(ticks, ReportPoint, i);
            double poll0 = tot->polling_cpu_s, known0 = tot->known_s;
            guint bi;

            policy_gain_tick(g, &(PolicyGainTick){ p->ts_ms, p->iops, p->lat_us, p->cpu_pct,
                                                   p->max_ns });
            if (report_bucket_index(r, p->ts_ms, &bi)) {
                poll_s[bi] += tot->polling_cpu_s - poll0;
                known_s[bi] += tot->known_s - known0;
            }
        }
        /* The range's own: what the ticks before it charged is theirs. */
        for (int k = 0; k < POLICY_GAIN_MAX; k++)
            policy_gain_totals_set(&s->gain, k, policy_gain_totals_get(tot, k) -
                                   policy_gain_totals_get(&before, k));
        if (policy_gain_pairs_onoff(g) > 0)
            for (guint i = 0; i < r->nb; i++)
                s->poll_cpu[i] = known_s[i] > 0 ? 100.0 * poll_s[i] / known_s[i] : NAN;
    }
    policy_gain_figures(&s->gain, &f);
    s->saved_cores = f.saved_cores;
    s->gained_iops = f.gained_iops;
    s->mean_poll_cores = f.polling_cores;
    s->poll_on_pct = f.polling_on_pct;
    s->default_share = f.default_share;
    s->measured_share = f.measured_share;
    s->unmeasured_share = f.unmeasured_share;
}

typedef struct {
    double n, sx, sy, sxx, sxy, x_max;
} FitAcc;

static void
fit_add(FitAcc *f, double x, double y)
{
    f->x_max = MAX(f->x_max, x);
    f->n++;
    f->sx += x;
    f->sy += y;
    f->sxx += x * x;
    f->sxy += x * y;
}

/* The line, credible or not (REPORT_FIT_MIN_POINTS). */
static void
fit_close(const FitAcc *f, ReportFit *out)
{
    double den = f->n * f->sxx - f->sx * f->sx;
    double mean = f->n ? f->sx / f->n : 0;
    double var = f->n > 1 ? MAX(0.0, (f->sxx - f->sx * mean) / (f->n - 1)) : 0;

    *out = (ReportFit){ .n = (guint)f->n, .x_max = f->x_max };
    if (f->n < REPORT_FIT_MIN_POINTS || mean <= 0 ||
        sqrt(var) < REPORT_FIT_MIN_SPREAD * mean || den <= 0)
        return;
    out->b = (f->n * f->sxy - f->sx * f->sy) / den;
    out->a = (f->sy - out->b * f->sx) / f->n;
    out->ok = out->b > 0;
}

gboolean
report_project_beyond(const ReportSeries *s, double iops)
{
    return !isnan(iops) && iops > s->fit.x_max;
}

double
report_project_cpu(const ReportSeries *s, double iops)
{
    const ReportFit *f = &s->fit;

    if (!f->ok || isnan(iops) || isnan(s->busy_p95_cpu_pct) || isnan(s->busy_p95_iops) ||
        iops < s->busy_p95_iops || report_project_beyond(s, iops))
        return NAN;
    /* Anchored on what was measured today, the slope says what more
     * load adds; b > 0, so more load never costs less. */
    return CLAMP(s->busy_p95_cpu_pct + f->b * (iops - s->busy_p95_iops), 0.0, 100.0);
}

/* Per polling state, over the ticks with load: idle ticks are another
 * regime (QEMU's window shrinks to nothing) and would tilt the line. */
static void
series_fits(ReportSeries *s, GArray *ticks)
{
    FitAcc off = { 0 }, on = { 0 };

    for (guint i = 0; i < ticks->len; i++) {
        const ReportPoint *p = &g_array_index(ticks, ReportPoint, i);

        if (isnan(p->iops) || isnan(p->cpu_pct) || p->iops < REPORT_LOAD_MIN_IOPS)
            continue;
        if (p->max_ns == 0)
            fit_add(&off, p->iops, p->cpu_pct);
        else if (p->max_ns > 0)
            fit_add(&on, p->iops, p->cpu_pct);
    }
    fit_close(&off, &s->fit_off);
    fit_close(&on, &s->fit_on);
    s->fit = on.n >= off.n ? s->fit_on : s->fit_off;
}

/* The busy load and the peak, from the points and ticks themselves. */
static void
series_busy(ReportSeries *s)
{
    g_autofree double *iops = g_new(double, s->points->len);
    g_autofree double *cpu = g_new(double, s->points->len);
    GArray *sets[2] = { s->points, s->ticks };

    for (guint i = 0; i < s->points->len; i++) {
        const ReportPoint *p = &g_array_index(s->points, ReportPoint, i);
        gboolean busy = !isnan(p->iops) && p->iops >= REPORT_LOAD_MIN_IOPS;

        iops[i] = busy ? p->iops : NAN;
        cpu[i] = busy ? p->cpu_pct : NAN;
    }
    s->busy_p95_iops = report_percentile(iops, s->points->len, 95);
    s->busy_p95_cpu_pct = report_percentile(cpu, s->points->len, 95);
    s->peak_iops = NAN;
    for (guint k = 0; k < G_N_ELEMENTS(sets); k++)
        for (guint i = 0; sets[k] && i < sets[k]->len; i++) {
            const ReportPoint *p = &g_array_index(sets[k], ReportPoint, i);

            if (!isnan(p->iops) && p->iops >= REPORT_LOAD_MIN_IOPS &&
                (isnan(s->peak_iops) || p->iops > s->peak_iops))
                s->peak_iops = p->iops;
        }
}

void
report_model_series(CliReport *r, ReportSeries *s)
{
    /* Per-tick rows when rollups are charted: only they know each
     * tick's setting. */
    GArray *ticks = s->ticks ? s->ticks : s->points;
    g_autoptr(GArray) segs = series_segments(r, ticks);
    g_autofree double *iops = g_new(double, r->nb);
    g_autofree double *cpu = g_new(double, r->nb);
    guint known = 0, on = 0;

    if (s->pairs)
        g_array_unref(s->pairs);
    s->pairs = series_pairs(r, segs);
    compare_pairs(s->pairs, orient_onoff, NULL, FALSE, &s->onoff);
    s->onoff_confidence = compare_confidence(&s->onoff);
    g_free(s->poll_cpu);
    s->poll_cpu = g_new(double, r->nb);
    s->busy_buckets = 0;
    for (guint i = 0; i < r->nb; i++) {
        const ReportBucket *b = &s->b[i];

        known += b->known_n;
        on += b->on_n;
        iops[i] = report_bucket_iops(b);
        cpu[i] = report_bucket_cpu(b);
        s->busy_buckets += iops[i] >= REPORT_LOAD_MIN_IOPS;
    }
    s->on_share = known ? (double)on / known : NAN;
    s->mean_iops = report_mean(iops, r->nb);
    s->p95_iops = report_percentile(iops, r->nb, 95);
    /* The load to plan for is the load when there is some: idle time
     * only dilutes it. */
    series_busy(s);
    s->mean_cpu_pct = report_mean(cpu, r->nb);
    series_gain(r, s, ticks);
    series_fits(s, ticks);
}
