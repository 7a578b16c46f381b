/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-db: opening, the connection's settings, prepared statements,
 * notices and meta.  What happens to the file under the connection is in
 * store-file.c.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "common/pt-enum-table.h"
#include "store-private.h"

G_DEFINE_QUARK(store-error-quark, store_error)

PT_ENUM_IMPL(store_target_kind, StoreTargetKind, STORE_TARGET_KIND_MAX,
             [STORE_TARGET_LIBVIRT] = "libvirt",
             [STORE_TARGET_QMP] = "qmp")
PT_ENUM_IMPL(store_resolution, StoreResolution, STORE_RESOLUTION_MAX,
             [STORE_RES_RAW] = "raw",
             [STORE_RES_1M] = "1m",
             [STORE_RES_1H] = "1h")
PT_ENUM_IMPL_TO_STRING(store_health, StoreHealth, STORE_HEALTH_FAILED + 1,
                       [STORE_HEALTH_OK] = "ok",
                       [STORE_HEALTH_BUSY] = "busy",
                       [STORE_HEALTH_FULL] = "full",
                       [STORE_HEALTH_FAILED] = "failed")
PT_ENUM_IMPL(store_format, StoreFormat, STORE_FORMAT_MAX,
             [STORE_FORMAT_CSV] = "csv",
             [STORE_FORMAT_JSONL] = "jsonl")

void
store_options_init(StoreOptions *opts)
{
    *opts = (StoreOptions){
        .now_ms = 0,
        .busy_timeout_ms = 100,
        .max_pending_ticks = 600,
        .raw_retention_ms = 48 * 3600 * G_GINT64_CONSTANT(1000),
        .rollup_1m_retention_ms = 30 * 86400 * G_GINT64_CONSTANT(1000),
        .rollup_1h_retention_ms = 730 * 86400 * G_GINT64_CONSTANT(1000),
        .size_cap_bytes = G_GINT64_CONSTANT(2) << 30,
        .verify_at_open = FALSE,
    };
}

static int
error_code_for(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return STORE_ERROR_BUSY;
    case SQLITE_FULL:
        return STORE_ERROR_FULL;
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
        return STORE_ERROR_CORRUPT;
    default:
        return STORE_ERROR_FAILED;
    }
}

void
store_set_error_sql(sqlite3 *sql, const char *path, GError **error, int rc, const char *what)
{
    const char *msg = sql ? sqlite3_errmsg(sql) : sqlite3_errstr(rc);

    g_set_error(error, STORE_ERROR, error_code_for(rc), "%s: %s: %s (sqlite %d)",
                path, what, msg, rc);
}

void
store_set_error(StoreDb *db, GError **error, int rc, const char *what)
{
    store_set_error_sql(db->sql, db->path, error, rc, what);
}

void
store_notice(StoreDb *db, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_queue_push_tail(&db->notices, g_strdup_vprintf(fmt, ap));
    va_end(ap);
}

char *
store_db_take_notice(StoreDb *db)
{
    return g_queue_pop_head(&db->notices);
}

static void
target_entry_free(gpointer p)
{
    StoreTargetEntry *t = p;

    g_hash_table_unref(t->iothreads);
    g_free(t->display_name);
    g_free(t);
}

void
store_cache_clear(StoreDb *db)
{
    g_hash_table_remove_all(db->targets);
}

sqlite3_stmt *
store_prepare(StoreDb *db, const char *sql, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v3(db->sql, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL);

    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "prepare statement");
        return NULL;
    }
    return st;
}

static const char *const stmt_sql[STMT_MAX] = {
    [STMT_BEGIN] = "BEGIN IMMEDIATE",
    [STMT_COMMIT] = "COMMIT",
    [STMT_ROLLBACK] = "ROLLBACK",
    [STMT_TICK_INSERT] =
        "INSERT INTO ticks (ts, len_ns, psi_cpu_some_us, psi_io_some_us,"
        " psi_io_full_us, psi_mem_some_us, psi_mem_full_us, cpu_busy_us, cpu_total_us)"
        " VALUES (?,?,?,?,?,?,?,?,?)",
    [STMT_TARGET_UPSERT] =
        "INSERT INTO targets (kind, name, uuid, first_seen, last_seen) VALUES (?1,?2,?3,?4,?4)"
        " ON CONFLICT (name) DO UPDATE SET last_seen = excluded.last_seen,"
        " kind = CASE WHEN ?5 THEN excluded.kind ELSE kind END,"
        " uuid = CASE WHEN ?5 THEN excluded.uuid ELSE uuid END RETURNING id",
    [STMT_TARGET_TOUCH] = "UPDATE targets SET last_seen = ?2 WHERE id = ?1",
    [STMT_IOTHREAD_UPSERT] =
        "INSERT INTO iothreads (target_id, name, first_seen, last_seen) VALUES (?1,?2,?3,?3)"
        " ON CONFLICT (target_id, name) DO UPDATE SET last_seen = excluded.last_seen"
        " RETURNING id",
    [STMT_IOTHREAD_TOUCH] = "UPDATE iothreads SET last_seen = ?2 WHERE id = ?1",
    [STMT_TARGET_NAME] = "UPDATE targets SET display_name = ?2 WHERE id = ?1",
};

char *
store_sample_columns_sql(const char *prefix)
{
    GString *sql = g_string_new(NULL);

    for (int i = 0; i < METRIC_MAX; i++)
        g_string_append_printf(sql, "%s%s%s", i ? ", " : "", prefix, metric_def(i)->name);
    return g_string_free(sql, FALSE);
}

int
store_rolled_gauges(MetricId ids[METRIC_MAX])
{
    int n = 0;

    for (int i = 0; i < METRIC_MAX; i++)
        if (metric_def(i)->rollup)
            ids[n++] = i;
    return n;
}

char *
store_rolled_columns_sql(const char *prefix)
{
    GString *sql = g_string_new(NULL);
    MetricId ids[METRIC_MAX];
    int n = store_rolled_gauges(ids);

    for (int k = 0; k < n; k++)
        g_string_append_printf(sql, ", %s%s", prefix, metric_def(ids[k])->name);
    return g_string_free(sql, FALSE);
}

/* "INSERT INTO samples (key, <metrics>) VALUES (?,...),(?,...),..." for
 * @rows rows; the columns are named since migrations append them. */
static char *
sample_insert_sql(int rows)
{
    g_autofree char *cols = store_sample_columns_sql("");
    GString *sql = g_string_new(NULL);

    g_string_printf(sql, "INSERT INTO samples (key, %s) VALUES ", cols);
    for (int r = 0; r < rows; r++) {
        g_string_append(sql, r ? ",(?" : "(?");
        for (int c = 1; c < STORE_SAMPLE_COLUMNS; c++)
            g_string_append(sql, ",?");
        g_string_append_c(sql, ')');
    }
    return g_string_free(sql, FALSE);
}

sqlite3_stmt *
store_stmt(StoreDb *db, StoreStmt which, GError **error)
{
    if (!db->stmt[which] && (which == STMT_SAMPLE_INSERT_BATCH || which == STMT_SAMPLE_INSERT)) {
        g_autofree char *sql = sample_insert_sql(which == STMT_SAMPLE_INSERT ? 1 : STORE_SAMPLE_BATCH);

        db->stmt[which] = store_prepare(db, sql, error);
    } else if (!db->stmt[which]) {
        db->stmt[which] = store_prepare(db, stmt_sql[which], error);
    } else {
        sqlite3_reset(db->stmt[which]);
    }
    return db->stmt[which];
}

gboolean
store_exec(StoreDb *db, const char *sql, GError **error)
{
    int rc = sqlite3_exec(db->sql, sql, NULL, NULL, NULL);

    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, sql);
        return FALSE;
    }
    return TRUE;
}

gint64
store_query_i64(StoreDb *db, const char *sql, gint64 arg, gint64 fallback)
{
    sqlite3_stmt *st = NULL;
    gint64 v = fallback;

    if (sqlite3_prepare_v2(db->sql, sql, -1, &st, NULL) != SQLITE_OK)
        return fallback;
    if (sqlite3_bind_parameter_count(st) > 0)
        sqlite3_bind_int64(st, 1, arg);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

gint64
store_meta_get_int(StoreDb *db, const char *key, gint64 fallback)
{
    sqlite3_stmt *st = NULL;
    gint64 v = fallback;

    if (sqlite3_prepare_v2(db->sql, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL)
        != SQLITE_OK)
        return fallback;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

gboolean
store_meta_set_int(StoreDb *db, const char *key, gint64 value, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db->sql, "INSERT OR REPLACE INTO meta VALUES (?, ?)", -1,
                                &st, NULL);

    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, value);
        rc = sqlite3_step(st);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, key);
        return FALSE;
    }
    return TRUE;
}

void
store_connection_close(StoreDb *db)
{
    for (int i = 0; i < STMT_MAX; i++)
        g_clear_pointer(&db->stmt[i], sqlite3_finalize);
    g_clear_pointer(&db->sql, sqlite3_close);
    store_cache_clear(db);
}

static gboolean
pragma_text_is(sqlite3 *sql, const char *pragma, const char *want, int *rc_out)
{
    sqlite3_stmt *st = NULL;
    gboolean same = FALSE;
    int rc = sqlite3_prepare_v2(sql, pragma, -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            same = g_ascii_strcasecmp((const char *)sqlite3_column_text(st, 0), want) == 0;
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    *rc_out = rc;
    return same;
}

/* Bytes an unprivileged writer may still use on the WAL's filesystem, or
 * -1 when unknown (then only the fixed sizes bound the WAL). */
static gint64
wal_space_free(StoreDb *db)
{
    struct statvfs sv;

    if (!db->dir || statvfs(db->dir, &sv) != 0)
        return -1;
    return (gint64)sv.f_bavail * (gint64)sv.f_frsize;
}

/* TRUE when a WAL of @frames takes more than its share of the space it
 * and the free space add up to; see STORE_WAL_SPACE_SHARE. */
static gboolean
wal_over_space(StoreDb *db, int frames)
{
    gint64 wal_bytes = (gint64)frames * (db->page_size + 24);
    gint64 free_bytes;

    if (frames == 0)
        return FALSE;
    free_bytes = wal_space_free(db);
    return free_bytes >= 0 && wal_bytes * (STORE_WAL_SPACE_SHARE - 1) > free_bytes;
}

gboolean
store_wal_truncate(StoreDb *db, GError **error)
{
    int rc;

    if (db->is_memory || !db->sql)
        return TRUE;
    rc = sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "checkpoint and truncate the WAL");
        return FALSE;
    }
    db->wal_frames = 0;
    return TRUE;
}

/*
 * Checkpoints copy the WAL into the database and fsync both, which takes
 * tens of milliseconds on a slow disk.  Rather than let sqlite do that
 * inside a tick's commit, maintenance does it (store_maintain_step); the
 * commit does it only if maintenance has not run for a long while, or
 * when free space runs short: then the WAL is copied and truncated at
 * once, because a WAL that eats the free space can no longer be
 * checkpointed at all (the database file cannot grow to take its pages).
 * A checkpoint that fails here (a reader in the way) is retried at the
 * next commit.
 */
static int
wal_hook(void *data, sqlite3 *sql, const char *name, int frames)
{
    StoreDb *db = data;

    db->wal_frames = frames;
    if (wal_over_space(db, frames)) {
        if (sqlite3_wal_checkpoint_v2(sql, name, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL)
            == SQLITE_OK)
            db->wal_frames = 0;
    } else if (frames >= STORE_WAL_FORCE_FRAMES) {
        sqlite3_wal_checkpoint_v2(sql, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
        db->wal_frames = 0;
    }
    return SQLITE_OK;
}

/*
 * sqlite needs to create "<path>-wal" and "<path>-shm" beside the file, and
 * only says "attempt to write a readonly database" (or "unable to open")
 * when it cannot.  Say which path and why instead.  Other causes (a
 * missing directory) are left to sqlite's own message.
 */
static gboolean
connection_check_writable(StoreDb *db, GError **error)
{
    const char *what = NULL, *where = NULL;
    int e = 0;

    if (access(db->dir, W_OK) != 0) {
        e = errno;
        what = "directory";
        where = db->dir;
    } else if (access(db->path, W_OK) != 0 && errno != ENOENT) {
        e = errno;
        what = "file";
        where = db->path;
    }
    if (!what || (e != EROFS && e != EACCES && e != EPERM))
        return TRUE;
    g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                "%s: %s %s is %s (%s): cannot write the database and its WAL", db->path,
                what, where, e == EROFS ? "on a read-only filesystem" : "not writable",
                g_strerror(e));
    return FALSE;
}

/* Opens the connection and brings the schema up to date.  A corrupt file
 * is reported as STORE_ERROR_CORRUPT so the caller can move it aside. */
gboolean
store_connection_open(StoreDb *db, GError **error)
{
    g_autofree char *settings = NULL;
    int rc;

    if (!db->is_memory && !connection_check_writable(db, error))
        return FALSE;
    rc = sqlite3_open_v2(db->path, &db->sql,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "open");
        store_connection_close(db);
        return FALSE;
    }
    sqlite3_busy_timeout(db->sql, (int)db->opts.busy_timeout_ms);

    /* The first statement that reads the file: a non-database fails here.
     * auto_vacuum only takes effect on a file without tables; it lets the
     * file give freed pages back in small steps, and must precede WAL. */
    rc = sqlite3_exec(db->sql, "PRAGMA auto_vacuum = INCREMENTAL", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "read header");
        store_connection_close(db);
        return FALSE;
    }
    if (!db->is_memory && !pragma_text_is(db->sql, "PRAGMA journal_mode = WAL", "wal", &rc)) {
        if (rc == SQLITE_OK)
            rc = SQLITE_ERROR;
        store_set_error(db, error, rc, "enable WAL");
        store_connection_close(db);
        return FALSE;
    }
    if (!store_schema_migrate(db->sql, db->path, error)) {
        store_connection_close(db);
        return FALSE;
    }
    if (db->opts.verify_at_open && !pragma_text_is(db->sql, "PRAGMA quick_check(1)", "ok", &rc)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_CORRUPT, "%s: quick_check failed",
                    db->path);
        store_connection_close(db);
        return FALSE;
    }
    /* In WAL mode NORMAL loses nothing on a process crash, only possibly
     * the last commits on power loss, and saves an fsync per tick. */
    db->page_size = store_query_i64(db, "PRAGMA page_size", 0, 4096);
    settings = g_strdup_printf("PRAGMA synchronous = NORMAL;"
                               "PRAGMA journal_size_limit = %" G_GINT64_FORMAT ";"
                               "PRAGMA cache_size = -8192;"
                               "PRAGMA temp_store = MEMORY;",
                               STORE_WAL_CHECKPOINT_FRAMES * (db->page_size + 24));
    if (!store_exec(db, settings, error)) {
        store_connection_close(db);
        return FALSE;
    }
    sqlite3_wal_hook(db->sql, wal_hook, db);
    if (!db->is_memory)
        store_file_remember(db);
    return TRUE;
}

StoreDb *
store_db_alloc(const char *path, const StoreOptions *opts, GError **error)
{
    g_autoptr(StoreDb) db = NULL;

    if (!path || !*path) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "history database: empty path");
        return NULL;
    }
    db = g_new0(StoreDb, 1);
    db->path = g_strdup(path);
    db->is_memory = g_str_equal(path, ":memory:");
    if (!db->is_memory) {
        db->dir = g_path_get_dirname(path);
        db->wal_path = g_strconcat(path, "-wal", NULL);
    }
    if (opts)
        db->opts = *opts;
    else
        store_options_init(&db->opts);
    if (db->opts.now_ms == 0)
        db->opts.now_ms = g_get_real_time() / 1000;
    db->targets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, target_entry_free);
    g_queue_init(&db->pending);
    g_queue_init(&db->notices);
    db->rows_per_tick = 1;
    return g_steal_pointer(&db);
}

StoreDb *
store_db_open(const char *path, const StoreOptions *opts, GError **error)
{
    g_autoptr(StoreDb) db = store_db_alloc(path, opts, error);
    g_autoptr(GError) local = NULL;

    if (!db)
        return NULL;
    if (store_connection_open(db, &local))
        return g_steal_pointer(&db);
    if (db->is_memory || !g_error_matches(local, STORE_ERROR, STORE_ERROR_CORRUPT)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    if (!store_db_recover_corrupt(db, db->opts.now_ms, local->message, error))
        return NULL;
    return g_steal_pointer(&db);
}

void
store_db_close(StoreDb *db)
{
    if (!db)
        return;
    store_connection_close(db);
    store_pending_free_all(db);
    g_queue_clear_full(&db->notices, g_free);
    g_clear_pointer(&db->targets, g_hash_table_unref);
    g_free(db->incident);
    g_free(db->wal_path);
    g_free(db->path);
    g_free(db->dir);
    g_free(db);
}

void
store_db_get_stats(StoreDb *db, StoreStats *stats)
{
    *stats = db->stats;
    stats->pending_ticks = db->pending.length;
}

gint64
store_db_used_bytes(StoreDb *db)
{
    sqlite3_stmt *st = NULL;
    gint64 used = 0;

    if (!db->sql)
        return 0;
    if (sqlite3_prepare_v2(db->sql,
                           "SELECT (p.page_count - f.freelist_count) * s.page_size"
                           " FROM pragma_page_count p, pragma_freelist_count f,"
                           " pragma_page_size s", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        used = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return used;
}
