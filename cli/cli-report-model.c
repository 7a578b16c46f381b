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

static gboolean
within_band(double x, double y)
{
    return MAX(x, y) <= REPORT_PAIR_BAND * MIN(x, y);
}

/* The same phase of the workload: both idle, or both loaded with IOPS and
 * queue depth (where latency was measured) within the band. */
static gboolean
segments_comparable(const ReportSegment *a, const ReportSegment *b)
{
    if (segment_loaded(a) != segment_loaded(b))
        return FALSE;
    if (!segment_loaded(a))
        return TRUE;
    if (!within_band(a->iops, b->iops))
        return FALSE;
    return isnan(a->qd) || isnan(b->qd) || (a->qd > 0 && b->qd > 0 && within_band(a->qd, b->qd));
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

/* One pair against QEMU's default, as it is charged: the workload it
 * measured (the setting's side) and what the setting did there. */
typedef struct {
    double iops, qd;                    /* the setting's run */
    double d_cpu_pct;                   /* setting minus default */
    double iops_ratio;                  /* default's IOPS over the setting's */
    double w;                           /* the shorter run, as compare_pairs() */
} DefaultPair;

typedef struct {
    gint32 max_ns;
    GArray *pairs;                      /* DefaultPair */
} SettingPairs;

static void
setting_pairs_clear(gpointer p)
{
    g_clear_pointer(&((SettingPairs *)p)->pairs, g_array_unref);
}

/* The pairs that measured setting @sp->max_ns against the default, with
 * load on both sides; the counts go to the series. */
static void
setting_pairs_fill(ReportSeries *s, SettingPairs *sp)
{
    ReportCompare c;

    compare_pairs(s->pairs, orient_default, &sp->max_ns, TRUE, &c);
    if (c.n_pairs) {
        s->vs_default_pairs += c.n_pairs;
        s->vs_default_newest_ms = MAX(s->vs_default_newest_ms, c.newest_ms);
    }
    s->vs_default_unlike += c.n_unlike;
    sp->pairs = g_array_new(FALSE, TRUE, sizeof(DefaultPair));
    for (guint i = 0; i < s->pairs->len; i++) {
        const ReportPair *p = &g_array_index(s->pairs, ReportPair, i);
        const ReportSegment *a, *b;
        DefaultPair d;

        if (!pair_measures(p, orient_default, &sp->max_ns, TRUE, &a, &b))
            continue;
        d = (DefaultPair){ b->iops, b->qd, b->cpu - a->cpu,
                           b->iops > 0 ? a->iops / b->iops : NAN, MIN(a->n, b->n) };
        g_array_append_val(sp->pairs, d);
    }
}

/* The pairs of @sp whose workload is @p's (REPORT_PAIR_BAND in IOPS and,
 * where both are known, in queue depth), averaged as compare_pairs()
 * does; FALSE when none is. */
static gboolean
setting_pairs_at(const SettingPairs *sp, const ReportPoint *p, double *d_cpu_pct,
                 double *iops_ratio)
{
    double qd = isnan(p->lat_us) ? NAN : p->iops * p->lat_us / 1e6;
    double w = 0, wd = 0, wr = 0, wr_n = 0;

    for (guint i = 0; i < sp->pairs->len; i++) {
        const DefaultPair *d = &g_array_index(sp->pairs, DefaultPair, i);

        if (isnan(d->iops) || !within_band(p->iops, d->iops))
            continue;
        if (!isnan(qd) && !isnan(d->qd) && !(qd > 0 && d->qd > 0 && within_band(qd, d->qd)))
            continue;
        w += d->w;
        wd += d->w * d->d_cpu_pct;
        if (!isnan(d->iops_ratio)) {
            wr += d->w * d->iops_ratio;
            wr_n += d->w;
        }
    }
    if (w <= 0)
        return FALSE;
    *d_cpu_pct = wd / w;
    *iops_ratio = wr_n > 0 ? wr / wr_n : NAN;
    return TRUE;
}

/*
 * Against QEMU's default: each tick with load at another setting is
 * charged what the pairs of that setting against the default measured on
 * the same workload as the tick's (its IOPS and queue depth within
 * REPORT_PAIR_BAND of the pair's): a difference measured at queue depth 1
 * says nothing of queue depth 16.  Ticks at the default count zero; idle
 * ticks at another setting and ticks no pair measured the workload of are
 * counted apart (unmeasured), not guessed.
 */
static void
series_vs_default(ReportSeries *s, GArray *ticks)
{
    g_autoptr(GArray) settings = g_array_new(FALSE, TRUE, sizeof(SettingPairs));
    double saved = 0, gained = 0;
    guint known = 0, at_default = 0, measured = 0;

    g_array_set_clear_func(settings, setting_pairs_clear);
    s->saved_cores = s->gained_iops = NAN;
    s->vs_default_pairs = s->vs_default_unlike = 0;
    s->vs_default_newest_ms = 0;
    for (guint i = 0; i < ticks->len; i++) {
        const ReportPoint *p = &g_array_index(ticks, ReportPoint, i);
        SettingPairs *sp = NULL;
        double d_cpu, ratio;

        if (p->max_ns < 0)
            continue;
        known++;
        if (p->max_ns == REPORT_QEMU_DEFAULT_MAX_NS) {
            at_default++;
            continue;
        }
        for (guint k = 0; k < settings->len && !sp; k++)
            if (g_array_index(settings, SettingPairs, k).max_ns == p->max_ns)
                sp = &g_array_index(settings, SettingPairs, k);
        if (!sp) {
            SettingPairs n = { .max_ns = p->max_ns };

            g_array_append_val(settings, n);
            sp = &g_array_index(settings, SettingPairs, settings->len - 1);
            setting_pairs_fill(s, sp);
        }
        if (isnan(p->iops) || p->iops < REPORT_LOAD_MIN_IOPS ||
            !setting_pairs_at(sp, p, &d_cpu, &ratio))
            continue;
        measured++;
        saved -= d_cpu / 100.0;
        if (!isnan(ratio))
            gained += p->iops * (1.0 - ratio);
    }
    if (known == 0)
        return;
    s->default_share = (double)at_default / known;
    s->measured_share = (double)measured / known;
    s->unmeasured_share = (double)(known - at_default - measured) / known;
    if (measured > 0 || at_default == known) {
        s->saved_cores = saved / known;
        s->gained_iops = gained / known;
    }
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
    double poll_pct;
    guint known = 0, on = 0;

    if (s->pairs)
        g_array_unref(s->pairs);
    s->pairs = series_pairs(r, segs);
    compare_pairs(s->pairs, orient_onoff, NULL, FALSE, &s->onoff);
    s->onoff_confidence = compare_confidence(&s->onoff);
    /* Polling measured cheaper than off is noise around zero: it costs
     * nothing rather than giving CPU back. */
    poll_pct = s->onoff.n_pairs ? MAX(s->onoff.d_cpu_pct, 0.0) : NAN;
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
        /* Only the share of the bucket that polled is charged. */
        s->poll_cpu[i] = b->known_n && !isnan(poll_pct) ?
            MIN(poll_pct, isnan(cpu[i]) ? poll_pct : cpu[i]) * b->on_n / b->known_n : NAN;
    }
    s->on_share = known ? (double)on / known : NAN;
    s->mean_poll_cores = report_mean(s->poll_cpu, r->nb) / 100.0;
    s->mean_iops = report_mean(iops, r->nb);
    s->p95_iops = report_percentile(iops, r->nb, 95);
    /* The load to plan for is the load when there is some: idle time
     * only dilutes it. */
    series_busy(s);
    s->mean_cpu_pct = report_mean(cpu, r->nb);
    series_vs_default(s, ticks);
    series_fits(s, ticks);
}
