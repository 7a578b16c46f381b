/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-tick: the daemon's tick (its steps are in pt-daemon.h).  What
 * a tick holds between its start and its end is its own; the rest of the
 * daemon asks for the tick's clock and the host's metrics.
 */
#pragma once

#include "pt-daemon.h"
#include "probe-sampler.h"

typedef struct PtTick PtTick;

/* The host is sampled under @roots. */
PtTick *pt_tick_new(const ProbeRoots *roots);
/* Nothing of @tick runs by the clock again: no tick, no deadline. */
void pt_tick_halt(PtTick *tick);
void pt_tick_free(PtTick *tick);

/* Tick every @interval_ms from now on, in place of the timer before. */
void pt_daemon_tick_every(PtDaemon *d, guint interval_ms);
/* No tick starts again; one under way ends as it would have. */
void pt_daemon_tick_stop(PtDaemon *d);
/* The wall clock (ms) read at the start of the last tick; 0 before it. */
gint64 pt_daemon_tick_now_ms(PtDaemon *d);
