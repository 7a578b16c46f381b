/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The device map: which iothreads get which devices' counters, and which
 * iothreads form a group because their I/O cannot be split.
 */
#include "probe-derive.h"
#include "probe-devmap.h"

static const ProbeIothreadSnap *
iot(const ProbeTargetSnap *s, const char *id)
{
    const ProbeIothreadSnap *io = probe_target_snap_find(s, id);

    g_assert_nonnull(io);
    return io;
}

static ProbeTargetSnap *
snap_with(gint64 mono_ns, guint64 scale, const ProbeDevMap *m)
{
    static const char *const ids[] = { "iot3", "iot1", "iot2", "iot0", "iot4", NULL };
    ProbeTargetSnap *s = probe_target_snap_new(42, mono_ns, mono_ns / 1000000);
    ProbeDevSample devs[] = {
        /* vq mapping over iot1 and iot3 */
        { "/machine/peripheral/vdb/virtio-backend", "vdb", { { [METRIC_RD_OPS] = 1000 * scale } } },
        /* single iothread iot3, which vdb shares: same group */
        { "vdc", "vdc", { { [METRIC_RD_OPS] = 10 * scale } } },
        /* iot2 alone, two devices */
        { "sda", "sda", { { [METRIC_RD_OPS] = 100 * scale } } },
        { "sdb", "sdb", { { [METRIC_WR_OPS] = 100 * scale } } },
        /* main loop, unknown, and an iothread QEMU does not list */
        { "ide0", "ide0", { { [METRIC_RD_OPS] = 7 * scale } } },
        { "new0", "new0", { { [METRIC_RD_OPS] = 7 * scale } } },
        { "gone", "gone", { { [METRIC_RD_OPS] = 7 * scale } } },
    };

    for (guint i = 0; ids[i]; i++)
        probe_iothread_snap_set_block_read(probe_target_snap_iothread(s, ids[i]));
    probe_devmap_fill(m, s, devs, G_N_ELEMENTS(devs));
    return s;
}

static void
test_groups(void)
{
    g_autoptr(ProbeDevMap) m = probe_devmap_new();
    static const char *const vdb[] = { "iot3", "iot1", NULL };
    static const char *const vdc[] = { "iot3", NULL };
    static const char *const sd[] = { "iot2", NULL };
    static const char *const gone[] = { "iot9", NULL };
    g_autoptr(ProbeTargetSnap) a = NULL;
    g_autoptr(ProbeTargetSnap) b = NULL;
    PolicyMetrics pm;

    probe_devmap_set(m, "/machine/peripheral/vdb/virtio-backend", vdb);
    probe_devmap_set(m, "vdc", vdc);
    probe_devmap_set(m, "sda", sd);
    probe_devmap_set(m, "sdb", sd);
    probe_devmap_set(m, "ide0", NULL);
    probe_devmap_set(m, "gone", gone);
    g_assert_true(probe_devmap_contains(m, "ide0"));
    g_assert_null(probe_devmap_lookup(m, "ide0")[0]);
    g_assert_false(probe_devmap_contains(m, "new0"));

    a = snap_with(1000000000, 1, m);
    b = snap_with(2000000000, 2, m);
    /* iot1 and iot3 share vdb: one group named by its smallest id, and
     * each member carries both devices of the group. */
    g_assert_cmpstr(iot(b, "iot1")->group, ==, "iot1");
    g_assert_cmpstr(iot(b, "iot3")->group, ==, "iot1");
    g_assert_cmpuint(iot(b, "iot1")->group_size, ==, 2);
    g_assert_cmpuint(iot(b, "iot1")->devices->len, ==, 2);
    g_assert_cmpuint(iot(b, "iot3")->devices->len, ==, 2);
    /* iot2 serves two devices alone: a group of one, as before. */
    g_assert_null(iot(b, "iot2")->group);
    g_assert_cmpuint(iot(b, "iot2")->group_size, ==, 1);
    g_assert_cmpuint(iot(b, "iot2")->devices->len, ==, 2);
    /* Nothing for iot0 and iot4: the main loop's, the unknown and the
     * vanished iothread's devices count for no iothread. */
    g_assert_cmpuint(iot(b, "iot0")->devices->len, ==, 0);
    g_assert_cmpuint(iot(b, "iot4")->devices->len, ==, 0);

    /* Over one second: each member has the group's 1010 IOPS, marked
     * shared by 2; iot2 its own 200, not marked. */
    g_assert_true(probe_derive_iothread(a, b, "iot3", &pm));
    g_assert_cmpfloat_with_epsilon(policy_metrics_iops(&pm), 1010, 1e-6);
    g_assert_cmpuint(pm.io_shared_by, ==, 2);
    g_assert_true(probe_derive_iothread(a, b, "iot1", &pm));
    g_assert_cmpfloat_with_epsilon(policy_metrics_iops(&pm), 1010, 1e-6);
    g_assert_true(probe_derive_iothread(a, b, "iot2", &pm));
    g_assert_cmpfloat_with_epsilon(policy_metrics_iops(&pm), 200, 1e-6);
    g_assert_cmpuint(pm.io_shared_by, ==, 0);
    g_assert_true(probe_derive_iothread(a, b, "iot0", &pm));
    g_assert_true(pm.have_io);
    g_assert_cmpfloat(policy_metrics_iops(&pm), ==, 0);
}

/* A map that changes splits a group again. */
static void
test_regroup(void)
{
    g_autoptr(ProbeDevMap) m = probe_devmap_new();
    static const char *const both[] = { "iot0", "iot1", NULL };
    static const char *const one[] = { "iot1", NULL };
    g_autoptr(ProbeTargetSnap) s = NULL;
    ProbeDevSample dev = { "vda", "vda", { { [METRIC_RD_OPS] = 5 } } };

    probe_devmap_set(m, "vda", both);
    s = probe_target_snap_new(1, 1, 1);
    probe_target_snap_iothread(s, "iot0");
    probe_target_snap_iothread(s, "iot1");
    probe_devmap_fill(m, s, &dev, 1);
    g_assert_cmpstr(iot(s, "iot1")->group, ==, "iot0");
    probe_devmap_set(m, "vda", one);
    probe_devmap_clear(m);
    g_assert_false(probe_devmap_contains(m, "vda"));
    probe_devmap_set(m, "vda", one);
    g_clear_pointer(&s, probe_target_snap_free);
    s = probe_target_snap_new(1, 2, 2);
    probe_target_snap_iothread(s, "iot0");
    probe_target_snap_iothread(s, "iot1");
    probe_devmap_fill(m, s, &dev, 1);
    g_assert_null(iot(s, "iot1")->group);
    g_assert_null(iot(s, "iot0")->group);
    g_assert_cmpuint(iot(s, "iot1")->devices->len, ==, 1);
}

/* DEVICE_DELETED forgets the device by id, by path and under its path,
 * and nothing else: an id that is a prefix of another's is no path. */
static void
test_forget(void)
{
    g_autoptr(ProbeDevMap) m = probe_devmap_new();
    static const char *const a[] = { "iot0", NULL };

    probe_devmap_set(m, "sd0", a);
    probe_devmap_set(m, "sd01", a);
    probe_devmap_set(m, "/machine/peripheral/vdc/virtio-backend", a);
    probe_devmap_set(m, "/machine/peripheral/vdcx/virtio-backend", a);
    /* A scsi-hd: {"device": "sd0", "path": "/machine/peripheral/sd0"}. */
    g_assert_cmpuint(probe_devmap_forget(m, "sd0", "/machine/peripheral/sd0"), ==, 1);
    g_assert_false(probe_devmap_contains(m, "sd0"));
    g_assert_true(probe_devmap_contains(m, "sd01"));
    /* A virtio-blk's backend first (no device id), then its proxy. */
    g_assert_cmpuint(probe_devmap_forget(m, NULL, "/machine/peripheral/vdc/virtio-backend"),
                     ==, 1);
    g_assert_cmpuint(probe_devmap_forget(m, "vdc", "/machine/peripheral/vdc"), ==, 0);
    g_assert_true(probe_devmap_contains(m, "/machine/peripheral/vdcx/virtio-backend"));
    probe_devmap_set(m, "/machine/peripheral/vdc/virtio-backend", a);
    g_assert_cmpuint(probe_devmap_forget(m, "vdc", "/machine/peripheral/vdc"), ==, 1);
    g_assert_cmpuint(probe_devmap_forget(m, NULL, NULL), ==, 0);
    g_assert_true(probe_devmap_contains(m, "sd01"));
}

/*
 * What backs each device reaches every member of its group with its
 * counters; another source behind the same name replaces it, and
 * clear and forget drop it with the device's iothreads.
 */
static void
test_sources(void)
{
    g_autoptr(ProbeDevMap) m = probe_devmap_new();
    static const char *const both[] = { "iot0", "iot1", NULL };
    static const char *const one[] = { "iot1", NULL };
    ProbeDevSample devs[] = {
        { "/machine/peripheral/vda/virtio-backend", "vda", { { [METRIC_RD_OPS] = 5 } } },
        { "vdb", "vdb", { { [METRIC_RD_OPS] = 5 } } },
    };
    ProbeTargetSnap *s;

    probe_devmap_set(m, devs[0].device, both);
    probe_devmap_set(m, "vdb", one);
    probe_devmap_set_source(m, devs[0].device, "/img/a.qcow2");
    g_assert_null(probe_devmap_source(m, "vdb"));
    for (guint round = 0; round < 2; round++) {
        const ProbeIothreadSnap *io;

        s = probe_target_snap_new(1, 1, 1);
        probe_target_snap_iothread(s, "iot0");
        probe_target_snap_iothread(s, "iot1");
        probe_devmap_fill(m, s, devs, G_N_ELEMENTS(devs));
        io = iot(s, "iot0");
        g_assert_cmpuint(io->devices->len, ==, 2);
        for (guint i = 0; i < io->devices->len; i++) {
            const ProbeDevice *d = &g_array_index(io->devices, ProbeDevice, i);

            if (g_str_equal(d->name, "vda"))
                g_assert_cmpstr(d->source, ==, round ? "/dev/nvme0n1" : "/img/a.qcow2");
            else
                g_assert_null(d->source);
        }
        probe_target_snap_free(s);
        probe_devmap_set_source(m, devs[0].device, "/dev/nvme0n1");
    }
    probe_devmap_set_source(m, "vdb", "rbd:pool/b");
    probe_devmap_set_source(m, "vdb", "");
    g_assert_null(probe_devmap_source(m, "vdb"));
    probe_devmap_set_source(m, "vdb", "rbd:pool/b");
    g_assert_cmpuint(probe_devmap_forget(m, NULL, "/machine/peripheral/vda"), ==, 1);
    g_assert_null(probe_devmap_source(m, devs[0].device));
    g_assert_cmpstr(probe_devmap_source(m, "vdb"), ==, "rbd:pool/b");
    probe_devmap_clear(m);
    g_assert_null(probe_devmap_source(m, "vdb"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/devmap/groups", test_groups);
    g_test_add_func("/probe/devmap/regroup", test_regroup);
    g_test_add_func("/probe/devmap/forget", test_forget);
    g_test_add_func("/probe/devmap/sources", test_sources);
    return g_test_run();
}
