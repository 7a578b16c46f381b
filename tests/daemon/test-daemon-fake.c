/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The real polltuned against scripted QEMUs (qmp-fake-monitor.h), for
 * what a real QEMU cannot be made to do here: a host with 4096 iothreads,
 * and a monitor whose error descriptions carry newlines and terminal
 * escapes.
 *
 * The fake answers on this process's main loop; the daemon runs as a
 * child and is asked from a second thread, so that the fake keeps
 * answering while the test waits.
 */
#include "pt-test-daemon.h"
#include "qmp-fake-monitor.h"
#include "qmp-json.h"

#include <string.h>
#include <glib/gstdio.h>

/* The largest host the control socket's reply limit is sized for
 * (QMP_CONTROL_MAX_REPLY in qmp/qmp-stream.h), and the bound per iothread
 * behind it. */
#define BIG_IOTHREADS 4096
#define STATUS_BYTES_PER_IOTHREAD (6 * 1024)
/* The output limit a status reply used to be held to. */
#define OLD_OUT_MAX (4 * 1024 * 1024)

typedef struct {
    guint n;                    /* iothreads iot0..iotN-1 */
    guint64 *max_ns;            /* poll-max-ns as qom-set left it */
    const char *set_error;      /* qom-set fails with this description */
    guint sets;
} FakeQemu;

static char *
fake_respond(const char *command, json_object *args, gpointer data)
{
    FakeQemu *q = data;

    if (g_str_equal(command, "query-iothreads")) {
        GString *r = g_string_sized_new(q->n * 128);

        g_string_append(r, "{\"return\": [");
        for (guint i = 0; i < q->n; i++)
            g_string_append_printf(r, "%s{\"id\": \"iot%u\", \"thread-id\": %u, "
                                   "\"poll-max-ns\": %" G_GUINT64_FORMAT ", \"poll-grow\": 0, "
                                   "\"poll-shrink\": 0, \"aio-max-batch\": 0}", i ? ", " : "",
                                   i, 100000 + i, q->max_ns[i]);
        g_string_append(r, "]}");
        return g_string_free(r, FALSE);
    }
    if (g_str_equal(command, "qom-set")) {
        const char *path = qmp_json_get_string(args, "path");
        const char *prop = qmp_json_get_string(args, "property");
        gint64 v = -1;
        guint idx;

        q->sets++;
        if (q->set_error) {
            g_autoptr(json_object) e = json_object_new_object();
            g_autoptr(json_object) r = json_object_new_object();

            json_object_object_add(e, "class", json_object_new_string("GenericError"));
            json_object_object_add(e, "desc", json_object_new_string(q->set_error));
            json_object_object_add(r, "error", json_object_get(e));
            return g_strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
        }
        qmp_json_get_int(args, "value", &v);
        if (path && g_str_has_prefix(path, "/objects/iot") &&
            sscanf(path, "/objects/iot%u", &idx) == 1 && idx < q->n &&
            g_strcmp0(prop, "poll-max-ns") == 0)
            q->max_ns[idx] = (guint64)MAX(v, 0);
        return g_strdup("{\"return\": {}}");
    }
    if (g_str_equal(command, "query-blockstats") || g_str_equal(command, "query-stats"))
        return g_strdup("{\"return\": []}");
    if (g_str_equal(command, "query-kvm"))
        return g_strdup("{\"return\": {\"enabled\": false, \"present\": false}}");
    if (g_str_equal(command, "qom-get"))
        return g_strdup("{\"error\": {\"class\": \"DeviceNotFound\", \"desc\": \"no such device\"}}");
    return g_strdup_printf("{\"error\": {\"class\": \"CommandNotFound\", \"desc\":"
                           " \"The command %s has not been found\"}}", command);
}

typedef struct {
    char *dir;
    char *sock;
    FakeQemu q;
    QmpFakeMonitor *fake;
    PtTestDaemon *d;
} FakeCase;

static void
fake_case_start(FakeCase *c, const char *name, guint n, const char *policy)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *conf = NULL;

    c->dir = g_dir_make_tmp("pt-fake-XXXXXX", &err);
    g_assert_no_error(err);
    c->sock = g_strdup_printf("%s/%s.qmp", c->dir, name);
    c->q.n = n;
    c->q.max_ns = g_new(guint64, n);
    for (guint i = 0; i < n; i++)
        c->q.max_ns[i] = 32768;
    c->fake = qmp_fake_monitor_new_listen(c->sock);
    qmp_fake_handshake(c->fake);
    qmp_fake_monitor_set_responder(c->fake, fake_respond, &c->q);
    conf = g_strdup_printf("interval = 1s\nmetrics-listen =\n[targets]\nlibvirt = false\n"
                           "qmp-globs = %s/*.qmp\n[policy]\ndefault = %s\nmin-dwell = 0\n",
                           c->dir, policy);
    c->d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
}

static void
fake_case_free(FakeCase *c)
{
    g_clear_pointer(&c->d, pt_test_daemon_free);
    g_clear_pointer(&c->fake, qmp_fake_monitor_free);
    g_unlink(c->sock);
    g_rmdir(c->dir);
    g_free(c->sock);
    g_free(c->dir);
    g_free(c->q.max_ns);
}

/* Run @fn(@data) on a thread while this one serves the fake. */
typedef struct {
    GThreadFunc fn;
    gpointer data;
    gint done;
} Client;

static gpointer
client_main(gpointer data)
{
    Client *c = data;
    gpointer ret = c->fn(c->data);

    g_atomic_int_set(&c->done, 1);
    g_main_context_wakeup(NULL);
    return ret;
}

static void
serve_while(GThreadFunc fn, gpointer data)
{
    Client c = { fn, data, 0 };
    GThread *t = g_thread_new("client", client_main, &c);

    while (!g_atomic_int_get(&c.done))
        g_main_context_iteration(NULL, TRUE);
    g_thread_join(t);
}

/* ---- status of a host with 4096 iothreads ------------------------------ */

static gboolean
last_decided(json_object *reply, const PtDaemonWait *w)
{
    return pt_json_path(reply, "iothreads/0/last_decision") &&
           pt_json_path(reply, "iothreads/0/metrics");
}

static gpointer
big_client(gpointer data)
{
    FakeCase *c = data;
    g_autofree char *last = g_strdup_printf("iot%u", BIG_IOTHREADS - 1);
    g_autofree char *show = g_strdup_printf("{\"target\": \"big\", \"iothread\": \"%s\", "
                                            "\"ticks\": 1}", last);
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) st = NULL;
    json_object *ios;
    gsize largest = 0, total;
    gint64 t0;
    double took;

    g_assert_cmpint(pt_test_wait_target(c->d, "big", BIG_IOTHREADS, TRUE, 30000), >=, 0);
    /* The last iothread decided and measured: every member of its status
     * entry is there, as on a host tuned for a while. */
    for (;;) {
        g_autoptr(json_object) r = pt_test_daemon_ok(c->d, "show", show);

        if (last_decided(r, NULL))
            break;
        g_usleep(200000);
    }
    t0 = g_get_monotonic_time();
    st = pt_test_daemon_call(c->d, "status", NULL, &err);
    took = (g_get_monotonic_time() - t0) / 1e6;
    g_assert_no_error(err);
    g_assert_nonnull(st);
    if (!pt_json_path(st, "return"))
        g_error("status: %s", json_object_to_json_string(st));
    total = strlen(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN));
    ios = pt_json_path(st, "return/targets/0/iothreads");
    g_assert_cmpuint(json_object_array_length(ios), ==, BIG_IOTHREADS);
    for (size_t i = 0; i < json_object_array_length(ios); i++)
        largest = MAX(largest, strlen(json_object_to_json_string_ext(
                                          json_object_array_get_idx(ios, i),
                                          JSON_C_TO_STRING_PLAIN)));
    g_test_message("status of %u iothreads: %" G_GSIZE_FORMAT " bytes in %.1f s, "
                   "%" G_GSIZE_FORMAT " per iothread at most", BIG_IOTHREADS, total,
                   took, largest);
    /* Past the old 4 MiB, within the bound the limit is sized from. */
    g_assert_cmpuint(total, >, OLD_OUT_MAX);
    g_assert_cmpuint(largest, <=, STATUS_BYTES_PER_IOTHREAD);
    g_assert_cmpuint(pt_test_daemon_log_count(c->d, "does not read its replies"), ==, 0);
    g_assert_cmpint(pt_test_daemon_stop(c->d), ==, 0);
    return NULL;
}

/* status of the largest host we size for: one reply of more than 4 MiB
 * used to exceed the connection's output limit; the daemon closed the
 * connection and logged the client as not reading, for every client. */
static void
test_status_big_host(void)
{
    FakeCase c = { 0 };

    fake_case_start(&c, "big", BIG_IOTHREADS, "adaptive");
    serve_while(big_client, &c);
    fake_case_free(&c);
}

/* ---- a QMP error description that is not one line ---------------------- */

#define FORGED "12:00:00.000 polltuned info: evil/iot0: restore applied -> 32768/0/0"

static gpointer
evil_client(gpointer data)
{
    FakeCase *c = data;

    g_assert_cmpint(pt_test_wait_target(c->d, "evil", 1, TRUE, 30000), >=, 0);
    g_assert_true(pt_test_wait_log(c->d, "owned", 1, 30000));
    g_assert_cmpint(pt_test_daemon_stop(c->d), ==, 0);
    return NULL;
}

/* A monitor's error text is logged on the failed write's line, its
 * newline and escapes written out: no line of its own for a forged
 * "restore applied", and nothing a terminal would obey. */
static void
test_error_desc_escaped(void)
{
    FakeCase c = { 0 };
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    guint carrying = 0;

    c.q.set_error = "Property not found\n" FORGED "\033]0;owned\007\033[2J\302\233";
    fake_case_start(&c, "evil", 1, "static:50000/2/2");
    serve_while(evil_client, &c);
    g_assert_cmpuint(c.q.sets, >, 0);
    g_assert_true(g_file_get_contents(c.d->log_path, &log, NULL, NULL));
    g_assert_null(strchr(log, '\033'));
    g_assert_null(strchr(log, '\007'));
    g_assert_null(strstr(log, "\302\233"));
    lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        /* Every line is the daemon's: a time, then "polltuned". */
        if (*lines[i] && !g_regex_match_simple("^[0-9:.]+ polltuned ", lines[i], 0, 0))
            g_error("a line not the daemon's: %s", lines[i]);
        g_assert_false(g_str_has_prefix(lines[i], FORGED));
        if (strstr(lines[i], "Property not found\\n" FORGED "\\x1b]0;owned\\x07\\x1b[2J\\u009b")) {
            g_test_message("%s", lines[i]);
            carrying++;
        }
    }
    g_assert_cmpuint(carrying, >, 0);
    fake_case_free(&c);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/fake/status-big-host", test_status_big_host);
    g_test_add_func("/daemon/fake/error-desc-escaped", test_error_desc_escaped);
    return g_test_run();
}
