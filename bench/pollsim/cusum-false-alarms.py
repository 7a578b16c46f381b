#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""How often noise alone trips the policy's change detector.

A model of workload_changed() in policy/policy-adaptive.c: a two-sided
CUSUM of ln IOPS against a settled reference of REF ticks, with uniform
per-tick noise of +-NOISE (the matrix's noise), and the per-tick standard
deviation estimated from DF ticks of the same noise, either pooled with the
1% prior worth 2 ticks (the evidence bar's figure), from the ticks alone
raised by one standard error (change_sd() before), or from their successive
differences raised by two standard errors at two thirds of the degrees of
freedom (change_sd() now, whose settled ticks are measured that way, so
that a step in the workload does not look like noise).  It prints, per
DF, the share
of 25-tick steady phases that raise a false alarm and the mean run length
to one (capped at MAXT ticks).

    python3 bench/pollsim/cusum-false-alarms.py [--runs N] [--seed S]
"""
import argparse
import math
import random

CUSUM_SDS = 5.0
TICK_SHARE = 0.6
PRIOR_SD, PRIOR_DF = 0.01, 2.0
STEP = math.log1p(0.25)          # change_ratio's default
NOISE, REF, PHASE, MAXT = 0.5, 15, 25, 3000


def tick(rng):
    return math.log(1 + NOISE * (2 * rng.random() - 1))


def run(rng, df, detector):
    xs = [tick(rng) for _ in range(df + 1)]
    m = sum(xs) / len(xs)
    ss = sum((x - m) ** 2 for x in xs)
    if detector == "pooled":
        sd = math.sqrt((ss + PRIOR_SD ** 2 * PRIOR_DF) / (df + PRIOR_DF))
    elif detector == "about the mean":
        sd = math.sqrt(ss / df) * (1 + 1 / math.sqrt(2 * df))
    else:
        ssd = sum((b - a) ** 2 for a, b in zip(xs, xs[1:])) / 2
        sd = math.sqrt(ssd / df) * (1 + 2 / math.sqrt(2 * df * 2 / 3))
    ref = sum(tick(rng) for _ in range(REF)) / REF
    h = max(STEP, CUSUM_SDS * sd)
    slack = max(STEP, sd) / 2 + sd / math.sqrt(REF)
    hi = lo = 0.0
    for t in range(1, MAXT + 1):
        x = min(max(tick(rng) - ref, -TICK_SHARE * h - slack), TICK_SHARE * h + slack)
        hi = max(0.0, hi + x - slack)
        lo = max(0.0, lo - x - slack)
        if hi > h or lo > h:
            return t
    return MAXT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    print("| ticks of noise measured (df) | detector | steady phases of %d ticks "
          "that alarm | mean run to an alarm (capped at %d) |" % (PHASE, MAXT))
    print("|---:|---|---:|---:|")
    for df in (6, 10, 20):
        for det in ("pooled", "about the mean", "successive"):
            runs = [run(rng, df, det) for _ in range(a.runs)]
            early = sum(r <= PHASE for r in runs) / len(runs)
            print("| %d | %s | %.1f%% | %.0f |" % (df, det, 100 * early, sum(runs) / len(runs)))


if __name__ == "__main__":
    main()
