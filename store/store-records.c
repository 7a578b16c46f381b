/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-records: decisions, operator overrides and the original polling
 * values, the small tables written outside the per-tick path.
 */
#include <string.h>

#include "store-private.h"

static gboolean
name_ok(StoreDb *db, const char *target, const char *iothread, const char *what,
        GError **error)
{
    if (target && iothread)
        return TRUE;
    g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: %s: target and iothread names "
                "are required", db->path, what);
    return FALSE;
}

static void
bind_triple(sqlite3_stmt *st, int first, const StoreTriple *t)
{
    store_bind_i64(st, first, t->poll_max_ns);
    store_bind_i64(st, first + 1, t->poll_grow);
    store_bind_i64(st, first + 2, t->poll_shrink);
}

static void
bind_text_or_null(sqlite3_stmt *st, int idx, const char *s)
{
    if (s)
        sqlite3_bind_text(st, idx, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, idx);
}

/* Steps a one-shot statement in autocommit mode, then finalizes it. */
static gboolean
step_once(StoreDb *db, sqlite3_stmt *st, const char *what, GError **error)
{
    int rc = sqlite3_step(st);

    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        store_set_error(db, error, rc, what);
        store_cache_clear(db);
        return FALSE;
    }
    return TRUE;
}

gboolean
store_decision_insert(StoreDb *db, const StoreDecision *d, GError **error)
{
    gint64 iothread_id;
    sqlite3_stmt *st;

    if (!name_ok(db, d->target, d->iothread, "decision", error) ||
        !store_db_check_file(db, d->ts_ms, error) ||
        !store_resolve_iothread(db, d->target, d->iothread, d->ts_ms, &iothread_id, error) ||
        !(st = store_prepare(db, "INSERT INTO decisions (ts, iothread_id, policy, old_max_ns,"
                             " old_grow, old_shrink, new_max_ns, new_grow, new_shrink,"
                             " reason, applied, cause) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                             error)))
        return FALSE;
    sqlite3_bind_int64(st, 1, d->ts_ms);
    sqlite3_bind_int64(st, 2, iothread_id);
    sqlite3_bind_text(st, 3, d->policy ? d->policy : "", -1, SQLITE_TRANSIENT);
    bind_triple(st, 4, &d->old_triple);
    bind_triple(st, 7, &d->new_triple);
    bind_text_or_null(st, 10, d->reason);
    sqlite3_bind_int(st, 11, d->applied ? 1 : 0);
    bind_text_or_null(st, 12, d->cause);
    return step_once(db, st, "insert decision", error);
}

/* Ends the overrides active at @ov's creation for its target and iothread
 * (the whole target when NULL): @ov replaces them. */
static gboolean
override_end_replaced(StoreDb *db, const StoreOverride *ov, gint64 iothread_id, GError **error)
{
    sqlite3_stmt *st = store_prepare(db, "UPDATE overrides SET cleared = ?1"
                                     " WHERE target_id IN (SELECT id FROM targets WHERE name = ?2)"
                                     " AND iothread_id IS ?3 AND cleared IS NULL"
                                     " AND (expires IS NULL OR expires > ?1)", error);

    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, ov->created_ms);
    sqlite3_bind_text(st, 2, ov->target, -1, SQLITE_TRANSIENT);
    store_bind_i64(st, 3, iothread_id);
    return step_once(db, st, "end replaced override", error);
}

static gboolean
override_exists(StoreDb *db, gint64 id)
{
    sqlite3_stmt *st = store_prepare(db, "SELECT 1 FROM overrides WHERE id = ?", NULL);
    int rc;

    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW;
}

/* Inserts @ov under a new id, or under ov->id when @keep_id (a row with
 * that id already there is left as it is: ignored). */
static gboolean
override_insert(StoreDb *db, const StoreOverride *ov, gint64 iothread_id, gboolean keep_id,
                gint64 *id_out, GError **error)
{
    sqlite3_stmt *st = store_prepare(db, "INSERT OR IGNORE INTO overrides (id, created,"
                                     " expires, who, target_id, iothread_id, poll_max_ns,"
                                     " poll_grow, poll_shrink, reason, policy)"
                                     " SELECT ?11, ?1, ?2, ?3, t.id, ?4, ?5, ?6, ?7, ?8, ?9"
                                     " FROM targets t WHERE t.name = ?10 RETURNING id", error);

    if (!st)
        return FALSE;
    store_bind_i64(st, 11, keep_id ? ov->id : METRIC_ABSENT);
    sqlite3_bind_int64(st, 1, ov->created_ms);
    store_bind_i64(st, 2, ov->expires_ms);
    sqlite3_bind_text(st, 3, ov->who, -1, SQLITE_TRANSIENT);
    store_bind_i64(st, 4, iothread_id);
    bind_triple(st, 5, &ov->triple);
    bind_text_or_null(st, 8, ov->reason);
    bind_text_or_null(st, 9, ov->policy);
    sqlite3_bind_text(st, 10, ov->target, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_ROW) {
        int rc = sqlite3_finalize(st);

        if (rc == SQLITE_OK && keep_id && override_exists(db, ov->id))
            return TRUE;    /* there already */
        if (rc == SQLITE_OK)
            g_set_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND, "%s: override: unknown "
                        "target %s", db->path, ov->target);
        else
            store_set_error(db, error, rc, "insert override");
        return FALSE;
    }
    if (id_out)
        *id_out = sqlite3_column_int64(st, 0);
    return step_once(db, st, "insert override", error);
}

/* Checks @ov and the file, and resolves @ov's iothread into @iothread_id
 * (METRIC_ABSENT for the whole target). */
static gboolean
override_prepare(StoreDb *db, const StoreOverride *ov, gboolean with_id, gint64 *iothread_id,
                 GError **error)
{
    *iothread_id = METRIC_ABSENT;
    if (!ov->target || !ov->who || (with_id && ov->id <= 0)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: override: %starget and who "
                    "are required", db->path, with_id ? "id, " : "");
        return FALSE;
    }
    if (!store_db_check_file(db, ov->created_ms, error))
        return FALSE;
    /* Resolving an iothread also resolves (creates) its target; a new
     * whole-target override looks the target up (override_insert()), and
     * one written again creates it: a file opened anew lacks a target
     * whose QEMU is gone, and its override must outlive a restart. */
    if (ov->iothread)
        return store_resolve_iothread(db, ov->target, ov->iothread, ov->created_ms,
                                      iothread_id, error);
    return !with_id || store_resolve_target(db, ov->target, ov->created_ms, error);
}

gboolean
store_override_set(StoreDb *db, const StoreOverride *ov, gint64 *id_out, GError **error)
{
    gint64 iothread_id;
    gboolean ok;

    if (!override_prepare(db, ov, FALSE, &iothread_id, error))
        return FALSE;
    /* The replaced rows end and the new one starts together, or neither. */
    if (!store_exec(db, "SAVEPOINT override_set", error))
        return FALSE;
    ok = override_end_replaced(db, ov, iothread_id, error) &&
         override_insert(db, ov, iothread_id, FALSE, id_out, error);
    if (ok && store_exec(db, "RELEASE override_set", error))
        return TRUE;
    if (ok)
        store_exec(db, "ROLLBACK", NULL);
    else
        store_exec(db, "ROLLBACK TO override_set; RELEASE override_set", NULL);
    return FALSE;
}

gboolean
store_override_rewrite(StoreDb *db, const StoreOverride *ov, GError **error)
{
    gint64 iothread_id;

    return override_prepare(db, ov, TRUE, &iothread_id, error) &&
           override_insert(db, ov, iothread_id, TRUE, NULL, error);
}

gboolean
store_override_clear(StoreDb *db, gint64 id, gint64 now_ms, GError **error)
{
    sqlite3_stmt *st = store_prepare(db, "UPDATE overrides SET cleared = ?2 WHERE id = ?1"
                                     " AND cleared IS NULL AND (expires IS NULL OR expires > ?2)",
                                     error);

    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, id);
    sqlite3_bind_int64(st, 2, now_ms);
    if (!step_once(db, st, "clear override", error))
        return FALSE;
    if (sqlite3_changes(db->sql) == 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND, "%s: override %" G_GINT64_FORMAT
                    " is not active", db->path, id);
        return FALSE;
    }
    return TRUE;
}

void
store_override_row_free(StoreOverrideRow *row)
{
    if (!row)
        return;
    g_free(row->strings);
    g_free(row);
}

/* Packs the row's strings into one allocation so the row frees in one go. */
static StoreOverrideRow *
override_row_new(sqlite3_stmt *st)
{
    StoreOverrideRow *row = g_new0(StoreOverrideRow, 1);
    const int text_cols[] = { 3, 4, 5, 6, 10 };
    const char **fields[] = { &row->ov.who, &row->ov.target, &row->ov.iothread,
                              &row->ov.reason, &row->ov.policy };
    gsize total = 0, off = 0;

    for (gsize i = 0; i < G_N_ELEMENTS(text_cols); i++)
        total += sqlite3_column_bytes(st, text_cols[i]) + 1;
    row->strings = g_malloc(total);
    for (gsize i = 0; i < G_N_ELEMENTS(text_cols); i++) {
        const char *s = (const char *)sqlite3_column_text(st, text_cols[i]);
        gsize n = sqlite3_column_bytes(st, text_cols[i]);

        if (!s) {
            *fields[i] = NULL;
            continue;
        }
        memcpy(row->strings + off, s, n + 1);
        *fields[i] = row->strings + off;
        off += n + 1;
    }
    row->ov.id = sqlite3_column_int64(st, 0);
    row->ov.created_ms = sqlite3_column_int64(st, 1);
    row->ov.expires_ms = store_column_i64(st, 2);
    row->ov.triple.poll_max_ns = store_column_i64(st, 7);
    row->ov.triple.poll_grow = store_column_i64(st, 8);
    row->ov.triple.poll_shrink = store_column_i64(st, 9);
    return row;
}

GPtrArray *
store_override_list_active(StoreDb *db, gint64 now_ms, GError **error)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(
        (GDestroyNotify)store_override_row_free);
    sqlite3_stmt *st = store_prepare(
        db, "SELECT o.id, o.created, o.expires, o.who, t.name, i.name, o.reason,"
            " o.poll_max_ns, o.poll_grow, o.poll_shrink, o.policy"
            " FROM overrides o JOIN targets t ON t.id = o.target_id"
            " LEFT JOIN iothreads i ON i.id = o.iothread_id"
            " WHERE o.cleared IS NULL AND (o.expires IS NULL OR o.expires > ?1)"
            /* A newer override of the same target and iothread replaced
             * it, whether that one still holds or not.  Rows stacked by
             * earlier versions, which kept both, are read the same way. */
            " AND NOT EXISTS (SELECT 1 FROM overrides n WHERE n.target_id = o.target_id"
            "  AND n.iothread_id IS o.iothread_id AND n.id > o.id)"
            " ORDER BY o.created, o.id", error);
    int rc;

    if (!st)
        return NULL;
    sqlite3_bind_int64(st, 1, now_ms);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        g_ptr_array_add(rows, override_row_new(st));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "list overrides");
        return NULL;
    }
    return g_steal_pointer(&rows);
}

void
store_policy_rule_free(StorePolicyRule *rule)
{
    if (!rule)
        return;
    g_free(rule->glob);
    g_free(rule->policy);
    g_free(rule->who);
    g_free(rule);
}

gboolean
store_policy_rule_set(StoreDb *db, const char *glob, const char *policy, const char *who,
                      gint64 now_ms, GError **error)
{
    sqlite3_stmt *st;

    if (!glob || !*glob || !policy || !*policy || !who) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: policy rule: glob, policy "
                    "and who are required", db->path);
        return FALSE;
    }
    if (!store_db_check_file(db, now_ms, error) ||
        !(st = store_prepare(db, "INSERT INTO policy_rules VALUES (?1, ?2, ?3, ?4)"
                             " ON CONFLICT (glob) DO UPDATE SET policy = ?2, set_at = ?3,"
                             " who = ?4", error)))
        return FALSE;
    sqlite3_bind_text(st, 1, glob, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, policy, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 3, now_ms);
    sqlite3_bind_text(st, 4, who, -1, SQLITE_TRANSIENT);
    return step_once(db, st, "set policy rule", error);
}

gboolean
store_policy_rule_clear(StoreDb *db, const char *glob, GError **error)
{
    sqlite3_stmt *st = store_prepare(db, "DELETE FROM policy_rules WHERE glob = ?", error);

    if (!st)
        return FALSE;
    sqlite3_bind_text(st, 1, glob, -1, SQLITE_TRANSIENT);
    if (!step_once(db, st, "clear policy rule", error))
        return FALSE;
    if (sqlite3_changes(db->sql) == 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND, "%s: no policy rule for %s",
                    db->path, glob);
        return FALSE;
    }
    return TRUE;
}

GPtrArray *
store_policy_rule_list(StoreDb *db, GError **error)
{
    g_autoptr(GPtrArray) rules = g_ptr_array_new_with_free_func(
        (GDestroyNotify)store_policy_rule_free);
    sqlite3_stmt *st = store_prepare(db, "SELECT glob, policy, set_at, who FROM policy_rules"
                                     " ORDER BY set_at, glob", error);
    int rc;

    if (!st)
        return NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        StorePolicyRule *r = g_new0(StorePolicyRule, 1);

        r->glob = g_strdup((const char *)sqlite3_column_text(st, 0));
        r->policy = g_strdup((const char *)sqlite3_column_text(st, 1));
        r->set_ms = sqlite3_column_int64(st, 2);
        r->who = g_strdup((const char *)sqlite3_column_text(st, 3));
        g_ptr_array_add(rules, r);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "list policy rules");
        return NULL;
    }
    return g_steal_pointer(&rules);
}

static gboolean
store_original_put(StoreDb *db, const char *target, const char *iothread,
                   const StoreTriple *triple, const char *instance, gint64 now_ms,
                   gboolean same_instance, GError **error)
{
    gint64 iothread_id;
    sqlite3_stmt *st;

    /* IS NOT: two unknown instances count as the same, as before instances
     * were recorded. */
    if (!name_ok(db, target, iothread, "save original", error) ||
        !store_db_check_file(db, now_ms, error) ||
        !store_resolve_iothread(db, target, iothread, now_ms, &iothread_id, error) ||
        !(st = store_prepare(db, "INSERT INTO originals (iothread_id, saved, poll_max_ns,"
                             " poll_grow, poll_shrink, instance) VALUES (?,?,?,?,?,?)"
                             " ON CONFLICT (iothread_id) DO UPDATE SET saved = excluded.saved,"
                             " poll_max_ns = excluded.poll_max_ns,"
                             " poll_grow = excluded.poll_grow,"
                             " poll_shrink = excluded.poll_shrink,"
                             " instance = excluded.instance"
                             " WHERE ?7 OR instance IS NOT excluded.instance", error)))
        return FALSE;
    sqlite3_bind_int64(st, 1, iothread_id);
    sqlite3_bind_int64(st, 2, now_ms);
    bind_triple(st, 3, triple);
    bind_text_or_null(st, 6, instance);
    sqlite3_bind_int(st, 7, same_instance);
    return step_once(db, st, "save original", error);
}

gboolean
store_original_save(StoreDb *db, const char *target, const char *iothread,
                    const StoreTriple *triple, const char *instance, gint64 now_ms,
                    GError **error)
{
    return store_original_put(db, target, iothread, triple, instance, now_ms, FALSE, error);
}

gboolean
store_original_replace(StoreDb *db, const char *target, const char *iothread,
                       const StoreTriple *triple, const char *instance, gint64 now_ms,
                       GError **error)
{
    return store_original_put(db, target, iothread, triple, instance, now_ms, TRUE, error);
}

gboolean
store_original_get(StoreDb *db, const char *target, const char *iothread, StoreTriple *triple,
                   char **instance, GError **error)
{
    sqlite3_stmt *st;
    int rc;

    if (!name_ok(db, target, iothread, "get original", error) ||
        !(st = store_prepare(db, "SELECT o.poll_max_ns, o.poll_grow, o.poll_shrink, o.instance"
                             " FROM originals o JOIN iothreads i ON i.id = o.iothread_id"
                             " JOIN targets t ON t.id = i.target_id"
                             " WHERE t.name = ? AND i.name = ?", error)))
        return FALSE;
    sqlite3_bind_text(st, 1, target, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, iothread, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        triple->poll_max_ns = store_column_i64(st, 0);
        triple->poll_grow = store_column_i64(st, 1);
        triple->poll_shrink = store_column_i64(st, 2);
        if (instance)
            *instance = g_strdup((const char *)sqlite3_column_text(st, 3));
    }
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return TRUE;
    if (rc == SQLITE_DONE)
        g_set_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND, "%s: no original values saved "
                    "for %s/%s", db->path, target, iothread);
    else
        store_set_error(db, error, rc, "get original");
    return FALSE;
}

gboolean
store_original_drop(StoreDb *db, const char *target, guint *dropped, GError **error)
{
    sqlite3_stmt *st;

    if (!target) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: drop originals: a target "
                    "name is required", db->path);
        return FALSE;
    }
    if (!store_db_check_file(db, g_get_real_time() / 1000, error) ||
        !(st = store_prepare(db, "DELETE FROM originals WHERE iothread_id IN"
                             " (SELECT i.id FROM iothreads i JOIN targets t"
                             " ON t.id = i.target_id WHERE t.name = ?)", error)))
        return FALSE;
    sqlite3_bind_text(st, 1, target, -1, SQLITE_TRANSIENT);
    if (!step_once(db, st, "drop originals", error))
        return FALSE;
    if (dropped)
        *dropped = (guint)sqlite3_changes(db->sql);
    return TRUE;
}

gboolean
store_target_known(StoreDb *db, const char *name, gboolean *known, GError **error)
{
    sqlite3_stmt *st;
    int rc;

    if (!(st = store_prepare(db, "SELECT 1 FROM targets WHERE name = ?", error)))
        return FALSE;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        store_set_error(db, error, rc, name);
        return FALSE;
    }
    *known = rc == SQLITE_ROW;
    return TRUE;
}

gboolean
store_runtime_mode_set(StoreDb *db, int mode, GError **error)
{
    if (!store_db_check_file(db, g_get_real_time() / 1000, error))
        return FALSE;
    return store_meta_set_int(db, "runtime_mode", mode < 0 ? -1 : mode, error);
}

int
store_runtime_mode_get(StoreDb *db)
{
    if (!db->sql)
        return -1;
    return (int)store_meta_get_int(db, "runtime_mode", -1);
}
