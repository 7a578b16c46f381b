/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-tick: the daemon's tick.
 *
 * One tick (every conf->interval_ms):
 *   1. read the clocks once; sample the host, and start a sample of every
 *      attached target at once (each asynchronous, none waits for another);
 *   2. when all have answered, or at the tick's deadline (80% of the
 *      interval) for those that have not, derive metrics per iothread;
 *   3. write the tick to the store in one transaction;
 *   4. run the policy over the fresh metrics and their history;
 *   5. apply its decisions through each target's own channel, asynchronously;
 *   6. record each decision with its outcome when the write completes.
 * A target that has not answered by the deadline is skipped this tick and
 * its late answer dropped; the QMP timeout then marks it lost.
 *
 * What a tick holds between its start and its end is its own (pt-tick.h);
 * the rest of the daemon asks for the tick's clock and the host's metrics.
 */
#pragma once

#include "pt-daemon-types.h"

/* Tick every @interval_ms from now on, in place of the timer before. */
void pt_daemon_tick_every(PtDaemon *d, guint interval_ms);
/* No tick starts again; one under way ends as it would have. */
void pt_daemon_tick_stop(PtDaemon *d);
