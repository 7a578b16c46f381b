/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A new disk behind the same device name learns again.  A scripted QEMU
 * 7.2 serves one virtio-blk, node "disk-vda" on iot0, with steady reads
 * (8000 IOPS of 4 KiB at 105 us: queue depth 0.84, in the middle of its
 * bands), and says in query-block which image backs it.  The daemon runs
 * three times on one history database, in this process:
 *
 *  1. on /images/a.qcow2: the signature of its ticks, keyed as the daemon
 *     keys the device, is what a past exploration would have learnt; the
 *     test stores it with a winner no probe uses (77777 ns);
 *  2. on /dev/nvme0n1, the same device name: the winner is not recalled;
 *  3. on /images/a.qcow2 again: it is.
 *
 * Mode recommend: nothing is written, so no write budget carries over
 * from one run to the next, and a recall shows as a decision of cause
 * remembered.
 *
 * Then a real QEMU 7.2, which has no guest to do I/O here, proves the
 * fake's shape: query-block names the device as query-blockstats does,
 * and its file is the image's path, so a QEMU started again on the same
 * socket with another image behind vda keys vda anew.
 */
#include <json-c/json.h>
#include <string.h>
#include <glib/gstdio.h>

#include "policy-memory.h"
#include "pt-daemon.h"
#include "pt-daemon-memory.h"
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "qmp-fake-qemu.h"
#include "store-memory.h"

#define VM "devkeyvm"
#define QDEV "/machine/peripheral/vda/virtio-backend"
#define IOPS 8000.0
#define LAT_NS 105000
#define WINNER_NS 77777
#define SOURCE_A "/images/a.qcow2"
#define SOURCE_B "/dev/nvme0n1"

typedef struct {
    gint64 last_us;
    double ops;
    PolicyTriple triple;
    const char *source;         /* what query-block says backs vda */
    QmpFakeQemu *fake;
} FakeQemu;

/* The string argument @key of a command, "" without it. */
static const char *
arg_string(json_object *args, const char *key)
{
    json_object *v = NULL;

    return args && json_object_object_get_ex(args, key, &v) ? json_object_get_string(v) : "";
}

static char *
fake_respond(const char *command, json_object *args, gpointer data)
{
    FakeQemu *q = data;
    const char *path = arg_string(args, "path"), *prop = arg_string(args, "property");
    if (g_str_equal(command, "query-iothreads"))
        return g_strdup_printf("{\"return\": [{\"id\": \"iot0\", \"thread-id\": 4001,"
                               " \"poll-max-ns\": %" G_GINT64_FORMAT ", \"poll-grow\": %"
                               G_GINT64_FORMAT ", \"poll-shrink\": %" G_GINT64_FORMAT ","
                               " \"aio-max-batch\": 0}]}", (gint64)q->triple.poll_max_ns,
                               (gint64)q->triple.poll_grow, (gint64)q->triple.poll_shrink);
    if (g_str_equal(command, "query-blockstats")) {
        gint64 now = g_get_monotonic_time();
        g_autofree char *reply = NULL;
        guint64 ops;

        q->ops += (now - q->last_us) / 1e6 * IOPS;
        q->last_us = now;
        ops = (guint64)q->ops;
        reply = g_strdup_printf("{\"return\": [{\"device\": \"\", \"node-name\": \"disk-vda\","
                                " \"qdev\": \"" QDEV "\", \"stats\": {\"rd_operations\": %"
                                G_GUINT64_FORMAT ", \"rd_bytes\": %" G_GUINT64_FORMAT ","
                                " \"rd_total_time_ns\": %" G_GUINT64_FORMAT "}}]}",
                                ops, ops * 4096, ops * LAT_NS);
        return qmp_fake_qemu_fill(q->fake, "query-blockstats", reply);
    }
    if (g_str_equal(command, "query-block")) {
        g_autofree char *reply = g_strdup_printf(
            "{\"return\": [{\"device\": \"\", \"qdev\": \"" QDEV "\", \"type\": \"unknown\","
            " \"inserted\": {\"file\": \"%s\", \"node-name\": \"disk-vda\", \"drv\": \"raw\","
            " \"image\": {\"filename\": \"%s\", \"format\": \"raw\", \"virtual-size\": 0}}}]}",
            q->source, q->source);

        return qmp_fake_qemu_fill(q->fake, "query-block", reply);
    }
    if (g_str_equal(command, "query-name"))
        return g_strdup("{\"return\": {\"name\": \"" VM "\"}}");
    if (g_str_equal(command, "query-kvm"))
        return g_strdup("{\"return\": {\"enabled\": false, \"present\": false}}");
    if (g_str_equal(command, "query-stats"))
        return g_strdup("{\"return\": []}");
    if (g_str_equal(command, "qom-get") && g_str_equal(path, QDEV) &&
        g_str_equal(prop, "iothread"))
        return g_strdup("{\"return\": \"/objects/iot0\"}");
    if (g_str_equal(command, "qom-get"))
        return g_strdup_printf("{\"error\": {\"class\": \"GenericError\", \"desc\":"
                               " \"Property '%s' not found\"}}", prop);
    return g_strdup_printf("{\"error\": {\"class\": \"CommandNotFound\", \"desc\":"
                           " \"The command %s has not been found\"}}", command);
}

typedef struct {
    char *dir;
    char *sock;
    char *db;
    FakeQemu q;
    QmpFakeQemu *fake;
    PtDaemon *d;
    const PolicyDecision *seen;
    guint remembered;           /* decisions of cause remembered on iot0 */
} Run;

/* polltuned in this process with @conf_text, no /proc of its QEMU under
 * @dir (CPU figures are absent; I/O is what counts), started. */
static PtDaemon *
daemon_up(const char *dir, const char *conf_text)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *proc = g_build_filename(dir, "proc", NULL);
    PtDaemonRoots roots = { .proc_root = proc, .debugfs_root = proc, .tracefs_root = proc };
    PtConf *conf = pt_conf_load_data(conf_text, strlen(conf_text), "test", &err);
    PtDaemon *d;

    g_assert_no_error(err);
    g_mkdir(proc, 0700);
    d = pt_daemon_new(conf, &roots, &err);
    g_assert_no_error(err);
    g_assert_true(pt_daemon_start(d, &err));
    g_assert_no_error(err);
    return d;
}

/* The daemon and a fresh scripted QEMU, vda backed by @source. */
static void
run_start(Run *r, const char *source)
{
    g_autofree char *conf_text = NULL;

    r->q = (FakeQemu){ .last_us = g_get_monotonic_time(), .source = source,
                       .triple = POLICY_TRIPLE_QEMU_DEFAULT };
    g_unlink(r->sock);
    r->fake = qmp_fake_qemu_new_listen(r->sock);
    qmp_fake_handshake(r->fake);
    qmp_fake_qemu_set_responder(r->fake, fake_respond, &r->q);
    r->q.fake = r->fake;
    r->seen = NULL;
    r->remembered = 0;
    /* 250 ms ticks, as test-daemon-devmap: the fake answers on this
     * thread and checks each reply against QEMU's schema. */
    conf_text = g_strdup_printf("[daemon]\ndatabase = %s\ninterval = 250ms\nmode = recommend\n"
                                "metrics-listen =\n[targets]\nlibvirt = false\n"
                                "qmp-globs = %s/*.qmp\n[policy]\ndefault = adaptive\n",
                                r->db, r->dir);
    r->d = daemon_up(r->dir, conf_text);
}

static void
run_stop(Run *r)
{
    g_clear_pointer(&r->d, pt_daemon_free);
    qmp_fake_close(r->fake);
    g_clear_pointer(&r->fake, qmp_fake_qemu_free);
}

static PtIothread *
run_iothread(Run *r, PtTarget **target)
{
    PtTarget *t = pt_daemon_resolve_target(r->d, VM, NULL);

    if (target)
        *target = t;
    return t ? g_hash_table_lookup(t->iothreads, "iot0") : NULL;
}

/* Ticks with I/O in iot0's history so far, counting recalls as they come. */
static guint
run_io_ticks(Run *r)
{
    PtIothread *io = run_iothread(r, NULL);
    guint n = 0;

    if (!io)
        return 0;
    if (io->last_decision && io->last_decision != r->seen) {
        r->seen = io->last_decision;
        if (r->seen->cause == POLICY_CAUSE_REMEMBERED) {
            g_test_message("iot0: %s", r->seen->reason);
            r->remembered++;
        }
    }
    for (guint k = 0; k < io->history->len; k++)
        n += g_array_index(io->history, PolicyMetrics, k).have_io;
    return n;
}

/* Run the loop until iot0 has @ticks ticks with I/O (or, @until_recall,
 * a recall); 60 s for a loaded host. */
static void
run_until(Run *r, guint ticks, gboolean until_recall)
{
    gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;

    while (run_io_ticks(r) < ticks && !(until_recall && r->remembered) &&
           g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
}

/* @sig stored for iot0 with a winner learnt an hour ago, confirmed a
 * minute ago, replacing what the first run kept. */
static void
store_winner(const char *path, const char *sig)
{
    g_autoptr(GError) err = NULL;
    gint64 now_ms = g_get_real_time() / 1000;
    PtMemoryRow row = {
        .signature = (char *)sig, .have_winner = 1, .winner_max_ns = WINNER_NS,
        .winner_score = 9.5, .winner_ticks = 5, .anchor_max_ns = 32768, .anchor_score = 9.0,
        .noise = 0.1, .learned_ms = now_ms - 3600000, .confirmed_ms = now_ms - 60000,
        .seen_ms = now_ms - 60000, .n_confirmed = 3, .n_explorations = 1,
    };
    PtMemoryRow *rows[] = { &row };
    StoreOptions opts;
    StoreDb *db;

    store_options_init(&opts);
    opts.now_ms = now_ms;
    db = store_db_open(path, &opts, &err);
    g_assert_no_error(err);
    g_assert_true(store_memory_save(db, VM, "iot0", rows, 1, now_ms, &err));
    g_assert_no_error(err);
    store_db_close(db);
}

static void
test_new_disk_learns_again(void)
{
    Run r = { 0 };
    PtTarget *t;
    PtIothread *io;
    PolicySignature sig;
    g_autofree char *key_a = NULL;
    g_autofree char *key_b = NULL;
    g_autofree char *sig_text = NULL;

    r.dir = g_dir_make_tmp("pt-devkey-XXXXXX", NULL);
    r.sock = g_build_filename(r.dir, "vm.qmp", NULL);
    r.db = g_build_filename(r.dir, "db.sqlite", NULL);

    /* 1: what the daemon keys this workload on disk A by. */
    run_start(&r, SOURCE_A);
    run_until(&r, 8, FALSE);
    io = run_iothread(&r, &t);
    g_assert_nonnull(io);
    key_a = pt_daemon_device_key(t, io);
    g_assert_true(policy_signature_compute((const PolicyMetrics *)io->history->data,
                                           io->history->len, t->qemu_version, key_a, &sig));
    sig_text = policy_signature_to_string(&sig);
    g_test_message("learnt on disk A: %s", sig_text);
    run_stop(&r);
    store_winner(r.db, sig_text);

    /* 2: another disk behind vda.  Its first two ticks with I/O are the
     * lookup; twelve leave room for a late one. */
    run_start(&r, SOURCE_B);
    run_until(&r, 12, FALSE);
    io = run_iothread(&r, &t);
    g_assert_nonnull(io);
    key_b = pt_daemon_device_key(t, io);
    g_assert_cmpuint(run_io_ticks(&r), >=, 12);
    g_assert_cmpuint(r.remembered, ==, 0);
    g_assert_cmpstr(key_a, ==, "disk-vda=" SOURCE_A);
    g_assert_cmpstr(key_b, ==, "disk-vda=" SOURCE_B);
    run_stop(&r);

    /* 3: disk A again: its winner comes back. */
    run_start(&r, SOURCE_A);
    run_until(&r, 12, TRUE);
    g_assert_cmpuint(r.remembered, >, 0);
    g_assert_cmpint(r.seen->triple.poll_max_ns, ==, WINNER_NS);
    run_stop(&r);

    pt_test_rm_rf(r.dir);
    g_free(r.sock);
    g_free(r.db);
    g_free(r.dir);
}

/* A paused pc machine (a disk needs a bus; no guest runs) named vm-dk,
 * its vda a raw image at @image on iot0, its monitor at @sock. */
static PtTestQemu *
real_qemu_start(const char *sock, const char *image)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *qmp = g_strdup_printf("unix:%s,server=on,wait=off", sock);
    g_autofree char *file = g_strdup_printf("driver=file,filename=%s,node-name=f0", image);
    const char *args[] = {
        "-machine", "pc,accel=tcg", "-S", "-name", "vm-dk", "-object", "iothread,id=iot0",
        "-blockdev", file, "-blockdev", "driver=raw,file=f0,node-name=disk0",
        "-device", "virtio-blk-pci,id=vda,drive=disk0,iothread=iot0", "-qmp", qmp, NULL,
    };
    PtTestQemu *q;

    g_assert_true(g_file_set_contents(image, "", 0, NULL));
    q = pt_test_qemu_start(args, &err);
    g_assert_no_error(err);
    return q;
}

/* The daemon's key of vm-dk's iot0 once it is @want, or the last one
 * seen within 30 s (NULL: none). */
static char *
real_key_wait(PtDaemon *d, const char *want)
{
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    char *key = NULL;

    while (g_get_monotonic_time() < deadline) {
        PtTarget *t = pt_daemon_resolve_target(d, "vm-dk", NULL);
        PtIothread *io = t ? g_hash_table_lookup(t->iothreads, "iot0") : NULL;

        g_free(key);
        key = io ? pt_daemon_device_key(t, io) : NULL;
        if (g_strcmp0(key, want) == 0)
            break;
        g_main_context_iteration(NULL, TRUE);
    }
    return key;
}

static void
test_real_qemu_source(void)
{
    g_autofree char *dir = NULL;
    g_autofree char *sock = NULL;
    char *images[2];
    g_autofree char *conf_text = NULL;
    g_autoptr(PtDaemon) d = NULL;
    PtTestQemu *q;

    if (pt_test_skip_without_qemu())
        return;
    dir = g_dir_make_tmp("pt-devkey-real-XXXXXX", NULL);
    sock = g_build_filename(dir, "vm-dk.qmp", NULL);
    for (guint i = 0; i < 2; i++)
        images[i] = g_build_filename(dir, i ? "b.img" : "a.img", NULL);
    conf_text = g_strdup_printf("[daemon]\ndatabase = %s/db.sqlite\ninterval = 200ms\n"
                                "mode = recommend\nmetrics-listen =\n[targets]\n"
                                "libvirt = false\nqmp-globs = %s/*.qmp\n[policy]\n"
                                "default = observe\n", dir, dir);
    d = daemon_up(dir, conf_text);

    for (guint i = 0; i < 2; i++) {
        g_autofree char *want = g_strconcat("disk0=", images[i], NULL);
        g_autofree char *key = NULL;

        q = real_qemu_start(sock, images[i]);
        key = real_key_wait(d, want);
        g_test_message("vda on %s: key %s", images[i], key);
        g_assert_cmpstr(key, ==, want);
        pt_test_qemu_free(q);
        g_unlink(sock);
        g_unlink(images[i]);
        g_free(images[i]);
    }

    g_clear_pointer(&d, pt_daemon_free);
    pt_test_rm_rf(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/devkey/new-disk-learns-again", test_new_disk_learns_again);
    g_test_add_func("/daemon/devkey/real-qemu-source", test_real_qemu_source);
    return g_test_run();
}
