/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report: collecting the report's data, settling its range and time
 * buckets, and the per-VM figures derived from them.
 */
#include <math.h>
#include <stdlib.h>

#include "cli-report-private.h"

static const char *const confidence_names[REPORT_CONFIDENCE_MAX] = {
    [REPORT_CONFIDENCE_NONE] = "none",
    [REPORT_CONFIDENCE_LOW] = "low",
    [REPORT_CONFIDENCE_MEDIUM] = "medium",
    [REPORT_CONFIDENCE_HIGH] = "high",
};

const char *
report_confidence_to_string(ReportConfidence c)
{
    return c >= 0 && c < REPORT_CONFIDENCE_MAX ? confidence_names[c] : "?";
}

static void
decision_clear(gpointer p)
{
    ReportDecision *d = p;

    g_free(d->policy);
    g_free(d->reason);
}

static void
series_free(gpointer p)
{
    ReportSeries *s = p;

    g_free(s->target);
    g_free(s->iothread);
    g_free(s->b);
    g_free(s->poll_cpu);
    policy_gain_free(s->gain_warm);
    g_array_unref(s->points);
    if (s->ticks)
        g_array_unref(s->ticks);
    g_array_unref(s->decisions);
    if (s->pairs)
        g_array_unref(s->pairs);
    g_free(s);
}

CliReport *
cli_report_new(gint64 from_ms, gint64 to_ms, const char *source, StoreResolution resolution)
{
    CliReport *r = g_new0(CliReport, 1);

    r->from_ms = from_ms;
    r->to_ms = MAX(to_ms, from_ms + 1);
    r->source = g_strdup(source);
    r->resolution = resolution;
    r->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    r->series = g_ptr_array_new_with_free_func(series_free);
    r->notes = g_ptr_array_new_with_free_func(g_free);
    r->host = g_array_new(FALSE, FALSE, sizeof(ReportHost));
    r->names = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return r;
}

void
cli_report_set_name(CliReport *r, const char *target, const char *name)
{
    if (target && name && *name)
        g_hash_table_replace(r->names, g_strdup(target), g_strdup(name));
}

void
cli_report_set_names(CliReport *r, GHashTable *names)
{
    GHashTableIter it;
    gpointer k, v;

    g_hash_table_iter_init(&it, names);
    while (g_hash_table_iter_next(&it, &k, &v))
        cli_report_set_name(r, k, v);
}

void
cli_report_set_fleet(CliReport *r, gboolean fleet)
{
    r->fleet = fleet;
}

void
cli_report_set_host(CliReport *r, const char *host_name)
{
    g_free(r->host_name);
    r->host_name = g_strdup(host_name);
}

/* Each series' name: the one its target goes by, unless another target
 * goes by it too (then both are named by their identities). */
static void
report_settle_names(CliReport *r)
{
    g_autoptr(GHashTable) owner = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) shared = g_hash_table_new(g_str_hash, g_str_equal);

    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        const char *name = g_hash_table_lookup(r->names, s->target);
        const char *had = name ? g_hash_table_lookup(owner, name) : NULL;

        if (had && !g_str_equal(had, s->target))
            g_hash_table_add(shared, (gpointer)name);
        else if (name)
            g_hash_table_insert(owner, (gpointer)name, s->target);
    }
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        const char *name = g_hash_table_lookup(r->names, s->target);

        s->name = name && !g_hash_table_contains(shared, name) ? name : s->target;
    }
}

void
cli_report_fit_range(CliReport *r, gboolean fit)
{
    r->fit_range = fit;
}

void
cli_report_free(CliReport *r)
{
    if (!r)
        return;
    g_hash_table_unref(r->by_key);
    g_ptr_array_unref(r->series);
    g_ptr_array_unref(r->notes);
    g_array_unref(r->host);
    g_hash_table_unref(r->names);
    g_free(r->host_name);
    g_free(r->hs.busy);
    g_free(r->hs.psi);
    g_free(r->source);
    g_free(r);
}

static ReportSeries *
series_get(CliReport *r, const char *target, const char *iothread)
{
    g_autofree char *key = g_strdup_printf("%s\x1f%s", target, iothread);
    ReportSeries *s = g_hash_table_lookup(r->by_key, key);

    if (s)
        return s;
    s = g_new0(ReportSeries, 1);
    s->target = g_strdup(target);
    s->iothread = g_strdup(iothread);
    s->points = g_array_new(FALSE, FALSE, sizeof(ReportPoint));
    s->decisions = g_array_new(FALSE, FALSE, sizeof(ReportDecision));
    g_array_set_clear_func(s->decisions, decision_clear);
    s->last_probe_ms = G_MININT64;
    g_hash_table_insert(r->by_key, g_steal_pointer(&key), s);
    g_ptr_array_add(r->series, s);
    return s;
}

static gboolean
report_in_range(const CliReport *r, gint64 ts_ms)
{
    return ts_ms >= r->from_ms && ts_ms < r->to_ms;
}

static ReportPoint
point_compact(const CliPoint *p)
{
    return (ReportPoint){ p->ts_ms, (float)p->iops, (float)p->lat_us, (float)p->cpu_pct,
                          p->poll_max_ns < 0 || p->poll_max_ns > G_MAXINT32 ? -1
                          : (gint32)p->poll_max_ns };
}

void
cli_report_add_point(CliReport *r, const CliPoint *p)
{
    ReportSeries *s;
    ReportPoint rp;

    if (!p->target || !p->iothread || !report_in_range(r, p->ts_ms))
        return;
    s = series_get(r, p->target, p->iothread);
    rp = point_compact(p);
    g_array_append_val(s->points, rp);
    s->n_points++;
    r->n_points++;
}

void
cli_report_set_gain(CliReport *r, const char *target, const char *iothread,
                    const PolicyGainTotals *increase)
{
    ReportSeries *s = series_get(r, target, iothread);

    s->gain = *increase;
    s->gain_given = TRUE;
}

void
cli_report_add_warmup(CliReport *r, const CliPoint *p)
{
    ReportSeries *s;

    g_autofree char *key = NULL;

    if (!p->target || !p->iothread || p->ts_ms >= r->from_ms ||
        p->ts_ms < r->from_ms - POLICY_GAIN_PAIR_MAX_AGE_MS)
        return;
    /* Only for a series the range has: one that ended before it is not
     * on the page. */
    key = g_strdup_printf("%s\x1f%s", p->target, p->iothread);
    if (!(s = g_hash_table_lookup(r->by_key, key)))
        return;
    if (!s->gain_warm)
        s->gain_warm = policy_gain_new();
    policy_gain_tick(s->gain_warm, &(PolicyGainTick){ p->ts_ms, p->iops, p->lat_us, p->cpu_pct,
                                                      p->poll_max_ns < 0 ? -1
                                                      : p->poll_max_ns });
}

void
cli_report_add_tick(CliReport *r, const CliPoint *p)
{
    ReportSeries *s;
    ReportPoint rp;

    if (!p->target || !p->iothread || !report_in_range(r, p->ts_ms) || p->poll_max_ns < 0)
        return;
    s = series_get(r, p->target, p->iothread);
    if (!s->ticks)
        s->ticks = g_array_new(FALSE, FALSE, sizeof(ReportPoint));
    rp = point_compact(p);
    g_array_append_val(s->ticks, rp);
    /* Rows arrive oldest first: keep the newest CLI_REPORT_MAX_TICKS,
     * trimming in halves so that each row is moved at most once. */
    if (s->ticks->len >= 2 * CLI_REPORT_MAX_TICKS) {
        g_array_remove_range(s->ticks, 0, s->ticks->len - CLI_REPORT_MAX_TICKS);
        s->ticks_cut = TRUE;
    }
}

void
cli_report_add_host(CliReport *r, const CliHostPoint *p)
{
    ReportHost h = { p->ts_ms, (float)p->cpu_busy_pct, (float)p->cpus,
                     (float)p->psi_cpu_some_pct };

    if (!report_in_range(r, p->ts_ms) || (isnan(h.busy_pct) && isnan(h.psi_pct)))
        return;
    g_array_append_val(r->host, h);
    /* As the per-tick rows: the newest CLI_REPORT_MAX_TICKS, trimmed in halves. */
    if (r->host->len >= 2 * CLI_REPORT_MAX_TICKS) {
        g_array_remove_range(r->host, 0, r->host->len - CLI_REPORT_MAX_TICKS);
        r->host_cut = TRUE;
    }
}

gboolean
cli_report_data_span(const CliReport *r, gint64 *first_ms, gint64 *last_ms)
{
    gboolean any = FALSE;

    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);

        for (guint k = 0; k < s->points->len; k++) {
            gint64 t = g_array_index(s->points, ReportPoint, k).ts_ms;

            if (!any || t < *first_ms)
                *first_ms = t;
            if (!any || t > *last_ms)
                *last_ms = t;
            any = TRUE;
        }
    }
    return any;
}

void
cli_report_add_decision(CliReport *r, const CliDecision *d)
{
    ReportSeries *s;
    ReportDecision rd;

    if (!d->target || !d->iothread || !report_in_range(r, d->ts_ms))
        return;
    s = series_get(r, d->target, d->iothread);
    s->decisions_total++;
    r->n_decisions++;
    {
        gboolean probe = !g_strcmp0(d->cause, "probe");

        if (probe && (s->last_probe_ms == G_MININT64 ||
                      d->ts_ms - s->last_probe_ms > REPORT_EXPLORATION_GAP_MS))
            s->explorations++;
        s->last_probe_ms = probe ? d->ts_ms : G_MININT64;
    }
    if (s->decisions->len >= REPORT_MAX_DECISIONS) {
        /* Keep the newest: drop the oldest. */
        g_array_remove_index(s->decisions, 0);
    }
    rd = (ReportDecision){ d->ts_ms, d->applied, d->old_max_ns, d->new_max_ns,
                           g_strdup(d->policy), g_strdup(d->reason) };
    g_array_append_val(s->decisions, rd);
}

void
cli_report_add_note(CliReport *r, const char *note)
{
    g_ptr_array_add(r->notes, g_strdup(note));
}

guint64
cli_report_n_points(const CliReport *r)
{
    return r->n_points;
}

static int
cmp_point(gconstpointer a, gconstpointer b)
{
    const ReportPoint *x = a, *y = b;

    return (x->ts_ms > y->ts_ms) - (x->ts_ms < y->ts_ms);
}

static int
cmp_gint64(const void *a, const void *b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

    return (x > y) - (x < y);
}

/* The median gap between a series' consecutive points: the tick interval
 * for raw rows, 60 s or 3600 s for rollups. */
static gint64
points_interval(GArray *points)
{
    guint n = points->len;
    g_autofree gint64 *gaps = NULL;
    guint k = 0;

    if (n < 2)
        return 0;
    gaps = g_new(gint64, n - 1);
    for (guint i = 1; i < n; i++) {
        gint64 g = g_array_index(points, ReportPoint, i).ts_ms -
                   g_array_index(points, ReportPoint, i - 1).ts_ms;

        if (g > 0)
            gaps[k++] = g;
    }
    if (k == 0)
        return 0;
    qsort(gaps, k, sizeof(gint64), cmp_gint64);
    return gaps[k / 2];
}

/*
 * Bucket sizes a reader can say out loud.  The smallest one at or above
 * both the data's own interval (a bucket with no point is a hole) and
 * span / REPORT_TARGET_BUCKETS (a 760-pixel chart shows about 3 pixels per
 * bucket at 240) is taken.
 */
#define REPORT_TARGET_BUCKETS 240

static gint64
bucket_step(gint64 span_ms, gint64 interval_ms)
{
    static const gint64 steps_s[] = {
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600,
        6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400,
    };
    gint64 want = MAX(interval_ms, span_ms / REPORT_TARGET_BUCKETS);

    for (gsize i = 0; i < G_N_ELEMENTS(steps_s); i++)
        if (steps_s[i] * 1000 >= want)
            return steps_s[i] * 1000;
    return steps_s[G_N_ELEMENTS(steps_s) - 1] * 1000;
}

static void
bucket_add(ReportBucket *b, const ReportPoint *p)
{
    if (!isnan(p->iops)) {
        b->iops_sum += p->iops;
        b->iops_n++;
    }
    if (!isnan(p->lat_us)) {
        /* A bucket's latency is per operation: weight by IOPS. */
        if (!isnan(p->iops) && p->iops > 0) {
            b->lat_wsum += (double)p->lat_us * p->iops;
            b->lat_w += p->iops;
        }
        b->lat_sum += p->lat_us;
        b->lat_n++;
    }
    if (!isnan(p->cpu_pct)) {
        b->cpu_sum += p->cpu_pct;
        b->cpu_n++;
    }
}

/* Which ticks polled, and the CPU with polling on and off. */
static void
bucket_add_setting(ReportBucket *b, const ReportPoint *p)
{
    if (p->max_ns < 0)
        return;
    b->known_n++;
    if (p->max_ns > 0)
        b->on_n++;
    if (isnan(p->cpu_pct))
        return;
    if (p->max_ns > 0) {
        b->cpu_on_sum += p->cpu_pct;
        b->cpu_on_n++;
    } else {
        b->cpu_off_sum += p->cpu_pct;
        b->cpu_off_n++;
    }
}

gboolean
report_bucket_index(const CliReport *r, gint64 ts_ms, guint *bi)
{
    if (ts_ms < r->from_ms || ts_ms >= r->to_ms)
        return FALSE;
    *bi = (guint)MIN((ts_ms - r->from_ms) / r->step_ms, (gint64)r->nb - 1);
    return TRUE;
}

static int
cmp_host(gconstpointer a, gconstpointer b)
{
    const ReportHost *x = a, *y = b;

    return (x->ts_ms > y->ts_ms) - (x->ts_ms < y->ts_ms);
}

/* The host's ticks in the page's range: how busy, how contended, and per
 * bucket for the chart. */
static void
report_settle_host(CliReport *r)
{
    ReportHostSummary *hs = &r->hs;
    guint n = r->host->len, saturated = 0;
    g_autofree double *busy = g_new(double, MAX(n, 1));
    g_autofree double *psi = g_new(double, MAX(n, 1));
    g_autofree double *cpus = g_new(double, MAX(n, 1));
    g_autofree double *bsum = g_new0(double, r->nb);
    g_autofree double *psum = g_new0(double, r->nb);
    g_autofree guint *bn = g_new0(guint, r->nb);
    g_autofree guint *pn = g_new0(guint, r->nb);

    g_free(hs->busy);
    g_free(hs->psi);
    *hs = (ReportHostSummary){ 0 };
    hs->busy = g_new(double, r->nb);
    hs->psi = g_new(double, r->nb);
    g_array_sort(r->host, cmp_host);
    if (r->host->len > CLI_REPORT_MAX_TICKS) {
        g_array_remove_range(r->host, 0, r->host->len - CLI_REPORT_MAX_TICKS);
        r->host_cut = TRUE;
    }
    n = r->host->len;
    for (guint i = 0; i < n; i++) {
        const ReportHost *h = &g_array_index(r->host, ReportHost, i);
        guint bi;

        busy[hs->n] = h->busy_pct;
        psi[hs->n] = h->psi_pct;
        cpus[hs->n] = h->cpus;
        if (!report_bucket_index(r, h->ts_ms, &bi))
            continue;
        if (!hs->n)
            hs->first_ms = h->ts_ms;
        hs->last_ms = h->ts_ms;
        hs->n++;
        saturated += h->busy_pct >= REPORT_HOST_BUSY_FULL || h->psi_pct >= REPORT_HOST_PSI_FULL;
        if (!isnan(h->busy_pct)) {
            bsum[bi] += h->busy_pct;
            bn[bi]++;
        }
        if (!isnan(h->psi_pct)) {
            psum[bi] += h->psi_pct;
            pn[bi]++;
        }
    }
    for (guint i = 0; i < r->nb; i++) {
        hs->busy[i] = bn[i] ? bsum[i] / bn[i] : NAN;
        hs->psi[i] = pn[i] ? psum[i] / pn[i] : NAN;
    }
    hs->cpus = report_percentile(cpus, hs->n, 50);
    hs->busy_mean = report_mean(busy, hs->n);
    hs->busy_p95 = report_percentile(busy, hs->n, 95);
    hs->busy_max = report_percentile(busy, hs->n, 100);
    hs->psi_mean = report_mean(psi, hs->n);
    hs->psi_p95 = report_percentile(psi, hs->n, 95);
    hs->saturated_share = hs->n ? (double)saturated / hs->n : NAN;
}

void
report_settle(CliReport *r)
{
    gint64 first = 0, last = 0, span;

    report_settle_names(r);
    r->interval_ms = r->tick_ms = 0;
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        gint64 iv;

        g_array_sort(s->points, cmp_point);
        iv = points_interval(s->points);
        if (iv > 0 && (r->interval_ms == 0 || iv < r->interval_ms))
            r->interval_ms = iv;
        if (s->ticks) {
            g_array_sort(s->ticks, cmp_point);
            if (s->ticks->len > CLI_REPORT_MAX_TICKS) {
                g_array_remove_range(s->ticks, 0, s->ticks->len - CLI_REPORT_MAX_TICKS);
                s->ticks_cut = TRUE;
            }
            iv = points_interval(s->ticks);
            if (iv > 0 && (r->tick_ms == 0 || iv < r->tick_ms))
                r->tick_ms = iv;
        }
    }
    if (r->tick_ms == 0)
        r->tick_ms = r->interval_ms;
    /* A history shorter than the range asked by default fills the page,
     * not a sliver at its right edge. */
    if (r->fit_range && cli_report_data_span(r, &first, &last)) {
        gint64 from = MAX(r->from_ms, first - MAX(r->interval_ms, 1000));
        gint64 to = MIN(r->to_ms, last + 1);

        if (from > r->from_ms || to < r->to_ms) {
            r->range_fitted = TRUE;
            r->from_ms = from;
            r->to_ms = MAX(to, from + 1000);
        }
    }
    span = r->to_ms - r->from_ms;
    r->step_ms = bucket_step(span, r->interval_ms);
    if (r->range_fitted) {
        /* Round outwards to whole buckets, so each holds a full step. */
        r->from_ms = r->from_ms / r->step_ms * r->step_ms;
        r->to_ms = (r->to_ms + r->step_ms - 1) / r->step_ms * r->step_ms;
        span = r->to_ms - r->from_ms;
    }
    r->nb = (guint)CLAMP((span + r->step_ms - 1) / r->step_ms, 1, CLI_REPORT_MAX_BUCKETS);
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);

        g_free(s->b);
        s->b = g_new0(ReportBucket, r->nb);
        for (guint k = 0; k < s->points->len; k++) {
            const ReportPoint *p = &g_array_index(s->points, ReportPoint, k);
            guint bi;

            if (!report_bucket_index(r, p->ts_ms, &bi))
                continue;
            bucket_add(&s->b[bi], p);
            if (!s->ticks)
                bucket_add_setting(&s->b[bi], p);
        }
        for (guint k = 0; s->ticks && k < s->ticks->len; k++) {
            const ReportPoint *p = &g_array_index(s->ticks, ReportPoint, k);
            guint bi;

            if (report_bucket_index(r, p->ts_ms, &bi))
                bucket_add_setting(&s->b[bi], p);
        }
        report_model_series(r, s);
    }
    report_settle_host(r);
}

double
report_bucket_iops(const ReportBucket *b)
{
    return b->iops_n ? b->iops_sum / b->iops_n : NAN;
}

double
report_bucket_lat(const ReportBucket *b)
{
    if (b->lat_w > 0)
        return b->lat_wsum / b->lat_w;
    return b->lat_n ? b->lat_sum / b->lat_n : NAN;
}

double
report_bucket_cpu(const ReportBucket *b)
{
    return b->cpu_n ? b->cpu_sum / b->cpu_n : NAN;
}

double
report_bucket_cpu_on(const ReportBucket *b)
{
    return b->cpu_on_n ? b->cpu_on_sum / b->cpu_on_n : NAN;
}

double
report_bucket_cpu_off(const ReportBucket *b)
{
    return b->cpu_off_n ? b->cpu_off_sum / b->cpu_off_n : NAN;
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double
report_percentile(const double *values, guint n, double p)
{
    g_autofree double *v = g_new(double, MAX(n, 1));
    guint k = 0;
    double rank;

    for (guint i = 0; i < n; i++)
        if (!isnan(values[i]))
            v[k++] = values[i];
    if (k == 0)
        return NAN;
    qsort(v, k, sizeof(double), cmp_double);
    /* Linear interpolation between closest ranks. */
    rank = p / 100.0 * (k - 1);
    if ((guint)rank + 1 >= k)
        return v[k - 1];
    return v[(guint)rank] + (rank - floor(rank)) * (v[(guint)rank + 1] - v[(guint)rank]);
}

double
report_mean(const double *values, guint n)
{
    double sum = 0;
    guint k = 0;

    for (guint i = 0; i < n; i++) {
        if (!isnan(values[i])) {
            sum += values[i];
            k++;
        }
    }
    return k ? sum / k : NAN;
}

static void
vm_free(gpointer p)
{
    ReportVm *vm = p;

    g_ptr_array_unref(vm->series);
    g_free(vm->iops);
    g_free(vm->cores);
    g_free(vm->lat);
    g_free(vm->poll_cores);
    g_free(vm);
}

static void
vm_sum(ReportVm *vm, guint nb)
{
    for (guint i = 0; i < nb; i++) {
        double iops = 0, cores = 0, lat_w = 0, lat_wsum = 0, lat_sum = 0, poll = 0;
        guint n_iops = 0, n_cpu = 0, n_lat = 0, n_poll = 0;

        for (guint s = 0; s < vm->series->len; s++) {
            const ReportSeries *rs = g_ptr_array_index(vm->series, s);
            const ReportBucket *b = &rs->b[i];
            double vi = report_bucket_iops(b), vl = report_bucket_lat(b);
            double vc = report_bucket_cpu(b), vp = rs->poll_cpu[i];

            if (!isnan(vi)) {
                iops += vi;
                n_iops++;
            }
            if (!isnan(vc)) {
                cores += vc / 100.0;
                n_cpu++;
            }
            if (!isnan(vp)) {
                poll += vp / 100.0;
                n_poll++;
            }
            if (!isnan(vl)) {
                lat_sum += vl;
                n_lat++;
                if (!isnan(vi) && vi > 0) {
                    lat_wsum += vl * vi;
                    lat_w += vi;
                }
            }
        }
        vm->iops[i] = n_iops ? iops : NAN;
        vm->cores[i] = n_cpu ? cores : NAN;
        vm->poll_cores[i] = n_poll ? poll : NAN;
        vm->lat[i] = lat_w > 0 ? lat_wsum / lat_w : n_lat ? lat_sum / n_lat : NAN;
    }
    vm->mean_iops = report_mean(vm->iops, nb);
    vm->mean_cores = report_mean(vm->cores, nb);
    vm->iops_p50 = report_percentile(vm->iops, nb, 50);
    vm->iops_p95 = report_percentile(vm->iops, nb, 95);
    vm->lat_p50 = report_percentile(vm->lat, nb, 50);
    vm->lat_p95 = report_percentile(vm->lat, nb, 95);
    vm->cores_p50 = report_percentile(vm->cores, nb, 50);
    vm->cores_p95 = report_percentile(vm->cores, nb, 95);
}

static int
cmp_series(gconstpointer a, gconstpointer b)
{
    const ReportSeries *x = *(ReportSeries *const *)a, *y = *(ReportSeries *const *)b;
    int c = g_strcmp0(x->name, y->name);

    if (!c)
        c = g_strcmp0(x->target, y->target);
    return c ? c : g_strcmp0(x->iothread, y->iothread);
}

GPtrArray *
report_vms_build(CliReport *r)
{
    GPtrArray *vms = g_ptr_array_new_with_free_func(vm_free);
    ReportVm *vm = NULL;

    g_ptr_array_sort(r->series, cmp_series);
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);

        if (!vm || !g_str_equal(((ReportSeries *)g_ptr_array_index(vm->series, 0))->target,
                                s->target)) {
            vm = g_new0(ReportVm, 1);
            vm->name = s->name;
            vm->series = g_ptr_array_new();
            vm->iops = g_new(double, r->nb);
            vm->cores = g_new(double, r->nb);
            vm->lat = g_new(double, r->nb);
            vm->poll_cores = g_new(double, r->nb);
            g_ptr_array_add(vms, vm);
        }
        g_ptr_array_add(vm->series, s);
        vm->decisions += s->decisions_total;
        vm->explorations += s->explorations;
    }
    for (guint i = 0; i < vms->len; i++) {
        vm = g_ptr_array_index(vms, i);
        vm_sum(vm, r->nb);
        vm->explorations_per_h = report_per_hour(r, vm->explorations);
    }
    return vms;
}

double
report_per_hour(const CliReport *r, guint n)
{
    return r->to_ms > r->from_ms ? n * 3600000.0 / (double)(r->to_ms - r->from_ms) : NAN;
}

void
cli_report_range(const CliReport *r, gint64 *from_ms, gint64 *to_ms)
{
    *from_ms = r->from_ms;
    *to_ms = r->to_ms;
}
