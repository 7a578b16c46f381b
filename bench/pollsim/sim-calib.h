/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-calib: seed 004's measured table (Fam Zheng, virtio-blk on NVMe, QEMU
 * with the v4 polling series, fio randread 4k) and the runs that reproduce it.
 */
#pragma once

#include "sim.h"

/* The fitted NVMe device of the table (docs/SIMULATOR.md). */
#define SIM_NVME_SERVICE { SIM_DIST_NORMAL, 10746, 786 }
#define SIM_NVME_OCCUPANCY 4031

typedef struct {
    guint64 poll_max_ns;
    double iops_qd1;
    double iops_qd32;
} SimCalibRow;

extern const SimCalibRow sim_calib_table[];
extern const guint sim_calib_n_rows;

/* The NVMe device and fio job of the table, at @qd. */
SimWorkload sim_calib_workload(guint qd);
/* IOPS of a run of @span_ns (after a short warm-up) at @poll_max_ns. */
double sim_calib_iops(guint64 poll_max_ns, guint qd, double span_ns, guint64 seed);
double sim_calib_iops_with(const SimCosts *costs, const SimWorkload *w, guint64 poll_max_ns,
                           double span_ns, guint64 seed);
