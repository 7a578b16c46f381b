/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-testdb: see cli-testdb.h.
 */
#include <math.h>
#include <sys/wait.h>

#include "cli-testdb.h"
#include "pt-test-child.h"

#include <sqlite3.h>
#include <string.h>

static void
sample_fill(StoreSample *s, const char *target, const char *iothread, double iops,
            double lat_us, double cpu_frac, gint64 max_ns, gint64 len_ns, gboolean exits)
{
    double secs = len_ns / 1e9;
    gint64 rd = (gint64)(iops * secs * 0.7), wr = (gint64)(iops * secs * 0.3);

    store_sample_init(s);
    s->target = target;
    s->iothread = iothread;
    s->m.v[METRIC_POLL_MAX_NS] = max_ns;
    s->m.v[METRIC_POLL_GROW] = 0;
    s->m.v[METRIC_POLL_SHRINK] = 0;
    s->m.v[METRIC_CPU_NS] = (gint64)(cpu_frac * len_ns);
    s->m.v[METRIC_CTX_VOL] = (gint64)((rd + wr) * (max_ns > 0 ? 0.3 : 1.0));
    s->m.v[METRIC_CTX_INVOL] = 3;
    s->m.v[METRIC_RUNQ_WAIT_NS] = len_ns / 500;
    s->m.v[METRIC_RD_OPS] = rd;
    s->m.v[METRIC_RD_BYTES] = rd * 4096;
    s->m.v[METRIC_RD_TIME_NS] = (gint64)(rd * lat_us * 1000);
    s->m.v[METRIC_WR_OPS] = wr;
    s->m.v[METRIC_WR_BYTES] = wr * 4096;
    s->m.v[METRIC_WR_TIME_NS] = (gint64)(wr * lat_us * 1300);
    s->m.v[METRIC_FLUSH_OPS] = 0;
    s->m.v[METRIC_FLUSH_TIME_NS] = 0;
    if (exits) {
        s->m.v[METRIC_KVM_EXITS] = (gint64)((rd + wr) * (max_ns > 0 ? 0.2 : 1.1));
        s->m.v[METRIC_IO_EXITS] = s->m.v[METRIC_KVM_EXITS] / 2;
        s->m.v[METRIC_MMIO_EXITS] = s->m.v[METRIC_KVM_EXITS] / 3;
        s->m.v[METRIC_HALT_EXITS] = 50;
    }
}

void
cli_testdb_create(const char *path, const CliTestDbSpec *spec)
{
    g_autoptr(GError) error = NULL;
    StoreOptions opts;
    g_autoptr(StoreDb) db = NULL;
    StoreSample samples[3];
    gint64 max_ns = 16384, len_ns = spec->tick_ms * 1000000;
    gint64 end_ms = spec->start_ms + (gint64)spec->n_ticks * spec->tick_ms;

    store_options_init(&opts);
    opts.now_ms = end_ms;
    /* Keep every raw tick: tests compare exports against them. */
    opts.raw_retention_ms = G_MAXINT64 / 4;
    db = store_db_open(path, &opts, &error);
    g_assert_no_error(error);
    g_assert_true(store_target_register(db, STORE_TARGET_LIBVIRT, "db-1", NULL,
                                        spec->start_ms, &error));
    g_assert_no_error(error);
    for (guint i = 0; i < spec->n_ticks; i++) {
        gint64 ts = spec->start_ms + (gint64)(i + 1) * spec->tick_ms;
        double phase = (double)i / spec->n_ticks * 2 * G_PI * 3;
        double wave = 0.5 + 0.5 * sin(phase);
        double gain = max_ns >= 32768 ? 1.35 : 1.0;
        StoreTick tick;

        if (spec->decision_every && i > 0 && i % spec->decision_every == 0) {
            gint64 next = max_ns >= 65536 ? 16384 : max_ns * 2;
            StoreDecision d = {
                .ts_ms = ts, .target = "db-1", .iothread = "iothread0",
                .policy = "adaptive:balanced",
                .old_triple = { max_ns, 0, 0 }, .new_triple = { next, 0, 0 },
                /* As the daemon stores them: the text, then the evidence. */
                .reason = next > max_ns ? "probe: IOPS rose, CPU has room, \"grow\" "
                                          "[triple=16384/2/0 iops=5200 lat_us=310.5 "
                                          "cpu_pct=22.1 start=16384/2/0:n=12:score=0.1234 "
                                          "trigger=\"iops up 30%\"]" :
                          "back off: CPU, budget spent [budget_cores=0.50 used=0.62 cost=0.12]",
                .applied = (i / spec->decision_every) % 3 != 2,
            };

            g_assert_true(store_decision_insert(db, &d, &error));
            g_assert_no_error(error);
            if (d.applied)
                max_ns = next;
        }
        sample_fill(&samples[0], "db-1", "iothread0", (2500 + 6000 * wave) * gain,
                    420 / gain - 80 * wave, 0.05 + 0.25 * wave * max_ns / 65536.0, max_ns,
                    len_ns, TRUE);
        /* iothread1 runs at QEMU's default and is probed with polling off
         * for 30 ticks every 300: the off/on pairs the report estimates
         * polling's cost from (8 % of a core, +25 % IOPS, -60 us). */
        {
            gboolean off = i % 300 >= 270;

            sample_fill(&samples[1], "db-1", "iothread1", (900 + 300 * wave) * (off ? 0.8 : 1.0),
                        off ? 310 : 250, off ? 0.04 + 0.02 * wave : 0.12 + 0.02 * wave,
                        off ? 0 : 32768, len_ns, TRUE);
        }
        sample_fill(&samples[2], "web-1", "iothread0", 120 + 40 * (1 - wave), 650, 0.01, 0,
                    len_ns, FALSE);
        store_tick_init(&tick);
        tick.ts_ms = ts;
        tick.len_ns = len_ns;
        tick.samples = samples;
        tick.n_samples = G_N_ELEMENTS(samples);
        g_assert_true(store_tick_write(db, &tick, &error));
        g_assert_no_error(error);
    }
    if (spec->rollups) {
        gboolean more = TRUE;

        while (more) {
            g_assert_true(store_maintain_step(db, end_ms + 2 * 3600 * 1000, 1000, &more,
                                              &error));
            g_assert_no_error(error);
        }
    }
}

gint64
cli_testdb_create_standard(const char *path)
{
    g_autoptr(GDateTime) t0 = g_date_time_new_utc(2026, 11, 30, 22, 0, 0);
    CliTestDbSpec spec = { .start_ms = g_date_time_to_unix(t0) * 1000,
                           .n_ticks = CLI_TESTDB_TICKS, .tick_ms = 1000,
                           .decision_every = 600, .rollups = TRUE };

    cli_testdb_create(path, &spec);
    return spec.start_ms;
}

void
cli_run_clear(CliRun *r)
{
    g_clear_pointer(&r->out, g_free);
    g_clear_pointer(&r->err, g_free);
}

void
cli_run(CliRun *r, const char *const *argv)
{
    const char *exe = g_getenv("PT_POLLTUNECTL");
    g_autoptr(GPtrArray) args = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    int wait_status = 0;

    g_assert_nonnull(exe);
    cli_run_clear(r);
    g_ptr_array_add(args, (char *)exe);
    for (const char *const *a = argv; *a; a++)
        g_ptr_array_add(args, (char *)*a);
    g_ptr_array_add(args, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)args->pdata, NULL, G_SPAWN_DEFAULT,
                               pt_test_child_setup, PT_TEST_CHILD_DATA, &r->out, &r->err,
                               &wait_status, &error));
    g_assert_no_error(error);
    r->status = WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1;
}

char *
cli_test_iso(gint64 ms)
{
    g_autoptr(GDateTime) s = g_date_time_new_from_unix_utc(ms / 1000);
    g_autofree char *secs = g_date_time_format(s, "%Y-%m-%dT%H:%M:%S");

    return g_strdup_printf("%s.%03dZ", secs, (int)(ms % 1000));
}

const char *const cli_raw_names[CLI_N_RAW] = {
    "tick_ns", "poll_max_ns", "poll_grow", "poll_shrink", "cpu_ns", "ctx_vol", "ctx_invol",
    "runq_wait_ns", "rd_ops", "rd_bytes", "rd_time_ns", "wr_ops", "wr_bytes", "wr_time_ns",
    "flush_ops", "flush_time_ns", "kvm_exits", "io_exits", "mmio_exits", "halt_exits",
    "aio_max_batch", "iops",
};


/* A value as the export writes it: scaled integers as decimals. */
static void
append_value(GString *s, sqlite3_stmt *st, int col, int decimals)
{
    gint64 v, p = 1;

    if (sqlite3_column_type(st, col) == SQLITE_NULL)
        return;
    v = sqlite3_column_int64(st, col);
    if (decimals == 0) {
        g_string_append_printf(s, "%" G_GINT64_FORMAT, v);
        return;
    }
    for (int i = 0; i < decimals; i++)
        p *= 10;
    g_string_append_printf(s, "%" G_GINT64_FORMAT ".%0*" G_GINT64_FORMAT, v / p, decimals,
                           v % p);
}

static void
append_csv_text(GString *s, const char *t)
{
    if (!t)
        return;
    if (!strpbrk(t, ",\"\r\n")) {
        g_string_append(s, t);
        return;
    }
    g_string_append_c(s, '"');
    for (; *t; t++) {
        if (*t == '"')
            g_string_append_c(s, '"');
        g_string_append_c(s, *t);
    }
    g_string_append_c(s, '"');
}

GPtrArray *
cli_expected_csv(const char *db_path, const char *query, gint64 from, gint64 to,
                 const int *decimals, int n_num, int n_text)
{
    sqlite3 *sql = NULL;

    g_assert_cmpint(sqlite3_open_v2(db_path, &sql, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    sqlite3_stmt *st = NULL;
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);

    g_assert_cmpint(sqlite3_prepare_v2(sql, query, -1, &st, NULL), ==, SQLITE_OK);
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    while (sqlite3_step(st) == SQLITE_ROW) {
        GString *s = g_string_new(NULL);
        g_autofree char *t = cli_test_iso(sqlite3_column_int64(st, 0));

        g_string_append_printf(s, "%s,%s,", t, sqlite3_column_text(st, 1));
        append_csv_text(s, (const char *)sqlite3_column_text(st, 2));
        g_string_append_printf(s, ",%s", sqlite3_column_text(st, 3));
        for (int i = 0; i < n_num; i++) {
            g_string_append_c(s, ',');
            append_value(s, st, 4 + i, decimals[i]);
        }
        for (int i = 0; i < n_text; i++) {
            g_string_append_c(s, ',');
            append_csv_text(s, (const char *)sqlite3_column_text(st, 4 + n_num + i));
        }
        g_ptr_array_add(lines, g_string_free(s, FALSE));
    }
    sqlite3_finalize(st);
    sqlite3_close(sql);
    return lines;
}


/* The A/B history of cli-testdb.h: the load level, the setting of each
 * tick and what each setting does to the load. */
static gboolean
ab_busy(guint i)
{
    return i >= CLI_AB_BUSY_FROM && i < CLI_AB_BUSY_TO;
}

gint64
cli_ab_setting(guint i)
{
    static const gint64 pattern[] = { CLI_AB_X, 32768, CLI_AB_X, 0 };

    if (i < CLI_AB_BUSY_FROM)
        return 32768;
    if (i >= CLI_AB_BUSY_TO)
        return CLI_AB_X;
    return pattern[(i - CLI_AB_BUSY_FROM) / CLI_AB_RUN % G_N_ELEMENTS(pattern)];
}

double
cli_ab_load(guint i)
{
    if (!ab_busy(i))
        return 0;
    /* Two and a half waves over the busy half hour: 22k to 38k ops/s. */
    return 30000 + 8000 * sin((double)(i - CLI_AB_BUSY_FROM) / 720 * 2 * G_PI);
}

void
cli_ab_effect(gint64 max_ns, gboolean busy, double *iops_factor, double *lat_us,
              double *cpu_poll_pct)
{
    *iops_factor = max_ns == 0 ? 0.85 : max_ns == CLI_AB_X ? 0.98 : 1.0;
    *lat_us = max_ns == 0 ? 60 : max_ns == CLI_AB_X ? 42 : 40;
    /* Polling costs more under load: more completions to wait for. */
    *cpu_poll_pct = max_ns == 0 ? 0 : max_ns == CLI_AB_X ? (busy ? 1.5 : 0.2)
                                                         : (busy ? 2.5 : 0.3);
}

/* One tick of a one-iothread schedule: the setting in force, what the
 * iothread did, the host's CPUs busy (share) and CPU pressure (share). */
typedef struct {
    gint64 max_ns;
    double iops, lat_us, cpu_pct, host_busy, host_psi;
} ScheduleTick;

typedef void (*ScheduleFn)(guint i, ScheduleTick *t);

/* @n 1 s ticks of demo-vm/iot0 from @fn, with an adaptive decision at
 * each change of setting, written through store/ as the daemon writes. */
static void
schedule_write(const char *path, gint64 start_ms, guint n, ScheduleFn fn)
{
    g_autoptr(GError) error = NULL;
    StoreOptions opts;
    g_autoptr(StoreDb) db = NULL;
    gint64 len_ns = 1000000000, prev_ns = -1;

    store_options_init(&opts);
    opts.now_ms = start_ms + (gint64)n * 1000;
    opts.raw_retention_ms = G_MAXINT64 / 4;
    db = store_db_open(path, &opts, &error);
    g_assert_no_error(error);
    g_assert_true(store_target_register(db, STORE_TARGET_QMP, "demo-vm", NULL, start_ms,
                                        &error));
    g_assert_no_error(error);
    for (guint i = 0; i < n; i++) {
        gint64 ts = start_ms + (gint64)(i + 1) * 1000;
        ScheduleTick t;
        StoreSample s;
        StoreTick tick;

        fn(i, &t);
        if (prev_ns >= 0 && t.max_ns != prev_ns) {
            g_autofree char *reason = g_strdup_printf(
                "probe: compare with the current setting [triple=%" G_GINT64_FORMAT
                "/0/0 iops=%.0f lat_us=42.0 cpu_pct=4.1 qd=1.3 z=2.4 start=%"
                G_GINT64_FORMAT "/0/0:n=30:score=0.2140 trigger=\"workload changed\"]",
                t.max_ns, t.iops, prev_ns);
            StoreDecision d = {
                .ts_ms = ts - 1000, .target = "demo-vm", .iothread = "iot0",
                .policy = "adaptive:balanced",
                .old_triple = { prev_ns, 0, 0 },
                .new_triple = { t.max_ns, 0, 0 }, .reason = reason, .applied = TRUE,
            };

            g_assert_true(store_decision_insert(db, &d, &error));
            g_assert_no_error(error);
        }
        prev_ns = t.max_ns;
        sample_fill(&s, "demo-vm", "iot0", t.iops, t.lat_us, t.cpu_pct / 100, t.max_ns,
                    len_ns, TRUE);
        store_tick_init(&tick);
        tick.ts_ms = ts;
        tick.len_ns = len_ns;
        tick.psi.cpu_some_us = (gint64)(len_ns / 1000 * t.host_psi);
        tick.cpu.total_us = CLI_AB_HOST_CPUS * len_ns / 1000;
        tick.cpu.busy_us = (gint64)(tick.cpu.total_us * t.host_busy);
        tick.samples = &s;
        tick.n_samples = 1;
        g_assert_true(store_tick_write(db, &tick, &error));
        g_assert_no_error(error);
    }
}

static void
ab_tick(guint i, ScheduleTick *t)
{
    double factor, lat, poll;

    t->max_ns = cli_ab_setting(i);
    cli_ab_effect(t->max_ns, ab_busy(i), &factor, &lat, &poll);
    t->iops = cli_ab_load(i) * factor;
    t->lat_us = lat;
    t->cpu_pct = 0.3 + t->iops / 12000 + poll;
    /* The host is saturated throughout: something else keeps its CPUs
     * busy, and runnable tasks wait for a CPU 99 % of the time. */
    t->host_busy = 1.0;
    t->host_psi = 0.99;
}

void
cli_testdb_create_ab(const char *path, gint64 start_ms)
{
    schedule_write(path, start_ms, CLI_AB_TICKS, ab_tick);
}

/* The demo's schedule (scripts/demo.sh's phases idle:10,qd1:35,qd16:35,
 * idle:10) as the adaptive policy meets it: on each change of load it
 * probes polling off and another setting for five ticks each, then
 * settles.  Polling buys queue depth 1 half its IOPS for a third of a
 * core; at queue depth 16 it buys little and costs little. */
static void
demo_tick(guint i, ScheduleTick *t)
{
    gboolean qd1 = i >= 10 && i < 45, qd16 = i >= 45 && i < 80;
    guint k = qd1 ? i - 10 : qd16 ? i - 45 : 0;
    gboolean off = (qd1 || qd16) && k >= 5 && k < 10;
    double wobble = 1 + 0.04 * sin(i * 1.7);

    t->max_ns = off ? 0 : qd1 ? (k >= 10 && k < 15 ? 16384 : k >= 15 ? 65536 : 32768)
                : qd16 ? (k >= 10 && k < 15 ? 65536 : 32768) : 32768;
    if (qd1) {
        t->iops = (off ? 8000 : t->max_ns == 16384 ? 9000 : 12000) * wobble;
        t->cpu_pct = (off ? 10 : 40) * wobble;
    } else if (qd16) {
        t->iops = (off ? 45000 : 48000) * wobble;
        t->cpu_pct = (off ? 52 : 58) * wobble;
    } else {
        t->iops = 0;
        t->cpu_pct = 0.2;
    }
    t->lat_us = t->iops > 0 ? (qd16 ? 16 : 1) / t->iops * 1e6 : 0;
    t->host_busy = 0.15 + t->cpu_pct / 200;
    t->host_psi = 0.01;
}

void
cli_testdb_create_demo(const char *path, gint64 start_ms)
{
    schedule_write(path, start_ms, CLI_DEMO_TICKS, demo_tick);
}

/* The text of the table row whose first cell is @first, tags removed. */
char *
cli_test_row_text(const char *html, const char *first)
{
    g_autofree char *cell = g_strdup_printf("><td>%s</td>", first);
    const char *p = strstr(html, cell), *end;
    g_autoptr(GString) out = g_string_new(NULL);
    gboolean tag = FALSE;

    g_assert_nonnull(p);
    end = strstr(p, "</tr>");
    g_assert_nonnull(end);
    for (; p < end; p++) {
        if (*p == '<')
            tag = TRUE;
        else if (*p == '>') {
            tag = FALSE;
            g_string_append_c(out, '|');
        } else if (!tag)
            g_string_append_c(out, *p);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* A figure as the page writes it: "36.6k", "1.2M", "0.003", "-164". */
double
cli_test_si_number(const char *text)
{
    char *end = NULL;
    double v = g_ascii_strtod(text, &end);

    if (end && *end == 'k')
        v *= 1e3;
    else if (end && *end == 'M')
        v *= 1e6;
    return v;
}

/* The text of cell @col (0: the name) of a row from row_text(). */
char *
cli_test_row_cell(const char *row, guint col)
{
    g_auto(GStrv) cells = g_strsplit(row, "|", -1);
    guint k = 0;

    for (char **c = cells; *c; c++) {
        if (!**c)
            continue;
        if (k++ == col)
            return g_strdup(*c);
    }
    g_assert_not_reached();
}

/* From @section's heading on, the first row for @first. */
char *
cli_test_section_row(const char *html, const char *section_id, const char *first)
{
    g_autofree char *id = g_strdup_printf("id=\"%s\"", section_id);
    const char *p = strstr(html, id);

    g_assert_nonnull(p);
    return cli_test_row_text(p, first);
}

char *
cli_test_chromium_find(void)
{
    char *c = g_find_program_in_path("chromium");

    return c ? c : g_find_program_in_path("chromium-browser");
}

char *
cli_test_chromium_dom(const char *html_path, const char *png, const char *profile_dir,
                      char **err)
{
    g_autofree char *chromium = cli_test_chromium_find();
    g_autofree char *url = g_strconcat("file://", html_path, NULL);
    g_autofree char *user = g_strconcat("--user-data-dir=", profile_dir, NULL);
    g_autofree char *shot = png ? g_strconcat("--screenshot=", png, NULL) : NULL;
    char *dom = NULL;
    int status = 0;

    if (!chromium) {
        g_test_skip("chromium is not installed (Debian package chromium)");
        return NULL;
    }
    {
        const char *dump[] = { chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                               user, "--enable-logging=stderr", "--v=0", "--dump-dom", url,
                               NULL };
        const char *snap[] = { chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                               user, "--hide-scrollbars", "--window-size=1240,2400", shot, url,
                               NULL };

        g_assert_true(g_spawn_sync(NULL, (char **)dump, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                   &dom, err, &status, NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
        if (shot) {
            g_assert_true(g_spawn_sync(NULL, (char **)snap, NULL, G_SPAWN_STDOUT_TO_DEV_NULL |
                                       G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                                       &status, NULL));
            g_assert_true(g_spawn_check_wait_status(status, NULL));
        }
    }
    return dom;
}
