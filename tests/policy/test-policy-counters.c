/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy_metrics_from_delta() takes the rates the metric table declares
 * from the table (metric_rate_value()).  This test holds it, with the
 * delta of two readings by metric_vec_delta(), to the formulas it had
 * before, written out here as the reference: for a set of counter pairs
 * every figure is identical or within 1e-12 relative.
 */
#include <math.h>

#include "policy-test-counters.h"

/* The formulas policy-counters.c had before it read the table. */
static void
reference_metrics(const TestCounters *p, const TestCounters *c, PolicyMetrics *m)
{
    double secs, ops = 0;

    *m = (PolicyMetrics){ 0 };
    m->interval_ns = c->mono_ns - p->mono_ns;
    secs = m->interval_ns / 1e9;
    if (p->have_io && c->have_io && c->rd_ops >= p->rd_ops && c->wr_ops >= p->wr_ops &&
        c->flush_ops >= p->flush_ops && c->rd_bytes >= p->rd_bytes &&
        c->wr_bytes >= p->wr_bytes && c->rd_time_ns >= p->rd_time_ns &&
        c->wr_time_ns >= p->wr_time_ns && c->flush_time_ns >= p->flush_time_ns) {
        double rd = c->rd_ops - p->rd_ops, wr = c->wr_ops - p->wr_ops;
        double fl = c->flush_ops - p->flush_ops;
        double t = (double)(c->rd_time_ns - p->rd_time_ns) +
                   (double)(c->wr_time_ns - p->wr_time_ns) +
                   (double)(c->flush_time_ns - p->flush_time_ns);

        ops = rd + wr + fl;
        m->have_io = TRUE;
        m->rd_iops = rd / secs;
        m->wr_iops = wr / secs;
        m->flush_iops = fl / secs;
        m->rd_mbps = (c->rd_bytes - p->rd_bytes) / secs / 1e6;
        m->wr_mbps = (c->wr_bytes - p->wr_bytes) / secs / 1e6;
        m->lat_mean_ns = ops > 0 ? t / ops : 0.0;
        m->queue_depth = t / m->interval_ns;
    }
    if (p->have_cpu && c->have_cpu && c->cpu_ns >= p->cpu_ns && c->ctx_vol >= p->ctx_vol &&
        c->ctx_invol >= p->ctx_invol && c->runq_wait_ns >= p->runq_wait_ns) {
        double vol = c->ctx_vol - p->ctx_vol;

        m->have_cpu = TRUE;
        m->cpu_pct = 100.0 * (c->cpu_ns - p->cpu_ns) / m->interval_ns;
        m->blocks_per_s = vol / secs;
        m->blocks_per_op = ops > 0 ? vol / ops : 0.0;
        m->nvcsw_per_s = (c->ctx_invol - p->ctx_invol) / secs;
        m->run_delay_pct = 100.0 * (c->runq_wait_ns - p->runq_wait_ns) / m->interval_ns;
    }
    if (p->have_exits && c->have_exits && c->exits >= p->exits) {
        double ex = c->exits - p->exits;

        m->have_exits = TRUE;
        m->exits_per_s = ex / secs;
        m->exits_per_op = ops > 0 ? ex / ops : 0.0;
    }
}

static void
assert_close(const char *what, guint k, double want, double got)
{
    if (want == got)
        return;
    if (fabs(want - got) > 1e-12 * MAX(fabs(want), fabs(got)))
        g_error("pair %u: %s: %.17g from the reference, %.17g from the table", k, what, want,
                got);
}

#define CHECK(f) assert_close(#f, k, want.f, got.f)

/* Counters that grow by @scale-sized steps over @len_ns, with @flags of
 * which groups each side has. */
static void
fill_pair(TestCounters *p, TestCounters *c, guint64 base, guint64 step, gint64 len_ns)
{
    *p = (TestCounters){
        .mono_ns = 1000000000, .have_io = TRUE, .have_cpu = TRUE, .have_exits = TRUE,
        .rd_ops = base, .wr_ops = base / 3, .flush_ops = base / 7,
        .rd_bytes = base * 4096, .wr_bytes = base * 512, .rd_time_ns = base * 41000,
        .wr_time_ns = base * 7001, .flush_time_ns = base * 333, .cpu_ns = base * 1009,
        .ctx_vol = base * 3, .ctx_invol = base / 5, .runq_wait_ns = base * 17,
        .exits = base * 11,
    };
    *c = *p;
    c->mono_ns = p->mono_ns + len_ns;
    c->rd_ops += step;
    c->wr_ops += step / 3;
    c->flush_ops += step / 13;
    c->rd_bytes += step * 4096 + 1;
    c->wr_bytes += step * 511;
    c->rd_time_ns += step * 39877 + 3;
    c->wr_time_ns += step * 9001;
    c->flush_time_ns += step * 123457;
    c->cpu_ns += step * 1013 + 7;
    c->ctx_vol += step * 2 + 1;
    c->ctx_invol += step / 9;
    c->runq_wait_ns += step * 29;
    c->exits += step * 3 + 2;
}

static void
test_counters_table_matches_reference(void)
{
    static const guint64 steps[] = { 0, 1, 2, 7, 999, 123457, 10000000, 4000000000ULL };
    static const gint64 lens[] = { 1, 999, 1000000, 333333333, 1000000000, 2500000007,
                                   60000000000 };
    guint k = 0, compared = 0;

    for (guint s = 0; s < G_N_ELEMENTS(steps); s++)
        for (guint l = 0; l < G_N_ELEMENTS(lens); l++)
            for (guint variant = 0; variant < 6; variant++, k++) {
                TestCounters p, c;
                PolicyMetrics want, got;
                g_autoptr(GError) error = NULL;

                fill_pair(&p, &c, 1000 + 17 * k, steps[s], lens[l]);
                switch (variant) {
                case 1: c.have_io = FALSE; break;           /* no I/O group */
                case 2: c.have_cpu = FALSE; break;
                case 3: p.have_exits = FALSE; break;
                case 4: c.wr_time_ns = p.wr_time_ns - 1; break;  /* a reset drops I/O */
                case 5: c.ctx_invol = p.ctx_invol - 1; c.exits = 0; break;
                default: break;
                }
                reference_metrics(&p, &c, &want);
                g_assert_true(test_metrics_from_counters(&p, &c, &got, &error));
                g_assert_no_error(error);
                g_assert_cmpint(want.have_io, ==, got.have_io);
                g_assert_cmpint(want.have_cpu, ==, got.have_cpu);
                g_assert_cmpint(want.have_exits, ==, got.have_exits);
                CHECK(rd_iops);
                CHECK(wr_iops);
                CHECK(flush_iops);
                CHECK(rd_mbps);
                CHECK(wr_mbps);
                CHECK(lat_mean_ns);
                CHECK(queue_depth);
                CHECK(cpu_pct);
                CHECK(blocks_per_s);
                CHECK(blocks_per_op);
                CHECK(nvcsw_per_s);
                CHECK(run_delay_pct);
                CHECK(exits_per_s);
                CHECK(exits_per_op);
                compared++;
            }
    g_test_message("%u counter pairs compared", compared);
    g_assert_cmpuint(compared, ==, G_N_ELEMENTS(steps) * G_N_ELEMENTS(lens) * 6);
}

/* A tick without I/O has no latency, blocks or exits per operation: the
 * status reply left them 0 ("0.0" in status), where "-" is the truth. */
static void
test_counters_idle_per_op_absent(void)
{
    static const MetricRate per_op[] = { METRIC_RATE_LAT_US, METRIC_RATE_BLOCKS_PER_OP,
                                         METRIC_RATE_EXITS_PER_OP };
    TestCounters p, c;
    PolicyMetrics m;
    double v = -1;

    for (guint busy = 0; busy < 2; busy++) {
        fill_pair(&p, &c, 1000, busy ? 999 : 0, 1000000000);
        g_assert_true(test_metrics_from_counters(&p, &c, &m, NULL));
        g_assert_true(m.have_io && m.have_cpu && m.have_exits);
        for (guint i = 0; i < G_N_ELEMENTS(per_op); i++)
            g_assert_cmpint(policy_metrics_rate(&m, per_op[i], &v), ==, busy);
        /* The rates per second are there either way, 0 when idle. */
        g_assert_true(policy_metrics_rate(&m, METRIC_RATE_IOPS, &v));
        if (!busy)
            g_assert_cmpfloat(v, ==, 0.0);
        g_assert_true(policy_metrics_rate(&m, METRIC_RATE_CPU_PCT, &v));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/policy/counters/table-matches-reference",
                    test_counters_table_matches_reference);
    g_test_add_func("/policy/counters/idle-per-op-absent", test_counters_idle_per_op_absent);
    return g_test_run();
}
