/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-private: what the store's own files share.  Not for other components.
 */
#pragma once

#include <sqlite3.h>
#include <sys/types.h>

#include "store.h"

/* WAL sizes (in pages) at which maintenance checkpoints, and at which a
 * commit does because maintenance has not.  A WAL file that a burst grew
 * past the first is cut back to it when it is next reset
 * (journal_size_limit), so it holds no more space than it normally needs. */
#define STORE_WAL_CHECKPOINT_FRAMES 512
#define STORE_WAL_FORCE_FRAMES 4096

/* Whatever the sizes above, the WAL may take at most this share (1/N) of
 * the space it and the filesystem's free space add up to: a checkpoint
 * into the database file then needs at most the WAL's size again, which
 * the free space still holds.  Without it, flushing 600 queued ticks after
 * a full disk (one transaction each, several pages per commit) grows a WAL
 * of megabytes that refills a small filesystem before any checkpoint. */
#define STORE_WAL_SPACE_SHARE 4

/* Sample rows per multi-row INSERT: one statement step instead of 32
 * saves most of the per-row statement overhead. */
#define STORE_SAMPLE_BATCH 32
/* The key, then one column per metric (metric-table.h). */
#define STORE_SAMPLE_COLUMNS (1 + METRIC_MAX)

/* samples.key = tick id << STORE_KEY_SHIFT | iothread id */
#define STORE_KEY_SHIFT 20
#define STORE_KEY_SHIFT_SQL "20"
#define STORE_KEY_MASK_SQL "1048575"
#define STORE_KEY(tick_id, iothread_id) (((tick_id) << STORE_KEY_SHIFT) | (iothread_id))

/* Statements prepared once per connection and reused. */
typedef enum {
    STMT_BEGIN,
    STMT_COMMIT,
    STMT_ROLLBACK,
    STMT_TICK_INSERT,
    STMT_SAMPLE_INSERT,
    STMT_SAMPLE_INSERT_BATCH,   /* STORE_SAMPLE_BATCH rows at once */
    STMT_TARGET_UPSERT,
    STMT_TARGET_TOUCH,
    STMT_IOTHREAD_UPSERT,
    STMT_IOTHREAD_TOUCH,
    STMT_TARGET_NAME,
    STMT_MAX,
} StoreStmt;

typedef struct {
    gint64 id;
    gint64 touched_ms;          /* last_seen last written */
    char *display_name;         /* display_name last written by this process */
    GHashTable *iothreads;      /* name -> StoreIdEntry */
} StoreTargetEntry;

typedef struct {
    gint64 id;
    gint64 touched_ms;
} StoreIdEntry;

struct StoreDb {
    char *path;
    gboolean is_memory;
    sqlite3 *sql;
    StoreOptions opts;
    dev_t dev;
    ino_t ino;
    sqlite3_stmt *stmt[STMT_MAX];
    GHashTable *targets;        /* name -> StoreTargetEntry */
    GQueue pending;             /* StorePendingTick*, oldest first */
    GQueue notices;             /* char* */
    StoreStats stats;
    gint64 rows_per_tick;       /* recent sample rows per tick, for chunking */
    gboolean dropping;          /* dropping since health was last OK */
    guint64 dropped_before;     /* ticks_dropped when health last left OK */
    int wal_frames;             /* WAL size after the last commit */
    gint64 page_size;           /* bytes; a WAL frame is this plus 24 */
    char *dir;                  /* where the WAL lives, for its free space */
    gboolean readonly;          /* store_db_open_readonly(): no write, no reopen */
    char *wal_path;             /* "<path>-wal" */
    gboolean wal_known;         /* wal_dev, wal_ino: the WAL the connection has open */
    dev_t wal_dev;
    ino_t wal_ino;
    char *incident;             /* store_db_last_incident() */
    gint64 incident_ms;
};

/* store-schema.c */
gboolean store_schema_migrate(sqlite3 *sql, const char *path, GError **error);

/* store-db.c */
/* A handle on @path without a connection yet; @opts may be NULL. */
StoreDb *store_db_alloc(const char *path, const StoreOptions *opts, GError **error);
sqlite3_stmt *store_stmt(StoreDb *db, StoreStmt which, GError **error);
sqlite3_stmt *store_prepare(StoreDb *db, const char *sql, GError **error);
/* "<prefix>poll_max_ns, <prefix>poll_grow, ...": the metric columns of
 * samples, in table order.  Free with g_free(). */
char *store_sample_columns_sql(const char *prefix);
/* The gauges the metric table rolls up (MetricDef.rollup), in table order,
 * into @ids; returns how many. */
int store_rolled_gauges(MetricId ids[METRIC_MAX]);
/* ", <prefix>poll_max_ns, <prefix>poll_grow, ...": their columns. */
char *store_rolled_columns_sql(const char *prefix);
gboolean store_exec(StoreDb *db, const char *sql, GError **error);
void store_set_error(StoreDb *db, GError **error, int rc, const char *what);
void store_set_error_sql(sqlite3 *sql, const char *path, GError **error, int rc,
                         const char *what);
void store_notice(StoreDb *db, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void store_cache_clear(StoreDb *db);
/* Opens the connection at db->path and brings the schema up to date; a
 * corrupt file fails with STORE_ERROR_CORRUPT. */
gboolean store_connection_open(StoreDb *db, GError **error);
/* Finalizes the statements and closes the connection; the handle stays. */
void store_connection_close(StoreDb *db);

/* store-file.c */
/* Notes which file and which WAL the connection just opened has. */
void store_file_remember(StoreDb *db);
gboolean store_db_check_file(StoreDb *db, gint64 now_ms, GError **error);
/* Checkpoints the whole WAL into the database and truncates it to zero
 * bytes, giving its space back.  STORE_ERROR_FULL when the database file
 * cannot grow to take the WAL's pages. */
gboolean store_wal_truncate(StoreDb *db, GError **error);
gboolean store_db_recover_corrupt(StoreDb *db, gint64 now_ms, const char *cause,
                                  GError **error);
/* Runs @sql (binding @arg to ?1 if it has a parameter) for one integer. */
gint64 store_query_i64(StoreDb *db, const char *sql, gint64 arg, gint64 fallback);
gint64 store_meta_get_int(StoreDb *db, const char *key, gint64 fallback);
gboolean store_meta_set_int(StoreDb *db, const char *key, gint64 value, GError **error);

/* Binds @v to @idx, METRIC_ABSENT as NULL. */
static inline void
store_bind_i64(sqlite3_stmt *st, int idx, gint64 v)
{
    if (v == METRIC_ABSENT)
        sqlite3_bind_null(st, idx);
    else
        sqlite3_bind_int64(st, idx, v);
}

static inline gint64
store_column_i64(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return METRIC_ABSENT;
    return sqlite3_column_int64(st, col);
}

/* store-write.c */
/* The target's row, created if missing. */
gboolean store_resolve_target(StoreDb *db, const char *target, gint64 now_ms, GError **error);
/* The id of target/iothread, creating either row if missing. */
gboolean store_resolve_iothread(StoreDb *db, const char *target, const char *iothread,
                                gint64 now_ms, gint64 *id_out, GError **error);
void store_pending_free_all(StoreDb *db);
gint64 store_pending_oldest_ts(StoreDb *db);
