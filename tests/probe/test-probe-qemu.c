/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The thread readers against a real QEMU (-machine none with iothreads,
 * debug-threads=on): comm resolution finds the iothreads QEMU reports, and
 * the CPU time and context switches read for an iothread match what this
 * test reads from /proc by itself.
 */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "probe-sampler.h"
#include "pt-test-qmp.h"
#include "probe-thread.h"
#include "pt-test-qemu.h"

/* The test's own reading of a thread: stat fields 14/15 and status lines. */
typedef struct {
    unsigned long long utime, stime, vcsw, nvcsw;
} DirectThread;

static void
read_direct(int pid, int tid, DirectThread *d)
{
    g_autofree char *stat_path = g_strdup_printf("/proc/%d/task/%d/stat", pid, tid);
    g_autofree char *status_path = g_strdup_printf("/proc/%d/task/%d/status", pid, tid);
    g_autofree char *stat = NULL, *status = NULL;
    g_auto(GStrv) fields = NULL;
    g_auto(GStrv) lines = NULL;

    g_assert_true(g_file_get_contents(stat_path, &stat, NULL, NULL));
    fields = g_strsplit(strrchr(stat, ')') + 2, " ", -1);
    /* fields[0] is field 3 (state); utime is field 14. */
    d->utime = g_ascii_strtoull(fields[14 - 3], NULL, 10);
    d->stime = g_ascii_strtoull(fields[15 - 3], NULL, 10);
    g_assert_true(g_file_get_contents(status_path, &status, NULL, NULL));
    lines = g_strsplit(status, "\n", -1);
    for (char **l = lines; *l; l++) {
        sscanf(*l, "voluntary_ctxt_switches: %llu", &d->vcsw);
        sscanf(*l, "nonvoluntary_ctxt_switches: %llu", &d->nvcsw);
    }
}

static void
assert_between(guint64 v, unsigned long long lo, unsigned long long hi)
{
    g_assert_cmpuint(v, >=, lo);
    g_assert_cmpuint(v, <=, hi);
}

static void
test_iothreads(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    g_autoptr(ProbeTargetSnap) snap = NULL;
    g_autoptr(GArray) tasks = NULL;
    g_autoptr(QmpClient) m = NULL;
    json_object *iothreads;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start_iothreads(2, &error);
    g_assert_no_error(error);
    m = pt_test_qmp_connect(q->qmp_path, "probe-test");
    iothreads = pt_test_qmp_run(m, "query-iothreads", NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(json_object_array_length(iothreads), ==, 2);

    tasks = probe_tasks_list("/proc", q->pid, &error);
    g_assert_no_error(error);
    t = probe_target_new(NULL, q->pid);
    snap = probe_target_snap_new(q->pid, 0, 0);

    /* By name, the tid is the one QEMU reports for each iothread. */
    for (size_t i = 0; i < json_object_array_length(iothreads); i++) {
        json_object *it = json_object_array_get_idx(iothreads, i), *v;
        const char *id;
        int qemu_tid, tid;
        ProbeIothreadSnap *io;
        DirectThread before, after;

        g_assert_true(json_object_object_get_ex(it, "id", &v));
        id = json_object_get_string(v);
        g_assert_true(json_object_object_get_ex(it, "thread-id", &v));
        qemu_tid = json_object_get_int(v);

        tid = probe_tasks_find_iothread(tasks, id, &error);
        g_assert_no_error(error);
        g_assert_cmpint(tid, ==, qemu_tid);

        io = probe_target_snap_iothread(snap, id);
        read_direct(q->pid, tid, &before);
        g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
        read_direct(q->pid, tid, &after);
        g_assert_no_error(error);
        g_assert_cmpint(io->tid, ==, tid);
        assert_between(io->thread.v.v[METRIC_UTIME_TICKS], before.utime, after.utime);
        assert_between(io->thread.v.v[METRIC_STIME_TICKS], before.stime, after.stime);
        assert_between(io->thread.v.v[METRIC_CTX_VOL], before.vcsw, after.vcsw);
        assert_between(io->thread.v.v[METRIC_CTX_INVOL], before.nvcsw, after.nvcsw);
        /* An iothread that has started has blocked at least once. */
        g_assert_cmpint(io->thread.v.v[METRIC_CTX_VOL], >, 0);

        /* The thread-id path (direct QMP) reads the same thread. */
        g_assert_true(probe_target_sample_iothread(t, io, qemu_tid, &error));
        g_assert_cmpint(io->tid, ==, qemu_tid);
        /* A thread-id that is not QEMU's thread (ours) is refused. */
        g_assert_false(probe_target_sample_iothread(t, io, getpid(), &error));
        g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
        g_clear_error(&error);
    }
    json_object_put(iothreads);
}

static void
test_counters_move(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    g_autoptr(ProbeTargetSnap) a = NULL, b = NULL;
    g_autoptr(QmpClient) m = NULL;
    ProbeIothreadSnap *io_a, *io_b;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start_iothreads(1, &error);
    g_assert_no_error(error);
    t = probe_target_new(NULL, q->pid);
    a = probe_target_snap_new(q->pid, 0, 0);
    b = probe_target_snap_new(q->pid, 1, 0);
    io_a = probe_target_snap_iothread(a, "iot0");
    io_b = probe_target_snap_iothread(b, "iot0");
    g_assert_true(probe_target_sample_iothread(t, io_a, 0, &error));

    /* QMP commands run in the main loop; stopping and continuing the
     * process makes every thread, the iothread too, switch. */
    m = pt_test_qmp_connect(q->qmp_path, "probe-test");
    for (int i = 0; i < 5; i++) {
        pt_test_qemu_signal(q, SIGSTOP);
        g_usleep(2000);
        pt_test_qemu_signal(q, SIGCONT);
        g_usleep(2000);
    }
    g_assert_true(probe_target_sample_iothread(t, io_b, 0, &error));
    g_assert_no_error(error);
    g_assert_cmpint(io_a->tid, ==, io_b->tid);
    g_assert_cmpint(io_b->thread.v.v[METRIC_CTX_VOL] + io_b->thread.v.v[METRIC_CTX_INVOL], >,
                     io_a->thread.v.v[METRIC_CTX_VOL] + io_a->thread.v.v[METRIC_CTX_INVOL]);
    if (probe_thread_counters_have_schedstat(&io_a->thread))
        g_assert_cmpint(io_b->thread.v.v[METRIC_CPU_NS], >, io_a->thread.v.v[METRIC_CPU_NS]);
}

static void
test_vcpus_tcg(void)
{
    static const char *const args[] = {
        "-machine", "pc", "-accel", "tcg", "-smp", "2", "-S", NULL,
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    g_autoptr(ProbeHostSnap) host = probe_host_snap_new(0, 0);
    g_autoptr(ProbeTargetSnap) snap = NULL;
    const ProbeSource *src;
    g_autoptr(QmpClient) m = NULL;
    json_object *cpus;
    guint n;

    if (pt_test_skip_without_qemu())
        return;
    q = pt_test_qemu_start(args, &error);
    g_assert_no_error(error);
    /* The monitor listens before the vCPUs exist; once it answers a
     * command, the machine is built. */
    m = pt_test_qmp_connect(q->qmp_path, "probe-test");
    cpus = pt_test_qmp_run(m, "query-cpus-fast", NULL, &error);
    g_assert_no_error(error);
    g_assert_cmpuint(json_object_array_length(cpus), ==, 2);
    json_object_put(cpus);

    t = probe_target_new(NULL, q->pid);
    n = probe_target_sample_vcpus(t, host);
    src = probe_target_source(t, PROBE_SOURCE_VCPU);
    if (n == 0)
        g_test_message("vcpu source: %s", src->reason);
    g_assert_cmpuint(n, ==, 2);
    g_assert_cmpint(src->state, ==, PROBE_SOURCE_AVAILABLE);
    for (guint i = 0; i < host->vcpus->len; i++)
        g_assert_cmpint(g_array_index(host->vcpus, ProbeVcpuWait, i).pid, ==,
                        q->pid);

    /* No KVM here means no debugfs directory for this pid: said why. */
    snap = probe_target_snap_new(q->pid, 0, 0);
    g_assert_false(probe_target_sample_exits(t, PROBE_EXITS_DEBUGFS, snap));
    g_assert_nonnull(probe_target_source(t, PROBE_SOURCE_DEBUGFS)->reason);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/qemu/iothreads", test_iothreads);
    g_test_add_func("/probe/qemu/counters-move", test_counters_move);
    g_test_add_func("/probe/qemu/vcpus-tcg", test_vcpus_tcg);
    return g_test_run();
}
