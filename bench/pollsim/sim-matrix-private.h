/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix-private: what the matrix's runs (sim-matrix.c) and its goals
 * and tables (sim-matrix-goals.c) share.  Not for other files.
 */
#pragma once

#include "sim-matrix.h"

/* The figures, the goals' verdicts and the summary of a filled result. */
void sim_matrix_summarise(SimMatrixResult *r);
