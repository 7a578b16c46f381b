/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-json: a stored row as the `history` reply's row (docs/CONTROL.md),
 * the one builder the daemon and polltunectl share, driven by the metric
 * table: a raw row's rates by metric_rate_value(), a rollup's statistics
 * decoded with each rate's rollup scale.
 */
#include <math.h>

#include "store-memory.h"
#include "store-private.h"

/* Three decimals are more than any of these figures can claim, and json-c
 * would otherwise print binary noise ("4.4779999999999998"). */
static void
json_num(json_object *o, const char *key, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    if (!isfinite(v))
        return;
    g_ascii_formatd(buf, sizeof(buf), "%.3f", v);
    json_object_object_add(o, key, json_object_new_double_s(v, buf));
}

static json_object *
json_stat(const StoreStat *s, double scale)
{
    json_object *o = json_object_new_object();

    if (s->min != METRIC_ABSENT) {
        json_num(o, "min", s->min * scale);
        json_num(o, "mean", s->mean * scale);
        json_num(o, "max", s->max * scale);
    }
    if (s->p95 != METRIC_ABSENT)
        json_num(o, "p95", s->p95 * scale);
    return o;
}

json_object *
store_host_row_to_json(const StoreHostRow *row)
{
    json_object *o = json_object_new_object();
    const StoreHostCpu *c = &row->cpu;

    json_object_object_add(o, "ts_ms", json_object_new_int64(row->ts_ms));
    if (c->busy_us != METRIC_ABSENT && c->total_us != METRIC_ABSENT && c->total_us > 0) {
        json_num(o, "cpu_busy_pct", 100.0 * c->busy_us / c->total_us);
        if (row->len_ns > 0)
            json_num(o, "cpus", c->total_us * 1000.0 / row->len_ns);
    }
    if (row->psi.cpu_some_us != METRIC_ABSENT && row->len_ns > 0)
        json_num(o, "psi_cpu_some_pct",
                 MIN(100.0, 100.0 * row->psi.cpu_some_us * 1000.0 / row->len_ns));
    return o;
}

const StoreStat *
store_row_stat(const StoreRow *row, MetricRate rate)
{
    const char *prefix = metric_rate_def(rate) ? metric_rate_def(rate)->rollup_prefix : NULL;

    if (!prefix)
        return NULL;
    if (g_str_equal(prefix, "iops"))
        return &row->iops;
    if (g_str_equal(prefix, "lat"))
        return &row->lat;
    if (g_str_equal(prefix, "cpu"))
        return &row->cpu;
    return NULL;
}

/* Values with a JSON key (a rollup has only the gauges it keeps): null
 * when unknown. */
static void
json_values(const StoreRow *row, json_object *o, gboolean rollup)
{
    for (int i = 0; i < METRIC_MAX; i++) {
        const char *key = metric_def(i)->json_key;
        gint64 v = row->sample.m.v[i];

        if (key && (!rollup || metric_def(i)->rollup))
            json_object_object_add(o, key, v == METRIC_ABSENT ? NULL : json_object_new_int64(v));
    }
}

json_object *
store_row_to_json(const StoreRow *row)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "ts_ms", json_object_new_int64(row->ts_ms));
    json_object_object_add(o, "target", json_object_new_string(row->target));
    json_object_object_add(o, "iothread", json_object_new_string(row->iothread));
    if (row->resolution == STORE_RES_RAW) {
        for (int r = 0; r < METRIC_RATE_MAX; r++) {
            double v;

            if (metric_rate_value(r, &row->sample.m, row->len_ns, &v))
                json_num(o, metric_rate_def(r)->json_key, v);
        }
        json_values(row, o, FALSE);
        return o;
    }
    json_object_object_add(o, "count", json_object_new_int64(row->count));
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        const StoreStat *st = store_row_stat(row, r);

        if (st)
            json_object_object_add(o, metric_rate_def(r)->json_key,
                                   json_stat(st, metric_rate_def(r)->rollup_scale));
    }
    json_values(row, o, TRUE);
    return o;
}

static json_object *
json_triple(gint64 max_ns, gint64 grow, gint64 shrink)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "poll-max-ns", json_object_new_int64(MAX(max_ns, 0)));
    json_object_object_add(o, "poll-grow", json_object_new_int64(MAX(grow, 0)));
    json_object_object_add(o, "poll-shrink", json_object_new_int64(MAX(shrink, 0)));
    return o;
}

static json_object *
json_time(gint64 ms)
{
    return ms == METRIC_ABSENT ? NULL : json_object_new_int64(ms);
}

json_object *
store_memory_row_to_json(const PtMemoryRow *r, gint64 ttl_ms, gint64 now_ms)
{
    json_object *o = json_object_new_object();
    gboolean winner = r->have_winner != 0;
    /* A confirmation time far in the future must not wrap. */
    gboolean expired = winner && r->confirmed_ms <= G_MAXINT64 - ttl_ms &&
                       r->confirmed_ms + ttl_ms <= now_ms;

    json_object_object_add(o, "signature", json_object_new_string(r->signature));
    json_object_object_add(o, "winner", winner ? json_triple(r->winner_max_ns, r->winner_grow,
                                                             r->winner_shrink) : NULL);
    json_object_object_add(o, "score", NULL);
    json_object_object_add(o, "anchor", winner ? json_triple(r->anchor_max_ns, r->anchor_grow,
                                                             r->anchor_shrink) : NULL);
    json_object_object_add(o, "anchor_score", NULL);
    /* Replace the nulls in place, keeping the keys' order. */
    if (winner) {
        json_num(o, "score", r->winner_score);
        json_num(o, "anchor_score", r->anchor_score);
    }
    json_object_object_add(o, "learned_ms", json_time(r->learned_ms));
    json_object_object_add(o, "confirmed_ms", json_time(r->confirmed_ms));
    json_object_object_add(o, "seen_ms", json_time(r->seen_ms));
    json_object_object_add(o, "expired", json_object_new_boolean(expired));
    json_object_object_add(o, "n_confirmed", json_object_new_int64(r->n_confirmed));
    json_object_object_add(o, "n_explorations", json_object_new_int64(r->n_explorations));
    json_object_object_add(o, "n_default_wins", json_object_new_int64(r->n_default_wins));
    json_object_object_add(o, "contended", json_object_new_boolean(r->contended > 0));
    return o;
}
