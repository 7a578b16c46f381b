/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix: the generated scenario matrix.
 *
 * Instead of hand-picked scenarios, every combination of load (closed-loop
 * queue depth, open Poisson arrivals, or 2-3 disks of different depths on
 * the iothread), device service time (log-spaced),
 * device class (nvme, or a batching device where polling loses at depth),
 * host (dedicated cores, or the iothread sharing one core with a CPU-bound
 * vCPU), phases (steady, or a change of depth half way), the way the VM
 * comes to its load (at QEMU's default, after booting idle, at an
 * operator's triple) and per-tick measurement noise is one cell.  Per cell
 * the oracle is the best static triple of each phase, found by grid search
 * on the same objective the policy uses (balanced: ln IOPS - 0.10 x
 * whole-VM cores, with the mean of per-disk ln(1 + IOPS) in place of ln
 * IOPS for several disks); the baselines are "never write" (the triple
 * the VM came with: what a host has without polltune) and "always off".
 *
 * The goals measure value (docs/POLICY.md, "Quality across the scenario
 * matrix"):
 *   1. do no harm: at most 1% of cells more than 3% below never-write, and
 *      none at noise <= +-10%;
 *   2. capture the gain: over the cells where the oracle beats never-write
 *      by more than 3%, at least 75% of the summed gain;
 *   3. close to what can be known: >= 95% of cells within 3% of the
 *      every-candidate bound, a clairvoyant explorer that still measures
 *      each candidate for a tick before it commits;
 *   4. write discipline: p95 writes per workload change <= 3 at +-50%
 *      noise, at most 4 in any phase, none in a steady phase after its
 *      exploration.
 * Each goal is also scored for the trivial policies, so that a goal they
 * meet too is reported as such; closeness to the oracle is printed as
 * information.
 */
#pragma once

#include <stdio.h>

#include "sim-scenario.h"

typedef enum {
    SIM_MATRIX_ADAPTIVE,
    SIM_MATRIX_OFF,
    /* No writes: the VM keeps the triple it came with, QEMU's default
     * unless the cell starts at an operator's triple. */
    SIM_MATRIX_NEVER_WRITE,
    SIM_MATRIX_ORACLE,
    /* The every-candidate bound (sim-matrix.c, bound_score()): scores only. */
    SIM_MATRIX_BOUND,
    SIM_MATRIX_N_POLICIES,
} SimMatrixPolicy;

/* How the VM comes to its first phase. */
typedef enum {
    SIM_START_DEFAULT,          /* at QEMU's default triple, loaded from the first tick */
    SIM_START_BOOT,             /* at QEMU's default, idle for a while first, as a VM boots */
    SIM_START_OPERATOR,         /* at a triple an operator set before polltune attached */
    SIM_START_MAX,
    SIM_START_INVALID = -1,
} SimMatrixStart;

const char *sim_matrix_start_to_string(SimMatrixStart s);
SimMatrixStart sim_matrix_start_from_string(const char *s);

/* One workload of the matrix: everything but the noise. */
typedef struct {
    guint qd;                   /* closed loop depth, 0: open loop */
    double open_load;           /* open loop: arrivals per (service + 15 us) */
    double svc_us;              /* mean device service time */
    gboolean shared;            /* iothread and a CPU-bound vCPU on one core */
    gboolean change;            /* a second phase at another depth */
    SimQemuModel qemu_model;
    /*
     * The device behind the disk (sim_workload_set_device_class()).  Zero
     * is nvme, the calibrated device every cell had before the class was a
     * dimension: those cells and their seeds are unchanged.
     */
    SimDeviceClass device;
    /*
     * 2 or 3: that many disks on the one iothread, closed loops at the
     * depths dev_qd[] (qd and open_load unused); a phase change reverses
     * the depths.  0: one disk.
     */
    guint n_devices;
    guint dev_qd[SIM_MAX_DEVICES];
    SimMatrixStart start;
} SimMatrixWorkload;

typedef struct {
    SimMatrixWorkload w;
    double noise;
    double score[SIM_MATRIX_N_POLICIES];        /* mean over phases, objective units */
    double poll_core_s[SIM_MATRIX_N_POLICIES];
    /*
     * Cores the guest's CPU-bound app got (shared-core cells; 0 elsewhere):
     * what the contention guard protects, which the objective does not
     * count.
     */
    double app_cores[SIM_MATRIX_N_POLICIES];
    guint n_phases;
    guint writes[SIM_MATRIX_N_POLICIES][2];     /* per phase: per workload change */
    /* per phase: writes after the phase's exploration could have ended */
    guint steady_writes[SIM_MATRIX_N_POLICIES][2];
    gint operator_overwrites;   /* -1: no operator run for this cell */
} SimMatrixCell;

/* A goal, judged for adaptive and for each trivial policy. */
typedef struct {
    const char *name;
    gboolean pass[SIM_MATRIX_N_POLICIES];       /* ORACLE unused */
    char detail[256];
} SimMatrixGoal;

#define SIM_MATRIX_N_GOALS 4

typedef struct {
    SimMatrixCell *cells;
    guint n_cells;
    guint phase_s;              /* seconds per phase */
    /* adaptive's distribution */
    double share_within;        /* cells >= 97% of the oracle (information) */
    double p5_ratio, worst_ratio;
    guint worst_cell;
    double writes_median, writes_p95, writes_p95_noise50;
    guint writes_max_phase;     /* the most writes in one phase, any noise */
    guint steady_writes;        /* writes after the explorations, all cells */
    double poll_vs_default;     /* adaptive polling CPU / never-write's */
    /* per policy (ORACLE and BOUND unused where meaningless) */
    guint harm[SIM_MATRIX_N_POLICIES];          /* cells > 3% below never-write */
    guint harm_low_noise[SIM_MATRIX_N_POLICIES];        /* of those, noise <= 10% */
    double captured[SIM_MATRIX_N_POLICIES];     /* share of the oracle's gain */
    guint gain_cells;                           /* cells where the oracle gains > 3% */
    double cpu_saved[SIM_MATRIX_N_POLICIES];    /* share of never-write's polling CPU */
    guint cpu_cells;                            /* cells where off is the oracle */
    double share_bound[SIM_MATRIX_N_POLICIES];  /* cells within 3% of the bound */
    /* one extra run per workload with an operator's write half way into phase 1 */
    guint operator_runs;
    guint operator_overwritten;     /* runs where the policy wrote over it */
    SimMatrixGoal goals[SIM_MATRIX_N_GOALS];
} SimMatrixResult;

void sim_matrix_result_free(SimMatrixResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimMatrixResult, sim_matrix_result_free)

/*
 * Run the matrix.  @full: the whole grid, else the reduced one of the test
 * suite, each with every start.  @model: the QEMU polling mechanism of every cell.  @seed varies
 * arrivals, device jitter and noise.  @n_threads cells run at once (0: one
 * per processor).
 */
SimMatrixResult *sim_matrix_run(gboolean full, SimQemuModel model, guint64 seed,
                                guint n_threads);

/* POLLSIM_SAMPLE's stride: 1 unless the environment asks for one in k. */
gboolean sim_matrix_start_wanted(SimMatrixStart start);
guint sim_matrix_sample_stride(void);
/* Whether the @i-th workload in grid order is in a sample of one in @k. */
gboolean sim_matrix_sampled(guint i, guint k);

/* POLLSIM_PHASE_S's seconds per phase: 30 unless the environment says. */
guint sim_matrix_phase_s(void);

/* "qd=48 closed svc=79us dev=nvme host=dedicated steady start=boot noise=50% qemu=7.2" */
char *sim_matrix_cell_format(const SimMatrixCell *c);
/* The simulator's workload of @mw's first phase. */
SimWorkload sim_matrix_workload_of(const SimMatrixWorkload *mw);
/* exp(score - oracle's): 1.0 is the oracle, 0.97 is 3% below. */
double sim_matrix_cell_ratio(const SimMatrixCell *c, SimMatrixPolicy p);

/* TRUE when every goal passes for adaptive. */
gboolean sim_matrix_goals_pass(const SimMatrixResult *r);
/* The tables, the goals and the closing "matrix: ..." line. */
void sim_matrix_print(const SimMatrixResult *r, FILE *out);

/*
 * The balanced objective of @r's ticks [from, to) (tick 0, before any
 * sample, is never scored): ln(mean IOPS) - 0.10 x whole-VM cores, with
 * the mean of per-disk ln(1 + IOPS) for several disks.  What every
 * policy's phase is scored by.
 */
double sim_matrix_span_score(const SimRun *r, guint from, guint to);

/* The triples the oracle searches: 0 to 500000 ns, grow and shrink 0. */
#define SIM_MATRIX_ORACLE_GRID_N 8
/*
 * The oracle's grid search: each phase of @scn run alone for a few seconds
 * under each grid triple; @out the best per phase, @scores every triple's
 * (grid order); each search printed to @trace unless NULL.
 */
void sim_matrix_oracle_search(const SimScenario *scn, guint64 seed,
                              PolicyTriple out[SIM_MAX_PHASES],
                              double scores[SIM_MAX_PHASES][SIM_MATRIX_ORACLE_GRID_N],
                              FILE *trace);

/*
 * POLLSIM_ORACLE=FILE is set: sim_matrix_run() writes each workload's
 * oracle search there (bench/pollsim/etc-bound.py reads it) and runs no
 * policy, so its cells hold no scores.
 */
gboolean sim_matrix_oracle_only(void);
