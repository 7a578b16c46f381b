/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The workload memory's table: rows saved and read back field by field,
 * a save that replaces an iothread's rows whole or not at all, forgetting
 * an iothread or a VM, and the migration from schema 8 that keeps what an
 * older file held.
 */
#include <sqlite3.h>
#include <string.h>

#include "store-memory.h"
#include "store-testutil.h"

#define T0 G_GINT64_CONSTANT(1764590400000)

/* A row whose every field differs from the others and from row @k's. */
static PtMemoryRow *
row_new(const char *signature, guint k)
{
    PtMemoryRow *r = g_new0(PtMemoryRow, 1);
    gint64 *ints[] = { &r->have_winner, &r->winner_max_ns, &r->winner_grow, &r->winner_shrink,
                       &r->winner_ticks, &r->anchor_max_ns, &r->anchor_grow, &r->anchor_shrink,
                       &r->last_probe_ticks, &r->learned_ms, &r->confirmed_ms, &r->seen_ms,
                       &r->n_confirmed, &r->n_explorations, &r->n_default_wins,
                       &r->probe_ticks, &r->n_phases, &r->contended };
    double *reals[] = { &r->winner_score, &r->anchor_score, &r->noise, &r->last_probe_loss,
                        &r->gain_sum, &r->probe_loss_sum, &r->phase_ln_sum,
                        &r->phase_ln_sumsq };

    r->signature = g_strdup(signature);
    for (guint i = 0; i < G_N_ELEMENTS(ints); i++)
        *ints[i] = 100 * k + i + 1;
    for (guint i = 0; i < G_N_ELEMENTS(reals); i++)
        *reals[i] = k + (i + 1) / 7.0;
    r->learned_ms = T0 + k;
    return r;
}

static void
assert_rows_equal(const PtMemoryRow *a, const PtMemoryRow *b)
{
    g_assert_cmpstr(a->signature, ==, b->signature);
    /* Every field but the signature is a number of 8 bytes. */
    g_assert_cmpmem((const char *)a + sizeof(char *), sizeof(*a) - sizeof(char *),
                    (const char *)b + sizeof(char *), sizeof(*b) - sizeof(char *));
}

#define SIG_A "qd1/4k/r100/iops16k-64k/qemu7.2/dev=vda"
#define SIG_B "qd16/4k/r100/iops64k-256k/qemu7.2/dev=vda"
#define SIG_C "qd16/64k/r0+f/iops1k-4k/qemu10.0/dev=/var/lib/a.qcow2"

static GPtrArray *
rows_new(const char *const *sigs, guint k)
{
    GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)pt_memory_row_free);

    for (guint i = 0; sigs[i]; i++)
        g_ptr_array_add(rows, row_new(sigs[i], k + i));
    return rows;
}

static void
assert_load(StoreDb *db, const char *vm, const char *iothread, GPtrArray *expect)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) got = store_memory_load(db, vm, iothread, &error);

    g_assert_no_error(error);
    g_assert_cmpuint(got->len, ==, expect->len);
    /* Read back in signature order, as the rows above are written. */
    for (guint i = 0; i < got->len; i++)
        assert_rows_equal(got->pdata[i], expect->pdata[i]);
}

static void
test_round_trip(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    const char *const sigs[] = { SIG_A, SIG_B, SIG_C, NULL };
    g_autoptr(GPtrArray) rows = rows_new(sigs, 1);
    g_autoptr(GPtrArray) other = rows_new(sigs, 7);
    g_autoptr(GPtrArray) fewer = NULL;
    g_autoptr(GPtrArray) none = g_ptr_array_new();

    test_db_setup(&fx, NULL);
    assert_load(fx.db, "vm-1", "iothread0", none);
    /* Never-known times (G_MININT64) are NULL and come back as such. */
    ((PtMemoryRow *)rows->pdata[1])->confirmed_ms = G_MININT64;
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread0",
                                    (PtMemoryRow *const *)rows->pdata, rows->len, T0, &error));
    g_assert_no_error(error);
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread1",
                                    (PtMemoryRow *const *)other->pdata, other->len, T0, &error));
    g_assert_true(store_memory_save(fx.db, "vm-2", "iothread0",
                                    (PtMemoryRow *const *)other->pdata, other->len, T0, &error));
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM policy_memory WHERE"
                                          " confirmed IS NULL"), ==, 1);
    assert_load(fx.db, "vm-1", "iothread0", rows);
    assert_load(fx.db, "vm-1", "iothread1", other);

    /* The memory outlives the process. */
    test_db_reopen(&fx, NULL);
    assert_load(fx.db, "vm-1", "iothread0", rows);

    /* A save replaces the iothread's rows, and only its. */
    g_ptr_array_remove_index(rows, 0);
    fewer = g_ptr_array_ref(rows);
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread0",
                                    (PtMemoryRow *const *)fewer->pdata, fewer->len, T0, &error));
    assert_load(fx.db, "vm-1", "iothread0", fewer);
    assert_load(fx.db, "vm-1", "iothread1", other);
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread0", NULL, 0, T0, &error));
    assert_load(fx.db, "vm-1", "iothread0", none);
    assert_load(fx.db, "vm-2", "iothread0", other);
}

static void
test_save_all_or_nothing(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    const char *const sigs[] = { SIG_A, SIG_B, NULL };
    const char *const twice[] = { SIG_C, SIG_C, NULL };
    g_autoptr(GPtrArray) rows = rows_new(sigs, 1);
    g_autoptr(GPtrArray) bad = rows_new(twice, 3);

    test_db_setup(&fx, NULL);
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread0",
                                    (PtMemoryRow *const *)rows->pdata, rows->len, T0, &error));
    /* The second row breaks the key after the first is written: the old
     * rows stay, the first new one goes. */
    g_assert_false(store_memory_save(fx.db, "vm-1", "iothread0",
                                     (PtMemoryRow *const *)bad->pdata, bad->len, T0, &error));
    g_assert_nonnull(error);
    g_test_message("%s", error->message);
    g_clear_error(&error);
    assert_load(fx.db, "vm-1", "iothread0", rows);
    /* The store works on. */
    g_assert_true(store_memory_save(fx.db, "vm-1", "iothread0",
                                    (PtMemoryRow *const *)bad->pdata, 1, T0, &error));
    g_assert_no_error(error);

    g_assert_false(store_memory_save(fx.db, "vm-1", NULL, NULL, 0, T0, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    g_clear_error(&error);
    g_assert_null(store_memory_load(fx.db, NULL, "iothread0", &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
}

static void
test_forget(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    const char *const sigs[] = { SIG_A, SIG_B, NULL };
    g_autoptr(GPtrArray) rows = rows_new(sigs, 1);
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    const char *const keys[][2] = { { "vm-1", "iothread0" }, { "vm-1", "iothread1" },
                                    { "vm-2", "iothread0" } };
    guint dropped = 99;

    test_db_setup(&fx, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(keys); i++)
        g_assert_true(store_memory_save(fx.db, keys[i][0], keys[i][1],
                                        (PtMemoryRow *const *)rows->pdata, rows->len, T0,
                                        &error));
    g_assert_true(store_memory_forget(fx.db, "vm-1", "iothread1", T0, &dropped, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(dropped, ==, 2);
    assert_load(fx.db, "vm-1", "iothread1", none);
    assert_load(fx.db, "vm-1", "iothread0", rows);
    /* The whole VM. */
    g_assert_true(store_memory_forget(fx.db, "vm-1", NULL, T0, &dropped, &error));
    g_assert_cmpuint(dropped, ==, 2);
    assert_load(fx.db, "vm-1", "iothread0", none);
    assert_load(fx.db, "vm-2", "iothread0", rows);
    g_assert_true(store_memory_forget(fx.db, "vm-3", NULL, T0, &dropped, &error));
    g_assert_cmpuint(dropped, ==, 0);
    g_assert_false(store_memory_forget(fx.db, NULL, NULL, T0, NULL, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
}

static void
sql_exec(const char *path, const char *sql)
{
    sqlite3 *db = NULL;

    g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(db, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(db);
}

/*
 * A file of schema 8, the last without the memory: migrations are only
 * ever appended, so it is today's file without what migration 9 adds.
 * Its rows survive the migration, and the memory starts empty.
 */
static void
test_migrate_from_8(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    const char *const sigs[] = { SIG_A, NULL };
    g_autoptr(GPtrArray) rows = rows_new(sigs, 1);
    g_autoptr(GPtrArray) none = g_ptr_array_new();
    g_autoptr(GPtrArray) active = NULL;
    StoreOverride ov = { 0 };

    g_assert_cmpint(store_schema_version(), >=, 9);
    test_db_setup(&fx, NULL);
    g_assert_true(store_policy_rule_set(fx.db, "web-*", "adaptive:latency", "uid 0", T0,
                                        &error));
    ov.created_ms = T0;
    ov.expires_ms = METRIC_ABSENT;
    ov.who = "uid 0";
    ov.target = "web-1";
    ov.iothread = "iothread0";
    ov.triple = (StoreTriple){ 0, METRIC_ABSENT, METRIC_ABSENT };
    g_assert_true(store_override_set(fx.db, &ov, NULL, &error));
    g_assert_no_error(error);
    g_clear_pointer(&fx.db, store_db_close);
    sql_exec(fx.path, "DROP TABLE policy_memory; ALTER TABLE targets DROP COLUMN display_name;"
                      " PRAGMA user_version = 8;");
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM sqlite_schema"
                                          " WHERE name = 'policy_memory'"), ==, 0);

    test_db_reopen(&fx, NULL);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA user_version"), ==, store_schema_version());
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM policy_rules"
                                          " WHERE glob = 'web-*'"), ==, 1);
    active = store_override_list_active(fx.db, T0 + 1, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 1);
    assert_load(fx.db, "web-1", "iothread0", none);
    g_assert_true(store_memory_save(fx.db, "web-1", "iothread0",
                                    (PtMemoryRow *const *)rows->pdata, rows->len, T0, &error));
    g_assert_no_error(error);
    assert_load(fx.db, "web-1", "iothread0", rows);
}

/*
 * A file of schema 11, before the memory said whether an exploration ran
 * under contention: its rows read back with that unknown (NULL), which
 * the policy takes as a quiet host's.
 */
static void
test_migrate_from_11(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    const char *const sigs[] = { SIG_A, SIG_B, NULL };
    g_autoptr(GPtrArray) rows = rows_new(sigs, 1);

    test_db_setup(&fx, NULL);
    g_assert_true(store_memory_save(fx.db, "web-1", "iothread0",
                                    (PtMemoryRow *const *)rows->pdata, rows->len, T0, &error));
    g_assert_no_error(error);
    g_clear_pointer(&fx.db, store_db_close);
    sql_exec(fx.path, "ALTER TABLE policy_memory DROP COLUMN contended; PRAGMA user_version = 11;");

    test_db_reopen(&fx, NULL);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA user_version"), ==, store_schema_version());
    for (guint i = 0; i < rows->len; i++)
        ((PtMemoryRow *)rows->pdata[i])->contended = G_MININT64;
    assert_load(fx.db, "web-1", "iothread0", rows);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/memory/round-trip", test_round_trip);
    g_test_add_func("/store/memory/save-all-or-nothing", test_save_all_or_nothing);
    g_test_add_func("/store/memory/forget", test_forget);
    g_test_add_func("/store/memory/migrate-from-8", test_migrate_from_8);
    g_test_add_func("/store/memory/migrate-from-11", test_migrate_from_11);
    return g_test_run();
}
