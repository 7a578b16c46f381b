/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QMP client against the scripted fake QEMU: every typed wrapper, error
 * replies, events, ids, and peers that misbehave in every way we can make
 * them.
 */
#include "pt-test-qmp-sync.h"
#include "qmp-fake-qemu.h"
#include "qmp-json.h"

#include <signal.h>
#include <stdio.h>
#include <sys/socket.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    QmpFakeQemu *fake;
    QmpClient *client;
} Fixture;

static void
fixture_setup_opts(Fixture *fx, guint timeout_ms, gsize max_message)
{
    QmpClientOptions opts = {
        .name = "vm-test",
        .timeout_ms = timeout_ms,
        .max_message_size = max_message,
    };
    int fd;

    fx->fake = qmp_fake_qemu_new(&fd);
    fx->client = qmp_client_new(NULL, &opts);
    g_assert_true(qmp_client_adopt_fd(fx->client, fd, NULL));
}

static void
fixture_setup(Fixture *fx, gconstpointer data)
{
    fixture_setup_opts(fx, 5000, 0);
}

static void
fixture_teardown(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;

    g_clear_object(&fx->client);
    /* Let the fake see EOF, then check it got exactly what it expected. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    qmp_fake_qemu_finish(fx->fake, &err);
    g_assert_no_error(err);
    qmp_fake_qemu_free(fx->fake);
}

/* ---- happy paths ------------------------------------------------------- */

static void
test_handshake(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    const QmpVersion *v;

    qmp_fake_handshake(fx->fake);
    g_assert_true(qmp_client_wait_ready_sync(fx->client, &err));
    g_assert_no_error(err);
    g_assert_cmpint(qmp_client_get_state(fx->client), ==, QMP_CLIENT_READY);
    v = qmp_client_get_version(fx->client);
    g_assert_nonnull(v);
    g_assert_cmpint(v->major, ==, 7);
    g_assert_cmpint(v->minor, ==, 2);
    g_assert_cmpstr(v->package, ==, "fake");
}

static void
test_queued_before_ready(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) threads = NULL;

    /* The command is issued before the greeting arrives; it must wait for
     * qmp_capabilities, which the fake checks comes first. */
    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "query-iothreads", NULL, "{\"return\": []}");
    threads = qmp_query_iothreads_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(threads->len, ==, 0);
}

static void
test_query_iothreads(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) threads = NULL;
    QmpIothread *t;

    qmp_fake_handshake(fx->fake);
    /* Members of a later QEMU, which the client must ignore. */
    qmp_fake_expect_unchecked(fx->fake, "query-iothreads", NULL,
        "{\"return\": [{\"poll-shrink\": 0, \"thread-id\": 4929, \"aio-max-batch\": 0,"
        " \"poll-grow\": 0, \"poll-max-ns\": 32768, \"id\": \"iot0\"},"
        " {\"poll-shrink\": 2, \"thread-id\": 4931, \"aio-max-batch\": 8, \"poll-grow\": 4,"
        " \"poll-max-ns\": 0, \"id\": \"iot1\", \"a-future-member\": {\"x\": [1]}}],"
        " \"another-unknown\": null}");
    threads = qmp_query_iothreads_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(threads->len, ==, 2);
    t = threads->pdata[0];
    g_assert_cmpstr(t->id, ==, "iot0");
    g_assert_cmpint(t->thread_id, ==, 4929);
    g_assert_cmpuint(t->poll_max_ns, ==, 32768);
    t = threads->pdata[1];
    g_assert_cmpstr(t->id, ==, "iot1");
    g_assert_cmpuint(t->poll_grow, ==, 4);
    g_assert_cmpuint(t->poll_shrink, ==, 2);
    g_assert_cmpuint(t->aio_max_batch, ==, 8);
}

static void
test_iothread_set_get(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    gint64 v = 0;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "qom-set",
                    "{\"path\": \"/objects/iot0\", \"property\": \"poll-max-ns\", \"value\": 70000}",
                    "{\"return\": {}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/objects/iot0\", \"property\": \"poll-grow\"}",
                    "{\"return\": 4}");
    g_assert_true(qmp_iothread_set_sync(fx->client, "iot0", QMP_IOTHREAD_POLL_MAX_NS,
                                        70000, 500000, &err));
    g_assert_no_error(err);
    g_assert_true(qmp_iothread_get_sync(fx->client, "iot0", QMP_IOTHREAD_POLL_GROW, &v, &err));
    g_assert_no_error(err);
    g_assert_cmpint(v, ==, 4);
}

static void
test_iothread_set_validates(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) e1 = NULL, e2 = NULL, e3 = NULL, e4 = NULL;

    qmp_fake_handshake(fx->fake);
    g_assert_true(qmp_client_wait_ready_sync(fx->client, NULL));
    g_assert_false(qmp_iothread_set_sync(fx->client, "iot0", QMP_IOTHREAD_POLL_MAX_NS,
                                         -1, G_MAXINT64, &e1));
    g_assert_error(e1, QMP_ERROR, QMP_ERROR_INVALID);
    g_assert_nonnull(strstr(e1->message, "vm-test/iot0: poll-max-ns=-1"));
    g_assert_false(qmp_iothread_set_sync(fx->client, "iot0", QMP_IOTHREAD_POLL_MAX_NS,
                                         500001, 500000, &e2));
    g_assert_error(e2, QMP_ERROR, QMP_ERROR_INVALID);
    g_assert_false(qmp_iothread_set_sync(fx->client, "../machine", QMP_IOTHREAD_POLL_GROW,
                                         2, 16, &e3));
    g_assert_error(e3, QMP_ERROR, QMP_ERROR_INVALID);
    g_assert_false(qmp_iothread_set_sync(fx->client, "iot0", QMP_IOTHREAD_PROP_MAX,
                                         2, 16, &e4));
    g_assert_error(e4, QMP_ERROR, QMP_ERROR_INVALID);
    /* Only qmp_capabilities ever reached the wire. */
    g_assert_cmpuint(qmp_fake_qemu_n_received(fx->fake), ==, 1);
}

static void
test_blockstats_and_map(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) stats = NULL;
    g_auto(GStrv) iot = NULL;
    g_auto(GStrv) none = NULL;
    QmpBlockStats *s;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_filled(fx->fake, "query-blockstats", NULL,
        "{\"return\": [{\"device\": \"\", \"node-name\": \"null0\","
        " \"qdev\": \"/machine/peripheral/vblk0/virtio-backend\","
        " \"stats\": {\"rd_operations\": 10, \"rd_bytes\": 40960, \"rd_total_time_ns\": 123456,"
        " \"wr_operations\": 2, \"wr_bytes\": 8192, \"wr_total_time_ns\": 999,"
        " \"flush_operations\": 1, \"flush_total_time_ns\": 50, \"timed_stats\": [],"
        " \"idle_time_ns\": 5}}]}");
    /* QEMU 7.2: no vq mapping property, then the link. */
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/vblk0/virtio-backend\","
                    " \"property\": \"iothread-vq-mapping\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Property"
                    " 'virtio-blk-device.iothread-vq-mapping' not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/vblk0/virtio-backend\", \"property\": \"iothread\"}",
                    "{\"return\": \"/objects/iot0\"}");
    /* A plain id (virtio-blk-device on virtio-mmio) is the device itself;
     * an empty mapping and no link is the main loop. */
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/vblk1\", \"property\": \"iothread-vq-mapping\"}",
                    "{\"return\": []}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/vblk1\", \"property\": \"iothread\"}",
                    "{\"return\": \"\"}");
    stats = qmp_query_blockstats_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(stats->len, ==, 1);
    s = stats->pdata[0];
    g_assert_cmpstr(s->node_name, ==, "null0");
    g_assert_cmpint(s->v.v[METRIC_RD_OPS], ==, 10);
    g_assert_cmpint(s->v.v[METRIC_RD_BYTES], ==, 40960);
    g_assert_cmpint(s->v.v[METRIC_RD_TIME_NS], ==, 123456);
    g_assert_cmpint(s->v.v[METRIC_WR_OPS], ==, 2);
    g_assert_cmpint(s->v.v[METRIC_FLUSH_OPS], ==, 1);
    g_assert_cmpint(s->v.v[METRIC_FLUSH_TIME_NS], ==, 50);
    g_assert_true(qmp_device_iothreads_sync(fx->client, s->qdev, &iot, &err));
    g_assert_cmpuint(g_strv_length(iot), ==, 1);
    g_assert_cmpstr(iot[0], ==, "iot0");
    g_assert_true(qmp_device_iothreads_sync(fx->client, "vblk1", &none, &err));
    g_assert_cmpuint(g_strv_length(none), ==, 0);
}

/* QEMU 9.x/10.x as captured: a vq-mapped virtio-blk, whose link is "",
 * and a scsi-hd whose controller has a vq mapping of its own (10.0). */
static void
test_device_map_newer(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) blk = NULL;
    g_auto(GStrv) sd = NULL;
    g_auto(GStrv) sd1 = NULL;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/vdc/virtio-backend\","
                    " \"property\": \"iothread-vq-mapping\"}",
                    "{\"return\": [{\"iothread\": \"iothread2\", \"vqs\": [1, 3]},"
                    " {\"iothread\": \"iothread3\", \"vqs\": [0, 2]},"
                    " {\"iothread\": \"iothread2\", \"vqs\": [4]}]}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd0\", \"property\": \"iothread-vq-mapping\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Property"
                    " 'scsi-hd.iothread-vq-mapping' not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd0\", \"property\": \"iothread\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Property"
                    " 'scsi-hd.iothread' not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd0\", \"property\": \"parent_bus\"}",
                    "{\"return\": \"/machine/peripheral/scsi0/virtio-backend/scsi0.0\"}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/scsi0/virtio-backend\","
                    " \"property\": \"iothread-vq-mapping\"}",
                    "{\"return\": [{\"iothread\": \"iothread1\"}, {\"iothread\": \"iothread4\"}]}");
    /* QEMU 9.x virtio-scsi: no mapping, its single link. */
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd1\", \"property\": \"iothread-vq-mapping\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd1\", \"property\": \"iothread\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/sd1\", \"property\": \"parent_bus\"}",
                    "{\"return\": \"/machine/peripheral/scsi1/virtio-backend/scsi1.0\"}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/scsi1/virtio-backend\","
                    " \"property\": \"iothread-vq-mapping\"}",
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"not found\"}}");
    qmp_fake_expect(fx->fake, "qom-get",
                    "{\"path\": \"/machine/peripheral/scsi1/virtio-backend\","
                    " \"property\": \"iothread\"}",
                    "{\"return\": \"/objects/iothread5\"}");
    /* A broken reply fails rather than guessing the main loop. */
    qmp_fake_expect(fx->fake, "qom-get", NULL, "{\"return\": [{\"vqs\": [0]}]}");

    g_assert_true(qmp_device_iothreads_sync(fx->client, "/machine/peripheral/vdc/virtio-backend",
                                            &blk, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(g_strv_length(blk), ==, 2);
    g_assert_cmpstr(blk[0], ==, "iothread2");
    g_assert_cmpstr(blk[1], ==, "iothread3");
    g_assert_true(qmp_device_iothreads_sync(fx->client, "sd0", &sd, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(g_strv_length(sd), ==, 2);
    g_assert_cmpstr(sd[0], ==, "iothread1");
    g_assert_cmpstr(sd[1], ==, "iothread4");
    g_assert_true(qmp_device_iothreads_sync(fx->client, "sd1", &sd1, &err));
    g_assert_no_error(err);
    g_assert_cmpuint(g_strv_length(sd1), ==, 1);
    g_assert_cmpstr(sd1[0], ==, "iothread5");
    {
        g_auto(GStrv) bad = NULL;

        g_assert_false(qmp_device_iothreads_sync(fx->client, "vdx", &bad, &err));
        g_assert_error(err, QMP_ERROR, QMP_ERROR_UNEXPECTED);
        g_assert_nonnull(strstr(err->message, "iothread-vq-mapping entry iothread"));
    }
    g_assert_true(qmp_fake_qemu_finish(fx->fake, NULL));
}

static void
test_query_stats(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStats) vcpu = NULL;
    g_autoptr(GPtrArray) schemas = NULL;
    QmpStatSchema *sc;
    guint64 exits = 0, halt = 0;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "query-stats",
        "{\"target\": \"vcpu\", \"providers\": [{\"provider\": \"kvm\","
        " \"names\": [\"exits\", \"io_exits\", \"mmio_exits\", \"halt_exits\"]}]}",
        "{\"return\": ["
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[0]\","
        "  \"stats\": [{\"name\": \"exits\", \"value\": 100}, {\"name\": \"halt_exits\", \"value\": 7},"
        "             {\"name\": \"halt_poll_success_hist\", \"value\": [1, 2, 3]},"
        "             {\"name\": \"guest_mode\", \"value\": false}]},"
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[1]\","
        "  \"stats\": [{\"name\": \"exits\", \"value\": 50}]}]}");
    qmp_fake_expect(fx->fake, "query-stats-schemas", "{\"provider\": \"kvm\"}",
        "{\"return\": [{\"provider\": \"kvm\", \"target\": \"vcpu\", \"stats\": ["
        " {\"name\": \"exits\", \"type\": \"cumulative\", \"base\": 10, \"exponent\": 0},"
        " {\"name\": \"halt_wait_ns\", \"type\": \"cumulative\", \"unit\": \"seconds\","
        "  \"base\": 10, \"exponent\": -9}]}]}");
    vcpu = qmp_query_stats_sync(fx->client, QMP_STATS_TARGET_VCPU, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(vcpu->entities->len, ==, 2);
    g_assert_true(qmp_stats_sum(vcpu, "exits", &exits));
    g_assert_cmpuint(exits, ==, 150);
    g_assert_true(qmp_stats_sum(vcpu, "halt_exits", &halt));
    g_assert_cmpuint(halt, ==, 7);
    g_assert_false(qmp_stats_sum(vcpu, "halt_poll_success_hist", &halt));
    g_assert_false(qmp_stats_sum(vcpu, "no_such_stat", &halt));

    schemas = qmp_query_stats_schemas_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(schemas->len, ==, 2);
    sc = schemas->pdata[1];
    g_assert_cmpstr(sc->name, ==, "halt_wait_ns");
    g_assert_cmpstr(sc->unit, ==, "seconds");
    g_assert_cmpint(sc->exponent, ==, -9);
}

static void
test_status_name_version(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStatus) st = NULL;
    g_autoptr(QmpVersion) v = NULL;
    g_autofree char *name = NULL, *noname = NULL;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "query-status", NULL,
                    "{\"return\": {\"status\": \"paused\", \"singlestep\": false, \"running\": false}}");
    qmp_fake_expect(fx->fake, "query-name", NULL, "{\"return\": {\"name\": \"vm-3\"}}");
    qmp_fake_expect(fx->fake, "query-name", NULL, "{\"return\": {}}");
    qmp_fake_expect(fx->fake, "query-version", NULL,
                    "{\"return\": {\"qemu\": {\"micro\": 22, \"minor\": 2, \"major\": 7}, \"package\": \"Debian\"}}");
    st = qmp_query_status_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_false(st->running);
    g_assert_cmpstr(st->status, ==, "paused");
    name = qmp_query_name_sync(fx->client, &err);
    g_assert_cmpstr(name, ==, "vm-3");
    noname = qmp_query_name_sync(fx->client, &err);
    g_assert_cmpstr(noname, ==, "");
    v = qmp_query_version_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpint(v->micro, ==, 22);
}

/* ---- error replies, events, ids ---------------------------------------- */

static void
test_error_reply(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GError) shape = NULL;
    g_autoptr(GPtrArray) again = NULL;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect(fx->fake, "qom-set", NULL,
                    "{\"error\": {\"class\": \"GenericError\", \"desc\": \"Property 'iothread.poll-max-ns' not found\"}}");
    /* Not what any QEMU sends: the client must refuse it. */
    qmp_fake_expect_unchecked(fx->fake, "query-iothreads", NULL,
                              "{\"return\": {\"not\": \"a list\"}}");
    qmp_fake_expect(fx->fake, "query-iothreads", NULL, "{\"return\": []}");
    g_assert_false(qmp_iothread_set_sync(fx->client, "iot9", QMP_IOTHREAD_POLL_MAX_NS,
                                         1, 10, &err));
    g_assert_error(err, QMP_ERROR, QMP_ERROR_COMMAND);
    g_assert_cmpstr(err->message, ==,
                    "vm-test: qom-set: QMP error GenericError: Property 'iothread.poll-max-ns' not found");
    g_assert_null(qmp_query_iothreads_sync(fx->client, &shape));
    g_assert_error(shape, QMP_ERROR, QMP_ERROR_UNEXPECTED);
    g_assert_nonnull(strstr(shape->message, "vm-test: query-iothreads: reply"));
    /* Neither failure closes a healthy connection. */
    again = qmp_query_iothreads_sync(fx->client, NULL);
    g_assert_nonnull(again);
}

typedef struct {
    guint stops, all;
    gint64 ts;
} EventCounts;

static void
on_stop(QmpClient *c, const char *event, struct json_object *data, gint64 ts, gpointer ud)
{
    EventCounts *ec = ud;

    g_assert_cmpstr(event, ==, "STOP");
    ec->stops++;
    ec->ts = ts;
}

static void
on_any(QmpClient *c, const char *event, struct json_object *data, gint64 ts, gpointer ud)
{
    ((EventCounts *)ud)->all++;
}

static void
test_events_interleaved(Fixture *fx, gconstpointer data)
{
    EventCounts ec = { 0 };
    g_autoptr(GPtrArray) threads = NULL;
    g_autoptr(QmpStatus) status = NULL;
    guint h;

    h = qmp_client_subscribe(fx->client, "STOP", on_stop, &ec);
    qmp_client_subscribe(fx->client, NULL, on_any, &ec);
    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_event(fx->fake, "STOP", NULL, G_GINT64_CONSTANT(1700000000000250));
    qmp_fake_event(fx->fake, "RESUME", "{}", G_USEC_PER_SEC);
    qmp_fake_send_reply(fx->fake, "query-iothreads", "{\"return\": [], \"id\": 2}");
    threads = qmp_query_iothreads_sync(fx->client, NULL);
    g_assert_nonnull(threads);
    g_assert_cmpuint(ec.stops, ==, 1);
    g_assert_cmpuint(ec.all, ==, 2);
    g_assert_cmpint(ec.ts, ==, G_GINT64_CONSTANT(1700000000000250));

    qmp_client_unsubscribe(fx->client, h);
    qmp_fake_expect_silence(fx->fake, "query-status");
    /* An event without a timestamp is not QEMU's, but a client copes. */
    qmp_fake_send_raw(fx->fake, "{\"event\": \"STOP\"}\n");
    qmp_fake_send_reply(fx->fake, "query-status", "{\"return\": {\"status\": \"paused\", "
                        "\"singlestep\": false, \"running\": false}, \"id\": 3}");
    status = qmp_query_status_sync(fx->client, NULL);
    g_assert_nonnull(status);
    g_assert_cmpuint(ec.stops, ==, 1);
    g_assert_cmpuint(ec.all, ==, 3);
}

typedef struct {
    guint calls;
    GError *error;
    gpointer result;
    GDestroyNotify free_result;
} Outcome;

static void
outcome_clear(Outcome *o)
{
    g_clear_error(&o->error);
    if (o->result && o->free_result)
        o->free_result(o->result);
}

static void
record_outcome(GObject *obj, GAsyncResult *res, gpointer ud)
{
    Outcome *o = ud;

    o->calls++;
    g_assert_cmpuint(o->calls, ==, 1);
    o->result = qmp_client_call_finish(QMP_CLIENT(obj), res, &o->error);
}

static void
test_out_of_order_replies(Fixture *fx, gconstpointer data)
{
    Outcome a = { 0 }, b = { 0 };

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-name");
    qmp_fake_expect_silence(fx->fake, "query-name");
    /* ids: 1 was qmp_capabilities; answer 3 before 2. */
    qmp_fake_send_reply(fx->fake, "query-name", "{\"return\": {\"name\": \"second\"}, \"id\": 3}");
    qmp_fake_send_reply(fx->fake, "query-name", "{\"return\": {\"name\": \"first\"}, \"id\": 2}");
    qmp_client_call_async(fx->client, "query-name", NULL, 0,
                          (QmpDecodeFunc)NULL, NULL, record_outcome, &a);
    qmp_client_call_async(fx->client, "query-name", NULL, 0,
                          (QmpDecodeFunc)NULL, NULL, record_outcome, &b);
    g_assert_cmpuint(qmp_client_get_n_pending(fx->client), ==, 2);
    while (!(a.calls && b.calls))
        g_main_context_iteration(NULL, TRUE);
    g_assert_no_error(a.error);
    g_assert_no_error(b.error);
    g_assert_cmpstr(json_object_get_string(json_object_object_get(a.result, "name")), ==, "first");
    g_assert_cmpstr(json_object_get_string(json_object_object_get(b.result, "name")), ==, "second");
    json_object_put(a.result);
    json_object_put(b.result);
}

/* ---- misbehaving peers ------------------------------------------------- */

/* Issue two commands and check that the peer's misbehaviour completes both
 * exactly once with @code and @code2, and closes the client. */
static void
expect_both_fail(Fixture *fx, gint code, gint code2, const char *needle)
{
    Outcome a = { .free_result = (GDestroyNotify)g_ptr_array_unref };
    Outcome b = { .free_result = (GDestroyNotify)g_ptr_array_unref };

    qmp_query_iothreads_async(fx->client, record_outcome, &a);
    qmp_query_iothreads_async(fx->client, record_outcome, &b);
    while (!(a.calls && b.calls))
        g_main_context_iteration(NULL, TRUE);
    /* Give any stray second completion a chance to show up. */
    for (int i = 0; i < 10; i++)
        g_main_context_iteration(NULL, FALSE);
    g_assert_cmpuint(a.calls, ==, 1);
    g_assert_cmpuint(b.calls, ==, 1);
    g_assert_error(a.error, QMP_ERROR, (code >= 0 ? code : a.error->code));
    g_assert_error(b.error, QMP_ERROR, (code2 >= 0 ? code2 : b.error->code));
    g_assert_nonnull(strstr(a.error->message, "vm-test"));
    if (needle)
        g_assert_nonnull(strstr(qmp_client_get_close_reason(fx->client)->message, needle));
    g_assert_cmpint(qmp_client_get_state(fx->client), ==, QMP_CLIENT_CLOSED);
    g_assert_cmpuint(qmp_client_get_n_pending(fx->client), ==, 0);
    outcome_clear(&a);
    outcome_clear(&b);
}

static void
test_garbage_greeting(Fixture *fx, gconstpointer data)
{
    qmp_fake_send_raw(fx->fake, "SSH-2.0-OpenSSH_9.2\r\n");
    expect_both_fail(fx, QMP_ERROR_PROTOCOL, QMP_ERROR_PROTOCOL, "expected a JSON object");
}

static void
test_greeting_wrong_shape(Fixture *fx, gconstpointer data)
{
    qmp_fake_send_raw(fx->fake, "{\"QMP\": {\"version\": \"seven\"}}\n");
    expect_both_fail(fx, QMP_ERROR_PROTOCOL, QMP_ERROR_PROTOCOL, "greeting without version");
}

static void
test_random_bytes(Fixture *fx, gconstpointer data)
{
    GRand *r = g_rand_new_with_seed(42);
    char buf[4097];

    for (gsize i = 0; i < sizeof(buf) - 1; i++)
        buf[i] = (char)(g_rand_int_range(r, 1, 256));
    buf[0] = '{';     /* get past the first check, into the parser */
    buf[sizeof(buf) - 1] = 0;
    g_rand_free(r);
    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_send_raw(fx->fake, buf);
    qmp_fake_close(fx->fake);
    /* Invalid JSON or a lost connection, depending on where the bytes
     * happen to close the first object. */
    expect_both_fail(fx, -1, -1, NULL);
}

static void
test_huge_line(Fixture *fx, gconstpointer data)
{
    g_autofree char *why = g_strdup_printf("message exceeds the limit of %d bytes",
                                           QMP_DEFAULT_MAX_MESSAGE);

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_send_huge(fx->fake, "{\"return\": \"", 100 * 1024 * 1024, NULL);
    expect_both_fail(fx, QMP_ERROR_TOO_BIG, QMP_ERROR_TOO_BIG, why);
}

static void
test_never_answers(Fixture *fx, gconstpointer data)
{
    gint64 start = g_get_monotonic_time();

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    /* The first times out, the second is failed with it at once. */
    expect_both_fail(fx, QMP_ERROR_TIMEOUT, QMP_ERROR_TIMEOUT, "query-iothreads: no reply within 200 ms");
    g_assert_cmpint(g_get_monotonic_time() - start, <, 2 * G_USEC_PER_SEC);
}

/* The id of the peer's next command, read from its end of the socket. */
static gint64
slow_peer_read_id(FILE *in)
{
    char line[4096];
    g_autoptr(json_object) cmd = NULL;
    gint64 id = -1;

    g_assert_nonnull(fgets(line, sizeof(line), in));
    cmd = json_tokener_parse(line);
    g_assert_nonnull(cmd);
    g_assert_true(qmp_json_get_int(cmd, "id", &id));
    return id;
}

static void
slow_peer_done(GObject *obj, GAsyncResult *res, gpointer data)
{
    guint *answered = data;
    g_autoptr(GError) err = NULL;

    g_assert_true(qmp_iothread_set_finish(QMP_CLIENT(obj), res, &err));
    g_assert_no_error(err);
    (*answered)++;
}

/*
 * QEMU answers a monitor's commands one at a time: ten sent together to a
 * peer that takes 100 ms for each are answered over a second, five times
 * the 200 ms timeout, and none times out, since each is answered within
 * 200 ms of the one before.  A timeout counted from the send failed the
 * third and closed the client.
 */
static void
test_queue_behind_slow_peer(void)
{
    static const char greeting[] = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, "
        "\"minor\": 2, \"major\": 7}, \"package\": \"\"}, \"capabilities\": []}}\n";
    QmpClientOptions opts = { .name = "vm-test", .timeout_ms = 200 };
    g_autoptr(QmpClient) c = qmp_client_new(NULL, &opts);
    int sv[2];
    FILE *in;
    guint answered = 0;
    gint64 start;

    g_assert_cmpint(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), ==, 0);
    g_assert_true(qmp_client_adopt_fd(c, sv[0], NULL));
    in = fdopen(sv[1], "r");
    g_assert_nonnull(in);
    g_assert_cmpint(write(sv[1], greeting, strlen(greeting)), ==, (gssize)strlen(greeting));
    for (guint i = 0; i < 10; i++)
        qmp_iothread_set_async(c, "iot0", QMP_IOTHREAD_POLL_MAX_NS, i, G_MAXINT64,
                               slow_peer_done, &answered);
    /* qmp_capabilities first: the client sends it once it has the greeting. */
    while (qmp_client_get_state(c) == QMP_CLIENT_CONNECTING)
        g_main_context_iteration(NULL, TRUE);
    start = g_get_monotonic_time();
    for (guint i = 0; i <= 10; i++) {
        g_autofree char *reply = NULL;
        gint64 id = slow_peer_read_id(in);

        if (i)
            g_usleep(100 * 1000);
        reply = g_strdup_printf("{\"return\": {}, \"id\": %" G_GINT64_FORMAT "}\n", id);
        g_assert_cmpint(write(sv[1], reply, strlen(reply)), ==, (gssize)strlen(reply));
        while (g_main_context_iteration(NULL, FALSE))
            ;
        g_assert_cmpint(qmp_client_get_state(c), !=, QMP_CLIENT_CLOSED);
    }
    while (answered < 10 && qmp_client_get_state(c) != QMP_CLIENT_CLOSED)
        g_main_context_iteration(NULL, TRUE);
    g_assert_cmpuint(answered, ==, 10);
    g_assert_cmpint(g_get_monotonic_time() - start, >, 5 * 200 * 1000);
    fclose(in);
}

static void
test_no_greeting(Fixture *fx, gconstpointer data)
{
    expect_both_fail(fx, QMP_ERROR_TIMEOUT, QMP_ERROR_TIMEOUT, "no QMP greeting within 200 ms");
}

static void
test_close_mid_reply(Fixture *fx, gconstpointer data)
{
    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_send_raw(fx->fake, "{\"return\": [{\"id\": \"io");
    qmp_fake_close(fx->fake);
    expect_both_fail(fx, QMP_ERROR_CLOSED, QMP_ERROR_CLOSED,
                     "connection lost in the middle of a message");
}

static void
test_drip(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStatus) st = NULL;

    /* A slow but valid peer is served, byte by byte. */
    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-status");
    qmp_fake_drip(fx->fake, "{\"return\": {\"status\": \"running\", \"singlestep\": false, "
                  "\"running\": true}, \"id\": 2}", 1);
    st = qmp_query_status_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_true(st->running);
}

static void
test_unref_in_callback(Fixture *fx, gconstpointer data)
{
    Outcome a = { .free_result = (GDestroyNotify)g_ptr_array_unref };

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_silence(fx->fake, "query-iothreads");
    qmp_fake_close(fx->fake);
    qmp_query_iothreads_async(fx->client, record_outcome, &a);
    /* Drop our reference while the command is pending: the command keeps
     * the client alive, and completes once when the peer goes away. */
    g_clear_object(&fx->client);
    while (!a.calls)
        g_main_context_iteration(NULL, TRUE);
    g_assert_error(a.error, QMP_ERROR, QMP_ERROR_CLOSED);
    outcome_clear(&a);
}

/* ---- the largest replies of legitimate peers --------------------------- */

/* The stats object QEMU 9.x reports for one block node, every member
 * present (zone append included), as query-blockstats sends it. */
static void
append_block_node_stats(GString *out, guint64 rd_bytes)
{
    g_string_append_printf(out,
        "\"stats\": {\"unmap_operations\": 0, \"unmap_merged\": 0,"
        " \"failed_zone_append_operations\": 0, \"flush_total_time_ns\": 31800,"
        " \"wr_highest_offset\": 8589869056, \"wr_total_time_ns\": 171290470,"
        " \"failed_wr_operations\": 0, \"failed_rd_operations\": 0,"
        " \"wr_merged\": 0, \"wr_bytes\": 90288128, \"timed_stats\": [],"
        " \"failed_unmap_operations\": 0, \"zone_append_merged\": 0,"
        " \"failed_flush_operations\": 0, \"account_invalid\": true,"
        " \"rd_total_time_ns\": 1322598066, \"invalid_unmap_operations\": 0,"
        " \"flush_operations\": 37, \"wr_operations\": 1502, \"unmap_bytes\": 0,"
        " \"rd_merged\": 0, \"rd_bytes\": %" G_GUINT64_FORMAT ","
        " \"unmap_total_time_ns\": 0, \"invalid_flush_operations\": 0,"
        " \"account_failed\": true, \"zone_append_total_time_ns\": 0,"
        " \"idle_time_ns\": 1016148311, \"zone_append_operations\": 0,"
        " \"rd_operations\": 11025, \"zone_append_bytes\": 0,"
        " \"invalid_wr_operations\": 0, \"invalid_rd_operations\": 0,"
        " \"invalid_zone_append_operations\": 0}", rd_bytes);
}

/* A query-blockstats reply: one -blockdev qcow2 disk whose chain holds
 * @chain images, each a format node with its file node as "parent" and the
 * next image as "backing", as QEMU 9.x reports it. */
static char *
blockstats_chain_reply(guint chain)
{
    GString *out = g_string_new("{\"return\": [");

    for (guint i = 0; i < chain; i++) {
        g_string_append_printf(out, "%s{\"device\": \"\", \"node-name\": \"fmt-%u\", ",
                               i ? "\"backing\": " : "", i);
        if (i == 0)
            g_string_append(out, "\"qdev\": \"/machine/peripheral/vblk0/virtio-backend\", ");
        append_block_node_stats(out, 4096 * (guint64)(i + 1));
        g_string_append_printf(out, ", \"parent\": {\"node-name\": \"file-%u\", ", i);
        append_block_node_stats(out, 4096 * (guint64)(i + 1));
        g_string_append(out, "}");
        if (i + 1 < chain)
            g_string_append(out, ", ");
    }
    for (guint i = 0; i < chain; i++)
        g_string_append(out, "}");
    g_string_append(out, "]}");
    return g_string_free(out, FALSE);
}

static void
check_backing_chain(Fixture *fx, guint chain)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) stats = NULL;
    g_autofree char *reply = blockstats_chain_reply(chain);
    QmpBlockStats *s;

    g_test_message("%u-image chain: reply of %zu bytes", chain, strlen(reply));
    /* Zone append counters: QEMU 8.1 and later. */
    qmp_fake_handshake_version(fx->fake, 10, 0, 0);
    qmp_fake_expect(fx->fake, "query-blockstats", NULL, reply);
    stats = qmp_query_blockstats_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(stats->len, ==, 1);
    s = stats->pdata[0];
    g_assert_cmpstr(s->node_name, ==, "fmt-0");
    g_assert_cmpstr(s->qdev, ==, "/machine/peripheral/vblk0/virtio-backend");
    g_assert_cmpint(s->v.v[METRIC_RD_OPS], ==, 11025);
    g_assert_cmpint(s->v.v[METRIC_RD_BYTES], ==, 4096);
    g_assert_cmpint(s->v.v[METRIC_WR_BYTES], ==, 90288128);
    g_assert_cmpint(s->v.v[METRIC_FLUSH_OPS], ==, 37);
    g_assert_cmpint(qmp_client_get_state(fx->client), ==, QMP_CLIENT_READY);
}

/* 59 images already went past the old depth limit of 64. */
static void
test_backing_chain_64(Fixture *fx, gconstpointer data)
{
    check_backing_chain(fx, 64);
}

static void
test_backing_chain_200(Fixture *fx, gconstpointer data)
{
    check_backing_chain(fx, 200);
}

/* The longest chain QMP_DEFAULT_MAX_DEPTH is sized for. */
static void
test_backing_chain_1000(Fixture *fx, gconstpointer data)
{
    check_backing_chain(fx, 1000);
}

#define STATS_VCPU_ARGS \
    "{\"target\": \"vcpu\", \"providers\": [{\"provider\": \"kvm\"," \
    " \"names\": [\"exits\", \"io_exits\", \"mmio_exits\", \"halt_exits\"]}]}"

/* The reply of QEMU to STATS_VCPU_ARGS for @n vCPUs; vCPU i has exits
 * 1000 + i, the others small counts. */
static char *
stats_vcpus_reply(guint n)
{
    GString *out = g_string_new("{\"return\": [");

    for (guint i = 0; i < n; i++)
        g_string_append_printf(out,
            "%s{\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[%u]\","
            " \"stats\": [{\"name\": \"halt_exits\", \"value\": 73412},"
            " {\"name\": \"mmio_exits\", \"value\": 20871},"
            " {\"name\": \"io_exits\", \"value\": 519},"
            " {\"name\": \"exits\", \"value\": %u}]}",
            i ? ", " : "", i + 1, 1000 + i);
    g_string_append(out, "]}");
    return g_string_free(out, FALSE);
}

static void
test_stats_512_vcpus(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStats) vcpu = NULL;
    g_autofree char *reply = stats_vcpus_reply(512);
    guint64 exits = 0, io = 0;

    g_test_message("512 vCPUs: reply of %zu bytes", strlen(reply));
    qmp_fake_handshake(fx->fake);
    /* The request names the counters: all of them would be ~1.5 MB here. */
    qmp_fake_expect(fx->fake, "query-stats", STATS_VCPU_ARGS, reply);
    vcpu = qmp_query_stats_sync(fx->client, QMP_STATS_TARGET_VCPU, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(vcpu->entities->len, ==, 512);
    g_assert_true(qmp_stats_sum(vcpu, "exits", &exits));
    /* sum of 1000 + i over i < 512 */
    g_assert_cmpuint(exits, ==, 512 * 1000 + 511 * 512 / 2);
    g_assert_true(qmp_stats_sum(vcpu, "io_exits", &io));
    g_assert_cmpuint(io, ==, 512 * 519);
}

/* KVM statistics are uint64: the full range decodes, and a sum wraps
 * modulo 2^64 as the counters themselves do. */
static void
test_stats_uint64(Fixture *fx, gconstpointer data)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStats) vcpu = NULL;
    g_autoptr(GPtrArray) blk = NULL;
    guint64 v = 0;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_filled(fx->fake, "query-blockstats", NULL,
        "{\"return\": [{\"device\": \"\", \"node-name\": \"big\","
        " \"stats\": {\"rd_operations\": 18446744073709551615, \"rd_bytes\": 9223372036854775808,"
        " \"rd_total_time_ns\": 1, \"wr_operations\": 0, \"wr_bytes\": 0, \"wr_total_time_ns\": 0,"
        " \"flush_operations\": 0, \"flush_total_time_ns\": 0}}]}");
    qmp_fake_expect(fx->fake, "query-stats", STATS_VCPU_ARGS,
        "{\"return\": ["
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[0]\","
        "  \"stats\": [{\"name\": \"exits\", \"value\": 18446744073709551615},"
        "             {\"name\": \"io_exits\", \"value\": 9223372036854775808}]},"
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[1]\","
        "  \"stats\": [{\"name\": \"io_exits\", \"value\": 9223372036854775809}]}]}");
    blk = qmp_query_blockstats_sync(fx->client, &err);
    g_assert_no_error(err);
    /* held at the top of the vector's range (qmp-decode.c) */
    g_assert_cmpint(((QmpBlockStats *)blk->pdata[0])->v.v[METRIC_RD_OPS], ==, G_MAXINT64);
    g_assert_cmpint(((QmpBlockStats *)blk->pdata[0])->v.v[METRIC_RD_BYTES], ==, G_MAXINT64);
    vcpu = qmp_query_stats_sync(fx->client, QMP_STATS_TARGET_VCPU, &err);
    g_assert_no_error(err);
    g_assert_true(qmp_stats_sum(vcpu, "exits", &v));
    g_assert_cmpuint(v, ==, G_MAXUINT64);
    g_assert_true(qmp_stats_sum(vcpu, "io_exits", &v));
    g_assert_cmpuint(v, ==, 1);     /* 2^63 + 2^63 + 1 modulo 2^64 */
}

/*
 * query-block: a network disk's file is its URI; an "inserted" without
 * "file", which BlockDeviceInfo always has, and a reply that is no list
 * are the wrong shape and fail naming the member.
 */
static void
test_query_block(Fixture *fx, gconstpointer data)
{
    static const char *const bad[] = {
        "{\"return\": [{\"device\": \"\", \"qdev\": \"vda\", \"inserted\": {\"ro\": false}}]}",
        "{\"return\": [{\"qdev\": \"vda\"}]}",
        "{\"return\": {\"device\": \"\"}}",
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) blocks = NULL;
    const QmpBlockInfo *b;

    qmp_fake_handshake(fx->fake);
    qmp_fake_expect_filled(fx->fake, "query-block", NULL,
        "{\"return\": [{\"device\": \"\", \"qdev\": \"/machine/peripheral/vdb/virtio-backend\","
        " \"type\": \"unknown\", \"inserted\": {\"file\": \"nbd://nas:10809/vm-b\","
        " \"drv\": \"raw\", \"image\": {\"filename\": \"nbd://nas:10809/vm-b\","
        " \"format\": \"raw\", \"virtual-size\": 0}}}]}");
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++)
        qmp_fake_expect_unchecked(fx->fake, "query-block", NULL, bad[i]);
    blocks = qmp_query_block_sync(fx->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(blocks->len, ==, 1);
    b = blocks->pdata[0];
    g_assert_cmpstr(b->qdev, ==, "/machine/peripheral/vdb/virtio-backend");
    g_assert_cmpstr(b->file, ==, "nbd://nas:10809/vm-b");
    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autoptr(GPtrArray) none = qmp_query_block_sync(fx->client, &err);

        g_assert_null(none);
        g_assert_error(err, QMP_ERROR, QMP_ERROR_UNEXPECTED);
        g_test_message("%s", err->message);
        g_clear_error(&err);
    }
}

static void
fixture_setup_short(Fixture *fx, gconstpointer data)
{
    fixture_setup_opts(fx, 200, 0);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
#define ADD(path, fn, setup) \
    g_test_add("/qmp/client/" path, Fixture, NULL, setup, fn, fixture_teardown)
    ADD("handshake", test_handshake, fixture_setup);
    ADD("queued-before-ready", test_queued_before_ready, fixture_setup);
    ADD("query-iothreads", test_query_iothreads, fixture_setup);
    ADD("iothread-set-get", test_iothread_set_get, fixture_setup);
    ADD("iothread-set-validates", test_iothread_set_validates, fixture_setup);
    ADD("blockstats-and-map", test_blockstats_and_map, fixture_setup);
    ADD("query-block", test_query_block, fixture_setup);
    ADD("device-map-newer", test_device_map_newer, fixture_setup);
    ADD("query-stats", test_query_stats, fixture_setup);
    ADD("status-name-version", test_status_name_version, fixture_setup);
    ADD("error-reply", test_error_reply, fixture_setup);
    ADD("events-interleaved", test_events_interleaved, fixture_setup);
    ADD("out-of-order-replies", test_out_of_order_replies, fixture_setup);
    ADD("bad/garbage-greeting", test_garbage_greeting, fixture_setup);
    ADD("bad/greeting-wrong-shape", test_greeting_wrong_shape, fixture_setup);
    ADD("bad/random-bytes", test_random_bytes, fixture_setup);
    ADD("bad/huge-line", test_huge_line, fixture_setup);
    ADD("bad/never-answers", test_never_answers, fixture_setup_short);
    g_test_add_func("/qmp/client/queue-behind-slow-peer", test_queue_behind_slow_peer);
    ADD("bad/no-greeting", test_no_greeting, fixture_setup_short);
    ADD("bad/close-mid-reply", test_close_mid_reply, fixture_setup);
    ADD("bad/drip", test_drip, fixture_setup);
    ADD("unref-in-callback", test_unref_in_callback, fixture_setup);
    ADD("limits/backing-chain-64", test_backing_chain_64, fixture_setup);
    ADD("limits/backing-chain-200", test_backing_chain_200, fixture_setup);
    ADD("limits/backing-chain-1000", test_backing_chain_1000, fixture_setup);
    ADD("limits/stats-512-vcpus", test_stats_512_vcpus, fixture_setup);
    ADD("limits/stats-uint64", test_stats_uint64, fixture_setup);
#undef ADD
    return g_test_run();
}
