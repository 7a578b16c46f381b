/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The polling simulator: calibration against seed 004 (every row within
 * +-10%) and against the many-handler measurements (each row within its
 * own tolerance), the regimes where polling loses (a batching device at
 * depth, many handlers on one iothread), determinism, QEMU's window rules as observed from outside, and a
 * fast subset of the suite's goals (S1, S3, S4, S5, S7 at half length).  The
 * full suite is bench/pollsim.
 */
#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "sim-calib.h"
#include "sim-goals.h"
#include "sim-scenario.h"
#include "sim-matrix.h"

/* Long enough for +-1% noise on the IOPS, short enough for the test suite. */
#define CALIB_SPAN_NS 300e6

static void
test_calibration(gconstpointer data)
{
    guint qd = GPOINTER_TO_UINT(data);

    for (guint i = 0; i < sim_calib_n_rows; i++) {
        const SimCalibRow *r = &sim_calib_table[i];
        double want = qd == 1 ? r->iops_qd1 : r->iops_qd32;
        double got = sim_calib_iops(r->poll_max_ns, qd, CALIB_SPAN_NS, 1);

        g_test_message("poll-max-ns=%" G_GUINT64_FORMAT " qd=%u: seed %.0f sim %.0f (%+.1f%%)",
                       r->poll_max_ns, qd, want, got, 100 * (got / want - 1));
        g_assert_cmpfloat(fabs(got / want - 1), <=, 0.10);
    }
}

/*
 * The second source: polling many handlers on one iothread (Hajnoczi 2020).
 * Each row the parameter set fits is held to its own tolerance; the rows it
 * does not fit are printed with their error.
 */
static void
test_calibration_many_handlers(void)
{
    const SimCalibSource *src = &sim_calib_many_handlers;
    guint held = 0;

    for (guint i = 0; i < src->n_rows; i++) {
        const SimCalibRow2 *r = &src->rows[i];
        double got = sim_calib_source_iops(src, r, CALIB_SPAN_NS, 1);

        g_test_message("%s: measured %.0f sim %.0f (%+.1f%%)%s", r->what, r->iops, got,
                       100 * (got / r->iops - 1), r->tolerance > 0 ? "" : ", not fitted");
        if (r->tolerance > 0) {
            g_assert_cmpfloat(fabs(got / r->iops - 1), <=, r->tolerance);
            held++;
        }
    }
    g_assert_cmpuint(held, >=, 3);
}

/* IOPS over 200 ms after 20 ms on @w with a fixed window, QEMU 7.2. */
static double
iops_of(const SimWorkload *w, guint64 poll_max_ns, guint64 seed)
{
    PolicyTriple t = { poll_max_ns, 0, 0 };

    return sim_workload_iops(w, &t, SIM_QEMU_7_2, 200e6, seed);
}

/*
 * The batching device class: one command per submission call, a guest
 * that submits in batches.  A notified iothread finds a guest's whole batch
 * and submits it at once; a polling one submits each request as it
 * appears, so the device pays its per-command overhead per request and
 * polling loses at depth, while it still wins at QD1 where there is no
 * batch to lose.
 */
static void
test_batching_polling_loses_at_depth(void)
{
    static const guint qds[] = { 1, 32, 64 };

    for (guint i = 0; i < G_N_ELEMENTS(qds); i++) {
        SimWorkload w = sim_calib_workload(qds[i]);
        double off, on;

        sim_workload_set_device_class(&w, SIM_DEVICE_BATCHING);
        off = iops_of(&w, 0, 1);
        on = iops_of(&w, 262144, 1);
        g_test_message("batching device QD%u: off %.0f, poll-max-ns 262144 %.0f (%+.1f%%)",
                       qds[i], off, on, 100 * (on / off - 1));
        if (qds[i] == 1)
            g_assert_cmpfloat(on, >, 1.2 * off);
        else
            g_assert_cmpfloat(on, <, 0.97 * off);
    }
}

/*
 * The batching device's two steady states under one triple (QD6, 20 us,
 * dedicated cores; docs/SIMULATOR.md, "Two steady states of one
 * triple").  @writes[i] is written @i + 1 seconds in (the first is the
 * start); returns the IOPS over the 4 s that follow the last write's
 * second.
 */
static double
qd6_iops_after(const PolicyTriple *writes, guint n, guint64 seed)
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), seed);
    SimWorkload w = { .qd = 6, .service = { SIM_DIST_NORMAL, 20000, 1600 } };
    PolicyDelta a, b;

    sim_workload_set_device_class(&w, SIM_DEVICE_BATCHING);
    sim_add_vm(sim, &w, &writes[0]);
    for (guint i = 1; i < n; i++) {
        sim_run_until(sim, i * 1e9);
        sim_vm_set_triple(sim, 0, &writes[i]);
    }
    sim_run_until(sim, (n + 1) * 1e9);
    sim_vm_delta(sim, 0, &a);
    sim_run_until(sim, (n + 5) * 1e9);
    sim_vm_delta(sim, 0, &b);
    return b.v.v[METRIC_RD_OPS] / 4.0;
}

/*
 * After a wide window, QEMU's default window keeps the iothread taking
 * each request alone as it appears, where the same triple from the start
 * lets the guest's batches through; off in between brings them back.  The
 * write resets the window to 0 as QEMU's qom-set does; what carries over
 * is the requests in flight, whose completions a device paying its
 * per-command overhead for each spaces closer than poll-max-ns, so QEMU's
 * rule regrows the window before the next batch.
 */
static void
test_batching_two_steady_states(void)
{
    static const PolicyTriple def = POLICY_TRIPLE_QEMU_DEFAULT, wide = { 262144, 0, 0 },
                              off = { 0, 0, 0 };
    const PolicyTriple fresh[] = { def }, after_wide[] = { def, wide, def },
                       through_off[] = { def, wide, off, def };
    double f = qd6_iops_after(fresh, 1, 1), w = qd6_iops_after(after_wide, 3, 1);
    double o = qd6_iops_after(through_off, 4, 1);

    g_test_message("QD6 batching: 32768 from the start %.0f IOPS, after 262144 %.0f, "
                   "after 262144 and off %.0f", f, w, o);
    g_assert_cmpfloat(w, <, 0.9 * f);
    g_assert_cmpfloat(o, >, 0.97 * f);
}

/*
 * Two disks on one iothread, QD1 beside QD64 on the calibrated NVMe device:
 * the samplers' counters give each disk's operations (what the policy's
 * per-disk-fair objective reads), and per disk the simulator shows what a
 * choice for the total hides.  Returns the IOPS of each disk over 200 ms.
 */
static void
two_disks_iops(guint64 poll_max_ns, double iops[2])
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), 1);
    SimWorkload w = sim_calib_workload(1);
    PolicyTriple t = { poll_max_ns, 0, 0 };
    PolicyDelta a, b;
    PolicyMetrics m;

    w.n_devices = 2;
    w.dev_qd[0] = 1;
    w.dev_qd[1] = 64;
    sim_add_vm(sim, &w, &t);
    sim_run_until(sim, 20e6);
    sim_vm_delta(sim, 0, &a);
    sim_run_until(sim, 220e6);
    sim_vm_delta(sim, 0, &b);
    g_assert_cmpuint(b.n_devices, ==, 2);
    g_assert_cmpint(b.dev_ops[0] + b.dev_ops[1], ==, b.v.v[METRIC_RD_OPS]);
    g_assert_cmpuint(sim_vm_truth(sim, 0)->dev_guest_ops[0] +
                         sim_vm_truth(sim, 0)->dev_guest_ops[1], ==,
                     sim_vm_truth(sim, 0)->guest_ops);
    g_assert_true(policy_metrics_from_delta(&b, &m));
    g_assert_cmpuint(m.n_devices, ==, 2);
    iops[0] = m.dev_iops[0];
    iops[1] = m.dev_iops[1];
}

static void
test_two_disks(void)
{
    double off[2], on[2];

    two_disks_iops(0, off);
    two_disks_iops(32768, on);
    g_test_message("QD1 + QD64 on one iothread: off %.0f + %.0f, poll-max-ns 32768 %.0f + %.0f",
                   off[0], off[1], on[0], on[1]);
    /* Both disks do I/O; each is counted apart. */
    g_assert_cmpfloat(off[0], >, 1000);
    g_assert_cmpfloat(off[1], >, 10 * off[0]);
    g_assert_cmpfloat(on[0], >, 1000);
    /*
     * One vCPU serves both disks' completions, so the QD1 disk gets a
     * tenth of what it gets alone; turning polling off costs it and the
     * QD64 disk about 9% each here (seed 004's device polls well at both
     * depths): the per-disk objective sees the QD1 disk's loss on its own
     * scale, where the total would be 98% the deep disk's.
     */
    g_assert_cmpfloat(off[0], <, 0.95 * on[0]);
    g_assert_cmpfloat(off[1], <, 0.95 * on[1]);
}

/*
 * A shallow disk beside a deep one keeps being served whatever the triple
 * went through.  virtio-blk turns notifications off only on the virtqueue
 * it is popping; the other disk's guest still kicks.  The matrix cell
 * that found it: a batching device at 5 us, QD1 beside QD64, the iothread
 * and the vCPU on one core.  With the deep disk's pass suppressing the
 * QD1 disk's kick too, its one request sat unseen for good once polling
 * had been off for a second (0 IOPS for the rest of the run), and each
 * run ended where its history put it.  Disk 0's IOPS per second of 32768,
 * then off, then 32768 again.
 */
static void
test_two_disks_no_starvation(void)
{
    g_autoptr(Sim) sim = sim_new(1, sim_costs_calibrated(), 1);
    SimWorkload w = sim_calib_workload(1);
    static const guint64 seq[] = { 32768, 32768, 0, 32768, 32768, 32768 };
    PolicyDelta a, b;

    w.service = (SimDist){ SIM_DIST_NORMAL, 5000, 400 };
    w.compute = TRUE;
    sim_workload_set_device_class(&w, SIM_DEVICE_BATCHING);
    w.n_devices = 2;
    w.dev_qd[0] = 1;
    w.dev_qd[1] = 64;
    sim_add_vm(sim, &w, &(PolicyTriple){ seq[0], 0, 0 });
    sim_vm_delta(sim, 0, &a);
    for (guint s = 0; s < G_N_ELEMENTS(seq); s++) {
        sim_vm_set_triple(sim, 0, &(PolicyTriple){ seq[s], 0, 0 });
        sim_run_until(sim, (s + 1) * 1e9);
        sim_vm_delta(sim, 0, &b);
        g_test_message("second %u at poll-max-ns %" G_GUINT64_FORMAT ": QD1 disk %" G_GINT64_FORMAT
                       " ops, QD64 disk %" G_GINT64_FORMAT " ops", s, seq[s],
                       b.dev_ops[0], b.dev_ops[1]);
        /* Its vCPU is shared with the deep disk: a few hundred a second at least. */
        g_assert_cmpint(b.dev_ops[0], >, 200);
        g_assert_cmpint(b.dev_ops[1], >, 10000);
    }
}

/*
 * What a triple gives does not depend on when it was written.  The QD1
 * disk beside a QD64 disk on a batching guest, 262144/0/0 written after
 * 1 to 6 s of 32768/0/0: the QD1 disk's rate over the 3 s after settling
 * is the same each time.  While a disk's interrupt queued behind every
 * disk's work on the vCPU, the order the queue settled in at the write
 * stayed for good: 3,100 or 15,200 IOPS by the tick of the write.
 */
static void
test_two_disks_write_tick(void)
{
    double lo = G_MAXDOUBLE, hi = 0;

    for (guint at = 1; at <= 6; at++) {
        /* The full grid's cell, on its dedicated cores. */
        g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), 1);
        SimWorkload w = {
            .qd = 1,
            .service = { SIM_DIST_NORMAL, 5000, 400 },
            .dev_occupancy = SIM_NVME_OCCUPANCY,
        };
        PolicyDelta a, b;
        double qd1;

        sim_workload_set_device_class(&w, SIM_DEVICE_BATCHING);
        w.n_devices = 2;
        w.dev_qd[0] = 1;
        w.dev_qd[1] = 64;
        sim_add_vm(sim, &w, &(PolicyTriple){ 32768, 0, 0 });
        sim_run_until(sim, at * 1e9);
        sim_vm_set_triple(sim, 0, &(PolicyTriple){ 262144, 0, 0 });
        sim_run_until(sim, (at + 2) * 1e9);
        sim_vm_delta(sim, 0, &a);
        sim_run_until(sim, (at + 5) * 1e9);
        sim_vm_delta(sim, 0, &b);
        qd1 = b.dev_ops[0] / 3.0;
        g_test_message("written after %u s: QD1 disk %.0f IOPS, QD64 disk %.0f IOPS", at, qd1,
                       b.dev_ops[1] / 3.0);
        lo = MIN(lo, qd1);
        hi = MAX(hi, qd1);
    }
    g_assert_cmpfloat(lo, >, 0);
    g_assert_cmpfloat(hi / lo, <, 1.1);
}

/* The default device is unchanged by the class machinery: polling wins at QD64. */
static void
test_nvme_class_is_default(void)
{
    SimWorkload w = sim_calib_workload(64), v = w;

    sim_workload_set_device_class(&v, SIM_DEVICE_NVME);
    g_assert_cmpfloat(v.dev_occupancy, ==, w.dev_occupancy);
    g_assert_cmpfloat(v.dev_batch_ns, ==, 0);
    g_assert_cmpuint(v.guest_batch, ==, 0);
    g_assert_cmpint(sim_device_class_from_string("batching"), ==, SIM_DEVICE_BATCHING);
    g_assert_cmpint(sim_device_class_from_string("nvme"), ==, SIM_DEVICE_NVME);
    g_assert_cmpint(sim_device_class_from_string("ssd"), ==, SIM_DEVICE_INVALID);
    g_assert_cmpfloat(iops_of(&w, 262144, 1), >, 1.05 * iops_of(&w, 0, 1));
}

/*
 * Polling many handlers: each poll iteration checks every handler of the
 * iothread.  At QD1 on the NVMe device a wide window wins by ~40% with the
 * disk's own two handlers; with 3200 idle virtqueues beside it (100 disks
 * of 32 queues) an iteration lasts ~90 us, longer than the gaps it should
 * catch, and the same window loses against off while burning a core.
 */
static void
test_many_handlers_cost(void)
{
    SimWorkload one = sim_calib_workload(1), many = one;
    double off, on_one, on_many;

    many.idle_handlers = 3200;
    off = iops_of(&one, 0, 1);
    on_one = iops_of(&one, 262144, 1);
    on_many = iops_of(&many, 262144, 1);
    g_test_message("QD1: off %.0f, polling with 2 handlers %.0f, with 3202 %.0f", off, on_one,
                   on_many);
    g_assert_cmpfloat(on_one, >, 1.3 * off);
    g_assert_cmpfloat(on_many, <, 0.8 * off);
    /* Without polling the idle handlers cost nothing (epoll waits on them). */
    g_assert_cmpfloat(fabs(iops_of(&many, 0, 1) / off - 1), <, 0.01);
}

static void
run_counters(guint64 seed, PolicyDelta *out)
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), seed);
    SimWorkload w = sim_calib_workload(4);
    PolicyTriple t = POLICY_TRIPLE_QEMU_DEFAULT;

    sim_add_vm(sim, &w, &t);
    sim_run_until(sim, 50e6);
    sim_vm_delta(sim, 0, out);
}

/*
 * Noise on a tick's I/O is that many more or fewer operations: what the
 * policy sees stays one consistent tick.  IOPS = queue depth / latency
 * (both come from the same counters), and the blocks and exits per second
 * do not move.  Before the queue depth was scaled, qd / latency gave the
 * noise-free IOPS in every noisy cell.
 */
static void
test_noise_consistent(void)
{
    guint64 state = 42;
    double lo = G_MAXDOUBLE, hi = 0;

    for (guint i = 0; i < 1000; i++) {
        PolicyMetrics m = {
            .rd_iops = 15000, .wr_iops = 5000, .lat_mean_ns = 40000,
            .queue_depth = 20000 * 40000e-9, .have_cpu = TRUE, .blocks_per_op = 0.5,
            .have_exits = TRUE, .exits_per_op = 0.7,
        };
        double iops;

        sim_metrics_add_noise(&m, 0.5, &state);
        iops = policy_metrics_iops(&m);
        lo = MIN(lo, iops);
        hi = MAX(hi, iops);
        g_assert_cmpfloat(iops, >=, 10000 * (1 - 1e-9));
        g_assert_cmpfloat(iops, <=, 30000 * (1 + 1e-9));
        g_assert_cmpfloat(fabs(m.queue_depth / (m.lat_mean_ns * 1e-9) - iops), <, 1e-6 * iops);
        g_assert_cmpfloat(fabs(m.blocks_per_op * iops - 10000), <, 1e-6);
        g_assert_cmpfloat(fabs(m.exits_per_op * iops - 14000), <, 1e-6);
        g_assert_cmpfloat(m.lat_mean_ns, ==, 40000);
    }
    /* +-50% is used: the draws span most of it. */
    g_assert_cmpfloat(lo, <, 11000);
    g_assert_cmpfloat(hi, >, 29000);
}

static void
test_deterministic(void)
{
    PolicyDelta a, b, c;

    run_counters(7, &a);
    run_counters(7, &b);
    run_counters(8, &c);
    for (int i = 0; i < METRIC_MAX; i++)
        g_assert_cmpint(a.v.v[i], ==, b.v.v[i]);
    g_assert_cmpint(a.v.v[METRIC_RD_TIME_NS], !=, c.v.v[METRIC_RD_TIME_NS]);
}

/* What a poll-max-ns does, as the samplers would see it over 100 ms at QD1. */
static void
measure(guint64 poll_max_ns, PolicyMetrics *m, double *poll_cores)
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), 3);
    SimWorkload w = sim_calib_workload(1);
    PolicyTriple t = { poll_max_ns, 0, 0 };
    PolicyDelta a, b;
    double p0;

    sim_add_vm(sim, &w, &t);
    sim_run_until(sim, 10e6);
    sim_vm_delta(sim, 0, &a);
    p0 = sim_vm_truth(sim, 0)->poll_cpu_ns;
    sim_run_until(sim, 110e6);
    sim_vm_delta(sim, 0, &b);
    g_assert_true(policy_metrics_from_delta(&b, m));
    *poll_cores = (sim_vm_truth(sim, 0)->poll_cpu_ns - p0) / 100e6;
}

static void
test_window_rules(void)
{
    PolicyMetrics off, tiny, wide;
    double p_off, p_tiny, p_wide;

    measure(0, &off, &p_off);
    measure(1, &tiny, &p_tiny);
    measure(262144, &wide, &p_wide);
    /* poll-max-ns 0: no polling, every event is a block and every request a kick. */
    g_assert_cmpfloat(p_off, ==, 0.0);
    g_assert_cmpfloat(off.blocks_per_op, >, 1.9);
    g_assert_cmpfloat(off.exits_per_op, >, 1.9);
    /* 1 ns: every block exceeds the ceiling, the window never leaves 0. */
    g_assert_cmpfloat(p_tiny, ==, 0.0);
    /* A window above the gaps catches nearly everything: no blocks, no kicks. */
    g_assert_cmpfloat(wide.blocks_per_op, <, 0.05);
    g_assert_cmpfloat(wide.exits_per_op, <, off.exits_per_op - 0.9);
    g_assert_cmpfloat(p_wide, >, 0.5);
    g_assert_cmpfloat(policy_metrics_iops(&wide), >, 1.3 * policy_metrics_iops(&off));
}

static void
test_write_resets_window(void)
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), 5);
    SimWorkload w = sim_calib_workload(1);
    PolicyTriple t = { 262144, 0, 0 };
    double p0, p1;

    sim_add_vm(sim, &w, &t);
    sim_run_until(sim, 20e6);
    /* Rewriting the same triple every 30 us keeps the window at 0. */
    p0 = sim_vm_truth(sim, 0)->poll_cpu_ns;
    for (int i = 1; i <= 1000; i++) {
        sim_vm_set_triple(sim, 0, &t);
        sim_run_until(sim, 20e6 + i * 30e3);
    }
    p1 = sim_vm_truth(sim, 0)->poll_cpu_ns;
    g_assert_cmpfloat((p1 - p0) / 30e6, <, 0.3);
}

static void
test_goals_fast(gconstpointer data)
{
    const SimScenario *scn = sim_scenario_find(data);
    g_autoptr(SimResult) r = NULL;
    g_autoptr(GPtrArray) goals = g_ptr_array_new_with_free_func((GDestroyNotify)sim_goal_free);

    g_assert_nonnull(scn);
    r = sim_result_run(scn, 0.5, 1);
    sim_goals_check(scn, r, 0.5, goals);
    g_assert_cmpuint(goals->len, >, 0);
    for (guint i = 0; i < goals->len; i++) {
        const SimGoal *g = g_ptr_array_index(goals, i);

        g_test_message("%s: %s: %s: %s", g->scenario, g->goal, g->pass ? "PASS" : "FAIL",
                       g->detail);
    }
    for (guint i = 0; i < goals->len; i++)
        g_assert_true(((SimGoal *)g_ptr_array_index(goals, i))->pass);
}

/* blocks/op at QD1 on a 200 us device under qemu-default, over 200 ms. */
static double
slow_device_blocks_per_op(SimQemuModel model, double *exits_per_op)
{
    g_autoptr(Sim) sim = sim_new(4, sim_costs_calibrated(), 5);
    SimWorkload w = { .qd = 1, .service = { SIM_DIST_NORMAL, 197320, 20000 },
                      .dev_occupancy = SIM_NVME_OCCUPANCY };
    PolicyTriple t = POLICY_TRIPLE_QEMU_DEFAULT;
    PolicyDelta a, b;
    PolicyMetrics m;

    sim_set_qemu_model(sim, model);
    sim_add_vm(sim, &w, &t);
    sim_run_until(sim, 20e6);
    sim_vm_delta(sim, 0, &a);
    sim_run_until(sim, 220e6);
    sim_vm_delta(sim, 0, &b);
    g_assert_true(policy_metrics_from_delta(&b, &m));
    *exits_per_op = m.exits_per_op;
    return m.blocks_per_op;
}

/*
 * QEMU 10's per-handler windows: on a slow device the completion handler's
 * window collapses (200 us > poll-max-ns) while the virtqueue's grows (the
 * guest resubmits within microseconds), so the iothread still polls after
 * each completion and catches the guest's next request without a kick:
 * one block per operation instead of 7.2's two, and no kick.
 */
static void
test_qemu10_per_handler_windows(void)
{
    double e72, e10;
    double b72 = slow_device_blocks_per_op(SIM_QEMU_7_2, &e72);
    double b10 = slow_device_blocks_per_op(SIM_QEMU_10, &e10);

    g_test_message("blocks/op 7.2 %.2f, 10 %.2f; exits/op 7.2 %.2f, 10 %.2f", b72, b10, e72, e10);
    g_assert_cmpfloat(b72, >, 1.9);
    g_assert_cmpfloat(b10, >, 0.9);
    g_assert_cmpfloat(b10, <, 1.1);
    g_assert_cmpfloat(e10, <, e72 - 0.5);
}

/*
 * The reduced scenario matrix.  The goals (sim-matrix.h) are not
 * all met; docs/POLICY.md says which cells lose and why.  Until they are,
 * this test prints every figure and the goals' verdicts and fails only
 * below an honest floor.  The floor is judged on the one-disk nvme cells,
 * the 64 cells the grid had before the device class and the multi-disk
 * loads were dimensions (same coordinates, same seeds).  The share is set
 * between the evidence bar of one standard error (78.1% within 3% with
 * probes of up to six ticks, 76.6% with three; 71.9% since off is probed
 * from every start and the write budget admits explorations whole, whose
 * measuring costs ticks in 30 s phases) and the bar of two before it
 * (70.3%), so that going back fails, by one cell of 64; the worst cell
 * between the whole-VM objective's 87.8% and the 83.3% before it.  The
 * batching and the 2-3 disk cells are printed and counted, not held to a
 * floor: the whole grid's
 * figures with them (59.6% within 3%, worst 75.1%) were not shown to
 * reject the older policy, so a floor there would only freeze today's
 * numbers.
 */
#define MATRIX_FLOOR_WITHIN 0.71        /* nvme cells within 3% of the oracle */
#define MATRIX_FLOOR_WORST 0.86         /* worst nvme cell, share of the oracle */
#define MATRIX_CEIL_WRITES50 3          /* p95 writes per change at +-50% noise */
/* Cells per start (default, boot, operator); every start has them all. */
#define MATRIX_N_NVME 64                /* 16 workloads x 4 noise levels */
#define MATRIX_N_BATCHING 24            /* QD1/16/64 x 5 and 31.5 us x 4 noise levels */
#define N_MATRIX_NOISE 4                /* noise levels per workload */
#define MATRIX_N_MULTI 8                /* per disk count: 5 and 31.5 us x 4 noise levels */
#define MATRIX_N_START (MATRIX_N_NVME + MATRIX_N_BATCHING + 2 * MATRIX_N_MULTI)

/*
 * Share within 3% of the oracle and worst ratio of @r's cells of class @d
 * with @n_devices disks (0: one) that start at @start (SIM_START_INVALID:
 * any start).
 */
static guint
matrix_class_figures(const SimMatrixResult *r, SimDeviceClass d, guint n_devices,
                     SimMatrixStart start, double *within, double *worst)
{
    guint n = 0, in = 0;

    *worst = G_MAXDOUBLE;
    for (guint i = 0; i < r->n_cells; i++) {
        double x = sim_matrix_cell_ratio(&r->cells[i], SIM_MATRIX_ADAPTIVE);

        if (r->cells[i].w.device != d || r->cells[i].w.n_devices != n_devices ||
            (start != SIM_START_INVALID && r->cells[i].w.start != start))
            continue;
        n++;
        in += x >= 0.97;
        *worst = MIN(*worst, x);
    }
    *within = n ? (double)in / n : 0;
    return n;
}

/*
 * The matrix's last line and its goals, each with whether a trivial policy
 * meets it too, in the test log: a floor that fails says by how much.
 */
static void
matrix_report(const SimMatrixResult *r, const char *what)
{
    g_autofree char *worst = sim_matrix_cell_format(&r->cells[r->worst_cell]);

    g_test_message("%s: %u cells, %.1f%% within 3%% of oracle, worst %.1f%% at (%s), "
                   "p95 writes per change %.0f", what, r->n_cells, 100 * r->share_within,
                   100 * r->worst_ratio, worst, r->writes_p95_noise50);
    for (guint k = 0; k < SIM_MATRIX_N_GOALS; k++)
        g_test_message("goal %s: %s (%s)%s", r->goals[k].name,
                       r->goals[k].pass[SIM_MATRIX_ADAPTIVE] ? "PASS" : "FAIL, not yet meeting "
                       "the issue's goal", r->goals[k].detail,
                       r->goals[k].pass[SIM_MATRIX_OFF] || r->goals[k].pass[SIM_MATRIX_NEVER_WRITE]
                           ? "; a trivial policy meets it too" : "");
}

/*
 * What holds in every cell, sampled or not: an operator's write is never
 * overwritten, and the guest app's cores are counted where it runs, on a
 * shared core only.
 */
static void
matrix_check_cells(const SimMatrixResult *r)
{
    g_assert_cmpuint(r->operator_overwritten, ==, 0);
    for (guint i = 0; i < r->n_cells; i++) {
        g_assert_cmpfloat(sim_matrix_cell_ratio(&r->cells[i], SIM_MATRIX_ADAPTIVE), >, 0.0);
        /* The bound is scores alone: no run, no app. */
        for (guint p = 0; p < SIM_MATRIX_BOUND; p++) {
            if (r->cells[i].w.shared)
                g_assert_cmpfloat(r->cells[i].app_cores[p], >, 0.05);
            else
                g_assert_cmpfloat(r->cells[i].app_cores[p], ==, 0.0);
        }
    }
}

/*
 * POLLSIM_SAMPLE=k (the sanitized build sets it): one workload in k.  The
 * floors are the whole grid's and are held where it all runs; a sample
 * checks what holds in every cell, and that it is the sample asked for.
 */
static gboolean
matrix_sampled(const SimMatrixResult *r, guint n_full_cells)
{
    guint k = sim_matrix_sample_stride();
    guint n_workloads = n_full_cells / N_MATRIX_NOISE;
    guint want = 0, shared = 0, change = 0, batching = 0, multi = 0;
    guint starts[SIM_START_MAX] = { 0 };

    if (k == 1)
        return FALSE;
    for (guint i = 0; i < n_workloads; i++)
        want += sim_matrix_sampled(i, k);
    for (guint i = 0; i < r->n_cells; i++) {
        starts[r->cells[i].w.start]++;
        shared += r->cells[i].w.shared;
        change += r->cells[i].w.change;
        batching += r->cells[i].w.device == SIM_DEVICE_BATCHING;
        multi += r->cells[i].w.n_devices > 1;
    }
    g_test_message("POLLSIM_SAMPLE=%u: %u of the grid's %u cells (%u on a shared core, %u "
                   "with a phase change, %u batching, %u with 2-3 disks); the floors are "
                   "held in a run of every cell", k, r->n_cells, n_full_cells, shared, change,
                   batching, multi);
    g_assert_cmpuint(r->n_cells, ==, want * N_MATRIX_NOISE);
    /* The sample holds every kind of cell. */
    g_assert_cmpuint(shared, >, 0);
    g_assert_cmpuint(change, >, 0);
    g_assert_cmpuint(batching, >, 0);
    g_assert_cmpuint(multi, >, 0);
    /* ... of every start the run keeps (POLLSIM_STARTS), and of no other. */
    for (guint s = 0; s < SIM_START_MAX; s++) {
        if (sim_matrix_start_wanted(s))
            g_assert_cmpuint(starts[s], >, 0);
        else
            g_assert_cmpuint(starts[s], ==, 0);
    }
    g_assert_cmpuint(r->operator_runs, >, 0);
    matrix_check_cells(r);
    return TRUE;
}

/* Cells of the starts the run keeps (POLLSIM_STARTS; the suite: default, boot). */
static guint
matrix_n_cells(void)
{
    guint n = 0;

    for (guint k = 0; k < SIM_START_MAX; k++)
        n += sim_matrix_start_wanted(k) ? MATRIX_N_START : 0;
    return n;
}

/* Every start the run keeps has every cell of the grid, the others none. */
static void
matrix_check_starts(const SimMatrixResult *r)
{
    guint n[SIM_START_MAX] = { 0 };

    g_assert_cmpuint(r->n_cells, ==, matrix_n_cells());
    for (guint i = 0; i < r->n_cells; i++)
        n[r->cells[i].w.start]++;
    for (guint k = 0; k < SIM_START_MAX; k++)
        g_assert_cmpuint(n[k], ==, sim_matrix_start_wanted(k) ? MATRIX_N_START : 0);
}

/* Share within 3% of the oracle and worst ratio of the cells of @start. */
static void
matrix_start_figures(const SimMatrixResult *r, SimMatrixStart start, double *within,
                     double *worst)
{
    guint n = 0, in = 0;

    *worst = G_MAXDOUBLE;
    for (guint i = 0; i < r->n_cells; i++) {
        double x = sim_matrix_cell_ratio(&r->cells[i], SIM_MATRIX_ADAPTIVE);

        if (r->cells[i].w.start != start)
            continue;
        n++;
        in += x >= 0.97;
        *worst = MIN(*worst, x);
    }
    *within = n ? (double)in / n : 0;
}

/*
 * The boot path every real VM takes: idle at QEMU's default (polltune turns
 * polling off), then the load.  Before a new workload got the same
 * exploration from any start, the boot cells' worst was 69.3% of the oracle
 * (QD1 on the 5 us batching device, +-50% noise: settled at off, where
 * qemu-default has 100%) and 14 of 104 ended more than 3% below never-write;
 * now 88.9% and 9.  The floors lie between, so going back fails.  The QEMU 10
 * model's boot cells are held to the same worst cell (88.9% now); their 15
 * cells below never-write have no figure from before to be set against.
 */
#define MATRIX_BOOT_FLOOR_WORST 0.85
#define MATRIX_BOOT_CEIL_HARM 12

/* Cells of @start that end more than 3% below never-write. */
static guint
matrix_start_harm(const SimMatrixResult *r, SimMatrixStart start)
{
    guint n = 0;

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];

        if (c->w.start == start &&
            exp(c->score[SIM_MATRIX_ADAPTIVE] - c->score[SIM_MATRIX_NEVER_WRITE]) < 0.97)
            n++;
    }
    return n;
}

/*
 * The boot path's floors, and the write discipline goal where it holds
 * (@steady: QEMU 7.2; under QEMU 10 one phase change at +-25% noise is seen
 * on its 12th tick, and the matrix counts that exploration's two probes as
 * steady writes, docs/POLICY.md).
 */
static void
matrix_check_boot_and_writes(const SimMatrixResult *r, gboolean steady)
{
    double within, worst;
    guint harm = matrix_start_harm(r, SIM_START_BOOT);

    matrix_start_figures(r, SIM_START_BOOT, &within, &worst);
    g_test_message("boot start: %.1f%% within 3%% of the oracle, worst %.1f%%, %u cells > 3%% "
                   "below never-write", 100 * within, 100 * worst, harm);
    g_assert_cmpfloat(worst, >=, MATRIX_BOOT_FLOOR_WORST);
    g_assert_cmpuint(r->writes_max_phase, <=, 4);
    if (!steady)
        return;
    g_assert_cmpuint(harm, <=, MATRIX_BOOT_CEIL_HARM);
    /* The write discipline goal is the matrix's last. */
    g_assert_true(r->goals[SIM_MATRIX_N_GOALS - 1].pass[SIM_MATRIX_ADAPTIVE]);
    g_assert_cmpuint(r->steady_writes, ==, 0);
}

static void
test_matrix_reduced(void)
{
    g_autoptr(SimMatrixResult) r = sim_matrix_run(FALSE, SIM_QEMU_7_2, 1, 0);
    double nvme_within, nvme_worst, batch_within, batch_worst, w2, worst2, w3, worst3;
    guint n_nvme, n_batch, n_two, n_three;

    matrix_report(r, "matrix");
    if (matrix_sampled(r, matrix_n_cells()))
        return;
    matrix_check_starts(r);
    /* The floors below are the default start's: its cells keep their seeds. */
    n_nvme = matrix_class_figures(r, SIM_DEVICE_NVME, 0, SIM_START_DEFAULT, &nvme_within,
                                  &nvme_worst);
    n_batch = matrix_class_figures(r, SIM_DEVICE_BATCHING, 0, SIM_START_DEFAULT, &batch_within,
                                   &batch_worst);
    n_two = matrix_class_figures(r, SIM_DEVICE_NVME, 2, SIM_START_DEFAULT, &w2, &worst2);
    n_three = matrix_class_figures(r, SIM_DEVICE_NVME, 3, SIM_START_DEFAULT, &w3, &worst3);
    g_test_message("nvme: %u cells, %.1f%% within, worst %.1f%%; batching: %u cells, %.1f%% "
                   "within, worst %.1f%%", n_nvme, 100 * nvme_within, 100 * nvme_worst, n_batch,
                   100 * batch_within, 100 * batch_worst);
    g_test_message("2 disks: %u cells, %.1f%% within, worst %.1f%%; 3 disks: %u cells, %.1f%% "
                   "within, worst %.1f%%", n_two, 100 * w2, 100 * worst2, n_three, 100 * w3,
                   100 * worst3);
    g_test_message("operator writes: %u runs, %u overwritten", r->operator_runs,
                   r->operator_overwritten);
    g_assert_cmpuint(n_nvme, ==, MATRIX_N_NVME);
    g_assert_cmpuint(n_batch, ==, MATRIX_N_BATCHING);
    g_assert_cmpuint(n_two, ==, MATRIX_N_MULTI);
    g_assert_cmpuint(n_three, ==, MATRIX_N_MULTI);
    g_assert_cmpuint(r->operator_runs, >, 0);
    matrix_check_cells(r);
    g_assert_cmpfloat(nvme_within, >=, MATRIX_FLOOR_WITHIN);
    g_assert_cmpfloat(nvme_worst, >=, MATRIX_FLOOR_WORST);
    g_assert_cmpfloat(r->writes_p95_noise50, <=, MATRIX_CEIL_WRITES50);
    matrix_check_boot_and_writes(r, TRUE);
}

/*
 * POLLSIM_ORACLE=FILE: the oracle search of each workload, a line per
 * phase and grid triple, the workload named without a noise level, and no
 * policy run.  One phase-change workload: two phases of the 8 triples.
 */
static void
test_matrix_oracle_dump(void)
{
    g_autofree char *dir = g_dir_make_tmp("pt-oracle-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "oracle.tsv", NULL);
    g_autofree char *text = NULL;
    g_autofree char *sample = g_strdup(g_getenv("POLLSIM_SAMPLE"));
    g_autoptr(SimMatrixResult) r = NULL;
    g_auto(GStrv) lines = NULL;
    const char *workload = "qd=1 closed svc=32us dev=nvme host=shared phase-change start=default";
    guint n = 0, phase_lines[2] = { 0 };

    g_assert_nonnull(dir);
    g_unsetenv("POLLSIM_SAMPLE");
    g_setenv("POLLSIM_ONLY", workload, TRUE);
    g_setenv("POLLSIM_ORACLE", path, TRUE);
    g_assert_true(sim_matrix_oracle_only());
    r = sim_matrix_run(FALSE, SIM_QEMU_7_2, 1, 0);
    g_unsetenv("POLLSIM_ORACLE");
    g_unsetenv("POLLSIM_ONLY");
    if (sample)
        g_setenv("POLLSIM_SAMPLE", sample, TRUE);
    g_assert_false(sim_matrix_oracle_only());

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l && **l; l++, n++) {
        g_auto(GStrv) f = g_strsplit(*l, "\t", -1);
        PolicyTriple t;
        char *end;
        double score;

        g_assert_cmpuint(g_strv_length(f), ==, 4);
        g_assert_true(g_str_has_prefix(f[0], workload));
        g_assert_null(strstr(f[0], "noise="));
        g_assert_true(g_str_equal(f[1], "0") || g_str_equal(f[1], "1"));
        phase_lines[f[1][0] - '0']++;
        g_assert_true(policy_triple_parse(f[2], &t, NULL));
        score = g_ascii_strtod(f[3], &end);
        g_assert_cmpint(*end, ==, '\0');
        g_assert_true(isfinite(score) && score > 0);
    }
    g_assert_cmpuint(n, ==, 16);
    g_assert_cmpuint(phase_lines[0], ==, 8);
    g_assert_cmpuint(phase_lines[1], ==, 8);
    /* No policy ran: its cells were never scored. */
    g_assert_cmpuint(r->n_cells, ==, 4);
    for (guint i = 0; i < r->n_cells; i++)
        g_assert_cmpfloat(r->cells[i].score[SIM_MATRIX_ADAPTIVE], ==, 0.0);
    g_assert_cmpint(g_remove(path), ==, 0);
    g_assert_cmpint(g_rmdir(dir), ==, 0);
}

/*
 * The same grid under QEMU >= 10.0's per-handler windows.  The floor is on
 * the whole grid: there the one-disk nvme cells moved by one cell between
 * the evidence bar of two standard errors and of one (70.3% -> 71.9%
 * within 3%), the batching and multi-disk cells by five, and the whole
 * grid from 66.3% to 76.0%.  72% lies between them, so going back fails.
 * The worst cell was 76.9% with probes of up to six ticks (QD16 32 us
 * batching device, +-50% noise: off, 19% better, ended by one tick 45%
 * low after wide ran all six) and is 86.0% with three; 80% lies between.
 * Neither trivial policy passes both: qemu-default has 84.6% within 3% but
 * a worst cell of 76.0% (the same batching cell), off 26.9% within.
 */
#define MATRIX10_FLOOR_WITHIN 0.72
#define MATRIX10_FLOOR_WORST 0.80

static void
test_matrix_reduced_qemu10(void)
{
    g_autoptr(SimMatrixResult) r = sim_matrix_run(FALSE, SIM_QEMU_10, 1, 0);
    double within, worst;

    matrix_report(r, "matrix (QEMU 10 model)");
    if (matrix_sampled(r, matrix_n_cells()))
        return;
    matrix_check_starts(r);
    matrix_check_cells(r);
    matrix_start_figures(r, SIM_START_DEFAULT, &within, &worst);
    g_test_message("default start: %.1f%% within 3%% of the oracle, worst %.1f%%", 100 * within,
                   100 * worst);
    g_assert_cmpfloat(within, >=, MATRIX10_FLOOR_WITHIN);
    g_assert_cmpfloat(worst, >=, MATRIX10_FLOOR_WORST);
    g_assert_cmpfloat(r->writes_p95_noise50, <=, MATRIX_CEIL_WRITES50);
    matrix_check_boot_and_writes(r, FALSE);
}

/* The cell's coordinates name its device class. */
static void
test_matrix_cell_format(void)
{
    SimMatrixCell c = { .w = { .qd = 16, .svc_us = 5, .device = SIM_DEVICE_BATCHING,
                               .start = SIM_START_BOOT } };
    g_autofree char *s = sim_matrix_cell_format(&c);
    SimMatrixCell d = { .w = { .qd = 16, .svc_us = 5 } };
    g_autofree char *t = sim_matrix_cell_format(&d);

    g_assert_nonnull(strstr(s, " dev=batching "));
    g_assert_nonnull(strstr(t, " dev=nvme "));
    g_assert_nonnull(strstr(s, " start=boot "));
    g_assert_nonnull(strstr(t, " start=default "));
}

/* S1 (60 one-second ticks) under adaptive: how many decisions say @why. */
static guint
s1_decisions_saying(const char *why)
{
    const SimScenario *scn = sim_scenario_find("S1");
    PolicySpec spec;
    g_autofree char *text = NULL;
    size_t len = 0;
    FILE *trace = open_memstream(&text, &len);
    SimRunOpts opts = { .trace = trace };
    g_autoptr(SimRun) run = NULL;
    guint n = 0;

    g_assert_nonnull(trace);
    g_assert_true(policy_spec_parse("adaptive", &spec, NULL));
    run = sim_scenario_run_opts(scn, &spec, NULL, 1.0, 1, &opts);
    fclose(trace);
    for (const char *p = text; (p = strstr(p, why)); p += strlen(why))
        n++;
    return n;
}

/*
 * POLLSIM_REVALIDATE reaches the policy: none of S1's 60 ticks revalidate
 * under the 300 s default, a 10 s period does; a value outside the
 * daemon's range ends the run with the variable named.
 */
static void
test_env_revalidate(void)
{
    if (g_test_subprocess()) {
        g_setenv("POLLSIM_REVALIDATE", "604801", TRUE);
        s1_decisions_saying("periodic revalidation");
        return;
    }
    g_unsetenv("POLLSIM_REVALIDATE");
    g_assert_cmpuint(s1_decisions_saying("periodic revalidation"), ==, 0);
    g_setenv("POLLSIM_REVALIDATE", "10", TRUE);
    g_assert_cmpuint(s1_decisions_saying("periodic revalidation"), >=, 2);
    g_unsetenv("POLLSIM_REVALIDATE");
    g_assert_cmpuint(sim_env_unsigned("POLLSIM_REVALIDATE", 0, 9, 7), ==, 7);

    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*POLLSIM_REVALIDATE=\"604801\": not a whole number from 0 to 604800*");
}

int
main(int argc, char **argv)
{
    static const char *const fast[] = { "S1", "S3", "S4", "S5", "S7" };

    g_test_init(&argc, &argv, NULL);
    g_test_add_data_func("/pollsim/calibration/qd1", GUINT_TO_POINTER(1), test_calibration);
    g_test_add_data_func("/pollsim/calibration/qd32", GUINT_TO_POINTER(32), test_calibration);
    g_test_add_func("/pollsim/calibration/many-handlers", test_calibration_many_handlers);
    g_test_add_func("/pollsim/batching/polling-loses-at-depth", test_batching_polling_loses_at_depth);
    g_test_add_func("/pollsim/batching/nvme-is-default", test_nvme_class_is_default);
    g_test_add_func("/pollsim/batching/two-steady-states", test_batching_two_steady_states);
    g_test_add_func("/pollsim/many-handlers/cost", test_many_handlers_cost);
    g_test_add_func("/pollsim/deterministic", test_deterministic);
    g_test_add_func("/pollsim/noise/consistent", test_noise_consistent);
    g_test_add_func("/pollsim/window-rules", test_window_rules);
    g_test_add_func("/pollsim/write-resets-window", test_write_resets_window);
    g_test_add_func("/pollsim/matrix/reduced", test_matrix_reduced);
    g_test_add_func("/pollsim/matrix/cell-format", test_matrix_cell_format);
    g_test_add_func("/pollsim/matrix/oracle-dump", test_matrix_oracle_dump);
    g_test_add_func("/pollsim/env/revalidate", test_env_revalidate);
    g_test_add_func("/pollsim/matrix-qemu10/reduced", test_matrix_reduced_qemu10);
    g_test_add_func("/pollsim/two-disks", test_two_disks);
    g_test_add_func("/pollsim/two-disks/no-starvation", test_two_disks_no_starvation);
    g_test_add_func("/pollsim/two-disks/write-tick", test_two_disks_write_tick);
    g_test_add_func("/pollsim/qemu10/per-handler-windows", test_qemu10_per_handler_windows);
    for (guint i = 0; i < G_N_ELEMENTS(fast); i++) {
        g_autofree char *path = g_strdup_printf("/pollsim/goals/%s", fast[i]);
        g_test_add_data_func(path, fast[i], test_goals_fast);
    }
    return g_test_run();
}
