/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-query: cursors over samples, rollups and decisions.
 *
 * A cursor holds one sqlite statement and the id -> name map of the
 * iothreads its rows name, each read at its first row (at most one entry
 * per iothread ever seen), so reading any number of rows takes constant
 * memory, and a cursor over one iothread reads one name, not the host's:
 * the daemon opens one per new iothread, 4096 of them on a large host.  Raw ranges are turned into a range of tick ids
 * first, so the scan walks ticks by primary key and, for each, the range
 * of sample keys of that tick, without a sort.
 */
#include "store-private.h"

typedef enum {
    CURSOR_RAW,
    CURSOR_ROLLUP,
    CURSOR_DECISIONS,
    CURSOR_HOST,
} CursorKind;

typedef struct {
    char *target;
    char *iothread;
} IothreadName;

struct StoreCursor {
    StoreDb *db;
    CursorKind kind;
    sqlite3_stmt *st;
    sqlite3_stmt *name_st;      /* one iothread's names, by id */
    GHashTable *names;          /* gint64 id -> IothreadName */
    StoreRow row;
    StoreDecisionRow drow;
    StoreHostRow hrow;
};

/* Then the metric columns, from store_sample_columns_sql("s."). */
#define SAMPLE_COLUMNS "t.ts, t.len_ns, s.key & " STORE_KEY_MASK_SQL ", "

static void
iothread_name_free(gpointer p)
{
    IothreadName *n = p;

    g_free(n->target);
    g_free(n->iothread);
    g_free(n);
}

void
store_cursor_free(StoreCursor *cur)
{
    if (!cur)
        return;
    sqlite3_finalize(cur->st);
    sqlite3_finalize(cur->name_st);
    g_clear_pointer(&cur->names, g_hash_table_unref);
    g_free(cur);
}

void
store_filter_init(StoreFilter *filter)
{
    *filter = (StoreFilter){ .from_ms = METRIC_ABSENT, .to_ms = METRIC_ABSENT,
                             .resolution = STORE_RES_RAW };
}

/* The names of iothread @id, read from the store at the cursor's first
 * row naming it; an id no longer in the table (a row outliving its
 * iothread) reads as "?". */
static const IothreadName *
name_of(StoreCursor *cur, gint64 id, GError **error)
{
    static const IothreadName unknown = { (char *)"?", (char *)"?" };
    IothreadName *n = g_hash_table_lookup(cur->names, &id);
    int rc;

    if (n)
        return n;
    if (!cur->name_st &&
        !(cur->name_st = store_prepare(cur->db, "SELECT t.name, i.name FROM iothreads i"
                                       " JOIN targets t ON t.id = i.target_id"
                                       " WHERE i.id = ?1", error)))
        return NULL;
    sqlite3_reset(cur->name_st);
    sqlite3_bind_int64(cur->name_st, 1, id);
    rc = sqlite3_step(cur->name_st);
    if (rc == SQLITE_DONE)
        return &unknown;
    if (rc != SQLITE_ROW) {
        store_set_error(cur->db, error, rc, "read iothread names");
        return NULL;
    }
    n = g_new(IothreadName, 1);
    n->target = g_strdup((const char *)sqlite3_column_text(cur->name_st, 0));
    n->iothread = g_strdup((const char *)sqlite3_column_text(cur->name_st, 1));
    g_hash_table_insert(cur->names, g_memdup2(&id, sizeof(id)), n);
    return n;
}

static StoreCursor *
cursor_new(StoreDb *db, CursorKind kind, GError **error)
{
    g_autoptr(StoreCursor) cur = g_new0(StoreCursor, 1);

    cur->db = db;
    cur->kind = kind;
    if (!db->sql) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: not open", db->path);
        return NULL;
    }
    cur->names = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, iothread_name_free);
    return g_steal_pointer(&cur);
}

/* The WHERE fragment restricting @column by the filter's names. */
static char *
iothread_clause(const StoreFilter *f, const char *column)
{
    if (f->target && f->iothread)
        return g_strdup_printf(" AND %s IN (SELECT i.id FROM iothreads i JOIN targets g"
                               " ON g.id = i.target_id WHERE g.name = ?3 AND i.name = ?4)",
                               column);
    if (f->target)
        return g_strdup_printf(" AND %s IN (SELECT i.id FROM iothreads i JOIN targets g"
                               " ON g.id = i.target_id WHERE g.name = ?3)", column);
    if (f->iothread)
        return g_strdup_printf(" AND %s IN (SELECT id FROM iothreads WHERE name = ?4)", column);
    return g_strdup("");
}

static gboolean
cursor_prepare(StoreCursor *cur, const StoreFilter *f, const char *select, const char *column,
               const char *order, gint64 lo, gint64 hi, GError **error)
{
    g_autofree char *clause = iothread_clause(f, column);
    g_autofree char *sql = g_strconcat(select, clause, order, NULL);

    if (!(cur->st = store_prepare(cur->db, sql, error)))
        return FALSE;
    sqlite3_bind_int64(cur->st, 1, lo);
    sqlite3_bind_int64(cur->st, 2, hi);
    if (f->target)
        sqlite3_bind_text(cur->st, 3, f->target, -1, SQLITE_TRANSIENT);
    if (f->iothread)
        sqlite3_bind_text(cur->st, 4, f->iothread, -1, SQLITE_TRANSIENT);
    return TRUE;
}

static gint64
bound_from(const StoreFilter *f)
{
    return f->from_ms == METRIC_ABSENT ? G_MININT64 : f->from_ms;
}

static gint64
bound_to(const StoreFilter *f)
{
    return f->to_ms == METRIC_ABSENT ? G_MAXINT64 : f->to_ms;
}

StoreCursor *
store_query_range(StoreDb *db, const StoreFilter *f, GError **error)
{
    g_autoptr(StoreCursor) cur = NULL;
    gint64 from = bound_from(f), to = bound_to(f);

    if (f->resolution < 0 || f->resolution >= STORE_RESOLUTION_MAX) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: query: bad resolution",
                    db->path);
        return NULL;
    }
    cur = cursor_new(db, f->resolution == STORE_RES_RAW ? CURSOR_RAW : CURSOR_ROLLUP, error);
    if (!cur)
        return NULL;
    cur->row.resolution = f->resolution;
    if (f->resolution == STORE_RES_RAW) {
        /* A clock stepped backwards can break ts order; the ts test keeps
         * the result exact while the id range does the seeking. */
        gint64 lo = store_query_i64(db, "SELECT min(id) FROM ticks WHERE ts >= ?", from, 0);
        gint64 hi = store_query_i64(db, "SELECT max(id) FROM ticks WHERE ts < ?", to, -1);
        g_autofree char *cols = store_sample_columns_sql("s.");
        g_autofree char *select = g_strdup_printf(
            "SELECT " SAMPLE_COLUMNS "%s FROM ticks t JOIN samples s"
            " ON s.key >= t.id << " STORE_KEY_SHIFT_SQL " AND s.key < (t.id + 1) << "
            STORE_KEY_SHIFT_SQL
            " WHERE t.id BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT
            " AND t.ts >= ?1 AND t.ts < ?2", cols, lo, hi);

        if (!cursor_prepare(cur, f, select, "s.key & " STORE_KEY_MASK_SQL, " ORDER BY t.id, s.key",
                            from, to, error))
            return NULL;
    } else {
        g_autofree char *gauges = store_rolled_columns_sql("");
        g_autofree char *select = g_strdup_printf(
            "SELECT bucket, iothread_id, n, span_ms, iops_min, iops_mean, iops_max, iops_p95,"
            " lat_min, lat_mean, lat_max, lat_p95, cpu_min, cpu_mean, cpu_max%s FROM %s"
            " WHERE bucket >= ?1 AND bucket < ?2", gauges,
            f->resolution == STORE_RES_1M ? "rollup_1m" : "rollup_1h");

        if (!cursor_prepare(cur, f, select, "iothread_id", " ORDER BY bucket, iothread_id",
                            from, to, error))
            return NULL;
    }
    return g_steal_pointer(&cur);
}

StoreCursor *
store_query_decisions(StoreDb *db, const StoreFilter *f, GError **error)
{
    g_autoptr(StoreCursor) cur = cursor_new(db, CURSOR_DECISIONS, error);

    if (!cur || !cursor_prepare(cur, f, "SELECT ts, iothread_id, policy, old_max_ns, old_grow,"
                                " old_shrink, new_max_ns, new_grow, new_shrink, reason, applied,"
                                " cause FROM decisions WHERE ts >= ?1 AND ts < ?2", "iothread_id",
                                " ORDER BY ts, id", bound_from(f), bound_to(f), error))
        return NULL;
    return g_steal_pointer(&cur);
}

StoreCursor *
store_query_host(StoreDb *db, const StoreFilter *f, GError **error)
{
    g_autoptr(StoreCursor) cur = cursor_new(db, CURSOR_HOST, error);

    if (!cur || !(cur->st = store_prepare(db, "SELECT ts, len_ns, psi_cpu_some_us,"
                                          " cpu_busy_us, cpu_total_us FROM ticks"
                                          " WHERE ts >= ?1 AND ts < ?2 ORDER BY id", error)))
        return NULL;
    sqlite3_bind_int64(cur->st, 1, bound_from(f));
    sqlite3_bind_int64(cur->st, 2, bound_to(f));
    return g_steal_pointer(&cur);
}

static gboolean
row_fill_raw(StoreCursor *cur, sqlite3_stmt *st, GError **error)
{
    StoreRow *r = &cur->row;
    StoreSample *s = &r->sample;
    const IothreadName *n = name_of(cur, sqlite3_column_int64(st, 2), error);

    if (!n)
        return FALSE;
    r->ts_ms = sqlite3_column_int64(st, 0);
    r->len_ns = sqlite3_column_int64(st, 1);
    r->target = s->target = n->target;
    r->iothread = s->iothread = n->iothread;
    for (int i = 0; i < METRIC_MAX; i++)
        s->m.v[i] = store_column_i64(st, 3 + i);
    return TRUE;
}

static gboolean
row_fill_rollup(StoreCursor *cur, sqlite3_stmt *st, GError **error)
{
    StoreRow *r = &cur->row;
    const IothreadName *n = name_of(cur, sqlite3_column_int64(st, 1), error);
    StoreStat *stats[] = { &r->iops, &r->lat };
    MetricId rolled[METRIC_MAX];
    int n_rolled = store_rolled_gauges(rolled);

    if (!n)
        return FALSE;
    r->ts_ms = sqlite3_column_int64(st, 0);
    r->target = n->target;
    r->iothread = n->iothread;
    r->count = sqlite3_column_int64(st, 2);
    r->span_ms = sqlite3_column_int64(st, 3);
    for (int i = 0; i < 2; i++) {
        stats[i]->min = store_column_i64(st, 4 + 4 * i);
        stats[i]->mean = store_column_i64(st, 5 + 4 * i);
        stats[i]->max = store_column_i64(st, 6 + 4 * i);
        stats[i]->p95 = store_column_i64(st, 7 + 4 * i);
    }
    r->cpu.min = store_column_i64(st, 12);
    r->cpu.mean = store_column_i64(st, 13);
    r->cpu.max = store_column_i64(st, 14);
    r->cpu.p95 = METRIC_ABSENT;
    /* The rolled gauges (the triple in force) in the sample's place;
     * every other metric is absent from a rollup. */
    store_sample_init(&r->sample);
    r->sample.target = r->target;
    r->sample.iothread = r->iothread;
    for (int k = 0; k < n_rolled; k++)
        r->sample.m.v[rolled[k]] = store_column_i64(st, 15 + k);
    return TRUE;
}

static gboolean
cursor_step(StoreCursor *cur, gboolean *have, GError **error)
{
    int rc = sqlite3_step(cur->st);

    *have = rc == SQLITE_ROW;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_set_error(cur->db, error, rc, "read rows");
        return FALSE;
    }
    return TRUE;
}

gboolean
store_cursor_next(StoreCursor *cur, const StoreRow **row, GError **error)
{
    gboolean have;

    *row = NULL;
    if (cur->kind == CURSOR_DECISIONS || cur->kind == CURSOR_HOST) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: %s cursor read as "
                    "samples", cur->db->path, cur->kind == CURSOR_HOST ? "host" : "decision");
        return FALSE;
    }
    if (!cursor_step(cur, &have, error))
        return FALSE;
    if (!have)
        return TRUE;
    if (!(cur->kind == CURSOR_ROLLUP ? row_fill_rollup(cur, cur->st, error) :
                                       row_fill_raw(cur, cur->st, error)))
        return FALSE;
    *row = &cur->row;
    return TRUE;
}

gboolean
store_cursor_next_decision(StoreCursor *cur, const StoreDecisionRow **row, GError **error)
{
    StoreDecisionRow *d = &cur->drow;
    const IothreadName *n;
    sqlite3_stmt *st = cur->st;
    gboolean have;

    *row = NULL;
    if (cur->kind != CURSOR_DECISIONS) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: sample cursor read as "
                    "decisions", cur->db->path);
        return FALSE;
    }
    if (!cursor_step(cur, &have, error))
        return FALSE;
    if (!have)
        return TRUE;
    if (!(n = name_of(cur, sqlite3_column_int64(st, 1), error)))
        return FALSE;
    d->ts_ms = sqlite3_column_int64(st, 0);
    d->target = n->target;
    d->iothread = n->iothread;
    d->policy = (const char *)sqlite3_column_text(st, 2);
    d->old_triple = (StoreTriple){ store_column_i64(st, 3), store_column_i64(st, 4),
                                   store_column_i64(st, 5) };
    d->new_triple = (StoreTriple){ store_column_i64(st, 6), store_column_i64(st, 7),
                                   store_column_i64(st, 8) };
    d->reason = (const char *)sqlite3_column_text(st, 9);
    d->applied = sqlite3_column_int(st, 10) != 0;
    d->cause = (const char *)sqlite3_column_text(st, 11);
    *row = d;
    return TRUE;
}

gboolean
store_cursor_next_host(StoreCursor *cur, const StoreHostRow **row, GError **error)
{
    StoreHostRow *h = &cur->hrow;
    sqlite3_stmt *st = cur->st;
    gboolean have;

    *row = NULL;
    if (cur->kind != CURSOR_HOST) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: sample cursor read as "
                    "host rows", cur->db->path);
        return FALSE;
    }
    if (!cursor_step(cur, &have, error))
        return FALSE;
    if (!have)
        return TRUE;
    h->ts_ms = sqlite3_column_int64(st, 0);
    h->len_ns = sqlite3_column_int64(st, 1);
    store_psi_init(&h->psi);
    h->psi.cpu_some_us = store_column_i64(st, 2);
    h->cpu = (StoreHostCpu){ store_column_i64(st, 3), store_column_i64(st, 4) };
    *row = h;
    return TRUE;
}
