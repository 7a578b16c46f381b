/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-live: polltunectl against the real polltuned attached to real QEMU,
 * for the tests.
 *
 * One QEMU (-machine none, iothreads iot0 and iot1, a null-co drive) named
 * vm-a has two monitors: polltuned finds one through its [targets]
 * qmp-globs, the test keeps the other and reads back with its own QMP
 * client what QEMU really has.  polltuned runs with a private
 * configuration (interval 200 ms, default policy static:70000/2/2).  Both
 * start with the first test that calls cli_live_setup() and are shared by
 * the tests of one program, which run in order.
 */
#pragma once

#include "cli-testdb.h"
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "qmp-commands.h"
#include "qmp-json.h"

typedef struct {
    char *vm_dir;               /* sockets matched by the daemon's glob */
    char *tmp_dir;              /* everything else */
    PtTestVm *vm;               /* vm-a */
    PtTestDaemon *d;
    char *qemu_skip;            /* why QEMU cannot run, or NULL */
    gint64 started_us;          /* when the shared daemon started */
} CliLive;

extern CliLive cli_live;

/* Waits for vm-a's @iothread to reach @want; fails the test otherwise. */
void cli_assert_poll(const char *iothread, guint64 want, guint ms);
/* Waits until the shared daemon has run @n more ticks: what a check that
 * something does not happen waits for, instead of a fixed time. */
void cli_wait_ticks_pass(guint n);

/* Starts QEMU and polltuned unless done; FALSE (test skipped) without QEMU. */
gboolean cli_live_setup(void);
gboolean cli_skip_without_qemu(void);
/* pt_test_daemon_up_args(NULL, @base, @own) (pt-test-fixture.h), without
 * G_DEBUG=fatal-warnings. */
PtTestDaemon *cli_daemon_up(const char *base, const char *own);
void cli_daemon_log_check(PtTestDaemon *d);

/* polltunectl -s SOCKET ARGS... against @d (NULL: the shared daemon). */
void cli_ctl(CliRun *r, PtTestDaemon *d, const char *const *args);
char *cli_ctl_ok(const char *const *args);
json_object *cli_ctl_json(const char *const *args);
void cli_ctl_fails(PtTestDaemon *d, int status, const char *needle, const char *const *args);
/* Runs a command that must succeed and returns its stdout. */
#define CTL_OK(...) cli_ctl_ok((const char *const[]){ __VA_ARGS__, NULL })

/* The same with --json, parsed. */
#define CTL_JSON(...) cli_ctl_json((const char *const[]){ __VA_ARGS__, "--json", NULL })

/* Runs a command that must fail with @status and say @needle on stderr. */
#define CTL_FAILS(status, needle, ...) \
    cli_ctl_fails(NULL, status, needle, (const char *const[]){ __VA_ARGS__, NULL })

/* Registers @test, to be followed by a check of the daemon's log. */
void cli_live_add(const char *path, void (*test)(void));
/* Runs the tests; removes @leftovers (file names in tmp_dir) afterwards. */
int cli_live_run(const char *const *leftovers);
