/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-mode: observe, recommend or enforce.
 */
#pragma once

#include "pt-daemon-types.h"

/* Control operations.  Each validates and fails with a message for operators. */
gboolean pt_daemon_set_mode(PtDaemon *d, PtMode mode, GError **error);
/* The same, from an operator at run time: the mode then holds across
 * reloads (the file's mode no longer replaces it) until the next stop. */
gboolean pt_daemon_set_runtime_mode(PtDaemon *d, PtMode mode, GError **error);
/* The mode set at run time, or PT_MODE_INVALID when the file's holds. */
PtMode pt_daemon_get_runtime_mode(PtDaemon *d);

/* Tell the policy configuration in force the mode d->mode. */
void pt_daemon_mode_to_policy(PtDaemon *d);
/* Write the mode set with polltunectl, if any, into a database file opened
 * anew.  FALSE when that failed (logged if @say). */
gboolean pt_daemon_mode_rewrite(PtDaemon *d, gboolean say);
