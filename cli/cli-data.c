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

char *
cli_db_target_resolve(CliDb *db, const char *db_path, const char *vm, GError **error)
{
    g_autoptr(GPtrArray) named = store_target_lookup(db->store, vm, error);
    g_autofree char *list = NULL;

    if (!named)
        return NULL;
    if (named->len == 1)
        return g_strdup(named->pdata[0]);
    if (named->len == 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: no such target in %s", vm, db_path);
        return NULL;
    }
    g_ptr_array_add(named, NULL);
    list = g_strjoinv(", ", (char **)named->pdata);
    g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: the name of %u targets in %s: %s;"
                " name one by its identity", vm, named->len - 1, db_path, list);
    return NULL;
}

GHashTable *
cli_db_target_names(CliDb *db, GError **error)
{
    g_autoptr(GPtrArray) all = store_target_names(db->store, error);
    g_autoptr(GHashTable) uses = g_hash_table_new(g_str_hash, g_str_equal);
    GHashTable *shown;

    if (!all)
        return NULL;
    /* A name is shared when two targets go by it, or one goes by another's
     * identity: either way it names no one target. */
    for (guint i = 0; i < all->len; i++) {
        const StoreTargetName *n = all->pdata[i];
        const char *keys[] = { n->target, n->name };

        for (guint k = 0; k < G_N_ELEMENTS(keys); k++)
            if (keys[k] && (k == 0 || g_strcmp0(n->name, n->target)))
                g_hash_table_insert(uses, (char *)keys[k],
                                    GUINT_TO_POINTER(GPOINTER_TO_UINT(
                                        g_hash_table_lookup(uses, keys[k])) + 1));
    }
    shown = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    for (guint i = 0; i < all->len; i++) {
        const StoreTargetName *n = all->pdata[i];
        gboolean own = n->name && GPOINTER_TO_UINT(g_hash_table_lookup(uses, n->name)) == 1;

        g_hash_table_insert(shown, g_strdup(n->target), g_strdup(own ? n->name : n->target));
    }
    return shown;
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
    return v != METRIC_ABSENT;
}

json_object *
cli_row_to_json(const StoreRow *r)
{
    return store_row_to_json(r);
}

/* A rollup's mean of @rate in the rate's unit, or NAN. */
static double
stat_mean(const StoreRow *r, MetricRate rate)
{
    const StoreStat *st = store_row_stat(r, rate);

    return st && have(st->mean) ? st->mean * metric_rate_def(rate)->rollup_scale : NAN;
}

void
cli_point_from_row(const StoreRow *r, CliPoint *p)
{
    *p = (CliPoint){ .ts_ms = r->ts_ms, .target = r->target, .iothread = r->iothread,
                     .iops = NAN, .lat_us = NAN, .cpu_pct = NAN, .poll_max_ns = -1 };
    /* Raw: as read; rollups: the value in force for most of the bucket. */
    if (have(r->sample.m.v[METRIC_POLL_MAX_NS]))
        p->poll_max_ns = r->sample.m.v[METRIC_POLL_MAX_NS];
    if (r->resolution == STORE_RES_RAW) {
        /* One derivation for every path: the metric table's. */
        if (!metric_rate_value(METRIC_RATE_IOPS, &r->sample.m, r->len_ns, &p->iops))
            p->iops = NAN;
        if (!metric_rate_value(METRIC_RATE_LAT_US, &r->sample.m, r->len_ns,
                               &p->lat_us))
            p->lat_us = NAN;
        if (!metric_rate_value(METRIC_RATE_CPU_PCT, &r->sample.m, r->len_ns,
                               &p->cpu_pct))
            p->cpu_pct = NAN;
        return;
    }
    p->iops = stat_mean(r, METRIC_RATE_IOPS);
    p->lat_us = stat_mean(r, METRIC_RATE_LAT_US);
    p->cpu_pct = stat_mean(r, METRIC_RATE_CPU_PCT);
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

gboolean
cli_host_point_from_json(json_object *row, CliHostPoint *p)
{
    *p = (CliHostPoint){ .cpu_busy_pct = json_metric(row, "cpu_busy_pct"),
                         .cpus = json_metric(row, "cpus"),
                         .psi_cpu_some_pct = json_metric(row, "psi_cpu_some_pct") };
    return qmp_json_get_int(row, "ts_ms", &p->ts_ms);
}

void
cli_decision_from_row(const StoreDecisionRow *r, CliDecision *d)
{
    *d = (CliDecision){
        .ts_ms = r->ts_ms, .target = r->target, .iothread = r->iothread,
        .policy = r->policy, .reason = r->reason, .cause = r->cause, .applied = r->applied,
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
    d->cause = qmp_json_get_string(line, "cause");
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
