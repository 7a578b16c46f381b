/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Gains against QEMU's default, tick by tick (policy-gain.h): a tick is
 * charged only by pairs of its own workload closed before it and within
 * 12 h, the totals never fall, and the figures are their ratios.
 */
#include <math.h>

#include "policy-gain.h"

#define T0_MS G_GINT64_CONSTANT(1795000000000)
#define HOUR_MS (3600 * G_GINT64_CONSTANT(1000))

typedef struct {
    PolicyGain *g;
    gint64 ts_ms;
} Feed;

/* @n ticks 1 s apart at @max_ns, @iops at queue depth @qd, @cpu % of a core. */
static void
feed(Feed *f, guint n, gint64 max_ns, double iops, double qd, double cpu)
{
    for (guint i = 0; i < n; i++) {
        f->ts_ms += 1000;
        policy_gain_tick(f->g, &(PolicyGainTick){ f->ts_ms, iops, qd / iops * 1e6, cpu,
                                                  max_ns });
    }
}

static const PolicyGainTotals *
totals(const Feed *f)
{
    return policy_gain_totals(f->g);
}

/*
 * 16384 at queue depth 1 gives 7500 ops/s where the default gives 5000,
 * for 1 % of a core more.  Its first run comes before any pair and is not
 * charged; the run after the pair is, 2500 ops and 0.01 CPU seconds a
 * tick; queue depth 16 is another workload and is not.
 */
static void
test_causal(void)
{
    Feed f = { policy_gain_new(), T0_MS };

    feed(&f, 20, 16384, 7500, 1, 6);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 0);
    feed(&f, 20, 32768, 5000, 1, 5);
    /* The default's run is charged zero, and is not yet a pair's end. */
    g_assert_cmpfloat(totals(&f)->default_s, ==, 20);
    g_assert_cmpuint(policy_gain_pairs_default(f.g), ==, 0);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 0);
    feed(&f, 20, 16384, 7500, 1, 6);
    g_assert_cmpuint(policy_gain_pairs_default(f.g), ==, 1);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 20);
    g_assert_cmpfloat_with_epsilon(totals(&f)->ops_gained, 20 * 2500, 1e-6);
    g_assert_cmpfloat_with_epsilon(totals(&f)->cpu_spent_s, 20 * 0.01, 1e-9);
    g_assert_cmpfloat(totals(&f)->ops_lost, ==, 0);
    g_assert_cmpfloat(totals(&f)->cpu_saved_s, ==, 0);
    /* The first tick has no length: 59 s known. */
    g_assert_cmpfloat(totals(&f)->known_s, ==, 59);
    /* Queue depth 16 at 16384: no pair of that workload. */
    feed(&f, 10, 16384, 40000, 16, 20);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 20);
    g_assert_cmpfloat(totals(&f)->known_s, ==, 69);
    /* The same workload again, 11 h later: the pair still charges (the
     * tick after the gap has no length). */
    f.ts_ms += 11 * HOUR_MS;
    feed(&f, 2, 16384, 7500, 1, 6);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 21);
    /* 12 h after the pair closed it charges no more. */
    f.ts_ms += HOUR_MS;
    feed(&f, 2, 16384, 7500, 1, 6);
    g_assert_cmpfloat(totals(&f)->measured_s, ==, 21);
    g_assert_cmpfloat(totals(&f)->known_s, ==, 71);
    policy_gain_free(f.g);
}

/* Polling off at 4 % of a core, on at 10 %: each tick on is charged 6 %,
 * never more than its own CPU; ticks off are measured at zero. */
static void
test_polling(void)
{
    Feed f = { policy_gain_new(), T0_MS };
    PolicyGainFigures fig;

    feed(&f, 10, 0, 5000, 1, 4);
    feed(&f, 10, 32768, 5000, 1, 10);
    /* The on run has closed no pair yet: no figure. */
    g_assert_cmpfloat(totals(&f)->polling_cpu_s, ==, 0);
    g_assert_cmpfloat(totals(&f)->polling_measured_s, ==, 9);
    feed(&f, 10, 0, 5000, 1, 4);
    g_assert_cmpuint(policy_gain_pairs_onoff(f.g), ==, 1);
    feed(&f, 10, 32768, 5000, 1, 10);
    g_assert_cmpfloat_with_epsilon(totals(&f)->polling_cpu_s, 10 * 0.06, 1e-9);
    feed(&f, 1, 32768, 5000, 1, 3);
    g_assert_cmpfloat_with_epsilon(totals(&f)->polling_cpu_s, 10 * 0.06 + 0.03, 1e-9);
    g_assert_cmpfloat(totals(&f)->polling_measured_s, ==, 9 + 10 + 10 + 1);
    policy_gain_figures(totals(&f), &fig);
    g_assert_cmpfloat_with_epsilon(fig.polling_cores, 0.63 / 40, 1e-9);
    /* While on: the 11 ticks charged, 5.7 % of a core on average. */
    g_assert_cmpfloat(totals(&f)->polling_on_s, ==, 11);
    g_assert_cmpfloat_with_epsilon(fig.polling_on_pct, 63.0 / 11, 1e-9);
    /* Polling on here is QEMU's default: the second run off is charged
     * what the first pair measured against it, 6 % of a core saved a
     * tick for the same IOPS. */
    g_assert_cmpfloat_with_epsilon(fig.saved_cores, 0.6 / 40, 1e-12);
    g_assert_cmpfloat_with_epsilon(fig.gained_iops, 0, 1e-9);
    g_assert_cmpfloat_with_epsilon(fig.default_share, 21.0 / 40, 1e-12);
    g_assert_cmpfloat_with_epsilon(fig.measured_share, 10.0 / 40, 1e-12);
    policy_gain_free(f.g);
}

/* Whatever the ticks, no total ever falls: they go out as counters. */
static void
test_monotone(void)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(7);
    static const gint64 settings[] = { -1, 0, 16384, 32768, 50000 };
    Feed f = { policy_gain_new(), T0_MS };
    PolicyGainTotals prev = { 0 };
    gint64 max_ns = 32768;

    for (guint i = 0; i < 20000; i++) {
        double iops = g_rand_double(rand) < 0.1 ? NAN : exp(g_rand_double_range(rand, 0, 11));
        double cpu = g_rand_double(rand) < 0.05 ? NAN : g_rand_double_range(rand, 0, 100);

        if (g_rand_double(rand) < 0.05)
            max_ns = settings[g_rand_int_range(rand, 0, G_N_ELEMENTS(settings))];
        /* Now and then a gap, or a tick that repeats a time. */
        f.ts_ms += g_rand_double(rand) < 0.01 ? 60000 : g_rand_double(rand) < 0.01 ? 0 : 1000;
        policy_gain_tick(f.g, &(PolicyGainTick){ f.ts_ms, iops,
                                                 g_rand_double_range(rand, 10, 2000), cpu,
                                                 max_ns });
        for (int c = 0; c < POLICY_GAIN_MAX; c++) {
            double now = policy_gain_totals_get(totals(&f), c);

            g_assert_false(isnan(now));
            g_assert_cmpfloat(now, >=, policy_gain_totals_get(&prev, c));
        }
        prev = *totals(&f);
    }
    g_assert_cmpfloat(prev.measured_s + prev.default_s, <=, prev.known_s + 1e-6);
    g_assert_cmpfloat(prev.polling_measured_s, <=, prev.known_s + 1e-6);
    g_assert_cmpfloat(prev.polling_cpu_s, >, 0);
    policy_gain_free(f.g);
}

/* The figures of totals, as both reports give them; none without time. */
static void
test_figures(void)
{
    PolicyGainTotals t = { .known_s = 100, .default_s = 50, .measured_s = 25,
                           .ops_gained = 30000, .ops_lost = 10000, .cpu_saved_s = 2,
                           .cpu_spent_s = 1, .polling_cpu_s = 5, .polling_measured_s = 100,
                           .polling_on_s = 50 };
    PolicyGainFigures f;

    policy_gain_figures(&t, &f);
    g_assert_cmpfloat_with_epsilon(f.gained_iops, 200, 1e-9);
    g_assert_cmpfloat_with_epsilon(f.saved_cores, 0.01, 1e-12);
    g_assert_cmpfloat_with_epsilon(f.polling_cores, 0.05, 1e-12);
    g_assert_cmpfloat_with_epsilon(f.polling_on_pct, 10, 1e-12);
    g_assert_cmpfloat_with_epsilon(f.unmeasured_share, 0.25, 1e-12);
    t = (PolicyGainTotals){ .known_s = 10 };
    policy_gain_figures(&t, &f);
    g_assert_true(isnan(f.saved_cores) && isnan(f.gained_iops) && isnan(f.polling_cores));
    g_assert_cmpfloat(f.unmeasured_share, ==, 1);
    t = (PolicyGainTotals){ 0 };
    policy_gain_figures(&t, &f);
    g_assert_true(isnan(f.default_share));
    for (int c = 0; c < POLICY_GAIN_MAX; c++) {
        const PolicyGainCounterDef *d = policy_gain_counter_def(c);

        g_assert_true(g_str_has_prefix(d->family, "polltune_iothread_"));
        g_assert_false(g_str_has_suffix(d->family, "_total"));
        g_assert_nonnull(d->help);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/policy/gain/causal", test_causal);
    g_test_add_func("/policy/gain/polling", test_polling);
    g_test_add_func("/policy/gain/monotone", test_monotone);
    g_test_add_func("/policy/gain/figures", test_figures);
    return g_test_run();
}
