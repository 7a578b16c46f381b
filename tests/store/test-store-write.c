/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tick writes and what queries give back: values and NULLs round-trip,
 * device rows, latest per iothread, range filters, decisions, overrides
 * and originals.
 */
#include "store-testutil.h"

#define T0 1764590400000    /* 2025-12-01T12:00:00Z */

typedef TestDb Fixture;

static void
fixture_setup(Fixture *fx, gconstpointer data)
{
    StoreOptions opts;

    store_options_init(&opts);
    opts.now_ms = T0;
    test_db_setup(fx, &opts);
}

static void
fixture_teardown(Fixture *fx, gconstpointer data)
{
    test_db_teardown(fx);
}

static void
test_roundtrip(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    StoreSample s;
    StoreTick tick;
    StoreFilter f;
    const StoreRow *row;
    StoreStats stats;

    store_sample_init(&s);
    s.target = "db,1 \"primary\"";
    s.iothread = "iothread0";
    s.m.v[METRIC_POLL_MAX_NS] = 32768;
    s.m.v[METRIC_POLL_GROW] = 2;
    s.m.v[METRIC_POLL_SHRINK] = 0;
    s.m.v[METRIC_CPU_NS] = 123456789;
    s.m.v[METRIC_CTX_VOL] = 4000;
    s.m.v[METRIC_CTX_INVOL] = 0;
    s.m.v[METRIC_RUNQ_WAIT_NS] = 77;
    s.m.v[METRIC_RD_OPS] = 10;
    s.m.v[METRIC_RD_BYTES] = 40960;
    s.m.v[METRIC_RD_TIME_NS] = G_GINT64_CONSTANT(9000000000000);
    /* wr, flush and KVM counters stay unavailable */
    store_tick_init(&tick);
    tick.ts_ms = T0 + 1000;
    tick.len_ns = 999999937;
    tick.psi.io_some_us = 5;
    tick.samples = &s;
    tick.n_samples = 1;
    g_assert_true(store_tick_write(fx->db, &tick, &error));
    g_assert_no_error(error);

    store_filter_init(&f);
    cur = store_query_range(fx->db, &f, &error);
    g_assert_no_error(error);
    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_nonnull(row);
    g_assert_cmpint(row->ts_ms, ==, T0 + 1000);
    g_assert_cmpint(row->len_ns, ==, 999999937);
    g_assert_cmpstr(row->target, ==, s.target);
    g_assert_cmpint(row->sample.m.v[METRIC_POLL_GROW], ==, 2);
    g_assert_cmpint(row->sample.m.v[METRIC_CTX_INVOL], ==, 0);
    g_assert_cmpint(row->sample.m.v[METRIC_RD_TIME_NS], ==, s.m.v[METRIC_RD_TIME_NS]);
    g_assert_cmpint(row->sample.m.v[METRIC_WR_OPS], ==, METRIC_ABSENT);
    g_assert_cmpint(row->sample.m.v[METRIC_FLUSH_TIME_NS], ==, METRIC_ABSENT);
    g_assert_cmpint(row->sample.m.v[METRIC_HALT_EXITS], ==, METRIC_ABSENT);
    g_assert_true(store_cursor_next(cur, &row, &error));
    g_assert_null(row);

    /* Stored as SQL NULL and integers, never REAL. */
    g_assert_cmpint(test_sql_int(fx->path, "SELECT count(*) FROM samples WHERE wr_ops IS NULL"
                                           " AND kvm_exits IS NULL AND ctx_invol = 0"), ==, 1);
    g_assert_cmpint(test_sql_int(fx->path, "SELECT typeof(cpu_ns) = 'integer' FROM samples"),
                    ==, 1);
    g_assert_cmpint(test_sql_int(fx->path, "SELECT count(*) FROM ticks WHERE psi_io_some_us = 5"
                                           " AND psi_cpu_some_us IS NULL"), ==, 1);
    store_db_get_stats(fx->db, &stats);
    g_assert_cmpuint(stats.ticks_written, ==, 1);
    g_assert_cmpint(stats.health, ==, STORE_HEALTH_OK);
    g_assert_null(store_db_take_notice(fx->db));
}

/* A tick's host CPU and CPU pressure come back per tick, as counters and
 * as the `host-history` row; a tick without them has none. */
static void
test_host(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    json_object *j;
    StoreSample s;
    StoreTick tick;
    StoreFilter f;
    const StoreHostRow *row;

    store_sample_init(&s);
    s.target = "vm";
    s.iothread = "iot0";
    for (int i = 0; i < 3; i++) {
        store_tick_init(&tick);
        tick.ts_ms = T0 + 1000 * (i + 1);
        tick.len_ns = 500000000;
        if (i != 1) {
            /* Four CPUs over half a second: 2 s of CPU time, 1.5 s busy. */
            tick.cpu.busy_us = 1500000;
            tick.cpu.total_us = 2000000;
            tick.psi.cpu_some_us = 125000;
        }
        tick.samples = &s;
        tick.n_samples = 1;
        g_assert_true(store_tick_write(fx->db, &tick, &error));
        g_assert_no_error(error);
    }
    store_filter_init(&f);
    f.from_ms = T0 + 1000;
    f.to_ms = T0 + 3000;
    cur = store_query_host(fx->db, &f, &error);
    g_assert_no_error(error);
    g_assert_true(store_cursor_next_host(cur, &row, &error));
    g_assert_nonnull(row);
    g_assert_cmpint(row->ts_ms, ==, T0 + 1000);
    g_assert_cmpint(row->len_ns, ==, 500000000);
    g_assert_cmpint(row->cpu.busy_us, ==, 1500000);
    g_assert_cmpint(row->cpu.total_us, ==, 2000000);
    g_assert_cmpint(row->psi.cpu_some_us, ==, 125000);
    j = store_host_row_to_json(row);
    g_assert_cmpstr(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"ts_ms\":1764590401000,\"cpu_busy_pct\":75.000,\"cpus\":4.000,"
                    "\"psi_cpu_some_pct\":25.000}");
    json_object_put(j);
    g_assert_true(store_cursor_next_host(cur, &row, &error));
    g_assert_cmpint(row->cpu.busy_us, ==, METRIC_ABSENT);
    g_assert_cmpint(row->psi.cpu_some_us, ==, METRIC_ABSENT);
    j = store_host_row_to_json(row);
    g_assert_cmpstr(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN), ==,
                    "{\"ts_ms\":1764590402000}");
    json_object_put(j);
    /* [from, to): the third tick is out. */
    g_assert_true(store_cursor_next_host(cur, &row, &error));
    g_assert_null(row);
    g_assert_no_error(error);
    /* Not a sample cursor. */
    {
        const StoreRow *srow;

        g_assert_false(store_cursor_next(cur, &srow, &error));
        g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    }
}

static void
test_invalid(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    StoreSample s;
    StoreTick tick;
    StoreStats stats;

    store_sample_init(&s);
    s.target = "vm";
    store_tick_init(&tick);
    tick.ts_ms = T0;
    tick.len_ns = 1000;
    tick.samples = &s;
    tick.n_samples = 1;
    g_assert_false(store_tick_write(fx->db, &tick, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    store_db_get_stats(fx->db, &stats);
    g_assert_cmpuint(stats.pending_ticks, ==, 0);
}

static guint
count_rows(StoreDb *db, const StoreFilter *f)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = store_query_range(db, f, &error);
    const StoreRow *row;
    gint64 last = G_MININT64;
    guint n = 0;

    g_assert_no_error(error);
    while (store_cursor_next(cur, &row, &error) && row) {
        g_assert_cmpint(row->ts_ms, >=, last);
        last = row->ts_ms;
        if (f->target)
            g_assert_cmpstr(row->target, ==, f->target);
        if (f->iothread)
            g_assert_cmpstr(row->iothread, ==, f->iothread);
        n++;
    }
    g_assert_no_error(error);
    return n;
}

static void
test_range(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(8);   /* vm0, vm1 x iothread0..3 */
    StoreFilter f;

    for (int i = 0; i < 10; i++) {
        test_tick_fill(t, T0 + i * 1000, i);
        /* vm1/iothread3 goes away after the fifth tick */
        t->tick.n_samples = i < 5 ? 8 : 7;
        g_assert_true(store_tick_write(fx->db, &t->tick, &error));
    }
    store_filter_init(&f);
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 5 * 8 + 5 * 7);
    f.target = "vm1";
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 5 * 4 + 5 * 3);
    f.iothread = "iothread3";
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 5);
    f.target = NULL;
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 10 + 5);
    f.iothread = NULL;
    f.from_ms = T0 + 2000;
    f.to_ms = T0 + 4000;
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 16);
    f.target = "nosuch";
    g_assert_cmpuint(count_rows(fx->db, &f), ==, 0);
}

static void
test_decisions(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    const StoreDecisionRow *d;
    StoreDecision in = {
        .ts_ms = T0, .target = "vm0", .iothread = "iothread0", .policy = "adaptive",
        .old_triple = { 32768, 0, 0 }, .new_triple = { 65536, 2, METRIC_ABSENT },
        .reason = "latency above target", .cause = "latency", .applied = TRUE,
    };
    StoreFilter f;
    gboolean known = TRUE;

    g_assert_true(store_target_known(fx->db, "vm0", &known, &error));
    g_assert_false(known);
    g_assert_true(store_decision_insert(fx->db, &in, &error));
    g_assert_true(store_target_known(fx->db, "vm0", &known, &error));
    g_assert_true(known);
    g_assert_true(store_target_known(fx->db, "vm9", &known, &error));
    g_assert_false(known);
    in.ts_ms = T0 + 5000;
    in.iothread = "iothread1";
    in.applied = FALSE;
    g_assert_true(store_decision_insert(fx->db, &in, &error));
    g_assert_no_error(error);

    store_filter_init(&f);
    f.iothread = "iothread1";
    cur = store_query_decisions(fx->db, &f, &error);
    g_assert_no_error(error);
    g_assert_true(store_cursor_next_decision(cur, &d, &error));
    g_assert_nonnull(d);
    g_assert_cmpint(d->ts_ms, ==, T0 + 5000);
    g_assert_cmpstr(d->policy, ==, "adaptive");
    g_assert_cmpstr(d->reason, ==, "latency above target");
    g_assert_cmpstr(d->cause, ==, "latency");
    g_assert_cmpint(d->new_triple.poll_grow, ==, 2);
    g_assert_cmpint(d->new_triple.poll_shrink, ==, METRIC_ABSENT);
    g_assert_false(d->applied);
    g_assert_true(store_cursor_next_decision(cur, &d, &error));
    g_assert_null(d);
    /* a decision cursor refuses to be read as samples */
    {
        const StoreRow *row;

        g_assert_false(store_cursor_next(cur, &row, &error));
        g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    }
}

static void
test_overrides(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) active = NULL;
    gint64 id1 = 0, id2 = 0, id3 = 0;
    StoreOverride ov = {
        .created_ms = T0, .expires_ms = T0 + 3600000, .who = "uid 1000", .target = "vm0",
        .iothread = "iothread0", .triple = { 0, METRIC_ABSENT, METRIC_ABSENT },
        .reason = "latency test",
    };

    g_assert_true(store_override_set(fx->db, &ov, &id1, &error));
    ov.iothread = NULL;
    ov.expires_ms = METRIC_ABSENT;
    ov.policy = "off";
    ov.triple = (StoreTriple){ METRIC_ABSENT, METRIC_ABSENT, METRIC_ABSENT };
    g_assert_true(store_override_set(fx->db, &ov, &id2, &error));
    ov.created_ms = T0 + 10;
    g_assert_true(store_override_set(fx->db, &ov, &id3, &error));
    g_assert_no_error(error);
    g_assert_cmpint(id1, !=, id2);

    /* The third replaced the second (the same target, whole): that one
     * ended when the third was set. */
    g_assert_cmpint(test_sql_int(fx->path, "SELECT count(*) FROM overrides"), ==, 3);
    g_assert_cmpint(test_sql_int(fx->path, "SELECT cleared FROM overrides WHERE id = 2"),
                    ==, T0 + 10);
    active = store_override_list_active(fx->db, T0 + 1000, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 2);
    {
        StoreOverrideRow *r = active->pdata[0];

        g_assert_cmpint(r->ov.id, ==, id1);
        g_assert_cmpstr(r->ov.who, ==, "uid 1000");
        g_assert_cmpstr(r->ov.iothread, ==, "iothread0");
        g_assert_cmpstr(r->ov.reason, ==, "latency test");
        g_assert_cmpint(r->ov.triple.poll_max_ns, ==, 0);
        g_assert_cmpint(r->ov.triple.poll_grow, ==, METRIC_ABSENT);
        g_assert_null(r->ov.policy);
        r = active->pdata[1];
        g_assert_cmpint(r->ov.id, ==, id3);
        g_assert_null(r->ov.iothread);
        g_assert_cmpstr(r->ov.policy, ==, "off");
        g_assert_cmpint(r->ov.expires_ms, ==, METRIC_ABSENT);
    }
    g_clear_pointer(&active, g_ptr_array_unref);

    /* Replaced, so no longer active. */
    g_assert_false(store_override_clear(fx->db, id2, T0 + 2000, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND);
    g_clear_error(&error);
    /* after the first one's expiry only the third is left */
    active = store_override_list_active(fx->db, T0 + 3600000, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 1);
    g_assert_cmpint(((StoreOverrideRow *)active->pdata[0])->ov.id, ==, id3);
    g_clear_pointer(&active, g_ptr_array_unref);

    /* A newer override that expired does not bring back the one it
     * replaced, even in a file written when overrides stacked (the older
     * row never ended). */
    {
        gint64 a = 0, b = 0;
        StoreOverride x = {
            .created_ms = T0 + 20, .who = "uid 0", .target = "vm0", .iothread = "iothread1",
            .triple = { 1000, METRIC_ABSENT, METRIC_ABSENT },
        };

        g_assert_true(store_override_set(fx->db, &x, &a, &error));
        x.created_ms = T0 + 30;
        x.expires_ms = T0 + 4000;
        x.triple.poll_max_ns = 2000;
        g_assert_true(store_override_set(fx->db, &x, &b, &error));
        g_assert_no_error(error);
        g_assert_cmpint(test_sql_int(fx->path, "UPDATE overrides SET cleared = NULL"
                                     " WHERE poll_max_ns = 1000 RETURNING id"), ==, a);
        /* id1 (iothread0), id3 (whole target), b (iothread1) */
        active = store_override_list_active(fx->db, T0 + 3000, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(active->len, ==, 3);
        g_assert_cmpint(((StoreOverrideRow *)active->pdata[2])->ov.id, ==, b);
        g_clear_pointer(&active, g_ptr_array_unref);
        active = store_override_list_active(fx->db, T0 + 5000, &error);
        g_assert_no_error(error);
        g_assert_cmpuint(active->len, ==, 2);
        g_assert_cmpint(((StoreOverrideRow *)active->pdata[0])->ov.id, ==, id1);
        g_assert_cmpint(((StoreOverrideRow *)active->pdata[1])->ov.id, ==, id3);
    }

    ov.target = "unknown-vm";
    g_assert_false(store_override_set(fx->db, &ov, NULL, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND);
}

/* An override written again into a new file keeps its id, leaves one
 * already there as it is, and ends nothing; a new one is numbered after
 * it.  A whole target's brings its target into the file. */
static void
test_override_rewrite(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) active = NULL;
    gint64 id = 0;
    StoreOverride ov = {
        .id = 42, .created_ms = T0, .expires_ms = T0 + 3600000, .who = "uid 0",
        .target = "vm0", .iothread = "iothread0", .triple = { 7000, METRIC_ABSENT, 2 },
    };

    g_assert_true(store_override_rewrite(fx->db, &ov, &error));
    g_assert_no_error(error);
    g_assert_true(store_override_rewrite(fx->db, &ov, &error));
    g_assert_no_error(error);
    g_assert_cmpint(test_sql_int(fx->path, "SELECT count(*) FROM overrides"), ==, 1);
    active = store_override_list_active(fx->db, T0 + 1000, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 1);
    g_assert_cmpint(((StoreOverrideRow *)active->pdata[0])->ov.id, ==, 42);
    g_assert_cmpint(((StoreOverrideRow *)active->pdata[0])->ov.expires_ms, ==, T0 + 3600000);
    g_assert_cmpint(((StoreOverrideRow *)active->pdata[0])->ov.triple.poll_grow, ==,
                    METRIC_ABSENT);

    ov.id = 0;
    ov.created_ms = T0 + 10;
    ov.iothread = "iothread1";
    g_assert_true(store_override_set(fx->db, &ov, &id, &error));
    g_assert_cmpint(id, >, 42);

    /* A whole target the file does not know yet (its QEMU gone). */
    ov.id = 99;
    ov.target = "vm-gone";
    ov.iothread = NULL;
    g_assert_true(store_override_rewrite(fx->db, &ov, &error));
    g_assert_no_error(error);
    g_clear_pointer(&active, g_ptr_array_unref);
    active = store_override_list_active(fx->db, T0 + 1000, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(active->len, ==, 3);
    g_assert_cmpint(((StoreOverrideRow *)active->pdata[2])->ov.id, ==, 99);
    g_assert_null(((StoreOverrideRow *)active->pdata[2])->ov.iothread);
    ov.id = 0;
    g_assert_false(store_override_rewrite(fx->db, &ov, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
}

static void
test_originals(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *inst = NULL;
    StoreTriple first = { 32768, 0, 0 }, later = { 1000, 4, 2 }, next = { 20000, 2, 0 }, got;

    /* The same instance: the first triple stays. */
    g_assert_true(store_original_save(fx->db, "vm0", "iothread0", &first, "b/100/7", T0, &error));
    g_assert_true(store_original_save(fx->db, "vm0", "iothread0", &later, "b/100/7", T0 + 1,
                                      &error));
    g_assert_true(store_original_get(fx->db, "vm0", "iothread0", &got, &inst, &error));
    g_assert_no_error(error);
    g_assert_cmpint(got.poll_max_ns, ==, 32768);
    g_assert_cmpint(got.poll_grow, ==, 0);
    g_assert_cmpstr(inst, ==, "b/100/7");
    g_clear_pointer(&inst, g_free);

    /* Another instance replaces it; NULL for the instance is optional. */
    g_assert_true(store_original_save(fx->db, "vm0", "iothread0", &next, "b/200/9", T0 + 2,
                                      &error));
    g_assert_true(store_original_get(fx->db, "vm0", "iothread0", &got, NULL, &error));
    g_assert_cmpint(got.poll_max_ns, ==, 20000);
    g_assert_cmpint(got.poll_grow, ==, 2);

    /* A write made outside polltune replaces it within the instance. */
    g_assert_true(store_original_replace(fx->db, "vm0", "iothread0", &later, "b/200/9", T0 + 3,
                                         &error));
    g_assert_true(store_original_get(fx->db, "vm0", "iothread0", &got, &inst, &error));
    g_assert_cmpint(got.poll_max_ns, ==, 1000);
    g_assert_cmpint(got.poll_grow, ==, 4);
    g_assert_cmpint(got.poll_shrink, ==, 2);
    g_assert_cmpstr(inst, ==, "b/200/9");
    g_clear_pointer(&inst, g_free);

    /* Unknown instances count as one. */
    g_assert_true(store_original_save(fx->db, "vm0", "iothread1", &first, NULL, T0, &error));
    g_assert_true(store_original_save(fx->db, "vm0", "iothread1", &later, NULL, T0 + 1, &error));
    g_assert_true(store_original_get(fx->db, "vm0", "iothread1", &got, &inst, &error));
    g_assert_cmpint(got.poll_max_ns, ==, 32768);
    g_assert_null(inst);

    g_assert_false(store_original_get(fx->db, "vm0", "iothread9", &got, NULL, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND);
}

static void
test_policy_rules(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) rules = NULL;
    StorePolicyRule *r;

    g_assert_true(store_policy_rule_set(fx->db, "db-*", "adaptive:latency", "uid 0", T0,
                                        &error));
    g_assert_true(store_policy_rule_set(fx->db, "web-*", "off", "uid 0", T0 + 1, &error));
    /* A second rule for a glob replaces the first and becomes the newest. */
    g_assert_true(store_policy_rule_set(fx->db, "db-*", "static:50000/2/2", "uid 1000",
                                        T0 + 2, &error));
    g_assert_no_error(error);
    rules = store_policy_rule_list(fx->db, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(rules->len, ==, 2);
    r = rules->pdata[0];
    g_assert_cmpstr(r->glob, ==, "web-*");
    g_assert_cmpstr(r->policy, ==, "off");
    r = rules->pdata[1];
    g_assert_cmpstr(r->glob, ==, "db-*");
    g_assert_cmpstr(r->policy, ==, "static:50000/2/2");
    g_assert_cmpstr(r->who, ==, "uid 1000");
    g_assert_cmpint(r->set_ms, ==, T0 + 2);
    g_clear_pointer(&rules, g_ptr_array_unref);

    g_assert_true(store_policy_rule_clear(fx->db, "web-*", &error));
    g_assert_false(store_policy_rule_clear(fx->db, "web-*", &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, "web-*"));
    g_clear_error(&error);
    g_assert_false(store_policy_rule_set(fx->db, "", "off", "uid 0", T0, &error));
    g_assert_error(error, STORE_ERROR, STORE_ERROR_INVALID);
    g_clear_error(&error);
    rules = store_policy_rule_list(fx->db, &error);
    g_assert_cmpuint(rules->len, ==, 1);
    g_assert_cmpstr(((StorePolicyRule *)rules->pdata[0])->glob, ==, "db-*");
}

static void
test_tick_write_time(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(200);
    StoreStats stats;

    for (int i = 0; i < 50; i++) {
        test_tick_fill(t, T0 + i * 1000, i);
        g_assert_true(store_tick_write(fx->db, &t->tick, &error));
    }
    store_db_get_stats(fx->db, &stats);
    g_assert_cmpuint(stats.ticks_written, ==, 50);
    g_test_message("tick of 200 iothreads: last %" G_GINT64_FORMAT " us, max %" G_GINT64_FORMAT
                   " us", stats.last_write_us, stats.max_write_us);
    /* How long it took is bench/store's business: a timed assertion here
     * would measure the machine's load, not the code. */
    g_assert_cmpint(test_sql_int(fx->path, "SELECT count(*) FROM samples"), ==, 50 * 200);
    /* last_seen is refreshed once a minute, not every tick */
    g_assert_cmpint(test_sql_int(fx->path, "SELECT max(last_seen) FROM iothreads"), ==, T0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
#define ADD(name, fn) g_test_add(name, Fixture, NULL, fixture_setup, fn, fixture_teardown)
    ADD("/store/write/roundtrip", test_roundtrip);
    ADD("/store/write/invalid", test_invalid);
    ADD("/store/write/host", test_host);
    ADD("/store/write/range", test_range);
    ADD("/store/write/decisions", test_decisions);
    ADD("/store/write/overrides", test_overrides);
    ADD("/store/write/override-rewrite", test_override_rewrite);
    ADD("/store/write/originals", test_originals);
    ADD("/store/write/policy-rules", test_policy_rules);
    ADD("/store/write/tick-time", test_tick_write_time);
    return g_test_run();
}
