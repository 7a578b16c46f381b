/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The demo's report, as its new user opens it: scripts/demo.sh's history
 * (cli_testdb_create_demo(): 90 s of idle, queue depth 1, queue depth 16,
 * idle, with the adaptive policy's probes) reported with no range given,
 * as the demo does, and loaded in headless Chromium.  The page spans the
 * history; every chart has data that moves (its phases are seen); no
 * table is all "-"; the decisions and the off/on evidence are there.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli-testdb.h"
#include "store-testutil.h"

static char *tmp_dir;

/* Each chart has a line or bars, and some line is not flat. */
static void
assert_charts_have_data(const char *dom)
{
    guint charts = 0;

    for (const char *p = dom; (p = strstr(p, "<figure class=\"chart\">")); p++) {
        const char *end = strstr(p, "</figure>");
        g_autofree char *fig = NULL;
        g_autofree char *caption = NULL;
        g_autoptr(GRegex) re = g_regex_new(" d=\"([^\"]*)\"", 0, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        gboolean moves = FALSE, any = FALSE;

        g_assert_nonnull(end);
        fig = g_strndup(p, end - p);
        caption = g_strndup(fig, MIN(strlen(fig), 120));
        charts++;
        if (strstr(fig, "<rect class=\"bar\"")) {
            any = moves = TRUE;
        }
        g_regex_match(re, fig, 0, &m);
        for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
            g_autofree char *d = g_match_info_fetch(m, 1);
            g_auto(GStrv) steps = g_regex_split_simple("[MLZ]", d, 0, 0);
            double y0 = NAN;

            for (char **st = steps; *st; st++) {
                double x, y;

                if (sscanf(*st, "%lf %lf", &x, &y) != 2)
                    continue;
                any = TRUE;
                if (isnan(y0))
                    y0 = y;
                else if (y != y0)
                    moves = TRUE;
            }
        }
        if (!any || !moves)
            g_error("a chart with %s: %s", any ? "flat lines only" : "no data", caption);
    }
    g_test_message("%u charts, each with data", charts);
    g_assert_cmpuint(charts, >=, 4);
}

/* No table whose cells (but the first column's names) are all "-". */
static void
assert_tables_have_figures(const char *dom)
{
    guint tables = 0;

    for (const char *p = dom; (p = strstr(p, "<table")); p++) {
        const char *end = strstr(p, "</table>");
        g_autofree char *table = NULL;
        g_autoptr(GRegex) re = g_regex_new("<td[^>]*>(.*?)</td>", 0, 0, NULL);
        g_autoptr(GMatchInfo) m = NULL;
        gboolean figure = FALSE;

        g_assert_nonnull(end);
        table = g_strndup(p, end - p);
        tables++;
        g_regex_match(re, table, 0, &m);
        for (guint k = 0; g_match_info_matches(m); g_match_info_next(m, NULL), k++) {
            g_autofree char *cell = g_match_info_fetch(m, 1);
            gint start = 0;

            g_match_info_fetch_pos(m, 0, &start, NULL);
            /* A row's first cell names it. */
            if (start >= 4 && g_str_has_prefix(table + start - 4, "<tr>"))
                continue;
            figure = figure || (*cell && strcmp(cell, "-") != 0);
        }
        if (!figure)
            g_error("a table all \"-\": %.200s", table);
    }
    g_test_message("%u tables, each with a figure", tables);
    g_assert_cmpuint(tables, >=, 5);
}

static void
test_report_demo(void)
{
    g_autofree char *db = g_build_filename(tmp_dir, "demo.db", NULL);
    g_autofree char *out = g_build_filename(tmp_dir, "demo-report.html", NULL);
    g_autofree char *png = g_build_filename(tmp_dir, "demo-report.png", NULL);
    g_autofree char *profile = g_build_filename(tmp_dir, "chromium-demo", NULL);
    g_autofree char *dom = NULL, *err = NULL, *poll = NULL, *pairs = NULL;
    g_autoptr(GDateTime) now = g_date_time_new_now_utc();
    gint64 end_ms = g_date_time_to_unix(now) * 1000 - 5000;
    CliRun r = { 0 };

    /* A history that ended a few seconds ago, as the demo's has. */
    cli_testdb_create_demo(db, end_ms - CLI_DEMO_TICKS * 1000);
    cli_run(&r, (const char *const[]){ "--db", db, "report", "-o", out, NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_test_message("%s", r.out);
    g_assert_nonnull(strstr(r.out, "(90 points at raw resolution)"));
    cli_run_clear(&r);
    if (!(dom = cli_test_chromium_dom(out, png, profile, &err)))
        return;
    g_assert_nonnull(strstr(dom, "the page spans its first to its last sample"));
    assert_charts_have_data(dom);
    assert_tables_have_figures(dom);
    /* The decisions, and the policy's off/on runs as evidence. */
    g_assert_nonnull(strstr(dom, "adaptive:balanced"));
    poll = cli_test_section_row(dom, "polling", "demo-vm/iot0");
    g_test_message("polling: %s", poll);
    pairs = cli_test_row_cell(poll, 2);
    g_assert_cmpint(g_ascii_strtoll(pairs, NULL, 10), >, 0);
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmp_dir = test_dir_new();
    g_test_add_func("/cli/report/demo", test_report_demo);
    rc = g_test_run();
    test_dir_remove(tmp_dir);
    g_free(tmp_dir);
    return rc;
}
