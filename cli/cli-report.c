/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report: collecting the report's data into per-iothread buckets, and
 * the per-VM figures derived from them.
 */
#include <math.h>
#include <stdlib.h>

#include "cli-report-private.h"

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
    g_array_unref(s->decisions);
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
    r->nb = CLI_REPORT_MAX_BUCKETS;
    if (resolution != STORE_RES_RAW) {
        gint64 step = resolution == STORE_RES_1M ? 60000 : 3600000;

        r->nb = (guint)CLAMP((r->to_ms - r->from_ms) / step, 1, CLI_REPORT_MAX_BUCKETS);
    }
    r->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    r->series = g_ptr_array_new_with_free_func(series_free);
    r->notes = g_ptr_array_new_with_free_func(g_free);
    return r;
}

void
cli_report_free(CliReport *r)
{
    if (!r)
        return;
    g_hash_table_unref(r->by_key);
    g_ptr_array_unref(r->series);
    g_ptr_array_unref(r->notes);
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
    s->b = g_new0(ReportBucket, r->nb);
    s->decisions = g_array_new(FALSE, FALSE, sizeof(ReportDecision));
    g_array_set_clear_func(s->decisions, decision_clear);
    g_hash_table_insert(r->by_key, g_steal_pointer(&key), s);
    g_ptr_array_add(r->series, s);
    return s;
}

static gboolean
report_bucket_of(const CliReport *r, gint64 ts_ms, guint *i)
{
    if (ts_ms < r->from_ms || ts_ms >= r->to_ms)
        return FALSE;
    /* 128-bit-free: the span is at most a few years of milliseconds. */
    *i = (guint)((double)(ts_ms - r->from_ms) / (double)(r->to_ms - r->from_ms) * r->nb);
    *i = MIN(*i, r->nb - 1);
    return TRUE;
}

void
cli_report_add_point(CliReport *r, const CliPoint *p)
{
    ReportSeries *s;
    ReportBucket *b;
    guint i;

    if (!p->target || !p->iothread || !report_bucket_of(r, p->ts_ms, &i))
        return;
    s = series_get(r, p->target, p->iothread);
    b = &s->b[i];
    s->n_points++;
    r->n_points++;
    if (!isnan(p->iops)) {
        b->iops_sum += p->iops;
        b->iops_n++;
    }
    if (!isnan(p->lat_us)) {
        /* A bucket's latency is per operation: weight by IOPS. */
        if (!isnan(p->iops) && p->iops > 0) {
            b->lat_wsum += p->lat_us * p->iops;
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

void
cli_report_add_decision(CliReport *r, const CliDecision *d)
{
    ReportSeries *s;
    ReportDecision rd;
    guint i;

    if (!d->target || !d->iothread || !report_bucket_of(r, d->ts_ms, &i))
        return;
    s = series_get(r, d->target, d->iothread);
    s->decisions_total++;
    r->n_decisions++;
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
    g_free(vm);
}

static void
vm_sum(ReportVm *vm, guint nb)
{
    for (guint i = 0; i < nb; i++) {
        double iops = 0, cores = 0, lat_w = 0, lat_wsum = 0, lat_sum = 0;
        guint n_iops = 0, n_cpu = 0, n_lat = 0;

        for (guint s = 0; s < vm->series->len; s++) {
            const ReportBucket *b = &((ReportSeries *)g_ptr_array_index(vm->series, s))->b[i];
            double vi = report_bucket_iops(b), vl = report_bucket_lat(b);
            double vc = report_bucket_cpu(b);

            if (!isnan(vi)) {
                iops += vi;
                n_iops++;
            }
            if (!isnan(vc)) {
                cores += vc / 100.0;
                n_cpu++;
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
    int c = g_strcmp0(x->target, y->target);

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

        if (!vm || !g_str_equal(vm->name, s->target)) {
            vm = g_new0(ReportVm, 1);
            vm->name = s->target;
            vm->series = g_ptr_array_new();
            vm->iops = g_new(double, r->nb);
            vm->cores = g_new(double, r->nb);
            vm->lat = g_new(double, r->nb);
            g_ptr_array_add(vms, vm);
        }
        g_ptr_array_add(vm->series, s);
        vm->decisions += s->decisions_total;
    }
    for (guint i = 0; i < vms->len; i++)
        vm_sum(g_ptr_array_index(vms, i), r->nb);
    return vms;
}
