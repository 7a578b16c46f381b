/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-stop: SIGTERM and SIGINT, seen even while the main loop is busy.
 *
 * GLib's g_unix_signal_add() tells the loop only when the loop next runs,
 * and keeps to itself that a signal came.  Code that makes the main thread
 * wait (a reload reading its file) must see a stop request at once, so
 * the handler here both counts the signal, which pt_stop_requested()
 * reads from any thread, and wakes the loop through a pipe, where the
 * callback runs once per signal as g_unix_signal_add()'s would.
 */
#pragma once

#include <glib.h>

/* Install the handlers and call @on_stop(@data) on the default main
 * context for every SIGTERM or SIGINT.  FALSE, with @error, when the pipe
 * cannot be made. */
gboolean pt_stop_watch(GSourceFunc on_stop, gpointer data, GError **error);
/* Whether a SIGTERM or SIGINT has come since pt_stop_watch(). */
gboolean pt_stop_requested(void);
