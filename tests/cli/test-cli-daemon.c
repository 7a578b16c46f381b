/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl's read commands against the real polltuned attached to real
 * QEMU (see cli-live.h): status, list, show, history, export, report and
 * metrics.  History and the CSV and JSON Lines exports are checked against
 * a direct sqlite query of the daemon's database over the same range, the
 * metrics exposition with promtool.
 */
#include <glib/gstdio.h>
#include <math.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/wait.h>

#include "cli-live.h"
#include "metric-table.h"
#include "policy-gain.h"
#include "pt-config.h"

/* ---- the read commands ------------------------------------------------ */

static void
test_status(void)
{
    g_autofree char *table = NULL;
    g_autoptr(json_object) st = NULL;
    json_object *io;

    if (!cli_live_setup())
        return;
    table = CTL_OK("status");
    g_assert_true(g_str_has_prefix(table, "mode    enforce"));
    g_assert_true(g_regex_match_simple("last tick [0-9.]+ ms \\(p99 [0-9.]+ ms\\)", table, 0, 0));
    g_assert_nonnull(strstr(table, "VM/IOTHREAD"));
    g_assert_true(g_regex_match_simple("\nvm-a/iot0 +attached +70000 +2 +2 +static:70000/2/2",
                                          table, 0, 0));
    g_assert_true(g_regex_match_simple("\nvm-a/iot1 +attached +70000 ", table, 0, 0));
    g_assert_nonnull(strstr(table, "Last decisions"));
    /* A -machine none QEMU has no KVM: its exits are not shown, and why. */
    g_assert_true(g_regex_match_simple("\nExit figures\n.*\nvm-a +[0-9]+\\.[0-9]+\\.[0-9]+ +"
                                       "not shown +the guest runs without KVM", table,
                                       G_REGEX_DOTALL, 0));

    st = CTL_JSON("status");
    g_assert_cmpstr(pt_json_path_str(st, "mode"), ==, "enforce");
    g_assert_cmpint(pt_json_path_int(st, "interval_ms"), ==, 200);
    g_assert_cmpstr(pt_json_path_str(st, "store/health"), ==, "ok");
    g_assert_cmpstr(pt_json_path_str(st, "targets/0/kind"), ==, "qmp");
    g_assert_cmpint(pt_json_path_int(st, "targets/0/pid"), ==, cli_live.vm->qemu->pid);
    io = pt_test_status_iothread(st, "vm-a", "iot1");
    g_assert_nonnull(io);
    g_assert_cmpint(pt_json_path_int(io, "triple/poll-max-ns"), ==, 70000);
    g_assert_cmpint(pt_json_path_int(io, "tid"), >, 0);
    g_assert_cmpstr(pt_json_path_str(io, "last_decision/outcome"), ==, "applied");
    g_assert_cmpint(pt_json_path_int(io, "last_decision/new/poll-max-ns"), ==, 70000);
    /* The table shows the decision's age and change from these. */
    g_assert_cmpint(pt_json_path_int(io, "last_decision/ts_ms"), >, 0);
    g_assert_nonnull(pt_json_path(io, "last_decision/old"));
    g_assert_nonnull(pt_json_path_str(io, "last_decision/policy"));
    g_assert_false(g_regex_match_simple("\nvm-a/iot1 +- +applied", table, 0, 0));
    g_assert_nonnull(pt_json_path(io, "metrics/ts_ms"));
    /* The host's CPU has one scale, history's and the report's: 100 is
     * every CPU busy, and the line says of how many. */
    g_assert_cmpint(pt_json_path_int(st, "host/cpus"), >, 0);
    g_assert_cmpfloat(json_object_get_double(pt_json_path(st, "host/cpu_busy_pct")), <=, 100.001);
    g_assert_true(g_regex_match_simple("\nhost    CPU busy [0-9]+\\.[0-9]% of all [0-9]+ CPUs \302\267 ",
                                       table, 0, 0));
    /* The last tick splits into waiting for answers and own work. */
    {
        double tick = json_object_get_double(pt_json_path(st, "last_tick_ms"));
        double wait = json_object_get_double(pt_json_path(st, "last_wait_ms"));
        double work = json_object_get_double(pt_json_path(st, "last_work_ms"));

        g_assert_cmpfloat(wait, >, 0);
        g_assert_cmpfloat(work, >, 0);
        g_assert_cmpfloat(fabs(wait + work - tick), <, 0.01);
        g_assert_cmpfloat(json_object_get_double(pt_json_path(st, "tick_p99_ms")), >=,
                          json_object_get_double(pt_json_path(st, "tick_p50_ms")));
        g_assert_cmpfloat(json_object_get_double(pt_json_path(st, "targets/0/sample_ms")), >, 0);
    }
}

static void
test_list(void)
{
    g_autofree char *table = NULL;
    g_autoptr(json_object) l = NULL;

    if (!cli_live_setup())
        return;
    table = CTL_OK("list");
    g_assert_true(g_str_has_prefix(table, "VM "));
    /* Shown by QEMU's -name, known by its socket's path. */
    g_assert_true(g_regex_match_simple("\nvm-a +/[^ ]+/vm-a\\.qmp +qmp +attached +[0-9]+ "
                                       "+iot0,iot1\n", table, 0, 0));
    l = CTL_JSON("list");
    g_assert_cmpuint(json_object_array_length(pt_json_path(l, "targets")), ==, 1);
    g_assert_cmpstr(pt_json_path_str(l, "targets/0/name"), ==, cli_live.vm->daemon_sock);
    g_assert_cmpstr(pt_json_path_str(l, "targets/0/display_name"), ==, "vm-a");
    g_assert_cmpstr(pt_json_path_str(l, "targets/0/iothreads/1"), ==, "iot1");
}

/* The text CAUSE column says what the JSON's "cause" says, for the newest
 * decision (the first row of the text table, the last of the JSON). */
static void
show_causes_agree(const char *text, json_object *show)
{
    json_object *decs = pt_json_path(show, "iothreads/0/decisions");
    gsize n = json_object_array_length(decs);
    json_object *newest;
    const char *cause, *head, *col, *row;
    g_autofree char *cell = NULL;

    g_assert_cmpuint(n, >, 0);
    newest = json_object_array_get_idx(decs, n - 1);
    cause = pt_json_path_str(newest, "cause");
    g_assert_nonnull(cause);
    g_assert_cmpstr(cause, !=, "");
    /* The row under the header holds the newest decision; its CAUSE cell
     * starts at the header's CAUSE column and ends at the column gap. */
    head = strstr(text, "    WHEN ");
    g_assert_nonnull(head);
    col = strstr(head, "CAUSE");
    row = strchr(head, '\n');
    g_assert_nonnull(col);
    g_assert_nonnull(row);
    /* Columns count characters: POLL-MAX-NS holds a multibyte arrow. */
    row = g_utf8_offset_to_pointer(row + 1, g_utf8_pointer_to_offset(head, col));
    cell = g_strndup(row, strstr(row, "  ") ? (gsize)(strstr(row, "  ") - row) : strlen(row));
    if (g_strcmp0(cell, cause) != 0)
        g_error("show: text CAUSE %s is not the JSON's %s:\n%s", cell, cause, text);
}

static void
test_show(void)
{
    g_autofree char *text = NULL;
    g_autofree char *one = NULL;
    g_autoptr(json_object) all = NULL;
    g_autoptr(json_object) io1 = NULL;

    if (!cli_live_setup())
        return;
    text = CTL_OK("show", "vm-a", "--ticks", "5");
    {
        g_autofree char *head = g_strdup_printf("vm-a [%s] (qmp, attached, pid ",
                                                cli_live.vm->daemon_sock);

        g_assert_true(g_str_has_prefix(text, head));
    }
    g_assert_nonnull(strstr(text, "\niot0 (tid "));
    g_assert_nonnull(strstr(text, "\niot1 (tid "));
    g_assert_nonnull(strstr(text, "last 5 ticks"));
    /* The decisions that applied the policy, from the daemon's log. */
    g_assert_null(strstr(text, "no decisions yet"));
    g_assert_nonnull(strstr(text, "policy static:70000/2/2"));
    g_assert_true(g_regex_match_simple("\n  QEMU [0-9]+\\.[0-9]+\\.[0-9]+ \302\267 exits: not shown "
                                       "\\(the guest runs without KVM", text, 0, 0));

    all = CTL_JSON("show", "vm-a", "--ticks", "3");
    g_assert_cmpstr(pt_json_path_str(all, "display_name"), ==, "vm-a");
    g_assert_cmpuint(json_object_array_length(pt_json_path(all, "iothreads")), ==, 2);
    g_assert_cmpuint(json_object_array_length(pt_json_path(all, "iothreads/0/history")), ==, 3);
    g_assert_cmpstr(pt_json_path_str(all, "iothreads/0/decisions/0/iothread"), ==, "iot0");
    g_assert_cmpstr(pt_json_path_str(all, "iothreads/1/decisions/0/iothread"), ==, "iot1");
    g_assert_cmpstr(pt_json_path_str(all, "iothreads/1/decisions/0/outcome"), ==, "applied");
    g_assert_cmpint(pt_json_path_int(all, "iothreads/1/decisions/0/old/poll-max-ns"), ==, 32768);
    g_assert_cmpint(pt_json_path_int(all, "iothreads/1/decisions/0/new/poll-max-ns"), ==, 70000);

    one = CTL_OK("show", "vm-a/iot1");
    g_assert_null(strstr(one, "\niot0 (tid "));
    g_assert_nonnull(strstr(one, "\niot1 (tid "));
    io1 = CTL_JSON("show", "vm-a/iot1", "--ticks", "2");
    g_assert_cmpuint(json_object_array_length(pt_json_path(io1, "iothreads")), ==, 1);
    g_assert_cmpstr(pt_json_path_str(io1, "iothreads/0/id"), ==, "iot1");
    g_assert_cmpuint(json_object_array_length(pt_json_path(io1, "iothreads/0/history")), ==, 2);
    show_causes_agree(one, io1);
}
/* ---- history, export, report, metrics --------------------------------- */

/* A past range of about two seconds whose rows are all written. */
static void
settled_range(gint64 *from, gint64 *to)
{
    gint64 up_us = g_get_monotonic_time() - cli_live.started_us;

    /* Two seconds of samples exist. */
    if (up_us < 3 * G_USEC_PER_SEC)
        g_usleep(3 * G_USEC_PER_SEC - up_us);
    *to = g_get_real_time() / 1000 - 100;
    *from = *to - 2000;
    g_assert_true(pt_test_wait_stored(cli_live.d, "vm-a", "iot1", *to + 250, 3000));
}

/* Rows of @target/@iothread the daemon's database holds over [@from, @to). */
static guint
db_rows(const char *target, const char *iothread, gint64 from, gint64 to)
{
    static const int dec[CLI_N_RAW] = { [CLI_N_RAW - 1] = 3 };     /* iops: 3 places */
    g_autoptr(GPtrArray) lines = cli_expected_csv(cli_live.d->db_path, CLI_RAW_QUERY, from, to,
                                                  dec, CLI_N_RAW, 0);
    guint n = 0;

    for (guint i = 0; i < lines->len; i++) {
        g_auto(GStrv) cells = g_strsplit(g_ptr_array_index(lines, i), ",", 5);

        n += g_str_equal(cells[1], target) && g_str_equal(cells[3], iothread);
    }
    return n;
}

static void
test_history(void)
{
    g_autoptr(json_object) h = NULL;
    g_autofree char *table = NULL;
    json_object *rows;
    gint64 from, to;

    if (!cli_live_setup())
        return;
    settled_range(&from, &to);
    {
        g_autofree char *since = cli_test_iso(from);
        g_autofree char *until = cli_test_iso(to);

        h = CTL_JSON("history", "vm-a/iot0", "--since", since, "--until", until);
        table = CTL_OK("history", "vm-a", "--since", since, "--until", until);
    }
    g_assert_cmpstr(pt_json_path_str(h, "resolution"), ==, "raw");
    rows = pt_json_path(h, "rows");
    /* 2 s at 200 ms, as many rows as the database has. */
    g_assert_cmpuint(json_object_array_length(rows), >=, 8);
    /* Kept under the target's identity, its socket's path. */
    g_assert_cmpuint(json_object_array_length(rows), ==,
                     db_rows(cli_live.vm->daemon_sock, "iot0", from, to));
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *r = json_object_array_get_idx(rows, i);

        g_assert_cmpstr(pt_json_path_str(r, "target"), ==, cli_live.vm->daemon_sock);
        g_assert_cmpstr(pt_json_path_str(r, "iothread"), ==, "iot0");
        g_assert_cmpint(pt_json_path_int(r, "ts_ms"), >=, from);
        g_assert_cmpint(pt_json_path_int(r, "ts_ms"), <, to);
        g_assert_nonnull(pt_json_path(r, "iops"));
        g_assert_nonnull(pt_json_path(r, "cpu_pct"));
        g_assert_nonnull(pt_json_path(r, "queue_depth"));
        g_assert_cmpint(pt_json_path_int(r, "poll-max-ns"), >, 0);
    }
    g_assert_true(g_str_has_prefix(table, "resolution raw\n"));
    g_assert_nonnull(strstr(table, "/vm-a.qmp/iot0 \302\267 "));
    g_assert_nonnull(strstr(table, "/vm-a.qmp/iot1 \302\267 "));
    /* The poll-max-ns column is filled in, not "-". */
    g_assert_true(g_regex_match_simple("\n[0-9-]+ [0-9:]+ +[0-9.k]+ +[-0-9.]+ +[0-9.]+ +[0-9]+\n",
                                          table, 0, 0));
}

static char **
export_lines(const char *format, gint64 from, gint64 to, const char *path, const char *extra)
{
    g_autofree char *since = cli_test_iso(from);
    g_autofree char *until = cli_test_iso(to);
    g_autofree char *out = CTL_OK("export", "--format", format, "--since", since, "--until",
                                  until, "-o", path, extra);
    g_autofree char *data = NULL;

    g_assert_true(g_str_has_prefix(out, "wrote "));
    g_assert_true(g_file_get_contents(path, &data, NULL, NULL));
    return g_strsplit(data, g_str_equal(format, "csv") ? "\r\n" : "\n", -1);
}

static void
test_export(void)
{
    static const int dec[CLI_N_RAW] = { [CLI_N_RAW - 1] = 3 };     /* iops: 3 places */
    g_autofree char *csv_path = g_build_filename(cli_live.tmp_dir, "e.csv", NULL);
    g_autofree char *jsonl_path = g_build_filename(cli_live.tmp_dir, "e.jsonl", NULL);
    g_autoptr(GPtrArray) want = NULL;
    g_auto(GStrv) csv = NULL;
    g_auto(GStrv) jsonl = NULL;
    gint64 from, to;
    guint n;

    if (!cli_live_setup())
        return;
    settled_range(&from, &to);
    want = cli_expected_csv(cli_live.d->db_path, CLI_RAW_QUERY, from, to, dec, CLI_N_RAW, 0);
    g_assert_cmpuint(want->len, >=, 16);
    csv = export_lines("csv", from, to, csv_path, NULL);
    jsonl = export_lines("jsonl", from, to, jsonl_path, NULL);

    n = g_strv_length(csv);
    g_assert_true(g_str_has_prefix(csv[0], "time,target,name,iothread,tick_ns,poll_max_ns,"));
    g_assert_cmpstr(csv[n - 1], ==, "");
    g_assert_cmpuint(n - 2, ==, want->len);
    for (guint i = 0; i < want->len; i++)
        g_assert_cmpstr(csv[1 + i], ==, g_ptr_array_index(want, i));

    /* JSON Lines: the same rows, member by member. */
    g_assert_cmpuint(g_strv_length(jsonl), ==, want->len + 1);
    for (guint i = 0; i < want->len; i++) {
        g_autoptr(json_object) line = json_tokener_parse(jsonl[i]);
        g_auto(GStrv) cells = g_strsplit(g_ptr_array_index(want, i), ",", -1);

        g_assert_nonnull(line);
        g_assert_cmpstr(pt_json_path_str(line, "time"), ==, cells[0]);
        g_assert_cmpstr(pt_json_path_str(line, "target"), ==, cells[1]);
        /* The name status gives the VM, beside its identity. */
        g_assert_cmpstr(pt_json_path_str(line, "name"), ==, "vm-a");
        g_assert_cmpstr(cells[2], ==, "vm-a");
        g_assert_cmpstr(pt_json_path_str(line, "iothread"), ==, cells[3]);
        for (guint c = 0; c < CLI_N_RAW; c++) {
            json_object *v = pt_json_path(line, cli_raw_names[c]);

            if (!*cells[4 + c])
                g_assert_null(v);
            else
                g_assert_cmpint(json_object_get_int64(v), ==, g_ascii_strtoll(cells[4 + c], NULL, 10));
        }
    }
    g_assert_cmpstr(jsonl[want->len], ==, "");
}

static void
test_export_decisions(void)
{
    static const int dec[7] = { 0 };
    g_autofree char *path = g_build_filename(cli_live.tmp_dir, "d.csv", NULL);
    g_autoptr(GPtrArray) want = NULL;
    g_auto(GStrv) got = NULL;
    gint64 from, to;
    guint n;

    if (!cli_live_setup())
        return;
    settled_range(&from, &to);
    /* Since before the daemon started: the decisions that applied the
     * policy at attach are in it. */
    from = g_get_real_time() / 1000 - 600 * 1000;
    want = cli_expected_csv(cli_live.d->db_path, CLI_DECISIONS_QUERY, from, to, dec, 7, 3);
    got = export_lines("csv", from, to, path, "--decisions");
    g_assert_cmpuint(want->len, >=, 2);
    n = g_strv_length(got);
    g_assert_true(g_str_has_prefix(got[0], "time,target,name,iothread,old_poll_max_ns,"));
    g_assert_cmpstr(got[n - 1], ==, "");
    g_assert_cmpuint(n - 2, ==, want->len);
    for (guint i = 0; i < want->len; i++)
        g_assert_cmpstr(got[1 + i], ==, g_ptr_array_index(want, i));
}

static void
test_version(void)
{
    g_autofree char *text = NULL;
    g_autoptr(json_object) v = NULL;

    if (!cli_live_setup())
        return;
    text = CTL_OK("version");
    g_assert_cmpstr(text, ==, "polltunectl " PT_VERSION "\npolltuned " PT_VERSION
                    " (control protocol 1)\n");
    v = CTL_JSON("version");
    g_assert_cmpstr(pt_json_path_str(v, "version"), ==, PT_VERSION);
    g_assert_cmpint(pt_json_path_int(v, "protocol"), ==, 1);
    g_assert_cmpstr(pt_json_path_str(v, "client"), ==, PT_VERSION);
}

static void
test_report(void)
{
    g_autofree char *path = g_build_filename(cli_live.tmp_dir, "report.html", NULL);
    g_autofree char *out = NULL;
    g_autofree char *html = NULL;

    if (!cli_live_setup())
        return;
    /* The default range (30 days) over seconds of history: the page spans
     * the history, read from raw ticks. */
    out = CTL_OK("report", "-o", path);
    g_assert_true(g_str_has_prefix(out, "wrote "));
    g_assert_nonnull(strstr(out, "at raw resolution"));
    g_assert_true(g_file_get_contents(path, &html, NULL, NULL));
    g_assert_nonnull(strstr(html, "the page spans its first to its last sample"));
    g_assert_null(strstr(html, "NaN"));
    g_assert_nonnull(strstr(html, "<svg"));
    /* One name per VM, the one status gives, not its socket's path; one
     * host, this machine, not one made of the socket's folder. */
    g_assert_nonnull(strstr(html, "<tr><td>vm-a/iot1</td>"));
    g_assert_null(strstr(html, cli_live.vm->daemon_sock));
    g_assert_null(strstr(html, "id=\"hosts-table\""));
    {
        g_autofree char *scope = g_strdup_printf("<h2 id=\"scope\">Host %s</h2>",
                                                 g_get_host_name());

        g_assert_nonnull(strstr(html, scope));
    }
    /* The decisions came through the export of the decision log. */
    g_assert_nonnull(strstr(html, "policy static:"));
    /* The host's CPUs, from the daemon's host-history, beside the
     * iothreads' headroom. */
    {
        const char *row = strstr(html, "<table id=\"host-table\">");

        g_assert_nonnull(row);
        row = strstr(row, "<tr><td>host</td><td>");
        g_assert_nonnull(row);
        g_assert_cmpint(g_ascii_strtoll(row + strlen("<tr><td>host</td><td>"), NULL, 10), >=, 1);
    }
    /* A VM it never knew is an error naming it, as show's; one it knows
     * reports. */
    g_unlink(path);
    CTL_FAILS(1, "typo: no such target", "report", "--vm", "typo", "-o", path);
    g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));
    CTL_FAILS(1, "typo: no such target", "export", "--vm", "typo");
    CTL_FAILS(1, "typo: no such target", "export", "--decisions", "--vm", "typo");
    g_free(CTL_OK("report", "--vm", "vm-a", "-o", path));
}

/* @series with domain="vm-a" standing for vm-a's labels: the name it goes
 * by, then its identity, the socket's path. */
static char *
vm_a_series(const char *series)
{
    g_autoptr(GString) s = g_string_new(series);
    g_autofree char *label = g_strdup_printf("domain=\"vm-a\",socket=\"%s\"",
                                             cli_live.vm->daemon_sock);

    g_string_replace(s, "domain=\"vm-a\"", label, 0);
    return g_string_free(g_steal_pointer(&s), FALSE);
}

/* One sample's value from an exposition, or -1 when absent. */
static double
metric_sample(const char *text, const char *series)
{
    g_autofree char *real = vm_a_series(series);
    g_autofree char *needle = g_strdup_printf("\n%s ", real);
    const char *p = strstr(text, needle);

    return p ? g_ascii_strtod(p + strlen(needle), NULL) : -1;
}

/* The tick histogram is whole: cumulative buckets that never go down,
 * +Inf equal to the count, and the count no more than the ticks done
 * (the metrics are taken at one instant, between ticks). */
static void
check_tick_histogram(const char *text)
{
    static const char *const le[] = { "0.005", "0.01", "0.025", "0.05", "0.075", "0.1",
                                       "0.15", "0.2", "0.25", "0.5", "1.0", "2.5",
                                       "5.0", "10.0", "+Inf" };
    double prev = 0, count = metric_sample(text, "polltune_tick_duration_seconds_count");
    double sum = metric_sample(text, "polltune_tick_duration_seconds_sum");
    double ticks = metric_sample(text, "polltune_ticks_total");

    g_assert_nonnull(strstr(text, "# TYPE polltune_tick_duration_seconds histogram\n"));
    for (guint i = 0; i < G_N_ELEMENTS(le); i++) {
        g_autofree char *series = g_strdup_printf("polltune_tick_duration_seconds_bucket{le=\"%s\"}",
                                                  le[i]);
        double v = metric_sample(text, series);

        g_assert_cmpfloat(v, >=, prev);
        prev = v;
    }
    g_assert_cmpfloat(prev, ==, count);
    g_assert_cmpfloat(count, >=, 1);
    g_assert_cmpfloat(count, ==, ticks);
    g_assert_cmpfloat(sum, >, 0);
    /* Every tick is under the 10 s bucket and over nothing: the mean is
     * between the two. */
    g_assert_cmpfloat(sum / count, <=, 10);
    g_assert_cmpfloat(metric_sample(text, "polltune_tick_wait_seconds_total") +
                      metric_sample(text, "polltune_tick_work_seconds_total"), <=, sum + 1e-5);
    g_assert_cmpfloat(metric_sample(text, "polltune_target_sample_seconds{domain=\"vm-a\"}"), >, 0);
}

/*
 * The OpenMetrics text through the parser of the Python client library
 * (Debian's python3-prometheus-client), which enforces that format's rules
 * promtool does not know: UNIT lines, "_total" only on samples, histogram
 * buckets in order up to +Inf and matching _count, "# EOF".
 */
static void
check_openmetrics(const char *text)
{
    static const char *const python = "/usr/bin/python3";
    g_autofree char *path = g_build_filename(cli_live.tmp_dir, "metrics.om", NULL);
    g_autofree char *out = NULL;
    g_autofree char *err = NULL;
    int status = 0;
    const char *argv[] = { python, "-c",
                           "import sys\n"
                           "from prometheus_client.openmetrics.parser import "
                           "text_string_to_metric_families as parse\n"
                           "fams = list(parse(open(sys.argv[1]).read()))\n"
                           "print(len(fams), sorted(f.type for f in fams if f.type == 'histogram'))\n",
                           path, NULL };
    g_autoptr(GError) error = NULL;

    if (!g_file_test(python, G_FILE_TEST_IS_EXECUTABLE) ||
        !g_spawn_command_line_sync("/usr/bin/python3 -c 'import prometheus_client'",
                                   NULL, NULL, &status, NULL) ||
        !g_spawn_check_wait_status(status, NULL)) {
        g_test_skip("/usr/bin/python3 has no prometheus_client: the OpenMetrics text was not parsed");
        return;
    }
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err, &status, &error));
    g_assert_no_error(error);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("OpenMetrics parser rejected the exposition: %s", err);
    g_assert_true(g_str_has_suffix(out, "['histogram']\n"));
}

/*
 * Rates go out as counters that never go down between two scrapes, and
 * states as gauges: the build, exactly one mode, the budget.
 */
static void
check_counters_and_states(const char *before, const char *after)
{
    static const char *const cpu[] = {
        "polltune_iothread_cpu_seconds_total{domain=\"vm-a\",iothread=\"iot1\",polling=\"off\"}",
        "polltune_iothread_cpu_seconds_total{domain=\"vm-a\",iothread=\"iot1\",polling=\"on\"}",
        "polltune_iothread_blocks_total{domain=\"vm-a\",iothread=\"iot1\"}",
        "polltune_iothread_run_delay_seconds_total{domain=\"vm-a\",iothread=\"iot1\"}",
    };
    double cpu_before = 0, cpu_after = 0;
    int modes_on = 0;

    for (guint i = 0; i < G_N_ELEMENTS(cpu); i++) {
        double a = metric_sample(before, cpu[i]), b = metric_sample(after, cpu[i]);

        g_assert_cmpfloat(a, >=, 0);
        g_assert_cmpfloat(b, >=, a);
        if (i < 2) {
            cpu_before += a;
            cpu_after += b;
        }
    }
    /* An iothread of a running QEMU uses some CPU over a few ticks. */
    g_assert_cmpfloat(cpu_after, >, 0);
    g_assert_cmpfloat(cpu_after, >=, cpu_before);
    g_assert_nonnull(strstr(after, "# TYPE polltune_iothread_cpu_seconds counter\n"));
    /* Every family the metric table names is in the exposition, once. */
    for (int i = 0; i < METRIC_MAX; i++) {
        const MetricDef *def = metric_def(i);
        g_autofree char *type = NULL;
        const char *at;

        if (!def->om_family)
            continue;
        type = g_strdup_printf("# TYPE %s %s\n", def->om_family,
                               def->reset == METRIC_RESET_GAUGE ? "gauge" : "counter");
        at = strstr(after, type);
        g_assert_nonnull(at);
        g_assert_null(strstr(at + 1, type));
    }
    /* The gain counters (policy-gain.h), each once, never falling; the
     * iothread's setting is read every tick, so the time charged grows. */
    for (int c = 0; c < POLICY_GAIN_MAX; c++) {
        const PolicyGainCounterDef *g = policy_gain_counter_def(c);
        g_autofree char *type = g_strdup_printf("# TYPE %s counter\n", g->family);
        g_autofree char *series = g_strdup_printf("%s_total{domain=\"vm-a\",iothread=\"iot1\"}",
                                                  g->family);
        const char *at = strstr(after, type);

        g_assert_nonnull(at);
        g_assert_null(strstr(at + 1, type));
        g_assert_cmpfloat(metric_sample(before, series), >=, 0);
        g_assert_cmpfloat(metric_sample(after, series), >=, metric_sample(before, series));
    }
    g_assert_cmpfloat(metric_sample(after, "polltune_iothread_gain_known_seconds_total"
                                           "{domain=\"vm-a\",iothread=\"iot1\"}"), >,
                      metric_sample(before, "polltune_iothread_gain_known_seconds_total"
                                            "{domain=\"vm-a\",iothread=\"iot1\"}"));
    /* A setting QEMU reports in query-iothreads, as a gauge: a real QEMU
     * (6.1 and later) runs with aio-max-batch 0, its default. */
    g_assert_nonnull(strstr(after, "# TYPE polltune_aio_max_batch gauge\n"));
    g_assert_cmpfloat(metric_sample(after, "polltune_aio_max_batch{domain=\"vm-a\","
                                           "iothread=\"iot1\"}"), ==, 0);
    g_assert_cmpfloat(metric_sample(after, "polltune_build_info{version=\"" PT_VERSION "\"}"),
                      ==, 1);
    for (const char *m = "observe\0recommend\0enforce\0"; *m; m += strlen(m) + 1) {
        g_autofree char *series = g_strdup_printf("polltune_mode{mode=\"%s\"}", m);
        double v = metric_sample(after, series);

        g_assert_true(v == 0 || v == 1);
        modes_on += v == 1;
    }
    g_assert_cmpint(modes_on, ==, 1);
    g_assert_cmpfloat(metric_sample(after, "polltune_budget_cores"), >=, 0);
    /* The per-tick rate gauges are gone: a 15 s scrape could not use them. */
    g_assert_null(strstr(after, "polltune_iops{"));
    g_assert_null(strstr(after, "{vm="));
}

/*
 * Every series contrib/prometheus's rules and dashboard read is one the
 * daemon exports, so that a rename here cannot leave the shipped rules or
 * panels reading nothing.  polltune_libvirt_connected and
 * _connections_total are absent without libvirt, as here
 * (tests/daemon/test-daemon-libvirt.c checks them).
 */
static void
check_rules_match(const char *text)
{
    static const char *const files[] = { "polltune.rules.yml", "polltune-dashboard.json" };
    g_autoptr(GRegex) re = g_regex_new("(?<![:a-z_])(polltune_[a-z_0-9]+)", 0, 0, NULL);

    for (gsize f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autofree char *path = g_build_filename(g_getenv("PT_SOURCE_ROOT"), "contrib",
                                                 "prometheus", files[f], NULL);
        g_autofree char *body = NULL;
        g_autoptr(GMatchInfo) mi = NULL;
        guint checked = 0;

        g_assert_true(g_file_get_contents(path, &body, NULL, NULL));
        g_regex_match(re, body, 0, &mi);
        for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
            g_autofree char *name = g_match_info_fetch(mi, 1);
            g_autofree char *sample = g_strdup_printf("\n%s", name);

            if (g_str_has_prefix(name, "polltune_libvirt_connect"))
                continue;
            if (!strstr(text, sample))
                g_error("contrib/prometheus/%s reads %s, which polltuned does not export",
                        files[f], name);
            checked++;
        }
        /* The rules read a dozen families, the dashboard three gauges. */
        g_assert_cmpuint(checked, >=, (guint)(f == 0 ? 8 : 3));
    }
}

static void
test_metrics(void)
{
    g_autofree char *text = NULL;
    g_autoptr(json_object) mj = NULL;
    g_autofree char *path = g_build_filename(cli_live.tmp_dir, "metrics.txt", NULL);
    g_autofree char *promtool = g_find_program_in_path("promtool");
    g_autofree char *cmd = NULL;
    g_autofree char *out = NULL;
    g_autofree char *err = NULL;
    int status = 0;

    if (!cli_live_setup())
        return;
    text = CTL_OK("metrics");
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(cli_live.d, "status", NULL);
        gint64 want = pt_json_path_int(st, "ticks") + 2;
        g_autofree char *later = NULL;

        g_assert_true(pt_test_wait_ticks(cli_live.d, want, 20000));
        later = CTL_OK("metrics");
        check_counters_and_states(text, later);
        check_rules_match(later);
    }
    {
        g_autofree char *line = g_strdup_printf("polltune_poll_max_seconds{domain=\"vm-a\","
                                                "iothread=\"iot1\"} %g\n",
                                                pt_test_qmp_poll_max(cli_live.vm->qmp, "iot1") / 1e9);
        g_autofree char *real = vm_a_series(line);

        g_assert_nonnull(strstr(text, real));
    }
    g_assert_nonnull(strstr(text, "\npolltune_ticks_total "));
    g_assert_true(g_str_has_suffix(text, "\n# EOF\n"));
    check_tick_histogram(text);
    mj = CTL_JSON("metrics");
    /* The same exposition (the figures move between the two requests). */
    g_assert_true(g_str_has_prefix(pt_json_path_str(mj, "text"),
                                   "# TYPE polltune_poll_max_seconds gauge\n"));
    g_assert_true(g_str_has_suffix(pt_json_path_str(mj, "text"), "\n# EOF\n"));

    check_openmetrics(text);
    if (!promtool) {
        g_test_skip("promtool is not installed; the exposition was not linted");
        return;
    }
    /* promtool reads the Prometheus text format, which the daemon gives
     * whoever does not ask for OpenMetrics: it must lint clean. */
    {
        g_autoptr(json_object) prom = pt_test_daemon_ok(cli_live.d, "metrics",
                                                        "{\"format\": \"prometheus\"}");
        const char *ptext = pt_json_path_str(prom, "text");

        g_assert_nonnull(strstr(ptext, "# TYPE polltune_ticks_total counter\n"));
        g_assert_null(strstr(ptext, "# EOF"));
        g_assert_true(g_file_set_contents(path, ptext, -1, NULL));
    }
    cmd = g_strdup_printf("sh -c 'exec promtool check metrics < \"%s\"'", path);
    g_assert_true(g_spawn_command_line_sync(cmd, &out, &err, &status, NULL));
    g_assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status) != 0)
        g_error("promtool check metrics: exit %d: %s%s", WEXITSTATUS(status), out, err);
}

/* Whether `list` has @data (a name) as a target. */
static gboolean
target_listed(gpointer data)
{
    g_autoptr(json_object) l = CTL_JSON("list");

    return pt_test_status_target(l, data) != NULL;
}

static gboolean
target_unlisted(gpointer data)
{
    return !target_listed(data);
}

/*
 * The demo's report: its QEMU exits (the guest powers off) before the
 * report is written, and a target whose QEMU exited cleanly leaves the
 * list.  The report is of the range's history, not of what runs now: the
 * VM is read from the store, with its decision.  It used to be left out
 * ("0 points at raw resolution" when it was the only one).
 */
static void
test_report_gone(void)
{
    g_autofree char *path = g_build_filename(cli_live.tmp_dir, "report-gone.html", NULL);
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(json_object) rep = NULL;
    g_autoptr(GError) err = NULL;
    json_object *series, *quit;
    gint64 points = 0;
    gboolean decided = FALSE;
    g_autofree char *html = NULL;

    if (!cli_live_setup())
        return;
    vm = pt_test_vm_start(cli_live.vm_dir, "gone", NULL);
    g_assert_true(pt_test_wait(target_listed, (gpointer) "gone", 10000));
    /* The static policy's write is its decision. */
    pt_test_qmp_assert_poll_max(vm->qmp, "gone", "iot0", 70000, 10000);
    cli_wait_ticks_pass(5);
    quit = pt_test_qmp_run(vm->qmp, "quit", NULL, &err);
    json_object_put(quit);
    g_assert_true(pt_test_wait(target_unlisted, (gpointer) "gone", 20000));

    rep = CTL_JSON("report", "-o", path);
    g_assert_true(json_object_object_get_ex(rep, "series", &series));
    for (gsize i = 0; i < json_object_array_length(series); i++) {
        json_object *s = json_object_array_get_idx(series, i);

        if (g_str_equal(pt_json_path_str(s, "target"), vm->daemon_sock))
            points += pt_json_path_int(s, "points");
    }
    g_test_message("the gone VM's points in the report: %" G_GINT64_FORMAT, points);
    g_assert_cmpint(points, >, 0);
    g_assert_true(g_file_get_contents(path, &html, NULL, NULL));
    decided = strstr(html, "policy static:") != NULL;
    g_assert_true(decided);
}

int
main(int argc, char **argv)
{
    static const char *const leftovers[] = { "e.csv", "e.jsonl", "d.csv", "report.html", "metrics.txt",
                                             "report-gone.html", NULL };

    g_test_init(&argc, &argv, NULL);
    cli_live_add("/cli/daemon/version", test_version);
    cli_live_add("/cli/daemon/status", test_status);
    cli_live_add("/cli/daemon/list", test_list);
    cli_live_add("/cli/daemon/show", test_show);
    cli_live_add("/cli/daemon/history", test_history);
    cli_live_add("/cli/daemon/export", test_export);
    cli_live_add("/cli/daemon/export-decisions", test_export_decisions);
    cli_live_add("/cli/daemon/report", test_report);
    cli_live_add("/cli/daemon/metrics", test_metrics);
    cli_live_add("/cli/daemon/report-gone", test_report_gone);
    return cli_live_run(leftovers);
}
