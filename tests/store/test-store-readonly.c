/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store_db_open_readonly(): reads a database in place without migrating,
 * writing or creating anything beside it, and refuses what it cannot read
 * with an error naming the file and the cause.
 */
#include <glib/gstdio.h>
#include <sys/stat.h>

#include "store-testutil.h"

/* The folder's names and each file's size and mtime, one line each. */
static char *
dir_state(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func(g_free);
    const char *name;

    g_assert_nonnull(d);
    while ((name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        struct stat st;

        g_assert_cmpint(g_stat(p, &st), ==, 0);
        g_ptr_array_add(lines, g_strdup_printf("%s %lld %lld.%09ld", name,
                                               (long long)st.st_size,
                                               (long long)st.st_mtim.tv_sec,
                                               st.st_mtim.tv_nsec));
    }
    g_ptr_array_sort(lines, (GCompareFunc)g_strcmp0);
    g_ptr_array_add(lines, NULL);
    return g_strjoinv("\n", (char **)lines->pdata);
}

static char *
file_bytes(const char *path, gsize *len)
{
    char *data = NULL;

    g_assert_true(g_file_get_contents(path, &data, len, NULL));
    return data;
}

static guint
count_rows(StoreDb *db)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    const StoreRow *row;
    StoreFilter f;
    guint n = 0;

    store_filter_init(&f);
    cur = store_query_range(db, &f, &error);
    g_assert_no_error(error);
    while (store_cursor_next(cur, &row, &error) && row)
        n++;
    g_assert_no_error(error);
    return n;
}

/* A cleanly closed database: read, not written, nothing made beside it. */
static void
test_untouched(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(4);
    g_autofree char *before = NULL, *after = NULL, *bytes = NULL, *bytes_after = NULL;
    gsize len, len_after;
    StoreDb *db;

    test_db_setup(&fx, NULL);
    for (int i = 0; i < 3; i++) {
        test_tick_fill(t, 1764590400000 + i * 1000, i + 1);
        g_assert_true(store_tick_write(fx.db, &t->tick, &error));
        g_assert_no_error(error);
    }
    g_clear_pointer(&fx.db, store_db_close);
    before = dir_state(fx.dir);
    bytes = file_bytes(fx.path, &len);
    /* mtime has a coarse clock on some filesystems: make a change visible. */
    g_usleep(20 * 1000);

    db = store_db_open_readonly(fx.path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(count_rows(db), ==, 3 * 4);
    /* A write through the handle is refused before it reaches sqlite. */
    g_assert_false(store_policy_rule_set(db, "vm-*", "off", "test", 1764590410000, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "read-only"));
    g_clear_error(&error);
    store_db_close(db);

    after = dir_state(fx.dir);
    bytes_after = file_bytes(fx.path, &len_after);
    g_assert_cmpstr(after, ==, before);
    g_assert_cmpuint(len_after, ==, len);
    g_assert_true(memcmp(bytes, bytes_after, len) == 0);
}

/* A database polltuned has open (a -wal beside it): read through the WAL,
 * rows committed after the open included. */
static void
test_live_writer(void)
{
    TestDb fx;
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(2);
    StoreDb *ro;

    test_db_setup(&fx, NULL);
    test_tick_fill(t, 1764590400000, 1);
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    ro = store_db_open_readonly(fx.path, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(count_rows(ro), ==, 2);
    test_tick_fill(t, 1764590401000, 2);
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(count_rows(ro), ==, 4);
    store_db_close(ro);
    test_db_teardown(&fx);
}

/* A version-1 file is neither migrated nor readable read-only. */
static void
test_older_not_migrated(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "v1.db", NULL);
    g_autofree char *before = NULL, *after = NULL;
    g_autoptr(GError) error = NULL;

    test_db_from_script(path, "schema-v1.sql");
    before = dir_state(dir);
    g_usleep(20 * 1000);

    g_assert_null(store_db_open_readonly(path, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_SCHEMA);
    g_assert_nonnull(strstr(error->message, path));
    g_assert_nonnull(strstr(error->message, "schema 1 is older"));
    after = dir_state(dir);
    g_assert_cmpstr(after, ==, before);
    g_assert_cmpint(test_sql_int(path, "PRAGMA user_version"), ==, 1);
    test_dir_remove(dir);
}

static void
test_refusals(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *missing = g_build_filename(dir, "missing.db", NULL);
    g_autofree char *empty = g_build_filename(dir, "empty.db", NULL);
    g_autofree char *newer = g_build_filename(dir, "newer.db", NULL);
    g_autofree char *sql = g_strdup_printf("PRAGMA user_version = %d",
                                           store_schema_version() + 1);
    g_autoptr(GError) error = NULL;
    sqlite3 *raw = NULL;

    /* Missing: said so, and not created. */
    g_assert_null(store_db_open_readonly(missing, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, missing));
    g_assert_false(g_file_test(missing, G_FILE_TEST_EXISTS));
    g_clear_error(&error);

    /* A folder is no database. */
    g_assert_null(store_db_open_readonly(dir, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    g_assert_nonnull(strstr(error->message, "not a regular file"));
    g_clear_error(&error);

    /* An empty file is an sqlite database without our schema. */
    g_assert_true(g_file_set_contents(empty, "", 0, NULL));
    g_assert_null(store_db_open_readonly(empty, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_CORRUPT);
    g_assert_nonnull(strstr(error->message, "no schema"));
    g_clear_error(&error);

    /* Newer than this build: named as such. */
    g_assert_cmpint(sqlite3_open(newer, &raw), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(raw, sql, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(raw);
    g_assert_null(store_db_open_readonly(newer, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_SCHEMA);
    g_assert_nonnull(strstr(error->message, "written by a newer polltune"));
    g_clear_error(&error);

    g_assert_null(store_db_open_readonly(":memory:", &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/readonly/untouched", test_untouched);
    g_test_add_func("/store/readonly/live-writer", test_live_writer);
    g_test_add_func("/store/readonly/older-not-migrated", test_older_not_migrated);
    g_test_add_func("/store/readonly/refusals", test_refusals);
    return g_test_run();
}
