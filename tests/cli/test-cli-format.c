/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CLI's text formatting that operators read figures from.
 */
#include "cli-format.h"

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

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/format/duration", test_duration);
    g_test_add_func("/cli/format/duration-left", test_duration_left);
    return g_test_run();
}
