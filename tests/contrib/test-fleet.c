/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl report --prometheus against the real thing: Debian's
 * prometheus server on 127.0.0.1 with a private data directory scrapes
 * three polltuned, each standing for a host (labels host="ha", "hb",
 * "hc") and tuning its own QEMU.  Every QEMU's VM is named vm-1, so only
 * the instance or the host label tells them apart.  A second job scrapes
 * the same daemons with one host label on the whole target list, as the
 * shipped scrape configuration once did: keyed on instance the fleet is
 * still three hosts, keyed on that label it is refused, not merged.  The hosts run different policies (off,
 * static 70000 ns, QEMU's default) so that each host's figures differ.
 *
 * The fleet report is then checked against each daemon's own history: the
 * same report read from that host's sqlite file (polltunectl --db) over
 * the fleet report's range.  -machine none serves no I/O, so IOPS are 0
 * on both sides; poll-max-ns, the time polling was on and the iothread's
 * CPU are compared.
 */
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <sys/wait.h>

#include "pt-test-prom.h"
#include "qmp-json.h"
#include "store-testutil.h"

#define N_HOSTS 3

static const struct {
    const char *host, *policy;
    gint64 max_ns;
} hosts[N_HOSTS] = {
    { "ha", "off", 0 },
    { "hb", "static:70000/2/2", 70000 },
    { "hc", "qemu-default", 32768 },
};

static char *tmp_dir;
static PtTestProm *prom;

/* Figures of the report's --json summary that come from the gain
 * counters, and how far a range's edges may move them: a share by a tick
 * or two of a range of 15 s or more, cores by a rounding. */
static const struct {
    const char *key;
    double tolerance;
} gain_keys[] = {
    { "cores_saved_mean", 1e-4 },
    { "iops_gained_mean", 1e-3 },
    { "polling_cores_mean", 1e-4 },
    { "polling_cpu_pct", 1e-2 },
    { "unmeasured_share", 0.15 },
};

/* Each host's iothread has been scraped at least @want times in the last
 * minute: enough for rates and a range to compare over. */
static gboolean
prom_has_data(gpointer want)
{
    g_autofree char *q = g_strdup_printf("count by (host) (count_over_time("
                                         "polltune_iothread_cpu_seconds_total{job=\"polltune\"}"
                                         "[1m]) >= %u)", GPOINTER_TO_UINT(want));
    g_autoptr(json_object) r = pt_test_prom_query(prom, q, NULL);

    return r && json_object_array_length(r) == N_HOSTS;
}

static PtTestPromHost *
host_start(guint i)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = g_build_filename(tmp_dir, hosts[i].host, NULL);
    const char *const args[] = { "-object", "iothread,id=iot0", NULL };
    PtTestPromHost *h = pt_test_prom_host_start(dir, "vm-1", args, NULL, hosts[i].policy, &err);

    g_assert_no_error(err);
    return h;
}

static PtTestProm *
prometheus_start(PtTestPromHost **h)
{
    g_autofree char *dir = g_build_filename(tmp_dir, "prometheus", NULL);
    g_autoptr(GString) conf = g_string_new("global:\n  scrape_interval: 1s\n"
                                           "  scrape_timeout: 1s\nscrape_configs:\n"
                                           "  - job_name: polltune\n    static_configs:\n");
    g_autoptr(GError) err = NULL;
    PtTestProm *p;

    for (guint i = 0; i < N_HOSTS; i++)
        g_string_append_printf(conf, "      - targets: ['127.0.0.1:%u']\n"
                               "        labels: {host: '%s'}\n", h[i]->port, hosts[i].host);
    g_string_append(conf, "  - job_name: trap\n    static_configs:\n      - targets:\n");
    for (guint i = 0; i < N_HOSTS; i++)
        g_string_append_printf(conf, "          - 127.0.0.1:%u\n", h[i]->port);
    g_string_append(conf, "        labels:\n          host: localhost\n");
    g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
    p = pt_test_prom_start(dir, conf->str, &err);
    g_assert_no_error(err);
    return p;
}

static json_object *
run_report(const char *const *args)
{
    const char *exe = g_getenv("PT_POLLTUNECTL");
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autofree char *out = NULL, *err = NULL;
    int status = 0;
    json_object *j;

    g_assert_nonnull(exe);
    g_ptr_array_add(argv, (char *)exe);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err, &status, NULL));
    g_test_message("%s report: %s", args[0], err);
    g_assert_cmpstr(err, ==, "");
    g_assert_true(g_spawn_check_wait_status(status, NULL));
    j = json_tokener_parse(out);
    g_assert_nonnull(j);
    return j;
}

static json_object *
series_find(json_object *report, const char *target, const char *iothread)
{
    json_object *a = pt_json_path(report, "series");

    for (gsize i = 0; a && i < json_object_array_length(a); i++) {
        json_object *s = json_object_array_get_idx(a, i);

        if (g_str_equal(pt_json_path_str(s, "target"), target) &&
            g_str_equal(pt_json_path_str(s, "iothread"), iothread))
            return s;
    }
    return NULL;
}

static double
num(json_object *o, const char *key)
{
    json_object *v = pt_json_path(o, key);

    return v ? json_object_get_double(v) : NAN;
}

/* The "trap" job: one host label for every target.  Keyed on instance,
 * three hosts; keyed on the label, an error naming two instances. */
static void
check_trap(const char *url, PtTestPromHost *const *h)
{
    const char *exe = g_getenv("PT_POLLTUNECTL");
    g_autofree char *out = g_build_filename(tmp_dir, "trap.html", NULL);
    g_autoptr(json_object) fleet = NULL;
    g_autofree char *err = NULL;
    guint named = 0;
    int status = 0;

    fleet = run_report((const char *[]){ "report", "--prometheus", url, "--selector",
                                         "job=\"trap\"", "--scrape-interval", "1s", "--json",
                                         "-o", out, NULL });
    g_assert_cmpuint(json_object_array_length(pt_json_path(fleet, "series")), ==, N_HOSTS);
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree char *target = g_strdup_printf("127.0.0.1:%u/vm-1", h[i]->port);

        g_assert_nonnull(series_find(fleet, target, "iot0"));
    }
    g_unlink(out);
    {
        const char *argv[] = { exe, "report", "--prometheus", url, "--selector",
                               "job=\"trap\"", "--host-label", "host", "--scrape-interval",
                               "1s", "-o", out, NULL };

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL,
                                   NULL, NULL, &err, &status, NULL));
    }
    g_test_message("trap with --host-label host: %s", err);
    g_assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 1);
    g_assert_nonnull(strstr(err, "host=localhost, vm-1/iot0 comes from two targets"));
    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree char *inst = g_strdup_printf("instance 127.0.0.1:%u (job trap)", h[i]->port);

        named += strstr(err, inst) != NULL;
    }
    g_assert_cmpuint(named, ==, 2);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
}

static void
test_fleet(void)
{
    g_autofree char *why = NULL;
    g_autofree char *url = NULL, *out = NULL, *html = NULL;
    g_autoptr(json_object) fleet = NULL;
    PtTestPromHost *h[N_HOSTS] = { 0 };
    gint64 from, to;

    if (!pt_test_have_prometheus(&why) || !pt_test_have_qemu(&why)) {
        g_test_skip(why);
        return;
    }
    for (guint i = 0; i < N_HOSTS; i++)
        h[i] = host_start(i);
    prom = prometheus_start(h);
    /* 20 scrapes of each host: rates over 4 s windows and a range of
     * several steps.  Generous: three daemons, three QEMUs and the server
     * share two loaded cores. */
    g_assert_true(pt_test_wait(prom_has_data, GUINT_TO_POINTER(20), 180000));

    url = g_strdup_printf("http://127.0.0.1:%u", prom->port);
    out = g_build_filename(tmp_dir, "fleet.html", NULL);
    fleet = run_report((const char *[]){ "report", "--prometheus", url, "--selector",
                                         "job=\"polltune\"", "--host-label", "host",
                                         "--scrape-interval", "1s", "--json", "-o", out,
                                         NULL });
    from = (gint64)num(fleet, "from_ms");
    to = (gint64)num(fleet, "to_ms");
    g_test_message("fleet range %.1f s", (to - from) / 1000.0);
    g_assert_cmpint(to - from, >=, 15000);
    g_assert_cmpuint(json_object_array_length(pt_json_path(fleet, "series")), ==, N_HOSTS);
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    /* The server's address is named in the header, never fetched from. */
    g_assert_null(strstr(html, " src="));
    g_assert_null(strstr(html, "href="));
    g_assert_null(strstr(html, "url("));
    g_assert_null(strstr(html, "NaN"));

    for (guint i = 0; i < N_HOSTS; i++) {
        g_autofree char *target = g_strdup_printf("%s/vm-1", hosts[i].host);
        g_autofree char *hout = g_build_filename(tmp_dir, "host.html", NULL);
        g_autofree char *a_since = NULL, *a_until = NULL;
        g_autoptr(GDateTime) f = g_date_time_new_from_unix_utc(from / 1000);
        g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(to / 1000);
        g_autoptr(json_object) own = NULL;
        json_object *fs = series_find(fleet, target, "iot0"), *os;

        a_since = g_date_time_format_iso8601(f);
        a_until = g_date_time_format_iso8601(t);
        own = run_report((const char *[]){ "--db", h[i]->d->db_path, "report", "--since",
                                           a_since, "--until", a_until, "--resolution", "raw",
                                           "--json", "-o", hout, NULL });
        /* The host's own history keeps the VM under its identity, the
         * socket's path. */
        {
            g_autofree char *sock = g_build_filename(h[i]->dir, "vm-1.qmp", NULL);

            os = series_find(own, sock, "iot0");
        }
        g_assert_nonnull(fs);
        g_assert_nonnull(os);
        /* Grouped by host, then domain. */
        {
            g_autofree char *heading = g_strdup_printf("<h3>%s</h3>", target);
            g_autofree char *hrow = g_strdup_printf("<tr><td>%s</td><td>1</td><td>1</td>",
                                                    hosts[i].host);

            g_assert_nonnull(strstr(html, heading));
            g_assert_nonnull(strstr(html, hrow));
        }
        g_test_message("%s: fleet cpu %.3f %% polling %.2f max %g; own cpu %.3f %% polling "
                       "%.2f max %g", target, num(fs, "cpu_pct_mean"),
                       num(fs, "polling_share"), num(fs, "poll_max_ns_last"),
                       num(os, "cpu_pct_mean"), num(os, "polling_share"),
                       num(os, "poll_max_ns_last"));
        /* The setting each host's policy wrote, seen the same both ways. */
        g_assert_cmpfloat(num(fs, "poll_max_ns_last"), ==, hosts[i].max_ns);
        g_assert_cmpfloat(num(os, "poll_max_ns_last"), ==, hosts[i].max_ns);
        g_assert_cmpfloat(fabs(num(fs, "polling_share") - num(os, "polling_share")), <, 0.15);
        /* An idle iothread: a fraction of a percent of a core either way;
         * Prometheus's rates smooth over windows the sqlite ticks do not. */
        g_assert_cmpfloat(fabs(num(fs, "cpu_pct_mean") - num(os, "cpu_pct_mean")), <, 1.0);
        /* No I/O without a guest: none invented. */
        g_assert_false(num(fs, "iops_mean") > 0);
        /* The gains against QEMU's default: the daemon's counters divided
         * over the range, and the same ticks replayed from its store, give
         * the same figures, or none both ways (idle ticks at 70000 are
         * unmeasured; without an off/on pair polling has no figure). */
        for (guint k = 0; k < G_N_ELEMENTS(gain_keys); k++) {
            double a = num(fs, gain_keys[k].key), b = num(os, gain_keys[k].key);

            g_test_message("%s: %s fleet %g, own %g", target, gain_keys[k].key, a, b);
            g_assert_cmpint(isnan(a), ==, isnan(b));
            if (!isnan(a))
                g_assert_cmpfloat(fabs(a - b), <=, gain_keys[k].tolerance);
        }
    }

    check_trap(url, h);
    g_clear_pointer(&prom, pt_test_prom_free);
    for (guint i = 0; i < N_HOSTS; i++)
        pt_test_prom_host_free(h[i]);
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    tmp_dir = test_dir_new();
    g_test_add_func("/contrib/fleet-report", test_fleet);
    rc = g_test_run();
    test_dir_remove(tmp_dir);
    g_free(tmp_dir);
    return rc;
}
