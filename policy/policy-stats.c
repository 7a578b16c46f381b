/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-stats: Student's t quantile for the adaptive policy's evidence.
 *
 * The policy compares means of a handful of ticks whose noise it has
 * measured on a few degrees of freedom, often one or two, and fractional
 * once old explorations are decayed.  A series expansion of the quantile
 * (Cornish-Fisher) is 46% low at one degree of freedom for a 97.7% bound
 * (7.6 against 14.0) and 11% low at two, which is where a wrong switch
 * comes from: two ticks that happen to agree make +-50% noise look like
 * 4%.  So the quantile is computed from the distribution itself.
 *
 *   P(T <= t) = 1 - I_x(df/2, 1/2) / 2,  x = df / (df + t^2),  t >= 0
 *
 * with the regularized incomplete beta function I_x(a, b) from its
 * continued fraction (both in Abramowitz and Stegun, chapter 26),
 * evaluated by the modified Lentz method, and the quantile found by
 * bisection.
 */
#include <math.h>

#include "policy-private.h"

#define CF_EPS 1e-12
#define CF_TINY 1e-300
#define CF_MAX_TERMS 300

/* The continued fraction of I_x(a, b), valid for x < (a + 1) / (a + b + 2). */
static double
beta_cf(double a, double b, double x)
{
    double f = CF_TINY, c = f, d = 0;

    for (int j = 1; j <= CF_MAX_TERMS; j++) {
        double num, delta;

        if (j == 1) {
            num = 1.0;
        } else {
            int k = j - 1, m = k / 2;

            if (k % 2)
                num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
            else
                num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
        }
        d = 1.0 + num * d;
        d = fabs(d) < CF_TINY ? CF_TINY : d;
        c = 1.0 + num / c;
        c = fabs(c) < CF_TINY ? CF_TINY : c;
        d = 1.0 / d;
        delta = c * d;
        f *= delta;
        if (fabs(delta - 1.0) < CF_EPS)
            break;
    }
    return f;
}

/*
 * ln Gamma(x), x > 0.  lgamma() writes the global signgam, a data race
 * when the simulator runs cells on several threads; lgamma_r() (glibc,
 * the BSDs, musl) does not.
 */
static double
log_gamma(double x)
{
    int sign;

    return lgamma_r(x, &sign);
}

/* The regularized incomplete beta function I_x(a, b), a, b > 0. */
static double
beta_inc(double a, double b, double x)
{
    double front;

    if (x <= 0)
        return 0;
    if (x >= 1)
        return 1;
    front = exp(a * log(x) + b * log1p(-x) - (log_gamma(a) + log_gamma(b) - log_gamma(a + b)));
    if (x < (a + 1) / (a + b + 2))
        return front * beta_cf(a, b, x) / a;
    return 1.0 - front * beta_cf(b, a, 1.0 - x) / b;
}

double
policy_t_cdf(double t, double df)
{
    double tail = 0.5 * beta_inc(df / 2, 0.5, df / (df + t * t));

    return t >= 0 ? 1.0 - tail : tail;
}

double
policy_t_quantile(double p, double df)
{
    double lo = 0, hi = 1;

    if (p < 0.5)
        return -policy_t_quantile(1.0 - p, df);
    if (p == 0.5)
        return 0;
    /* At 0.1 degrees of freedom a 99.99% bound is about 1e40: stop there. */
    while (policy_t_cdf(hi, df) < p && hi < 1e40)
        hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-9 * hi; i++) {
        double mid = (lo + hi) / 2;

        if (policy_t_cdf(mid, df) < p)
            lo = mid;
        else
            hi = mid;
    }
    return (lo + hi) / 2;
}
