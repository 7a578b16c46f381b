/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-scenario: the scenario suite S1..S8, the closed loop that runs the
 * policy library against the simulator at a 1 s tick, the grid-search
 * oracle, and the goals of the suite.
 *
 * A run converts the simulator's deltas and host counters into
 * PolicyMetrics/PolicyHost with policy-counters.h, exactly as the daemon
 * does, and applies the
 * engine's decisions with sim_vm_set_triple() (a qom-set).
 */
#pragma once

#include <stdio.h>

#include "policy.h"
#include "sim.h"

#define SIM_MAX_PHASES 5
/* The target every simulated iothread belongs to, as the engine sees it;
 * its iothreads are "iothread0", "iothread1", ... */
#define SIM_TARGET "vm"
#define SIM_MAX_GROUPS 3

typedef struct {
    guint count;                        /* VMs in this group */
    SimWorkload phase[SIM_MAX_PHASES];  /* the group's workload in each phase */
} SimGroup;

typedef struct {
    const char *name;
    const char *what;
    guint n_cores;
    guint n_phases;
    double phase_s;                     /* seconds per phase */
    SimGroup groups[SIM_MAX_GROUPS];
    guint n_groups;
    double budget_cores;                /* 0: none */
    guint beneficiary_group;            /* S8: the group that should poll, else G_MAXUINT */
    SimQemuModel qemu_model;            /* the polling mechanism, 7.2 unless set */
} SimScenario;

/*
 * Device classes a scenario or the matrix can put behind a workload.  The
 * default, nvme, is seed 004's device: nothing else changes with it.
 */
typedef enum {
    SIM_DEVICE_NVME,            /* per-request pipeline, request-by-request guest */
    SIM_DEVICE_BATCHING,        /* per-command overhead, batching guest: polling loses at depth */
    SIM_DEVICE_MAX,
    SIM_DEVICE_INVALID = -1,
} SimDeviceClass;

const char *sim_device_class_to_string(SimDeviceClass c);
/* SIM_DEVICE_INVALID for anything but "nvme" and "batching". */
SimDeviceClass sim_device_class_from_string(const char *s);
/*
 * Put a device of class @c behind @w: its occupancy, per-command overhead
 * and the guest's submission batching.  The service time (the device's
 * latency) is kept, so the class is a dimension of its own.
 */
void sim_workload_set_device_class(SimWorkload *w, SimDeviceClass c);

extern const SimScenario sim_scenarios[];
extern const guint sim_n_scenarios;
const SimScenario *sim_scenario_find(const char *name);
guint sim_scenario_n_vms(const SimScenario *scn);

/* Per tick, summed over the VMs unless noted. */
typedef struct {
    double iops;
    /* per disk (disk i of each VM summed over the VMs), from the samplers' counters */
    guint n_devices;
    double dev_iops[POLICY_MAX_DEVICES];
    double poll_cores;          /* truth: iothread CPU spent polling */
    double iot_cores;
    double vcpu_compute_cores;
    double exits_per_s;
    guint n_polling;            /* VMs whose poll-max-ns > 0 at the end of the tick */
    guint writes;               /* triple writes the policy made at the end of the tick */
    guint probes;               /* of those, explorations (POLICY_CAUSE_PROBE) */
    guint benef_polling;        /* of those, in the beneficiary group */
} SimTickStats;

typedef struct {
    char *label;                /* "off", "qemu-default", "adaptive", "oracle" */
    guint n_ticks;
    SimTickStats *ticks;        /* [n_ticks], tick i covers (i, i+1] s */
    /* whole run after the first tick (the policy has no sample before it) */
    double iops, lat_mean_us, lat_p99_us, poll_core_s, iot_core_s, exits_per_s, vcpu_cores;
    guint n_writes;
    guint operator_overwrites;  /* policy writes to the first VM after the operator's */
} SimRun;

void sim_run_free(SimRun *run);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimRun, sim_run_free)

/*
 * Run @scn with @spec on every iothread (NULL with @phase_triples: the
 * oracle, which sets phase_triples[p] at the start of each phase).  @scale
 * shortens every phase (1.0 = as defined).
 */
SimRun *sim_scenario_run(const SimScenario *scn, const PolicySpec *spec,
                         const PolicyTriple *phase_triples, double scale, guint64 seed);

/* What a run's tick hook asks for at the end of a tick. */
typedef enum {
    SIM_RUN_GO_ON,
    /*
     * polltuned restarts: the engine and every iothread's metrics history
     * are dropped and made anew, and SimRunOpts.restart_hook is called
     * with the new engine.
     */
    SIM_RUN_DAEMON_RESTART,
    /*
     * The VMs' QEMU went away and came back (a restart on another QEMU):
     * the daemon forgets their target (policy_engine_forget(), as on a
     * detach) and their history.
     */
    SIM_RUN_VM_RESTART,
} SimRunEvent;

/*
 * What a run adds to the simulated host.  Noise is measurement noise: the
 * IOPS the policy is shown are multiplied by an independent 1 + U(-noise,
 * +noise) each tick (what a TCG guest or a noisy neighbour gives the
 * samplers); the scores use the true figures.  Its generator is seeded by
 * @noise_seed, apart from the simulator's, so that noise and arrivals vary
 * independently.
 */
typedef struct {
    double noise;               /* 0.5 = +-50% */
    guint64 noise_seed;
    /*
     * An operator's write (virsh iothreadset) of @operator_triple to the
     * first VM at the end of tick @operator_tick (0: none), after the
     * policy's own decisions of that tick.
     */
    guint operator_tick;
    PolicyTriple operator_triple;
    /* Print each tick's measurements and decisions to this stream. */
    FILE *trace;
    /*
     * The triple every VM starts at (have_start; else QEMU's default, or
     * the oracle's first), and @warmup_ticks of its first phase's
     * workload with no I/O before the first phase: the path every real VM
     * takes, booting idle before its load arrives.  The warm-up ticks run
     * the policy but are not part of the run's ticks or figures.
     */
    gboolean have_start;
    PolicyTriple start;
    guint warmup_ticks;
    /*
     * No policy: schedule[t] is the triple in force through tick t (one
     * per tick of the run), written at the end of the tick before when it
     * differs from the one in force (NULL: none).  The every-candidate
     * bound's probes and commitment, run as any policy's writes are.
     */
    const PolicyTriple *schedule;
    /*
     * Called at the end of each run tick @t, after the policy's decisions
     * and an operator's write: a caller that changes the workload, the
     * device or the QEMU as the run goes (sim-lifetime.c).  What it
     * returns happens there (SimRunEvent).
     */
    SimRunEvent (*tick_hook)(Sim *sim, guint t, gpointer data);
    /*
     * A daemon restart: @fresh is the new engine, @old the one stopped,
     * still holding what the daemon kept in its store (it saves the
     * memory's changed rows every tick, so at a restart the store holds
     * them all).
     */
    void (*restart_hook)(const PolicyEngine *old, PolicyEngine *fresh, gpointer data);
    gpointer hook_data;
} SimRunOpts;

/* @w with no I/O: its disks, device and host kept, nothing submitted. */
SimWorkload sim_workload_idle(const SimWorkload *w);

/*
 * Scale what the policy sees of one tick's I/O by 1 + U(-@noise, +@noise),
 * as if that many more or fewer operations had completed: the per-second
 * counts (operations, bytes, the queue depth, which is their summed time)
 * scale, each operation's latency and the blocks and exits per second do
 * not.  @state is a splitmix64 state.
 */
void sim_metrics_add_noise(PolicyMetrics *m, double noise, guint64 *state);

/*
 * The environment variable @name as a whole number from @min to @max, or
 * @unset when it is not set.  Anything else ends the run (exit status 2)
 * with the variable, its value and the range named.
 */
guint64 sim_env_unsigned(const char *name, guint64 min, guint64 max, guint64 unset);

SimRun *sim_scenario_run_opts(const SimScenario *scn, const PolicySpec *spec,
                              const PolicyTriple *phase_triples, double scale, guint64 seed,
                              const SimRunOpts *opts);

/* The best static triple for each phase by grid search on IOPS. */
void sim_scenario_oracle(const SimScenario *scn, double scale, guint64 seed,
                         PolicyTriple out[SIM_MAX_PHASES]);

/* Mean IOPS over the ticks of phase @p, skipping its first @skip ticks. */
double sim_run_phase_iops(const SimRun *run, const SimScenario *scn, double scale,
                          guint p, guint skip);
