/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-tick: the tick's own state (PtTick, its fields in pt-tick-private.h,
 * seen by the tick's files only), and what the rest of the daemon may ask
 * of it: the clock read at the start of the last tick and the host's
 * metrics then.  The tick that fills it runs in pt-daemon-tick.c.
 */
#pragma once

#include "probe-sampler.h"
#include "policy.h"

typedef struct PtDaemon PtDaemon;
typedef struct PtTick PtTick;

/* The host is sampled under @roots. */
PtTick *pt_tick_new(const ProbeRoots *roots);
/* Nothing of @tick runs by the clock again: no tick, no deadline. */
void pt_tick_halt(PtTick *tick);
void pt_tick_free(PtTick *tick);

/* The wall clock (ms) read at the start of the last tick; 0 before it. */
gint64 pt_daemon_tick_now_ms(PtDaemon *d);
/* The host's metrics derived by the last tick. */
const PolicyHost *pt_daemon_get_host(PtDaemon *d);
