/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-cli-text-json: for every command with both outputs, each value the
 * text shows is the value --json gives, against a real polltuned and QEMU.
 * Figures that move from one tick to the next (IOPS, CPU, tick times) are
 * compared where they cannot move: history over a past, fully written
 * range.  The rest (names, states, pids, polling values, policies,
 * decisions, mode, versions, guard limits) holds still between the two
 * requests.
 */
#include <math.h>
#include <string.h>

#include "cli-format.h"
#include "cli-live.h"

/* The rows of the text table whose header line starts with @first_col,
 * each split into cells at the two-space column gap; the header is row 0.
 * A cell may hold single spaces ("1s ago", "32768 → 70000"). */
static GPtrArray *
text_table(const char *text, const char *first_col)
{
    GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)g_strfreev);
    g_autoptr(GRegex) gap = g_regex_new(" {2,}", 0, 0, NULL);
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    gboolean in = FALSE;

    for (char **l = lines; *l; l++) {
        g_autofree char *line = g_strstrip(g_strdup(*l));

        if (!in && !g_str_has_prefix(line, first_col))
            continue;
        if (!*line)
            break;
        in = TRUE;
        g_ptr_array_add(rows, g_regex_split(gap, line, 0));
    }
    if (!in)
        g_error("no table headed %s in:\n%s", first_col, text);
    return rows;
}

/* The cell under @col in @row of @table. */
static const char *
cell(GPtrArray *table, guint row, const char *col)
{
    char **head = table->pdata[0];

    g_assert_cmpuint(row, <, table->len);
    for (guint i = 0; head[i]; i++)
        if (g_str_equal(head[i], col)) {
            g_assert_cmpuint(i, <, g_strv_length(table->pdata[row]));
            return ((char **)table->pdata[row])[i];
        }
    g_error("no column %s", col);
}

static char *
int_str(json_object *o, const char *path)
{
    return g_strdup_printf("%" G_GINT64_FORMAT, pt_json_path_int(o, path));
}

static void
assert_cell_int(GPtrArray *t, guint row, const char *col, json_object *o, const char *path)
{
    g_autofree char *want = int_str(o, path);

    g_assert_cmpstr(cell(t, row, col), ==, want);
}

/* The row whose first cell is @key; the table must have it. */
static guint
row_of(GPtrArray *t, const char *key)
{
    for (guint r = 1; r < t->len; r++)
        if (g_str_equal(((char **)t->pdata[r])[0], key))
            return r;
    g_error("no row %s", key);
}

static json_object *
ctl_json(const char *const *args)
{
    g_autoptr(GPtrArray) a = g_ptr_array_new();

    for (const char *const *p = args; *p; p++)
        g_ptr_array_add(a, (gpointer)*p);
    g_ptr_array_add(a, (gpointer)"--json");
    g_ptr_array_add(a, NULL);
    return cli_ctl_json((const char *const *)a->pdata);
}

/* How the text shows a target: the name it goes by, else its identity. */
static const char *
shown(json_object *o)
{
    const char *name = pt_json_path_str(o, "display_name");

    return name ? name : pt_json_path_str(o, "name");
}

static void
test_list(void)
{
    static const char *const args[] = { "list", NULL };
    g_autofree char *text = NULL;
    g_autoptr(json_object) j = NULL;
    g_autoptr(GPtrArray) t = NULL;
    json_object *tl;

    if (!cli_live_setup())
        return;
    text = cli_ctl_ok(args);
    j = ctl_json(args);
    t = text_table(text, "VM ");
    tl = pt_json_path(j, "targets");
    g_assert_cmpuint(t->len - 1, ==, json_object_array_length(tl));
    for (size_t i = 0; i < json_object_array_length(tl); i++) {
        json_object *o = json_object_array_get_idx(tl, i);
        guint r = row_of(t, shown(o));
        json_object *ios = pt_json_path(o, "iothreads");
        g_autoptr(GString) names = g_string_new("");

        g_assert_cmpstr(cell(t, r, "TARGET"), ==, pt_json_path_str(o, "name"));
        g_assert_cmpstr(cell(t, r, "KIND"), ==, pt_json_path_str(o, "kind"));
        g_assert_cmpstr(cell(t, r, "STATE"), ==, pt_json_path_str(o, "state"));
        assert_cell_int(t, r, "PID", o, "pid");
        for (size_t k = 0; k < json_object_array_length(ios); k++)
            g_string_append_printf(names, "%s%s", k ? "," : "",
                                   json_object_get_string(json_object_array_get_idx(ios, k)));
        g_assert_cmpstr(cell(t, r, "IOTHREADS"), ==, names->str);
    }
}

static void
test_status(void)
{
    static const char *const args[] = { "status", NULL };
    g_autofree char *text = NULL;
    g_autofree char *mode_line = NULL;
    g_autoptr(json_object) j = NULL;
    g_autoptr(GPtrArray) t = NULL;
    g_autoptr(GPtrArray) last = NULL;
    json_object *tl;
    guint n = 0;

    if (!cli_live_setup())
        return;
    text = cli_ctl_ok(args);
    j = ctl_json(args);
    mode_line = g_strdup_printf("mode    %s · ", pt_json_path_str(j, "mode"));
    g_assert_true(g_str_has_prefix(text, mode_line));
    g_assert_nonnull(strstr(text, pt_json_path_str(j, "store/path")));
    if (json_object_get_double(pt_json_path(j, "host/budget_cores")) == 0)
        g_assert_nonnull(strstr(text, "(no budget set)"));
    t = text_table(text, "VM/IOTHREAD  STATE");
    last = text_table(text, "VM/IOTHREAD  WHEN");
    tl = pt_json_path(j, "targets");
    for (size_t i = 0; i < json_object_array_length(tl); i++) {
        json_object *o = json_object_array_get_idx(tl, i);
        json_object *ios = pt_json_path(o, "iothreads");

        for (size_t k = 0; k < json_object_array_length(ios); k++) {
            json_object *io = json_object_array_get_idx(ios, k);
            g_autofree char *key = g_strdup_printf("%s/%s", shown(o), pt_json_path_str(io, "id"));
            guint r = row_of(t, key);
            guint d = row_of(last, key);

            g_assert_cmpstr(cell(t, r, "STATE"), ==, pt_json_path_str(o, "state"));
            assert_cell_int(t, r, "POLL-MAX-NS", io, "triple/poll-max-ns");
            assert_cell_int(t, r, "GROW", io, "triple/poll-grow");
            assert_cell_int(t, r, "SHRINK", io, "triple/poll-shrink");
            g_assert_cmpstr(cell(t, r, "POLICY"), ==, pt_json_path_str(io, "policy"));
            g_assert_cmpstr(cell(last, d, "OUTCOME"), ==,
                            pt_json_path_str(io, "last_decision/outcome"));
            g_assert_cmpstr(cell(last, d, "REASON"), ==,
                            pt_json_path_str(io, "last_decision/reason"));
            n++;
        }
    }
    g_assert_cmpuint(n, ==, t->len - 1);
}

/* "OLD → NEW", or NEW alone when the old value is unknown. */
static char *
change_text(json_object *d)
{
    json_object *old = pt_json_path(d, "old");

    if (!old)
        return int_str(d, "new/poll-max-ns");
    return g_strdup_printf("%" G_GINT64_FORMAT " \342\206\222 %" G_GINT64_FORMAT,
                           pt_json_path_int(d, "old/poll-max-ns"),
                           pt_json_path_int(d, "new/poll-max-ns"));
}

static void
test_show(void)
{
    static const char *const args[] = { "show", "vm-a", NULL };
    g_autofree char *text = NULL;
    g_autofree char *head = NULL;
    g_autoptr(json_object) j = NULL;
    json_object *ios;

    if (!cli_live_setup())
        return;
    text = cli_ctl_ok(args);
    j = ctl_json(args);
    head = g_strdup_printf("%s [%s] (%s, %s, pid %" G_GINT64_FORMAT ") · policy %s\n",
                           shown(j), pt_json_path_str(j, "name"), pt_json_path_str(j, "kind"),
                           pt_json_path_str(j, "state"), pt_json_path_int(j, "pid"),
                           pt_json_path_str(j, "policy"));
    g_assert_true(g_str_has_prefix(text, head));
    ios = pt_json_path(j, "iothreads");
    for (size_t k = 0; k < json_object_array_length(ios); k++) {
        json_object *io = json_object_array_get_idx(ios, k);
        json_object *decs = pt_json_path(io, "decisions");
        gsize nd = json_object_array_length(decs);
        g_autofree char *line = g_strdup_printf(
            "\n%s (tid %" G_GINT64_FORMAT "): poll-max-ns %" G_GINT64_FORMAT ", poll-grow %"
            G_GINT64_FORMAT ", poll-shrink %" G_GINT64_FORMAT " · policy %s\n",
            pt_json_path_str(io, "id"), pt_json_path_int(io, "tid"),
            pt_json_path_int(io, "triple/poll-max-ns"), pt_json_path_int(io, "triple/poll-grow"),
            pt_json_path_int(io, "triple/poll-shrink"), pt_json_path_str(io, "policy"));
        const char *section = strstr(text, line);
        g_autoptr(GPtrArray) t = NULL;

        if (!section)
            g_error("show: no line %s in:\n%s", line, text);
        g_assert_cmpuint(nd, >, 0);
        t = text_table(section + strlen(line), "WHEN ");
        g_assert_cmpuint(t->len - 1, ==, nd);
        /* Text is newest first, JSON oldest first. */
        for (gsize i = 0; i < nd; i++) {
            json_object *d = json_object_array_get_idx(decs, nd - 1 - i);
            g_autofree char *change = change_text(d);

            g_assert_cmpstr(cell(t, i + 1, "OUTCOME"), ==, pt_json_path_str(d, "outcome"));
            g_assert_cmpstr(cell(t, i + 1, "POLL-MAX-NS"), ==, change);
            g_assert_cmpstr(cell(t, i + 1, "POLICY"), ==, pt_json_path_str(d, "policy"));
            g_assert_cmpstr(cell(t, i + 1, "CAUSE"), ==, pt_json_path_str(d, "cause"));
            g_assert_cmpstr(cell(t, i + 1, "REASON"), ==, pt_json_path_str(d, "reason"));
        }
    }
}

static void
test_policy_get(void)
{
    static const char *const args[] = { "policy", "get", NULL };
    g_autofree char *text = NULL;
    g_autofree char *def = NULL;
    g_autoptr(json_object) j = NULL;
    g_autoptr(GPtrArray) t = NULL;
    g_autoptr(GPtrArray) rt = NULL;
    json_object *tl, *rules;

    if (!cli_live_setup())
        return;
    /* A rule that matches nothing, so that the rules table is there too. */
    g_free(CTL_OK("policy", "set", "zz-*", "static:32768"));
    text = cli_ctl_ok(args);
    j = ctl_json(args);
    g_free(CTL_OK("policy", "clear", "zz-*"));
    def = g_strdup_printf("default policy: %s\n", pt_json_path_str(j, "default"));
    g_assert_true(g_str_has_prefix(text, def));
    t = text_table(text, "TARGET ");
    tl = pt_json_path(j, "targets");
    g_assert_cmpuint(t->len - 1, ==, json_object_array_length(tl));
    for (size_t i = 0; i < json_object_array_length(tl); i++) {
        json_object *o = json_object_array_get_idx(tl, i);

        g_assert_cmpstr(cell(t, row_of(t, shown(o)), "POLICY"), ==,
                        pt_json_path_str(o, "policy"));
    }
    rt = text_table(text, "GLOB ");
    rules = pt_json_path(j, "rules");
    g_assert_cmpuint(json_object_array_length(rules), >, 0);
    g_assert_cmpuint(rt->len - 1, ==, json_object_array_length(rules));
    for (size_t i = 0; i < json_object_array_length(rules); i++) {
        json_object *o = json_object_array_get_idx(rules, i);

        g_assert_cmpstr(cell(rt, i + 1, "GLOB"), ==, pt_json_path_str(o, "glob"));
        g_assert_cmpstr(cell(rt, i + 1, "POLICY"), ==, pt_json_path_str(o, "policy"));
    }
}

/* A guard's figure as explain's text writes it: "20.0%", "0.05 cores", "3600.0 s". */
static char *
guard_figure(json_object *g, const char *key)
{
    json_object *v = pt_json_path(g, key);
    const char *unit = pt_json_path_str(g, "unit");
    double x;

    if (!v || json_object_is_type(v, json_type_null))
        return g_strdup("-");
    x = json_object_get_double(v);
    if (g_str_equal(unit, "%"))
        return g_strdup_printf("%.1f%%", x);
    if (g_str_equal(unit, "cores"))
        return g_strdup_printf("%.2f cores", x);
    return g_strdup_printf("%.1f %s", x, unit);
}

static void
test_explain(void)
{
    static const char *const args[] = { "explain", "vm-a/iot0", NULL };
    g_autofree char *text = NULL;
    g_autofree char *head = NULL;
    g_autoptr(json_object) j = NULL;
    g_autoptr(GPtrArray) t = NULL;
    json_object *x, *guards;

    if (!cli_live_setup())
        return;
    text = cli_ctl_ok(args);
    j = ctl_json(args);
    g_assert_cmpuint(json_object_array_length(pt_json_path(j, "iothreads")), ==, 1);
    x = pt_json_path(j, "iothreads/0");
    head = g_strdup_printf("vm-a/iot0 \302\267 policy %s (%s: %s) \302\267 mode %s\n",
                           pt_json_path_str(x, "policy"),
                           pt_json_path_str(x, "policy_source/kind"),
                           pt_json_path_str(x, "policy_source/detail"),
                           pt_json_path_str(x, "mode"));
    g_assert_true(g_str_has_prefix(text, head));
    g_assert_nonnull(strstr(text, pt_json_path_str(x, "phase")));
    t = text_table(text, "GUARD ");
    guards = pt_json_path(x, "guards");
    /* The table runs on into the "next look" line, which ends the text. */
    g_assert_cmpuint(t->len - 2, ==, json_object_array_length(guards));
    g_assert_cmpstr(cell(t, t->len - 1, "GUARD"), ==, "next look");
    for (size_t i = 0; i < json_object_array_length(guards); i++) {
        json_object *g = json_object_array_get_idx(guards, i);
        const char *name = pt_json_path_str(g, "guard");
        g_autofree char *limit = guard_figure(g, "limit");

        g_assert_cmpstr(cell(t, i + 1, "GUARD"), ==, name);
        g_assert_cmpstr(cell(t, i + 1, "LIMIT"), ==, limit);
        /* The dwell can end between the two requests; the rest hold still
         * under the static policy. */
        if (!g_str_equal(name, "dwell"))
            g_assert_cmpstr(cell(t, i + 1, "HOLDS"), ==,
                            json_object_get_boolean(pt_json_path(g, "holds")) ? "HOLDS" : "no");
    }
    /* Whole targets too; an unknown one is NotFound, exit 1. */
    g_free(CTL_OK("explain", "vm-a"));
    CTL_FAILS(1, "no such target", "explain", "vm-zz");
}

static void
test_mode_version(void)
{
    g_autofree char *mode = NULL;
    g_autofree char *version = NULL;
    g_autofree char *want = NULL;
    g_autoptr(json_object) mj = NULL;
    g_autoptr(json_object) vj = NULL;

    if (!cli_live_setup())
        return;
    mode = CTL_OK("mode");
    mj = CTL_JSON("mode");
    want = g_strdup_printf("%s\n", pt_json_path_str(mj, "mode"));
    g_assert_cmpstr(mode, ==, want);
    g_clear_pointer(&want, g_free);
    version = CTL_OK("version");
    vj = CTL_JSON("version");
    want = g_strdup_printf("polltunectl %s\npolltuned %s (control protocol %" G_GINT64_FORMAT
                           ")\n", pt_json_path_str(vj, "client"), pt_json_path_str(vj, "version"),
                           pt_json_path_int(vj, "protocol"));
    g_assert_cmpstr(version, ==, want);
}

static double
json_number(json_object *o, const char *key)
{
    json_object *v = json_object_object_get(o, key);

    return v ? json_object_get_double(v) : NAN;
}

static void
test_history(void)
{
    gint64 now_ms = g_get_real_time() / 1000;
    gint64 until_ms = now_ms - now_ms % 1000 + 1000;
    g_autofree char *since = NULL;
    g_autofree char *until = NULL;
    g_autofree char *text = NULL;
    g_autoptr(json_object) j = NULL;
    g_autoptr(GPtrArray) t = NULL;
    json_object *rows;
    guint r = 0;

    if (!cli_live_setup())
        return;
    /* A whole second in the past, every row of which is written: both
     * requests read the same rows. */
    g_assert_true(pt_test_wait_stored(cli_live.d, "vm-a", "iot0", until_ms, 20000));
    since = cli_test_iso(until_ms - 2000);
    until = cli_test_iso(until_ms);
    text = CTL_OK("history", "vm-a/iot0", "--since", since, "--until", until,
                  "--resolution", "raw");
    j = CTL_JSON("history", "vm-a/iot0", "--since", since, "--until", until,
                 "--resolution", "raw");
    g_assert_cmpstr(pt_json_path_str(j, "resolution"), ==, "raw");
    g_assert_true(g_str_has_prefix(text, "resolution raw\n"));
    t = text_table(text, "TIME (UTC) ");
    rows = pt_json_path(j, "rows");
    g_assert_cmpuint(json_object_array_length(rows), >, 0);
    g_assert_cmpuint(t->len - 1, ==, json_object_array_length(rows));
    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *o = json_object_array_get_idx(rows, i);
        g_autoptr(GDateTime) ts = g_date_time_new_from_unix_utc(pt_json_path_int(o, "ts_ms") / 1000);
        g_autofree char *when = g_date_time_format(ts, "%Y-%m-%d %H:%M:%S");
        /* The text's number formats are cli-format's, tested on their own
         * in test-cli-format; a member absent from the JSON is "-". */
        g_autofree char *iops = cli_format_si(json_number(o, "iops"));
        g_autofree char *lat = cli_format_fixed(json_number(o, "lat_us"), 1);
        g_autofree char *cpu = cli_format_fixed(json_number(o, "cpu_pct"), 1);

        r = i + 1;
        g_assert_cmpstr(cell(t, r, "TIME (UTC)"), ==, when);
        g_assert_cmpstr(cell(t, r, "IOPS"), ==, iops);
        g_assert_cmpstr(cell(t, r, "LAT-\302\265s"), ==, lat);
        g_assert_cmpstr(cell(t, r, "CPU-%"), ==, cpu);
        assert_cell_int(t, r, "POLL-MAX-NS", o, "poll-max-ns");
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    cli_live_add("/cli/text-json/list", test_list);
    cli_live_add("/cli/text-json/status", test_status);
    cli_live_add("/cli/text-json/show", test_show);
    cli_live_add("/cli/text-json/policy-get", test_policy_get);
    cli_live_add("/cli/text-json/explain", test_explain);
    cli_live_add("/cli/text-json/mode-version", test_mode_version);
    cli_live_add("/cli/text-json/history", test_history);
    return cli_live_run(NULL);
}
