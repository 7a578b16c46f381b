/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The metric table is complete and consistent: every store column it names
 * exists in a fresh database and in the exports, every JSON key and
 * OpenMetrics family is unique, and the rates it declares come out of the
 * one history-row builder.
 */
#include <string.h>

#include "store-testutil.h"

/* Column names of @table on a separate connection to @path. */
static GHashTable *
table_columns(const char *path, const char *table)
{
    GHashTable *cols = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree char *sql = g_strdup_printf("SELECT name FROM pragma_table_info('%s')", table);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;

    g_assert_cmpint(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_prepare_v2(db, sql, -1, &st, NULL), ==, SQLITE_OK);
    while (sqlite3_step(st) == SQLITE_ROW)
        g_hash_table_add(cols, g_strdup((const char *)sqlite3_column_text(st, 0)));
    sqlite3_finalize(st);
    sqlite3_close(db);
    return cols;
}

static gboolean
om_name_valid(const char *s)
{
    if (!s || !(g_ascii_isalpha(*s) || *s == '_' || *s == ':'))
        return FALSE;
    for (; *s; s++)
        if (!(g_ascii_isalnum(*s) || *s == '_' || *s == ':'))
            return FALSE;
    return TRUE;
}

static void
test_defs_unique(void)
{
    g_autoptr(GHashTable) names = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) keys = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) samples = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) families = g_hash_table_new(g_str_hash, g_str_equal);

    g_assert_null(metric_def(METRIC_VEC_MAX));
    g_assert_null(metric_def(METRIC_INVALID));
    for (int i = 0; i < METRIC_MAX; i++) {
        const MetricDef *d = metric_def(i);

        g_test_message("metric %d: %s", i, d->name);
        g_assert_nonnull(d->name);
        g_assert_nonnull(d->unit);
        g_assert_nonnull(d->help);
        g_assert_nonnull(metric_source_to_string(d->source));
        g_assert_nonnull(metric_reset_to_string(d->reset));
        g_assert_true(g_hash_table_add(names, (gpointer)d->name));
        if (d->json_key)
            g_assert_true(g_hash_table_add(keys, (gpointer)d->json_key));
        if (!d->om_family)
            continue;
        g_assert_true(om_name_valid(d->om_family));
        g_assert_true(g_str_has_prefix(d->om_family, "polltune_"));
        g_assert_nonnull(d->om_help);
        g_assert_cmpfloat(d->om_scale, >, 0);
        /* Members of one family agree on its metadata ... */
        if (g_hash_table_contains(families, d->om_family)) {
            const MetricDef *first = g_hash_table_lookup(families, d->om_family);

            g_assert_cmpstr(first->om_help, ==, d->om_help);
            g_assert_cmpstr(first->om_unit, ==, d->om_unit);
            g_assert_cmpstr(first->om_label, ==, d->om_label);
            g_assert_cmpfloat(first->om_scale, ==, d->om_scale);
            g_assert_true((first->reset == METRIC_RESET_GAUGE) == (d->reset == METRIC_RESET_GAUGE));
        } else {
            g_hash_table_insert(families, (gpointer)d->om_family, (gpointer)d);
        }
        /* ... and each labelled member is one sample of it. */
        if (d->om_label && d->om_label_value)
            g_assert_true(g_hash_table_add(samples, g_strdup_printf(
                "%s{%s=%s}", d->om_family, d->om_label, d->om_label_value)));
    }
    g_assert_null(metric_rate_def(METRIC_RATE_MAX));
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        const MetricRateDef *d = metric_rate_def(r);

        g_assert_nonnull(d->json_key);
        g_assert_nonnull(d->unit);
        g_assert_true(g_hash_table_add(keys, (gpointer)d->json_key));
        g_assert_cmpint(d->terms[0], !=, METRIC_INVALID);
        for (int t = 0; t < METRIC_RATE_TERMS && d->terms[t] != METRIC_INVALID; t++)
            g_assert_nonnull(metric_def(d->terms[t]));
        if (d->rollup_prefix) {
            g_assert_nonnull(d->rollup_unit);
            g_assert_nonnull(d->export_suffix);
            g_assert_cmpfloat(d->rollup_scale, >, 0);
        }
    }
}

/* Every store column the table names exists in the database at @path,
 * and the sample columns are exactly the table's. */
static void
check_store_columns(const char *path)
{
    g_autoptr(GHashTable) samples = table_columns(path, "samples");
    g_autoptr(GHashTable) rollup = table_columns(path, "rollup_1m");

    g_autoptr(GHashTable) rollup_1h = table_columns(path, "rollup_1h");

    g_assert_cmpuint(g_hash_table_size(samples), ==, 1 + METRIC_MAX);
    for (int i = 0; i < METRIC_MAX; i++) {
        g_assert_true(g_hash_table_contains(samples, metric_def(i)->name));
        /* A rolled-up gauge has its column in both rollup levels. */
        if (metric_def(i)->rollup) {
            g_assert_cmpint(metric_def(i)->reset, ==, METRIC_RESET_GAUGE);
            g_assert_true(g_hash_table_contains(rollup, metric_def(i)->name));
            g_assert_true(g_hash_table_contains(rollup_1h, metric_def(i)->name));
        }
    }
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        const char *prefix = metric_rate_def(r)->rollup_prefix;
        const char *const stats[] = { "min", "mean", "max" };

        for (gsize k = 0; prefix && k < G_N_ELEMENTS(stats); k++) {
            g_autofree char *col = g_strdup_printf("%s_%s", prefix, stats[k]);

            g_assert_true(g_hash_table_contains(rollup, col));
        }
    }
}

/* In a fresh database, and in one of schema 1 migrated forward: a metric
 * added to the table without its migration fails here. */
static void
test_store_columns(void)
{
    g_autofree char *fixture = g_test_build_filename(G_TEST_DIST, "store", "data",
                                                     "schema-v1.sql", NULL);
    g_autofree char *script = NULL;
    g_autofree char *v1 = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    sqlite3 *raw = NULL;
    TestDb fx;

    test_db_setup(&fx, NULL);
    check_store_columns(fx.path);
    v1 = g_build_filename(fx.dir, "v1.db", NULL);
    g_assert_true(g_file_get_contents(fixture, &script, NULL, &error));
    g_assert_cmpint(sqlite3_open(v1, &raw), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_exec(raw, script, NULL, NULL, NULL), ==, SQLITE_OK);
    sqlite3_close(raw);
    db = store_db_open(v1, NULL, &error);
    g_assert_no_error(error);
    check_store_columns(v1);
    g_clear_pointer(&db, store_db_close);
    test_db_teardown(&fx);
}

/* Every metric is written, read back and exported as given: a distinct
 * value per metric, so that a column written or read in the wrong place
 * shows. */
static void
test_roundtrip(void)
{
    TestDb fx;
    StoreSample s;
    StoreTick tick;
    StoreFilter f;
    const StoreRow *row;
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(GOutputStream) jsonl = g_memory_output_stream_new_resizable();
    g_autofree char *text = NULL;
    json_object *line, *v;

    test_db_setup(&fx, NULL);
    store_sample_init(&s);
    s.target = "vm";
    s.iothread = "iothread0";
    for (int i = 0; i < METRIC_MAX; i++)
        s.m.v[i] = 1000 + i;
    store_tick_init(&tick);
    tick.ts_ms = 1000000;
    tick.len_ns = 1000000000;
    tick.samples = &s;
    tick.n_samples = 1;
    g_assert_true(store_tick_write(fx.db, &tick, &error));
    store_filter_init(&f);
    cur = store_query_range(fx.db, &f, &error);
    g_assert_nonnull(cur);
    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_nonnull(row);
    for (int i = 0; i < METRIC_MAX; i++)
        g_assert_cmpint(row->sample.m.v[i], ==, 1000 + i);
    g_assert_true(store_export(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_JSONL, jsonl,
                               NULL, &error));
    g_assert_no_error(error);
    g_output_stream_write_all(jsonl, "", 1, NULL, NULL, NULL);
    g_output_stream_close(jsonl, NULL, NULL);
    text = g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(jsonl));
    line = json_tokener_parse(text);
    g_assert_nonnull(line);
    for (int i = 0; i < METRIC_MAX; i++) {
        g_assert_true(json_object_object_get_ex(line, metric_def(i)->name, &v));
        g_assert_cmpint(json_object_get_int64(v), ==, 1000 + i);
    }
    json_object_put(line);
    g_clear_pointer(&cur, store_cursor_free);
    test_db_teardown(&fx);
}

/* A raw export's header names every metric once, and its JSON Lines
 * carry every metric under the same name. */
static void
test_export_columns(void)
{
    TestDb fx;
    g_autoptr(TestTick) t = test_tick_new(1);
    g_autoptr(GOutputStream) csv = g_memory_output_stream_new_resizable();
    g_autoptr(GOutputStream) jsonl = g_memory_output_stream_new_resizable();
    g_autoptr(GError) error = NULL;
    json_object *line = NULL;
    g_auto(GStrv) header = NULL;
    g_autofree char *csv_text = NULL, *json_text = NULL;
    StoreFilter f;

    test_db_setup(&fx, NULL);
    test_tick_fill(t, 1000000, 1);
    g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    store_filter_init(&f);
    g_assert_true(store_export(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV, csv, NULL,
                               &error));
    g_assert_true(store_export(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_JSONL, jsonl,
                               NULL, &error));
    g_assert_no_error(error);
    g_output_stream_write_all(csv, "", 1, NULL, NULL, NULL);
    g_output_stream_write_all(jsonl, "", 1, NULL, NULL, NULL);
    g_output_stream_close(csv, NULL, NULL);
    g_output_stream_close(jsonl, NULL, NULL);
    csv_text = g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(csv));
    json_text = g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(jsonl));
    *strstr(csv_text, "\r\n") = '\0';
    header = g_strsplit(csv_text, ",", -1);
    line = json_tokener_parse(json_text);
    g_assert_nonnull(line);
    for (int i = 0; i < METRIC_MAX; i++) {
        const char *name = metric_def(i)->name;
        guint n = 0;

        for (char **h = header; *h; h++)
            n += g_str_equal(*h, name);
        g_assert_cmpuint(n, ==, 1);
        g_assert_true(json_object_object_get_ex(line, name, NULL));
    }
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        const char *name = metric_rate_def(r)->json_key;
        guint n = 0;

        for (char **h = header; *h; h++)
            n += g_str_equal(*h, name);
        g_assert_cmpuint(n, ==, metric_rate_def(r)->raw_export ? 1 : 0);
    }
    json_object_put(line);
    test_db_teardown(&fx);
}

/* The history row carries every rate the table declares when its terms
 * are there, in the rate's unit. */
static void
test_history_row(void)
{
    StoreRow row = { .resolution = STORE_RES_RAW, .ts_ms = 1, .target = "vm",
                     .iothread = "iothread0", .len_ns = 2000000000 };
    json_object *o = NULL;
    json_object *v;

    store_sample_init(&row.sample);
    for (int i = 0; i < METRIC_MAX; i++)
        row.sample.m.v[i] = 1000;
    row.sample.m.v[METRIC_POLL_MAX_NS] = 32768;
    o = store_row_to_json(&row);
    for (int r = 0; r < METRIC_RATE_MAX; r++)
        g_assert_true(json_object_object_get_ex(o, metric_rate_def(r)->json_key, NULL));
    g_assert_true(json_object_object_get_ex(o, "iops", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v), 1500, 1e-9);  /* 3000 ops / 2 s */
    g_assert_true(json_object_object_get_ex(o, "lat_us", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v), 0.001, 1e-9); /* 1 ns per op */
    g_assert_true(json_object_object_get_ex(o, "poll-max-ns", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, 32768);
    /* One absent term: the rate is left out, not computed from the rest. */
    json_object_put(o);
    row.sample.m.v[METRIC_FLUSH_OPS] = METRIC_ABSENT;
    o = store_row_to_json(&row);
    g_assert_false(json_object_object_get_ex(o, "iops", NULL));
    g_assert_false(json_object_object_get_ex(o, "blocks_per_op", NULL));
    g_assert_true(json_object_object_get_ex(o, "blocks_per_s", NULL));
    json_object_put(o);
}

/* The one subtraction: gauges as read, counters by their reset rule. */
static void
test_vec_delta(void)
{
    MetricVec a, b, d;

    metric_vec_init(&a);
    metric_vec_init(&b);
    for (int i = 0; i < METRIC_MAX; i++) {
        a.v[i] = 100;
        b.v[i] = 150;
    }
    metric_vec_delta(&a, &b, METRIC_SOURCES_ALL, &d);
    for (int i = 0; i < METRIC_MAX; i++)
        g_assert_cmpint(d.v[i], ==, metric_def(i)->reset == METRIC_RESET_GAUGE ? 150 : 50);

    /* One block counter going backwards drops the block group only. */
    b.v[METRIC_WR_BYTES] = 10;
    /* A thread counter going backwards drops itself only. */
    b.v[METRIC_CTX_INVOL] = 10;
    metric_vec_delta(&a, &b, METRIC_SOURCES_ALL, &d);
    for (int i = 0; i < METRIC_MAX; i++) {
        const MetricDef *def = metric_def(i);

        if (def->reset == METRIC_RESET_GAUGE)
            g_assert_cmpint(d.v[i], ==, 150);
        else if (def->source == METRIC_SOURCE_BLOCK || i == METRIC_CTX_INVOL)
            g_assert_cmpint(d.v[i], ==, METRIC_ABSENT);
        else
            g_assert_cmpint(d.v[i], ==, 50);
    }

    /* A source not paired is absent; an absent reading gives no delta. */
    b.v[METRIC_WR_BYTES] = 150;
    b.v[METRIC_CTX_INVOL] = 150;
    /* A block counter missing from a reading drops the group too. */
    a.v[METRIC_RD_TIME_NS] = METRIC_ABSENT;
    metric_vec_delta(&a, &b, METRIC_SOURCES_ALL, &d);
    g_assert_cmpint(d.v[METRIC_WR_OPS], ==, METRIC_ABSENT);
    g_assert_cmpint(d.v[METRIC_CTX_INVOL], ==, 50);
    a.v[METRIC_RD_TIME_NS] = 100;

    a.v[METRIC_KVM_EXITS] = METRIC_ABSENT;
    metric_vec_delta(&a, &b, METRIC_SOURCES_ALL & ~METRIC_SOURCE_BIT(METRIC_SOURCE_THREAD), &d);
    g_assert_cmpint(d.v[METRIC_CPU_NS], ==, METRIC_ABSENT);
    g_assert_cmpint(d.v[METRIC_KVM_EXITS], ==, METRIC_ABSENT);
    g_assert_cmpint(d.v[METRIC_IO_EXITS], ==, 50);
    g_assert_cmpint(d.v[METRIC_RD_OPS], ==, 50);

    /* Sums saturate; absent stays absent. */
    metric_vec_init(&a);
    a.v[METRIC_RD_OPS] = G_MAXINT64 - 1;
    a.v[METRIC_WR_OPS] = 1;
    metric_vec_init(&b);
    b.v[METRIC_RD_OPS] = 5;
    b.v[METRIC_WR_OPS] = 2;
    b.v[METRIC_FLUSH_OPS] = 2;
    metric_vec_add(&a, &b);
    g_assert_cmpint(a.v[METRIC_RD_OPS], ==, G_MAXINT64);
    g_assert_cmpint(a.v[METRIC_WR_OPS], ==, 3);
    g_assert_cmpint(a.v[METRIC_FLUSH_OPS], ==, METRIC_ABSENT);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/metric-table/unique", test_defs_unique);
    g_test_add_func("/store/metric-table/vec-delta", test_vec_delta);
    g_test_add_func("/store/metric-table/store-columns", test_store_columns);
    g_test_add_func("/store/metric-table/export-columns", test_export_columns);
    g_test_add_func("/store/metric-table/roundtrip", test_roundtrip);
    g_test_add_func("/store/metric-table/history-row", test_history_row);
    return g_test_run();
}
