/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The report's estimates, in process: histories made up tick by tick are
 * fed to a report and the page it writes is read as a user reads it.
 *
 * - The projection never reads backwards: over generated histories (load
 *   phases, polling switched on and off, CPU per operation that may fall
 *   from one phase to the next), the iothread CPU a row gives at a higher
 *   load is never below the one it gives at a lower load, and no figure
 *   is given at a load above the highest measured.
 * - The peak is the data's, whatever the bucket size.
 * - A gain against QEMU's default measured at queue depth 1 is not charged
 *   to queue depth 16.
 * - The single-host report (the ticks replayed) and the fleet report (the
 *   increases of the counters the daemon keeps tick by tick, beside rates
 *   over scrapes) give the same gain figures for one history and range.
 */
#include <math.h>
#include <string.h>

#include "cli-report.h"
#include "policy-gain.h"
#include "cli-testdb.h"

#define T0_MS G_GINT64_CONSTANT(1795000000000)
#define DAY_MS (24 * 3600 * G_GINT64_CONSTANT(1000))

typedef struct {
    GArray *pts;                /* CliPoint */
    double max_iops;
} History;

static void
history_add(History *h, double iops, double qd, double cpu, gint64 max_ns)
{
    CliPoint p = { .ts_ms = T0_MS + (gint64)(h->pts->len + 1) * 1000, .target = "vm-g",
                   .iothread = "iot0", .iops = iops, .cpu_pct = CLAMP(cpu, 0.0, 100.0),
                   .lat_us = iops > 0 ? qd / iops * 1e6 : NAN, .poll_max_ns = max_ns };

    g_array_append_val(h->pts, p);
    h->max_iops = MAX(h->max_iops, iops);
}

/* The page for @h over [T0, to), to fitted to the data when 0. */
static char *
history_page(const History *h, gint64 to_ms)
{
    g_autoptr(CliReport) r = cli_report_new(T0_MS, to_ms ? to_ms : T0_MS + 30 * DAY_MS,
                                            "test", STORE_RES_RAW);
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
    g_autoptr(GError) error = NULL;

    cli_report_fit_range(r, to_ms == 0);
    for (guint i = 0; i < h->pts->len; i++)
        cli_report_add_point(r, &g_array_index(h->pts, CliPoint, i));
    g_assert_true(cli_report_write(r, out, T0_MS + 30 * DAY_MS, &error));
    g_assert_no_error(error);
    g_assert_true(g_output_stream_write_all(out, "", 1, NULL, NULL, NULL));
    g_assert_true(g_output_stream_close(out, NULL, NULL));
    return g_memory_output_stream_steal_data(G_MEMORY_OUTPUT_STREAM(out));
}

/* A cell's figure, NAN when it is words. */
static double
cell_figure(const char *row, guint col)
{
    g_autofree char *cell = cli_test_row_cell(row, col);

    return g_ascii_isdigit(cell[cell[0] == '-']) ? cli_test_si_number(cell) : NAN;
}

/*
 * A made-up history: load phases (idle, or 200 to 60k ops/s at a queue
 * depth of 1 to 32), each with its own CPU per operation, in which the
 * setting changes every few ticks among off, 16384, the default and
 * 50000; polling costs a phase-dependent share of the idle time.
 */
static void
history_generate(History *h, GRand *rand)
{
    guint phases = g_rand_int_range(rand, 2, 7);

    for (guint k = 0; k < phases; k++) {
        gboolean idle = g_rand_double(rand) < 0.2;
        double load = idle ? 0 : exp(g_rand_double_range(rand, log(200), log(60000)));
        double qd = g_rand_double_range(rand, 1, 32);
        double per_kop = g_rand_double_range(rand, 0.1, 3.0);
        double poll = g_rand_double_range(rand, 0, 20);
        guint n = g_rand_int_range(rand, 30, 400);
        static const gint64 settings[] = { 0, 16384, 32768, 50000 };
        gint64 max_ns = settings[g_rand_int_range(rand, 0, 4)];

        for (guint i = 0; i < n; i++) {
            double iops = idle ? g_rand_double_range(rand, 0, 5)
                               : load * g_rand_double_range(rand, 0.85, 1.15);
            double cpu = 0.3 + iops / 1000 * per_kop + g_rand_double_range(rand, -1, 1);

            if (g_rand_double(rand) < 0.05)
                max_ns = settings[g_rand_int_range(rand, 0, 4)];
            if (max_ns > 0 && !idle)
                cpu += poll * MAX(0.0, 1.0 - cpu / 100);
            history_add(h, iops, qd, cpu, max_ns);
        }
    }
}

/* (load, CPU) of the projection row, where the row has a figure. */
static guint
projection_figures(const char *row, double load[3], double cpu[3])
{
    g_autofree char *now = cli_test_row_cell(row, 1);
    guint n = 0;
    static const guint load_col[2] = { 3, 6 }, cpu_col[2] = { 4, 7 };

    load[n] = cli_test_si_number(now);  /* "p95 / peak": the p95 */
    cpu[n] = cell_figure(row, 2);
    n += !isnan(cpu[n]);
    for (guint k = 0; k < 2; k++) {
        load[n] = cell_figure(row, load_col[k]);
        cpu[n] = cell_figure(row, cpu_col[k]);
        n += !isnan(cpu[n]) && !isnan(load[n]);
    }
    return n;
}

static void
test_projection_monotonic(void)
{
    guint rows = 0, with_figures = 0;

    for (guint seed = 1; seed <= 120; seed++) {
        g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
        History h = { g_array_new(FALSE, TRUE, sizeof(CliPoint)), 0 };
        g_autofree char *html = NULL, *row = NULL;
        double load[3], cpu[3];
        guint n;

        history_generate(&h, rand);
        html = history_page(&h, 0);
        row = cli_test_section_row(html, "projection-table", "vm-g/iot0");
        n = projection_figures(row, load, cpu);
        rows++;
        with_figures += n > 1;
        for (guint i = 0; i < n; i++) {
            if (i > 0 && load[i] > h.max_iops * 1.006) /* the page shows 3 digits */
                g_error("seed %u: a figure at %.0f ops/s, above the %.0f measured: %s", seed,
                        load[i], h.max_iops, row);
            for (guint j = 0; j < n; j++)
                if (load[i] < load[j] && cpu[i] > cpu[j] + 0.05)
                    g_error("seed %u: %.1f %% at %.0f ops/s but %.1f %% at %.0f: %s", seed,
                            cpu[i], load[i], cpu[j], load[j], row);
        }
        g_array_unref(h.pts);
    }
    g_test_message("%u histories, %u with a projected figure", rows, with_figures);
    /* Not all words: the property is held over figures. */
    g_assert_cmpuint(with_figures, >=, rows / 10);
}

/*
 * The history the issue reported: polling on, queue depth 1 at 10k ops/s
 * for 15 % of a core (polling fills the idle time), queue depth 16 at
 * 50k ops/s for 14 %, with short off probes.  A line through all of it
 * falls; the page says there is not enough evidence instead of a CPU
 * below today's at a higher load.
 */
static void
test_projection_falling(void)
{
    History h = { g_array_new(FALSE, TRUE, sizeof(CliPoint)), 0 };
    g_autofree char *html = NULL, *row = NULL;

    for (guint i = 0; i < 1200; i++) {
        gboolean qd16 = i >= 600, off = i % 100 >= 90;
        double iops = (qd16 ? 50000 : 10000) * (1 + 0.05 * sin(i)) * (off ? 0.8 : 1.0);
        double cpu = off ? (qd16 ? 11 : 4) : (qd16 ? 14 : 15);

        history_add(&h, iops, qd16 ? 16 : 1, cpu + 0.2 * cos(i), off ? 0 : 32768);
    }
    html = history_page(&h, 0);
    row = cli_test_section_row(html, "projection-table", "vm-g/iot0");
    g_test_message("projection: %s", row);
    g_assert_nonnull(strstr(row, "not enough evidence"));
    g_assert_true(isnan(cell_figure(row, 4)));
    g_assert_true(isnan(cell_figure(row, 7)));
    g_array_unref(h.pts);
}

/* A minute-long burst among quiet: a 3-hour bucket averages it away, a
 * 1-second one does not; the peak stays the burst's. */
static void
test_peak_bucket(void)
{
    History h = { g_array_new(FALSE, TRUE, sizeof(CliPoint)), 0 };
    g_autofree char *fitted = NULL, *month = NULL, *row_f = NULL, *row_m = NULL;
    g_autofree char *peak_f = NULL, *peak_m = NULL;

    for (guint i = 0; i < 1800; i++) {
        double iops = i >= 900 && i < 960 ? 48000 + i : 5000;

        history_add(&h, iops, 4, 1 + iops / 2000, 32768);
    }
    fitted = history_page(&h, 0);
    month = history_page(&h, T0_MS + 30 * DAY_MS);
    row_f = cli_test_section_row(fitted, "projection-table", "vm-g/iot0");
    row_m = cli_test_section_row(month, "projection-table", "vm-g/iot0");
    peak_f = cli_test_row_cell(row_f, 1);
    peak_m = cli_test_row_cell(row_m, 1);
    g_test_message("fitted: %s; a month: %s", peak_f, peak_m);
    g_assert_cmpstr(peak_f, ==, peak_m);
    g_assert_nonnull(strstr(peak_f, "/ 49.0k"));
    g_array_unref(h.pts);
}

/*
 * Queue depth 1 at 5k ops/s with runs of 16384 and the default taking
 * turns (16384 gives 1.5 times the default's IOPS for 1 % of a core
 * more), then queue depth 16 at 40k ops/s at 16384 alone.  The gain is
 * charged to the queue-depth-1 ticks at 16384 only, from the first pair
 * on (charging is causal: the first run at 16384 comes before any pair);
 * the queue-depth-16 ticks are unmeasured.  The first tick has no length.
 */
static void
test_gains_workload(void)
{
    History h = { g_array_new(FALSE, TRUE, sizeof(CliPoint)), 0 };
    g_autofree char *html = NULL, *row = NULL, *gained_text = NULL;
    double want_gained = 0, want_saved = 0, gained, saved, unmeasured;
    guint qd1_x = 0;

    for (guint i = 0; i < 1800; i++) {
        gboolean qd16 = i >= 600, x = qd16 || (i / 30) % 2 == 0;
        double iops = qd16 ? 40000 : x ? 7500 : 5000;

        history_add(&h, iops, qd16 ? 16 : 1, (qd16 ? 20 : 5) + (x && !qd16 ? 1 : 0),
                    x ? 16384 : 32768);
        /* The first pair closes with the default's first run, at tick 60. */
        if (x && !qd16 && i >= 60) {
            qd1_x++;
            want_gained += iops * (1 - 5000.0 / 7500);
            want_saved -= 0.01;
        }
    }
    want_gained /= h.pts->len - 1;
    want_saved /= h.pts->len - 1;
    html = history_page(&h, 0);
    row = cli_test_section_row(html, "default-table", "vm-g/iot0");
    g_test_message("vs default: %s", row);
    gained_text = cli_test_row_cell(row, 7);
    gained = cli_test_si_number(gained_text);
    saved = cell_figure(row, 6);
    unmeasured = cell_figure(row, 3);
    g_test_message("gained %.0f ops/s (want %.0f), saved %.4f cores (want %.4f), "
                   "unmeasured %.1f %%", gained, want_gained, saved, want_saved, unmeasured);
    g_assert_cmpfloat(fabs(gained - want_gained), <, 0.05 * want_gained);
    g_assert_cmpfloat(fabs(saved - want_saved), <, 0.0015);
    g_assert_cmpfloat(fabs(unmeasured - 1230.0 / 1799 * 100), <, 0.1);
    g_assert_cmpuint(qd1_x, >, 0);
    g_array_unref(h.pts);
}

/*
 * Three hours of 1 s ticks: queue depth 1 at 5k ops/s and queue depth 16
 * at 40k ops/s taking turns every 20 minutes, the setting changing every
 * 30 ticks among off, 16384, the default and 50000.  At queue depth 1,
 * 16384 gives 1.1 to 1.6 times the default's IOPS and polling 6 to 12 %
 * of a core, rising over the hours (so that a tick charged by a later
 * pair is charged another figure), 50000 1.2 times; at queue depth 16
 * neither moves IOPS, and polling costs CPU everywhere.
 */
static void
history_two_workloads(History *h)
{
    static const gint64 settings[] = { 32768, 0, 16384, 32768, 50000, 0 };

    for (guint i = 0; i < 3 * 3600; i++) {
        gboolean qd16 = (i / 1200) % 2 == 1;
        gint64 max_ns = settings[(i / 30) % G_N_ELEMENTS(settings)];
        double drift = i / (3.0 * 3600);
        double gain = qd16 ? 1.0 : max_ns == 16384 ? 1.1 + 0.5 * drift
                      : max_ns == 50000 ? 1.2 : 1.0;
        double iops = (qd16 ? 40000 : 5000) * (max_ns == 0 ? 0.8 : 1.0) * gain *
                      (1 + 0.03 * sin(i * 0.7));
        double poll = max_ns == 0 ? 0 : qd16 ? 3 : 6 + 6 * drift;
        double cpu = (qd16 ? 20 : 4) + poll + 0.3 * cos(i * 1.3);

        history_add(h, iops, qd16 ? 16 : 1, cpu, max_ns);
    }
}

static PolicyGainTick
tick_of(const CliPoint *p)
{
    return (PolicyGainTick){ p->ts_ms, p->iops, p->lat_us, p->cpu_pct, p->poll_max_ns };
}

/* Writes the page of @r and returns its one series' summary. */
static json_object *
report_summary_of(CliReport *r)
{
    g_autoptr(GOutputStream) out = g_memory_output_stream_new_resizable();
    g_autoptr(GError) error = NULL;
    json_object *a;
    json_object *o;

    g_assert_true(cli_report_write(r, out, T0_MS + 30 * DAY_MS, &error));
    g_assert_no_error(error);
    a = cli_report_summary(r);
    g_assert_cmpuint(json_object_array_length(a), ==, 1);
    o = json_object_get(json_object_array_get_idx(a, 0));
    json_object_put(a);
    return o;
}

static double
summary_figure(json_object *o, const char *key)
{
    json_object *v;

    return json_object_object_get_ex(o, key, &v) ? json_object_get_double(v) : NAN;
}

/*
 * One history, one range (its last two hours), both ways: the host
 * report replays the ticks (those of the 12 h before the range only close
 * pairs); the fleet report has the counters the daemon's code path keeps
 * (policy_gain_tick() tick by tick, as each tick is sampled), read as
 * their increase over the range, beside the rates a 15 s scrape gives.
 * The figures agree to the rounding of a report's stored floats.
 */
static void
test_gains_host_fleet(void)
{
    History h = { g_array_new(FALSE, TRUE, sizeof(CliPoint)), 0 };
    gint64 from_ms = T0_MS + 3600 * 1000, to_ms = T0_MS + 3 * 3600 * 1000 + 1000;
    g_autoptr(CliReport) host = cli_report_new(from_ms, to_ms, "test", STORE_RES_RAW);
    g_autoptr(CliReport) fleet = cli_report_new(from_ms, to_ms, "test", STORE_RES_RAW);
    g_autoptr(PolicyGain) daemon = policy_gain_new();
    PolicyGainTotals at_from = { 0 }, increase;
    json_object *hs, *fs;
    static const char *const keys[] = { "cores_saved_mean", "iops_gained_mean",
                                        "polling_cores_mean", "polling_cpu_pct",
                                        "unmeasured_share" };

    history_two_workloads(&h);
    cli_report_set_fleet(fleet, TRUE);
    for (guint i = 0; i < h.pts->len; i++) {
        const CliPoint *p = &g_array_index(h.pts, CliPoint, i);
        PolicyGainTick t = tick_of(p);

        policy_gain_tick(daemon, &t);
        if (p->ts_ms < from_ms)
            at_from = *policy_gain_totals(daemon);
        else
            cli_report_add_point(host, p);
    }
    /* The rows before the range come after the range's, as `report`
     * reads them. */
    for (guint i = 0; i < h.pts->len; i++)
        cli_report_add_warmup(host, &g_array_index(h.pts, CliPoint, i));
    for (int c = 0; c < POLICY_GAIN_MAX; c++)
        policy_gain_totals_set(&increase, c,
                               policy_gain_totals_get(policy_gain_totals(daemon), c) -
                               policy_gain_totals_get(&at_from, c));
    cli_report_set_gain(fleet, "vm-g", "iot0", &increase);
    /* The fleet's points: means over 15 s scrapes, the setting at the end. */
    for (guint i = 0; i + 15 <= h.pts->len; i += 15) {
        CliPoint m = g_array_index(h.pts, CliPoint, i + 14);
        double iops = 0, cpu = 0, busy = 0;

        for (guint k = i; k < i + 15; k++) {
            const CliPoint *p = &g_array_index(h.pts, CliPoint, k);

            iops += p->iops / 15;
            cpu += p->cpu_pct / 15;
            busy += p->iops * p->lat_us / 1e6 / 15;
        }
        m.iops = iops;
        m.cpu_pct = cpu;
        m.lat_us = busy / iops * 1e6;
        cli_report_add_point(fleet, &m);
    }
    hs = report_summary_of(host);
    fs = report_summary_of(fleet);
    g_test_message("host: %s", json_object_to_json_string(hs));
    g_test_message("fleet: %s", json_object_to_json_string(fs));
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        double a = summary_figure(hs, keys[k]), b = summary_figure(fs, keys[k]);

        g_test_message("%s: host %.6g, fleet %.6g", keys[k], a, b);
        g_assert_false(isnan(a));
        g_assert_false(isnan(b));
        g_assert_cmpfloat(fabs(a - b), <=, 1e-3 * MAX(fabs(a), fabs(b)) + 1e-6);
    }
    /* Something was measured: the figures are not all zero (polling off
     * loses a fifth of the default's IOPS for its CPU, 16384 and 50000
     * gain at queue depth 1). */
    g_assert_cmpfloat(fabs(summary_figure(hs, "iops_gained_mean")), >, 100);
    g_assert_cmpfloat(fabs(summary_figure(hs, "cores_saved_mean")), >, 0.001);
    g_assert_cmpfloat(summary_figure(hs, "polling_cores_mean"), >, 0.01);
    json_object_put(hs);
    json_object_put(fs);
    g_array_unref(h.pts);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/report-model/projection-monotonic", test_projection_monotonic);
    g_test_add_func("/cli/report-model/projection-falling", test_projection_falling);
    g_test_add_func("/cli/report-model/peak-bucket", test_peak_bucket);
    g_test_add_func("/cli/report-model/gains-workload", test_gains_workload);
    g_test_add_func("/cli/report-model/gains-host-fleet", test_gains_host_fleet);
    return g_test_run();
}
