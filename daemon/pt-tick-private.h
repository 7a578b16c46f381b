/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-tick-private: what a tick holds between its start and its end, seen
 * by the tick's own files only (pt-tick.c, pt-daemon-tick.c).
 */
#pragma once

#include "probe-sampler.h"
#include "policy.h"
#include "policy-counters.h"

struct PtTick {
    guint timer;
    gboolean running;
    guint64 id;
    guint pending;              /* samples still out, +1 while they start */
    guint deadline;
    gint64 start_us;            /* the clocks, read once at the start */
    gint64 mono_ns;
    gint64 now_ms;
    ProbeHostSampler *host;
    ProbeHostSnap *host_now;    /* this tick's host sample */
    ProbeHostSnap *host_prev;
    PolicyHostDelta host_delta; /* host_prev -> host_now */
    PolicyHost host_metrics;
    GPtrArray *results;         /* PtTickResult *, the samples back in time */
    GArray *durations_ms;       /* recent tick durations */
};
