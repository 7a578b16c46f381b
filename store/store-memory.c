/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-memory: the policy's workload memory, one row per VM, iothread and
 * workload signature (store-memory.h).
 */
#include <stddef.h>

#include "store-memory.h"
#include "store-private.h"

/* The row's figures and their columns, in the order of migrations 9 and 12; the
 * statements below are made from this table, so a field is named once. */
static const struct {
    const char *column;
    gboolean real;              /* a double, else a gint64 (G_MININT64: NULL) */
    gsize offset;
} memory_columns[] = {
#define I(col, field) { col, FALSE, offsetof(PtMemoryRow, field) }
#define R(col, field) { col, TRUE, offsetof(PtMemoryRow, field) }
    I("have_winner", have_winner),
    I("winner_max_ns", winner_max_ns), I("winner_grow", winner_grow),
    I("winner_shrink", winner_shrink), R("winner_score", winner_score),
    I("winner_ticks", winner_ticks),
    I("anchor_max_ns", anchor_max_ns), I("anchor_grow", anchor_grow),
    I("anchor_shrink", anchor_shrink), R("anchor_score", anchor_score),
    R("noise", noise), I("last_probe_ticks", last_probe_ticks),
    R("last_probe_loss", last_probe_loss),
    I("learned", learned_ms), I("confirmed", confirmed_ms), I("seen", seen_ms),
    I("n_confirmed", n_confirmed), I("n_explorations", n_explorations),
    I("n_default_wins", n_default_wins), R("gain_sum", gain_sum),
    I("probe_ticks", probe_ticks), R("probe_loss_sum", probe_loss_sum),
    I("n_phases", n_phases), R("phase_ln_sum", phase_ln_sum),
    R("phase_ln_sumsq", phase_ln_sumsq),
    I("contended", contended),          /* migration 12 */
#undef I
#undef R
};

static gboolean
memory_names_ok(StoreDb *db, const char *vm, const char *iothread, gboolean need_iothread,
                const char *what, GError **error)
{
    if (vm && *vm && (!need_iothread || (iothread && *iothread)))
        return TRUE;
    g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: %s: a VM name%s is required",
                db->path, what, need_iothread ? " and an iothread" : "");
    return FALSE;
}

static char *
memory_columns_sql(void)
{
    GString *s = g_string_new(NULL);

    for (gsize i = 0; i < G_N_ELEMENTS(memory_columns); i++)
        g_string_append_printf(s, ", %s", memory_columns[i].column);
    return g_string_free(s, FALSE);
}

static gboolean
memory_insert(StoreDb *db, sqlite3_stmt *st, const char *vm, const char *iothread,
              const PtMemoryRow *row, GError **error)
{
    int rc;

    if (!row->signature) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: workload memory of %s/%s: "
                    "a row without a signature", db->path, vm, iothread);
        return FALSE;
    }
    sqlite3_reset(st);
    sqlite3_bind_text(st, 1, vm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, iothread, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 3, row->signature, -1, SQLITE_TRANSIENT);
    for (gsize i = 0; i < G_N_ELEMENTS(memory_columns); i++) {
        const char *field = (const char *)row + memory_columns[i].offset;

        if (memory_columns[i].real)
            sqlite3_bind_double(st, 4 + i, *(const double *)field);
        else
            store_bind_i64(st, 4 + i, *(const gint64 *)field);
    }
    rc = sqlite3_step(st);
    if (rc != SQLITE_DONE) {
        g_autofree char *what = g_strdup_printf("save workload memory %s of %s/%s",
                                                row->signature, vm, iothread);

        store_set_error(db, error, rc, what);
        return FALSE;
    }
    return TRUE;
}

/* Deletes the rows of @vm/@iothread (@iothread NULL: of all @vm's). */
static gboolean
memory_delete(StoreDb *db, const char *vm, const char *iothread, guint *dropped,
              GError **error)
{
    sqlite3_stmt *st = store_prepare(db, "DELETE FROM policy_memory WHERE vm = ?1"
                                     " AND (?2 IS NULL OR iothread = ?2)", error);
    int rc;

    if (!st)
        return FALSE;
    sqlite3_bind_text(st, 1, vm, -1, SQLITE_TRANSIENT);
    if (iothread)
        sqlite3_bind_text(st, 2, iothread, -1, SQLITE_TRANSIENT);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "forget workload memory");
        return FALSE;
    }
    if (dropped)
        *dropped = (guint)sqlite3_changes(db->sql);
    return TRUE;
}

static gboolean
memory_replace(StoreDb *db, const char *vm, const char *iothread, PtMemoryRow *const *rows,
               guint n, GError **error)
{
    g_autofree char *cols = memory_columns_sql();
    g_autoptr(GString) sql = g_string_new("INSERT INTO policy_memory (vm, iothread, signature");
    sqlite3_stmt *st;
    gboolean ok;

    if (!memory_delete(db, vm, iothread, NULL, error))
        return FALSE;
    g_string_append_printf(sql, "%s) VALUES (?, ?, ?", cols);
    for (gsize i = 0; i < G_N_ELEMENTS(memory_columns); i++)
        g_string_append(sql, ", ?");
    g_string_append_c(sql, ')');
    if (!(st = store_prepare(db, sql->str, error)))
        return FALSE;
    ok = TRUE;
    for (guint i = 0; ok && i < n; i++)
        ok = memory_insert(db, st, vm, iothread, rows[i], error);
    sqlite3_finalize(st);
    return ok;
}

gboolean
store_memory_save(StoreDb *db, const char *vm, const char *iothread, PtMemoryRow *const *rows,
                  guint n, gint64 now_ms, GError **error)
{
    gboolean ok;

    if (!memory_names_ok(db, vm, iothread, TRUE, "save workload memory", error) ||
        !store_db_check_file(db, now_ms, error))
        return FALSE;
    /* The old rows go and the new ones come together, or neither. */
    if (!store_exec(db, "SAVEPOINT memory_save", error))
        return FALSE;
    ok = memory_replace(db, vm, iothread, rows, n, error);
    if (ok && store_exec(db, "RELEASE memory_save", error))
        return TRUE;
    if (ok)
        store_exec(db, "ROLLBACK", NULL);
    else
        store_exec(db, "ROLLBACK TO memory_save; RELEASE memory_save", NULL);
    store_cache_clear(db);
    return FALSE;
}

static PtMemoryRow *
memory_row_read(sqlite3_stmt *st)
{
    PtMemoryRow *row = g_new0(PtMemoryRow, 1);

    row->signature = g_strdup((const char *)sqlite3_column_text(st, 0));
    for (gsize i = 0; i < G_N_ELEMENTS(memory_columns); i++) {
        char *field = (char *)row + memory_columns[i].offset;

        if (memory_columns[i].real)
            *(double *)field = sqlite3_column_double(st, 1 + i);
        else
            *(gint64 *)field = store_column_i64(st, 1 + i);
    }
    return row;
}

GPtrArray *
store_memory_load(StoreDb *db, const char *vm, const char *iothread, GError **error)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(
        (GDestroyNotify)pt_memory_row_free);
    g_autofree char *cols = memory_columns_sql();
    g_autofree char *sql = g_strdup_printf("SELECT signature%s FROM policy_memory"
                                           " WHERE vm = ? AND iothread = ? ORDER BY signature",
                                           cols);
    sqlite3_stmt *st;
    int rc;

    if (!memory_names_ok(db, vm, iothread, TRUE, "load workload memory", error) ||
        !(st = store_prepare(db, sql, error)))
        return NULL;
    sqlite3_bind_text(st, 1, vm, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, iothread, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        g_ptr_array_add(rows, memory_row_read(st));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "load workload memory");
        return NULL;
    }
    return g_steal_pointer(&rows);
}

GPtrArray *
store_memory_iothreads(StoreDb *db, const char *vm, GError **error)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    sqlite3_stmt *st;
    int rc;

    if (!memory_names_ok(db, vm, NULL, FALSE, "list workload memory", error) ||
        !(st = store_prepare(db, "SELECT DISTINCT iothread FROM policy_memory WHERE vm = ?"
                             " ORDER BY iothread", error)))
        return NULL;
    sqlite3_bind_text(st, 1, vm, -1, SQLITE_TRANSIENT);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        g_ptr_array_add(ids, g_strdup((const char *)sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "list workload memory");
        return NULL;
    }
    return g_steal_pointer(&ids);
}

gboolean
store_memory_forget(StoreDb *db, const char *vm, const char *iothread, gint64 now_ms,
                    guint *dropped, GError **error)
{
    return memory_names_ok(db, vm, iothread, FALSE, "forget workload memory", error) &&
           store_db_check_file(db, now_ms, error) &&
           memory_delete(db, vm, iothread, dropped, error);
}
