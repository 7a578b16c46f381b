/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-lifetime: VM lifetimes, the benchmark of a policy that lives with a
 * VM for hours (docs/SIMULATOR.md, "Lifetimes").
 *
 * A real VM does not live in the matrix's 30-second cells: it runs for
 * hours or days, its workloads recur, its device and QEMU stay the same
 * between them.  A lifetime, generated from a seed, is one VM's sequence
 * of segments: a boot's idle spell, then workloads drawn from a small
 * per-VM set (or, in one lifetime in four, never the same twice), idle
 * spells and short bursts, with lengths log-uniform from seconds to tens
 * of minutes; a daemon restart half way; in some, the device class or
 * the QEMU polling model changes for good part way.  Each lifetime is run
 * under adaptive, never-write, off and the per-segment oracle (the
 * matrix's grid search, written at each segment's start), and adaptive
 * again without the restart; the goals of the item 4 are scored
 * for adaptive, never-write and off (sim-lifetime-goals.c).
 */
#pragma once

#include <stdio.h>

#include "sim-matrix.h"

typedef enum {
    SIM_LT_ADAPTIVE,
    SIM_LT_NEVER_WRITE,
    SIM_LT_OFF,
    SIM_LT_ORACLE,
    /* The same lifetime without its restart. */
    SIM_LT_ADAPTIVE_NO_RESTART,
    SIM_LT_NEVER_WRITE_NO_RESTART,      /* only with SimLifetimeParams.check_restart */
    SIM_LT_OFF_NO_RESTART,              /* only with SimLifetimeParams.check_restart */
    SIM_LT_N_RUNS,
} SimLifetimeRun;

const char *sim_lifetime_run_to_string(SimLifetimeRun r);

typedef enum {
    SIM_LT_CHANGE_NONE,
    SIM_LT_CHANGE_DEVICE,       /* the disk moves to the other device class */
    SIM_LT_CHANGE_QEMU,         /* the VM comes back on the other QEMU, at its default triple */
} SimLifetimeChange;

typedef struct {
    guint start_s, len_s;
    /* Index in the lifetime's distinct workloads; G_MAXUINT: an idle spell. */
    guint key;
    gboolean burst;
    SimWorkload w;
    PolicyTriple oracle;                /* the oracle's triple (off when idle) */
    double score[SIM_LT_N_RUNS];        /* balanced objective of the segment */
    double poll_core_s[SIM_LT_N_RUNS];  /* truth: polling core-seconds */
} SimLifetimeSegment;

typedef struct {
    guint64 seed;
    guint index;                /* in its seed's lifetimes */
    guint len_s;
    SimQemuModel qemu_model;    /* at the start */
    SimDeviceClass device;      /* at the start */
    gboolean shared;            /* the iothread shares one core with a CPU-bound vCPU */
    double noise;
    gboolean recurring;         /* workloads drawn from a small set */
    SimLifetimeChange change;
    guint change_s;             /* the segment start where it happens */
    guint restart_s;
    SimLifetimeSegment *segments;
    guint n_segments;
    SimMatrixWorkload *keys;    /* the distinct workloads */
    guint n_keys;
    /* Figures per run (ORACLE's learning figures unused). */
    double score[SIM_LT_N_RUNS];        /* time-weighted mean of the segments' */
    double poll_core_s[SIM_LT_N_RUNS];
    /* 10-minute windows, a minute apart: n_windows x SIM_LT_N_RUNS scores */
    guint n_windows;
    double *windows;
    /* later arrivals of a workload whose first arrival settled; of those,
     * the ones that had its winner within 2 ticks with at most 1 write */
    guint arrivals[SIM_LT_N_RUNS], arrivals_fast[SIM_LT_N_RUNS];
    /* explorations in the first and the last hour (a third of a lifetime
     * shorter than 3 hours) */
    guint explore_first[SIM_LT_N_RUNS], explore_last[SIM_LT_N_RUNS];
    gboolean have_run[SIM_LT_N_RUNS];
} SimLifetime;

typedef struct {
    guint64 first_seed;
    guint n_seeds;
    guint per_seed;             /* lifetimes per seed: a multiple of 4 covers class x host */
    guint minutes;              /* each lifetime's length */
    guint sample;               /* one lifetime in this many (1: all) */
    SimQemuModel qemu_model;
    /* also run never-write and off without the restart (the invariant) */
    gboolean check_restart;
    guint n_threads;            /* 0: one per processor */
} SimLifetimeParams;

/* A goal, judged for adaptive, never-write and off. */
typedef struct {
    const char *name;
    gboolean pass[SIM_LT_N_RUNS];       /* ADAPTIVE, NEVER_WRITE, OFF */
    char detail[SIM_LT_N_RUNS][96];
} SimLifetimeGoal;

#define SIM_LT_N_GOALS 9

typedef struct {
    SimLifetimeParams params;
    SimLifetime *lifetimes;
    guint n_lifetimes;
    SimLifetimeGoal goals[SIM_LT_N_GOALS];
} SimLifetimeResult;

void sim_lifetime_result_free(SimLifetimeResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimLifetimeResult, sim_lifetime_result_free)

/*
 * The parameters of `pollsim --lifetimes` (@full FALSE: the reduced form
 * of the slow test suite) with the environment's overrides:
 * POLLSIM_SEEDS, POLLSIM_LIFETIME_MINUTES, POLLSIM_LIFETIMES (per seed),
 * POLLSIM_SAMPLE.
 */
SimLifetimeParams sim_lifetime_params(gboolean full, SimQemuModel model, guint64 seed,
                                      guint n_threads);

/* Generate the lifetime @index of @seed (segments and oracle unfilled). */
void sim_lifetime_generate(SimLifetime *lt, const SimLifetimeParams *p, guint64 seed,
                           guint index);
void sim_lifetime_clear(SimLifetime *lt);

/* Generate, run and score every lifetime, and judge the goals. */
SimLifetimeResult *sim_lifetime_run(const SimLifetimeParams *p);

/* "seed=1 #2 dev=batching host=shared noise=25% recurring change=qemu@1200s" */
char *sim_lifetime_format(const SimLifetime *lt);

/*
 * sim-lifetime-goals.c: a run's figures (@triples: the VM's triple at the
 * end of each tick), the goals of a result, its tables.
 */
void sim_lifetime_fill(SimLifetime *lt, SimLifetimeRun which, const SimRun *run,
                       const PolicyTriple *triples);
void sim_lifetime_judge(SimLifetimeResult *r);
void sim_lifetime_print(const SimLifetimeResult *r, FILE *out);
