/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Student's t for the adaptive policy's evidence, against the closed forms
 * at one and two degrees of freedom, published table values, the normal
 * limit, and its own distribution function.
 */
#include <math.h>

#include "policy-private.h"

/* The standard normal distribution function: the level of a bar of z. */
static double
phi(double z)
{
    return 0.5 * erfc(-z / M_SQRT2);
}

static void
test_closed_forms(void)
{
    static const double ps[] = { 0.6, 0.8413447, 0.9, 0.975, 0.9772499, 0.999 };

    for (guint i = 0; i < G_N_ELEMENTS(ps); i++) {
        double p = ps[i], q = 2 * p - 1;
        /* Cauchy: F(t) = 1/2 + atan(t) / pi. */
        double t1 = tan(M_PI * (p - 0.5));
        /* Two degrees: F(t) = 1/2 + t / (2 sqrt(t^2 + 2)). */
        double t2 = q * sqrt(2.0 / (1.0 - q * q));

        g_assert_cmpfloat_with_epsilon(policy_t_quantile(p, 1), t1, 1e-6 * t1);
        g_assert_cmpfloat_with_epsilon(policy_t_quantile(p, 2), t2, 1e-6 * t2);
        g_assert_cmpfloat_with_epsilon(policy_t_quantile(1 - p, 2), -t2, 1e-6 * t2);
        g_assert_cmpfloat_with_epsilon(policy_t_cdf(t1, 1), p, 1e-9);
        g_assert_cmpfloat_with_epsilon(policy_t_cdf(-t2, 2), 1 - p, 1e-9);
    }
}

/* Two-sided 95% critical values from any statistics table. */
static void
test_table(void)
{
    static const struct {
        double df, t;
    } rows[] = { { 3, 3.182 }, { 5, 2.571 }, { 10, 2.228 }, { 30, 2.042 }, { 120, 1.980 } };

    for (guint i = 0; i < G_N_ELEMENTS(rows); i++)
        g_assert_cmpfloat_with_epsilon(policy_t_quantile(0.975, rows[i].df), rows[i].t, 6e-4);
}

static void
test_limits(void)
{
    double last = G_MAXDOUBLE;

    g_assert_cmpfloat(policy_t_quantile(0.5, 3), ==, 0);
    /* Toward the normal from above, monotonically, fractional df included. */
    for (double df = 0.5; df < 2e6; df *= 1.7) {
        double t = policy_t_quantile(phi(2), df);

        g_assert_cmpfloat(t, <, last);
        g_assert_cmpfloat(t, >, 2.0);
        last = t;
    }
    g_assert_cmpfloat_with_epsilon(last, 2.0, 1e-4);
    /* The case that matters: one degree of freedom is 14, not 7.6. */
    g_assert_cmpfloat(policy_t_quantile(phi(2), 1), >, 13.9);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/policy/stats/t-closed-forms", test_closed_forms);
    g_test_add_func("/policy/stats/t-table", test_table);
    g_test_add_func("/policy/stats/t-limits", test_limits);
    return g_test_run();
}
