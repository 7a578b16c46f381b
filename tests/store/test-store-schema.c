/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Schema creation, forward migration from a version-1 file, and refusal
 * of a file from a newer schema.
 */
#include <glib/gstdio.h>

#include "store-testutil.h"

static void
test_fresh(void)
{
    g_auto(TestDb) fx = { 0 };

    test_db_setup(&fx, NULL);
    g_assert_nonnull(fx.db);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA user_version"), ==, store_schema_version());
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM sqlite_schema WHERE type = 'table'"
                                       " AND name IN ('targets','iothreads','ticks',"
                                       "'samples','rollup_1m','rollup_1h','decisions',"
                                       "'overrides','originals','policy_rules','policy_memory',"
                                       "'meta')"),
                    ==, 12);
    /* Nothing wrote per-device rows; migration 10 dropped their tables. */
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM sqlite_schema"
                                       " WHERE name IN ('devices','device_samples')"), ==, 0);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA auto_vacuum"), ==, 2);
    g_clear_pointer(&fx.db, store_db_close);
    /* WAL is a property of the file and survives the connection. */
    g_assert_cmpint(test_sql_int(fx.path, "SELECT journal_mode = 'wal' FROM pragma_journal_mode"),
                    ==, 1);
    /* Opening again runs no migration and keeps the version. */
    test_db_reopen(&fx, NULL);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA user_version"), ==, store_schema_version());
}

static void
test_migrate_v1(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "v1.db", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(GPtrArray) active = NULL;
    const StoreDecisionRow *d;
    const StoreRow *row;
    StoreFilter f;
    StoreTriple orig;
    g_autofree char *instance = NULL;
    guint n = 0;

    test_db_from_script(path, "schema-v1.sql");
    g_assert_cmpint(test_sql_int(path, "PRAGMA user_version"), ==, 1);

    db = store_db_open(path, NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpint(test_sql_int(path, "PRAGMA user_version"), ==, store_schema_version());
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('overrides')"
                                       " WHERE name = 'policy'"), ==, 1);
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM policy_rules"), ==, 0);

    /* Old rows read back through the current API. */
    store_filter_init(&f);
    cur = store_query_range(db, &f, &error);
    g_assert_no_error(error);
    while (store_cursor_next(cur, &row, &error) && row) {
        g_assert_cmpstr(row->target, ==, "web-1");
        g_assert_cmpstr(row->iothread, ==, "iothread0");
        g_assert_cmpint(row->sample.m.v[METRIC_KVM_EXITS], ==, METRIC_ABSENT);
        n++;
    }
    g_assert_no_error(error);
    g_assert_cmpuint(n, ==, 2);
    g_clear_pointer(&cur, store_cursor_free);
    cur = store_query_decisions(db, &f, &error);
    g_assert_true(store_cursor_next_decision(cur, &d, &error));
    g_assert_nonnull(d);
    g_assert_cmpint(d->new_triple.poll_max_ns, ==, 65536);
    g_assert_true(d->applied);
    active = store_override_list_active(db, 1764590500000, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 1);
    g_assert_null(((StoreOverrideRow *)active->pdata[0])->ov.policy);
    /* Originals saved before instances were recorded have none. */
    g_assert_true(store_original_get(db, "web-1", "iothread0", &orig, &instance, &error));
    g_assert_cmpint(orig.poll_max_ns, ==, 32768);
    g_assert_null(instance);
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM pragma_table_info('originals')"
                                       " WHERE name = 'instance'"), ==, 1);
    /* The version-1 file's device mapping goes with its table. */
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM sqlite_schema"
                                       " WHERE name IN ('devices','device_samples')"), ==, 0);

    /* And the migrated file takes new ticks next to the old ones. */
    {
        g_autoptr(TestTick) t = test_tick_new(1);

        test_tick_fill(t, 1764590403000, 3);
        g_assert_true(store_tick_write(db, &t->tick, &error));
        g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM samples"), ==, 3);
    }
    g_clear_pointer(&cur, store_cursor_free);
    g_clear_pointer(&db, store_db_close);
    test_dir_remove(dir);
}

/* The name of target @target goes by in @path's targets table, as an
 * integer test_sql_int() can read: 1 when it is @name, 0 when another,
 * -1 when NULL. */
static gint64
display_is(const char *path, const char *target, const char *name)
{
    g_autofree char *sql = g_strdup_printf("SELECT CASE WHEN display_name IS NULL THEN -1"
                                           " ELSE display_name = '%s' END FROM targets"
                                           " WHERE name = '%s'", name, target);

    return test_sql_int(path, sql);
}

/*
 * A file of schema 10, the last without targets' names: today's file
 * without the columns migrations 11 and 12 add.  The migration names a libvirt
 * target by its domain (its identity); a QMP target's name is unknown
 * until a tick brings it, and a tick that brings another replaces it.
 */
static void
test_migrate_names(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(TestTick) t = test_tick_new(8);

    test_db_setup(&fx, NULL);
    g_assert_true(store_target_register(fx.db, STORE_TARGET_LIBVIRT, "dom-a", NULL,
                                        1764590400000, &error));
    test_tick_fill(t, 1764590401000, 1);
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    g_assert_no_error(error);
    g_clear_pointer(&fx.db, store_db_close);
    test_sql_int(fx.path, "ALTER TABLE targets DROP COLUMN display_name");
    test_sql_int(fx.path, "ALTER TABLE policy_memory DROP COLUMN contended");
    test_sql_int(fx.path, "PRAGMA user_version = 10");
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM pragma_table_info('targets')"
                                          " WHERE name = 'display_name'"), ==, 0);

    test_db_reopen(&fx, NULL);
    g_assert_cmpint(test_sql_int(fx.path, "PRAGMA user_version"), ==, store_schema_version());
    g_assert_cmpint(display_is(fx.path, "dom-a", "dom-a"), ==, 1);
    g_assert_cmpint(display_is(fx.path, "vm0", "x"), ==, -1);
    g_assert_cmpint(display_is(fx.path, "vm1", "x"), ==, -1);

    /* The next tick names vm0 (QEMU's -name), in its own transaction. */
    test_tick_fill(t, 1764590402000, 2);
    for (guint i = 0; i < 4; i++)
        t->samples[i].target_name = "web";
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    g_assert_no_error(error);
    g_assert_cmpint(display_is(fx.path, "vm0", "web"), ==, 1);
    g_assert_cmpint(display_is(fx.path, "vm1", "x"), ==, -1);
    /* QEMU restarted on the socket under another -name. */
    test_tick_fill(t, 1764590403000, 3);
    for (guint i = 0; i < 4; i++)
        t->samples[i].target_name = "web-2";
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    g_assert_cmpint(display_is(fx.path, "vm0", "web-2"), ==, 1);

    names = store_target_names(fx.db, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(names->len, ==, 3);
    g_assert_cmpstr(((StoreTargetName *)names->pdata[0])->target, ==, "dom-a");
    g_assert_cmpstr(((StoreTargetName *)names->pdata[0])->name, ==, "dom-a");
    g_assert_cmpstr(((StoreTargetName *)names->pdata[1])->name, ==, "web-2");
    g_assert_null(((StoreTargetName *)names->pdata[2])->name);
}

static void
test_newer_refused(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "new.db", NULL);
    g_autofree char *sql = g_strdup_printf("PRAGMA user_version = %d",
                                           store_schema_version() + 1);
    g_autoptr(GError) error = NULL;
    StoreDb *db;
    sqlite3 *raw = NULL;

    g_assert_cmpint(sqlite3_open(path, &raw), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(raw, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(raw);
    db = store_db_open(path, NULL, &error);
    g_assert_null(db);
    g_assert_error(error, STORE_ERROR, STORE_ERROR_SCHEMA);
    /* Not mistaken for corruption: the file stays where it is. */
    g_assert_true(g_file_test(path, G_FILE_TEST_EXISTS));
    test_dir_remove(dir);
}

static void
test_enum_strings(void)
{
    for (int i = 0; i < STORE_RESOLUTION_MAX; i++)
        g_assert_cmpint(store_resolution_from_string(store_resolution_to_string(i)), ==, i);
    for (int i = 0; i < STORE_FORMAT_MAX; i++)
        g_assert_cmpint(store_format_from_string(store_format_to_string(i)), ==, i);
    for (int i = 0; i < STORE_TARGET_KIND_MAX; i++)
        g_assert_cmpint(store_target_kind_from_string(store_target_kind_to_string(i)), ==, i);
    g_assert_cmpint(store_resolution_from_string("5m"), ==, STORE_RESOLUTION_INVALID);
    g_assert_cmpint(store_format_from_string(NULL), ==, STORE_FORMAT_INVALID);
    g_assert_null(store_resolution_to_string(STORE_RESOLUTION_MAX));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/schema/fresh", test_fresh);
    g_test_add_func("/store/schema/migrate-v1", test_migrate_v1);
    g_test_add_func("/store/schema/migrate-names", test_migrate_names);
    g_test_add_func("/store/schema/newer-refused", test_newer_refused);
    g_test_add_func("/store/schema/enum-strings", test_enum_strings);
    return g_test_run();
}
