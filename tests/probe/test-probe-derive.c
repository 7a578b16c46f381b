/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The derivation: snapshots in, PolicyMetrics/PolicyHost out, edge cases. */
#include <math.h>

#include "probe-derive.h"

#define SEC G_GINT64_CONSTANT(1000000000)

static ProbeTargetSnap *
snap_new(int pid, gint64 t_ns)
{
    ProbeTargetSnap *s = probe_target_snap_new(pid, t_ns, 1700000000000 + t_ns / 1000000);

    s->clk_tck = 100;
    return s;
}

/* A thread's reading: stat and status, and schedstat unless @run_ns or
 * @wait_ns is G_MAXUINT64. */
static ProbeThreadCounters
thread_counters(guint64 utime, guint64 stime, guint64 vcsw, guint64 run_ns, guint64 wait_ns)
{
    ProbeThreadCounters c;

    probe_thread_counters_init(&c);
    c.v.v[METRIC_UTIME_TICKS] = (gint64)utime;
    c.v.v[METRIC_STIME_TICKS] = (gint64)stime;
    c.v.v[METRIC_CTX_VOL] = (gint64)vcsw;
    c.v.v[METRIC_CTX_INVOL] = (gint64)(vcsw / 10);
    if (run_ns != G_MAXUINT64 && wait_ns != G_MAXUINT64) {
        c.v.v[METRIC_CPU_NS] = (gint64)run_ns;
        c.v.v[METRIC_RUNQ_WAIT_NS] = (gint64)wait_ns;
    }
    return c;
}

static ProbeIothreadSnap *
add_io(ProbeTargetSnap *s, const char *id, int tid, guint64 vcsw,
       guint64 run_ns, guint64 wait_ns)
{
    ProbeIothreadSnap *io = probe_target_snap_iothread(s, id);
    ProbeThreadCounters c = thread_counters(0, 0, vcsw, run_ns, wait_ns);
    PolicyTriple triple = { 50000, 2, 2 };

    probe_iothread_snap_set_triple(io, &triple);
    probe_iothread_snap_set_thread(io, tid, &c);
    return io;
}

static void
add_dev(ProbeIothreadSnap *io, const char *name, guint64 rd, guint64 wr,
        guint64 fl, guint64 time_ns)
{
    MetricVec c;

    /* as a reader holds them: below 2^63; a block counter not named
     * here reads 0 */
    metric_vec_init(&c);
    metric_vec_zero_source(&c, METRIC_SOURCE_BLOCK);
    c.v[METRIC_RD_OPS] = (gint64)MIN(rd, (guint64)G_MAXINT64);
    c.v[METRIC_WR_OPS] = (gint64)MIN(wr, (guint64)G_MAXINT64);
    c.v[METRIC_FLUSH_OPS] = (gint64)MIN(fl, (guint64)G_MAXINT64);
    c.v[METRIC_RD_BYTES] = (gint64)MIN(rd, (guint64)G_MAXINT64 / 4096) * 4096;
    c.v[METRIC_WR_BYTES] = (gint64)MIN(wr, (guint64)G_MAXINT64 / 8192) * 8192;
    c.v[METRIC_RD_TIME_NS] = (gint64)MIN(time_ns, (guint64)G_MAXINT64);
    c.v[METRIC_WR_TIME_NS] = 0;
    c.v[METRIC_FLUSH_TIME_NS] = 0;
    probe_iothread_snap_add_device(io, name, NULL, &c);
}

static void
set_exits(ProbeTargetSnap *s, ProbeExitSource src, guint64 exits)
{
    probe_exit_counters_init(&s->exits, src);
    probe_exit_counters_add_named(&s->exits, "exits", exits);
}

static void
test_first_sample(void)
{
    g_autoptr(ProbeTargetSnap) cur = snap_new(10, 5 * SEC);
    PolicyMetrics m;

    add_dev(add_io(cur, "iot0", 11, 100, 1000, 10), "d0", 1, 2, 3, 4);
    set_exits(cur, PROBE_EXIT_SOURCE_DEBUGFS, 100);
    g_assert_false(probe_derive_iothread(NULL, cur, "iot0", &m));
    g_assert_false(m.have_io || m.have_cpu || m.have_exits);
    g_assert_cmpint(m.when_ms, ==, cur->when_ms);
    g_assert_cmpuint(m.triple.poll_max_ns, ==, 50000);
    g_assert_cmpfloat(m.rd_iops, ==, 0);
    /* Unknown iothread: nothing, not even a crash. */
    g_assert_false(probe_derive_iothread(cur, cur, "nope", &m));
}

static void
test_rates(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 1 * SEC);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, 3 * SEC);   /* 2 s tick */
    ProbeIothreadSnap *io;
    PolicyMetrics m;

    io = add_io(a, "iot0", 11, 1000, 1 * SEC, 0);
    add_dev(io, "d0", 1000, 0, 0, 0);
    add_dev(io, "d1", 0, 0, 0, 0);
    set_exits(a, PROBE_EXIT_SOURCE_DEBUGFS, 5000);

    io = add_io(b, "iot0", 11, 1000 + 10000, 1 * SEC + SEC / 2, SEC / 10);
    /* Devices may come in another order. */
    add_dev(io, "d1", 0, 2000, 40, SEC);
    add_dev(io, "d0", 1000 + 17960, 0, 0, 3 * SEC);
    set_exits(b, PROBE_EXIT_SOURCE_DEBUGFS, 5000 + 40000);

    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_cmpint(m.interval_ns, ==, 2 * SEC);
    g_assert_true(m.have_io && m.have_cpu && m.have_exits);
    g_assert_cmpfloat_with_epsilon(m.rd_iops, 8980, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.wr_iops, 1000, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.flush_iops, 20, 1e-9);
    g_assert_cmpfloat_with_epsilon(policy_metrics_iops(&m), 10000, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.rd_mbps, 17960.0 * 4096 / 1e6 / 2, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.wr_mbps, 2000.0 * 8192 / 1e6 / 2, 1e-9);
    /* 4 s of request time over 20000 ops, and over a 2 s tick. */
    g_assert_cmpfloat_with_epsilon(m.lat_mean_ns, 200000, 1e-6);
    g_assert_cmpfloat_with_epsilon(m.queue_depth, 2.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(m.cpu_pct, 25.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.blocks_per_s, 5000, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.blocks_per_op, 0.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(m.nvcsw_per_s, 500, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.run_delay_pct, 5.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.exits_per_s, 20000, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.exits_per_op, 2.0, 1e-12);
    /* Each device's own rate, in the current snapshot's order, for the
     * objective's per-device fairness. */
    g_assert_cmpuint(m.n_devices, ==, 2);
    g_assert_cmpfloat_with_epsilon(m.dev_iops[0], 1020, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.dev_iops[1], 8980, 1e-9);
}

static void
test_no_io(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    PolicyMetrics m;

    /* An iothread with no device: I/O known to be zero. */
    probe_iothread_snap_set_block_read(add_io(a, "iot0", 11, 5, 0, 0));
    probe_iothread_snap_set_block_read(add_io(b, "iot0", 11, 105, SEC / 100, 0));
    set_exits(a, PROBE_EXIT_SOURCE_PERF, 7);
    set_exits(b, PROBE_EXIT_SOURCE_PERF, 17);
    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_true(m.have_io);
    g_assert_cmpfloat(policy_metrics_iops(&m), ==, 0);
    g_assert_cmpfloat(m.lat_mean_ns, ==, 0);
    g_assert_cmpfloat(m.blocks_per_op, ==, 0);
    g_assert_cmpfloat(m.exits_per_op, ==, 0);
    g_assert_cmpfloat_with_epsilon(m.blocks_per_s, 100, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.exits_per_s, 10, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.cpu_pct, 1.0, 1e-9);

    /* Blockstats not read at all: no I/O figures, per-op ratios 0. */
    probe_target_snap_iothread(b, "iot1");
    probe_target_snap_iothread(a, "iot1");
    /* Exits are the whole VM's, so they are still there. */
    g_assert_true(probe_derive_iothread(a, b, "iot1", &m));
    g_assert_false(m.have_io || m.have_cpu);
    g_assert_true(m.have_exits);
    g_assert_cmpfloat(m.exits_per_op, ==, 0);
}

static void
test_backwards(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    g_autoptr(ProbeTargetSnap) c = snap_new(10, 2 * SEC);
    PolicyMetrics m;

    add_dev(add_io(a, "iot0", 11, 500, SEC, 0), "d0", 1000, 1000, 10, SEC);
    /* The device was replaced: its counters restart. CPU carries on. */
    add_dev(add_io(b, "iot0", 11, 600, SEC + 1000, 0), "d0", 5, 0, 0, 100);
    add_dev(add_io(c, "iot0", 11, 700, SEC + 2000, 0), "d0", 105, 0, 0, 200);
    set_exits(a, PROBE_EXIT_SOURCE_QUERY_STATS, 1000);
    set_exits(b, PROBE_EXIT_SOURCE_QUERY_STATS, 10);
    set_exits(c, PROBE_EXIT_SOURCE_QUERY_STATS, 20);

    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_false(m.have_io);
    g_assert_false(m.have_exits);
    g_assert_true(m.have_cpu);
    g_assert_cmpfloat(m.blocks_per_op, ==, 0);
    g_assert_cmpfloat(m.rd_iops, ==, 0);

    /* The next tick measures from the new baseline. */
    g_assert_true(probe_derive_iothread(b, c, "iot0", &m));
    g_assert_true(m.have_io && m.have_exits);
    g_assert_cmpfloat_with_epsilon(m.rd_iops, 100, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.blocks_per_op, 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(m.exits_per_op, 0.1, 1e-12);
}

static void
test_devices_change(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    g_autoptr(ProbeTargetSnap) c = snap_new(10, 2 * SEC);
    PolicyMetrics m;

    add_dev(add_io(a, "iot0", 11, 0, 0, 0), "d0", 10, 0, 0, 0);
    add_dev(add_io(b, "iot0", 11, 0, 0, 0), "d0", 20, 0, 0, 0);
    add_dev(probe_target_snap_iothread(b, "iot0"), "hotplugged", 999999, 0, 0, 0);
    add_dev(add_io(c, "iot0", 11, 0, 0, 0), "hotplugged", 1000099, 0, 0, 0);

    /* Appeared: no sum jumps by its whole history. */
    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_false(m.have_io);
    /* d0 disappeared. */
    g_assert_true(probe_derive_iothread(b, c, "iot0", &m));
    g_assert_false(m.have_io);
    /* Same name reported twice in one snapshot: the last one counts. */
    add_dev(probe_target_snap_iothread(c, "iot0"), "hotplugged", 1000199, 0, 0, 0);
    g_assert_cmpuint(probe_target_snap_find(c, "iot0")->devices->len, ==, 1);
}

static void
test_iothreads_change(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    g_autoptr(ProbeTargetSnap) other_pid = snap_new(99, 2 * SEC);
    PolicyMetrics m;

    add_dev(add_io(a, "gone", 12, 0, 0, 0), "d1", 1, 0, 0, 0);
    add_dev(add_io(a, "iot0", 11, 0, 0, 0), "d0", 1, 0, 0, 0);
    add_dev(add_io(b, "iot0", 13, 10, SEC, 0), "d0", 2, 0, 0, 0);
    add_dev(add_io(b, "new", 14, 0, 0, 0), "d2", 1, 0, 0, 0);
    add_dev(add_io(other_pid, "iot0", 13, 20, 2 * SEC, 0), "d0", 3, 0, 0, 0);

    g_assert_false(probe_derive_iothread(a, b, "new", &m));
    g_assert_false(probe_derive_iothread(a, b, "gone", &m));
    /* Re-resolved tid: that thread's counters are a new baseline. */
    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_true(m.have_io);
    g_assert_false(m.have_cpu);
    g_assert_cmpfloat(m.cpu_pct, ==, 0);
    /* QEMU restarted (new pid): nothing carries over. */
    g_assert_false(probe_derive_iothread(b, other_pid, "iot0", &m));
    g_assert_false(m.have_io || m.have_cpu);
    /* Time that does not advance gives no rates. */
    g_assert_false(probe_derive_iothread(b, b, "iot0", &m));
    g_assert_false(probe_derive_iothread(b, a, "iot0", &m));
}

static void
test_ticks_fallback(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    ProbeThreadCounters ca = thread_counters(100, 50, 0, G_MAXUINT64, G_MAXUINT64);
    ProbeThreadCounters cb = thread_counters(130, 70, 0, 1, 0);
    PolicyMetrics m;

    probe_iothread_snap_set_thread(probe_target_snap_iothread(a, "iot0"), 5, &ca);
    probe_iothread_snap_set_thread(probe_target_snap_iothread(b, "iot0"), 5, &cb);
    /* Only one side has schedstat: utime+stime at 100 Hz. */
    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_cmpfloat_with_epsilon(m.cpu_pct, 50.0, 1e-9);
    g_assert_cmpfloat(m.run_delay_pct, ==, 0);
    b->clk_tck = 0;
    g_assert_false(probe_derive_iothread(a, b, "iot0", &m));
    /* utime went back, stime more than made up for it: still a restart. */
    b->clk_tck = 100;
    cb = thread_counters(90, 200, 0, G_MAXUINT64, G_MAXUINT64);
    probe_iothread_snap_set_thread(probe_target_snap_iothread(b, "iot0"), 5, &cb);
    g_assert_false(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_false(m.have_cpu);
}

static void
test_exit_sources(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    PolicyMetrics m;

    add_io(a, "iot0", 1, 0, 0, 0);
    add_io(b, "iot0", 1, 0, 0, 0);
    /* Debugfs then perf: never subtract one source from another. */
    set_exits(a, PROBE_EXIT_SOURCE_DEBUGFS, 100);
    set_exits(b, PROBE_EXIT_SOURCE_PERF, 200);
    probe_derive_iothread(a, b, "iot0", &m);
    g_assert_false(m.have_exits);
    /* A source without the "exits" counter. */
    probe_exit_counters_init(&a->exits, PROBE_EXIT_SOURCE_QUERY_STATS);
    b->exits = a->exits;
    probe_exit_counters_add_named(&a->exits, "halt_exits", 1);
    probe_exit_counters_add_named(&b->exits, "halt_exits", 2);
    probe_derive_iothread(a, b, "iot0", &m);
    g_assert_false(m.have_exits);
}

static void
test_huge_counters(void)
{
    g_autoptr(ProbeTargetSnap) a = snap_new(10, 0);
    g_autoptr(ProbeTargetSnap) b = snap_new(10, SEC);
    /* Readings are held below 2^63 (metric-vec.h): the top of that. */
    const guint64 top = (guint64)G_MAXINT64 - 1000;
    PolicyMetrics m;

    add_dev(add_io(a, "iot0", 1, top, top, top), "d0", top, top, top, top);
    add_dev(add_io(a, "iot0", 1, top, top, top), "d1", top, top, top, top);
    add_dev(add_io(b, "iot0", 1, top + 500, top + 500, top), "d0",
            top + 250, top, top, top + 500);
    add_dev(add_io(b, "iot0", 1, top + 500, top + 500, top), "d1",
            top + 250, top, top, top + 500);
    set_exits(a, PROBE_EXIT_SOURCE_DEBUGFS, top);
    set_exits(b, PROBE_EXIT_SOURCE_DEBUGFS, G_MAXINT64);
    g_assert_true(probe_derive_iothread(a, b, "iot0", &m));
    g_assert_cmpfloat_with_epsilon(m.rd_iops, 500, 1e-9);
    g_assert_cmpfloat_with_epsilon(m.lat_mean_ns, 2.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(m.blocks_per_op, 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(m.exits_per_s, 1000, 1e-9);
}

/* Random walks with random restarts: every rate finite and >= 0. */
static void
test_never_negative(void)
{
    GRand *rand = g_rand_new_with_seed(4);
    g_autoptr(ProbeTargetSnap) prev = NULL;
    guint64 ctr[6] = { 0 };

    for (int tick = 0; tick < 2000; tick++) {
        g_autoptr(ProbeTargetSnap) cur = snap_new(10, (tick + 1) * SEC / 2);
        ProbeIothreadSnap *io;
        PolicyMetrics m;

        for (guint i = 0; i < G_N_ELEMENTS(ctr); i++) {
            if (g_rand_int_range(rand, 0, 20) == 0)
                ctr[i] = g_rand_int_range(rand, 0, 100);     /* restart */
            else if (g_rand_int_range(rand, 0, 50) == 0)
                ctr[i] = G_MAXUINT64 - g_rand_int_range(rand, 0, 5);
            else if (ctr[i] < G_MAXUINT64 - 100000)
                ctr[i] += g_rand_int_range(rand, 0, 100000);
        }
        io = add_io(cur, "iot0", 1 + g_rand_int_range(rand, 0, 2), ctr[0],
                    ctr[1], ctr[2]);
        add_dev(io, "d0", ctr[3], ctr[3] / 2, ctr[4] % 7, ctr[5]);
        set_exits(cur, PROBE_EXIT_SOURCE_DEBUGFS, ctr[4]);
        probe_derive_iothread(prev, cur, "iot0", &m);
        {
            const double v[] = { m.rd_iops, m.wr_iops, m.flush_iops,
                                 m.rd_mbps, m.wr_mbps, m.lat_mean_ns,
                                 m.queue_depth, m.cpu_pct, m.blocks_per_s,
                                 m.blocks_per_op, m.nvcsw_per_s,
                                 m.run_delay_pct, m.exits_per_s,
                                 m.exits_per_op };

            for (guint i = 0; i < G_N_ELEMENTS(v); i++) {
                g_assert_true(isfinite(v[i]));
                g_assert_cmpfloat(v[i], >=, 0);
            }
        }
        g_clear_pointer(&prev, probe_target_snap_free);
        prev = g_steal_pointer(&cur);
    }
    g_rand_free(rand);
}

static ProbeHostSnap *
host_new(gint64 t_ns, guint64 psi_us, guint64 busy, guint64 total, guint n_cpus)
{
    ProbeHostSnap *h = probe_host_snap_new(t_ns, t_ns / 1000000);

    probe_host_snap_set_psi(h, &(ProbePsi){ .some_avg10 = 12.5, .some_total_us = psi_us,
                                            .have_full = TRUE, .full_avg10 = 1.5 });
    probe_host_snap_set_cpu_stat(h, &(ProbeCpuStat){ .busy_ticks = busy, .total_ticks = total,
                                                     .n_cpus = n_cpus });
    return h;
}

static void
test_host(void)
{
    g_autoptr(ProbeHostSnap) a = host_new(0, 1000, 100, 400, 2);
    g_autoptr(ProbeHostSnap) b = host_new(SEC, 1000 + 250000, 250, 600, 2);
    g_autoptr(ProbeHostSnap) c = host_new(2 * SEC, 10, 260, 800, 4);
    PolicyHostDelta d;
    PolicyHost h;

    g_assert_false(probe_derive_host(NULL, a, &h));
    g_assert_false(h.have_psi || h.have_stat || h.have_vcpu_delay);
    g_assert_cmpuint(h.n_cpus, ==, 2);

    probe_host_snap_add_vcpu(a, 10, 11, 1000);
    probe_host_snap_add_vcpu(a, 10, 12, 0);
    probe_host_snap_add_vcpu(b, 10, 11, 1000 + SEC / 10);
    probe_host_snap_add_vcpu(b, 10, 12, SEC / 20);
    probe_host_snap_add_vcpu(b, 20, 21, 5 * SEC);      /* new VM: next tick */
    g_assert_true(probe_derive_host(a, b, &h));
    g_assert_true(h.have_psi && h.have_stat && h.have_vcpu_delay);
    g_assert_cmpfloat_with_epsilon(h.psi_some_pct, 25.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(h.psi_some_avg10, 12.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(h.psi_full_avg10, 1.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(h.cpu_busy_pct, 150.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(h.vcpu_run_delay_pct, 7.5, 1e-9);

    /* PSI total went backwards, the CPU count changed, vCPUs vanished. */
    g_assert_false(probe_derive_host(b, c, &h));
    g_assert_cmpuint(h.n_cpus, ==, 4);
    c->v.v[METRIC_HOST_PSI_SOME_US] = b->v.v[METRIC_HOST_PSI_SOME_US];
    g_assert_true(probe_derive_host(b, c, &h));
    g_assert_true(h.have_psi);
    g_assert_cmpfloat(h.psi_some_pct, ==, 0);
    g_assert_false(h.have_stat);
    g_assert_false(h.have_vcpu_delay);

    /* The store's host rows read the same delta: the CPU time is kept
     * across a change of CPU count, whose busy share the policy skips. */
    g_assert_true(probe_derive_host_delta(b, c, &d));
    g_assert_cmpint(d.v.v[METRIC_HOST_PSI_SOME_US], ==, 0);
    g_assert_cmpint(d.v.v[METRIC_HOST_CPU_BUSY], ==, 10);
    g_assert_cmpint(d.v.v[METRIC_HOST_CPU_TOTAL], ==, 200);
    g_assert_true(d.n_cpus_changed);
    g_assert_cmpint(d.v.v[METRIC_HOST_VCPU_WAIT_NS], ==, METRIC_ABSENT);
    /* the total going back drops busy too: one ratio */
    c->v.v[METRIC_HOST_CPU_TOTAL] = 500;
    g_assert_true(probe_derive_host_delta(b, c, &d));
    g_assert_cmpint(d.v.v[METRIC_HOST_CPU_BUSY], ==, METRIC_ABSENT);
    g_assert_cmpint(d.v.v[METRIC_HOST_CPU_TOTAL], ==, METRIC_ABSENT);
    g_assert_false(probe_derive_host_delta(NULL, c, &d));
    g_assert_cmpint(d.v.v[METRIC_HOST_PSI_SOME_US], ==, METRIC_ABSENT);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/derive/first-sample", test_first_sample);
    g_test_add_func("/probe/derive/rates", test_rates);
    g_test_add_func("/probe/derive/no-io", test_no_io);
    g_test_add_func("/probe/derive/backwards", test_backwards);
    g_test_add_func("/probe/derive/devices-change", test_devices_change);
    g_test_add_func("/probe/derive/iothreads-change", test_iothreads_change);
    g_test_add_func("/probe/derive/ticks-fallback", test_ticks_fallback);
    g_test_add_func("/probe/derive/exit-sources", test_exit_sources);
    g_test_add_func("/probe/derive/huge-counters", test_huge_counters);
    g_test_add_func("/probe/derive/never-negative", test_never_negative);
    g_test_add_func("/probe/derive/host", test_host);
    return g_test_run();
}
