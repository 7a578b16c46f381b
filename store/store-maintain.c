/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-maintain: rollups, retention and the size cap, in small units.
 *
 * Every unit is one transaction sized to hold the database for a few
 * milliseconds (a minute of samples, a few thousand rows to delete), so a
 * tick waiting to be written never waits long.  Progress lives in meta
 * (rollup_1m_next, rollup_1h_next: the next bucket to compute), so work
 * resumes where it stopped after a restart.
 *
 * Rollup statistics, per iothread and bucket:
 * - IOPS (milli-ops/s) and CPU (ppm of one core) means are weighted by tick
 *   length, latency (ns/op) by operation count, so a 1-minute mean equals
 *   the exact ratio of the raw deltas over the minute.
 * - The 1-minute p95 is exact (nearest rank over the minute's ticks).  The
 *   1-hour p95 is approximated by the nearest-rank 95th percentile of the
 *   hour's 1-minute p95 values; docs/STORE.md discusses the error.
 * - 1-hour means combine 1-minute means weighted by span (and, for latency,
 *   by span x mean IOPS, i.e. the operation count to rounding).
 * - The gauges the metric table rolls up (the triple) are kept as the
 *   setting in force for most of the bucket: the combination of their
 *   values weighted by tick length (1-hour: by the minutes' spans), the
 *   later one on a tie.
 */
#include <math.h>

#include "store-private.h"

#define MINUTE_MS 60000
#define HOUR_MS 3600000
#define DELETE_ROWS_PER_UNIT 3000

typedef struct {
    gboolean have;
    double wsum, w;
    gint64 min, max;
    GArray *p95src;             /* gint64, or NULL when not kept */
} StatAcc;

/* One combination of the rolled gauges and the time it was in force. */
typedef struct {
    gint64 v[METRIC_MAX];       /* only the rolled gauges' entries are used */
    double w;
} GaugeTuple;

typedef struct {
    gint64 n, span_ns;
    StatAcc iops, lat, cpu;
    GArray *gauges;             /* GaugeTuple */
} RollAcc;

/* Adds @weight to the combination of rolled gauges in columns @first... */
static void
gauges_add(RollAcc *a, sqlite3_stmt *st, int first, double weight)
{
    MetricId ids[METRIC_MAX];
    int n = store_rolled_gauges(ids);
    GaugeTuple t = { .w = weight };
    gboolean any = FALSE;

    for (int k = 0; k < n; k++) {
        t.v[ids[k]] = store_column_i64(st, first + k);
        any |= t.v[ids[k]] != METRIC_ABSENT;
    }
    if (!any)
        return;
    for (guint j = 0; j < a->gauges->len; j++) {
        GaugeTuple *e = &g_array_index(a->gauges, GaugeTuple, j);
        int k = 0;

        while (k < n && e->v[ids[k]] == t.v[ids[k]])
            k++;
        if (k == n) {
            e->w += weight;
            return;
        }
    }
    g_array_append_val(a->gauges, t);
}

/* Binds the combination in force longest (NULLs if none) from @first on. */
static int
gauges_bind(sqlite3_stmt *st, int first, const RollAcc *a)
{
    MetricId ids[METRIC_MAX];
    int n = store_rolled_gauges(ids);
    const GaugeTuple *best = NULL;

    for (guint j = 0; j < a->gauges->len; j++) {
        const GaugeTuple *e = &g_array_index(a->gauges, GaugeTuple, j);

        if (!best || e->w >= best->w)
            best = e;
    }
    for (int k = 0; k < n; k++)
        store_bind_i64(st, first + k, best ? best->v[ids[k]] : METRIC_ABSENT);
    return first + n;
}

static void
stat_add(StatAcc *a, double mean, double weight, gint64 min, gint64 max, gint64 p95)
{
    if (!a->have) {
        a->have = TRUE;
        a->min = min;
        a->max = max;
    } else {
        a->min = MIN(a->min, min);
        a->max = MAX(a->max, max);
    }
    a->wsum += mean * weight;
    a->w += weight;
    if (a->p95src)
        g_array_append_val(a->p95src, p95);
}

static int
cmp_i64(gconstpointer a, gconstpointer b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

    return x < y ? -1 : x > y;
}

/* Binds min, mean, max and (if kept) p95 from @first on. */
static int
stat_bind(sqlite3_stmt *st, int first, StatAcc *a)
{
    int n = a->p95src ? 4 : 3;

    if (!a->have) {
        for (int i = 0; i < n; i++)
            sqlite3_bind_null(st, first + i);
        return first + n;
    }
    sqlite3_bind_int64(st, first, a->min);
    if (a->w > 0)
        sqlite3_bind_int64(st, first + 1, llround(a->wsum / a->w));
    else
        sqlite3_bind_int64(st, first + 1, a->min);
    sqlite3_bind_int64(st, first + 2, a->max);
    if (a->p95src) {
        guint len = a->p95src->len;
        guint rank = (guint)ceil(0.95 * len);

        g_array_sort(a->p95src, cmp_i64);
        sqlite3_bind_int64(st, first + 3,
                           g_array_index(a->p95src, gint64, rank > 0 ? rank - 1 : 0));
    }
    return first + n;
}

static void
roll_acc_free(gpointer p)
{
    RollAcc *a = p;

    g_array_unref(a->iops.p95src);
    g_array_unref(a->lat.p95src);
    g_array_unref(a->gauges);
    g_free(a);
}

static RollAcc *
roll_acc_get(GHashTable *accs, gint64 iothread_id)
{
    RollAcc *a = g_hash_table_lookup(accs, &iothread_id);

    if (!a) {
        a = g_new0(RollAcc, 1);
        a->iops.p95src = g_array_new(FALSE, FALSE, sizeof(gint64));
        a->lat.p95src = g_array_new(FALSE, FALSE, sizeof(gint64));
        a->gauges = g_array_new(FALSE, FALSE, sizeof(GaugeTuple));
        g_hash_table_insert(accs, g_memdup2(&iothread_id, sizeof(iothread_id)), a);
    }
    return a;
}

/* Sum of the non-NULL columns @first.. @first+@n-1, or METRIC_ABSENT. */
static gint64
column_sum(sqlite3_stmt *st, int first, int n)
{
    gint64 sum = METRIC_ABSENT;

    for (int i = first; i < first + n; i++)
        if (sqlite3_column_type(st, i) != SQLITE_NULL)
            sum = (sum == METRIC_ABSENT ? 0 : sum) + sqlite3_column_int64(st, i);
    return sum;
}

static void
acc_add_raw(RollAcc *a, sqlite3_stmt *st)
{
    gint64 len = sqlite3_column_int64(st, 1);
    gint64 ops = column_sum(st, 3, 3), time_ns = column_sum(st, 6, 3);

    a->n++;
    a->span_ns += len;
    gauges_add(a, st, 9, len);
    if (sqlite3_column_type(st, 2) != SQLITE_NULL) {
        gint64 cpu = llround(sqlite3_column_int64(st, 2) * 1e6 / len);

        stat_add(&a->cpu, cpu, len, cpu, cpu, 0);
    }
    if (ops != METRIC_ABSENT) {
        gint64 iops = llround(ops * 1e12 / len);

        stat_add(&a->iops, iops, len, iops, iops, iops);
        if (ops > 0 && time_ns != METRIC_ABSENT) {
            gint64 lat = llround((double)time_ns / ops);

            stat_add(&a->lat, lat, ops, lat, lat, lat);
        }
    }
}

static void
acc_add_minute(RollAcc *a, sqlite3_stmt *st)
{
    gint64 span_ms = sqlite3_column_int64(st, 2);

    a->n += sqlite3_column_int64(st, 1);
    a->span_ns += span_ms * 1000000;
    gauges_add(a, st, 14, span_ms);
    if (sqlite3_column_type(st, 3) != SQLITE_NULL) {
        gint64 mean = sqlite3_column_int64(st, 4);

        stat_add(&a->iops, mean, span_ms, sqlite3_column_int64(st, 3),
                 sqlite3_column_int64(st, 5), sqlite3_column_int64(st, 6));
        if (sqlite3_column_type(st, 7) != SQLITE_NULL)
            stat_add(&a->lat, sqlite3_column_int64(st, 8), (double)mean * span_ms,
                     sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 9),
                     sqlite3_column_int64(st, 10));
    }
    if (sqlite3_column_type(st, 11) != SQLITE_NULL)
        stat_add(&a->cpu, sqlite3_column_int64(st, 12), span_ms, sqlite3_column_int64(st, 11),
                 sqlite3_column_int64(st, 13), 0);
}

static gboolean
begin(StoreDb *db, GError **error)
{
    return store_exec(db, "BEGIN IMMEDIATE", error);
}

static gboolean
finish(StoreDb *db, gboolean ok, GError **error)
{
    if (ok && store_exec(db, "COMMIT", error))
        return TRUE;
    if (!sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    return FALSE;
}

static gint64
floor_to(gint64 ms, gint64 unit)
{
    return ms >= 0 ? ms / unit * unit : -((-ms + unit - 1) / unit) * unit;
}

/*
 * A level's SQL is "<select><rolled gauge columns><from>": the rolled
 * gauges (metric-table.h) come last in the source rows, at column 9 of a
 * raw row and 14 of a 1-minute row, and last in the rollup rows.
 */
typedef struct {
    const char *next_key;       /* meta key of the next bucket */
    gint64 width;
    const char *first_sql;      /* earliest source time >= ?1 */
    const char *source_select;  /* rows in [?1, ?2): iothread_id first */
    const char *gauge_prefix;   /* of the rolled gauges in the source */
    const char *source_from;
    const char *table;
    void (*add)(RollAcc *a, sqlite3_stmt *st);
} RollLevel;

static const RollLevel level_1m = {
    "rollup_1m_next", MINUTE_MS,
    "SELECT min(ts) FROM ticks WHERE ts >= ?1",
    "SELECT s.key & " STORE_KEY_MASK_SQL ", t.len_ns, s.cpu_ns, s.rd_ops, s.wr_ops,"
    " s.flush_ops, s.rd_time_ns, s.wr_time_ns, s.flush_time_ns", "s.",
    " FROM ticks t JOIN samples s"
    " ON s.key >= t.id << " STORE_KEY_SHIFT_SQL " AND s.key < (t.id + 1) << " STORE_KEY_SHIFT_SQL
    " WHERE t.ts >= ?1 AND t.ts < ?2",
    "rollup_1m",
    acc_add_raw,
};

static const RollLevel level_1h = {
    "rollup_1h_next", HOUR_MS,
    "SELECT min(bucket) FROM rollup_1m WHERE bucket >= ?1",
    "SELECT iothread_id, n, span_ms, iops_min, iops_mean, iops_max, iops_p95,"
    " lat_min, lat_mean, lat_max, lat_p95, cpu_min, cpu_mean, cpu_max", "",
    " FROM rollup_1m WHERE bucket >= ?1 AND bucket < ?2",
    "rollup_1h",
    acc_add_minute,
};

static char *
level_source_sql(const RollLevel *lv)
{
    g_autofree char *gauges = store_rolled_columns_sql(lv->gauge_prefix);

    return g_strconcat(lv->source_select, gauges, lv->source_from, NULL);
}

static char *
level_insert_sql(const RollLevel *lv)
{
    g_autofree char *gauges = store_rolled_columns_sql("");
    MetricId ids[METRIC_MAX];
    GString *sql = g_string_new(NULL);

    g_string_printf(sql, "INSERT OR REPLACE INTO %s (bucket, iothread_id, n, span_ms,"
                    " iops_min, iops_mean, iops_max, iops_p95, lat_min, lat_mean, lat_max,"
                    " lat_p95, cpu_min, cpu_mean, cpu_max%s) VALUES (?", lv->table, gauges);
    for (int k = 1; k < 15 + store_rolled_gauges(ids); k++)
        g_string_append(sql, ",?");
    g_string_append_c(sql, ')');
    return g_string_free(sql, FALSE);
}

static gboolean
rollup_write(StoreDb *db, const RollLevel *lv, gint64 bucket, GHashTable *accs,
             GError **error)
{
    g_autofree char *insert_sql = level_insert_sql(lv);
    sqlite3_stmt *ins = store_prepare(db, insert_sql, error);
    GHashTableIter it;
    gpointer key, value;
    int rc = SQLITE_DONE;

    if (!ins)
        return FALSE;
    g_hash_table_iter_init(&it, accs);
    while (rc == SQLITE_DONE && g_hash_table_iter_next(&it, &key, &value)) {
        RollAcc *a = value;
        int col;

        sqlite3_reset(ins);
        sqlite3_bind_int64(ins, 1, bucket);
        sqlite3_bind_int64(ins, 2, *(gint64 *)key);
        sqlite3_bind_int64(ins, 3, a->n);
        sqlite3_bind_int64(ins, 4, a->span_ns / 1000000);
        col = stat_bind(ins, 5, &a->iops);
        col = stat_bind(ins, col, &a->lat);
        col = stat_bind(ins, col, &a->cpu);
        gauges_bind(ins, col, a);
        rc = sqlite3_step(ins);
    }
    sqlite3_finalize(ins);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "write rollup");
        return FALSE;
    }
    return TRUE;
}

/* Computes one bucket of @lv if a complete one is due before @cut. */
static gboolean
rollup_unit(StoreDb *db, const RollLevel *lv, gint64 cut, gboolean *did, GError **error)
{
    g_autoptr(GHashTable) accs = NULL;
    g_autofree char *source_sql = NULL;
    gint64 next = store_meta_get_int(db, lv->next_key, METRIC_ABSENT);
    gint64 first;
    sqlite3_stmt *st;
    gboolean ok;
    int rc;

    *did = FALSE;
    first = store_query_i64(db, lv->first_sql, next == METRIC_ABSENT ? G_MININT64 : next, METRIC_ABSENT);
    if (first == METRIC_ABSENT)
        return TRUE;
    /* Skip empty buckets: after a gap the next one is the first with data. */
    next = floor_to(first, lv->width);
    if (next + lv->width > cut)
        return TRUE;
    *did = TRUE;
    if (!begin(db, error))
        return FALSE;
    accs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, roll_acc_free);
    source_sql = level_source_sql(lv);
    if (!(st = store_prepare(db, source_sql, error)))
        return finish(db, FALSE, error);
    sqlite3_bind_int64(st, 1, next);
    sqlite3_bind_int64(st, 2, next + lv->width);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        lv->add(roll_acc_get(accs, sqlite3_column_int64(st, 0)), st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "read rollup source");
        return finish(db, FALSE, error);
    }
    ok = rollup_write(db, lv, next, accs, error) &&
         store_meta_set_int(db, lv->next_key, next + lv->width, error);
    return finish(db, ok, error);
}

/* Everything before the returned time is summarised at @lv: the start of
 * the first bucket with data still to roll up, or @cut if there is none. */
static gint64
rolled_until(StoreDb *db, const RollLevel *lv, gint64 cut)
{
    gint64 next = store_meta_get_int(db, lv->next_key, G_MININT64);
    gint64 todo = store_query_i64(db, lv->first_sql, next, METRIC_ABSENT);

    return todo == METRIC_ABSENT ? cut : MIN(floor_to(todo, lv->width), cut);
}

/* Deletes raw ticks with id < @hi (and their samples) in one transaction. */
static gboolean
raw_delete_below(StoreDb *db, gint64 hi, GError **error)
{
    g_autofree char *sql = g_strdup_printf(
        "BEGIN IMMEDIATE;"
        "DELETE FROM samples WHERE key < %1$" G_GINT64_FORMAT " << " STORE_KEY_SHIFT_SQL ";"
        "DELETE FROM ticks WHERE id < %1$" G_GINT64_FORMAT ";"
        "COMMIT;", hi);

    if (!store_exec(db, sql, error))
        return finish(db, FALSE, error);
    return TRUE;
}

/* Prunes the oldest raw chunk, at most up to tick time @cutoff. */
static gboolean
raw_prune_unit(StoreDb *db, gint64 cutoff, gboolean *did, GError **error)
{
    gint64 lo = store_query_i64(db, "SELECT min(id) FROM ticks", 0, METRIC_ABSENT);
    gint64 chunk = MAX(1, DELETE_ROWS_PER_UNIT / MAX(db->rows_per_tick, 1));
    gint64 hi;

    *did = FALSE;
    if (lo == METRIC_ABSENT)
        return TRUE;
    hi = store_query_i64(db, "SELECT min(id) FROM ticks WHERE ts >= ?1", cutoff, G_MAXINT64);
    hi = MIN(hi, lo + chunk);
    if (hi <= lo)
        return TRUE;
    *did = TRUE;
    return raw_delete_below(db, hi, error);
}

static gboolean
rollup_prune_unit(StoreDb *db, const char *table, gint64 width, gint64 cutoff, gboolean *did,
                  GError **error)
{
    g_autofree char *min_sql = g_strdup_printf("SELECT min(bucket) FROM %s", table);
    gint64 lo = store_query_i64(db, min_sql, 0, METRIC_ABSENT);
    gint64 buckets = MAX(1, DELETE_ROWS_PER_UNIT / MAX(db->rows_per_tick, 1));
    gint64 hi;

    *did = FALSE;
    if (lo == METRIC_ABSENT)
        return TRUE;
    hi = MIN(cutoff, lo + buckets * width);
    if (hi <= lo)
        return TRUE;
    *did = TRUE;
    {
        g_autofree char *sql = g_strdup_printf("DELETE FROM %s WHERE bucket < %" G_GINT64_FORMAT,
                                               table, hi);

        return store_exec(db, sql, error);
    }
}

/* Runs one unit: returns from the caller on failure or when it did work. */
#define UNIT(call)              \
    do {                        \
        if (!(call))            \
            return FALSE;       \
        if (*did)               \
            return TRUE;        \
    } while (0)

static gint64
file_bytes(StoreDb *db)
{
    return store_query_i64(db, "SELECT p.page_count * s.page_size FROM pragma_page_count p,"
                     " pragma_page_size s", 0, 0);
}

/* Over the cap: drop the oldest data of the finest resolution that has any. */
static gboolean
cap_unit(StoreDb *db, gboolean *did, GError **error)
{
    *did = FALSE;
    if (store_db_used_bytes(db) <= db->opts.size_cap_bytes)
        return TRUE;
    UNIT(raw_prune_unit(db, G_MAXINT64, did, error));
    UNIT(rollup_prune_unit(db, "rollup_1m", MINUTE_MS, G_MAXINT64, did, error));
    return rollup_prune_unit(db, "rollup_1h", HOUR_MS, G_MAXINT64, did, error);
}

/* Gives freed pages back to the filesystem while the file exceeds the cap. */
static gboolean
vacuum_unit(StoreDb *db, gboolean *did, GError **error)
{
    gint64 free_pages = store_query_i64(db, "PRAGMA freelist_count", 0, 0);

    /* Files made without auto_vacuum = INCREMENTAL keep their pages. */
    gint64 mode = store_query_i64(db, "SELECT auto_vacuum FROM pragma_auto_vacuum", 0, 0);

    *did = FALSE;
    if (mode != 2 || free_pages == 0 || file_bytes(db) <= db->opts.size_cap_bytes)
        return TRUE;
    *did = TRUE;
    return store_exec(db, "PRAGMA incremental_vacuum(512)", error);
}

/* Copies the WAL into the database once it has grown; see wal_hook. */
static gboolean
checkpoint_unit(StoreDb *db, gboolean *did, GError **error)
{
    int rc;

    *did = db->wal_frames >= STORE_WAL_CHECKPOINT_FRAMES;
    if (!*did)
        return TRUE;
    db->wal_frames = 0;
    rc = sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY) {
        store_set_error(db, error, rc, "checkpoint");
        return FALSE;
    }
    return TRUE;
}

/* Runs the first unit that has work; *did is FALSE when none had any. */
static gboolean
maintain_unit(StoreDb *db, gint64 now_ms, gboolean *did, GError **error)
{
    gint64 cut = MIN(now_ms, store_pending_oldest_ts(db));
    gint64 rolled_1m, rolled_1h;

    /* Rollups first, so that pruning for the cap never loses a minute
     * that was not summarised yet. */
    UNIT(checkpoint_unit(db, did, error));
    UNIT(rollup_unit(db, &level_1m, cut, did, error));
    rolled_1m = rolled_until(db, &level_1m, cut);
    UNIT(rollup_unit(db, &level_1h, rolled_1m, did, error));
    rolled_1h = rolled_until(db, &level_1h, rolled_1m);
    UNIT(cap_unit(db, did, error));
    /* Data is kept until rolled up, whatever the retention says. */
    UNIT(raw_prune_unit(db, MIN(now_ms - db->opts.raw_retention_ms, rolled_1m), did, error));
    UNIT(rollup_prune_unit(db, "rollup_1m", MINUTE_MS,
                           MIN(now_ms - db->opts.rollup_1m_retention_ms, rolled_1h), did, error));
    UNIT(rollup_prune_unit(db, "rollup_1h", HOUR_MS, now_ms - db->opts.rollup_1h_retention_ms,
                           did, error));
    return vacuum_unit(db, did, error);
}

gboolean
store_maintain_step(StoreDb *db, gint64 now_ms, guint budget_ms, gboolean *more, GError **error)
{
    /* The monotonic clock only bounds the step; it never decides what
     * data is old, which follows @now_ms alone. */
    gint64 start = g_get_monotonic_time();

    *more = FALSE;
    if (!store_db_check_file(db, now_ms, error))
        return FALSE;
    for (;;) {
        gint64 unit_start = g_get_monotonic_time();
        GError *local = NULL;
        gboolean did = FALSE;

        maintain_unit(db, now_ms, &did, &local);
        db->stats.max_maintain_unit_us = MAX(db->stats.max_maintain_unit_us,
                                             g_get_monotonic_time() - unit_start);
        if (local) {
            g_propagate_error(error, local);
            return FALSE;
        }
        if (!did)
            return TRUE;
        if (g_get_monotonic_time() - start >= (gint64)budget_ms * 1000) {
            *more = TRUE;
            return TRUE;
        }
    }
}
