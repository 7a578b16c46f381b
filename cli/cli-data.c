/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-data: the read-only database open and the row conversions.
 */
#include <math.h>

#include "cli-client.h"
#include "cli-data.h"
#include "qmp-json.h"

struct CliDb {
    StoreDb *store;
};

void
cli_db_close(CliDb *db)
{
    if (!db)
        return;
    store_db_close(db->store);
    g_free(db);
}

StoreDb *
cli_db_store(CliDb *db)
{
    return db->store;
}

CliDb *
cli_db_open(const char *path, GError **error)
{
    g_autoptr(CliDb) db = g_new0(CliDb, 1);
    g_autoptr(GError) local = NULL;

    /* The messages name the file and the cause already. */
    if (!(db->store = store_db_open_readonly(path, &local))) {
        g_set_error_literal(error, CLI_ERROR, CLI_ERROR_FAILED, local->message);
        return NULL;
    }
    return g_steal_pointer(&db);
}

static gboolean
have(gint64 v)
{
    return v != STORE_NULL;
}

static void
put_double(json_object *o, const char *key, double v)
{
    if (!isnan(v) && !isinf(v))
        json_object_object_add(o, key, json_object_new_double(v));
}

static gint64
sum3(gint64 a, gint64 b, gint64 c)
{
    return have(a) && have(b) && have(c) ? a + b + c : STORE_NULL;
}

/* The rates of a raw row, named as CONTROL.md's metrics object. */
static void
raw_metrics(const StoreRow *r, json_object *o)
{
    const StoreSample *s = &r->sample;
    const StoreIo *io = &s->io;
    double secs = r->len_ns / 1e9;
    gint64 ops = sum3(io->rd_ops, io->wr_ops, io->flush_ops);
    gint64 time_ns = sum3(io->rd_time_ns, io->wr_time_ns, io->flush_time_ns);

    if (secs <= 0)
        return;
    if (have(ops)) {
        put_double(o, "iops", ops / secs);
        put_double(o, "rd_iops", io->rd_ops / secs);
        put_double(o, "wr_iops", io->wr_ops / secs);
        put_double(o, "flush_iops", io->flush_ops / secs);
    }
    if (have(io->rd_bytes) && have(io->wr_bytes))
        put_double(o, "mbps", (io->rd_bytes + io->wr_bytes) / secs / 1e6);
    if (have(ops) && have(time_ns)) {
        if (ops > 0)
            put_double(o, "lat_us", time_ns / (double)ops / 1000.0);
        put_double(o, "queue_depth", time_ns / (double)r->len_ns);
    }
    if (have(s->cpu_ns))
        put_double(o, "cpu_pct", s->cpu_ns * 100.0 / r->len_ns);
    if (have(s->ctx_vol)) {
        put_double(o, "blocks_per_s", s->ctx_vol / secs);
        if (have(ops))
            put_double(o, "blocks_per_op", ops > 0 ? s->ctx_vol / (double)ops : 0.0);
    }
    if (have(s->runq_wait_ns))
        put_double(o, "run_delay_pct", s->runq_wait_ns * 100.0 / r->len_ns);
    if (have(s->kvm_exits)) {
        put_double(o, "exits_per_s", s->kvm_exits / secs);
        if (have(ops))
            put_double(o, "exits_per_op", ops > 0 ? s->kvm_exits / (double)ops : 0.0);
    }
}

static json_object *
stat_json(const StoreStat *st, double scale)
{
    json_object *o = json_object_new_object();
    const gint64 v[] = { st->min, st->mean, st->max, st->p95 };
    const char *const k[] = { "min", "mean", "max", "p95" };

    for (gsize i = 0; i < G_N_ELEMENTS(v); i++)
        if (have(v[i]))
            put_double(o, k[i], v[i] * scale);
    return o;
}

json_object *
cli_row_to_json(const StoreRow *r)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "ts_ms", json_object_new_int64(r->ts_ms));
    json_object_object_add(o, "target", json_object_new_string(r->target));
    json_object_object_add(o, "iothread", json_object_new_string(r->iothread));
    if (r->resolution == STORE_RES_RAW) {
        const StoreSample *s = &r->sample;

        raw_metrics(r, o);
        /* As the daemon's history rows: null when unknown. */
        json_object_object_add(o, "poll-max-ns", have(s->poll_max_ns) ?
                               json_object_new_int64(s->poll_max_ns) : NULL);
        return o;
    }
    /* Rollups keep milli-ops/s, ns per op and ppm of a core. */
    json_object_object_add(o, "count", json_object_new_int64(r->count));
    json_object_object_add(o, "iops", stat_json(&r->iops, 1e-3));
    json_object_object_add(o, "lat_us", stat_json(&r->lat, 1e-3));
    json_object_object_add(o, "cpu_pct", stat_json(&r->cpu, 1e-4));
    return o;
}

static double
stat_mean(gint64 mean, double scale)
{
    return have(mean) ? mean * scale : NAN;
}

void
cli_point_from_row(const StoreRow *r, CliPoint *p)
{
    *p = (CliPoint){ .ts_ms = r->ts_ms, .target = r->target, .iothread = r->iothread,
                     .iops = NAN, .lat_us = NAN, .cpu_pct = NAN, .poll_max_ns = -1 };
    if (r->resolution == STORE_RES_RAW) {
        g_autoptr(json_object) o = json_object_new_object();
        json_object *v;

        /* One derivation for both paths: the JSON one above. */
        raw_metrics(r, o);
        if (json_object_object_get_ex(o, "iops", &v))
            p->iops = json_object_get_double(v);
        if (json_object_object_get_ex(o, "lat_us", &v))
            p->lat_us = json_object_get_double(v);
        if (json_object_object_get_ex(o, "cpu_pct", &v))
            p->cpu_pct = json_object_get_double(v);
        if (have(r->sample.poll_max_ns))
            p->poll_max_ns = r->sample.poll_max_ns;
        return;
    }
    p->iops = stat_mean(r->iops.mean, 1e-3);
    p->lat_us = stat_mean(r->lat.mean, 1e-3);
    p->cpu_pct = stat_mean(r->cpu.mean, 1e-4);
}

/* A metric that is a number (raw rows) or {"mean": ...} (rollups). */
static double
json_metric(json_object *row, const char *key)
{
    json_object *v;

    if (!json_object_object_get_ex(row, key, &v))
        return NAN;
    if (json_object_is_type(v, json_type_object) && !json_object_object_get_ex(v, "mean", &v))
        return NAN;
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return NAN;
    return json_object_get_double(v);
}

gboolean
cli_point_from_json(json_object *row, CliPoint *p)
{
    gint64 max_ns;

    *p = (CliPoint){ .poll_max_ns = -1 };
    if (!qmp_json_get_int(row, "ts_ms", &p->ts_ms) ||
        !(p->target = qmp_json_get_string(row, "target")) ||
        !(p->iothread = qmp_json_get_string(row, "iothread")))
        return FALSE;
    p->iops = json_metric(row, "iops");
    p->lat_us = json_metric(row, "lat_us");
    p->cpu_pct = json_metric(row, "cpu_pct");
    if (qmp_json_get_int(row, "poll-max-ns", &max_ns))
        p->poll_max_ns = max_ns;
    return TRUE;
}

void
cli_decision_from_row(const StoreDecisionRow *r, CliDecision *d)
{
    *d = (CliDecision){
        .ts_ms = r->ts_ms, .target = r->target, .iothread = r->iothread,
        .policy = r->policy, .reason = r->reason, .applied = r->applied,
        .old_max_ns = have(r->old_triple.poll_max_ns) ? r->old_triple.poll_max_ns : -1,
        .new_max_ns = have(r->new_triple.poll_max_ns) ? r->new_triple.poll_max_ns : -1,
    };
}

gboolean
cli_decision_from_json(json_object *line, CliDecision *d)
{
    g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
    g_autoptr(GDateTime) t = NULL;
    const char *when = qmp_json_get_string(line, "time");
    gint64 applied = 0;

    *d = (CliDecision){ .old_max_ns = -1, .new_max_ns = -1 };
    if (!when || !(t = g_date_time_new_from_iso8601(when, utc)))
        return FALSE;
    d->ts_ms = g_date_time_to_unix(t) * 1000 + g_date_time_get_microsecond(t) / 1000;
    d->target = qmp_json_get_string(line, "target");
    d->iothread = qmp_json_get_string(line, "iothread");
    d->policy = qmp_json_get_string(line, "policy");
    d->reason = qmp_json_get_string(line, "reason");
    qmp_json_get_int(line, "old_poll_max_ns", &d->old_max_ns);
    qmp_json_get_int(line, "new_poll_max_ns", &d->new_max_ns);
    qmp_json_get_int(line, "applied", &applied);
    d->applied = applied != 0;
    return d->target && d->iothread;
}

gboolean
cli_resolution_parse(const char *text, StoreResolution *out, GError **error)
{
    StoreResolution r = store_resolution_from_string(text);

    if (r == STORE_RESOLUTION_INVALID) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE,
                    "--resolution %s: expected raw, 1m or 1h", text);
        return FALSE;
    }
    *out = r;
    return TRUE;
}

StoreResolution
cli_resolution_for_span(gint64 span_ms)
{
    if (span_ms <= 3600 * 1000)
        return STORE_RES_RAW;
    if (span_ms <= 6 * 86400 * (gint64)1000)
        return STORE_RES_1M;
    return STORE_RES_1H;
}
