/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-goals: the suite's goals, each a check over the runs of one scenario.
 */
#pragma once

#include "sim-scenario.h"

typedef struct {
    SimRun *off, *qemu_default, *adaptive, *oracle;
    PolicyTriple oracle_triples[SIM_MAX_PHASES];
} SimResult;

void sim_result_free(SimResult *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimResult, sim_result_free)

/* Run the four policies on @scn.  @scale shortens the phases. */
SimResult *sim_result_run(const SimScenario *scn, double scale, guint64 seed);

typedef struct {
    char *scenario;
    char *goal;         /* what is checked */
    char *detail;       /* the numbers */
    gboolean pass;
} SimGoal;

void sim_goal_free(SimGoal *g);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(SimGoal, sim_goal_free)

/* Append the scenario's goals (SimGoal *) to @out. */
void sim_goals_check(const SimScenario *scn, const SimResult *r, double scale, GPtrArray *out);
