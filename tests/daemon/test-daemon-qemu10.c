/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Facts of QEMU 10.0 that the daemon relies on, checked on the real QEMU 10
 * of the second test generation (meson test --setup qemu10; on QEMU 7.2 the
 * cases skip, saying why).  The daemon runs in this process against a TCG
 * q35 machine, never started (-S), that has:
 *
 *   iot0, iot1  a virtio-blk-pci ("vdc", four queues) whose iothread-vq-mapping
 *               spreads its queues over both: one group of two
 *   iot2        a virtio-scsi-pci whose own iothread-vq-mapping names iot2
 *               alone, with a scsi-hd on it
 *   iot3        a plain virtio-blk-pci on iothread=iot3
 *   iot4        no device
 *
 * and checks that the daemon reads the release (10.0) and picks the 10.0
 * polling model, maps every device as described, reports query-iothreads'
 * triple as QEMU holds it (set on -object, then written by the daemon), and
 * for a TCG guest chooses no exits source, saying why.
 */
#include <json-c/json.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "pt-daemon.h"
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "pt-test-qmp-sync.h"
#include "qmp-json.h"

static const char *const iothreads[] = { "iot0", "iot1", "iot2", "iot3", "iot4" };

typedef struct {
    PtDaemon *d;
    const char *socket;         /* the target's identity: its QMP socket's path */
    guint ticks;                /* ticks with I/O figures wanted of iot0-iot3 */
} Settled;

static PtTarget *
the_target(PtDaemon *d, const char *socket)
{
    return pt_daemon_find_target(d, socket);
}

static const PolicyMetrics *
last_metrics(PtTarget *t, const char *id)
{
    PtIothread *io = t ? g_hash_table_lookup(t->iothreads, id) : NULL;

    return io && io->history->len ?
           &g_array_index(io->history, PolicyMetrics, io->history->len - 1) : NULL;
}

static gboolean
settled(gpointer data)
{
    Settled *s = data;
    PtTarget *t = the_target(s->d, s->socket);

    if (!t || t->state != PT_TARGET_ATTACHED)
        return FALSE;
    for (guint i = 0; i < 4; i++) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, iothreads[i]);

        if (!io || io->history->len < s->ticks || !io->have_triple)
            return FALSE;
    }
    return TRUE;
}

static gboolean
loop_until(gboolean (*cond)(gpointer), gpointer data, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    while (!cond(data) && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    return cond(data);
}

typedef struct {
    QmpClient *qmp;
    const char *id;
    gint64 max_ns, grow, shrink;
} TripleWait;

/* query-iothreads, on the test's own monitor, reports @id's triple. */
static gboolean
reports_triple(gpointer data)
{
    TripleWait *w = data;
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) ret = pt_test_qmp_run(w->qmp, "query-iothreads", NULL, &err);

    g_assert_no_error(err);
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);

        if (g_str_equal(pt_json_path_str(e, "id"), w->id))
            return pt_json_path_int(e, "poll-max-ns") == w->max_ns &&
                   pt_json_path_int(e, "poll-grow") == w->grow &&
                   pt_json_path_int(e, "poll-shrink") == w->shrink;
    }
    return FALSE;
}

static gboolean
reports_triple_now(QmpClient *qmp, const char *id, gint64 max_ns, gint64 grow, gint64 shrink,
                   guint ms)
{
    TripleWait w = { qmp, id, max_ns, grow, shrink };

    return loop_until(reports_triple, &w, ms);
}

static void
set_true(gpointer data)
{
    *(gboolean *)data = TRUE;
}

static gboolean
is_true(gpointer data)
{
    return *(gboolean *)data;
}

static void
test_qemu10_facts(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestQemu) qemu = NULL;
    g_autoptr(QmpClient) mon = NULL;
    g_autoptr(PtDaemon) d = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *img = NULL;
    g_autofree char *mon_path = NULL;
    g_autofree char *mon_arg = NULL;
    g_autofree char *blk = NULL;
    g_autofree char *conf_text = NULL;
    g_autofree char *db = NULL;
    const char *why = NULL;
    PtConf *conf;
    PtTarget *t;
    PtIothread *io;
    Settled s;

    if (pt_test_skip_below_qemu(10, 0))
        return;
    dir = g_dir_make_tmp("pt-qemu10-XXXXXX", &err);
    g_assert_no_error(err);
    mon_path = g_build_filename(dir, "mon.socket", NULL);
    mon_arg = g_strdup_printf("unix:%s,server=on,wait=off", mon_path);
    img = g_build_filename(dir, "disk.raw", NULL);
    g_assert_true(g_file_set_contents(img, "", 0, NULL));
    g_assert_cmpint(truncate(img, 16 << 20), ==, 0);
    blk = g_strdup_printf("driver=file,filename=%s,node-name=d3", img);
    {
        const char *args[] = {
            "-machine", "q35", "-accel", "tcg", "-S",
            "-qmp", mon_arg,
            "-object", "iothread,id=iot0,poll-max-ns=65536,poll-grow=4,poll-shrink=2",
            "-object", "iothread,id=iot1", "-object", "iothread,id=iot2",
            "-object", "iothread,id=iot3", "-object", "iothread,id=iot4",
            "-blockdev", "driver=null-co,node-name=d0,read-zeroes=on",
            "-device", "{\"driver\": \"virtio-blk-pci\", \"id\": \"vdc\", \"drive\": \"d0\","
                       " \"num-queues\": 4, \"iothread-vq-mapping\":"
                       " [{\"iothread\": \"iot0\"}, {\"iothread\": \"iot1\"}]}",
            "-device", "{\"driver\": \"virtio-scsi-pci\", \"id\": \"scsi0\", \"num_queues\": 2,"
                       " \"iothread-vq-mapping\": [{\"iothread\": \"iot2\"}]}",
            "-blockdev", "driver=null-co,node-name=d1,read-zeroes=on",
            "-device", "{\"driver\": \"scsi-hd\", \"id\": \"sd0\", \"drive\": \"d1\","
                       " \"bus\": \"scsi0.0\"}",
            "-blockdev", blk,
            "-device", "virtio-blk-pci,id=vdd,drive=d3,iothread=iot3",
            NULL,
        };

        qemu = pt_test_qemu_start(args, &err);
        g_assert_no_error(err);
    }
    mon = pt_test_qmp_connect(mon_path, "qemu10-test");
    /* query-iothreads: the -object values, and QEMU's defaults (32768/0/0). */
    g_assert_true(reports_triple_now(mon, "iot0", 65536, 4, 2, 1000));
    g_assert_true(reports_triple_now(mon, "iot1", 32768, 0, 0, 1000));

    db = g_build_filename(dir, "db.sqlite", NULL);
    conf_text = g_strdup_printf("[daemon]\ndatabase = %s\ninterval = 200ms\n"
                                "exits-source = auto\nmetrics-listen =\n"
                                "[targets]\nlibvirt = false\nqmp-globs = %s\n"
                                "[policy]\ndefault = static:70000/3/4\nmin-dwell = 0\n",
                                db, qemu->qmp_path);
    conf = pt_conf_load_data(conf_text, strlen(conf_text), "test", &err);
    g_assert_no_error(err);
    d = pt_daemon_new(conf, NULL, &err);
    g_assert_no_error(err);
    g_assert_true(pt_daemon_start(d, &err));
    g_assert_no_error(err);

    s = (Settled){ .d = d, .socket = qemu->qmp_path, .ticks = 3 };
    g_assert_true(loop_until(settled, &s, 60000));
    t = the_target(d, qemu->qmp_path);

    /* The release from the greeting, and the 10.0 polling model. */
    g_assert_cmpuint(t->qemu_version / 1000, ==, 10000);
    g_assert_cmpint(policy_poll_model_for_version(t->qemu_version), ==, POLICY_POLL_MODEL_10);

    /* Each device's iothreads, resolved by the daemon's own walk
     * (qmp_device_iothreads_*()) from the qdev query-blockstats names:
     * the vq-mapped virtio-blk on iot0 and iot1, the scsi-hd (qdev "sd0")
     * where its vq-mapped controller runs, iot2, the plain one on iot3. */
    {
        static const struct {
            const char *qdev;
            const char *const want[3];
        } rows[] = {
            { "/machine/peripheral/vdc/virtio-backend", { "iot0", "iot1", NULL } },
            { "sd0", { "iot2", NULL } },
            { "/machine/peripheral/vdd/virtio-backend", { "iot3", NULL } },
        };
        g_autoptr(json_object) stats = pt_test_qmp_run(mon, "query-blockstats", NULL, &err);
        guint found = 0;

        g_assert_no_error(err);
        for (size_t i = 0; i < json_object_array_length(stats); i++)
            for (guint r = 0; r < G_N_ELEMENTS(rows); r++)
                found += g_strcmp0(pt_json_path_str(json_object_array_get_idx(stats, i), "qdev"),
                                   rows[r].qdev) == 0;
        g_assert_cmpuint(found, ==, G_N_ELEMENTS(rows));
        for (guint r = 0; r < G_N_ELEMENTS(rows); r++) {
            g_auto(GStrv) iots = NULL;

            g_assert_true(qmp_device_iothreads_sync(mon, rows[r].qdev, &iots, &err));
            g_assert_no_error(err);
            g_assert_cmpstrv(iots, rows[r].want);
        }
    }

    /* Which the daemon turns into groups: iot0 and iot1 one, its I/O shared
     * by two; iot2, iot3 (and iot4, without a device) alone. */
    for (guint i = 0; i < G_N_ELEMENTS(iothreads); i++) {
        const PolicyMetrics *m = last_metrics(t, iothreads[i]);

        io = g_hash_table_lookup(t->iothreads, iothreads[i]);
        g_assert_nonnull(io);
        g_test_message("%s: group %s of %u, have_io %d, shared by %u", iothreads[i],
                       io->group ? io->group : "-", io->group_size, m ? m->have_io : -1,
                       m ? m->io_shared_by : 0);
        g_assert_cmpstr(io->group, ==, i < 2 ? "iot0" : NULL);
        if (i < 4) {
            g_assert_nonnull(m);
            g_assert_true(m->have_io);
            g_assert_cmpuint(m->io_shared_by, ==, i < 2 ? 2 : 0);
        }
    }
    g_assert_cmpuint(((PtIothread *)g_hash_table_lookup(t->iothreads, "iot0"))->group_size,
                     ==, 2);

    /* TCG: no exits source, and the reason says so. */
    g_assert_cmpint(pt_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_NONE);
    g_test_message("exits: %s", why);
    g_assert_nonnull(why);
    g_assert_nonnull(strstr(why, "without KVM"));

    /* The daemon's qom-set is what query-iothreads then reports, on every
     * iothread; a clean stop puts the -object values back. */
    for (guint i = 0; i < G_N_ELEMENTS(iothreads); i++)
        g_assert_true(reports_triple_now(mon, iothreads[i], 70000, 3, 4, 10000));
    {
        gboolean done = FALSE;

        pt_daemon_shutdown(d, 10000, G_CALLBACK(set_true), &done);
        g_assert_true(loop_until(is_true, &done, 20000));
    }
    g_assert_true(reports_triple_now(mon, "iot0", 65536, 4, 2, 1000));
    g_assert_true(reports_triple_now(mon, "iot1", 32768, 0, 0, 1000));
    g_clear_pointer(&d, pt_daemon_free);

    g_clear_object(&mon);
    g_clear_pointer(&qemu, pt_test_qemu_free);
    for (const char *const *f = (const char *const[]){ "db.sqlite", "db.sqlite-wal",
                                                        "db.sqlite-shm", "disk.raw",
                                                        "mon.socket", NULL }; *f; f++) {
        g_autofree char *p = g_build_filename(dir, *f, NULL);

        g_unlink(p);
    }
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/qemu10/facts", test_qemu10_facts);
    return g_test_run();
}
