/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Rollups (values checked by hand), retention, the size cap, and the
 * 50 ms bound on every maintenance unit.
 */
#include "store-testutil.h"

#define T0 G_GINT64_CONSTANT(1764590400000)   /* a whole hour */
#define MIN_MS 60000
#define HOUR_MS 3600000

/* Runs maintenance at @now until no work is left; returns the steps taken. */
static guint
maintain_all(StoreDb *db, gint64 now)
{
    g_autoptr(GError) error = NULL;
    gboolean more = TRUE;
    guint steps = 0;

    while (more) {
        g_assert_true(store_maintain_step(db, now, 20, &more, &error));
        g_assert_no_error(error);
        g_assert_cmpuint(++steps, <, 100000);
    }
    return steps;
}

/* Writes @n ticks of @t, @step_ms apart from T0. */
static void
write_ticks(StoreDb *db, TestTick *t, gint64 n, gint64 step_ms)
{
    g_autoptr(GError) error = NULL;

    for (gint64 k = 0; k < n; k++) {
        test_tick_fill(t, T0 + k * step_ms, k);
        t->tick.len_ns = step_ms * 1000000;
        g_assert_true(store_tick_write(db, &t->tick, &error));
    }
}

/* Two iothreads: "a" with known I/O and CPU, "b" with every source NULL. */
static void
write_known(StoreDb *db, gint64 ts, gint64 len_ns, gint64 ops, gint64 lat_ns, gint64 cpu_ns)
{
    g_autoptr(GError) error = NULL;
    StoreSample s[2];
    StoreTick tick;

    store_sample_init(&s[0]);
    store_sample_init(&s[1]);
    s[0].target = s[1].target = "vm";
    s[0].iothread = "a";
    s[1].iothread = "b";
    s[0].m.v[METRIC_RD_OPS] = ops;
    s[0].m.v[METRIC_RD_TIME_NS] = ops * lat_ns;
    s[0].m.v[METRIC_WR_OPS] = 0;
    s[0].m.v[METRIC_WR_TIME_NS] = 0;
    s[0].m.v[METRIC_CPU_NS] = cpu_ns;
    store_tick_init(&tick);
    tick.ts_ms = ts;
    tick.len_ns = len_ns;
    tick.samples = s;
    tick.n_samples = 2;
    g_assert_true(store_tick_write(db, &tick, &error));
}

static const StoreRow *
rollup_row(StoreCursor *cur, const char *iothread)
{
    g_autoptr(GError) error = NULL;
    const StoreRow *row;

    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_nonnull(row);
    g_assert_cmpstr(row->iothread, ==, iothread);
    return row;
}

static void
test_rollup_1m(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(GError) error = NULL;
    const StoreRow *row;
    StoreFilter f;

    test_db_setup(&fx, NULL);
    /* minute 0 and 1 complete, one tick of minute 2 */
    for (gint64 k = 0; k <= 120; k++)
        write_known(fx.db, T0 + k * 1000, 1000000000, k % 60 + 1, 1000 * (k % 60 + 1),
                    10000000 * (k % 3));
    maintain_all(fx.db, T0 + 121000);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 4);

    store_filter_init(&f);
    f.resolution = STORE_RES_1M;
    cur = store_query_range(fx.db, &f, &error);
    g_assert_no_error(error);
    row = rollup_row(cur, "a");
    g_assert_cmpint(row->ts_ms, ==, T0);
    g_assert_cmpint(row->count, ==, 60);
    g_assert_cmpint(row->span_ms, ==, 60000);
    /* IOPS in milli-ops/s: 1..60 ops per 1 s tick */
    g_assert_cmpint(row->iops.min, ==, 1000);
    g_assert_cmpint(row->iops.max, ==, 60000);
    g_assert_cmpint(row->iops.mean, ==, 30500);
    g_assert_cmpint(row->iops.p95, ==, 57000);     /* nearest rank 57 of 60 */
    /* latency weighted by ops: sum(k^2) / sum(k) * 1000 */
    g_assert_cmpint(row->lat.min, ==, 1000);
    g_assert_cmpint(row->lat.max, ==, 60000);
    g_assert_cmpint(row->lat.mean, ==, 40333);
    g_assert_cmpint(row->lat.p95, ==, 57000);
    /* CPU in ppm of a core: 0, 1 and 2 % in turn */
    g_assert_cmpint(row->cpu.min, ==, 0);
    g_assert_cmpint(row->cpu.max, ==, 20000);
    g_assert_cmpint(row->cpu.mean, ==, 10000);
    row = rollup_row(cur, "b");
    g_assert_cmpint(row->count, ==, 60);
    g_assert_cmpint(row->iops.mean, ==, METRIC_ABSENT);
    g_assert_cmpint(row->lat.p95, ==, METRIC_ABSENT);
    g_assert_cmpint(row->cpu.max, ==, METRIC_ABSENT);
    row = rollup_row(cur, "a");
    g_assert_cmpint(row->ts_ms, ==, T0 + MIN_MS);
    g_clear_pointer(&cur, store_cursor_free);

    /* Incremental: the next minute is rolled once it is complete. */
    for (gint64 k = 121; k < 181; k++)
        write_known(fx.db, T0 + k * 1000, 1000000000, 5, 1000, 0);
    maintain_all(fx.db, T0 + 179000);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 4);
    maintain_all(fx.db, T0 + 181000);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 6);
}

static void
test_rollup_1h(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(GError) error = NULL;
    const StoreRow *row;
    StoreFilter f;

    test_db_setup(&fx, NULL);
    /* 10 s ticks; in minute m every tick does (m+1) IOPS at (m+1) us */
    for (gint64 k = 0; k < 372; k++) {
        gint64 m = k / 6 % 60;

        write_known(fx.db, T0 + k * 10000, G_GINT64_CONSTANT(10000000000), (m + 1) * 10,
                    (m + 1) * 1000, 500000000);
    }
    maintain_all(fx.db, T0 + HOUR_MS + 2 * MIN_MS);

    store_filter_init(&f);
    f.resolution = STORE_RES_1H;
    cur = store_query_range(fx.db, &f, &error);
    g_assert_no_error(error);
    row = rollup_row(cur, "a");
    g_assert_cmpint(row->ts_ms, ==, T0);
    g_assert_cmpint(row->count, ==, 360);
    g_assert_cmpint(row->span_ms, ==, HOUR_MS);
    g_assert_cmpint(row->iops.min, ==, 1000);
    g_assert_cmpint(row->iops.max, ==, 60000);
    g_assert_cmpint(row->iops.mean, ==, 30500);
    g_assert_cmpint(row->iops.p95, ==, 57000);
    g_assert_cmpint(row->lat.mean, ==, 40333);
    g_assert_cmpint(row->cpu.mean, ==, 50000);
    row = rollup_row(cur, "b");
    g_assert_cmpint(row->count, ==, 360);
    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_null(row);
    g_clear_pointer(&cur, store_cursor_free);
}

static void
test_retention(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(4);
    StoreOptions opts;
    gint64 end = T0 + 30 * MIN_MS;

    store_options_init(&opts);
    opts.raw_retention_ms = 10 * MIN_MS;
    opts.rollup_1m_retention_ms = 2 * HOUR_MS;
    opts.rollup_1h_retention_ms = 5 * HOUR_MS;
    test_db_setup(&fx, &opts);
    write_ticks(fx.db, t, 180, 10000);
    maintain_all(fx.db, end);
    /* raw: only the last 10 minutes; 1m: all 30 minutes */
    g_assert_cmpint(test_sql_int(fx.path, "SELECT min(ts) FROM ticks"), ==, end - 10 * MIN_MS);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 60);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM samples"), ==, 60 * 4);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 30 * 4);

    /* Three hours later, with no new ticks: the hour is complete, the
     * raw ticks and then the minutes age out. */
    maintain_all(fx.db, end + 3 * HOUR_MS);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM samples"), ==, 0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1h"), ==, 4);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT sum(n) FROM rollup_1h"), ==, 180 * 4);
    maintain_all(fx.db, end + 6 * HOUR_MS);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1h"), ==, 0);
}

static void
test_size_cap(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(16);
    StoreOptions opts;
    gint64 n_ticks = 3000, end = T0 + n_ticks * 1000;

    store_options_init(&opts);
    opts.size_cap_bytes = 1 << 20;
    test_db_setup(&fx, &opts);
    write_ticks(fx.db, t, n_ticks, 1000);
    g_assert_cmpint(store_db_used_bytes(fx.db), >, opts.size_cap_bytes);
    maintain_all(fx.db, end);
    g_assert_cmpint(store_db_used_bytes(fx.db), <=, opts.size_cap_bytes);
    /* the oldest raw went, the newest stayed, and every minute was
     * summarised before its raw rows were pruned */
    g_assert_cmpint(test_sql_int(fx.path, "SELECT min(ts) FROM ticks"), >, T0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT max(ts) FROM ticks"), ==, end - 1000);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT min(bucket) FROM rollup_1m"), ==, T0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 50 * 16);

    /* A lower cap also shrinks the file itself. */
    opts.size_cap_bytes = 256 << 10;
    test_db_reopen(&fx, &opts);
    maintain_all(fx.db, end);
    g_assert_cmpint(store_db_used_bytes(fx.db), <=, opts.size_cap_bytes);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT page_count * page_size FROM pragma_page_count,"
                                       " pragma_page_size"), <=, opts.size_cap_bytes);
}

/* One run: 20 minutes of 100 iothreads, with a maintenance step after
 * every tick as the daemon does, rolled up and pruned to 5 minutes.
 * Returns the longest maintenance unit in microseconds. */
static gint64
unit_time_run(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(100);
    g_autoptr(GError) error = NULL;
    StoreOptions opts;
    StoreStats stats;
    gint64 n_ticks = 1200;
    gboolean more;
    guint steps;

    store_options_init(&opts);
    opts.raw_retention_ms = 5 * MIN_MS;
    test_db_setup(&fx, &opts);
    for (gint64 k = 0; k < n_ticks; k++) {
        test_tick_fill(t, T0 + k * 1000, k);
        g_assert_true(store_tick_write(fx.db, &t->tick, &error));
        g_assert_true(store_maintain_step(fx.db, T0 + k * 1000, 10, &more, &error));
    }
    steps = maintain_all(fx.db, T0 + n_ticks * 1000);
    store_db_get_stats(fx.db, &stats);
    g_test_message("%u steps at the end; longest unit %" G_GINT64_FORMAT " us, longest tick %"
                   G_GINT64_FORMAT " us", steps, stats.max_maintain_unit_us, stats.max_write_us);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM rollup_1m"), ==, 20 * 100);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 5 * 60);
    return stats.max_maintain_unit_us;
}

/* Maintenance works in bounded units while ticks keep arriving, and ends
 * with exactly the rollups and retention expected.  How long a unit holds
 * the database is a figure for bench/store, not a pass/fail here: a shared
 * machine's load would decide it. */
static void
test_incremental(void)
{
    unit_time_run();
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/maintain/rollup-1m", test_rollup_1m);
    g_test_add_func("/store/maintain/rollup-1h", test_rollup_1h);
    g_test_add_func("/store/maintain/retention", test_retention);
    g_test_add_func("/store/maintain/size-cap", test_size_cap);
    g_test_add_func("/store/maintain/incremental", test_incremental);
    return g_test_run();
}
