/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl report --db: the capacity report from a real database written
 * through store/, read as the page's text and, where Chromium is installed,
 * as the DOM a browser builds from it.
 *
 * The database (cli-testdb.h) holds an iothread at QEMU's default that the
 * "policy" turns off for 30 ticks every 300, an iothread that never polls
 * and one whose poll-max-ns moves between polling settings: the first has
 * off/on pairs (polling costs 8 % of a core and buys +25 % IOPS), the
 * other two have none and must get no polling estimate.
 *
 * A second database holds an A/B on a saturated host with idle ticks
 * around it (cli_testdb_create_ab): pairs across a change of load are no
 * measurement, the projection scales the busy load, never extrapolates
 * far past what was measured, and the host's CPU and pressure are shown;
 * and its gain figures are those of the daemon's counters charged on the
 * same rows.
 */
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "cli-testdb.h"
#include "policy-gain.h"
#include "qmp-json.h"
#include "store-testutil.h"

static char *tmp_dir;
static char *db_path;
static char *ab_db_path;
static gint64 ab_t0_ms;
static char *short_db_path;
static gint64 t0_ms;            /* start of the test data */
static gint64 short_end_ms;     /* end of the short history */

#define N_TICKS CLI_TESTDB_TICKS /* two hours of 1 s ticks */
#define SHORT_TICKS 1320        /* 22 minutes */

static guint
count(const char *haystack, const char *needle)
{
    guint n = 0;

    for (const char *p = haystack; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static char *
report_run(const char *db, const char *name, const char *const *extra)
{
    g_autofree char *out = g_build_filename(tmp_dir, name, NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    CliRun r = { 0 };
    char *html = NULL;

    g_ptr_array_add(argv, (char *)"--db");
    g_ptr_array_add(argv, (char *)db);
    g_ptr_array_add(argv, (char *)"report");
    for (const char *const *e = extra; e && *e; e++)
        g_ptr_array_add(argv, (char *)*e);
    g_ptr_array_add(argv, (char *)"-o");
    g_ptr_array_add(argv, out);
    g_ptr_array_add(argv, NULL);
    cli_run(&r, (const char *const *)argv->pdata);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    cli_run_clear(&r);
    return html;
}

/* The number a row's cell @col starts with. */
static double
row_number(const char *row, guint col)
{
    g_autofree char *cell = cli_test_row_cell(row, col);

    return g_ascii_strtod(cell, NULL);
}

static void
assert_self_contained(const char *html)
{
    g_assert_true(g_str_has_prefix(html, "<!DOCTYPE html>"));
    g_assert_null(strstr(html, "http://"));
    g_assert_null(strstr(html, "https://"));
    g_assert_null(strstr(html, "<script"));
    g_assert_null(strstr(html, " src="));
    g_assert_null(strstr(html, "url("));
    g_assert_null(strstr(html, "nan"));
    g_assert_null(strstr(html, "NaN"));
    g_assert_null(strstr(html, "inf "));
}

static void
test_report_figures(void)
{
    g_autofree char *since = cli_test_iso(t0_ms);
    g_autofree char *until = cli_test_iso(t0_ms + N_TICKS * 1000);
    const char *extra[] = { "--since", since, "--until", until, NULL };
    g_autofree char *html = report_run(db_path, "report.html", extra);
    g_autofree char *probed = NULL, *never = NULL, *moving = NULL, *host = NULL;
    g_autofree char *dflt = NULL, *proj = NULL, *at_double = NULL;
    double poll;

    assert_self_contained(html);
    /* The range asked is kept; two hours in 30 s buckets would be finer
     * than the 1-minute rollups, so buckets are a minute. */
    g_assert_nonnull(strstr(html, "buckets of 1m"));
    g_assert_nonnull(strstr(html, "data-points=\"120\""));

    /* Polling's cost: the probed iothread only, 8 % of a core when on,
     * charged for the 90 % of the time it was on. */
    probed = cli_test_section_row(html, "polling", "db-1/iothread1");
    g_test_message("probed: %s", probed);
    poll = row_number(probed, 5);
    g_assert_cmpfloat(fabs(poll - 8.0), <, 0.5);
    g_assert_nonnull(strstr(probed, "high"));
    g_assert_cmpfloat(fabs(row_number(probed, 1) - 90.0), <, 0.5);
    g_assert_cmpfloat(fabs(row_number(probed, 9) - 0.072), <, 0.005);
    /* 7200 ticks, a probe every 300: 24 probes, each with a run on each
     * side, minus the first run (no off before it). */
    g_assert_cmpuint((guint)row_number(probed, 2), >=, 46);
    never = cli_test_section_row(html, "polling", "web-1/iothread0");
    g_assert_nonnull(strstr(never, "no pair"));
    g_assert_nonnull(strstr(never, "|0.0|"));
    moving = cli_test_section_row(html, "polling", "db-1/iothread0");
    g_assert_nonnull(strstr(moving, "no pair"));
    host = cli_test_section_row(html, "polling", "host");
    g_assert_cmpfloat(fabs(row_number(host, 1) - 0.072), <, 0.005);
    /* The words of the old report that called whole-iothread CPU polling. */
    g_assert_null(strstr(html, "polling cores"));
    g_assert_null(strstr(html, "Cores spent polling"));
    g_assert_null(strstr(html, "IOPS per polling core"));

    /* Against the default: the probed iothread's off ticks saved 8 % of a
     * core for 10 % of the time. */
    dflt = cli_test_section_row(html, "vs-default", "db-1/iothread1");
    g_test_message("vs default: %s", dflt);
    g_assert_cmpfloat(fabs(row_number(dflt, 1) - 90.0), <, 0.5);
    g_assert_cmpfloat(fabs(row_number(dflt, 6) - 0.008), <, 0.002);

    /* Projection: units are in the headers; twice the busy load was never
     * measured, the peak was, and costs no less than the busy load. */
    proj = cli_test_section_row(html, "projection-table", "db-1/iothread1");
    g_test_message("projection: %s", proj);
    g_assert_null(strstr(proj, "ops/s"));
    at_double = cli_test_row_cell(proj, 4);
    g_assert_cmpstr(at_double, ==, "beyond the measured range");
    g_assert_cmpfloat(row_number(proj, 7), >=, row_number(proj, 2));
    g_assert_nonnull(strstr(html, "saturates at 100 % of one core"));

    /* Evidence as named fields with units, not key=value, in the row's
     * one paragraph. */
    g_assert_nonnull(strstr(html, "probe: IOPS rose, CPU has room, &quot;grow&quot; "
                                  "<span class=\"ev\">"));
    g_assert_nonnull(strstr(html, "<b>IOPS</b> 5200 ops/s"));
    g_assert_nonnull(strstr(html, "<b>latency in QEMU</b> 310.5 \302\265s"));
    g_assert_nonnull(strstr(html, "<b>starting run</b> 16384/2/0, 12 ticks, score 0.1234"));
    g_assert_nonnull(strstr(html, "<b>trigger</b> iops up 30%"));
    g_assert_nonnull(strstr(html, "<b>budget</b> 0.50 cores"));
    g_assert_null(strstr(html, "lat_us="));
    g_assert_cmpuint(count(html, "class=\"decision applied\""), ==, 3 * 7);
}

/* 22 minutes of history and no --since: the page spans the history, not
 * 30 days with the data in a sliver, in buckets of a few seconds. */
static void
test_report_short_history(void)
{
    g_autofree char *html = report_run(short_db_path, "short.html", NULL);
    const char *p = strstr(html, "data-from-ms=\"");
    gint64 from, to;
    g_autofree char *sizing = NULL;
    g_autofree char *points = NULL, *full = NULL;

    assert_self_contained(html);
    g_assert_nonnull(p);
    from = g_ascii_strtoll(p + strlen("data-from-ms=\""), NULL, 10);
    p = strstr(html, "data-to-ms=\"");
    to = g_ascii_strtoll(p + strlen("data-to-ms=\""), NULL, 10);
    g_test_message("range %" G_GINT64_FORMAT " s", (to - from) / 1000);
    g_assert_cmpint(to - from, >=, SHORT_TICKS * 1000);
    g_assert_cmpint(to - from, <=, (SHORT_TICKS + 60) * 1000);
    g_assert_cmpint(to, >=, short_end_ms);
    g_assert_nonnull(strstr(html, "buckets of 10s"));
    g_assert_nonnull(strstr(html, "raw resolution"));
    g_assert_nonnull(strstr(html, "the page spans its first to its last sample"));
    /* A point in every 10 s bucket (the last may start after the last
     * tick), so p50 and p95 differ. */
    points = g_strdup_printf("data-points=\"%" G_GINT64_FORMAT "\"", (to - from) / 10000);
    full = g_strdup_printf("data-points=\"%" G_GINT64_FORMAT "\"", (to - from) / 10000 - 1);
    g_assert_cmpuint(count(html, points) + count(html, full), >=, 9);
    sizing = cli_test_section_row(html, "sizing", "db-1");
    g_assert_cmpfloat(row_number(sizing, 1), <, row_number(sizing, 2));
}

static void
test_report_well_formed(void)
{
    g_autofree char *xmllint = g_find_program_in_path("xmllint");
    g_autofree char *out = g_build_filename(tmp_dir, "report-x.html", NULL);
    g_autofree char *since = cli_test_iso(t0_ms);
    g_autofree char *until = cli_test_iso(t0_ms + N_TICKS * 1000);
    const char *extra[] = { "--since", since, "--until", until, "--resolution", "raw", NULL };
    g_autofree char *html = NULL;
    const char *lint[] = { xmllint, "--noout", "--nonet", out, NULL };
    g_autofree char *err = NULL;
    int status = 0;

    if (!xmllint) {
        g_test_skip("xmllint is not installed");
        return;
    }
    html = report_run(db_path, "report-x.html", extra);
    g_assert_true(g_spawn_sync(NULL, (char **)lint, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                               NULL, NULL, &err, &status, NULL));
    g_assert_cmpstr(err, ==, "");
    g_assert_cmpint(status, ==, 0);
}

/* Every chart in the DOM has something drawn: a line, an area or a bar. */
static void
assert_no_empty_chart(const char *dom)
{
    guint charts = 0;

    for (const char *p = dom; (p = strstr(p, "<svg")); p++) {
        const char *end = strstr(p, "</svg>");
        g_autofree char *svg = NULL;

        g_assert_nonnull(end);
        svg = g_strndup(p, end - p);
        g_assert_true(strstr(svg, "<path class=\"series\"") || strstr(svg, "class=\"bar\""));
        charts++;
    }
    g_assert_cmpuint(charts, >, 0);
}

/* Each time tick label of the charts lies inside the page's range. */
static void
assert_ticks_in_range(const char *dom, gint64 from_ms, gint64 to_ms)
{
    g_autoptr(GRegex) re = g_regex_new("text-anchor=\"middle\"[^>]*>([0-9]{2}):([0-9]{2})</text>",
                                       0, 0, NULL);
    g_autoptr(GMatchInfo) m = NULL;
    guint n = 0;

    g_regex_match(re, dom, 0, &m);
    for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
        g_autofree char *hh = g_match_info_fetch(m, 1);
        g_autofree char *mm = g_match_info_fetch(m, 2);
        gint64 day = from_ms / 86400000 * 86400000;
        gint64 t = day + (g_ascii_strtoll(hh, NULL, 10) * 60 + g_ascii_strtoll(mm, NULL, 10)) * 60000;

        if (t < from_ms)
            t += 86400000;
        g_assert_cmpint(t, >=, from_ms);
        g_assert_cmpint(t, <, to_ms);
        n++;
    }
    g_assert_cmpuint(n, >, 0);
}

/* Loads the report in headless Chromium as a reader would: the DOM has the
 * range, the sections with their units, no NaN, no empty chart; a
 * screenshot is taken (docs/report.png is one). */
static void
test_report_chromium(void)
{
    g_autofree char *out = g_build_filename(tmp_dir, "short.html", NULL);
    g_autofree char *png = g_build_filename(tmp_dir, "report-c.png", NULL);
    g_autofree char *profile = g_build_filename(tmp_dir, "chromium-profile", NULL);
    g_autofree char *dom = NULL, *err = NULL, *data = NULL, *html = NULL;
    g_autofree char *row = NULL;
    gsize len = 0;
    const char *p;
    gint64 from, to;

    html = report_run(short_db_path, "short.html", NULL);
    if (!(dom = cli_test_chromium_dom(out, png, profile, &err)))
        return;
    /* Nothing failed to load (there is nothing to load). */
    g_assert_null(strstr(err, "net::ERR_"));
    g_assert_null(strstr(err, "Uncaught"));
    g_assert_true(strstr(dom, "<h1>polltune capacity report</h1>"));
    /* The range the browser shows is the history's. */
    p = strstr(dom, "data-from-ms=\"");
    g_assert_nonnull(p);
    from = g_ascii_strtoll(p + strlen("data-from-ms=\""), NULL, 10);
    p = strstr(dom, "data-to-ms=\"");
    g_assert_nonnull(p);
    to = g_ascii_strtoll(p + strlen("data-to-ms=\""), NULL, 10);
    g_assert_cmpint(to - from, <=, (SHORT_TICKS + 60) * 1000);
    assert_ticks_in_range(dom, from, to);
    assert_no_empty_chart(dom);
    g_assert_null(strstr(dom, "NaN"));
    g_assert_null(strstr(dom, ">nan"));
    /* Labels with units, as the browser has them (entities decoded). */
    g_assert_nonnull(strstr(dom, "polling CPU when on (% of one core)"));
    g_assert_nonnull(strstr(dom, "IOPS off \342\206\222 on (ops/s)"));
    g_assert_nonnull(strstr(dom, "Estimated CPU spent on polling, host total"));
    g_assert_nonnull(strstr(dom, "cores, stacked by VM; from off/on pairs"));
    g_assert_nonnull(strstr(dom, "<span class=\"unit\">ops/s</span>"));
    g_assert_nonnull(strstr(dom, "<span class=\"unit\">\302\265s per operation; the guest "
                                 "sees more</span>"));
    g_assert_cmpuint(count(dom, "<figcaption>"), ==,
                     count(dom, "<span class=\"unit\">") + 1 /* the bars' unit is inline */);
    row = cli_test_row_text(strstr(dom, "id=\"polling\""), "web-1/iothread0");
    g_assert_nonnull(strstr(row, "no pair"));

    g_assert_true(g_file_get_contents(png, &data, &len, NULL));
    g_assert_cmpuint(len, >, 10000);
    g_assert_true(memcmp(data, "\211PNG\r\n\032\n", 8) == 0);
}

/* The pairs the A/B's schedule makes under load: adjacent runs at the
 * default and CLI_AB_X, and at off and CLI_AB_X. */
static void
ab_expected_pairs(guint *with_default, guint *onoff)
{
    *with_default = *onoff = 0;
    for (guint i = CLI_AB_BUSY_FROM + 1; i < CLI_AB_BUSY_TO; i++) {
        gint64 a = cli_ab_setting(i - 1), b = cli_ab_setting(i);

        if (a == b)
            continue;
        if (a == 32768 || b == 32768)
            (*with_default)++;
        else if (a == 0 || b == 0)
            (*onoff)++;
    }
}

/* The A/B's report over its hour, made once (a copy each call). */
static char *
ab_report(const char *name)
{
    static char *html;

    if (!html) {
        g_autofree char *since = cli_test_iso(ab_t0_ms);
        g_autofree char *until = cli_test_iso(ab_t0_ms + CLI_AB_TICKS * 1000);
        const char *extra[] = { "--since", since, "--until", until, NULL };

        html = report_run(ab_db_path, name, extra);
    }
    return g_strdup(html);
}

/* Idle ticks after attach at the default, then the load: that change is
 * no pair, neither with the default nor off/on; the comparison with the
 * default is what CLI_AB_X did under load, and it agrees with the polling
 * table. */
static void
test_report_ab_pairs(void)
{
    g_autofree char *html = ab_report("ab.html");
    g_autofree char *dflt = cli_test_section_row(html, "vs-default", "demo-vm/iot0");
    g_autofree char *poll = cli_test_section_row(html, "polling", "demo-vm/iot0");
    g_autofree char *poll_host = cli_test_section_row(html, "polling", "host");
    g_autofree char *sizing = cli_test_section_row(html, "sizing", "demo-vm");
    g_autofree char *gained_text = NULL, *mean_text = NULL;
    guint with_default, onoff;
    double saved, gained, busy_x_share = 0, want_saved = 0, iops_mean;

    assert_self_contained(html);
    ab_expected_pairs(&with_default, &onoff);
    g_test_message("vs default: %s", dflt);
    g_test_message("polling: %s", poll);
    g_assert_cmpuint((guint)row_number(dflt, 4), ==, with_default);
    g_assert_cmpuint((guint)row_number(poll, 2), ==, onoff);
    /* Under load CLI_AB_X serves 98 % of the default's IOPS for 1 % of a
     * core less (and a little less I/O work): counted for its ticks with
     * load only. */
    for (guint i = 0; i < CLI_AB_TICKS; i++) {
        double f, lat, p_x, p_d;

        if (cli_ab_setting(i) != CLI_AB_X || cli_ab_load(i) < 10)
            continue;
        cli_ab_effect(CLI_AB_X, TRUE, &f, &lat, &p_x);
        cli_ab_effect(32768, TRUE, &f, &lat, &p_d);
        busy_x_share += 1.0 / CLI_AB_TICKS;
        want_saved += (p_d - p_x + cli_ab_load(i) * 0.02 / 12000) / 100 / CLI_AB_TICKS;
    }
    saved = row_number(dflt, 6);
    gained_text = cli_test_row_cell(dflt, 7);
    gained = cli_test_si_number(gained_text);
    mean_text = cli_test_row_cell(sizing, 1);
    iops_mean = cli_test_si_number(mean_text);
    g_test_message("saved %.4f cores (want %.4f), gained %.0f ops/s, X under load %.0f %%",
                   saved, want_saved, gained, busy_x_share * 100);
    g_assert_cmpfloat(fabs(saved - want_saved), <, 0.001);
    g_assert_cmpfloat(gained, <, 0);
    g_assert_cmpfloat(gained, >, -0.05 * iops_mean);
    /* What polltune saved against the default is within what polling
     * costs at all, by the polling table. */
    g_assert_cmpfloat(saved, <=, row_number(poll_host, 1));
    g_assert_nonnull(strstr(html, "id=\"default-unlike\">Adjacent runs left out as not the "
                                  "same workload: demo-vm/iot0 1."));
}

/* The projection is at twice the busy p95 and at the peak, says which,
 * and the line through (IOPS, CPU) is never followed past what was
 * measured. */
static void
test_report_ab_projection(void)
{
    g_autofree char *html = ab_report("ab-proj.html");
    g_autofree char *proj = cli_test_section_row(html, "projection-table", "demo-vm/iot0");
    g_autofree char *sizing = cli_test_section_row(html, "sizing", "demo-vm");
    g_autofree char *at_p95 = cli_test_row_cell(proj, 3), *at_peak = cli_test_row_cell(proj, 6);
    g_autofree char *p95 = cli_test_row_cell(sizing, 2);
    double measured_max = 0;

    g_test_message("projection: %s", proj);
    for (guint i = 0; i < CLI_AB_TICKS; i++) {
        double f, lat, poll;

        cli_ab_effect(cli_ab_setting(i), TRUE, &f, &lat, &poll);
        measured_max = MAX(measured_max, cli_ab_load(i) * f);
    }
    g_assert_nonnull(strstr(html, "<th>at 2&#215; busy p95: IOPS (ops/s)</th>"));
    g_assert_nonnull(strstr(html, "<th>at the peak: IOPS (ops/s)</th>"));
    /* Twice the load is above what was seen: no figure. */
    g_assert_cmpfloat(cli_test_si_number(at_p95), >=, 1.9 * cli_test_si_number(p95));
    g_assert_nonnull(strstr(proj, "|beyond the measured range||beyond the measured range|"));
    /* The peak is what was measured (the page shows three digits). */
    g_assert_cmpfloat(cli_test_si_number(at_peak), >=, cli_test_si_number(p95));
    g_assert_cmpfloat(cli_test_si_number(at_peak), <=, 1.006 * measured_max);
    /* The CPU line would reach 100 % at about 1.2M ops/s, 30 times the
     * highest measured: not said. */
    g_assert_true(g_str_has_suffix(proj, "|beyond the measured range|"));
    g_assert_null(strstr(proj, "M|"));
}

/* The host was saturated the whole time: its CPUs and pressure are shown
 * beside the per-iothread headroom, with a warning. */
static void
test_report_ab_host(void)
{
    g_autofree char *html = ab_report("ab-host.html");
    g_autofree char *host = cli_test_section_row(html, "host-table", "host");
    const char *note = strstr(html, "id=\"host-saturated\"");

    g_test_message("host: %s", host);
    g_assert_cmpstr(host, ==, "||host||2||100.0 / 100.0 / 100.0||99.0 / 99.0||100.0|");
    g_assert_nonnull(note);
    g_assert_true(note < strstr(html, "id=\"projection-table\""));
    g_assert_nonnull(strstr(note, "The host was saturated in 100 % of its ticks."));
    g_assert_nonnull(strstr(html, "<figcaption>Host CPU and CPU pressure"));
}

/* Four days of 1-minute ticks whose last 12 hours (the per-tick rows the
 * report fits its lines to) sit in a trough of the load: twice the peak of
 * the four days is beyond what those rows measured, for that iothread and
 * so for the host's total, which would be short without it. */
static void
test_report_beyond_total(void)
{
    g_autofree char *path = g_build_filename(tmp_dir, "trough.db", NULL);
    CliTestDbSpec spec = { .start_ms = t0_ms, .n_ticks = 4 * 1440, .tick_ms = 60000,
                           .rollups = TRUE };
    g_autofree char *since = cli_test_iso(t0_ms);
    g_autofree char *until = cli_test_iso(t0_ms + (gint64)spec.n_ticks * spec.tick_ms);
    const char *extra[] = { "--since", since, "--until", until, NULL };
    g_autofree char *html = NULL, *busy = NULL, *total = NULL;

    cli_testdb_create(path, &spec);
    html = report_run(path, "trough.html", extra);
    busy = cli_test_section_row(html, "projection-table", "db-1/iothread0");
    total = cli_test_section_row(html, "projection-table", "host, iothread cores");
    g_test_message("busy: %s", busy);
    g_test_message("total: %s", total);
    g_assert_nonnull(strstr(busy, "|beyond the measured range||beyond the measured range|"));
    g_assert_nonnull(strstr(total, "|beyond the measured range|"));
}

/*
 * Explorations per hour: a run of probe decisions is one exploration, ended
 * by any other decision or by REPORT_EXPLORATION_GAP_MS without one.  An
 * hour of db-1/iothread0 holds three (one ended by accept, one by its
 * last probe winning, one by rollback) among decisions of other causes.
 */
static void
test_report_explorations(void)
{
    g_autofree char *path = g_build_filename(tmp_dir, "explore.db", NULL);
    g_autofree char *json_out = g_build_filename(tmp_dir, "explore.html", NULL);
    CliTestDbSpec spec = { .start_ms = t0_ms, .n_ticks = 3600, .tick_ms = 1000 };
    g_autofree char *since = cli_test_iso(t0_ms);
    g_autofree char *until = cli_test_iso(t0_ms + 3600 * 1000);
    static const struct {
        gint64 at_s;
        const char *cause;
    } decisions[] = {
        { 100, "probe" }, { 110, "probe" }, { 125, "accept" },
        { 500, "probe" }, { 505, "probe" },
        { 1000, "probe" }, { 1010, "rollback" },
        { 1500, "policy" }, { 1600, "idle" }, { 1700, NULL },
    };
    const char *argv[] = { "--db", path, "--json", "report", "--since", since, "--until",
                           until, "-o", json_out, NULL };
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) j = NULL;
    g_autofree char *html = NULL, *row = NULL, *cell = NULL;
    json_object *series;
    gboolean found = FALSE;
    CliRun r = { 0 };
    StoreOptions opts;
    StoreDb *db;

    cli_testdb_create(path, &spec);
    store_options_init(&opts);
    opts.now_ms = t0_ms;
    opts.raw_retention_ms = G_MAXINT64 / 4;
    db = store_db_open(path, &opts, &err);
    g_assert_no_error(err);
    for (guint i = 0; i < G_N_ELEMENTS(decisions); i++) {
        StoreDecision d = {
            .ts_ms = t0_ms + decisions[i].at_s * 1000, .target = "db-1",
            .iothread = "iothread0", .policy = "adaptive:balanced", .reason = "test",
            .cause = decisions[i].cause, .old_triple = { 0, 0, 0 },
            .new_triple = { 32768, 0, 0 }, .applied = TRUE,
        };

        g_assert_true(store_decision_insert(db, &d, &err));
        g_assert_no_error(err);
    }
    store_db_close(db);

    cli_run(&r, argv);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    j = json_tokener_parse(r.out);
    g_assert_nonnull(j);
    g_assert_true(json_object_object_get_ex(j, "series", &series));
    for (gsize i = 0; i < json_object_array_length(series); i++) {
        json_object *s = json_object_array_get_idx(series, i);
        gint64 n = -1;

        if (g_strcmp0(qmp_json_get_string(s, "target"), "db-1") ||
            g_strcmp0(qmp_json_get_string(s, "iothread"), "iothread0"))
            continue;
        found = TRUE;
        g_assert_true(qmp_json_get_int(s, "explorations", &n));
        g_assert_cmpint(n, ==, 3);
        g_assert_cmpfloat_with_epsilon(
            json_object_get_double(json_object_object_get(s, "explorations_per_hour")), 3.0,
            1e-9);
    }
    g_assert_true(found);
    /* The VM's row of the top consumers: the last cell. */
    g_assert_true(g_file_get_contents(json_out, &html, NULL, NULL));
    g_assert_nonnull(strstr(html, "<th>explorations per hour</th>"));
    row = cli_test_section_row(html, "consumers", "db-1");
    g_test_message("consumers: %s", row);
    cell = cli_test_row_cell(row, 8);
    g_assert_cmpstr(cell, ==, "3.00");
    cli_run_clear(&r);
}

/* The value-axis labels of every chart, in order; each chart's differ. */
static void
assert_axis_labels_distinct(const char *html)
{
    guint charts = 0;

    for (const char *p = html; (p = strstr(p, "<svg")); p++) {
        const char *end = strstr(p, "</svg>");
        g_autofree char *svg = g_strndup(p, end - p);
        g_autoptr(GRegex) re = g_regex_new("text-anchor=\"end\">([^<]*)</text>", 0, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                           NULL);
        guint n = 0;

        g_regex_match(re, svg, 0, &m);
        for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
            char *label = g_match_info_fetch(m, 1);

            if (g_hash_table_contains(seen, label))
                g_error("chart %u: the axis label %s appears twice", charts, label);
            g_hash_table_add(seen, label);
            n++;
        }
        charts += n > 0;
    }
    g_assert_cmpuint(charts, >=, 5);
}

/* Latency says where it is measured; axis ticks never repeat; units are
 * in headers, not cells; a decision's reason and evidence are one
 * paragraph of its one row. */
static void
test_report_ab_labels(void)
{
    g_autofree char *html = ab_report("ab-labels.html");
    g_autoptr(GRegex) unit = g_regex_new("<td>-?[0-9][0-9.]*[kMG]?( %| cores| ops/s| "
                                         "\302\265s)</td>", 0, 0, NULL);
    const char *log = strstr(html, "<table class=\"log\">");
    g_autofree char *log_table = NULL;

    g_assert_nonnull(strstr(html, "<figcaption>Latency in QEMU&apos;s block layer <span class="
                                  "\"unit\">\302\265s per operation; the guest sees more"));
    g_assert_nonnull(strstr(html, "<th>latency in QEMU p95 (&#181;s)</th>"));
    g_assert_nonnull(strstr(html, "Latency is the time a request spends in QEMU's block layer"));
    assert_axis_labels_distinct(html);
    g_assert_false(g_regex_match(unit, html, 0, NULL));
    g_assert_nonnull(strstr(html, "td{white-space:nowrap}"));
    g_assert_nonnull(log);
    log_table = g_strndup(log, strstr(log, "</table>") - log);
    /* A header row and DECISIONS_SHOWN rows, one per decision. */
    g_assert_cmpuint(count(log_table, "<tr>"), ==, 1 + 8);
    g_assert_cmpuint(count(log_table, "<td class=\"text\">"), ==, 8);
    g_assert_null(strstr(log_table, "<dl"));
    g_assert_null(strstr(log_table, "<br"));
}

/* In Chromium at 1280 pixels, no name in a table's first column and no
 * figure wraps onto a second line (words that stand for a figure, as
 * "beyond the measured range", may): the page measures itself (a copy with
 * a script added; the report has none) and the DOM carries the count. */
static void
test_report_ab_layout(void)
{
    g_autofree char *chromium = cli_test_chromium_find();
    g_autofree char *html = NULL, *dom = NULL;
    g_autofree char *page = g_build_filename(tmp_dir, "ab-layout.html", NULL);
    g_autofree char *profile = g_build_filename(tmp_dir, "chromium-layout", NULL);
    g_autofree char *url = NULL, *user = NULL, *measured = NULL;
    static const char script[] =
        "<script>var wrapped = [], n = 0;"
        "document.querySelectorAll('td').forEach(function (td) {"
        "  if (td.classList.contains('text') || td.classList.contains('beyond') ||"
        "      !td.textContent) return;"
        "  var r = document.createRange(); r.selectNodeContents(td); n++;"
        "  var tops = {}; Array.from(r.getClientRects()).forEach(function (q) {"
        "    tops[Math.round(q.top)] = 1; });"
        "  if (Object.keys(tops).length > 1) wrapped.push(td.textContent); });"
        "var pre = document.createElement('pre'); pre.id = 'layout';"
        "pre.textContent = 'cells ' + n + ' wrapped ' + wrapped.length + ': ' + wrapped.join(' | ');"
        "document.body.appendChild(pre);</script></body>";
    const char *p;
    int status = 0;

    if (!chromium) {
        g_test_skip("chromium is not installed (Debian package chromium)");
        return;
    }
    html = ab_report("ab-layout-src.html");
    p = strstr(html, "</body>");
    g_assert_nonnull(p);
    {
        g_autofree char *head = g_strndup(html, p - html);
        g_autofree char *with = g_strconcat(head, script, p + strlen("</body>"), NULL);

        g_assert_true(g_file_set_contents(page, with, -1, NULL));
    }
    url = g_strconcat("file://", page, NULL);
    user = g_strconcat("--user-data-dir=", profile, NULL);
    {
        const char *dump[] = { chromium, "--headless=new", "--no-sandbox", "--disable-gpu",
                               user, "--window-size=1280,4000", "--dump-dom", url, NULL };

        g_assert_true(g_spawn_sync(NULL, (char **)dump, NULL, G_SPAWN_STDERR_TO_DEV_NULL, NULL,
                                   NULL, &dom, NULL, &status, NULL));
        g_assert_true(g_spawn_check_wait_status(status, NULL));
    }
    p = strstr(dom, "<pre id=\"layout\">");
    g_assert_nonnull(p);
    measured = g_strndup(p, strstr(p, "</pre>") - p);
    g_test_message("%s", measured);
    g_assert_true(g_str_has_prefix(measured, "<pre id=\"layout\">cells "));
    g_assert_nonnull(strstr(measured, " wrapped 0: "));
}

/*
 * The daemon's counters against a report of its store: the A/B's rows fed
 * to policy-gain as the daemon feeds each tick (the row's vector, the
 * tick's time and length), read as their increase over the range from
 * the middle of the load on, give the figures `report --db --json` gives
 * for that range, replaying the same rows and reading those before it.
 */
static void
test_report_ab_counters(void)
{
    gint64 from_ms = ab_t0_ms + (CLI_AB_BUSY_FROM + 645) * 1000 + 500;
    gint64 to_ms = ab_t0_ms + CLI_AB_TICKS * 1000 + 1000;
    g_autofree char *since = cli_test_iso(from_ms), *until = cli_test_iso(to_ms);
    g_autofree char *out = g_build_filename(tmp_dir, "ab-counters.html", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = store_db_open_readonly(ab_db_path, &error);
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(PolicyGain) daemon = policy_gain_new();
    g_autoptr(json_object) j = NULL;
    PolicyGainTotals at_from = { 0 }, increase;
    PolicyGainFigures want;
    const StoreRow *row;
    StoreFilter f;
    json_object *s;
    CliRun r = { 0 };
    const struct {
        const char *key;
        double *want;
    } keys[] = {
        { "cores_saved_mean", &want.saved_cores }, { "iops_gained_mean", &want.gained_iops },
        { "polling_cores_mean", &want.polling_cores }, { "polling_cpu_pct", &want.polling_on_pct },
        { "unmeasured_share", &want.unmeasured_share },
    };

    g_assert_no_error(error);
    store_filter_init(&f);
    f.resolution = STORE_RES_RAW;
    g_assert_nonnull((cur = store_query_range(db, &f, &error)));
    while (store_cursor_next(cur, &row, &error) && row) {
        PolicyGainTick t;

        policy_gain_tick_from_vec(&row->sample.m, row->ts_ms, row->len_ns, &t);
        policy_gain_tick(daemon, &t);
        if (row->ts_ms < from_ms)
            at_from = *policy_gain_totals(daemon);
    }
    g_assert_no_error(error);
    for (int c = 0; c < POLICY_GAIN_MAX; c++)
        policy_gain_totals_set(&increase, c,
                               policy_gain_totals_get(policy_gain_totals(daemon), c) -
                               policy_gain_totals_get(&at_from, c));
    policy_gain_figures(&increase, &want);
    cli_run(&r, (const char *const[]){ "--db", ab_db_path, "report", "--since", since,
                                       "--until", until, "--resolution", "raw", "--json",
                                       "-o", out, NULL });
    g_assert_cmpint(r.status, ==, 0);
    j = json_tokener_parse(r.out);
    g_assert_nonnull(j);
    s = json_object_array_get_idx(json_object_object_get(j, "series"), 0);
    g_assert_nonnull(s);
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
        json_object *v = json_object_object_get(s, keys[k].key);
        double got = v ? json_object_get_double(v) : NAN;

        g_test_message("%s: report %.6g, counters %.6g", keys[k].key, got, *keys[k].want);
        g_assert_false(isnan(got));
        /* The report keeps its rates as floats: 7 digits. */
        g_assert_cmpfloat(fabs(got - *keys[k].want), <=, 1e-5 * fabs(*keys[k].want) + 1e-9);
    }
    /* Measured: CLI_AB_X against the default saves CPU. */
    g_assert_cmpfloat(want.saved_cores, >, 0);
    cli_run_clear(&r);
}

int
main(int argc, char **argv)
{
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    CliTestDbSpec spec;
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmp_dir = test_dir_new();
    db_path = g_build_filename(tmp_dir, "history.db", NULL);
    t0_ms = cli_testdb_create_standard(db_path);
    /* A history that ended a minute ago, as a daemon's would. */
    short_db_path = g_build_filename(tmp_dir, "short.db", NULL);
    short_end_ms = g_date_time_to_unix(now) * 1000 - 60000;
    spec = (CliTestDbSpec){ .start_ms = short_end_ms - SHORT_TICKS * 1000,
                            .n_ticks = SHORT_TICKS, .tick_ms = 1000, .decision_every = 300 };
    cli_testdb_create(short_db_path, &spec);
    ab_db_path = g_build_filename(tmp_dir, "ab.db", NULL);
    ab_t0_ms = t0_ms;
    cli_testdb_create_ab(ab_db_path, ab_t0_ms);

    g_test_add_func("/cli/report/figures", test_report_figures);
    g_test_add_func("/cli/report/short-history", test_report_short_history);
    g_test_add_func("/cli/report/well-formed", test_report_well_formed);
    g_test_add_func("/cli/report/chromium", test_report_chromium);
    g_test_add_func("/cli/report/ab/pairs", test_report_ab_pairs);
    g_test_add_func("/cli/report/ab/projection", test_report_ab_projection);
    g_test_add_func("/cli/report/ab/host", test_report_ab_host);
    g_test_add_func("/cli/report/ab/labels", test_report_ab_labels);
    g_test_add_func("/cli/report/ab/layout", test_report_ab_layout);
    g_test_add_func("/cli/report/ab/counters", test_report_ab_counters);
    g_test_add_func("/cli/report/beyond-total", test_report_beyond_total);
    g_test_add_func("/cli/report/explorations", test_report_explorations);
    rc = g_test_run();
    test_dir_remove(tmp_dir);
    g_free(db_path);
    g_free(short_db_path);
    g_free(ab_db_path);
    g_free(tmp_dir);
    return rc;
}
