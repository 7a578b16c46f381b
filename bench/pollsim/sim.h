/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pollsim: a discrete-event simulator of QEMU 7.2 iothreads polling.
 *
 * A host has n_cores shared by processor sharing among its runnable threads
 * (vCPUs and iothreads).  Each VM has one vCPU, one iothread and one to
 * SIM_MAX_DEVICES disks (SimWorkload.n_devices) that the iothread serves.
 * The iothread runs QEMU 7.2's aio_poll loop with its adaptive poll window
 * (sim-vm.c has the exact rules); the guest submits requests, kicks when
 * notifications are enabled (a VM exit), takes interrupts and resubmits;
 * the device completes after a sampled service time.  Polling can lose:
 * a poll iteration checks every handler of the iothread (idle ones
 * included), and a device with a per-command overhead fed by a batching
 * guest pays it per request when a polling iothread splits the batches.
 *
 * The simulator exposes only what production samplers read (one tick's
 * delta, PolicyDelta, and the host's counters of policy-counters.h) plus ground truth used for
 * scoring (guest-side latency, polling CPU, vCPU compute).  Deterministic:
 * all randomness comes from one seeded PRNG per simulation.
 *
 * docs/SIMULATOR.md describes the model and the calibrated parameters.
 */
#pragma once

#include <glib.h>

#include "policy-counters.h"

/* Disks on one iothread, at most: the matrix's cells have up to three. */
#define SIM_MAX_DEVICES 4

/* Device service-time distribution. */
typedef enum {
    SIM_DIST_NORMAL,            /* a = mean, b = standard deviation, >= a/4 */
    SIM_DIST_UNIFORM,           /* in [a, b] */
} SimDistKind;

typedef struct {
    SimDistKind kind;
    double a, b;                /* ns */
} SimDist;

/*
 * Costs of the machinery, in ns.  One set is fitted to seed 004 (Fam
 * Zheng's virtio-blk on NVMe table) and used for every scenario.
 */
typedef struct {
    double wake_lat;            /* eventfd signal -> blocked iothread runs again */
    double wake_cpu;            /* CPU the iothread burns returning from ppoll */
    double kick_lat;            /* guest notify write -> ioeventfd signalled */
    double exit_cpu;            /* vCPU time lost per notification exit */
    double irq_lat;             /* irqfd injection -> guest handler starts */
    double irq_cpu;             /* iothread CPU to inject one interrupt */
    double sub_fixed, sub_per;  /* iothread: one virtqueue pass + io_submit; per request */
    double cpl_fixed, cpl_per;  /* iothread: one completion pass + irq; per request */
    double g_irq;               /* guest: interrupt entry/exit */
    double g_cpl;               /* guest: per completion reaped (driver + fio) */
    double g_sub;               /* guest: per request submitted */
    /*
     * iothread: one check of one poll handler (a virtqueue's avail index,
     * the AIO completion ring).  A poll iteration checks every handler of
     * the iothread, so it lasts (handlers x this): with thousands of
     * handlers one iteration is longer than a completion gap.
     */
    double poll_handler_ns;
} SimCosts;

/* What the guest does. */
typedef struct {
    guint qd;                   /* closed loop depth; 0 = open loop */
    double open_iops;           /* open loop Poisson arrival rate */
    double think_ns;            /* guest CPU per completion before resubmitting */
    gboolean compute;           /* a CPU-bound app fills the vCPU's idle time */
    SimDist service;            /* device latency of one request */
    double dev_occupancy;       /* ns the device's single pipeline stage is busy per request */
    /*
     * ns the device's pipeline stage is busy once per submission call (one
     * io_submit/io_uring_enter: doorbell, command fetch, a network round
     * of a SAN), whatever the number of requests in it.  0 for the
     * calibrated NVMe device; > 0 for a device that rewards batching, where
     * a polling iothread submitting requests one by one as they arrive
     * loses throughput at depth.
     */
    double dev_batch_ns;
    /*
     * Poll handlers on the same iothread beside this disk's two (the
     * virtqueues of other devices, mostly idle): each poll iteration
     * checks them all (SimCosts.poll_handler_ns each).
     */
    guint idle_handlers;
    /*
     * The guest submits in batches of this many requests (fio's
     * iodepth_batch_submit with iodepth_batch_complete_min, io_uring
     * applications): it waits for as many free slots, then adds the
     * requests with one notify check after the last (blk-mq's bd->last).
     * A notified iothread then finds the whole batch; a polling one takes
     * its requests as they appear.  0 or 1: each request is its own
     * submission with its own check (fio's default, seed 004's job).
     */
    guint guest_batch;
    /*
     * 2 .. SIM_MAX_DEVICES: that many disks on the VM's one iothread, disk
     * d at depth dev_qd[d] (0: open loop at open_iops), each with its own
     * virtqueue, interrupt, device and requests, and everything else as
     * above.  0 or 1: one disk at depth qd.
     */
    guint n_devices;
    guint dev_qd[SIM_MAX_DEVICES];
} SimWorkload;

typedef struct _Sim Sim;

Sim *sim_new(guint n_cores, const SimCosts *costs, guint64 seed);
void sim_free(Sim *sim);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(Sim, sim_free)

/*
 * Model the v4 polling series (2016) that seed 004 measured instead of
 * QEMU 7.2: a successful poll's handler time counts in block_ns.
 */
void sim_set_qemu_v4(Sim *sim, gboolean v4);

/*
 * QEMU before 5.0 (commit 3aa221b382c9, "aio-posix: completely stop
 * polling when disabled") ran one poll iteration before every blocking
 * wait even with the window at 0.  The second calibration measured it.
 */
void sim_set_qemu_poll_once(Sim *sim, gboolean poll_once);

/*
 * The polling mechanism of the QEMU being modelled.  7.2: one adaptive
 * window per iothread.  10 (10.0 and later, "aio-posix: Separate
 * AioPolledEvent per AioHandler"): one window per handler (here the
 * virtqueue and the Linux AIO completion ring); the busy-poll length is the
 * maximum over handlers, grow/shrink apply only to the handlers that fired
 * in the iteration, and a parameter write resets them all.
 */
typedef enum {
    SIM_QEMU_7_2,
    SIM_QEMU_10,
} SimQemuModel;

void sim_set_qemu_model(Sim *sim, SimQemuModel model);
SimQemuModel sim_qemu_model(const Sim *sim);
/* "7.2" / "10"; FALSE for anything else. */
gboolean sim_qemu_model_parse(const char *s, SimQemuModel *out);
const char *sim_qemu_model_to_string(SimQemuModel model);

/* Returns the VM index. */
guint sim_add_vm(Sim *sim, const SimWorkload *w, const PolicyTriple *triple);
guint sim_n_vms(const Sim *sim);
/* Change the workload; requests in flight finish normally. */
void sim_vm_set_workload(Sim *sim, guint vm, const SimWorkload *w);
/* A qom-set of the triple: like QEMU, it resets the learned window to 0. */
void sim_vm_set_triple(Sim *sim, guint vm, const PolicyTriple *triple);
PolicyTriple sim_vm_triple(const Sim *sim, guint vm);
/* The workload set last (the VM's, every disk at the VM's depth). */
const SimWorkload *sim_vm_workload(const Sim *sim, guint vm);

/* Run until simulated time @t_ns. */
void sim_run_until(Sim *sim, double t_ns);
double sim_now(const Sim *sim);

/* What production would sample: the VM's delta since the previous call
 * (since the VM was added, on the first), as the daemon's probe derives
 * one per tick. */
void sim_vm_delta(Sim *sim, guint vm, PolicyDelta *out);
void sim_host_counters(Sim *sim, PolicyHostCounters *out);

/* Ground truth for scoring: cumulative since start. */
typedef struct {
    guint64 guest_ops;          /* completions seen by the guest */
    guint64 dev_guest_ops[SIM_MAX_DEVICES];     /* of those, per disk */
    double guest_lat_sum_ns;
    double poll_cpu_ns;         /* iothread CPU spent polling */
    double iot_cpu_ns;
    double vcpu_compute_ns;     /* CPU the guest's app got */
    guint64 exits;
    guint64 submit_calls;       /* io_submit calls: virtqueue passes that found requests */
    guint64 lat_hist[2048];     /* guest latency, 1 us buckets, last = overflow */
} SimTruth;

const SimTruth *sim_vm_truth(const Sim *sim, guint vm);
/* p-quantile (0..1) of the latency between two snapshots of lat_hist, in ns. */
double sim_hist_quantile(const guint64 *now, const guint64 *before, double q);

/* The calibrated machinery costs (docs/SIMULATOR.md). */
const SimCosts *sim_costs_calibrated(void);
