/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-make-testdb: writes a history database with the tests' shape, ending
 * now, so polltunectl's offline commands can be tried and measured by hand.
 *   cli-make-testdb PATH [DAYS]       DAYS of ticks through store/ (default 7;
 *                                     60 s ticks beyond one day, else 1 s)
 *   cli-make-testdb PATH --rows N     about N raw sample rows, 1 s ticks, bulk
 *                                     inserted with SQL (for export at scale)
 *   cli-make-testdb PATH --ab         the A/B on a saturated host of
 *                                     cli-testdb.h, ending now
 *   cli-make-testdb PATH --demo       scripts/demo.sh's 90 s history, ending now
 */
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdlib.h>

#include "cli-testdb.h"

/* Copies the last tick's samples forward, one tick per second, in SQL:
 * minutes for tens of millions of rows, where store_tick_write() would take
 * hours.  The rows are as store/ lays them out (ticks, then samples keyed
 * by tick id << 20 | iothread id, see store-private.h). */
static void
bulk_fill(const char *path, guint64 rows)
{
    sqlite3 *sql = NULL;
    char *err = NULL;
    g_autofree char *script = g_strdup_printf(
        "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN;"
        "CREATE TEMP TABLE proto AS SELECT s.* FROM samples_v s"
        "  WHERE s.tick_id = (SELECT max(id) FROM ticks);"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %" G_GUINT64_FORMAT ")"
        "  INSERT INTO ticks (id, ts, len_ns) SELECT (SELECT max(id) FROM ticks) + i,"
        "  (SELECT max(ts) FROM ticks) + i * 1000, 1000000000 FROM n;"
        "INSERT INTO samples SELECT (t.id << 20) | p.iothread_id, p.poll_max_ns, p.poll_grow,"
        "  p.poll_shrink, p.cpu_ns + t.id %% 1000, p.ctx_vol, p.ctx_invol, p.runq_wait_ns,"
        "  p.rd_ops + t.id %% 97, p.rd_bytes, p.rd_time_ns, p.wr_ops, p.wr_bytes, p.wr_time_ns,"
        "  p.flush_ops, p.flush_time_ns, p.kvm_exits, p.io_exits, p.mmio_exits, p.halt_exits"
        "  FROM ticks t, proto p WHERE t.id > (SELECT max(tick_id) FROM samples_v)"
        "  ORDER BY t.id, p.iothread_id;"
        "COMMIT;", rows / 3);

    if (sqlite3_open(path, &sql) != SQLITE_OK ||
        sqlite3_exec(sql, script, NULL, NULL, &err) != SQLITE_OK) {
        g_printerr("%s: bulk fill: %s\n", path, err ? err : sqlite3_errmsg(sql));
        exit(1);
    }
    sqlite3_close(sql);
}

int
main(int argc, char **argv)
{
    gboolean bulk = argc > 3 && g_str_equal(argv[2], "--rows");
    double days = argc > 2 && !bulk ? g_ascii_strtod(argv[2], NULL) : 7;
    gint64 tick_ms = days > 1 && !bulk ? 60000 : 1000;
    guint64 rows = bulk ? g_ascii_strtoull(argv[3], NULL, 10) : 0;
    gint64 now_ms = g_get_real_time() / 1000 / tick_ms * tick_ms;
    guint n = bulk ? 60 : (guint)(days * 86400000 / tick_ms);
    CliTestDbSpec spec = { .start_ms = now_ms - (gint64)(n + rows / 3) * tick_ms,
                           .n_ticks = n, .tick_ms = tick_ms,
                           .decision_every = MAX(n / 24, 1), .rollups = !bulk };

    if (argc < 2) {
        g_printerr("usage: cli-make-testdb PATH [DAYS | --rows N | --ab | --demo]\n");
        return 2;
    }
    g_unlink(argv[1]);
    if (argc > 2 && g_str_equal(argv[2], "--ab")) {
        cli_testdb_create_ab(argv[1], g_get_real_time() / 1000000 * 1000 -
                                      CLI_AB_TICKS * 1000);
        printf("%s: the A/B history, %u ticks of 1 s\n", argv[1], CLI_AB_TICKS);
        return 0;
    }
    if (argc > 2 && g_str_equal(argv[2], "--demo")) {
        cli_testdb_create_demo(argv[1], g_get_real_time() / 1000000 * 1000 -
                                        CLI_DEMO_TICKS * 1000);
        printf("%s: the demo's history, %u ticks of 1 s\n", argv[1], CLI_DEMO_TICKS);
        return 0;
    }
    cli_testdb_create(argv[1], &spec);
    if (bulk)
        bulk_fill(argv[1], rows);
    printf("%s: %u ticks of %" G_GINT64_FORMAT " ms%s\n", argv[1], n, tick_ms,
           bulk ? " and the bulk rows" : "");
    return 0;
}
