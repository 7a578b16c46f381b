/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon against a QEMU 9.x/10.x that it reaches through its QMP
 * target: a virtio-blk whose queues are spread over two iothreads
 * (iothread-vq-mapping, its iothread link "") and a scsi-hd on a
 * virtio-scsi controller with an iothread of its own.  QEMU 7.2 has
 * neither, so a scripted monitor answers as those versions do, with block
 * counters that grow with time and iothreads that keep what qom-set wrote.
 * Polling pays on this fake: a device runs faster while all of its
 * iothreads poll, so the adaptive policy has a reason to keep polling.
 *
 * The same QEMU is large where a legitimate one can be: the vq-mapped
 * disk sits on a backing chain 64 images deep (query-blockstats nests one
 * level per image), and the guest has 512 vCPUs under KVM, whose exits
 * QEMU reports through query-stats.  Neither may make a sample fail.
 *
 * The daemon runs in this process, on this main loop, through the same
 * code as polltuned: attach by glob, sample, derive, decide, apply.
 */
#include <json-c/json.h>
#include <string.h>
#include <glib/gstdio.h>

#include "pt-daemon.h"
#include "pt-metrics.h"
#include "qmp-fake-qemu.h"

#define VDC_IOPS 5000.0         /* the vq-mapped virtio-blk, on iot0 + iot1 */
#define SD0_IOPS 3000.0         /* the scsi-hd, on its controller's iot2 */
#define NO_POLL_SLOWDOWN 0.6    /* a device's rate while one of its iothreads does not poll */
#define CHAIN_DEPTH 64          /* backing images under vdc */
#define N_VCPUS 512
#define VCPU_EXITS_PER_S 60.0   /* each vCPU's, as an idle KVM guest's */

typedef struct {
    gint64 start_us;
    gint64 last_us;
    double ops[2];              /* vdc, sd0 */
    PolicyTriple triple[3];     /* iot0, iot1, iot2 as qom-set left them */
    GPtrArray *writes;          /* "iot0 poll-max-ns=0", in order */
    gboolean restarted;         /* started again with vdc on iot1 alone */
    QmpFakeQemu *fake;          /* serving it now */
} FakeQemu;

static const char *const fake_iothreads[] = { "iot0", "iot1", "iot2" };

static char *
fake_blockstat(const char *node, const char *qdev, double total)
{
    guint64 ops = (guint64)total;

    return g_strdup_printf(
        "{\"device\": \"\", \"node-name\": \"%s\", \"qdev\": \"%s\", \"stats\": {"
        "\"rd_operations\": %" G_GUINT64_FORMAT ", \"rd_bytes\": %" G_GUINT64_FORMAT ","
        " \"rd_total_time_ns\": %" G_GUINT64_FORMAT ", \"wr_operations\": 0, \"wr_bytes\": 0,"
        " \"wr_total_time_ns\": 0, \"flush_operations\": 0, \"flush_total_time_ns\": 0,"
        " \"zone_append_operations\": 0, \"zone_append_bytes\": 0,"
        " \"zone_append_total_time_ns\": 0, \"timed_stats\": [], \"account_invalid\": true,"
        " \"account_failed\": true, \"invalid_rd_operations\": 0, \"unmap_operations\": 0}}",
        node, qdev, ops, ops * 4096, ops * 40000);
}

/* vdc's backing chain: one object per image, each under the one above. */
static char *
fake_backing_chain(guint depth)
{
    GString *s = g_string_new(NULL);

    for (guint i = 0; i < depth; i++)
        g_string_append_printf(s, ", \"backing\": {\"node-name\": \"vdc-img%u\", \"stats\":"
                               " {\"rd_operations\": %u, \"wr_operations\": 0,"
                               " \"flush_operations\": 0}", i, i);
    for (guint i = 0; i < depth; i++)
        g_string_append_c(s, '}');
    return g_string_free(s, FALSE);
}

/* query-stats for the vCPUs, each with the exits asked for. */
static char *
fake_vcpu_stats(FakeQemu *q)
{
    GString *r = g_string_new("{\"return\": [");
    guint64 each = (guint64)((g_get_monotonic_time() - q->start_us) / 1e6 * VCPU_EXITS_PER_S);

    for (guint i = 0; i < N_VCPUS; i++)
        g_string_append_printf(r, "%s{\"provider\": \"kvm\", \"qom-path\":"
                               " \"/machine/unattached/device[%u]\", \"stats\": ["
                               "{\"name\": \"exits\", \"value\": %" G_GUINT64_FORMAT "},"
                               " {\"name\": \"io_exits\", \"value\": 0},"
                               " {\"name\": \"mmio_exits\", \"value\": 0},"
                               " {\"name\": \"halt_exits\", \"value\": %" G_GUINT64_FORMAT "}]}",
                               i ? ", " : "", i, each + i, each / 2);
    g_string_append(r, "]}");
    return g_string_free(r, FALSE);
}

/* qom-get as QEMU 10.0 answers it for this machine. */
static char *
fake_qom_get(FakeQemu *q, const char *path, const char *prop)
{
    static const struct {
        const char *path, *prop, *reply;
    } table[] = {
        { "/machine/peripheral/vdc/virtio-backend", "iothread-vq-mapping",
          "{\"return\": [{\"iothread\": \"iot0\", \"vqs\": [0, 2]},"
          " {\"iothread\": \"iot1\", \"vqs\": [1, 3]}]}" },
        { "/machine/peripheral/vdc/virtio-backend", "iothread", "{\"return\": \"\"}" },
        { "/machine/peripheral/sd0", "parent_bus",
          "{\"return\": \"/machine/peripheral/scsi0/virtio-backend/scsi0.0\"}" },
        { "/machine/peripheral/scsi0/virtio-backend", "iothread-vq-mapping", "{\"return\": []}" },
        { "/machine/peripheral/scsi0/virtio-backend", "iothread",
          "{\"return\": \"/objects/iot2\"}" },
    };

    if (q->restarted && g_str_has_prefix(path, "/machine/peripheral/vdc/"))
        return g_strdup(g_str_equal(prop, "iothread") ? "{\"return\": \"/objects/iot1\"}" :
                                                        "{\"return\": []}");
    for (guint i = 0; i < G_N_ELEMENTS(table); i++)
        if (g_str_equal(path, table[i].path) && g_str_equal(prop, table[i].prop))
            return g_strdup(table[i].reply);
    if (!g_str_has_prefix(path, "/machine/peripheral/sd0") &&
        !g_str_has_prefix(path, "/machine/peripheral/vdc") &&
        !g_str_has_prefix(path, "/machine/peripheral/scsi0") &&
        !g_str_has_prefix(path, "/objects/"))
        return g_strdup_printf("{\"error\": {\"class\": \"DeviceNotFound\", \"desc\":"
                               " \"Device '%s' not found\"}}", path);
    return g_strdup_printf("{\"error\": {\"class\": \"GenericError\", \"desc\":"
                           " \"Property '%s' not found\"}}", prop);
}

static char *
fake_qom_set(FakeQemu *q, const char *path, const char *prop, gint64 value)
{
    for (guint i = 0; i < G_N_ELEMENTS(fake_iothreads); i++) {
        g_autofree char *p = g_strconcat("/objects/", fake_iothreads[i], NULL);

        if (!g_str_equal(path, p))
            continue;
        if (g_str_equal(prop, "poll-max-ns"))
            q->triple[i].poll_max_ns = value;
        else if (g_str_equal(prop, "poll-grow"))
            q->triple[i].poll_grow = value;
        else if (g_str_equal(prop, "poll-shrink"))
            q->triple[i].poll_shrink = value;
        g_ptr_array_add(q->writes, g_strdup_printf("%s %s=%" G_GINT64_FORMAT,
                                                   fake_iothreads[i], prop, value));
        return g_strdup("{\"return\": {}}");
    }
    return g_strdup("{\"error\": {\"class\": \"GenericError\", \"desc\": \"no such object\"}}");
}

static char *
fake_respond(const char *command, json_object *args, gpointer data)
{
    FakeQemu *q = data;
    json_object *v;
    const char *path = "", *prop = "";

    if (args && json_object_object_get_ex(args, "path", &v))
        path = json_object_get_string(v);
    if (args && json_object_object_get_ex(args, "property", &v))
        prop = json_object_get_string(v);
    if (g_str_equal(command, "query-iothreads")) {
        GString *r = g_string_new("{\"return\": [");

        for (guint i = 0; i < G_N_ELEMENTS(fake_iothreads); i++)
            g_string_append_printf(r, "%s{\"id\": \"%s\", \"thread-id\": %u,"
                                   " \"poll-max-ns\": %" G_GUINT64_FORMAT ","
                                   " \"poll-grow\": %" G_GUINT64_FORMAT ","
                                   " \"poll-shrink\": %" G_GUINT64_FORMAT ","
                                   " \"aio-max-batch\": 0}", i ? ", " : "",
                                   fake_iothreads[i], 4001 + i, q->triple[i].poll_max_ns,
                                   q->triple[i].poll_grow, q->triple[i].poll_shrink);
        g_string_append(r, "]}");
        return g_string_free(r, FALSE);
    }
    if (g_str_equal(command, "query-blockstats")) {
        gint64 now = g_get_monotonic_time();
        double secs = (now - q->last_us) / 1e6;
        g_autofree char *vdc = NULL;
        g_autofree char *sd0 = NULL;

        q->last_us = now;
        q->ops[0] += secs * VDC_IOPS * (q->triple[0].poll_max_ns && q->triple[1].poll_max_ns ?
                                        1.0 : NO_POLL_SLOWDOWN);
        q->ops[1] += secs * SD0_IOPS * (q->triple[2].poll_max_ns ? 1.0 : NO_POLL_SLOWDOWN);
        vdc = fake_blockstat("disk-vdc", "/machine/peripheral/vdc/virtio-backend", q->ops[0]);
        sd0 = fake_blockstat("disk-sd0", "sd0", q->ops[1]);
        {
            g_autofree char *chain = fake_backing_chain(CHAIN_DEPTH);

            g_autofree char *reply = NULL;

            /* vdc's entry ends in "}}": the chain goes inside the outer one. */
            vdc[strlen(vdc) - 1] = 0;
            reply = g_strdup_printf("{\"return\": [%s%s}, %s]}", vdc, chain, sd0);
            /* The members of QEMU 10's BlockDeviceStats this test leaves at 0. */
            return qmp_fake_qemu_fill(q->fake, "query-blockstats", reply);
        }
    }
    if (g_str_equal(command, "query-kvm"))
        return g_strdup("{\"return\": {\"enabled\": true, \"present\": true}}");
    if (g_str_equal(command, "query-name"))
        return g_strdup("{\"return\": {\"name\": \"vm10\"}}");
    if (g_str_equal(command, "query-stats")) {
        json_object *target = NULL;

        if (args)
            json_object_object_get_ex(args, "target", &target);
        if (target && g_str_equal(json_object_get_string(target), "vcpu"))
            return fake_vcpu_stats(q);
        return g_strdup("{\"return\": []}");
    }
    if (g_str_equal(command, "qom-get"))
        return fake_qom_get(q, path, prop);
    if (g_str_equal(command, "qom-set"))
        return fake_qom_set(q, path, prop, json_object_object_get_ex(args, "value", &v) ?
                            json_object_get_int64(v) : -1);
    /* Whatever else the daemon asks, a QEMU without it says so. */
    return g_strdup_printf("{\"error\": {\"class\": \"CommandNotFound\", \"desc\":"
                           " \"The command %s has not been found\"}}", command);
}

typedef struct {
    PtDaemon *d;
    FakeQemu *q;
    guint ticks;                /* ticks with I/O figures wanted per iothread */
    guint idle_decisions;       /* seen so far, on any iothread */
    const PolicyDecision *seen[3];
} Busy;

/* Count decisions of the idle rule, each once (called after every dispatch,
 * and a tick decides at most once per iothread). */
static void
busy_watch(Busy *b)
{
    PtTarget *t = pt_daemon_resolve_target(b->d, "vm10", NULL);

    for (guint i = 0; t && i < G_N_ELEMENTS(fake_iothreads); i++) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, fake_iothreads[i]);

        if (!io || !io->last_decision || io->last_decision == b->seen[i])
            continue;
        b->seen[i] = io->last_decision;
        if (io->last_decision->cause == POLICY_CAUSE_IDLE) {
            g_test_message("%s: %s", io->id, io->last_decision->reason);
            b->idle_decisions++;
        }
    }
}

/*
 * Every iothread has @ticks metrics with I/O, and the policy has settled
 * where this fake says it should: every iothread polls, and the two of the
 * group on one triple.
 */
static gboolean
busy_settled(Busy *b)
{
    PtTarget *t = pt_daemon_resolve_target(b->d, "vm10", NULL);

    if (!t)
        return FALSE;
    for (guint i = 0; i < G_N_ELEMENTS(fake_iothreads); i++) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, fake_iothreads[i]);
        guint n = 0;

        for (guint k = 0; io && k < io->history->len; k++)
            n += g_array_index(io->history, PolicyMetrics, k).have_io;
        if (n < b->ticks || b->q->triple[i].poll_max_ns == 0)
            return FALSE;
    }
    return policy_triple_equal(&b->q->triple[0], &b->q->triple[1]);
}

/* After the restart: iot1 alone carries vdc, iot0 nothing. */
static gboolean
regrouped(PtDaemon *d)
{
    PtTarget *t = pt_daemon_resolve_target(d, "vm10", NULL);
    PtIothread *io0 = t ? g_hash_table_lookup(t->iothreads, "iot0") : NULL;
    PtIothread *io1 = t ? g_hash_table_lookup(t->iothreads, "iot1") : NULL;
    const PolicyMetrics *m0, *m1;

    if (!io0 || !io1 || io0->group || io1->group || !io0->history->len || !io1->history->len)
        return FALSE;
    m0 = &g_array_index(io0->history, PolicyMetrics, io0->history->len - 1);
    m1 = &g_array_index(io1->history, PolicyMetrics, io1->history->len - 1);
    return m0->have_io && m1->have_io && policy_metrics_iops(m0) == 0 &&
           policy_metrics_iops(m1) > VDC_IOPS * NO_POLL_SLOWDOWN * 0.5 && m1->io_shared_by == 0;
}

static void
test_vq_mapping_and_scsi(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = g_dir_make_tmp("pt-devmap-XXXXXX", NULL);
    g_autofree char *sock = g_build_filename(dir, "vm10.qmp", NULL);
    g_autofree char *proc = g_build_filename(dir, "proc", NULL);
    g_autofree char *conf_text = NULL;
    g_autoptr(QmpFakeQemu) fake = NULL;
    g_autoptr(PtDaemon) d = NULL;
    PtConf *conf;
    PtTarget *t;
    FakeQemu q = { .last_us = g_get_monotonic_time(), .start_us = g_get_monotonic_time() };
    PtDaemonRoots roots = { .proc_root = proc, .debugfs_root = proc, .tracefs_root = proc };
    Busy busy;
    gint64 deadline;

    q.writes = g_ptr_array_new_with_free_func(g_free);
    for (guint i = 0; i < G_N_ELEMENTS(q.triple); i++)
        q.triple[i] = POLICY_TRIPLE_QEMU_DEFAULT;
    /* No /proc of the fake QEMU: CPU figures are absent, I/O is what counts. */
    g_assert_cmpint(g_mkdir(proc, 0700), ==, 0);
    fake = qmp_fake_qemu_new_listen(sock);
    qmp_fake_handshake_version(fake, 10, 0, 0);
    qmp_fake_qemu_set_responder(fake, fake_respond, &q);
    q.fake = fake;

    /* A tick of 250 ms: the daemon gives a sample 80% of it, and under
     * ASan on a loaded host the scripted QEMU, which answers on this
     * thread and checks each reply against QEMU's schema, was seen to miss
     * a 100 ms tick's 80 ms every time. */
    conf_text = g_strdup_printf("[daemon]\ndatabase = %s/db.sqlite\ninterval = 250ms\n"
                                "exits-source = auto\nmetrics-listen =\n"
                                "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                                "[policy]\ndefault = adaptive\n", dir, dir);
    conf = pt_conf_load_data(conf_text, strlen(conf_text), "test", &err);
    g_assert_no_error(err);
    d = pt_daemon_new(conf, &roots, &err);
    g_assert_no_error(err);
    g_assert_true(pt_daemon_start(d, &err));
    g_assert_no_error(err);

    /* 20 ticks with I/O figures on every iothread (5 s), then polling on
     * each: the adaptive policy measures polling off once on its way there.
     * 60 s for a loaded host. */
    busy = (Busy){ .d = d, .q = &q, .ticks = 20 };
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (!busy_settled(&busy) && g_get_monotonic_time() < deadline) {
        g_main_context_iteration(NULL, TRUE);
        busy_watch(&busy);
    }
    for (guint i = 0; i < q.writes->len; i++)
        g_test_message("qom-set %s", (char *)q.writes->pdata[i]);
    /* The idle rule never took a busy iothread for an idle one. */
    g_assert_cmpuint(busy.idle_decisions, ==, 0);
    g_assert_true(busy_settled(&busy));
    g_assert_true(qmp_fake_qemu_finish(fake, &err));
    g_assert_no_error(err);

    t = pt_daemon_resolve_target(d, "vm10", NULL);
    for (guint i = 0; i < G_N_ELEMENTS(fake_iothreads); i++) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, fake_iothreads[i]);
        const PolicyMetrics *m = &g_array_index(io->history, PolicyMetrics,
                                                io->history->len - 1);
        double want = i < 2 ? VDC_IOPS : SD0_IOPS;

        /* The last tick may still have run without polling. */
        if (m->triple.poll_max_ns == 0)
            want *= NO_POLL_SLOWDOWN;

        /* Each iothread of the group has the device's IOPS (not 0), within
         * the jitter of when the fake was asked. */
        g_assert_true(m->have_io);
        g_test_message("%s: %.0f IOPS, shared by %u", io->id, policy_metrics_iops(m),
                       m->io_shared_by);
        g_assert_cmpfloat(policy_metrics_iops(m), >, want * 0.5);
        g_assert_cmpfloat(policy_metrics_iops(m), <, want * 1.5);
        /* Shared figures are marked as such; the scsi disk's are its own. */
        g_assert_cmpuint(m->io_shared_by, ==, i < 2 ? 2 : 0);
        g_assert_cmpstr(io->group, ==, i < 2 ? "iot0" : NULL);
    }
    /* Every tick carried the VM's exits from QEMU's own query-stats, over
     * 512 vCPUs: none from the host side (this fake has no debugfs or perf
     * of its own), and the 64-deep chain never closed the connection. */
    {
        const char *why = NULL;
        PtIothread *io = g_hash_table_lookup(t->iothreads, "iot2");
        const PolicyMetrics *m = &g_array_index(io->history, PolicyMetrics,
                                                io->history->len - 1);

        g_assert_cmpint(pt_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_QUERY_STATS);
        g_assert_cmpint(t->state, ==, PT_TARGET_ATTACHED);
        g_assert_true(m->have_exits);
        g_test_message("exits: %.0f/s over %u vCPUs (%s)", m->exits_per_s, N_VCPUS, why);
        g_assert_cmpfloat(m->exits_per_s, >, N_VCPUS * VCPU_EXITS_PER_S * 0.5);
        g_assert_cmpfloat(m->exits_per_s, <, N_VCPUS * VCPU_EXITS_PER_S * 1.5);
    }
    /* The metrics endpoint marks the group's shared figures. */
    {
        g_autofree char *text = pt_daemon_render_metrics(d, TRUE);
        g_autofree char *io1 = g_strdup_printf("polltune_iothread_io_shared_by{domain=\"vm10\","
                                               "socket=\"%s\",iothread=\"iot1\"} 2", sock);
        g_autofree char *io2 = g_strdup_printf("polltune_iothread_io_shared_by{domain=\"vm10\","
                                               "socket=\"%s\",iothread=\"iot2\"} 1", sock);

        /* The domain label is QEMU's -name, socket the target's identity. */
        g_assert_nonnull(strstr(text, io1));
        g_assert_nonnull(strstr(text, io2));
    }
    /* A group is written as one: iot1 got each triple iot0 got. */
    {
        guint n0 = 0, n1 = 0;

        for (guint i = 0; i < q.writes->len; i++) {
            n0 += g_str_has_prefix(q.writes->pdata[i], "iot0 ");
            n1 += g_str_has_prefix(q.writes->pdata[i], "iot1 ");
        }
        g_assert_cmpuint(n0, >, 0);
        g_assert_cmpuint(n0, ==, n1);
    }
    /* An override on the group's second iothread pins the whole group. */
    {
        gint64 id = 0;

        g_assert_true(pt_daemon_override_set(d, sock, "iot1", 45000, -1, -1, 0, "test", NULL,
                                             &id, NULL, NULL, &err));
        g_assert_no_error(err);
        deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
        while ((q.triple[0].poll_max_ns != 45000 || q.triple[1].poll_max_ns != 45000) &&
               g_get_monotonic_time() < deadline)
            g_main_context_iteration(NULL, TRUE);
        g_assert_cmpuint(q.triple[0].poll_max_ns, ==, 45000);
        g_assert_cmpuint(q.triple[1].poll_max_ns, ==, 45000);
        g_assert_cmpuint(q.triple[2].poll_max_ns, !=, 45000);
        g_assert_cmpuint(pt_daemon_override_clear(d, NULL, NULL, id, &err), ==, 1);
        g_assert_no_error(err);
    }

    /* QEMU started again on the same socket, vdc now on iot1 alone: the
     * daemon asks again, and the group is gone. */
    qmp_fake_close(fake);
    g_clear_pointer(&fake, qmp_fake_qemu_free);
    g_unlink(sock);
    q.restarted = TRUE;
    fake = qmp_fake_qemu_new_listen(sock);
    qmp_fake_handshake_version(fake, 10, 0, 0);
    qmp_fake_qemu_set_responder(fake, fake_respond, &q);
    q.fake = fake;
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (!regrouped(d) && g_get_monotonic_time() < deadline)
        g_main_context_iteration(NULL, TRUE);
    g_assert_true(regrouped(d));

    g_clear_pointer(&d, pt_daemon_free);
    g_ptr_array_unref(q.writes);
    g_unlink(sock);
    g_rmdir(proc);
    {
        g_autofree char *db = g_build_filename(dir, "db.sqlite", NULL);
        g_autofree char *wal = g_strconcat(db, "-wal", NULL);
        g_autofree char *shm = g_strconcat(db, "-shm", NULL);

        g_unlink(db);
        g_unlink(wal);
        g_unlink(shm);
    }
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/devmap/vq-mapping-and-scsi", test_vq_mapping_and_scsi);
    return g_test_run();
}
