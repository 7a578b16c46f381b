/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The per-target bookkeeping the daemon keeps in memory between ticks:
 * whatever the uptime, it must stay bounded; and the backoff of a target
 * that keeps failing.
 */
#include "pt-target.h"
#include "pt-history.h"
#include "probe-derive.h"
#include "pt-conf.h"

#include <string.h>

static void
noop_free(PtTarget *t)
{
}

static const PtTargetOps noop_ops = { .free = noop_free };

/* A day of ticks leaves at most PT_HISTORY_TICKS plus the slack of one
 * trim per iothread, and the newest metrics last. */
static void
test_history_bounded(void)
{
    g_autoptr(PtTarget) t = pt_target_alloc(sizeof(PtTarget), &noop_ops, "vm", STORE_TARGET_QMP);
    PtIothread *io = pt_target_iothread(t, "iot0");
    guint most = 0;

    for (guint i = 0; i < 86400; i++) {
        PolicyMetrics m = { 0 };

        m.rd_iops = i;
        pt_iothread_push_metrics(io, &m);
        most = MAX(most, io->history->len);
    }
    g_assert_cmpuint(most, <=, PT_HISTORY_TICKS + PT_HISTORY_TICKS / 10);
    g_assert_cmpuint(io->history->len, >=, PT_HISTORY_TICKS);
    g_assert_cmpfloat(g_array_index(io->history, PolicyMetrics, io->history->len - 1).rd_iops,
                      ==, 86399);
    /* Oldest first, consecutive. */
    for (guint i = 1; i < io->history->len; i++)
        g_assert_cmpfloat(g_array_index(io->history, PolicyMetrics, i).rd_iops, ==,
                          g_array_index(io->history, PolicyMetrics, i - 1).rd_iops + 1);
}

/* One tick of the host side with QEMU's own figures @qs in the snapshot
 * (< 0: QEMU gave none). */
static ProbeExitSource
host_side_tick(PtTarget *t, gint64 qs, guint64 *exits)
{
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(t->pid, 0, 0);

    if (qs >= 0)
        probe_exit_counters_add_named(&snap->exits, "exits", (guint64)qs);
    pt_target_sample_host_side(t, snap);
    /* 0: no exits counter */
    *exits = probe_exit_counters_has(&snap->exits, METRIC_KVM_EXITS)
             ? (guint64)snap->exits.v.v[METRIC_KVM_EXITS] : 0;
    return snap->exits.source;
}

/*
 * QEMU's query-stats figures survive the host side: a readable debugfs
 * whose counter stands still does not replace them (it did, and the VM
 * showed 0 exits/s while QEMU counted 60/s).
 */
static void
test_exits_prefer_qemu(void)
{
    ProbeRoots roots = {
        .proc = g_test_get_filename(G_TEST_DIST, "probe", "fixtures", "proc-good", NULL),
        .debugfs = g_test_get_filename(G_TEST_DIST, "probe", "fixtures", "debugfs-good", NULL),
        .tracefs = g_test_get_filename(G_TEST_DIST, "probe", "fixtures", "tracefs-partial", NULL),
    };
    g_autoptr(PtTarget) t = pt_target_alloc(sizeof(PtTarget), &noop_ops, "vm", STORE_TARGET_QMP);
    const char *why = NULL;
    guint64 exits = 0;

    pt_target_set_pid(t, 100, &roots);
    g_assert_cmpint(pt_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_NONE);
    for (guint tick = 0; tick < 3; tick++) {
        g_assert_cmpint(host_side_tick(t, 1000 + 60 * tick, &exits), ==,
                        PROBE_EXIT_SOURCE_QUERY_STATS);
        g_assert_cmpuint(exits, ==, 1000 + 60 * tick);
    }
    g_assert_cmpint(pt_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_QUERY_STATS);
    g_assert_cmpstr(why, ==, "QEMU's own KVM statistics");
    /* The change was news for the log, once. */
    g_assert_true(g_ptr_array_find_with_equal_func(
        t->news, "exits: query-stats: QEMU's own KVM statistics", g_str_equal, NULL));

    /* Without QEMU's figures, debugfs is next. */
    pt_target_set_exits_facts(t, NULL, "not offered by QEMU (test)");
    g_assert_cmpint(host_side_tick(t, -1, &exits), ==, PROBE_EXIT_SOURCE_DEBUGFS);
    g_assert_cmpuint(exits, ==, 123456);
    pt_target_exit_source(t, &why);
    g_assert_cmpstr(why, ==, "better sources unusable: query-stats not offered by QEMU (test)");

    /* A guest without KVM: exits absent, not zero. */
    pt_target_set_exits_facts(t, "the guest runs without KVM", NULL);
    g_assert_cmpint(host_side_tick(t, -1, &exits), ==, PROBE_EXIT_SOURCE_NONE);
    pt_target_exit_source(t, &why);
    g_assert_cmpstr(why, ==, "the guest runs without KVM");
}

/* Messages queued to log, then cleared. */
static guint
take_news(PtTarget *t)
{
    guint n = t->news->len;

    g_ptr_array_set_size(t->news, 0);
    return n;
}

/* A peer that never works: waits of 1, 2, 4 ... 60 s, one line when it
 * breaks, a reminder every 10 minutes, a reason whatever the state; a good
 * sample is one line, and a healthy minute forgets the failures. */
static void
test_backoff(void)
{
    g_autoptr(PtTarget) t = pt_target_alloc(sizeof(PtTarget), &noop_ops, "vm", STORE_TARGET_QMP);
    g_autoptr(GError) bad = g_error_new(G_IO_ERROR, G_IO_ERROR_FAILED, "wrong shape");
    static const guint waits[] = { 1, 2, 4, 8, 16, 32, 60, 60, 60 };
    gint64 now = 1000 * G_USEC_PER_SEC;
    guint lines = 0;

    for (guint i = 0; i < G_N_ELEMENTS(waits); i++) {
        pt_target_set_state_at(t, PT_TARGET_CONNECTING, NULL, now);
        if (i > 0) {
            g_assert_nonnull(t->state_reason);
            g_assert_nonnull(strstr(t->state_reason, "the last: wrong shape"));
        }
        pt_target_set_state_at(t, PT_TARGET_ATTACHED, NULL, now);
        if (i > 0)
            g_assert_nonnull(t->state_reason);
        /* A broken target is lost at its first failed sample. */
        pt_target_sample_result(t, bad, now);
        if (i == 0) {
            g_assert_cmpint(t->state, ==, PT_TARGET_ATTACHED);
            g_assert_nonnull(strstr(t->state_reason, "wrong shape"));
            pt_target_sample_result(t, bad, now);
            pt_target_sample_result(t, bad, now);
        }
        g_assert_cmpint(t->state, ==, PT_TARGET_LOST);
        g_assert_nonnull(strstr(t->state_reason, "wrong shape"));
        g_assert_cmpuint(t->health.backoff_ms, ==, waits[i] * 1000);
        g_assert_false(pt_target_retry_due(t, now + waits[i] * G_USEC_PER_SEC - 1));
        g_assert_true(pt_target_retry_due(t, now + waits[i] * G_USEC_PER_SEC));
        /* The hang-up after a loss is not another failure. */
        pt_target_set_state_at(t, PT_TARGET_LOST, "closed", now);
        g_assert_cmpuint(t->health.failures, ==, i + 1);
        lines += take_news(t);
        pt_target_health_tick(t, now);
        now += waits[i] * G_USEC_PER_SEC;
    }
    /* "attached" the first time, "lost: wrong shape; ..." once. */
    g_assert_cmpuint(lines, ==, 2);

    /* Ten minutes of failing at 60 s each: one reminder, not ten. */
    for (guint i = 0; i < 10; i++) {
        pt_target_set_state_at(t, PT_TARGET_CONNECTING, NULL, now);
        pt_target_set_state_at(t, PT_TARGET_LOST, "refused", now);
        pt_target_health_tick(t, now);
        now += 60 * G_USEC_PER_SEC;
    }
    g_assert_cmpuint(take_news(t), ==, 1);

    /* Healthy again: one line; a minute later the backoff starts over. */
    pt_target_set_state_at(t, PT_TARGET_CONNECTING, NULL, now);
    pt_target_set_state_at(t, PT_TARGET_ATTACHED, NULL, now);
    pt_target_sample_result(t, NULL, now);
    g_assert_null(t->state_reason);
    g_assert_cmpuint(take_news(t), ==, 1);
    g_assert_cmpuint(t->health.failures, >, 0);
    pt_target_sample_result(t, NULL, now + PT_BACKOFF_RESET_MS * 1000LL);
    g_assert_cmpuint(t->health.failures, ==, 0);
    pt_target_set_state_at(t, PT_TARGET_LOST, "gone", now + PT_BACKOFF_RESET_MS * 1000LL);
    g_assert_cmpuint(t->health.backoff_ms, ==, PT_BACKOFF_FIRST_MS);
    g_assert_cmpuint(take_news(t), ==, 1);
}

/*
 * Two devices on one iothread: d0 is reset (its counters go back) while d1
 * grows by more.  The sum grows, but no device pair gives this tick's I/O:
 * the stored delta is absent, as the policy's rates are, not a positive
 * figure.  Likewise a clk_tck change leaves the tick-based CPU time absent.
 */
static ProbeTargetSnap *
history_snap(gint64 t_ns, guint64 clk_tck, guint64 d0, guint64 d1, guint64 ticks)
{
    ProbeTargetSnap *s = probe_target_snap_new(10, t_ns, 1700000000000 + t_ns / 1000000);
    ProbeIothreadSnap *io = probe_target_snap_iothread(s, "iot0");
    ProbeThreadCounters th;
    MetricVec c0, c1;

    probe_thread_counters_init(&th);
    th.v.v[METRIC_UTIME_TICKS] = th.v.v[METRIC_STIME_TICKS] = (gint64)ticks;
    th.v.v[METRIC_CTX_VOL] = (gint64)ticks;
    th.v.v[METRIC_CTX_INVOL] = 0;

    metric_vec_init(&c0);
    metric_vec_zero_source(&c0, METRIC_SOURCE_BLOCK);
    c1 = c0;
    c0.v[METRIC_RD_OPS] = (gint64)d0;
    c0.v[METRIC_RD_BYTES] = (gint64)d0 * 4096;
    c1.v[METRIC_RD_OPS] = (gint64)d1;
    c1.v[METRIC_RD_BYTES] = (gint64)d1 * 4096;

    s->clk_tck = clk_tck;
    probe_iothread_snap_set_thread(io, 11, &th);
    probe_iothread_snap_add_device(io, "d0", NULL, &c0);
    probe_iothread_snap_add_device(io, "d1", NULL, &c1);
    return s;
}

static void
test_history_pairing(void)
{
    g_autoptr(ProbeTargetSnap) a = history_snap(G_GINT64_CONSTANT(1000000000), 100, 500, 100, 10);
    g_autoptr(ProbeTargetSnap) b = history_snap(G_GINT64_CONSTANT(2000000000), 100, 5, 1000, 20);
    g_autoptr(ProbeTargetSnap) c = history_snap(G_GINT64_CONSTANT(3000000000), 100, 15, 1100, 30);
    g_autoptr(ProbeTargetSnap) d = history_snap(G_GINT64_CONSTANT(4000000000), 250, 25, 1200, 40);
    PolicyDelta delta;
    StoreSample s;

    /* d0 reset, d1 grew by 900: the sums went 600 -> 1005. */
    probe_derive_delta(a, b, "iot0", &delta);
    pt_history_sample(&delta, &s);
    g_assert_cmpint(s.m.v[METRIC_RD_OPS], ==, METRIC_ABSENT);
    g_assert_cmpint(s.m.v[METRIC_RD_BYTES], ==, METRIC_ABSENT);
    g_assert_cmpint(s.m.v[METRIC_CPU_NS], ==, 20 * (G_GINT64_CONSTANT(1000000000) / 100));
    /* A normal tick after it: both devices count. */
    probe_derive_delta(b, c, "iot0", &delta);
    pt_history_sample(&delta, &s);
    g_assert_cmpint(s.m.v[METRIC_RD_OPS], ==, 110);
    g_assert_cmpint(s.m.v[METRIC_RD_BYTES], ==, 110 * 4096);
    /* clk_tck changed between the two snapshots: ticks are not comparable. */
    probe_derive_delta(c, d, "iot0", &delta);
    pt_history_sample(&delta, &s);
    g_assert_cmpint(s.m.v[METRIC_CPU_NS], ==, METRIC_ABSENT);
    g_assert_cmpint(s.m.v[METRIC_RD_OPS], ==, 110);
}

/* Every value of each daemon enum has a name that maps back to it; the
 * names are external (JSON, store, log) and must not change. */
#define CHECK_ENUM(prefix, max)                                             \
    for (int i = 0; i < (max); i++) {                                       \
        g_assert_nonnull(prefix##_to_string(i));                            \
        g_assert_cmpint(prefix##_from_string(prefix##_to_string(i)), ==, i); \
    }                                                                       \
    g_assert_null(prefix##_to_string(max));                                 \
    g_assert_null(prefix##_to_string(-1));                                  \
    g_assert_cmpint(prefix##_from_string("no such name"), ==, -1);          \
    g_assert_cmpint(prefix##_from_string(NULL), ==, -1)

static void
test_enum_strings(void)
{
    g_autofree char *failed = pt_outcome_format(PT_OUTCOME_FAILED, "QMP error: x");
    g_autofree char *applied = pt_outcome_format(PT_OUTCOME_APPLIED, NULL);

    CHECK_ENUM(pt_mode, PT_MODE_MAX);
    CHECK_ENUM(pt_restart, PT_RESTART_MAX);
    CHECK_ENUM(pt_target_state, PT_TARGET_STATE_MAX);
    CHECK_ENUM(pt_outcome, PT_OUTCOME_MAX);
    g_assert_cmpstr(pt_outcome_to_string(PT_OUTCOME_RECOMMENDED), ==, "recommended");
    g_assert_cmpstr(applied, ==, "applied");
    g_assert_cmpstr(failed, ==, "failed: QMP error: x");
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/target/history-bounded", test_history_bounded);
    g_test_add_func("/daemon/target/history-pairing", test_history_pairing);
    g_test_add_func("/daemon/target/exits-prefer-qemu", test_exits_prefer_qemu);
    g_test_add_func("/daemon/target/backoff", test_backoff);
    g_test_add_func("/daemon/target/enum-strings", test_enum_strings);
    return g_test_run();
}
