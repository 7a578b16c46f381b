/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-gain: what a setting gained against QEMU's default, charged tick
 * by tick from the measurements the history holds.
 *
 * The policy measures by changing poll-max-ns and holding it: a run of
 * ticks at one setting next to a run at another.  Two adjacent runs at
 * different settings are a pair; a pair measures when both runs are the
 * same workload (POLICY_GAIN_BAND).  A tick at a setting other than the
 * default is charged what the pairs of that setting against the default
 * measured on the tick's own workload; a tick with polling on is charged
 * the CPU that the off/on pairs of its workload measured polling to cost.
 *
 * Causal: a tick is charged only by pairs closed before it, within the
 * last POLICY_GAIN_PAIR_MAX_AGE_MS, never by a later one.  So the daemon
 * keeps the running totals of each iothread tick by tick and exports them
 * as counters (docs/METRICS.md), and the report replays the same ticks
 * from the store through the same code: for the same iothread and range
 * the fleet report's counter increases and the single host's replay give
 * the same figures (policy_gain_figures()).
 *
 * Pure: ticks in, totals out; time is the ticks' own.
 */
#pragma once

#include <glib.h>

#include "policy-metrics.h"

G_BEGIN_DECLS

/* A tick below this many ops/s is idle: two idle runs are alike, an idle
 * run and a loaded one never are. */
#define POLICY_GAIN_LOAD_MIN_IOPS 10.0

/*
 * Two loaded runs are the same workload when their IOPS and their queue
 * depths (IOPS x latency, Little's law) are each within this factor: wide
 * enough for what a setting itself does (polling off costs a busy
 * iothread 15 to 25 % of its IOPS at the same queue depth), narrow enough
 * to tell a workload's phases apart (a burst against the quiet before it).
 */
#define POLICY_GAIN_BAND 1.5

/* A pair charges the ticks of the 12 hours after it: long enough for the
 * policy's next exploration (every few minutes to hours) to measure
 * again, short enough that last week's workload does not speak for
 * today's. */
#define POLICY_GAIN_PAIR_MAX_AGE_MS (12 * 3600 * G_GINT64_CONSTANT(1000))

/* A run of ticks stops at a gap longer than this (the daemon was down or
 * the VM off): three ticks at the longest sensible interval of 10 s.  A
 * tick after such a gap is not charged: its length is unknown. */
#define POLICY_GAIN_MAX_GAP_MS 30000

/*
 * Pairs kept per iothread: an exploration of the adaptive policy writes
 * about ten probes and explores at most every 5 minutes (revalidate), so
 * 12 hours hold about 1500; twice that leaves room for an operator's own
 * writes.  The oldest goes first.
 */
#define POLICY_GAIN_MAX_PAIRS 3000

/* One tick of one iothread. */
typedef struct {
    gint64 ts_ms;                       /* end of the tick */
    double iops, lat_us, cpu_pct;       /* NAN when unknown; cpu 100 = one core */
    gint64 max_ns;                      /* poll-max-ns in force, -1 unknown */
} PolicyGainTick;

/* The tick of the row @v, @len_ns long and ending at @ts_ms, derived by
 * the metric table's rates as the store's readers derive a raw row's
 * (cli_point_from_row()). */
void policy_gain_tick_from_vec(const MetricVec *v, gint64 ts_ms, gint64 len_ns,
                               PolicyGainTick *out);

/* The running totals, each monotone (gains and losses apart). */
typedef struct {
    double known_s;             /* ticks whose poll-max-ns was known */
    double default_s;           /* of them at QEMU's default */
    double measured_s;          /* of them at another setting, charged by a pair */
    double ops_gained, ops_lost;        /* operations against the default */
    double cpu_saved_s, cpu_spent_s;    /* CPU seconds against the default */
    double polling_cpu_s;       /* CPU seconds spent polling */
    double polling_measured_s;  /* ticks with polling off, or on and charged */
    double polling_on_s;        /* ticks with polling on and charged */
} PolicyGainTotals;

/* The totals as exported: one counter each. */
typedef enum {
    POLICY_GAIN_KNOWN_S,
    POLICY_GAIN_DEFAULT_S,
    POLICY_GAIN_MEASURED_S,
    POLICY_GAIN_OPS_GAINED,
    POLICY_GAIN_OPS_LOST,
    POLICY_GAIN_CPU_SAVED_S,
    POLICY_GAIN_CPU_SPENT_S,
    POLICY_GAIN_POLLING_CPU_S,
    POLICY_GAIN_POLLING_MEASURED_S,
    POLICY_GAIN_POLLING_ON_S,
    POLICY_GAIN_MAX,
    POLICY_GAIN_INVALID = -1,
} PolicyGainCounter;

typedef struct {
    const char *family;         /* OpenMetrics family, without _total */
    const char *unit;           /* OpenMetrics UNIT, or NULL */
    const char *help;
} PolicyGainCounterDef;

const PolicyGainCounterDef *policy_gain_counter_def(PolicyGainCounter c);
double policy_gain_totals_get(const PolicyGainTotals *t, PolicyGainCounter c);
void policy_gain_totals_set(PolicyGainTotals *t, PolicyGainCounter c, double v);

/* What the totals over a range say, as the reports show it; NAN where
 * nothing was measured. */
typedef struct {
    double saved_cores;         /* mean over the range */
    double gained_iops;         /* mean over the range */
    double polling_cores;       /* mean over the range */
    double polling_on_pct;      /* while polling was on, % of one core */
    double default_share, measured_share, unmeasured_share;
} PolicyGainFigures;

void policy_gain_figures(const PolicyGainTotals *t, PolicyGainFigures *out);

/* Two runs (or a run and a tick) are the same workload: both idle, or
 * both loaded with IOPS and queue depth (where both are known) within
 * POLICY_GAIN_BAND. */
gboolean policy_gain_workload_alike(double iops_a, double qd_a, double iops_b, double qd_b);

typedef struct PolicyGain PolicyGain;

PolicyGain *policy_gain_new(void);
void policy_gain_free(PolicyGain *g);
/* A copy to go on from, @g unchanged. */
PolicyGain *policy_gain_copy(const PolicyGain *g);
/* Charges @t to the totals, then takes it into the runs: ticks come in
 * time order; one older than the last is ignored. */
void policy_gain_tick(PolicyGain *g, const PolicyGainTick *t);
const PolicyGainTotals *policy_gain_totals(const PolicyGain *g);
/* Pairs against the default and off/on pairs closed so far (all, also
 * those aged out). */
guint policy_gain_pairs_default(const PolicyGain *g);
guint policy_gain_pairs_onoff(const PolicyGain *g);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyGain, policy_gain_free)

G_END_DECLS
