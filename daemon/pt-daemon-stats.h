/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-stats: the daemon's counters, which the tick and the writes it
 * starts keep, and the control and metrics read (pt_daemon_get_stats()).
 */
#pragma once

#include <glib.h>

/* Upper bounds (seconds) of the tick duration histogram's buckets; a last,
 * implicit bucket holds everything longer (pt-tick.c). */
#define PT_TICK_BUCKETS 14
extern const double pt_tick_bucket_le[PT_TICK_BUCKETS];

typedef struct {
    guint64 ticks;
    guint64 overruns;           /* ticks that took longer than the interval */
    guint64 late_targets;       /* target samples that missed a deadline */
    guint64 store_errors;
    guint64 decisions_applied, decisions_failed, decisions_recommended;
    double last_tick_ms;
    double tick_ms_p50, tick_ms_p99;
    /* Where tick time goes: waiting for the targets' answers (from the
     * tick's start to the last answer or the deadline), and the daemon's
     * own work after that (derive, store, policy, maintenance). */
    double last_wait_ms, last_work_ms;
    double wait_s_total, work_s_total;
    /* Tick durations, not cumulative: bucket i counts ticks in
     * (le[i-1], le[i]], the last one those longer than every bound. */
    guint64 tick_hist[PT_TICK_BUCKETS + 1];
    double tick_s_sum;
    gint64 started_ms;
} PtDaemonStats;
