/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The real polltuned against scripted QEMUs (qmp-fake-qemu.h), for
 * what a real QEMU cannot be made to do here: a host with 4096 iothreads,
 * and a monitor whose error descriptions carry newlines and terminal
 * escapes.
 *
 * The fake answers from a thread of its own (its iothread model), so that
 * it keeps answering while the test waits on the daemon, a child.
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "qmp-fake-qemu.h"
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
    char *dir;
    char *sock;
    QmpFakeQemu *fake;
    PtTestDaemon *d;
} FakeCase;

/* @n iothreads iot0..iotN-1 whose qom-set takes, or fails with
 * @set_error, on the fake's own thread: the test blocks on the daemon. */
static void
fake_case_start(FakeCase *c, const char *name, guint n, const char *set_error,
                const char *policy)
{
    g_autoptr(GError) err = NULL;

    c->dir = g_dir_make_tmp("pt-fake-XXXXXX", &err);
    g_assert_no_error(err);
    c->sock = g_strdup_printf("%s/%s.qmp", c->dir, name);
    c->fake = qmp_fake_qemu_new_listen(c->sock);
    qmp_fake_handshake(c->fake);
    qmp_fake_answer_idle(c->fake);
    qmp_fake_qemu_add_iothreads(c->fake, "iot", n, 100000);
    if (set_error)
        qmp_fake_qemu_set_writes(c->fake, QMP_FAKE_WRITES_REFUSED, set_error);
    qmp_fake_qemu_start_thread(c->fake);
    c->d = pt_test_daemon_up(PT_TEST_CONF_BASE, "interval = 1s\n[targets]\nqmp-globs = %s/*.qmp\n"
                             "[policy]\ndefault = %s\n", c->dir, policy);
}

static void
fake_case_free(FakeCase *c)
{
    g_clear_pointer(&c->d, pt_test_daemon_free);
    g_clear_pointer(&c->fake, qmp_fake_qemu_free);
    g_unlink(c->sock);
    g_rmdir(c->dir);
    g_free(c->sock);
    g_free(c->dir);
}

/* ---- status of a host with 4096 iothreads ------------------------------ */

static gboolean
last_decided(json_object *reply, const PtDaemonWait *w)
{
    return pt_json_path(reply, "iothreads/0/last_decision") &&
           pt_json_path(reply, "iothreads/0/metrics");
}

static void
big_client(FakeCase *c)
{    g_autofree char *last = g_strdup_printf("iot%u", BIG_IOTHREADS - 1);
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
}

/* status of the largest host we size for: one reply of more than 4 MiB
 * used to exceed the connection's output limit; the daemon closed the
 * connection and logged the client as not reading, for every client. */
static void
test_status_big_host(void)
{
    FakeCase c = { 0 };

    fake_case_start(&c, "big", BIG_IOTHREADS, NULL, "adaptive");
    big_client(&c);
    fake_case_free(&c);
}

/* ---- a QMP error description that is not one line ---------------------- */

#define FORGED "12:00:00.000 polltuned info: evil/iot0: restore applied -> 32768/0/0"

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

    fake_case_start(&c, "evil", 1, "Property not found\n" FORGED "\033]0;owned\007\033[2J\302\233",
                    "static:50000/2/2");
    g_assert_cmpint(pt_test_wait_target(c.d, "evil", 1, TRUE, 30000), >=, 0);
    g_assert_true(pt_test_wait_log(c.d, "owned", 1, 30000));
    g_assert_cmpint(pt_test_daemon_stop(c.d), ==, 0);
    g_assert_cmpuint(qmp_fake_qemu_iothread_sets(c.fake, 0), >, 0);
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
