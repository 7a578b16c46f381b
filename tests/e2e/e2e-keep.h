/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e-keep: what a failed end-to-end run had, kept for whoever must explain
 * it.
 *
 * A guest whose I/O stalls once in a while, and never when watched, is
 * explained only by what the run that stalled left behind.  A test names
 * the files that tell its story as it makes them (the daemon's log and
 * database, which holds every decision; QEMU's stderr and its qom-set
 * trace when one is asked for; the guest's serial console), and when the
 * test fails they are copied to
 *
 *     $PT_BUILD_ROOT/meson-logs/e2e-failed-TEST-PID/
 *
 * with what.txt listing them, beside meson's own testlog.txt.  A failed
 * assertion aborts the process: then the copy is made from the abort
 * handler, after the daemon and QEMU were killed (so their files are
 * whole), with nothing but open, read, write and mkdir, which a signal
 * handler may call.  A test that only marked itself failed keeps them at
 * e2e_keep_end().  PT_E2E_KEEP_DIR names another folder than meson-logs.
 */
#pragma once

#include <glib.h>

/* A new run called @test (e.g. "qmp-direct"): nothing named yet. */
void e2e_keep_begin(const char *test);
/* Keep @path, when the run fails, as @as in the run's folder. */
void e2e_keep_file(const char *path, const char *as);
/* The run ended without aborting: keep its files if it failed. */
void e2e_keep_end(void);
/* The folder a failure of this run fills (for messages and tests). */
const char *e2e_keep_dir(void);
/* From the abort handler only: copy the files (async-signal-safe). */
void e2e_keep_on_abort(void);
