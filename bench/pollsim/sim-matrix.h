/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix: the generated scenario matrix.
 *
 * Instead of hand-picked scenarios, every combination of load (closed-loop
 * queue depth, open Poisson arrivals, or 2-3 disks of different depths on
 * the iothread), device service time (log-spaced),
 * device class (nvme, or a batching device where polling loses at depth),
 * host (dedicated cores, or the iothread sharing one core with a CPU-bound
 * vCPU), phases (steady, or a change of depth half way) and per-tick
 * measurement noise is one cell.  Per cell the oracle is the best static
 * triple of each phase, found by grid search on the same objective the
 * policy uses (balanced: ln IOPS - 0.10 x whole-VM cores, with the mean of
 * per-disk ln(1 + IOPS) in place of ln IOPS for several disks); the baselines
 * are "never write" (qemu-default) and "always off".
 *
 * The goals (docs/POLICY.md, issue's numbers):
 *   1. >= 95% of cells within 3% of the oracle's objective;
 *   2. no cell more than 3% below the better trivial baseline;
 *   3. better than both trivial baselines in aggregate;
 *   4. p95 writes per workload change <= 3 at +-50% noise.
 * Each goal is also scored for the trivial policies, so that a goal they
 * meet too is reported as such.
 */
#pragma once

#include <stdio.h>

#include "sim-scenario.h"

typedef enum {
    SIM_MATRIX_ADAPTIVE,
    SIM_MATRIX_OFF,
    SIM_MATRIX_QEMU_DEFAULT,
    SIM_MATRIX_ORACLE,
    SIM_MATRIX_N_POLICIES,
} SimMatrixPolicy;

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
    /* adaptive's distribution */
    double share_within;        /* cells >= 97% of the oracle */
    double p5_ratio, worst_ratio;
    guint worst_cell;
    double writes_median, writes_p95, writes_p95_noise50;
    double poll_vs_default;     /* adaptive polling CPU / qemu-default's */
    /* one extra run per workload with an operator's write half way into phase 1 */
    guint operator_runs;
    guint operator_overwritten;     /* runs where the policy wrote over it */
    SimMatrixGoal goals[SIM_MATRIX_N_GOALS];
} SimMatrixResult;

void sim_matrix_result_free(SimMatrixResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimMatrixResult, sim_matrix_result_free)

/*
 * Run the matrix.  @full: the whole grid, else the reduced one of the test
 * suite.  @model: the QEMU polling mechanism of every cell.  @seed varies
 * arrivals, device jitter and noise.  @n_threads cells run at once (0: one
 * per processor).
 */
SimMatrixResult *sim_matrix_run(gboolean full, SimQemuModel model, guint64 seed,
                                guint n_threads);

/* POLLSIM_SAMPLE's stride: 1 unless the environment asks for one in k. */
guint sim_matrix_sample_stride(void);
/* Whether the @i-th workload in grid order is in a sample of one in @k. */
gboolean sim_matrix_sampled(guint i, guint k);

/* "qd=48 closed svc=79us dev=nvme host=dedicated steady noise=50% qemu=7.2" */
char *sim_matrix_cell_format(const SimMatrixCell *c);
/* exp(score - oracle's): 1.0 is the oracle, 0.97 is 3% below. */
double sim_matrix_cell_ratio(const SimMatrixCell *c, SimMatrixPolicy p);

/* TRUE when every goal passes for adaptive. */
gboolean sim_matrix_goals_pass(const SimMatrixResult *r);
/* The tables, the goals and the closing "matrix: ..." line. */
void sim_matrix_print(const SimMatrixResult *r, FILE *out);

/*
 * POLLSIM_ORACLE=FILE is set: sim_matrix_run() writes each workload's
 * oracle search there (bench/pollsim/etc-bound.py reads it) and runs no
 * policy, so its cells hold no scores.
 */
gboolean sim_matrix_oracle_only(void);
