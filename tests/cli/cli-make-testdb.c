/*
 * cli-make-testdb: writes a history database with the tests' shape, ending
 * now, so polltunectl's offline commands can be tried by hand.
 *   cli-make-testdb PATH [DAYS]      (default 7 days of 60 s ticks)
 */
#include <glib/gstdio.h>
#include <stdlib.h>

#include "cli-testdb.h"

int
main(int argc, char **argv)
{
    double days = argc > 2 ? g_ascii_strtod(argv[2], NULL) : 7;
    gint64 tick_ms = days > 1 ? 60000 : 1000;
    gint64 now_ms = g_get_real_time() / 1000 / tick_ms * tick_ms;
    guint n = (guint)(days * 86400000 / tick_ms);
    CliTestDbSpec spec = { .start_ms = now_ms - (gint64)n * tick_ms, .n_ticks = n,
                           .tick_ms = tick_ms, .decision_every = MAX(n / 24, 1),
                           .rollups = TRUE };

    if (argc < 2) {
        g_printerr("usage: cli-make-testdb PATH [DAYS]\n");
        return 2;
    }
    g_unlink(argv[1]);
    cli_testdb_create(argv[1], &spec);
    printf("%s: %u ticks of %" G_GINT64_FORMAT " ms\n", argv[1], n, tick_ms);
    return 0;
}
