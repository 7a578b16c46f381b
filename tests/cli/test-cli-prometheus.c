/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl report --prometheus against a scripted HTTP peer: the
 * query_range replies are parsed and joined per host (instance, or the
 * label --host-label names), domain and iothread; two targets behind one
 * host name are refused, not summed.  And what a real server cannot be
 * made to send: its own error text, an oversized reply, out-of-range
 * times, JSON with an error status, garbage, a reply trickled a byte at a
 * time, and a reply of 200,000 empty series, each a clear error within the
 * timeout and in bounded memory.  The real server is
 * tests/contrib/test-fleet.c; this runs everywhere, fast.
 */
#include <gio/gio.h>
#include <math.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cli-testdb.h"
#include "qmp-json.h"
#include "store-testutil.h"

typedef enum {
    PEER_MATRIX,
    PEER_SAME_HOST,             /* two instances, one host label value */
    PEER_ERROR,
    PEER_ERROR_CONTROLS,
    PEER_HUGE,
    PEER_TIME,                  /* one sample at time bad_time */
    PEER_STATUS,                /* a success reply with HTTP bad_status */
    PEER_GARBAGE,
    PEER_SLOW,                  /* a byte every 100 ms */
    PEER_MANY,                  /* n_series series, n_values samples each */
} PeerMode;

static PeerMode mode;
static const char *bad_time;
static guint bad_status;
static guint n_series, n_values;
static guint16 port;
static GPtrArray *queries;      /* decoded query= of each request */
static GMutex lock;
static GCancellable *stop;      /* ends the peer's accept loop */

static double
param(const char *path, const char *name)
{
    g_autofree char *key = g_strconcat(name, "=", NULL);
    const char *p = strstr(path, key);

    g_assert_nonnull(p);
    return g_ascii_strtod(p + strlen(key), NULL);
}

static char *
matrix_reply(const char *query, const char *path)
{
    double start = param(path, "start"), end = param(path, "end"), step = param(path, "step");
    /* The gain counters' increases over the range (docs/METRICS.md): an
     * hour known, half at the default; 100 ops/s gained, 0.01 cores
     * saved and 0.02 cores polling over it, 4 % of a core over the half
     * hour polling was on. */
    static const char *const gains[][2] = {
        { "gain_known_seconds", "3600" }, { "gain_default_seconds", "1800" },
        { "gain_measured_seconds", "1800" }, { "gain_ops_total", "360000" },
        { "gain_lost_ops", "0" }, { "cpu_saved_seconds", "54" }, { "cpu_spent_seconds", "18" },
        { "polling_cpu_seconds", "72" }, { "polling_measured_seconds", "3600" },
        { "polling_on_seconds", "1800" },
    };
    const char *value = strstr(query, "operations_total") ? "100" :
                        strstr(query, "flush_operations") ? "0" :
                        strstr(query, "io_time_seconds") ? "0.02" :
                        strstr(query, "cpu_seconds") ? "0.05" : "0.000032768";
    g_autoptr(GString) values = g_string_new(NULL);
    static const char *const metrics[] = {
        "{\"job\":\"polltune\",\"host\":\"h1\",\"instance\":\"10.0.0.1:9563\","
        "\"domain\":\"vm\",\"iothread\":\"iot0\"}",
        "{\"job\":\"polltune\",\"host\":\"h2\",\"instance\":\"10.0.0.2:9563\","
        "\"domain\":\"vm\",\"iothread\":\"iot0\"}",
    };
    /* contrib/prometheus.yml's old trap: one host label on a target list. */
    static const char *const same_host[] = {
        "{\"job\":\"polltune\",\"host\":\"localhost\",\"instance\":\"10.0.0.1:9563\","
        "\"domain\":\"vm\",\"iothread\":\"iot0\"}",
        "{\"job\":\"polltune\",\"host\":\"localhost\",\"instance\":\"10.0.0.2:9563\","
        "\"domain\":\"vm\",\"iothread\":\"iot0\"}",
    };
    const char *const *labels = mode == PEER_SAME_HOST ? same_host : metrics;
    g_autoptr(GString) out = g_string_new("{\"status\":\"success\",\"data\":{\"resultType\":"
                                          "\"matrix\",\"result\":[");

    /* flush_operations also matches operations_total: test it first. */
    if (strstr(query, "flush_operations"))
        value = "0";
    for (gsize i = 0; strstr(query, "increase(") && i < G_N_ELEMENTS(gains); i++)
        if (strstr(query, gains[i][0]))
            value = gains[i][1];
    for (double t = start; t <= end + 1e-6; t += step)
        g_string_append_printf(values, "%s[%.3f,\"%s\"]", values->len ? "," : "", t, value);
    if (g_str_has_prefix(query, "count(")) {
        g_string_append_printf(out, "{\"metric\":{},\"values\":[%s]}", values->str);
    } else {
        for (gsize i = 0; i < G_N_ELEMENTS(metrics); i++)
            g_string_append_printf(out, "%s{\"metric\":%s,\"values\":[%s]}", i ? "," : "",
                                   labels[i], values->str);
    }
    g_string_append(out, "]}}");
    return g_string_free(g_steal_pointer(&out), FALSE);
}

/* The extent query's reply with one sample at @t (as the JSON text). */
static char *
time_reply(const char *t)
{
    return g_strdup_printf("{\"status\":\"success\",\"data\":{\"resultType\":\"matrix\","
                           "\"result\":[{\"metric\":{},\"values\":[[%s,\"1\"]]}]}}", t);
}

/* n_series series of n_values samples each, at the range's first steps. */
static char *
many_reply(const char *path)
{
    double start = param(path, "start"), step = param(path, "step");
    GString *out = g_string_new("{\"status\":\"success\",\"data\":{\"resultType\":"
                                "\"matrix\",\"result\":[");

    for (guint i = 0; i < n_series; i++) {
        g_string_append_printf(out, "%s{\"metric\":{\"job\":\"p\",\"instance\":\"h%u\","
                               "\"domain\":\"vm\",\"iothread\":\"iot0\"},\"values\":[",
                               i ? "," : "", i);
        for (guint k = 0; k < n_values; k++)
            g_string_append_printf(out, "%s[%.3f,\"1\"]", k ? "," : "", start + k * step);
        g_string_append(out, "]}");
    }
    g_string_append(out, "]}}");
    return g_string_free(out, FALSE);
}

/* Sends @text a byte at a time, 100 ms apart, until the client leaves or
 * 30 s have passed. */
static void
trickle(GOutputStream *out, const char *text)
{
    gint64 end = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;

    for (const char *p = text; *p && g_get_monotonic_time() < end; p++) {
        if (!g_output_stream_write_all(out, p, 1, NULL, NULL, NULL) ||
            !g_output_stream_flush(out, NULL, NULL))
            return;
        g_usleep(100000);
    }
}

static void
serve_one(GSocketConnection *c)
{
    GInputStream *in = g_io_stream_get_input_stream(G_IO_STREAM(c));
    GOutputStream *out = g_io_stream_get_output_stream(G_IO_STREAM(c));
    g_autoptr(GString) req = g_string_new(NULL);
    g_autofree char *path = NULL, *query = NULL, *body = NULL, *head = NULL;
    const char *q, *amp;
    guint status = 200;
    char buf[4096];

    while (!strstr(req->str, "\r\n\r\n")) {
        gssize got = g_input_stream_read(in, buf, sizeof(buf), NULL, NULL);

        if (got <= 0)
            return;
        g_string_append_len(req, buf, got);
    }
    path = g_strndup(req->str + 4, strcspn(req->str + 4, " "));
    q = strstr(path, "query=");
    g_assert_nonnull(q);
    amp = strchr(q, '&');
    {
        g_autofree char *raw = g_strndup(q + 6, amp ? (gsize)(amp - q - 6) : strlen(q + 6));

        query = g_uri_unescape_string(raw, NULL);
    }
    g_mutex_lock(&lock);
    g_ptr_array_add(queries, g_strdup(query));
    g_mutex_unlock(&lock);
    if (mode == PEER_ERROR) {
        status = 400;
        body = g_strdup("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
                        "\"1:10: parse error: unexpected character: '!'\"}");
    } else if (mode == PEER_TIME) {
        body = time_reply(bad_time);
    } else if (mode == PEER_STATUS) {
        /* A proxy's or another program's JSON: well-formed, "success". */
        status = bad_status;
        body = matrix_reply(query, path);
    } else if (mode == PEER_GARBAGE) {
        body = g_strdup("\x01\x02<html>not JSON\xff{{[[");
    } else if (mode == PEER_SLOW) {
        body = matrix_reply(query, path);
    } else if (mode == PEER_MANY) {
        body = g_str_has_prefix(query, "count(") ? matrix_reply(query, path) : many_reply(path);
    } else if (mode == PEER_ERROR_CONTROLS) {
        /* A window title (OSC ... BEL) and a clear screen. */
        status = 400;
        body = g_strdup("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":"
                        "\"boom\\u001b]0;owned\\u0007\\u001b[2J\\nsecond line\"}");
    } else if (mode == PEER_HUGE) {
        /* Valid JSON, 33 MiB of it: over the limit however it ends. */
        gsize n = 33u * 1024 * 1024;

        body = g_malloc(n + 1);
        memset(body, ' ', n);
        body[0] = '{';
        body[n - 1] = '}';
        body[n] = '\0';
    } else {
        body = matrix_reply(query, path);
    }
    head = g_strdup_printf("HTTP/1.1 %u X\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n", status,
                           strlen(body));
    g_output_stream_write_all(out, head, strlen(head), NULL, NULL, NULL);
    if (mode == PEER_SLOW)
        trickle(out, body);
    else
        g_output_stream_write_all(out, body, strlen(body), NULL, NULL, NULL);
    g_io_stream_close(G_IO_STREAM(c), NULL, NULL);
}

static gpointer
serve(gpointer data)
{
    GSocketListener *l = data;

    for (;;) {
        g_autoptr(GSocketConnection) c = g_socket_listener_accept(l, NULL, stop, NULL);

        if (!c)
            return NULL;
        serve_one(c);
    }
}

static void
run_with(CliRun *r, const char *out, const char *const *extra)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/", port);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    const char *base[] = { "report", "--prometheus", url, "--since", "2h",
                           "--selector", "job=\"polltune\"", "-o", out };

    for (gsize i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(argv, (char *)base[i]);
    for (const char *const *e = extra; e && *e; e++)
        g_ptr_array_add(argv, (char *)*e);
    g_ptr_array_add(argv, NULL);
    cli_run(r, (const char *const *)argv->pdata);
}

static void
run(CliRun *r, const char *out, gboolean json)
{
    run_with(r, out, (const char *[]){ json ? "--json" : NULL, NULL });
}

/* Runs polltunectl as run_with does; returns its peak resident memory in
 * KiB and its running time in seconds. */
static long
run_measured(CliRun *r, const char *out, const char *const *extra, double *seconds)
{
    const char *exe = g_getenv("PT_POLLTUNECTL");
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/", port);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    const char *base[] = { exe, "report", "--prometheus", url, "--since", "2h", "-o", out };
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();
    struct rusage ru = { 0 };
    GPid pid;
    int fd_err = -1, wstatus = 0;
    char buf[4096];
    gssize got;
    g_autoptr(GString) text = g_string_new(NULL);
    g_auto(GStrv) env = g_get_environ();
    g_autofree char *asan = NULL;

    /* AddressSanitizer keeps freed memory in quarantine (256 MB): what is
     * measured is then its, not ours. */
    asan = g_strdup_printf("%s%squarantine_size_mb=0",
                           g_environ_getenv(env, "ASAN_OPTIONS") ?: "",
                           g_environ_getenv(env, "ASAN_OPTIONS") ? ":" : "");
    env = g_environ_setenv(env, "ASAN_OPTIONS", asan, TRUE);
    for (gsize i = 0; i < G_N_ELEMENTS(base); i++)
        g_ptr_array_add(argv, (char *)base[i]);
    for (const char *const *e = extra; e && *e; e++)
        g_ptr_array_add(argv, (char *)*e);
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_async_with_pipes(NULL, (char **)argv->pdata, env,
                                           G_SPAWN_DO_NOT_REAP_CHILD |
                                           G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, &pid, NULL,
                                           NULL, &fd_err, &err));
    g_assert_no_error(err);
    while ((got = read(fd_err, buf, sizeof(buf))) > 0)
        g_string_append_len(text, buf, got);
    close(fd_err);
    /* wait4: this child's own peak, not the largest of all children. */
    g_assert_cmpint(wait4(pid, &wstatus, 0, &ru), ==, pid);
    g_spawn_close_pid(pid);
    *seconds = (g_get_monotonic_time() - t0) / 1e6;
    cli_run_clear(r);
    r->err = g_string_free(g_steal_pointer(&text), FALSE);
    r->out = g_strdup("");
    r->status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    return ru.ru_maxrss;
}

static void
test_matrix(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    g_autoptr(json_object) j = NULL;
    g_autofree char *html = NULL;
    json_object *series;
    CliRun r = { 0 };
    guint rates = 0;

    mode = PEER_MATRIX;
    run(&r, out, TRUE);
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    j = json_tokener_parse(r.out);
    series = json_object_object_get(j, "series");
    g_assert_cmpuint(json_object_array_length(series), ==, 2);
    for (gsize i = 0; i < 2; i++) {
        json_object *s = json_object_array_get_idx(series, i);
        const char *target = json_object_get_string(json_object_object_get(s, "target"));

        /* Hosts are their instance unless told otherwise. */
        g_assert_true(g_str_equal(target, "10.0.0.1:9563/vm") ||
                      g_str_equal(target, "10.0.0.2:9563/vm"));
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(s, "iops_mean"))
                               - 100), <, 1e-6);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "cpu_pct_mean")) - 5), <, 1e-6);
        g_assert_cmpint(json_object_get_int64(json_object_object_get(s, "poll_max_ns_last")),
                        ==, 32768);
        /* The gain figures are the counters' increases divided, not a
         * replay of rates over scrapes. */
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "iops_gained_mean")) - 100), <, 1e-6);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "cores_saved_mean")) - 0.01), <, 1e-9);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "polling_cores_mean")) - 0.02), <, 1e-9);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "polling_cpu_pct")) - 4), <, 1e-9);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "unmeasured_share"))), <, 1e-9);
    }
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    /* 0.02 s of I/O per second over 100 ops/s: 200 µs each. */
    g_assert_nonnull(strstr(html, "<td>200.0</td>"));
    g_assert_nonnull(strstr(html, "<td>10.0.0.1:9563</td>"));
    g_assert_nonnull(strstr(html, "<h2 id=\"scope\">Fleet</h2>"));
    /* The selector is in every query, the rates have windows. */
    g_mutex_lock(&lock);
    g_assert_cmpuint(queries->len, >=, 6);
    for (guint i = 0; i < queries->len; i++)
        g_assert_nonnull(strstr(g_ptr_array_index(queries, i), "{job=\"polltune\"}"));
    for (guint i = 0; i < queries->len; i++) {
        const char *q = g_ptr_array_index(queries, i);

        if (strstr(q, "rate(polltune_iothread_cpu_seconds_total{job=\"polltune\"}[") ||
            strstr(q, "increase(polltune_iothread_gain_known_seconds_total{job=\"polltune\"}[")) {
            /* The scrape target is kept apart in every series. */
            g_assert_nonnull(strstr(q, "sum by (job, instance, domain, iothread)"));
            rates++;
        }
    }
    g_assert_cmpuint(rates, ==, 2);
    g_ptr_array_set_size(queries, 0);
    g_mutex_unlock(&lock);
    cli_run_clear(&r);
    test_dir_remove(dir);
}

/* --host-label names hosts by another label: a value shared by two scrape
 * targets is refused, naming both, rather than summed into one row. */
static void
test_host_label(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    g_autofree char *html = NULL;
    CliRun r = { 0 };

    mode = PEER_MATRIX;
    run_with(&r, out, (const char *[]){ "--host-label", "host", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    g_assert_nonnull(strstr(html, "<h3>h1/vm</h3>"));
    g_assert_nonnull(strstr(html, "<h3>h2/vm</h3>"));
    g_mutex_lock(&lock);
    g_assert_nonnull(strstr(g_ptr_array_index(queries, queries->len - 1),
                            "by (job, instance, domain, iothread, host)"));
    g_mutex_unlock(&lock);
    g_unlink(out);

    mode = PEER_SAME_HOST;
    run_with(&r, out, (const char *[]){ "--host-label", "host", NULL });
    g_test_message("%s", r.err);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "host=localhost, vm/iot0 comes from two targets"));
    g_assert_nonnull(strstr(r.err, "10.0.0.1:9563"));
    g_assert_nonnull(strstr(r.err, "10.0.0.2:9563"));
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    /* Keyed on instance, the same fleet is two hosts. */
    run_with(&r, out, NULL);
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_file_test(out, G_FILE_TEST_EXISTS));

    run_with(&r, out, (const char *[]){ "--host-label", "9host", NULL });
    g_assert_cmpint(r.status, ==, 2);
    g_assert_nonnull(strstr(r.err, "--host-label 9host: not a label name"));
    cli_run_clear(&r);
    test_dir_remove(dir);
}

/* A sample time no server could have answered for the range asked is an
 * error before any arithmetic on it: no overflow, no abort. */
static void
test_bad_times(void)
{
    static const char *const times[] = { "1e19", "-1e19", "1e300", "-1e300", "NaN",
                                         "Infinity", "-Infinity", "\"1733270400\"", "17",
                                         NULL };
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    CliRun r = { 0 };

    mode = PEER_TIME;
    for (const char *const *t = times; *t; t++) {
        bad_time = *t;
        run(&r, out, FALSE);
        g_test_message("time %s: status %d: %s", *t, r.status, r.err);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_true(strstr(r.err, "outside the range asked") ||
                      strstr(r.err, "not a JSON API reply") ||
                      strstr(r.err, "is not [time, \"value\"]"));
        g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    }
    cli_run_clear(&r);
    test_dir_remove(dir);
}

/* JSON that says "success" with HTTP 404 or 500 is not data; garbage is
 * named as such. */
static void
test_bad_status(void)
{
    static const guint statuses[] = { 404, 500, 302 };
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    CliRun r = { 0 };

    mode = PEER_STATUS;
    for (gsize i = 0; i < G_N_ELEMENTS(statuses); i++) {
        g_autofree char *want = g_strdup_printf("HTTP %u: not a successful API reply",
                                                statuses[i]);

        bad_status = statuses[i];
        run(&r, out, FALSE);
        g_test_message("HTTP %u: %s", statuses[i], r.err);
        g_assert_cmpint(r.status, ==, 1);
        g_assert_nonnull(strstr(r.err, want));
        g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    }
    mode = PEER_GARBAGE;
    run(&r, out, FALSE);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "HTTP 200, not a JSON API reply"));
    cli_run_clear(&r);
    test_dir_remove(dir);
}

/* A server that sends a byte every 100 ms never lets a per-read timeout
 * fire; the whole exchange still ends at --timeout. */
static void
test_slow(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    CliRun r = { 0 };
    double secs = 0;

    mode = PEER_SLOW;
    run_measured(&r, out, (const char *[]){ "--timeout", "2", NULL }, &secs);
    g_test_message("%.1f s: %s", secs, r.err);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "no complete reply within 2 s for the whole report"));
    /* The deadline, plus starting and stopping on a loaded machine. */
    g_assert_cmpfloat(secs, <, 10);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    cli_run_clear(&r);
    test_dir_remove(dir);
}

/* 200,000 empty series in one 18 MB reply are refused before they are
 * parsed; 15,000 empty series, within the limit, cost what parsing them
 * costs and nothing per series and step: no polltune series, no memory. */
static void
test_many_series(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    CliRun r = { 0 };
    double secs = 0;
    long rss, rss_small;

    mode = PEER_MANY;
    n_values = 0;
    n_series = 200000;
    rss = run_measured(&r, out, NULL, &secs);
    g_test_message("200,000 empty series: %.1f s, %ld KiB: %s", secs, rss, r.err);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "the reply holds more than 20000 series"));
    g_assert_cmpfloat(secs, <, 60);

    n_series = 10;
    rss_small = run_measured(&r, out, NULL, &secs);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "no polltune iothread series"));
    n_series = 15000;
    rss = run_measured(&r, out, NULL, &secs);
    g_test_message("15,000 empty series: %.1f s, %ld KiB (10: %ld KiB): %s", secs, rss,
                   rss_small, r.err);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "no polltune iothread series"));
    /* Five families of about 250 doubles for each would be 150 MB; the
     * parse of the 1.5 MB reply is about 35. */
    g_assert_cmpint(rss - rss_small, <, 100 * 1024);
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    cli_run_clear(&r);
    test_dir_remove(dir);
}

static void
test_errors(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "fleet.html", NULL);
    CliRun r = { 0 };

    mode = PEER_ERROR;
    run(&r, out, FALSE);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "HTTP 400: 1:10: parse error: unexpected character"));
    g_assert_nonnull(strstr(r.err, "count(polltune_poll_max_seconds{job=\"polltune\"})"));
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));

    /* The server's text, its control characters written out. */
    mode = PEER_ERROR_CONTROLS;
    run(&r, out, FALSE);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_null(strchr(r.err, '\033'));
    g_assert_null(strchr(r.err, '\007'));
    g_assert_nonnull(strstr(r.err, "HTTP 400: boom\\x1b]0;owned\\x07\\x1b[2J\\nsecond line\n"));
    g_assert_cmpint(strchr(r.err, '\n') - r.err, ==, strlen(r.err) - 1);

    mode = PEER_HUGE;
    run(&r, out, FALSE);
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "the reply is larger than 32 MiB"));
    g_assert_false(g_file_test(out, G_FILE_TEST_EXISTS));
    cli_run_clear(&r);
    test_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_autoptr(GSocketListener) l = g_socket_listener_new();
    g_autoptr(GInetAddress) lo = g_inet_address_new_loopback(G_SOCKET_FAMILY_IPV4);
    g_autoptr(GSocketAddress) any = g_inet_socket_address_new(lo, 0);
    g_autoptr(GSocketAddress) bound = NULL;
    g_autoptr(GError) err = NULL;
    GThread *peer;
    int rc;

    g_test_init(&argc, &argv, NULL);
    queries = g_ptr_array_new_with_free_func(g_free);
    stop = g_cancellable_new();
    g_assert_true(g_socket_listener_add_address(l, any, G_SOCKET_TYPE_STREAM,
                                                G_SOCKET_PROTOCOL_TCP, NULL, &bound, &err));
    g_assert_no_error(err);
    port = g_inet_socket_address_get_port(G_INET_SOCKET_ADDRESS(bound));
    peer = g_thread_new("peer", serve, l);
    g_test_add_func("/cli/prometheus/matrix", test_matrix);
    g_test_add_func("/cli/prometheus/errors", test_errors);
    g_test_add_func("/cli/prometheus/host-label", test_host_label);
    g_test_add_func("/cli/prometheus/bad-times", test_bad_times);
    g_test_add_func("/cli/prometheus/bad-status", test_bad_status);
    g_test_add_func("/cli/prometheus/slow", test_slow);
    g_test_add_func("/cli/prometheus/many-series", test_many_series);
    rc = g_test_run();
    /* The listener goes only once the peer no longer waits on it. */
    g_cancellable_cancel(stop);
    g_thread_join(peer);
    g_object_unref(stop);
    g_ptr_array_unref(queries);
    return rc;
}
