/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl with --db: history and export against a real
 * database written through store/, checked against direct sqlite queries
 * over the same range; and the command line's exit codes and messages.
 */
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>
#include "qmp-json.h"
#include <sqlite3.h>
#include <string.h>

#include "cli-testdb.h"
#include "pt-config.h"
#include "store-testutil.h"

static char *tmp_dir;
static char *db_path;
static char *db_digest;
static gint64 t0_ms;            /* start of the test data */

#define N_TICKS CLI_TESTDB_TICKS /* two hours of 1 s ticks */

static char *
file_digest(const char *path)
{
    g_autofree char *data = NULL;
    gsize len;

    g_assert_true(g_file_get_contents(path, &data, &len, NULL));
    return g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)data, len);
}

static sqlite3 *
sql_open(void)
{
    sqlite3 *sql = NULL;

    g_assert_cmpint(sqlite3_open_v2(db_path, &sql, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    return sql;
}

static char **
run_export(const char *format, gint64 from, gint64 to, const char *extra, const char *path)
{
    g_autofree char *since = cli_test_iso(from);
    g_autofree char *until = cli_test_iso(to);
    const char *argv[] = { "--db", db_path, "export", "--format", format, "--since", since,
                           "--until", until, "-o", path, extra, NULL };
    CliRun r = { 0 };
    g_autofree char *data = NULL;

    cli_run(&r, argv);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "wrote "));
    cli_run_clear(&r);
    g_assert_true(g_file_get_contents(path, &data, NULL, NULL));
    return g_strsplit(data, g_str_equal(format, "csv") ? "\r\n" : "\n", -1);
}

static void
assert_lines_equal(char **got, guint skip, GPtrArray *want)
{
    guint n = g_strv_length(got);

    /* Every line ends with a terminator, so the split ends with "". */
    g_assert_cmpstr(got[n - 1], ==, "");
    g_assert_cmpuint(n - 1 - skip, ==, want->len);
    for (guint i = 0; i < want->len; i++)
        g_assert_cmpstr(got[skip + i], ==, g_ptr_array_index(want, i));
}

static void
test_export_csv_raw(void)
{
    static const int dec[CLI_N_RAW] = { [CLI_N_RAW - 1] = 3 };     /* iops: 3 places */
    g_autofree char *out = g_build_filename(tmp_dir, "raw.csv", NULL);
    gint64 from = t0_ms + 600 * 1000 + 500, to = t0_ms + 1500 * 1000;
    g_autoptr(GPtrArray) want = cli_expected_csv(db_path, CLI_RAW_QUERY, from, to, dec, CLI_N_RAW, 0);
    g_auto(GStrv) got = run_export("csv", from, to, NULL, out);
    g_autoptr(GString) want_header = g_string_new("time,target,name,iothread");

    /* 900 ticks (the lower bound falls inside a tick), 3 iothreads. */
    g_assert_cmpuint(want->len, ==, 899 * 3);
    for (gsize i = 0; i < CLI_N_RAW; i++)
        g_string_append_printf(want_header, ",%s", cli_raw_names[i]);
    g_assert_cmpstr(got[0], ==, want_header->str);
    assert_lines_equal(got, 1, want);
}

static void
test_export_jsonl_raw(void)
{
    g_autofree char *out = g_build_filename(tmp_dir, "raw.jsonl", NULL);
    gint64 from = t0_ms + 3600 * 1000, to = t0_ms + 4000 * 1000;
    g_auto(GStrv) got = run_export("jsonl", from, to, "--vm=db-1", out);
    sqlite3 *sql = sql_open();
    sqlite3_stmt *st = NULL;
    g_autofree char *query = g_strdup_printf("SELECT * FROM (%s) WHERE 1", CLI_RAW_QUERY);
    guint row = 0;

    g_assert_cmpint(sqlite3_prepare_v2(sql, query, -1, &st, NULL), ==, SQLITE_OK);
    sqlite3_bind_int64(st, 1, from);
    sqlite3_bind_int64(st, 2, to);
    while (sqlite3_step(st) == SQLITE_ROW) {
        g_autoptr(json_object) line = NULL;
        g_autofree char *t = cli_test_iso(sqlite3_column_int64(st, 0));
        json_object *v;

        /* --vm=db-1: the direct query's web-1 rows must be absent. */
        if (g_str_equal((const char *)sqlite3_column_text(st, 1), "web-1"))
            continue;
        g_assert_nonnull(got[row]);
        line = json_tokener_parse(got[row++]);
        g_assert_nonnull(line);
        g_assert_true(json_object_object_get_ex(line, "time", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, t);
        g_assert_true(json_object_object_get_ex(line, "target", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, (const char *)sqlite3_column_text(st, 1));
        g_assert_true(json_object_object_get_ex(line, "name", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, (const char *)sqlite3_column_text(st, 2));
        g_assert_true(json_object_object_get_ex(line, "iothread", &v));
        g_assert_cmpstr(json_object_get_string(v), ==, (const char *)sqlite3_column_text(st, 3));
        for (guint c = 0; c < CLI_N_RAW; c++) {
            g_assert_true(json_object_object_get_ex(line, cli_raw_names[c], &v));
            if (sqlite3_column_type(st, 4 + c) == SQLITE_NULL)
                g_assert_true(v == NULL);
            else if (g_str_equal(cli_raw_names[c], "iops"))     /* milli-ops/s in the query */
                g_assert_cmpfloat_with_epsilon(json_object_get_double(v),
                                               sqlite3_column_int64(st, 4 + c) / 1000.0, 1e-9);
            else
                g_assert_cmpint(json_object_get_int64(v), ==, sqlite3_column_int64(st, 4 + c));
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(sql);
    g_assert_cmpuint(row, ==, 400 * 2);
    g_assert_cmpstr(got[row], ==, "");
    g_assert_null(got[row + 1]);
}

static void
test_export_rollup_and_decisions(void)
{
    static const int rollup_dec[16] = { 0, 0, 3, 3, 3, 3, 0, 0, 0, 0, 4, 4, 4, 0, 0, 0 };
    static const int decision_dec[7] = { 0 };
    g_autofree char *out = g_build_filename(tmp_dir, "rollup.csv", NULL);
    g_autofree char *dout = g_build_filename(tmp_dir, "decisions.csv", NULL);
    gint64 from = t0_ms, to = t0_ms + N_TICKS * 1000;
    g_autoptr(GPtrArray) want = cli_expected_csv(db_path,
        "SELECT r.bucket, g.name, g.display_name, i.name, n, span_ms, iops_min, iops_mean, iops_max, iops_p95,"
        " lat_min, lat_mean, lat_max, lat_p95, cpu_min, cpu_mean, cpu_max, poll_max_ns,"
        " poll_grow, poll_shrink FROM rollup_1m r"
        " JOIN iothreads i ON i.id = r.iothread_id JOIN targets g ON g.id = i.target_id"
        " WHERE bucket >= ?1 AND bucket < ?2 ORDER BY bucket, r.iothread_id",
        from, to, rollup_dec, 16, 0);
    g_autoptr(GPtrArray) dwant = cli_expected_csv(db_path, CLI_DECISIONS_QUERY, from, to,
                                                  decision_dec, 7, 3);
    g_auto(GStrv) got = run_export("csv", from, to, "--resolution=1m", out);
    g_auto(GStrv) dgot = run_export("csv", from, to, "--decisions", dout);

    /* Two hours of complete minutes for three iothreads. */
    g_assert_cmpuint(want->len, ==, 120 * 3);
    assert_lines_equal(got, 1, want);
    g_assert_cmpuint(dwant->len, ==, N_TICKS / 600 - 1);
    assert_lines_equal(dgot, 1, dwant);
}

static void
test_history_json(void)
{
    g_autofree char *since = cli_test_iso(t0_ms + 60 * 1000);
    g_autofree char *until = cli_test_iso(t0_ms + 120 * 1000);
    const char *argv[] = { "--db", db_path, "history", "db-1/iothread0", "--since", since,
                           "--until", until, "--resolution", "raw", "--json", NULL };
    CliRun r = { 0 };
    g_autoptr(json_object) reply = NULL;
    json_object *rows, *row, *v;
    sqlite3 *sql = sql_open();
    sqlite3_stmt *st = NULL;

    cli_run(&r, argv);
    g_assert_cmpint(r.status, ==, 0);
    reply = json_tokener_parse(r.out);
    g_assert_nonnull(reply);
    g_assert_true(json_object_object_get_ex(reply, "resolution", &v));
    g_assert_cmpstr(json_object_get_string(v), ==, "raw");
    g_assert_true(json_object_object_get_ex(reply, "rows", &rows));
    g_assert_cmpuint(json_object_array_length(rows), ==, 60);
    /* The first row's rates against the counters in the database, to the
     * three decimals the daemon's rows carry (one builder for both). */
    g_assert_cmpint(sqlite3_prepare_v2(sql, "SELECT t.ts, t.len_ns, s.rd_ops + s.wr_ops +"
                                       " s.flush_ops, s.rd_time_ns + s.wr_time_ns +"
                                       " s.flush_time_ns, s.cpu_ns FROM ticks t JOIN samples_v s"
                                       " ON s.tick_id = t.id WHERE t.ts >= ?1 AND"
                                       " s.iothread_id = (SELECT id FROM iothreads WHERE"
                                       " name = 'iothread0' AND target_id = (SELECT id FROM"
                                       " targets WHERE name = 'db-1')) ORDER BY t.id LIMIT 1",
                                       -1, &st, NULL), ==, SQLITE_OK);
    sqlite3_bind_int64(st, 1, t0_ms + 60 * 1000);
    g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
    row = json_object_array_get_idx(rows, 0);
    g_assert_true(json_object_object_get_ex(row, "ts_ms", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, sqlite3_column_int64(st, 0));
    g_assert_true(json_object_object_get_ex(row, "iops", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v),
                                   sqlite3_column_int64(st, 2) /
                                   (sqlite3_column_int64(st, 1) / 1e9), 5e-4);
    g_assert_true(json_object_object_get_ex(row, "lat_us", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v),
                                   sqlite3_column_int64(st, 3) /
                                   (double)sqlite3_column_int64(st, 2) / 1000, 5e-4);
    g_assert_true(json_object_object_get_ex(row, "cpu_pct", &v));
    g_assert_cmpfloat_with_epsilon(json_object_get_double(v),
                                   sqlite3_column_int64(st, 4) * 100.0 /
                                   sqlite3_column_int64(st, 1), 5e-4);
    g_assert_true(json_object_object_get_ex(row, "target", &v));
    g_assert_cmpstr(json_object_get_string(v), ==, "db-1");
    sqlite3_finalize(st);
    sqlite3_close(sql);
    cli_run_clear(&r);
}

static void
test_history_table(void)
{
    g_autofree char *since = cli_test_iso(t0_ms);
    g_autofree char *until = cli_test_iso(t0_ms + N_TICKS * 1000);
    const char *argv[] = { "--db", db_path, "history", "db-1", "--since", since, "--until",
                           until, NULL };
    CliRun r = { 0 };
    g_auto(GStrv) lines = NULL;
    guint data_rows = 0;

    cli_run(&r, argv);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.err, ==, "");
    /* Two hours pick 1-minute rollups: one group per iothread of db-1. */
    g_assert_true(g_str_has_prefix(r.out, "resolution 1m\n"));
    g_assert_nonnull(strstr(r.out, "db-1/iothread0 \302\267"));
    g_assert_nonnull(strstr(r.out, "db-1/iothread1 \302\267"));
    g_assert_null(strstr(r.out, "web-1"));
    /* A wave in the data: the sparkline uses the lowest and highest block. */
    g_assert_nonnull(strstr(r.out, "\342\226\201"));
    g_assert_nonnull(strstr(r.out, "\342\226\210"));
    g_assert_nonnull(strstr(r.out, "IOPS-P95"));
    lines = g_strsplit(r.out, "\n", -1);
    for (char **l = lines; *l; l++)
        if (g_str_has_prefix(*l, "2026-"))
            data_rows++;
    g_assert_cmpuint(data_rows, ==, 2 * 120);
    cli_run_clear(&r);
}

/* A reader that goes away (| head) kills polltunectl with SIGPIPE in the
 * middle of an export: its snapshot of the database must go too. */
static void
test_snapshot_removed_when_killed(void)
{
    g_autofree char *tdir = g_build_filename(tmp_dir, "tmp", NULL);
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "TMPDIR", tdir, TRUE);
    const char *argv[] = { g_getenv("PT_POLLTUNECTL"), "--db", db_path, "export",
                           "--since", "2000-01-01", NULL };
    g_autoptr(GDir) dir = NULL;
    g_autoptr(GError) error = NULL;
    GPid pid;
    int out = -1, status = 0;

    g_assert_cmpint(g_mkdir(tdir, 0700), ==, 0);
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv, env,
                                           G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL,
                                           &out, NULL, &error));
    g_assert_no_error(error);
    close(out);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_spawn_close_pid(pid);
    g_assert_true(WIFSIGNALED(status));
    g_assert_cmpint(WTERMSIG(status), ==, SIGPIPE);
    dir = g_dir_open(tdir, 0, NULL);
    g_assert_null(g_dir_read_name(dir));
    g_rmdir(tdir);
}

typedef struct {
    const char *argv[12];
    int status;
    const char *message;        /* part of stderr */
} Case;

static void
run_cases(const Case *cases, gsize n)
{
    for (gsize i = 0; i < n; i++) {
        CliRun r = { 0 };

        cli_run(&r, cases[i].argv);
        if (r.status != cases[i].status || !strstr(r.err, cases[i].message))
            g_error("case %zu (%s %s): status %d, stderr \"%s\"; want %d and \"%s\"", i,
                    cases[i].argv[0], cases[i].argv[1], r.status, r.err, cases[i].status,
                    cases[i].message);
        /* Errors go to stderr alone, prefixed with the program's name. */
        g_assert_cmpstr(r.out, ==, "");
        g_assert_true(g_str_has_prefix(r.err, "polltunectl: "));
        cli_run_clear(&r);
    }
}

static void
test_errors(void)
{
    g_autofree char *sock = g_build_filename(tmp_dir, "nothing.sock", NULL);
    g_autofree char *missing = g_build_filename(tmp_dir, "missing.db", NULL);
    g_autofree char *junk = g_build_filename(tmp_dir, "junk.db", NULL);
    g_autofree char *expect_sock = g_strdup_printf("%s: connect: No such file or directory "
                                                   "(is polltuned running?)", sock);
    const char *junk_text = "this is a text file, not a database\n";
    const Case cases[] = {
        /* No daemon: the socket does not exist. */
        { { "--socket", sock, "status", NULL }, 1, expect_sock },
        { { "list", "--socket", sock, NULL }, 1, expect_sock },
        { { "-s", sock, "history", "vm-1", NULL }, 1, expect_sock },
        { { "-s", sock, "override", "set", "vm-1/iothread0", "poll-max-ns=4000", NULL }, 1,
          expect_sock },
        /* Usage: exit 2, and never a connection attempt. */
        { { NULL }, 2, "no command given" },
        { { "frobnicate", NULL }, 2, "frobnicate: unknown command" },
        { { "-s", sock, "show", NULL }, 2, "show: expected VM[/IOTHREAD]" },
        { { "-s", sock, "status", "extra", NULL }, 2, "status: expected no parameters" },
        { { "-s", sock, "status", "--bogus", NULL }, 2, "Unknown option --bogus" },
        { { "-s", sock, "policy", NULL }, 2, "policy: expected get, set or clear" },
        { { "-s", sock, "policy", "set", "vm-1", "fastest", NULL }, 2,
          "policy set: policy 'fastest': unknown name" },
        { { "-s", sock, "policy", "set", "vm-1", "static:1/x", NULL }, 2, "'x' is not" },
        /* The documented static:MAX[/GROW[/SHRINK]] is valid: it reaches the
         * (missing) daemon. */
        { { "-s", sock, "policy", "set", "zz-*", "static:32768", NULL }, 1, expect_sock },
        { { "-s", sock, "policy", "set", "vm-1", "static:1/2", NULL }, 1, expect_sock },
        { { "help", "nosuch", NULL }, 2, "help: nosuch: unknown command" },
        { { "help", "policy", "get", "extra", NULL }, 2, "help: expected COMMAND [SUBCOMMAND]" },
        { { "-s", sock, "policy", "set", "vm-1", "off", "latency", NULL }, 2,
          "objective latency: only for adaptive" },
        { { "-s", sock, "mode", "turbo", NULL }, 2, "mode turbo: expected observe" },
        { { "-s", sock, "history", "vm-1", "--since", "yesterday", NULL }, 2,
          "--since yesterday: expected" },
        { { "-s", sock, "history", "vm-1", "--resolution", "5m", NULL }, 2,
          "--resolution 5m: expected raw, 1m or 1h" },
        { { "-s", sock, "history", "vm-1/", NULL }, 2, "expected VM or VM/IOTHREAD" },
        { { "-s", sock, "export", "--format", "xml", NULL }, 2, "--format xml" },
        { { "-s", sock, "export", "--since", "1h", "--until", "2h", NULL }, 2,
          "is not before --until" },
        /* Bad override values. */
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=abc", NULL }, 2,
          "poll-max-ns: \"abc\" is not a non-negative integer" },
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=-5", NULL }, 2,
          "\"-5\" is not a non-negative integer" },
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=99999999999999999999", NULL },
          2, "is not a non-negative integer" },
        { { "-s", sock, "override", "set", "vm-1", "poll-grow=2", NULL }, 2,
          "poll-max-ns=N (or --poll-max-ns N) is required" },
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=1", "poll-max-ns=2", NULL },
          2, "poll-max-ns given twice" },
        { { "-s", sock, "override", "set", "vm-1", "max=3", NULL }, 2, "max=3: expected" },
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=1", "--for", "soon", NULL },
          2, "--for soon: expected a duration" },
        { { "-s", sock, "override", "set", "vm-1", "poll-max-ns=1", "--for",
            "2026-01-01T00:00:00Z", NULL }, 2, "expected a duration" },
        { { "-s", sock, "override", "clear", NULL }, 2, "give VM[/IOTHREAD] or --id N" },
        /* --db is for history, export and report only. */
        { { "--db", missing, "status", NULL }, 2, "--db works only with" },
        /* Offline errors name the file. */
        { { "--db", missing, "history", "vm-1", NULL }, 1, "missing.db: No such file" },
        /* Not found is exit 1, offline as from the daemon. */
        { { "--db", db_path, "history", "nosuch", NULL }, 1, "nosuch: no such target in " },
        { { "--db", db_path, "export", "--vm", "nosuch", NULL }, 1,
          "nosuch: no such target in " },
        { { "--db", db_path, "export", "--decisions", "--vm", "nosuch", NULL }, 1,
          "nosuch: no such target in " },
        { { "--db", db_path, "report", "--vm", "nosuch", "-o", "/dev/null", NULL }, 1,
          "nosuch: no such target in " },
        { { "--db", junk, "export", NULL }, 1, "junk.db: cannot read it as a database" },
    };

    g_assert_true(g_file_set_contents(junk, junk_text, -1, NULL));
    run_cases(cases, G_N_ELEMENTS(cases));
    /* Read-only means read-only: nothing created, nothing moved aside. */
    g_assert_false(g_file_test(missing, G_FILE_TEST_EXISTS));
    {
        g_autofree char *data = NULL;
        g_autoptr(GDir) dir = g_dir_open(tmp_dir, 0, NULL);
        const char *name;

        g_assert_true(g_file_get_contents(junk, &data, NULL, NULL));
        g_assert_cmpstr(data, ==, junk_text);
        while ((name = g_dir_read_name(dir)))
            g_assert_null(strstr(name, "corrupt"));
    }
}

/* Help answers without a daemon, exits 0 and names what it accepts. */
static void
test_help(void)
{
    static const struct {
        const char *argv[5];
        const char *needles[4];
    } cases[] = {
        { { "help", NULL }, { "policy clear GLOB", "override set", "help [COMMAND", NULL } },
        { { "--help", NULL }, { "policy get", "version", NULL } },
        { { "help", "policy", NULL }, { "policy get", "policy set", "policy clear", NULL } },
        { { "policy", "--help", NULL }, { "policy get", "policy set", "policy clear", NULL } },
        { { "help", "policy", "set", NULL }, { "static:MAX[/GROW[/SHRINK]]", "qemu-default",
                                               "adaptive[:OBJECTIVE]", "efficiency" } },
        { { "policy", "set", "--help", NULL }, { "static:MAX[/GROW[/SHRINK]]", "observe",
                                                 NULL } },
        { { "mode", "--help", NULL }, { "recommend", "enforce", NULL } },
        { { "override", "--help", NULL }, { "override set", "override clear", NULL } },
        { { "-s", "/nonexistent/x.sock", "version", NULL }, { "polltunectl " PT_VERSION "\n",
                                                           "polltuned: not reachable", NULL } },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        CliRun r = { 0 };

        cli_run(&r, cases[i].argv);
        if (r.status != 0)
            g_error("case %zu (%s): status %d, stderr \"%s\"", i, cases[i].argv[0], r.status,
                    r.err);
        for (int k = 0; k < 4 && cases[i].needles[k]; k++)
            if (!strstr(r.out, cases[i].needles[k]))
                g_error("case %zu (%s %s): \"%s\" not in:\n%s", i, cases[i].argv[0],
                        cases[i].argv[1] ? cases[i].argv[1] : "", cases[i].needles[k], r.out);
        cli_run_clear(&r);
    }
}

static void
test_db_untouched(void)
{
    g_autofree char *now = file_digest(db_path);

    /* Runs last: every offline command before it left the file as it was. */
    g_assert_cmpstr(now, ==, db_digest);
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmp_dir = test_dir_new();
    db_path = g_build_filename(tmp_dir, "history.db", NULL);
    t0_ms = cli_testdb_create_standard(db_path);
    db_digest = file_digest(db_path);

    g_test_add_func("/cli/offline/export-csv-raw", test_export_csv_raw);
    g_test_add_func("/cli/offline/export-jsonl-raw", test_export_jsonl_raw);
    g_test_add_func("/cli/offline/export-rollup-decisions", test_export_rollup_and_decisions);
    g_test_add_func("/cli/offline/history-json", test_history_json);
    g_test_add_func("/cli/offline/history-table", test_history_table);
    g_test_add_func("/cli/offline/snapshot-removed", test_snapshot_removed_when_killed);
    g_test_add_func("/cli/errors", test_errors);
    g_test_add_func("/cli/help", test_help);
    g_test_add_func("/cli/offline/db-untouched", test_db_untouched);
    rc = g_test_run();
    test_dir_remove(tmp_dir);
    g_free(db_digest);
    g_free(db_path);
    g_free(tmp_dir);
    return rc;
}
