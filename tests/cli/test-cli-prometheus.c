/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl report --prometheus against a scripted HTTP peer: the
 * query_range replies are parsed and joined per host, domain and
 * iothread (the host label, else instance); the server's own error text
 * and an oversized reply come back as clear errors.  The real server is
 * tests/contrib/test-fleet.c; this runs everywhere, fast.
 */
#include <gio/gio.h>
#include <math.h>
#include <string.h>

#include "cli-testdb.h"
#include "qmp-json.h"
#include "store-testutil.h"

typedef enum {
    PEER_MATRIX,
    PEER_ERROR,
    PEER_HUGE,
} PeerMode;

static PeerMode mode;
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
    const char *value = strstr(query, "operations_total") ? "100" :
                        strstr(query, "flush_operations") ? "0" :
                        strstr(query, "io_time_seconds") ? "0.02" :
                        strstr(query, "cpu_seconds") ? "0.05" : "0.000032768";
    g_autoptr(GString) values = g_string_new(NULL);
    static const char *const metrics[] = {
        "{\"host\":\"h1\",\"instance\":\"10.0.0.1:9563\",\"domain\":\"vm\",\"iothread\":\"iot0\"}",
        "{\"instance\":\"10.0.0.2:9563\",\"domain\":\"vm\",\"iothread\":\"iot0\"}",
    };
    g_autoptr(GString) out = g_string_new("{\"status\":\"success\",\"data\":{\"resultType\":"
                                          "\"matrix\",\"result\":[");

    /* flush_operations also matches operations_total: test it first. */
    if (strstr(query, "flush_operations"))
        value = "0";
    for (double t = start; t <= end + 1e-6; t += step)
        g_string_append_printf(values, "%s[%.3f,\"%s\"]", values->len ? "," : "", t, value);
    if (g_str_has_prefix(query, "count(")) {
        g_string_append_printf(out, "{\"metric\":{},\"values\":[%s]}", values->str);
    } else {
        for (gsize i = 0; i < G_N_ELEMENTS(metrics); i++)
            g_string_append_printf(out, "%s{\"metric\":%s,\"values\":[%s]}", i ? "," : "",
                                   metrics[i], values->str);
    }
    g_string_append(out, "]}}");
    return g_string_free(g_steal_pointer(&out), FALSE);
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
run(CliRun *r, const char *out, gboolean json)
{
    g_autofree char *url = g_strdup_printf("http://127.0.0.1:%u/", port);
    const char *argv[] = { "report", "--prometheus", url, "--since", "2h",
                           "--selector", "job=\"polltune\"", "-o", out, json ? "--json" : NULL,
                           NULL };

    cli_run(r, argv);
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

        /* The host label, else the instance. */
        g_assert_true(g_str_equal(target, "h1/vm") || g_str_equal(target, "10.0.0.2:9563/vm"));
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(s, "iops_mean"))
                               - 100), <, 1e-6);
        g_assert_cmpfloat(fabs(json_object_get_double(json_object_object_get(
                                   s, "cpu_pct_mean")) - 5), <, 1e-6);
        g_assert_cmpint(json_object_get_int64(json_object_object_get(s, "poll_max_ns_last")),
                        ==, 32768);
    }
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    /* 0.02 s of I/O per second over 100 ops/s: 200 µs each. */
    g_assert_nonnull(strstr(html, "<td>200.0</td>"));
    g_assert_nonnull(strstr(html, "<td>h1</td>"));
    g_assert_nonnull(strstr(html, "<h2>Fleet</h2>"));
    /* The selector is in every query, the rates have windows. */
    g_mutex_lock(&lock);
    g_assert_cmpuint(queries->len, >=, 6);
    for (guint i = 0; i < queries->len; i++)
        g_assert_nonnull(strstr(g_ptr_array_index(queries, i), "{job=\"polltune\"}"));
    g_assert_nonnull(strstr(g_ptr_array_index(queries, queries->len - 2),
                            "rate(polltune_iothread_cpu_seconds_total{job=\"polltune\"}["));
    g_ptr_array_set_size(queries, 0);
    g_mutex_unlock(&lock);
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
    rc = g_test_run();
    /* The listener goes only once the peer no longer waits on it. */
    g_cancellable_cancel(stop);
    g_thread_join(peer);
    g_object_unref(stop);
    g_ptr_array_unref(queries);
    return rc;
}
