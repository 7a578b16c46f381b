/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The check of the fake QEMU's replies (qmp-schema.h) on both captured
 * schemas: replies a real QEMU sends pass, ones it cannot send fail with
 * the place named, and the replies of the real QEMU on this host, to every
 * command polltune sends, pass.
 */
#include "pt-test-qmp.h"
#include "qmp-json.h"
#include "qmp-fake-qemu.h"
#include "qmp-schema.h"

#include <gio/gio.h>

typedef struct {
    int major, minor;
} SchemaVersion;

static const SchemaVersion versions[] = { { 7, 2 }, { 10, 0 } };

typedef struct {
    const char *what;
    const char *command;
    const char *args;           /* NULL: not known */
    const char *reply;
    const char *error;          /* NULL: passes; else a part of the message */
} ReplyCase;

#define IOT(extra) "{\"return\": [{\"id\": \"iot0\", \"thread-id\": 4001, " \
    "\"poll-max-ns\": 32768, \"poll-grow\": 0, \"poll-shrink\": 0" extra "}]}"

static const ReplyCase reply_cases[] = {
    { "query-iothreads as QEMU sends it", "query-iothreads", NULL,
      IOT(", \"aio-max-batch\": 0"), NULL },
    { "a thread id in text", "query-iothreads", NULL,
      "{\"return\": [{\"id\": \"iot0\", \"thread-id\": \"4001\", \"poll-max-ns\": 32768, "
      "\"poll-grow\": 0, \"poll-shrink\": 0, \"aio-max-batch\": 0}]}",
      "return[0].thread-id: string where QEMU sends int" },
    { "aio-max-batch missing", "query-iothreads", NULL, IOT(""),
      "return[0]: no \"aio-max-batch\", which QEMU always sends" },
    { "a member QEMU lacks", "query-iothreads", NULL,
      IOT(", \"aio-max-batch\": 0, \"poll-ns\": 4000"),
      "return[0]: \"poll-ns\" is no member of this object" },
    { "an object for a list", "query-iothreads", NULL, "{\"return\": {}}",
      "return: object where QEMU sends an array" },
    { "a run state QEMU lacks", "query-status", NULL,
      "{\"return\": {\"status\": \"flying\", \"running\": true, \"singlestep\": false}}",
      "return.status: \"flying\" is no value of this enum" },
    { "qom-get returns anything", "qom-get", "{\"path\": \"/objects/iot0\", "
      "\"property\": \"poll-max-ns\"}", "{\"return\": 32768}", NULL },
    { "qom-set without a value", "qom-set", "{\"path\": \"/objects/iot0\", "
      "\"property\": \"poll-max-ns\"}", "{\"return\": {}}",
      "QEMU refuses these arguments" },
    { "qom-set refused", "qom-set", "{\"path\": \"/objects/iot0\", \"property\": \"x\"}",
      "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Property not found\"}}", NULL },
    { "an error class QEMU lacks", "qom-set", NULL,
      "{\"error\": {\"class\": \"Oops\", \"desc\": \"x\"}}", "no error class Oops" },
    { "an error without desc", "qom-set", NULL, "{\"error\": {\"class\": \"GenericError\"}}",
      "an error is {\"class\", \"desc\"}" },
    { "a command QEMU lacks, answered", "query-poll-window", NULL, "{\"return\": {}}",
      "no such command" },
    { "a command QEMU lacks, refused", "query-poll-window", NULL,
      "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"The command "
      "query-poll-window has not been found\"}}", NULL },
    { "a command QEMU lacks, refused otherwise", "query-poll-window", NULL,
      "{\"error\": {\"class\": \"GenericError\", \"desc\": \"no\"}}", "so CommandNotFound" },
    { "both return and error", "query-kvm", NULL,
      "{\"return\": {}, \"error\": {\"class\": \"GenericError\", \"desc\": \"x\"}}",
      "either \"return\" or \"error\"" },
    /* query-stats: a union on "target" in, an alternate per value out. */
    { "query-stats of vCPUs", "query-stats", "{\"target\": \"vcpu\", \"vcpus\": "
      "[\"/machine/unattached/device[0]\"]}",
      "{\"return\": [{\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[0]\", "
      "\"stats\": [{\"name\": \"exits\", \"value\": 12}, {\"name\": \"halt_poll_success_hist\", "
      "\"value\": [1, 2, 3]}, {\"name\": \"guest_mode\", \"value\": false}]}]}", NULL },
    { "a statistic in text", "query-stats", "{\"target\": \"vm\"}",
      "{\"return\": [{\"provider\": \"kvm\", \"stats\": [{\"name\": \"exits\", "
      "\"value\": \"12\"}]}]}", "no branch of the alternate fits" },
    { "vcpus given for the VM target", "query-stats", "{\"target\": \"vm\", \"vcpus\": []}",
      "{\"return\": []}", "\"vcpus\" is no member of this object" },
};

static void
test_reply(gconstpointer data)
{
    const ReplyCase *c = data;

    for (guint v = 0; v < G_N_ELEMENTS(versions); v++) {
        const QmpSchema *s = qmp_schema_for_version(versions[v].major, versions[v].minor);
        g_autoptr(json_object) args = c->args ? json_tokener_parse(c->args) : NULL;
        g_autoptr(json_object) reply = json_tokener_parse(c->reply);
        g_autoptr(GError) err = NULL;
        gboolean ok;

        g_assert_nonnull(reply);
        g_assert_true(!c->args || args);
        ok = qmp_schema_check_reply(s, c->command, args, reply, &err);
        g_test_message("QEMU %s, %s: %s", qmp_schema_qemu(s), c->what,
                       err ? err->message : "passes");
        if (!c->error) {
            g_assert_no_error(err);
            g_assert_true(ok);
        } else {
            g_assert_false(ok);
            g_assert_nonnull(err);
            g_assert_nonnull(strstr(err->message, c->error));
        }
    }
}

static void
test_events(void)
{
    for (guint v = 0; v < G_N_ELEMENTS(versions); v++) {
        const QmpSchema *s = qmp_schema_for_version(versions[v].major, versions[v].minor);
        g_autoptr(json_object) shutdown = json_tokener_parse("{\"guest\": false, "
                                                             "\"reason\": \"host-qmp-quit\"}");
        g_autoptr(json_object) bad = json_tokener_parse("{\"guest\": \"no\", "
                                                        "\"reason\": \"host-qmp-quit\"}");
        g_autoptr(json_object) extra = json_tokener_parse("{\"why\": 1}");
        g_autoptr(GError) err = NULL;

        g_assert_true(qmp_schema_check_event(s, "STOP", NULL, NULL));
        g_assert_true(qmp_schema_check_event(s, "SHUTDOWN", shutdown, NULL));
        g_assert_false(qmp_schema_check_event(s, "SHUTDOWN", bad, &err));
        g_assert_nonnull(strstr(err->message, "data.guest: string where QEMU sends boolean"));
        g_clear_error(&err);
        g_assert_false(qmp_schema_check_event(s, "STOP", extra, &err));
        g_clear_error(&err);
        g_assert_false(qmp_schema_check_event(s, "POLL_WINDOW", NULL, &err));
        g_assert_nonnull(strstr(err->message, "no such event"));
    }
}

/* The newest capture not newer than the QEMU, the oldest below them all. */
static void
test_version_pick(void)
{
    g_assert_cmpstr(qmp_schema_qemu(qmp_schema_for_version(7, 2)), ==, "7.2.22");
    g_assert_cmpstr(qmp_schema_qemu(qmp_schema_for_version(6, 2)), ==, "7.2.22");
    g_assert_cmpstr(qmp_schema_qemu(qmp_schema_for_version(9, 2)), ==, "7.2.22");
    g_assert_cmpstr(qmp_schema_qemu(qmp_schema_for_version(10, 0)), ==, "10.0.13");
    g_assert_cmpstr(qmp_schema_qemu(qmp_schema_for_version(10, 1)), ==, "10.0.13");
    g_assert_true(qmp_schema_has_command(qmp_schema_for_version(7, 2), "query-iothreads"));
    g_assert_false(qmp_schema_has_command(qmp_schema_for_version(7, 2), "query-cpus"));
}

/* The fake QEMU stops a test that scripts what its QEMU could not send:
 * QEMU 10.0 dropped query-status's singlestep, which 7.2 always sends. */
static void
test_fake_refuses(void)
{
    static const char status_7_2[] = "{\"return\": {\"status\": \"running\", "
                                     "\"singlestep\": false, \"running\": true}}";

    if (g_test_subprocess()) {
        int fd;
        QmpFakeQemu *f = qmp_fake_qemu_new(&fd);

        qmp_fake_expect(f, "query-status", NULL, status_7_2);
        g_printerr("7.2 took it\n");
        qmp_fake_qemu_set_version(f, 10, 0, 0);
        qmp_fake_expect(f, "query-status", NULL, status_7_2);
        return;
    }
    g_test_trap_subprocess(NULL, 0, 0);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*7.2 took it*fake QEMU 10.0.0 could not send this reply: "
                              "query-status: return: \"singlestep\" is no member*");
}

/* What polltune and its tests ask a QEMU, with arguments. */
static const struct {
    const char *command;
    const char *args;
} live_commands[] = {
    { "query-version", NULL },
    { "query-status", NULL },
    { "query-name", NULL },
    { "query-kvm", NULL },
    { "query-iothreads", NULL },
    { "query-blockstats", NULL },
    { "query-block", NULL },
    { "query-stats", "{\"target\": \"vm\"}" },
    { "query-stats", "{\"target\": \"vcpu\"}" },
    { "query-stats-schemas", NULL },
    { "qom-get", "{\"path\": \"/objects/iot0\", \"property\": \"poll-max-ns\"}" },
    { "qom-set", "{\"path\": \"/objects/iot0\", \"property\": \"poll-max-ns\", \"value\": 50000}" },
    { "qom-list", "{\"path\": \"/objects/iot0\"}" },
};

/* The real QEMU on PATH answers all of it in a shape its capture allows:
 * the check is not stricter than QEMU. */
static void
test_live_qemu(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    guint32 ver;
    const QmpSchema *s;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start_iothreads(1, &err);
    g_assert_no_error(err);
    c = pt_test_qmp_connect(q->qmp_path, "schema");
    ver = pt_test_qemu_version();
    s = qmp_schema_for_version(ver / 1000000, ver / 1000 % 1000);
    g_test_message("QEMU %u.%u.%u checked against the capture of %s", ver / 1000000,
                   ver / 1000 % 1000, ver % 1000, qmp_schema_qemu(s));
    for (guint i = 0; i < G_N_ELEMENTS(live_commands); i++) {
        g_autoptr(GError) qerr = NULL;
        g_autoptr(GError) cerr = NULL;
        g_autoptr(json_object) args = live_commands[i].args ?
                                      json_tokener_parse(live_commands[i].args) : NULL;
        json_object *ret = pt_test_qmp_run(c, live_commands[i].command, live_commands[i].args,
                                           &qerr);
        g_autoptr(json_object) reply = json_object_new_object();

        /* KVM statistics need KVM: a QEMU without it refuses query-stats. */
        if (!ret && !g_str_equal(live_commands[i].command, "query-stats"))
            g_error("%s: %s", live_commands[i].command, qerr->message);
        if (!ret) {
            g_test_message("%s: %s", live_commands[i].command, qerr->message);
            continue;
        }
        json_object_object_add(reply, "return", ret);
        if (!qmp_schema_check_reply(s, live_commands[i].command, args, reply, &cerr))
            g_error("the real QEMU's reply fails its own schema: %s\n  %.600s", cerr->message,
                    json_object_to_json_string(reply));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (guint i = 0; i < G_N_ELEMENTS(reply_cases); i++) {
        g_autofree char *path = g_strdup_printf("/qmp/schema/reply/%u", i);

        g_test_add_data_func(path, &reply_cases[i], test_reply);
    }
    g_test_add_func("/qmp/schema/events", test_events);
    g_test_add_func("/qmp/schema/version-pick", test_version_pick);
    g_test_add_func("/qmp/schema/fake-refuses", test_fake_refuses);
    g_test_add_func("/qmp/schema/live-qemu", test_live_qemu);
    return g_test_run();
}
