/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-fixture: a test's daemon in one line.
 *
 * The tests of one file share most of a configuration (the tick, where
 * their QEMUs' sockets are, the [policy] lines) and differ in a line or
 * two.  The shared text is the file's base; a daemon's own lines are
 * merged into it group by group: a key a test sets replaces the base's in
 * the same group (polltuned refuses a key set twice), a new key joins its
 * group, a new group is added.  Lines before any [group] are [daemon]'s.
 *
 *   g_autoptr(PtTestDaemon) d = pt_test_daemon_up(base, "mode = recommend\n");
 *
 * writes the file, starts polltuned and returns once it answers status;
 * the test fails with the daemon's log when it has not within
 * PT_TEST_START_S.  A daemon still running at teardown (g_autoptr) is
 * sent SIGTERM, waited for, and killed if it has not exited in time; it
 * dies with the test on any other exit (pt-test-child.h).
 */
#pragma once

#include "pt-test-daemon.h"

/* The base most daemon tests share: ticks 200 ms apart, no metrics
 * listener, no libvirt, no dwell between two writes. */
#define PT_TEST_CONF_BASE "interval = 200ms\nmetrics-listen =\n" \
                          "[targets]\nlibvirt = false\n[policy]\nmin-dwell = 0\n"

/* @own's lines merged into @base (NULL: none), as above. */
char *pt_test_conf_merge(const char *base, const char *own);

/* Start polltuned on pt_test_conf_merge(@base, @fmt...) and wait until it
 * answers status; the test fails when it does not. */
PtTestDaemon *pt_test_daemon_up(const char *base, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
/* The same with @args (NULL-terminated) on its command line, and @own
 * taken as it is. */
PtTestDaemon *pt_test_daemon_up_args(const char *const *args, const char *base,
                                     const char *own);
/* Write @d's file anew as pt_test_daemon_up() writes it, for a reload or
 * the next start (its database and control socket stay). */
void pt_test_daemon_reconf(PtTestDaemon *d, const char *base, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* Start @d again after a stop or a kill, and wait until it answers
 * status; the test fails when it does not. */
void pt_test_daemon_up_again(PtTestDaemon *d);

/*
 * One control request and what it must get: with @expect "ok", a reply
 * whose "return" has @needle (a pt_json_path()) when it is set; else an
 * error of class @expect whose description holds @needle.  A test of a
 * command's arguments is a table of these run by pt_test_daemon_calls().
 */
typedef struct {
    const char *command;
    const char *args;       /* JSON text; NULL: {} */
    const char *expect;     /* "ok", or the error's class */
    const char *needle;
} PtTestCall;

/* Each of @calls in turn; the test fails, naming the row and the reply,
 * at the first that does not get what it must. */
void pt_test_daemon_calls(PtTestDaemon *d, const PtTestCall *calls, gsize n_calls);
