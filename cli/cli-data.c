/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-data: the read-only database open and the row conversions.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include "cli-client.h"
#include "cli-data.h"
#include "qmp-json.h"

struct CliDb {
    StoreDb *store;
    char *dir;                  /* the snapshot's private folder */
    char *copy;
    char *paths[6];             /* copy, -wal, -shm, -journal, dir, NULL */
};

void
cli_db_close(CliDb *db)
{
    if (!db)
        return;
    store_db_close(db->store);
    for (int i = 0; i < 4 && db->paths[i]; i++)
        g_unlink(db->paths[i]);
    if (db->dir)
        g_rmdir(db->dir);
    for (int i = 0; i < 4; i++)
        g_free(db->paths[i]);
    g_free(db->copy);
    g_free(db->dir);
    g_free(db);
}

const char *const *
cli_db_snapshot_paths(CliDb *db)
{
    return (const char *const *)db->paths;
}

StoreDb *
cli_db_store(CliDb *db)
{
    return db->store;
}

static gboolean
sql_failed(const char *path, sqlite3 *sql, int rc, const char *what, GError **error)
{
    g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: %s: %s", path, what,
                sql ? sqlite3_errmsg(sql) : sqlite3_errstr(rc));
    return FALSE;
}

/*
 * Opens @path without writing anything next to it.  A database with no
 * -wal file was closed cleanly and is read as immutable (no -shm either);
 * otherwise polltuned (or a crashed one) has it open and its -wal and -shm
 * exist already.
 */
static sqlite3 *
source_open(const char *path, GError **error)
{
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *escaped = g_uri_escape_string(path, "/", FALSE);
    g_autofree char *uri = g_strdup_printf("file:%s?mode=ro%s", escaped,
                                           g_file_test(wal, G_FILE_TEST_EXISTS) ? ""
                                           : "&immutable=1");
    sqlite3 *sql = NULL;
    int rc = sqlite3_open_v2(uri, &sql, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL);

    if (rc != SQLITE_OK) {
        sql_failed(path, sql, rc, "open", error);
        sqlite3_close(sql);
        return NULL;
    }
    sqlite3_busy_timeout(sql, 2000);
    return sql;
}

static gboolean
source_check(const char *path, sqlite3 *sql, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL), version = -1;

    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return sql_failed(path, sql, rc, "cannot read it as a database", error);
    if (version == 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED,
                    "%s: not a polltune history database (no schema)", path);
        return FALSE;
    }
    if (version > store_schema_version()) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: written by a newer polltune "
                    "(schema %d; this polltunectl reads up to %d)", path, version,
                    store_schema_version());
        return FALSE;
    }
    return TRUE;
}

static gboolean
snapshot(const char *path, sqlite3 *src, const char *copy, GError **error)
{
    sqlite3 *dst = NULL;
    sqlite3_backup *b;
    int rc = sqlite3_open_v2(copy, &dst, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL);

    if (rc != SQLITE_OK) {
        sql_failed(copy, dst, rc, "create snapshot", error);
        sqlite3_close(dst);
        return FALSE;
    }
    /* One step copies every page under one read transaction: consistent. */
    b = sqlite3_backup_init(dst, "main", src, "main");
    rc = b ? sqlite3_backup_step(b, -1) : sqlite3_errcode(dst);
    if (b)
        sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        sql_failed(path, src, rc, "read", error);
        sqlite3_close(dst);
        return FALSE;
    }
    sqlite3_close(dst);
    return TRUE;
}

CliDb *
cli_db_open(const char *path, GError **error)
{
    g_autoptr(CliDb) db = g_new0(CliDb, 1);
    g_autoptr(GError) local = NULL;
    g_autofree char *notice = NULL;
    struct stat sb;
    sqlite3 *src;
    gboolean ok;

    if (stat(path, &sb) != 0) {
        int e = errno;

        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: %s", path, g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: not a regular file", path);
        return NULL;
    }
    if (!(src = source_open(path, error)))
        return NULL;
    if (!(db->dir = g_dir_make_tmp("polltunectl-XXXXXX", &local))) {
        sqlite3_close(src);
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "snapshot of %s: %s", path,
                    local->message);
        return NULL;
    }
    db->copy = g_build_filename(db->dir, "history.db", NULL);
    db->paths[0] = g_strdup(db->copy);
    db->paths[1] = g_strconcat(db->copy, "-wal", NULL);
    db->paths[2] = g_strconcat(db->copy, "-shm", NULL);
    db->paths[3] = g_strconcat(db->copy, "-journal", NULL);
    db->paths[4] = db->dir;
    ok = source_check(path, src, error) && snapshot(path, src, db->copy, error);
    sqlite3_close(src);
    if (!ok)
        return NULL;
    /* The snapshot is ours: store/ may migrate it; it must not "repair" it. */
    if (!(db->store = store_db_open(db->copy, NULL, &local))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: %s", path, local->message);
        return NULL;
    }
    if ((notice = store_db_take_notice(db->store))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: unusable: %s", path, notice);
        return NULL;
    }
    return g_steal_pointer(&db);
}

static gboolean
have(gint64 v)
{
    return v != STORE_NULL;
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
    if (have(r->sample.poll_max_ns))
        p->poll_max_ns = r->sample.poll_max_ns;
    if (r->resolution == STORE_RES_RAW) {
        /* One derivation for every path: the metric table's. */
        if (!metric_rate_value(METRIC_RATE_IOPS, r->sample.m, STORE_NULL, r->len_ns, &p->iops))
            p->iops = NAN;
        if (!metric_rate_value(METRIC_RATE_LAT_US, r->sample.m, STORE_NULL, r->len_ns,
                               &p->lat_us))
            p->lat_us = NAN;
        if (!metric_rate_value(METRIC_RATE_CPU_PCT, r->sample.m, STORE_NULL, r->len_ns,
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
