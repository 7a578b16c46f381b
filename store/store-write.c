/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-write: one transaction per tick, and the pending queue that keeps
 * ticks the database could not take yet (locked, full, unwritable).
 *
 * Names are resolved to integer ids through an in-memory cache; rows for a
 * new target or iothread are created inside the tick's transaction.
 * When a transaction fails the cache is dropped, because ids it learnt may
 * have been rolled back.  last_seen is rewritten at most once a minute so a
 * tick costs one row per iothread and not two.
 */
#include "store-private.h"

#define TOUCH_INTERVAL_MS 60000

typedef struct {
    StoreTick tick;
    StoreSample *samples;
    GStringChunk *strings;
} StorePendingTick;

void
store_sample_init(StoreSample *s)
{
    *s = (StoreSample){ 0 };
    metric_vec_init(&s->m);
}

void
store_psi_init(StorePsi *psi)
{
    *psi = (StorePsi){ METRIC_ABSENT, METRIC_ABSENT, METRIC_ABSENT, METRIC_ABSENT, METRIC_ABSENT };
}

void
store_host_cpu_init(StoreHostCpu *cpu)
{
    *cpu = (StoreHostCpu){ METRIC_ABSENT, METRIC_ABSENT };
}

void
store_tick_init(StoreTick *tick)
{
    *tick = (StoreTick){ 0 };
    store_psi_init(&tick->psi);
    store_host_cpu_init(&tick->cpu);
}

/* Rewrites row @id's last_seen with @stmt once TOUCH_INTERVAL_MS has passed
 * since *@touched_ms. */
static gboolean
row_touch(StoreDb *db, StoreStmt stmt, gint64 id, gint64 *touched_ms, gint64 now_ms,
          const char *name, GError **error)
{
    sqlite3_stmt *st;
    int rc;

    if (now_ms - *touched_ms < TOUCH_INTERVAL_MS)
        return TRUE;
    if (!(st = store_stmt(db, stmt, error)))
        return FALSE;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now_ms);
    if ((rc = sqlite3_step(st)) != SQLITE_DONE) {
        store_set_error(db, error, rc, name);
        return FALSE;
    }
    *touched_ms = now_ms;
    return TRUE;
}

static StoreTargetEntry *
target_resolve(StoreDb *db, const char *name, gint64 now_ms, GError **error)
{
    StoreTargetEntry *t = g_hash_table_lookup(db->targets, name);
    sqlite3_stmt *st;
    int rc;

    if (t)
        return row_touch(db, STMT_TARGET_TOUCH, t->id, &t->touched_ms, now_ms, name, error)
               ? t : NULL;
    if (!(st = store_stmt(db, STMT_TARGET_UPSERT, error)))
        return NULL;
    sqlite3_bind_int(st, 1, STORE_TARGET_QMP);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, now_ms);
    sqlite3_bind_int(st, 5, 0);
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        store_set_error(db, error, rc, name);
        return NULL;
    }
    t = g_new0(StoreTargetEntry, 1);
    t->id = sqlite3_column_int64(st, 0);
    t->touched_ms = now_ms;
    t->iothreads = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    sqlite3_reset(st);
    g_hash_table_insert(db->targets, g_strdup(name), t);
    return t;
}

gboolean
store_target_register(StoreDb *db, StoreTargetKind kind, const char *name, const char *uuid,
                      gint64 now_ms, GError **error)
{
    sqlite3_stmt *st;
    int rc;

    if (!name || kind < 0 || kind >= STORE_TARGET_KIND_MAX) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: register target: bad %s",
                    db->path, name ? "kind" : "name");
        return FALSE;
    }
    if (!store_db_check_file(db, now_ms, error) || !(st = store_stmt(db, STMT_TARGET_UPSERT, error)))
        return FALSE;
    sqlite3_bind_int(st, 1, kind);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    if (uuid)
        sqlite3_bind_text(st, 3, uuid, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, now_ms);
    sqlite3_bind_int(st, 5, 1);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW) {
        store_set_error(db, error, rc, name);
        return FALSE;
    }
    return TRUE;
}

gboolean
store_resolve_target(StoreDb *db, const char *target, gint64 now_ms, GError **error)
{
    return target_resolve(db, target, now_ms, error) != NULL;
}

gboolean
store_resolve_iothread(StoreDb *db, const char *target, const char *iothread, gint64 now_ms,
                       gint64 *id_out, GError **error)
{
    StoreTargetEntry *t = target_resolve(db, target, now_ms, error);
    StoreIdEntry *e;
    sqlite3_stmt *st;
    int rc;

    if (!t)
        return FALSE;
    if ((e = g_hash_table_lookup(t->iothreads, iothread))) {
        *id_out = e->id;
        return row_touch(db, STMT_IOTHREAD_TOUCH, e->id, &e->touched_ms, now_ms, iothread,
                         error);
    }
    if (!(st = store_stmt(db, STMT_IOTHREAD_UPSERT, error)))
        return FALSE;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, iothread, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, now_ms);
    if ((rc = sqlite3_step(st)) != SQLITE_ROW) {
        store_set_error(db, error, rc, iothread);
        return FALSE;
    }
    e = g_new0(StoreIdEntry, 1);
    e->id = sqlite3_column_int64(st, 0);
    e->touched_ms = now_ms;
    sqlite3_reset(st);
    g_hash_table_insert(t->iothreads, g_strdup(iothread), e);
    *id_out = e->id;
    return TRUE;
}

static gboolean
step_done(StoreDb *db, sqlite3_stmt *st, const char *what, GError **error)
{
    int rc = sqlite3_step(st);

    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, what);
        return FALSE;
    }
    return TRUE;
}

/*
 * Records the name @target goes by, in the tick's transaction, when it is
 * not the one this process last wrote: once per target after an open, and
 * again when the daemon learns another (QEMU answered with its -name).
 * The row keeps the last name known, also after the target is gone, so
 * that the history can be asked for by it.
 */
static gboolean
target_name_write(StoreDb *db, const char *target, const char *name, GError **error)
{
    StoreTargetEntry *t = g_hash_table_lookup(db->targets, target);
    sqlite3_stmt *st;
    int rc;

    if (!name || !t || !g_strcmp0(t->display_name, name))
        return TRUE;
    if (!(st = store_stmt(db, STMT_TARGET_NAME, error)))
        return FALSE;
    sqlite3_bind_int64(st, 1, t->id);
    sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
    rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, target);
        return FALSE;
    }
    g_free(t->display_name);
    t->display_name = g_strdup(name);
    return TRUE;
}

/* Binds sample @s as the row whose first parameter is @base + 1. */
static gboolean
bind_sample(StoreDb *db, sqlite3_stmt *st, int base, gint64 tick_id, const StoreSample *s,
            gint64 now_ms, GError **error)
{
    gint64 iothread_id;

    if (!store_resolve_iothread(db, s->target, s->iothread, now_ms, &iothread_id, error) ||
        !target_name_write(db, s->target, s->target_name, error))
        return FALSE;
    if (iothread_id >> STORE_KEY_SHIFT) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_FAILED, "%s: %s/%s: iothread id %"
                    G_GINT64_FORMAT " exceeds the sample key", db->path, s->target, s->iothread,
                    iothread_id);
        return FALSE;
    }
    sqlite3_bind_int64(st, base + 1, STORE_KEY(tick_id, iothread_id));
    for (int i = 0; i < METRIC_MAX; i++)
        store_bind_i64(st, base + 2 + i, s->m.v[i]);
    return TRUE;
}

static gboolean
write_samples(StoreDb *db, gint64 tick_id, const StoreTick *tick, GError **error)
{
    for (guint i = 0; i < tick->n_samples;) {
        gboolean batch = tick->n_samples - i >= STORE_SAMPLE_BATCH;
        guint n = batch ? STORE_SAMPLE_BATCH : 1;
        sqlite3_stmt *st = store_stmt(db, batch ? STMT_SAMPLE_INSERT_BATCH : STMT_SAMPLE_INSERT,
                                      error);

        if (!st)
            return FALSE;
        for (guint j = 0; j < n; j++)
            if (!bind_sample(db, st, (int)j * STORE_SAMPLE_COLUMNS, tick_id,
                             &tick->samples[i + j], tick->ts_ms, error))
                return FALSE;
        if (!step_done(db, st, tick->samples[i].iothread, error))
            return FALSE;
        i += n;
    }
    return TRUE;
}

static gboolean
write_tick_sql(StoreDb *db, const StoreTick *tick, GError **error)
{
    sqlite3_stmt *st;
    gint64 tick_id;

    if (!(st = store_stmt(db, STMT_BEGIN, error)) || !step_done(db, st, "begin tick", error))
        return FALSE;
    if (!(st = store_stmt(db, STMT_TICK_INSERT, error)))
        goto fail;
    sqlite3_bind_int64(st, 1, tick->ts_ms);
    sqlite3_bind_int64(st, 2, tick->len_ns);
    store_bind_i64(st, 3, tick->psi.cpu_some_us);
    store_bind_i64(st, 4, tick->psi.io_some_us);
    store_bind_i64(st, 5, tick->psi.io_full_us);
    store_bind_i64(st, 6, tick->psi.mem_some_us);
    store_bind_i64(st, 7, tick->psi.mem_full_us);
    store_bind_i64(st, 8, tick->cpu.busy_us);
    store_bind_i64(st, 9, tick->cpu.total_us);
    if (!step_done(db, st, "insert tick", error))
        goto fail;
    tick_id = sqlite3_last_insert_rowid(db->sql);
    if (!write_samples(db, tick_id, tick, error))
        goto fail;
    if (!(st = store_stmt(db, STMT_COMMIT, error)) || !step_done(db, st, "commit tick", error))
        goto fail;
    if (tick->n_samples > 0)
        db->rows_per_tick = tick->n_samples;
    return TRUE;

fail:
    if (!sqlite3_get_autocommit(db->sql))
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
    store_cache_clear(db);
    return FALSE;
}

static gboolean
tick_valid(StoreDb *db, const StoreTick *tick, GError **error)
{
    const char *bad = NULL;

    if (tick->ts_ms <= 0)
        bad = "timestamp";
    else if (tick->len_ns <= 0)
        bad = "length";
    for (guint i = 0; !bad && i < tick->n_samples; i++)
        if (!tick->samples[i].target || !tick->samples[i].iothread)
            bad = "sample without target or iothread name";
    if (bad) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: tick at %" G_GINT64_FORMAT
                    " ms: bad %s", db->path, tick->ts_ms, bad);
        return FALSE;
    }
    return TRUE;
}

static StorePendingTick *
pending_copy(const StoreTick *tick)
{
    StorePendingTick *p = g_new0(StorePendingTick, 1);

    p->tick = *tick;
    p->strings = g_string_chunk_new(256);
    p->samples = g_memdup2(tick->samples, sizeof(StoreSample) * tick->n_samples);
    for (guint i = 0; i < tick->n_samples; i++) {
        p->samples[i].target = g_string_chunk_insert_const(p->strings, tick->samples[i].target);
        p->samples[i].iothread = g_string_chunk_insert_const(p->strings, tick->samples[i].iothread);
        if (tick->samples[i].target_name)
            p->samples[i].target_name = g_string_chunk_insert_const(p->strings,
                                                                   tick->samples[i].target_name);
    }
    p->tick.samples = p->samples;
    return p;
}

static void
pending_free(gpointer data)
{
    StorePendingTick *p = data;

    g_string_chunk_free(p->strings);
    g_free(p->samples);
    g_free(p);
}

void
store_pending_free_all(StoreDb *db)
{
    g_queue_clear_full(&db->pending, pending_free);
}

gint64
store_pending_oldest_ts(StoreDb *db)
{
    StorePendingTick *p = g_queue_peek_head(&db->pending);

    return p ? p->tick.ts_ms : G_MAXINT64;
}

static void
health_set(StoreDb *db, StoreHealth health, const GError *cause)
{
    if (health == db->stats.health)
        return;
    if (db->stats.health == STORE_HEALTH_OK)
        db->dropped_before = db->stats.ticks_dropped;
    switch (health) {
    case STORE_HEALTH_OK:
        db->dropping = FALSE;
        store_notice(db, "history database %s: writing again; %" G_GUINT64_FORMAT
                     " ticks dropped while it could not (%" G_GUINT64_FORMAT " since start)",
                     db->path, db->stats.ticks_dropped - db->dropped_before,
                     db->stats.ticks_dropped);
        break;
    case STORE_HEALTH_BUSY:
        store_notice(db, "history database %s is locked by another process (%s); keeping "
                     "ticks in memory until it is free", db->path, cause->message);
        break;
    case STORE_HEALTH_FULL:
        store_notice(db, "history database %s: disk full (%s); keeping up to %u ticks in "
                     "memory, then dropping the oldest", db->path, cause->message,
                     db->opts.max_pending_ticks);
        break;
    case STORE_HEALTH_FAILED:
        store_notice(db, "history database %s: cannot write (%s); keeping up to %u ticks "
                     "in memory", db->path, cause->message, db->opts.max_pending_ticks);
        break;
    }
    db->stats.health = health;
}

static StoreHealth
health_for(const GError *e)
{
    if (g_error_matches(e, STORE_ERROR, STORE_ERROR_BUSY))
        return STORE_HEALTH_BUSY;
    if (g_error_matches(e, STORE_ERROR, STORE_ERROR_FULL))
        return STORE_HEALTH_FULL;
    return STORE_HEALTH_FAILED;
}

/* Writes @tick now; on a corrupt file, moves it aside and tries once more. */
static gboolean
write_tick_timed(StoreDb *db, const StoreTick *tick, GError **error)
{
    g_autoptr(GError) local = NULL;
    gint64 start = g_get_monotonic_time();
    gboolean ok = store_db_check_file(db, tick->ts_ms, &local);

    if (!ok && g_error_matches(local, STORE_ERROR, STORE_ERROR_CORRUPT)) {
        g_autofree char *cause = g_strdup(local->message);

        g_clear_error(&local);
        ok = store_db_recover_corrupt(db, tick->ts_ms, cause, &local);
    }
    if (ok)
        ok = write_tick_sql(db, tick, &local);
    if (!ok && g_error_matches(local, STORE_ERROR, STORE_ERROR_CORRUPT)) {
        g_autofree char *cause = g_strdup(local->message);

        g_clear_error(&local);
        ok = store_db_recover_corrupt(db, tick->ts_ms, cause, &local) &&
             write_tick_sql(db, tick, &local);
    }
    db->stats.last_write_us = g_get_monotonic_time() - start;
    db->stats.max_write_us = MAX(db->stats.max_write_us, db->stats.last_write_us);
    if (!ok) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    db->stats.ticks_written++;
    return TRUE;
}

/*
 * Writes pending ticks oldest first; stops at the first failure.
 *
 * After a full disk the WAL is first copied into the database and
 * truncated: it still holds the space of the commits that failed, and the
 * retry needs that space.  If even that fails the disk is still full and
 * nothing more is tried until the next tick.  While the queue drains, the
 * WAL hook keeps the WAL within its share of the free space (see
 * STORE_WAL_SPACE_SHARE), so the queue goes in however small the space
 * that came back, as long as the ticks themselves fit.
 */
static gboolean
pending_flush(StoreDb *db, GError **error)
{
    StorePendingTick *p;

    if (db->stats.health == STORE_HEALTH_FULL && !store_wal_truncate(db, error))
        return FALSE;

    while ((p = g_queue_peek_head(&db->pending))) {
        if (!write_tick_timed(db, &p->tick, error))
            return FALSE;
        pending_free(g_queue_pop_head(&db->pending));
    }
    return TRUE;
}

static void
pending_push(StoreDb *db, const StoreTick *tick)
{
    guint limit = MAX(db->opts.max_pending_ticks, 1);

    while (db->pending.length >= limit) {
        StorePendingTick *oldest = g_queue_pop_head(&db->pending);

        if (!db->dropping) {
            char when[32];

            store_time_format(oldest->tick.ts_ms, when);
            store_notice(db, "history database %s: %u ticks pending, the most kept in "
                         "memory: dropping the oldest from now on, starting with the tick "
                         "of %s; the count is logged when writing resumes", db->path, limit,
                         when);
        }
        db->dropping = TRUE;
        pending_free(oldest);
        db->stats.ticks_dropped++;
    }
    g_queue_push_tail(&db->pending, pending_copy(tick));
}

gboolean
store_flush(StoreDb *db, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (db->pending.length == 0)
        return TRUE;
    if (!pending_flush(db, &local)) {
        health_set(db, health_for(local), local);
        return TRUE;
    }
    health_set(db, STORE_HEALTH_OK, NULL);
    return TRUE;
}

gboolean
store_tick_write(StoreDb *db, const StoreTick *tick, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!tick_valid(db, tick, error))
        return FALSE;
    if (pending_flush(db, &local) && write_tick_timed(db, tick, &local)) {
        health_set(db, STORE_HEALTH_OK, NULL);
        return TRUE;
    }
    pending_push(db, tick);
    health_set(db, health_for(local), local);
    /* Give back at once what the failed commit left in the WAL, to the
     * other users of the filesystem too; the next tick retries anyway. */
    if (db->stats.health == STORE_HEALTH_FULL)
        store_wal_truncate(db, NULL);
    return TRUE;
}
