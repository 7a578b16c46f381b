/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-child: what a test starts dies with the test.
 *
 * A test that aborts on a failed assertion, or is killed (SIGKILL by a
 * harness's timeout, or by hand), runs no cleanup of its own; a daemon or
 * QEMU it started would run on, orphaned, holding sockets, files and CPU.
 * Every process a test starts is therefore spawned with
 * pt_test_child_setup() as the child setup function and
 * PT_TEST_CHILD_DATA as its data: the kernel sends the child SIGKILL
 * when the test process goes (PR_SET_PDEATHSIG survives the exec, and a
 * wrapper such as prlimit or valgrind that execs in place keeps it).
 * The signal follows the thread that spawned the child, so spawn from a
 * thread that outlives it (the test's main thread), and without GLib's
 * intermediate process: g_spawn_sync(), or G_SPAWN_DO_NOT_REAP_CHILD.
 */
#pragma once

#include <glib.h>
#include <unistd.h>

/*
 * How long a daemon, QEMU or libvirtd of a test may take to start before
 * the test fails: a few seconds on a quiet machine, many times that at a
 * load average of 10 and more on 2 cores with sanitizers.
 */
#define PT_TEST_START_S 60

/* The test process, for pt_test_child_setup() to compare with. */
#define PT_TEST_CHILD_DATA GINT_TO_POINTER((int)getpid())

/* A GSpawnChildSetupFunc (it runs in the child, before the exec). */
void pt_test_child_setup(gpointer parent_pid);

/* Whether @pid has exited: gone, or a zombie that whoever adopted it has
 * not reaped yet (a detached daemon's parent is init). */
gboolean pt_test_process_gone(GPid pid);

/* For a test of what happens when a test is killed: a forked child that
 * stands for the test starts its processes, sends what names them
 * (@pids, then @dirs) to the parent through @fd and waits to be killed;
 * exits 3 when the parent cannot be told. */
/* Fork that child, with @report a pipe from it; the test fails when it
 * cannot.  Returns 0 in the child, as fork() does. */
pid_t pt_test_child_fork(int report[2]);
G_GNUC_NORETURN void pt_test_child_report(int fd, const void *pids, gsize pids_len,
                                          const void *dirs, gsize dirs_len);
/* The parent's side: reads them, closing @fd; the test fails when it
 * cannot. */
void pt_test_child_read_report(int fd, void *pids, gsize pids_len, void *dirs,
                               gsize dirs_len);

/*
 * The listen(2) of the bound unix socket @fd made by a child of its own,
 * which then only waits: a client's SO_PEERCRED names that child, so each
 * scripted peer of a test is a process of its own, as each QEMU is
 * (polltuned takes two sockets of one process for two paths to one QEMU
 * and refuses the second).  The child keeps none of the test's
 * descriptors, and dies with the test, and with pt_test_listener_free();
 * @fd stays the caller's, to accept on.
 */
typedef struct {
    GPid pid;
} PtTestListener;

PtTestListener *pt_test_listener_new(int fd, int backlog);
void pt_test_listener_free(PtTestListener *l);
