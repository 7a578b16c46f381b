/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Export: time bounds, CSV per RFC 4180, JSON Lines, filters, rollups,
 * decisions, and memory that stays flat however many rows go out.
 */
#include <fcntl.h>
#include <gio/gunixoutputstream.h>
#include <json.h>
#include <sys/resource.h>
#include <unistd.h>

#include "store-testutil.h"

#define T0 G_GINT64_CONSTANT(1764590400000)   /* 2025-12-01T12:00:00Z */

static void
test_time_parse(void)
{
    g_autoptr(GError) error = NULL;
    gint64 now = T0 + 123, ms = 0;

    g_assert_true(store_time_parse("2025-12-01T12:00:00Z", now, &ms, &error));
    g_assert_cmpint(ms, ==, T0);
    g_assert_true(store_time_parse("2025-12-01T13:00:00.250+01:00", now, &ms, &error));
    g_assert_cmpint(ms, ==, T0 + 250);
    g_assert_true(store_time_parse("2025-12-01T12:00:00", now, &ms, &error));
    g_assert_cmpint(ms, ==, T0);
    g_assert_true(store_time_parse("2025-12-01", now, &ms, &error));
    g_assert_cmpint(ms, ==, T0 - 12 * 3600000);
    g_assert_true(store_time_parse("7d", now, &ms, &error));
    g_assert_cmpint(ms, ==, now - 7 * 86400000);
    g_assert_true(store_time_parse("12h", now, &ms, &error));
    g_assert_cmpint(ms, ==, now - 12 * 3600000);
    g_assert_true(store_time_parse("30m", now, &ms, &error));
    g_assert_cmpint(ms, ==, now - 30 * 60000);
    g_assert_true(store_time_parse("now", now, &ms, &error));
    g_assert_cmpint(ms, ==, now);
    g_assert_no_error(error);
    for (guint i = 0; i < 6; i++) {
        const char *bad[] = { "", "7x", "d", "-5h", "2025-13-01T00:00:00Z", "99999999999999999999d" };

        g_assert_false(store_time_parse(bad[i], now, &ms, &error));
        g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
        g_clear_error(&error);
    }
}

static void
test_iso_format(void)
{
    char buf[32];

    store_time_format(T0 + 7, buf);
    g_assert_cmpstr(buf, ==, "2025-12-01T12:00:00.007Z");
    store_time_format(951782400000 + 86399999, buf);    /* leap day */
    g_assert_cmpstr(buf, ==, "2000-02-29T23:59:59.999Z");
    store_time_format(0, buf);
    g_assert_cmpstr(buf, ==, "1970-01-01T00:00:00.000Z");
}

typedef TestDb Fixture;

/* Three ticks of vm0 and 'we,ird "vm"' (one iothread each, NULLs in
 * every row), named vm-zero and 'we,ird', and two decisions. */
static void
fixture_setup(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    StoreSample s[2];
    StoreTick tick;
    StoreDecision d = {
        .target = "vm0", .iothread = "iothread0", .policy = "adaptive",
        .old_triple = { 32768, 0, 0 }, .new_triple = { 0, 0, 0 },
        .reason = "idle, \"no\" I/O\nfor 5 min", .applied = TRUE,
    };

    test_db_setup(fx, NULL);
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 2; i++) {
            store_sample_init(&s[i]);
            s[i].iothread = "iothread0";
            s[i].m.v[METRIC_POLL_MAX_NS] = 32768;
            s[i].m.v[METRIC_CPU_NS] = 1000 * (k + 1);
            s[i].m.v[METRIC_RD_OPS] = k;
        }
        s[0].target = "vm0";
        s[0].target_name = "vm-zero";
        s[1].target = "we,ird \"vm\"";
        s[1].target_name = "we,ird";
        store_tick_init(&tick);
        tick.ts_ms = T0 + k * 1000;
        tick.len_ns = 1000000000;
        tick.samples = s;
        tick.n_samples = 2;
        g_assert_true(store_tick_write(fx->db, &tick, &error));
    }
    d.ts_ms = T0 + 500;
    g_assert_true(store_decision_insert(fx->db, &d, &error));
    d.ts_ms = T0 + 1500;
    d.reason = "plain";
    d.applied = FALSE;
    g_assert_true(store_decision_insert(fx->db, &d, &error));
}

static void
fixture_teardown(Fixture *fx, gconstpointer data)
{
    test_db_teardown(fx);
}

static char *
export_to_string(StoreDb *db, const StoreFilter *f, StoreExportWhat what, StoreFormat format)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();

    g_assert_true(store_export(db, f, what, format, out, NULL, &error));
    g_assert_no_error(error);
    g_assert_true(g_output_stream_write_all(out, "", 1, NULL, NULL, NULL));
    g_assert_true(g_output_stream_close(out, NULL, NULL));
    return g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(out));
}

static void
test_csv(Fixture *fx, gconstpointer data)
{
    g_autofree char *csv = NULL;
    g_auto(GStrv) lines = NULL;
    StoreFilter f;

    store_filter_init(&f);
    csv = export_to_string(fx->db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV);
    g_assert_true(g_str_has_suffix(csv, "\r\n"));
    lines = g_strsplit(csv, "\r\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 1 + 6 + 1);
    g_assert_cmpstr(lines[0], ==,
                    "time,target,name,iothread,tick_ns,poll_max_ns,poll_grow,poll_shrink,cpu_ns,"
                    "ctx_vol,ctx_invol,runq_wait_ns,rd_ops,rd_bytes,rd_time_ns,wr_ops,wr_bytes,"
                    "wr_time_ns,flush_ops,flush_time_ns,kvm_exits,io_exits,mmio_exits,halt_exits,"
                    "aio_max_batch,iops");
    /* rows in time order; NULL is an empty field; quotes doubled */
    g_assert_cmpstr(lines[1], ==, "2025-12-01T12:00:00.000Z,vm0,vm-zero,iothread0,1000000000,"
                                  "32768,,,1000,,,,0,,,,,,,,,,,,,");
    g_assert_cmpstr(lines[2], ==, "2025-12-01T12:00:00.000Z,\"we,ird \"\"vm\"\"\",\"we,ird\","
                                  "iothread0,1000000000,32768,,,1000,,,,0,,,,,,,,,,,,,");
    g_assert_true(g_str_has_prefix(lines[6], "2025-12-01T12:00:02.000Z,"));
    g_assert_cmpstr(lines[7], ==, "");
}

static void
test_jsonl(Fixture *fx, gconstpointer data)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    StoreFilter f;

    store_filter_init(&f);
    f.target = "we,ird \"vm\"";
    f.from_ms = T0 + 1000;
    text = export_to_string(fx->db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_JSONL);
    lines = g_strsplit(text, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    for (int i = 0; i < 2; i++) {
        json_object *o = json_tokener_parse(lines[i]), *v = NULL;

        g_assert_nonnull(o);
        g_assert_true(json_object_object_get_ex(o, "target", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, "we,ird \"vm\"");
        /* The name it went by, beside its identity. */
        g_assert_true(json_object_object_get_ex(o, "name", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, "we,ird");
        g_assert_true(json_object_object_get_ex(o, "time", &v));
        g_assert_cmpstr(json_object_get_string(v), ==,
                        i == 0 ? "2025-12-01T12:00:01.000Z" : "2025-12-01T12:00:02.000Z");
        g_assert_true(json_object_object_get_ex(o, "cpu_ns", &v));
        g_assert_cmpint(json_object_get_int64(v), ==, 1000 * (i + 2));
        g_assert_true(json_object_object_get_ex(o, "wr_ops", &v));
        g_assert_null(v);
        json_object_put(o);
    }
    g_assert_cmpstr(lines[2], ==, "");
}

static void
test_decisions(Fixture *fx, gconstpointer data)
{
    g_autofree char *csv = NULL, *jsonl = NULL;
    g_auto(GStrv) lines = NULL;
    json_object *o, *v = NULL;
    StoreFilter f;

    store_filter_init(&f);
    csv = export_to_string(fx->db, &f, STORE_EXPORT_DECISIONS, STORE_FORMAT_CSV);
    g_assert_true(g_str_has_prefix(csv, "time,target,name,iothread,old_poll_max_ns,old_poll_grow,"
                                        "old_poll_shrink,new_poll_max_ns,new_poll_grow,"
                                        "new_poll_shrink,applied,policy,reason,cause\r\n"));
    /* a line break inside a quoted field stays in the field */
    g_assert_nonnull(strstr(csv, "\r\n2025-12-01T12:00:00.500Z,vm0,vm-zero,iothread0,32768,0,0,0,0,0,1,"
                                 "adaptive,\"idle, \"\"no\"\" I/O\nfor 5 min\",\r\n"));
    f.from_ms = T0 + 1000;
    jsonl = export_to_string(fx->db, &f, STORE_EXPORT_DECISIONS, STORE_FORMAT_JSONL);
    lines = g_strsplit(jsonl, "\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 2);
    o = json_tokener_parse(lines[0]);
    g_assert_nonnull(o);
    g_assert_true(json_object_object_get_ex(o, "name", &v));
    g_assert_cmpstr(json_object_get_string(v), ==, "vm-zero");
    g_assert_true(json_object_object_get_ex(o, "applied", &v));
    g_assert_cmpint(json_object_get_int(v), ==, 0);
    g_assert_true(json_object_object_get_ex(o, "reason", &v));
    g_assert_cmpstr(json_object_get_string(v), ==, "plain");
    /* A row without a recorded cause has it null. */
    g_assert_true(json_object_object_get_ex(o, "cause", &v));
    g_assert_null(v);
    json_object_put(o);
}

static void
test_rollup_export(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *csv = NULL;
    g_auto(GStrv) lines = NULL;
    gboolean more;
    StoreFilter f;

    g_assert_true(store_maintain_step(fx->db, T0 + 60000, 100, &more, &error));
    store_filter_init(&f);
    f.resolution = STORE_RES_1M;
    f.target = "vm0";
    csv = export_to_string(fx->db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV);
    lines = g_strsplit(csv, "\r\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 3);
    g_assert_cmpstr(lines[0], ==, "time,target,name,iothread,count,span_ms,iops_min,iops_mean,iops_max,"
                                  "iops_p95,lat_min_ns,lat_mean_ns,lat_max_ns,lat_p95_ns,"
                                  "cpu_min_pct,cpu_mean_pct,cpu_max_pct,poll_max_ns,poll_grow,"
                                  "poll_shrink");
    /* 0, 1, 2 reads per second; CPU 1, 2, 3 us per second; the triple
     * in force (grow and shrink were never read) */
    g_assert_cmpstr(lines[1], ==, "2025-12-01T12:00:00.000Z,vm0,vm-zero,iothread0,3,3000,0.000,1.000,"
                                  "2.000,2.000,,,,,0.0001,0.0002,0.0003,32768,,");
}

/* One tick of 1 s of vm1/iothread0 at @ts_ms: @ops reads, @triple. */
static void
write_triple_tick(StoreDb *db, gint64 ts_ms, gint64 ops, const StoreTriple *triple)
{
    g_autoptr(GError) error = NULL;
    StoreSample s;
    StoreTick tick;

    store_sample_init(&s);
    s.target = "vm1";
    s.iothread = "iothread0";
    s.m.v[METRIC_POLL_MAX_NS] = triple->poll_max_ns;
    s.m.v[METRIC_POLL_GROW] = triple->poll_grow;
    s.m.v[METRIC_POLL_SHRINK] = triple->poll_shrink;
    s.m.v[METRIC_RD_OPS] = ops;
    s.m.v[METRIC_WR_OPS] = s.m.v[METRIC_FLUSH_OPS] = 0;
    store_tick_init(&tick);
    tick.ts_ms = ts_ms;
    tick.len_ns = 1000000000;
    tick.samples = &s;
    tick.n_samples = 1;
    g_assert_true(store_tick_write(db, &tick, &error));
    g_assert_no_error(error);
}

/*
 * The columns planners asked for: a raw row has its IOPS as a column, and
 * a rollup the triple in force for most of its time, also through the
 * 1-hour level and in the history rows.
 */
static void
test_rollup_triple(void)
{
    static const StoreTriple off = { 0, 0, 0 }, on = { 50000, 2, 4 };
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    g_autofree char *raw = NULL, *m1 = NULL, *h1 = NULL;
    g_auto(GStrv) lines = NULL;
    const StoreRow *row;
    json_object *o, *v;
    gboolean more = TRUE;
    StoreFilter f;
    TestDb fx;

    test_db_setup(&fx, NULL);
    /* Minute 0: 20 s off, then 40 s on.  Minute 1: 45 s off, 15 s on. */
    for (int k = 0; k < 60; k++)
        write_triple_tick(fx.db, T0 + k * 1000, 250, k < 20 ? &off : &on);
    for (int k = 0; k < 60; k++)
        write_triple_tick(fx.db, T0 + 60000 + k * 1000, 250, k < 45 ? &off : &on);

    store_filter_init(&f);
    f.to_ms = T0 + 1000;
    raw = export_to_string(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV);
    lines = g_strsplit(raw, "\r\n", -1);
    g_assert_true(g_str_has_suffix(lines[0], ",halt_exits,aio_max_batch,iops"));
    /* the triple, no thread figures, 250 reads, no exits, no batch size */
    g_assert_true(g_str_has_suffix(lines[1], ",1000000000,0,0,0,,,,,250,,,0,,,0,,,,,,,250.000"));
    g_clear_pointer(&lines, g_strfreev);

    /* Two complete hours later everything is rolled up. */
    for (int i = 0; i < 20 && more; i++)
        g_assert_true(store_maintain_step(fx.db, T0 + 2 * 3600 * 1000, 100, &more, &error));
    g_assert_no_error(error);
    g_assert_false(more);

    store_filter_init(&f);
    f.resolution = STORE_RES_1M;
    m1 = export_to_string(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV);
    lines = g_strsplit(m1, "\r\n", -1);
    g_assert_cmpuint(g_strv_length(lines), ==, 4);
    g_assert_true(g_str_has_suffix(lines[0], ",cpu_max_pct,poll_max_ns,poll_grow,poll_shrink"));
    g_assert_true(g_str_has_suffix(lines[1], ",250.000,250.000,250.000,250.000,,,,,,,,50000,2,4"));
    g_assert_true(g_str_has_suffix(lines[2], ",,,,,,,,0,0,0"));
    g_clear_pointer(&lines, g_strfreev);

    cur = store_query_range(fx.db, &f, &error);
    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_nonnull(row);
    g_assert_cmpint(row->sample.m.v[METRIC_POLL_MAX_NS], ==, 50000);
    g_assert_cmpint(row->sample.m.v[METRIC_POLL_SHRINK], ==, 4);
    g_assert_cmpint(row->sample.m.v[METRIC_CPU_NS], ==, METRIC_ABSENT);
    o = store_row_to_json(row);
    g_assert_true(json_object_object_get_ex(o, "poll-max-ns", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, 50000);
    g_assert_true(json_object_object_get_ex(o, "iops", &v));
    g_assert_true(json_object_object_get_ex(v, "mean", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v), 250, 1e-9);
    g_assert_false(json_object_object_get_ex(o, "aio-max-batch", NULL));
    json_object_put(o);
    g_clear_pointer(&cur, store_cursor_free);

    /* The hour: 55 s on against 65 s off. */
    f.resolution = STORE_RES_1H;
    h1 = export_to_string(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_JSONL);
    o = json_tokener_parse(h1);
    g_assert_nonnull(o);
    g_assert_true(json_object_object_get_ex(o, "count", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, 120);
    g_assert_true(json_object_object_get_ex(o, "poll_max_ns", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, 0);
    json_object_put(o);
    test_db_teardown(&fx);
}

static glong
max_rss_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

static void
test_constant_memory(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(50);
    g_autoptr(GOutputStream) out = NULL;
    int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
    StoreFilter f;
    glong before;

    g_assert_cmpint(fd, >=, 0);
    test_db_setup(&fx, NULL);
    for (int k = 0; k < 4000; k++) {
        test_tick_fill(t, T0 + k * 1000, k);
        g_assert_true(store_tick_write(fx.db, &t->tick, &error));
    }
    /* Close and reopen so the page cache of the writes is not counted. */
    test_db_reopen(&fx, NULL);
    out = g_unix_output_stream_new(fd, TRUE);
    store_filter_init(&f);
    before = max_rss_kb();
    /* 200,000 rows, about 25 MB of CSV and 60 MB of JSON */
    g_assert_true(store_export(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_CSV, out, NULL, &error));
    g_assert_true(store_export(fx.db, &f, STORE_EXPORT_SAMPLES, STORE_FORMAT_JSONL, out, NULL,
                               &error));
    g_assert_no_error(error);
    g_test_message("peak RSS grew by %ld kB", max_rss_kb() - before);
    /* the sqlite page cache (8 MiB) and the output buffer, not the rows */
    g_assert_cmpint(max_rss_kb() - before, <, 16 * 1024);
}

/* The one duration grammar, as a table; and the same grammar in time bounds. */
static void
test_duration_grammar(void)
{
    static const struct {
        const char *text;
        gint64 ms;          /* -1: must fail */
    } cases[] = {
        { "1500", 1500 }, { "250ms", 250 }, { "250MS", 250 }, { "2s", 2000 },
        { "3m", 180000 }, { "48h", 172800000 }, { "7d", 604800000 },
        { "2w", 1209600000 }, { "1 S", 1000 }, { "0s", 0 },
        { "", -1 }, { "-1s", -1 }, { "1y", -1 }, { "s", -1 }, { "ms", -1 },
        { "1.5s", -1 }, { "99999999999999999999", -1 }, { "999999999999999w", -1 },
    };
    const gint64 now = 1764590400000;

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        gint64 ms = 0;
        gboolean ok = store_duration_parse(cases[i].text, &ms, &error);

        g_test_message("'%s'", cases[i].text);
        if (cases[i].ms < 0) {
            g_assert_false(ok);
            g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
            g_assert_nonnull(strstr(error->message, cases[i].text));
            continue;
        }
        g_assert_no_error(error);
        g_assert_cmpint(ms, ==, cases[i].ms);
        /* A time bound takes the same spans, back from now; a bare number
         * is not a time bound. */
        ok = store_time_parse(cases[i].text, now, &ms, &error);
        if (strspn(cases[i].text, "0123456789") == strlen(cases[i].text)) {
            g_assert_false(ok);
            g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
        } else {
            g_assert_no_error(error);
            g_assert_cmpint(ms, ==, now - cases[i].ms);
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/export/time-parse", test_time_parse);
    g_test_add_func("/store/export/duration-grammar", test_duration_grammar);
    g_test_add_func("/store/export/iso-format", test_iso_format);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
    ADD("/store/export/csv", test_csv);
    ADD("/store/export/jsonl", test_jsonl);
    ADD("/store/export/decisions", test_decisions);
    ADD("/store/export/rollup", test_rollup_export);
    g_test_add_func("/store/export/rollup-triple", test_rollup_triple);
    g_test_add_func("/store/export/constant-memory", test_constant_memory);
    return g_test_run();
}
