/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * contrib/prometheus against promtool and a real Prometheus.
 *
 * promtool checks the scrape configuration and the rules and runs the
 * rules' unit tests; the scrape configuration sets no host label on a
 * whole target list.  The dashboard's JSON is checked as Grafana would lay
 * it out.  Then Debian's prometheus server, with the shipped rules, scrapes
 * two polltuned standing for two hosts whose QEMUs have the same VM and
 * iothread names (vm-1/iot0, vm-1/iot1), as a fleet's do; host b runs the
 * shipped libvirt = true without any libvirtd.  On that server:
 *   - every `promql` block of docs/METRICS.md returns data, so that the
 *     documented queries and this test cannot drift apart;
 *   - every query of the dashboard returns data (the template variable's
 *     too);
 *   - every rule evaluates without error, and no alert is pending or
 *     firing: these are normal hosts.
 * Each part skips, saying why, without promtool, prometheus or QEMU.
 */
#include <string.h>

#include <gio/gio.h>
#include <glib/gstdio.h>

#include "pt-test-prom.h"
#include "qmp-json.h"
#include "store-testutil.h"

static char *tmp_dir;

static char *
contrib_path(const char *name)
{
    return g_build_filename(g_getenv("PT_SOURCE_ROOT"), "contrib", "prometheus", name, NULL);
}

static char *
read_source(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(g_getenv("PT_SOURCE_ROOT"), dir, name, NULL);
    g_autoptr(GError) err = NULL;
    char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, &err))
        g_error("%s", err->message);
    return text;
}

/* ---- promtool ---------------------------------------------------------- */

static void
test_promtool(void)
{
    static const char *const checks[][4] = {
        { "check", "config", "prometheus.yml", NULL },
        { "check", "rules", "polltune.rules.yml", NULL },
        { "test", "rules", "polltune.rules.test.yml", NULL },
    };
    g_autofree char *promtool = g_find_program_in_path("promtool");
    g_autofree char *dir = contrib_path("");

    if (!promtool) {
        g_test_skip("promtool is not installed (Debian package prometheus)");
        return;
    }
    for (gsize i = 0; i < G_N_ELEMENTS(checks); i++) {
        const char *argv[] = { promtool, checks[i][0], checks[i][1], checks[i][2], NULL };
        g_autofree char *out = NULL, *err = NULL;
        g_autoptr(GError) error = NULL;
        int status;

        g_assert_true(g_spawn_sync(dir, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                                   &out, &err, &status, &error));
        g_assert_no_error(error);
        g_test_message("promtool %s %s %s:\n%s%s", checks[i][0], checks[i][1], checks[i][2],
                       out, err);
        if (!g_spawn_check_wait_status(status, NULL))
            g_error("promtool %s %s %s failed:\n%s%s", checks[i][0], checks[i][1],
                    checks[i][2], out, err);
    }
}

/*
 * A label under a target list's "labels:" is the same for every target in
 * it: a host label there names every host alike, and whatever keys hosts
 * on it merges them all.  The shipped scrape configuration sets none.
 */
static void
test_scrape_config(void)
{
    static const char *const host_labels[] = { "host", "hostname", "node", NULL };
    g_autofree char *text = read_source("contrib/prometheus", "prometheus.yml");
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    guint lists = 0;

    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i] + strspn(lines[i], " ");
        gsize indent = l - lines[i];
        g_autofree char *inline_map = NULL;

        if (!g_str_has_prefix(l, "labels:"))
            continue;
        lists++;
        /* labels: {host: a, dc: b} */
        inline_map = g_strstrip(g_strdup(l + strlen("labels:")));
        if (*inline_map) {
            g_auto(GStrv) pairs = g_strsplit_set(inline_map, "{},", -1);

            for (guint p = 0; pairs[p]; p++) {
                g_autofree char *key = g_strstrip(g_strndup(pairs[p], strcspn(pairs[p], ":")));

                if (g_strv_contains(host_labels, key))
                    g_error("prometheus.yml:%u: the label %s is set on a whole target list: "
                            "every host in it gets the same name", i + 1, key);
            }
            continue;
        }
        /* labels:\n  host: a */
        for (guint j = i + 1; lines[j]; j++) {
            const char *m = lines[j] + strspn(lines[j], " ");
            g_autofree char *key = NULL;

            if (!*m || (gsize)(m - lines[j]) <= indent)
                break;
            key = g_strstrip(g_strndup(m, strcspn(m, ":")));
            if (g_strv_contains(host_labels, key))
                g_error("prometheus.yml:%u: the label %s is set on a whole target list: "
                        "every host in it gets the same name", j + 1, key);
        }
    }
    g_test_message("prometheus.yml: %u label lists, no host label shared", lists);
}

/* ---- the dashboard ----------------------------------------------------- */

static json_object *
dashboard_load(void)
{
    g_autofree char *text = read_source("contrib/prometheus", "polltune-dashboard.json");
    json_object *d = json_tokener_parse(text);

    if (!d || !json_object_is_type(d, json_type_object))
        g_error("contrib/prometheus/polltune-dashboard.json is not a JSON object");
    return d;
}

static json_object *
member(json_object *o, const char *key, json_type type, const char *what)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, type))
        g_error("dashboard: %s: \"%s\" is missing or not a %s", what, key,
                json_type_to_name(type));
    return v;
}

/* The names of the template variables ("datasource", "instance"). */
static GPtrArray *
dashboard_variables(json_object *d)
{
    json_object *list = member(member(d, "templating", json_type_object, "dashboard"), "list",
                               json_type_array, "templating");
    GPtrArray *names = g_ptr_array_new();

    for (gsize i = 0; i < json_object_array_length(list); i++) {
        json_object *v = json_object_array_get_idx(list, i);

        g_ptr_array_add(names, (char *)json_object_get_string(
                                   member(v, "name", json_type_string, "variable")));
    }
    return names;
}

/* Every panel's queries, with "$instance" standing for every host, as
 * Grafana's "All" does; any other variable fails. */
static GPtrArray *
dashboard_queries(json_object *d)
{
    json_object *panels = member(d, "panels", json_type_array, "dashboard");
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);

    for (gsize i = 0; i < json_object_array_length(panels); i++) {
        json_object *targets = member(json_object_array_get_idx(panels, i), "targets",
                                      json_type_array, "panel");

        for (gsize t = 0; t < json_object_array_length(targets); t++) {
            const char *expr = json_object_get_string(
                member(json_object_array_get_idx(targets, t), "expr", json_type_string, "target"));
            g_auto(GStrv) parts = g_strsplit(expr, "$instance", -1);
            char *q = g_strjoinv(".*", parts);

            if (strchr(q, '$'))
                g_error("dashboard: %s: a variable other than $instance", expr);
            g_ptr_array_add(out, q);
        }
    }
    return out;
}

typedef struct {
    gint64 x, y, w, h;
} Box;

/*
 * The JSON as Grafana lays it out: unique panel ids, each panel inside the
 * 24-column grid and on no other, a data source from the variable, every
 * query with its own refId and no unknown variable; and the panels show
 * what polltune changes, not only what it measures.
 */
static void
test_dashboard(void)
{
    g_autoptr(json_object) d = dashboard_load();
    g_autoptr(GPtrArray) vars = dashboard_variables(d);
    g_autoptr(GPtrArray) queries = dashboard_queries(d);
    g_autoptr(GHashTable) ids = g_hash_table_new(g_int64_hash, g_int64_equal);
    g_autoptr(GArray) boxes = g_array_new(FALSE, FALSE, sizeof(Box));
    g_autofree char *rules = read_source("contrib/prometheus", "polltune.rules.yml");
    g_autoptr(GString) all = g_string_new(NULL);
    json_object *panels = member(d, "panels", json_type_array, "dashboard");
    g_autofree gint64 *id_store = g_new0(gint64, json_object_array_length(panels));
    static const char *const shows[] = {
        "polltune_poll_max_seconds", "polltune_decisions", "polltune_guard_holds",
        "polltune_tick_duration", "polltune_tick_overruns", "polltune_targets",
        "polltune_iops", "polltune_polling_iothread_cores",
    };

    g_assert_cmpstr(json_object_get_string(member(d, "uid", json_type_string, "dashboard")),
                    ==, "polltune-overview");
    member(d, "title", json_type_string, "dashboard");
    g_assert_true(g_ptr_array_find_with_equal_func(vars, "datasource", g_str_equal, NULL));
    g_assert_true(g_ptr_array_find_with_equal_func(vars, "instance", g_str_equal, NULL));
    g_assert_cmpuint(json_object_array_length(panels), >=, 13);

    for (gsize i = 0; i < json_object_array_length(panels); i++) {
        json_object *p = json_object_array_get_idx(panels, i);
        const char *title = json_object_get_string(member(p, "title", json_type_string, "panel"));
        json_object *grid = member(p, "gridPos", json_type_object, title);
        json_object *ds = member(p, "datasource", json_type_object, title);
        json_object *targets = member(p, "targets", json_type_array, title);
        g_autoptr(GHashTable) refs = g_hash_table_new(g_str_hash, g_str_equal);
        Box b = {
            json_object_get_int64(member(grid, "x", json_type_int, title)),
            json_object_get_int64(member(grid, "y", json_type_int, title)),
            json_object_get_int64(member(grid, "w", json_type_int, title)),
            json_object_get_int64(member(grid, "h", json_type_int, title)),
        };

        id_store[i] = json_object_get_int64(member(p, "id", json_type_int, title));
        if (!g_hash_table_add(ids, &id_store[i]))
            g_error("dashboard: panel id %" G_GINT64_FORMAT " twice (\"%s\")", id_store[i],
                    title);
        g_assert_cmpstr(json_object_get_string(member(p, "type", json_type_string, title)), ==,
                        "timeseries");
        g_assert_cmpstr(json_object_get_string(member(ds, "uid", json_type_string, title)), ==,
                        "${datasource}");
        if (b.x < 0 || b.y < 0 || b.w <= 0 || b.h <= 0 || b.x + b.w > 24)
            g_error("dashboard: \"%s\" is outside the 24-column grid", title);
        for (guint k = 0; k < boxes->len; k++) {
            const Box *o = &g_array_index(boxes, Box, k);

            if (b.x < o->x + o->w && o->x < b.x + b.w && b.y < o->y + o->h && o->y < b.y + b.h)
                g_error("dashboard: \"%s\" overlaps panel %u", title, k);
        }
        g_array_append_val(boxes, b);
        g_assert_cmpuint(json_object_array_length(targets), >, 0);
        for (gsize t = 0; t < json_object_array_length(targets); t++) {
            json_object *tg = json_object_array_get_idx(targets, t);
            const char *ref = json_object_get_string(member(tg, "refId", json_type_string, title));

            if (!g_hash_table_add(refs, (char *)ref))
                g_error("dashboard: \"%s\": refId %s twice", title, ref);
            g_string_append(all, json_object_get_string(
                                     member(tg, "expr", json_type_string, title)));
            g_string_append_c(all, '\n');
        }
    }

    /* What the tool changes and how it fares, beside what it measures. */
    for (gsize i = 0; i < G_N_ELEMENTS(shows); i++)
        if (!strstr(all->str, shows[i]))
            g_error("dashboard: no panel reads %s", shows[i]);
    /* Each series is recorded by the rules or exported by polltuned (the
     * cli suite checks the exports). */
    {
        g_autoptr(GRegex) re = g_regex_new("[a-z_]+:[a-z_0-9]+:[a-z_0-9]+|polltune_[a-z_0-9]+",
                                           0, 0, NULL);
        g_autoptr(GMatchInfo) mi = NULL;

        g_regex_match(re, all->str, 0, &mi);
        for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
            g_autofree char *name = g_match_info_fetch(mi, 0);
            g_autofree char *rec = g_strdup_printf("- record: %s\n", name);

            if (strchr(name, ':') && !strstr(rules, rec))
                g_error("dashboard reads %s, which no recording rule defines", name);
        }
    }
    g_test_message("dashboard: %zu panels, %u queries", json_object_array_length(panels),
                   queries->len);
}

/* ---- a real Prometheus ------------------------------------------------- */

/* Every ```promql block of docs/METRICS.md, one query each. */
static GPtrArray *
doc_queries(void)
{
    g_autofree char *text = read_source("docs", "METRICS.md");
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
    GString *q = NULL;

    for (guint i = 0; lines[i]; i++) {
        if (!q && g_str_equal(lines[i], "```promql")) {
            q = g_string_new(NULL);
        } else if (q && g_str_equal(lines[i], "```")) {
            g_ptr_array_add(out, g_string_free(q, FALSE));
            q = NULL;
        } else if (q) {
            g_string_append_printf(q, "%s%s", q->len ? "\n" : "", lines[i]);
        }
    }
    g_assert_null(q);
    return out;
}

typedef struct {
    PtTestProm *prom;
    const char *query;
    guint want;
} PromWait;

/* @w->query has at least @w->want results. */
static gboolean
prom_has(gpointer data)
{
    PromWait *w = data;
    g_autoptr(json_object) r = pt_test_prom_query(w->prom, w->query, NULL);

    return r && json_object_array_length(r) >= w->want;
}

/* Asserts @query runs and, unless @may_be_empty, returns data. */
static void
assert_query(PtTestProm *prom, const char *from, const char *query, gboolean may_be_empty)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) r = pt_test_prom_query(prom, query, &err);

    if (!r)
        g_error("%s: the query fails: %s\n  %s", from, err->message, query);
    g_test_message("%s: %zu series: %s", from, json_object_array_length(r), query);
    if (!may_be_empty && json_object_array_length(r) == 0)
        g_error("%s: the query returns no data:\n  %s", from, query);
}

/* Every rule evaluated (waiting up to a minute for the first evaluation)
 * without error, and no alert pending or firing. */
static void
assert_rules(PtTestProm *prom)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) root = NULL;
    json_object *groups;
    guint n = 0, alerts = 0;
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    /* A rule's health is "unknown" until its first evaluation. */
    for (;;) {
        gboolean unknown = FALSE;

        g_clear_pointer(&root, json_object_put);
        root = pt_test_prom_get(prom, "/api/v1/rules", &err);
        g_assert_no_error(err);
        groups = pt_json_path(root, "data/groups");
        g_assert_nonnull(groups);
        for (gsize g = 0; g < json_object_array_length(groups); g++) {
            json_object *rules = pt_json_path(json_object_array_get_idx(groups, g), "rules");

            for (gsize i = 0; i < json_object_array_length(rules); i++)
                unknown |= g_str_equal(pt_json_path_str(json_object_array_get_idx(rules, i),
                                                        "health"), "unknown");
        }
        if (!unknown || g_get_monotonic_time() > deadline)
            break;
        g_usleep(500 * 1000);
    }
    for (gsize g = 0; g < json_object_array_length(groups); g++) {
        json_object *rules = pt_json_path(json_object_array_get_idx(groups, g), "rules");

        for (gsize i = 0; i < json_object_array_length(rules); i++) {
            json_object *r = json_object_array_get_idx(rules, i);
            const char *name = pt_json_path_str(r, "name");

            n++;
            if (!g_str_equal(pt_json_path_str(r, "health"), "ok"))
                g_error("rule %s: health %s: %s", name, pt_json_path_str(r, "health"),
                        pt_json_path_str(r, "lastError"));
            if (!g_str_equal(pt_json_path_str(r, "type"), "alerting"))
                continue;
            alerts++;
            if (!g_str_equal(pt_json_path_str(r, "state"), "inactive"))
                g_error("alert %s is %s on a normal host: %s", name,
                        pt_json_path_str(r, "state"),
                        json_object_to_json_string(pt_json_path(r, "alerts")));
        }
    }
    g_test_message("%u rules evaluated, %u alerts inactive", n, alerts);
    g_assert_cmpuint(alerts, >=, 6);
    g_assert_cmpuint(n, >, alerts);
}

/*
 * Whether @query reads a ratio the rules leave out where its denominator
 * is 0 ("/ (... > 0)"): without I/O (-machine none has no disk) or CPU
 * spent polling there is none, and such a query rightly returns nothing
 * here; it must still run.
 */
static gboolean
reads_filtered_ratio(const char *query)
{
    g_autofree char *rules = read_source("contrib/prometheus", "polltune.rules.yml");
    g_autoptr(GRegex) split = g_regex_new("- (?:record|alert): ", 0, 0, NULL);
    g_auto(GStrv) chunks = g_regex_split(split, rules, 0);

    for (guint i = 1; chunks[i]; i++) {
        g_autofree char *name = g_strndup(chunks[i], strcspn(chunks[i], " \n"));

        if (strstr(query, name) && strstr(chunks[i], "> 0)"))
            return TRUE;
    }
    return FALSE;
}

static void
test_live(void)
{
    g_autofree char *why = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestPromHost) a = NULL;
    g_autoptr(PtTestPromHost) b = NULL;
    g_autoptr(PtTestProm) prom = NULL;
    g_autoptr(GPtrArray) docs = doc_queries();
    g_autoptr(json_object) dash = dashboard_load();
    g_autoptr(GPtrArray) panels = dashboard_queries(dash);
    g_autofree char *rules = contrib_path("polltune.rules.yml");
    g_autofree char *host_a = g_build_filename(tmp_dir, "a", NULL);
    g_autofree char *host_b = g_build_filename(tmp_dir, "b", NULL);
    g_autofree char *prom_dir = g_build_filename(tmp_dir, "prometheus", NULL);
    g_autofree char *config = NULL;
    g_autofree char *no_libvirt = NULL;
    const char *const qemu_args[] = { "-object", "iothread,id=iot0", "-object",
                                      "iothread,id=iot1", NULL };
    PromWait w;

    /* The documented queries are there to run, whatever can run here. */
    g_assert_cmpuint(docs->len, >=, 11);
    if (!pt_test_have_prometheus(&why) || !pt_test_have_qemu(&why)) {
        g_test_skip(why);
        return;
    }
    /* Two hosts, the same VM and iothread names on each.  a polls
     * (static); b polls nowhere and runs the shipped libvirt = true on a
     * host without libvirtd. */
    a = pt_test_prom_host_start(host_a, "vm-1", qemu_args, NULL, "static:50000/2/2", &err);
    g_assert_no_error(err);
    no_libvirt = g_strdup_printf("libvirt = true\nlibvirt-uri = "
                                 "qemu+unix:///system?socket=%s/libvirt-sock\n", host_b);
    b = pt_test_prom_host_start(host_b, "vm-1", qemu_args, no_libvirt, "off", &err);
    g_assert_no_error(err);

    g_assert_cmpint(g_mkdir(prom_dir, 0700), ==, 0);
    config = g_strdup_printf("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
                             "  evaluation_interval: 1s\n"
                             "rule_files:\n  - %s\n"
                             "scrape_configs:\n  - job_name: polltune\n    static_configs:\n"
                             "      - targets: ['127.0.0.1:%u', '127.0.0.1:%u']\n",
                             rules, a->port, b->port);
    prom = pt_test_prom_start(prom_dir, config, &err);
    g_assert_no_error(err);

    /* 20 scrapes of each host, and the rules recorded both hosts' four
     * iothreads.  Generous: two daemons, two QEMUs and the server share
     * two loaded cores. */
    w = (PromWait){ prom, "count by (instance) (count_over_time("
                          "polltune_iothread_cpu_seconds_total{polling=\"off\"}[1m]) >= 20)", 2 };
    g_assert_true(pt_test_wait(prom_has, &w, 180000));
    w = (PromWait){ prom, "domain_iothread:polltune_cores:rate1m", 4 };
    g_assert_true(pt_test_wait(prom_has, &w, 60000));
    w = (PromWait){ prom, "instance_outcome:polltune_decisions:rate5m", 2 };
    g_assert_true(pt_test_wait(prom_has, &w, 60000));

    for (guint i = 0; i < docs->len; i++)
        assert_query(prom, "docs/METRICS.md", docs->pdata[i], FALSE);
    for (guint i = 0; i < panels->len; i++)
        assert_query(prom, "polltune-dashboard.json", panels->pdata[i],
                     reads_filtered_ratio(panels->pdata[i]));
    /* The host variable: label_values(instance:polltune_iops:sum, instance). */
    {
        g_autoptr(json_object) r = pt_test_prom_query(prom, "count by (instance) "
                                                      "(instance:polltune_iops:sum)", &err);

        g_assert_no_error(err);
        g_assert_cmpuint(json_object_array_length(r), ==, 2);
    }
    assert_rules(prom);
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmp_dir = test_dir_new();
    g_test_add_func("/contrib/prometheus/promtool", test_promtool);
    g_test_add_func("/contrib/prometheus/scrape-config", test_scrape_config);
    g_test_add_func("/contrib/prometheus/dashboard", test_dashboard);
    g_test_add_func("/contrib/prometheus/live", test_live);
    rc = g_test_run();
    test_dir_remove(tmp_dir);
    g_free(tmp_dir);
    return rc;
}
