/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault-common: what every fault-injection case shares.
 *
 * A case starts one healthy QEMU (2 iothreads, its daemon monitor in the
 * case's glob directory) next to whatever misbehaves, runs polltuned at a
 * 1 s tick, and asserts the same four things throughout: the daemon is
 * alive, its tick count advances, the healthy target is sampled every tick
 * (its newest metrics timestamp moves on each second), and at the end a
 * clean stop exits 0 (under ASan or a PT_DAEMON_WRAPPER such as valgrind,
 * a leak or memory error makes that exit status non-zero) and the database
 * passes PRAGMA integrity_check.
 */
#pragma once

#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "qmp-json.h"

typedef struct {
    char *dir;              /* glob directory: *.qmp */
    PtTestQemu *healthy;
    char *healthy_sock;
    PtTestDaemon *d;
    const char *db;         /* set when the config moves the database */
} FaultCase;

/* NULL after g_test_skip() when QEMU is missing. */
FaultCase *fault_case_new(void);
/* Start QEMU with its daemon monitor at DIR/@name.qmp. */
PtTestQemu *fault_qemu_start(FaultCase *fc, const char *name);
/* Start polltuned on the glob, with @extra appended to [daemon] (its keys
 * replace the defaults of the same name). */
void fault_daemon_start(FaultCase *fc, const char *extra);
/* polltuned on @conf with its descriptor limit (soft and hard) at @nofile,
 * set by prlimit(1), which execs in place: the pid stays the daemon's.
 * NULL, with the test skipped, when prlimit is missing. */
PtTestDaemon *fault_daemon_start_nofile(const char *conf, guint nofile);
/* Wait until @name is attached with @n_iothreads iothreads. */
gboolean fault_wait_attached(FaultCase *fc, const char *name, guint n_iothreads,
                             guint timeout_ms);
/* For @seconds: the daemon lives, ticks advance and "healthy" gets a fresh
 * sample at least every 2.5 s (a 1 s tick with scheduling slack). */
void fault_assert_healthy_for(FaultCase *fc, guint seconds);
/* The same, handing every status reply (4 a second) to @fn as well. */
typedef void (*FaultStatusFunc)(json_object *status, gpointer data);
void fault_assert_healthy_watch(FaultCase *fc, guint seconds, FaultStatusFunc fn,
                                gpointer data);
/* Clean stop exits 0; the database passes integrity_check. */
void fault_case_finish(FaultCase *fc);
void fault_case_free(FaultCase *fc);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FaultCase, fault_case_free)

/* The target's state in status, or NULL if the daemon does not list it;
 * @n_iothreads (optional) gets how many iothreads it lists, or -1. */
char *fault_target_state(FaultCase *fc, const char *name, gint *n_iothreads);
void fault_assert_db_intact(const char *db_path);
