/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The QMP client against a real qemu-system-x86_64: what the fake QEMU
 * cannot prove is that we imagined QEMU's replies right.
 */
#include "pt-test-qemu.h"
#include "pt-test-qmp-sync.h"

#include <signal.h>

static QmpClient *
connect_ready(PtTestQemu *q)
{
    g_autoptr(GError) err = NULL;
    QmpClient *c = qmp_client_new(NULL, &(QmpClientOptions){ .name = "qemu-test" });

    g_assert_true(qmp_client_connect_path(c, q->qmp_path, &err));
    g_assert_no_error(err);
    g_assert_true(qmp_client_wait_ready_sync(c, &err));
    g_assert_no_error(err);
    return c;
}

static QmpIothread *
find_iothread(GPtrArray *threads, const char *id)
{
    for (guint i = 0; i < threads->len; i++) {
        QmpIothread *t = threads->pdata[i];

        if (g_str_equal(t->id, id))
            return t;
    }
    return NULL;
}

static void
test_machine_none(void)
{
    static const char *const args[] = {
        "-object", "iothread,id=iot0",
        "-object", "iothread,id=iot1,poll-max-ns=1000,poll-grow=4,poll-shrink=2",
        "-blockdev", "null-co,node-name=null0",
        NULL,
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autoptr(GPtrArray) threads = NULL;
    g_autoptr(GPtrArray) after = NULL;
    g_autoptr(QmpStatus) st = NULL;
    g_autoptr(QmpVersion) v = NULL;
    QmpIothread *t;
    gint64 value = -1;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start(args, &err);
    g_assert_no_error(err);
    c = connect_ready(q);

    g_assert_cmpint(qmp_client_get_peer_pid(c), ==, q->pid);
    v = qmp_query_version_sync(c, &err);
    g_assert_no_error(err);
    g_assert_cmpint(v->major, ==, qmp_client_get_version(c)->major);
    g_assert_cmpint(v->major, >=, 7);

    threads = qmp_query_iothreads_sync(c, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(threads->len, ==, 2);
    t = find_iothread(threads, "iot0");
    g_assert_nonnull(t);
    g_assert_cmpuint(t->poll_max_ns, ==, 32768);     /* QEMU's default */
    g_assert_cmpuint(t->poll_grow, ==, 0);
    g_assert_cmpint(t->thread_id, >, 0);
    t = find_iothread(threads, "iot1");
    g_assert_nonnull(t);
    g_assert_cmpuint(t->poll_max_ns, ==, 1000);
    g_assert_cmpuint(t->poll_grow, ==, 4);
    g_assert_cmpuint(t->poll_shrink, ==, 2);

    /* Each property, set and read back both ways. */
    for (QmpIothreadProp p = 0; p < QMP_IOTHREAD_AIO_MAX_BATCH; p++) {
        g_assert_true(qmp_iothread_set_sync(c, "iot0", p, 7 + p, 1000000, &err));
        g_assert_no_error(err);
        g_assert_true(qmp_iothread_get_sync(c, "iot0", p, &value, &err));
        g_assert_cmpint(value, ==, 7 + p);
    }
    after = qmp_query_iothreads_sync(c, &err);
    t = find_iothread(after, "iot0");
    g_assert_cmpuint(t->poll_max_ns, ==, 7);
    g_assert_cmpuint(t->poll_grow, ==, 8);
    g_assert_cmpuint(t->poll_shrink, ==, 9);

    /* QEMU's own refusal comes back as a command error. */
    g_assert_false(qmp_iothread_set_sync(c, "nosuch", QMP_IOTHREAD_POLL_MAX_NS, 1, 10, &err));
    g_assert_error(err, QMP_ERROR, QMP_ERROR_COMMAND);
    g_clear_error(&err);

    st = qmp_query_status_sync(c, &err);
    g_assert_no_error(err);
    g_assert_true(st->running);
}

static void
test_virtio_blk_map(void)
{
    static const char *const args[] = {
        "-machine", "q35,accel=tcg", "-m", "128",
        "-object", "iothread,id=iot0",
        "-object", "iothread,id=iot1",
        "-blockdev", "null-co,node-name=null0,read-zeroes=on",
        "-device", "virtio-blk-pci,drive=null0,id=vblk0,iothread=iot1",
        "-blockdev", "null-co,node-name=null1,read-zeroes=on",
        "-device", "virtio-blk-pci,drive=null1,id=vblk1",
        /* virtio-scsi: the disk's iothread is its controller's. */
        "-device", "virtio-scsi-pci,id=scsi0,iothread=iot0",
        "-blockdev", "null-co,node-name=null2,read-zeroes=on",
        "-device", "scsi-hd,drive=null2,id=sd0,bus=scsi0.0",
        NULL,
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autoptr(GPtrArray) stats = NULL;
    g_autofree char *name = NULL;
    guint mapped = 0;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start(args, &err);
    g_assert_no_error(err);
    c = connect_ready(q);

    stats = qmp_query_blockstats_sync(c, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(stats->len, ==, 3);
    for (guint i = 0; i < stats->len; i++) {
        QmpBlockStats *s = stats->pdata[i];
        g_auto(GStrv) iots = NULL;

        g_assert_nonnull(s->qdev);
        g_assert_true(qmp_device_iothreads_sync(c, s->qdev, &iots, &err));
        g_assert_no_error(err);
        if (g_str_equal(s->node_name, "null0")) {
            g_assert_cmpuint(g_strv_length(iots), ==, 1);
            g_assert_cmpstr(iots[0], ==, "iot1");
        } else if (g_str_equal(s->node_name, "null2")) {
            /* Found through the disk's parent bus. */
            g_assert_cmpstr(s->qdev, ==, "sd0");
            g_assert_cmpuint(g_strv_length(iots), ==, 1);
            g_assert_cmpstr(iots[0], ==, "iot0");
        } else {
            g_assert_cmpstr(s->node_name, ==, "null1");
            g_assert_cmpuint(g_strv_length(iots), ==, 0);     /* main loop */
        }
        mapped++;
    }
    g_assert_cmpuint(mapped, ==, 3);

    name = qmp_query_name_sync(c, &err);
    g_assert_cmpstr(name, ==, "pt-test");
}

static void
test_kvm_stats(void)
{
    static const char *const args[] = {
        "-machine", "q35,accel=kvm", "-m", "128", "-smp", "2",
        "-object", "iothread,id=iot0",
        NULL,
    };
    g_autofree char *why = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autoptr(QmpStats) first = NULL;
    g_autoptr(QmpStats) second = NULL;
    g_autoptr(QmpStats) vm = NULL;
    g_autoptr(GPtrArray) schemas = NULL;
    guint64 e1 = 0, e2 = 0;

    if (!pt_test_have_kvm(&why)) {
        g_test_skip(why);
        return;
    }
    q = pt_test_qemu_start(args, &err);
    g_assert_no_error(err);
    c = connect_ready(q);

    first = qmp_query_stats_sync(c, QMP_STATS_TARGET_VCPU, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(first->entities->len, ==, 2);
    g_assert_true(qmp_stats_sum(first, "exits", &e1));
    g_usleep(300 * 1000);
    second = qmp_query_stats_sync(c, QMP_STATS_TARGET_VCPU, &err);
    g_assert_true(qmp_stats_sum(second, "exits", &e2));
    g_assert_cmpuint(e2, >, e1);

    vm = qmp_query_stats_sync(c, QMP_STATS_TARGET_VM, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(vm->entities->len, ==, 1);
    schemas = qmp_query_stats_schemas_sync(c, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(schemas->len, >, 10);
}

static void
test_qemu_killed(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autoptr(GPtrArray) threads = NULL;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start_iothreads(1, &err);
    g_assert_no_error(err);
    c = connect_ready(q);
    pt_test_qemu_signal(q, SIGKILL);
    threads = qmp_query_iothreads_sync(c, &err);
    g_assert_null(threads);
    g_assert_error(err, QMP_ERROR, QMP_ERROR_CLOSED);
    g_assert_nonnull(strstr(err->message, "qemu-test: query-iothreads: "));
    g_assert_cmpint(qmp_client_get_state(c), ==, QMP_CLIENT_CLOSED);
}

static void
test_qemu_stopped(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) c = NULL;
    g_autoptr(GPtrArray) threads = NULL;
    gint64 start;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start_iothreads(1, &err);
    g_assert_no_error(err);
    c = qmp_client_new(NULL, &(QmpClientOptions){ .name = "stopped", .timeout_ms = 300 });
    g_assert_true(qmp_client_connect_path(c, q->qmp_path, &err));
    g_assert_true(qmp_client_wait_ready_sync(c, &err));
    pt_test_qemu_signal(q, SIGSTOP);
    start = g_get_monotonic_time();
    threads = qmp_query_iothreads_sync(c, &err);
    g_assert_null(threads);
    g_assert_error(err, QMP_ERROR, QMP_ERROR_TIMEOUT);
    g_assert_cmpint(g_get_monotonic_time() - start, <, 2 * G_USEC_PER_SEC);
    pt_test_qemu_signal(q, SIGCONT);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/qemu/machine-none", test_machine_none);
    g_test_add_func("/qmp/qemu/virtio-blk-map", test_virtio_blk_map);
    g_test_add_func("/qmp/qemu/kvm-stats", test_kvm_stats);
    g_test_add_func("/qmp/qemu/killed", test_qemu_killed);
    g_test_add_func("/qmp/qemu/stopped", test_qemu_stopped);
    return g_test_run();
}
