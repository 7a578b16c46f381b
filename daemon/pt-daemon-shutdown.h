/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-shutdown: a stop.
 */
#pragma once

#include "pt-daemon-types.h"

/*
 * Stop ticking; restore originals when restore-on-exit is set, waiting at
 * most @timeout_ms for the writes; then call @done.  After a kill -9 the
 * next start recovers instead (see on-restart).
 */
void pt_daemon_shutdown(PtDaemon *d, guint timeout_ms, GCallback done, gpointer user_data);
/* The time a stop gets now: sized from the writes it may have to make. */
guint pt_daemon_stop_timeout_ms(PtDaemon *d);
