/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-testutil: see store-testutil.h.
 */
#include <glib/gstdio.h>

#include "store-testutil.h"

TestTick *
test_tick_new(guint n_iothreads)
{
    TestTick *t = g_new0(TestTick, 1);

    store_tick_init(&t->tick);
    t->samples = g_new0(StoreSample, n_iothreads);
    t->names = g_new0(char *, 2 * n_iothreads + 1);
    for (guint i = 0; i < n_iothreads; i++) {
        t->names[2 * i] = g_strdup_printf("vm%u", i / 4);
        t->names[2 * i + 1] = g_strdup_printf("iothread%u", i % 4);
    }
    t->tick.samples = t->samples;
    t->tick.n_samples = n_iothreads;
    return t;
}

void
test_tick_fill(TestTick *t, gint64 ts_ms, guint64 seq)
{
    t->tick.ts_ms = ts_ms;
    t->tick.len_ns = 1000000000;
    t->tick.psi.cpu_some_us = 1200;
    t->tick.psi.io_some_us = 300;
    t->tick.psi.io_full_us = 100;
    for (guint i = 0; i < t->tick.n_samples; i++) {
        StoreSample *s = &t->samples[i];
        gboolean busy = i % 5 == 0;
        gint64 k = (gint64)(seq % 97) + 1;

        store_sample_init(s);
        s->target = t->names[2 * i];
        s->iothread = t->names[2 * i + 1];
        s->m.v[METRIC_POLL_MAX_NS] = 32768;
        s->m.v[METRIC_POLL_GROW] = 0;
        s->m.v[METRIC_POLL_SHRINK] = 0;
        s->m.v[METRIC_CPU_NS] = busy ? 350000000 + k * 1000 : 40000 + k;
        s->m.v[METRIC_CTX_VOL] = busy ? 18000 + k : 12;
        s->m.v[METRIC_CTX_INVOL] = busy ? 40 : 0;
        s->m.v[METRIC_RUNQ_WAIT_NS] = busy ? 2000000 + k * 100 : 3000;
        s->m.v[METRIC_RD_OPS] = busy ? 9000 + k : 0;
        s->m.v[METRIC_RD_BYTES] = busy ? s->m.v[METRIC_RD_OPS] * 4096 : 0;
        s->m.v[METRIC_RD_TIME_NS] = busy ? s->m.v[METRIC_RD_OPS] * 85000 : 0;
        s->m.v[METRIC_WR_OPS] = busy ? 3000 + k : (seq % 10 == 0 ? 2 : 0);
        s->m.v[METRIC_WR_BYTES] = s->m.v[METRIC_WR_OPS] * 4096;
        s->m.v[METRIC_WR_TIME_NS] = s->m.v[METRIC_WR_OPS] * 120000;
        s->m.v[METRIC_FLUSH_OPS] = busy ? 20 : 0;
        s->m.v[METRIC_FLUSH_TIME_NS] = busy ? 20 * 400000 : 0;
    }
}

void
test_tick_free(TestTick *t)
{
    if (!t)
        return;
    g_strfreev(t->names);
    g_free(t->samples);
    g_free(t);
}

char *
test_dir_new(void)
{
    g_autoptr(GError) error = NULL;
    char *dir = g_dir_make_tmp("pt-store-XXXXXX", &error);

    g_assert_no_error(error);
    return dir;
}

void
test_dir_remove(const char *dir)
{
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;

    while (d && (name = g_dir_read_name(d))) {
        g_autofree char *p = g_build_filename(dir, name, NULL);

        g_unlink(p);
    }
    g_rmdir(dir);
}


void
test_db_setup(TestDb *fx, const StoreOptions *opts)
{
    /* Callers may hand in an uninitialised fixture. */
    fx->dir = test_dir_new();
    fx->path = g_build_filename(fx->dir, "h.db", NULL);
    fx->db = NULL;
    test_db_reopen(fx, opts);
}

void
test_db_reopen(TestDb *fx, const StoreOptions *opts)
{
    g_autoptr(GError) error = NULL;

    g_clear_pointer(&fx->db, store_db_close);
    fx->db = store_db_open(fx->path, opts, &error);
    g_assert_no_error(error);
}

void
test_db_teardown(TestDb *fx)
{
    if (!fx->dir)
        return;
    g_clear_pointer(&fx->db, store_db_close);
    test_dir_remove(fx->dir);
    g_clear_pointer(&fx->dir, g_free);
    g_clear_pointer(&fx->path, g_free);
}

void
test_db_from_script(const char *path, const char *script)
{
    g_autofree char *file = g_test_build_filename(G_TEST_DIST, "store", "data", script, NULL);
    g_autofree char *text = NULL;
    g_autoptr(GError) error = NULL;
    sqlite3 *raw = NULL;

    g_assert_true(g_file_get_contents(file, &text, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpint(sqlite3_open(path, &raw), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(raw, text, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(raw);
}

gint64
test_sql_int(const char *path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    gint64 v = G_MININT64;

    g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), ==, SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &st, NULL), ==, SQLITE_OK);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}
