/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CLI's text formatting that operators read figures from.
 */
#include <string.h>

#include "cli-format.h"
#include "common/pt-escape.h"
#include "cli-report-evidence.h"
#include "cli-svg.h"

static void
check_duration_left(gint64 ms, const char *want)
{
    g_autofree char *got = cli_format_duration_left_ms(ms);

    g_assert_cmpstr(got, ==, want);
}

/* Time left rounds up: an override set --for 2m used to show "1m left"
 * a moment after it was set. */
static void
test_duration_left(void)
{
    check_duration_left(-1, "-");
    check_duration_left(0, "0s");
    check_duration_left(400, "1s");
    check_duration_left(59999, "1m");
    check_duration_left(60000, "1m");
    check_duration_left(119500, "2m");
    check_duration_left(120000, "2m");
    check_duration_left(3599001, "1h0m");
    check_duration_left(3600000 + 1, "1h1m");
    check_duration_left(86400000 - 1, "1d0h");
    check_duration_left(86400000 + 1, "1d1h");
}

/* Elapsed time still rounds down: "up 1m" only after a whole minute. */
static void
test_duration(void)
{
    g_autofree char *a = cli_format_duration_ms(119500);
    g_autofree char *b = cli_format_duration_ms(59999);

    g_assert_cmpstr(a, ==, "1m");
    g_assert_cmpstr(b, ==, "59s");
}

static const char *
field(GPtrArray *f, guint i, gboolean value)
{
    const CliEvidenceField *e = g_ptr_array_index(f, i);

    return value ? e->value : e->label;
}

/* A stored reason's evidence as named fields with units; the text keeps
 * its own brackets; a reason without evidence has no fields. */
static void
test_evidence(void)
{
    g_autofree char *text = NULL, *t2 = NULL, *t3 = NULL;
    g_autoptr(GPtrArray) f = cli_evidence_parse("adaptive: keep [x] it [triple=32768/2/0 "
                                                "iops=4200 trigger=\"iops up 30%\" "
                                                "probe=0/2/0:n=9:score=0.5:z=2.1 new_key=7 "
                                                "bare]", &text);
    g_autoptr(GPtrArray) none = cli_evidence_parse("dwell: last write 1.0 s ago", &t2);
    g_autoptr(GPtrArray) cut = cli_evidence_parse("odd [trigger=\"unterminated]", &t3);

    g_assert_cmpstr(text, ==, "adaptive: keep [x] it");
    g_assert_cmpuint(f->len, ==, 6);
    g_assert_cmpstr(field(f, 0, FALSE), ==, "triple");
    g_assert_cmpstr(field(f, 0, TRUE), ==, "32768/2/0 poll-max-ns/grow/shrink");
    g_assert_cmpstr(field(f, 1, FALSE), ==, "IOPS");
    g_assert_cmpstr(field(f, 1, TRUE), ==, "4200 ops/s");
    g_assert_cmpstr(field(f, 2, TRUE), ==, "iops up 30%");
    g_assert_cmpstr(field(f, 3, FALSE), ==, "probe run");
    g_assert_cmpstr(field(f, 3, TRUE), ==, "0/2/0, 9 ticks, score 0.5, z 2.1");
    g_assert_cmpstr(field(f, 4, FALSE), ==, "new key");
    g_assert_cmpstr(field(f, 4, TRUE), ==, "7");
    g_assert_cmpstr(field(f, 5, TRUE), ==, "bare");
    g_assert_cmpstr(t2, ==, "dwell: last write 1.0 s ago");
    g_assert_cmpuint(none->len, ==, 0);
    g_assert_cmpstr(t3, ==, "odd");
    g_assert_cmpuint(cut->len, ==, 1);
    g_assert_cmpstr(field(cut, 0, TRUE), ==, "unterminated");
}

/* @reason parses to @text and fields whose labels and values are @want's
 * pairs in order (NULL: not checked). */
static void
assert_evidence(const char *reason, const char *text, const char *const *want, guint n)
{
    g_autofree char *got_text = NULL;
    g_autoptr(GPtrArray) f = cli_evidence_parse(reason, &got_text);

    g_assert_cmpstr(got_text, ==, text);
    g_assert_cmpuint(f->len, ==, n);
    for (guint i = 0; i < n; i++) {
        if (want[2 * i])
            g_assert_cmpstr(field(f, i, FALSE), ==, want[2 * i]);
        if (want[2 * i + 1])
            g_assert_cmpstr(field(f, i, TRUE), ==, want[2 * i + 1]);
    }
}

/* A value's note in parentheses holds spaces: it used to read "exits
 * unavailable(polling's · note vCPU · note saving · note unknown)". */
static void
test_evidence_notes(void)
{
    static const char *const want[] = {
        NULL, NULL,
        "VM exit figures", "unavailable (polling's vCPU saving unknown)",
        "VM exits per operation now", "0.42 (measuring whole-VM CPU)",
        NULL, "10 ops/s",
    };

    assert_evidence("contention: hold [psi=64.0 exits=unavailable(polling's vCPU saving "
                    "unknown) exits_per_op_now=0.42(measuring whole-VM CPU) iops=10]",
                    "contention: hold", want, 4);
}

/* A steady tick's two change detectors keep their limits apart. */
static void
test_evidence_detectors(void)
{
    static const char *const want[] = {
        "change detector (up/down)", NULL,
        "change detector limit", NULL,
        "shape change detector (up/down)", "0.000/0.150",
        "shape change detector limit", "0.250",
    };

    assert_evidence("adaptive: steady [cusum=0.100/0.000 limit=0.223 shape_cusum=0.000/0.150 "
                    "shape_limit=0.250]", "adaptive: steady", want, 4);
}

/* The value axis of a chart of @max: its tick labels, bottom to top,
 * joined with "|". */
static char *
axis_labels(double max)
{
    double y[3] = { 0, max * 0.5, max };
    CliSvgSeries series = { NULL, "#000", y };
    CliSvgChart c = { .title = "t", .from_ms = 0, .to_ms = 3000, .n = 3, .series = &series,
                      .n_series = 1 };
    g_autoptr(GString) svg = g_string_new(NULL);
    g_autoptr(GString) out = g_string_new(NULL);
    static const char anchor[] = "text-anchor=\"end\">";

    cli_svg_chart(svg, &c);
    for (const char *p = svg->str; (p = strstr(p, anchor)); ) {
        p += strlen(anchor);
        if (out->len)
            g_string_append_c(out, '|');
        g_string_append_len(out, p, strchr(p, '<') - p);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* Tick labels with the decimals the step needs, in the top's unit: a
 * chart of 0.018 cores read 0 0.01 0.01 0.01 0.02. */
static void
test_axis_labels(void)
{
    static const struct {
        double max;
        const char *want;
    } cases[] = {
        { 0.018, "0|0.005|0.010|0.015|0.020" },
        { 0.0019, "0|0.0005|0.0010|0.0015|0.0020|0.0025" },
        { 0.9, "0|0.25|0.50|0.75|1.00" },
        { 2.2, "0|0.5|1.0|1.5|2.0|2.5" },
        { 90, "0|25|50|75|100" },
        { 2200, "0|0.5k|1.0k|1.5k|2.0k|2.5k" },
        { 37000, "0|10k|20k|30k|40k|50k" },
        { 1.2e6, "0|0.5M|1.0M|1.5M|2.0M" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = axis_labels(cases[i].max);

        g_assert_cmpstr(got, ==, cases[i].want);
    }
}

/* One escaping for the daemon's log and polltunectl's output. */
static void
test_escape(void)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "plain text, µs and ▁▂▅ stay", "plain text, µs and ▁▂▅ stay" },
        { "a\nb\rc\td", "a\\nb\\rc\\td" },
        { "\033]0;title\007\033[2J", "\\x1b]0;title\\x07\\x1b[2J" },
        { "del\177", "del\\x7f" },
        { "c1 \302\233 \302\205", "c1 \\u009b \\u0085" },
        { "bad \377\300 utf-8", "bad \\xff\\xc0 utf-8" },
        { "back\\slash stays", "back\\slash stays" },
        { "", "" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *got = pt_escape_text(cases[i].in);

        g_assert_cmpstr(got, ==, cases[i].out);
        g_assert_cmpint(pt_escape_needed(cases[i].in), ==,
                        !g_str_equal(cases[i].in, cases[i].out));
        g_assert_cmpstr(cli_text(cases[i].in), ==, cases[i].out);
    }
    {
        g_autofree char *null = pt_escape_text(NULL);

        g_assert_cmpstr(null, ==, "");
        g_assert_null(cli_text(NULL));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/format/duration", test_duration);
    g_test_add_func("/cli/format/escape", test_escape);
    g_test_add_func("/cli/format/duration-left", test_duration_left);
    g_test_add_func("/cli/report/evidence", test_evidence);
    g_test_add_func("/cli/report/evidence-detectors", test_evidence_detectors);
    g_test_add_func("/cli/report/evidence-notes", test_evidence_notes);
    g_test_add_func("/cli/report/axis-labels", test_axis_labels);
    return g_test_run();
}
