/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e-scenario: one run of the whole product against a real guest.
 *
 * The same scenario runs for a QEMU started directly (the test reads the
 * iothreads back on its own QMP monitor) and for a libvirt domain (read
 * back with virsh).  The VM kind supplies how to read an iothread's
 * poll-max-ns independently of the daemon; the scenario does the rest:
 * discovery, a static policy applied, overrides from polltunectl for a
 * polling-off and a polling-on phase, per-phase IOPS against the guest's
 * own figures, restore on stop, recovery after kill -9, and the export.
 */
#pragma once

#include "e2e-guest.h"

/* The schedule every scenario runs; the indices below refer to it. */
#define E2E_PHASES "idle:5,qd1:15,qd16:15,qd1:12,qd1:12,idle:4"
#define E2E_PHASE_IDLE 0
#define E2E_PHASE_QD1 1
#define E2E_PHASE_QD16 2
#define E2E_PHASE_POLL_OFF 3
#define E2E_PHASE_POLL_ON 4
#define E2E_PHASE_END 5
#define E2E_N_PHASES 6

/* The poll-max-ns values involved: a direct QEMU starts at ORIGINAL (a
 * libvirt domain at QEMU's default), the policy sets POLICY. */
#define E2E_ORIGINAL_NS 16384
#define E2E_POLICY_NS 50000
#define E2E_POLL_ON_NS 1000000

typedef struct E2eVm E2eVm;
struct E2eVm {
    const char *target;         /* the daemon's name for it */
    /* Its identity, as the history's rows name it (a QMP target's socket
     * path); NULL: @target. */
    const char *identity;
    const char *busy;           /* daemon's id of the disk's iothread */
    const char *idle;           /* daemon's id of the other one */
    const char *readback;       /* who reads the values back, for messages */
    guint64 original_ns;        /* poll-max-ns the VM started with */
    /* poll-max-ns of @iothread (daemon id) as the VM itself reports it. */
    guint64 (*poll_max)(E2eVm *vm, const char *iothread);
    /* Run @command on the VM's QEMU (NULL where there is no monitor to
     * spare); a new reference to its "return", or NULL with @error.  Used
     * only to describe a failure (e2e-stall.h). */
    json_object *(*monitor)(E2eVm *vm, const char *command, const char *args_json,
                            GError **error);
    const char *disk_qom;       /* QOM path of the disk's virtio backend */
    GuestSerial *serial;
    gpointer data;
};

/* Figures a run measured, for the test log and the documentation. */
typedef struct {
    double guest_iops[E2E_N_PHASES];    /* PT-PHASE: ops / duration */
    double window_iops[E2E_N_PHASES];   /* PT-TICK counts over the ticks used */
    double daemon_iops[E2E_N_PHASES];   /* the daemon's mean over those ticks */
    double blocks_per_op[E2E_N_PHASES];
    double cpu_pct[E2E_N_PHASES];
} E2eFigures;

/*
 * Run everything once the VM is up and the daemon shows it attached.
 * Asserts all along.
 */
void e2e_scenario_run(E2eVm *vm, PtTestDaemon *d, E2eFigures *fig);

/* A daemon configuration body for pt_test_daemon_start(): 1 s interval,
 * the static policy, and @targets as the [targets] group's lines. */
char *e2e_daemon_conf(const char *targets);

/* Wait up to @ms for the daemon to list @target attached; returns the
 * time it took in ms, or -1. */
gint64 e2e_wait_discovered(PtTestDaemon *d, const char *target, guint ms);
/* The same, and with its two iothreads, which the daemon lists once it
 * has sampled the target: one tick after attaching. */
gint64 e2e_wait_attached(PtTestDaemon *d, const char *target, guint ms);
