/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-calib: the published measurements the simulator's one parameter set
 * (sim_costs_calibrated()) is fitted to, and the runs that reproduce them:
 *   - seed 004's table (Fam Zheng, virtio-blk on NVMe, QEMU with the v4
 *     polling series, fio randread 4k): polling against poll-max-ns at QD1
 *     and QD32;
 *   - Stefan Hajnoczi's 2020 polling scalability series (QEMU commit
 *     3aa221b382c9 and its cover letter): polling many handlers on one
 *     iothread, where polling loses.
 * docs/SIMULATOR.md has every row, the model's value and its error.
 */
#pragma once

#include "sim.h"

/* The fitted NVMe device of the table (docs/SIMULATOR.md). */
#define SIM_NVME_SERVICE { SIM_DIST_NORMAL, 10746, 786 }
#define SIM_NVME_OCCUPANCY 4031

/*
 * The batching device class (sim_workload_set_device_class()): a device
 * whose throughput is bounded per command rather than per request (a SAN
 * or FCP path, a host block layer that merges what one io_submit brings),
 * fed by a guest that submits in batches.  Not fitted to a measurement:
 * chosen so that polling wins at QD1 and loses at QD16-64 by about as much
 * as the regime the issue describes (docs/SIMULATOR.md).
 */
#define SIM_BATCHING_OCCUPANCY 500
#define SIM_BATCHING_COMMAND_NS 20000
#define SIM_BATCHING_GUEST_BATCH 16

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

/*
 * One row of a further published measurement: a fio job at QD1 on one
 * disk of an iothread that also polls @idle_handlers other handlers.
 */
typedef struct {
    const char *what;
    guint idle_handlers;
    guint64 poll_max_ns;
    gboolean poll_once;         /* QEMU before 3aa221b382c9: one iteration before blocking */
    double iops;                /* measured */
    /*
     * The error this row is held to by the test suite; 0: a row the one
     * parameter set does not fit, printed with its error and not held.
     */
    double tolerance;
} SimCalibRow2;

typedef struct {
    const char *name;
    const char *citation;
    /*
     * The source's host: every cost of the parameter set multiplied by
     * host_speed (a faster host than seed 004's is < 1), and its device.
     */
    double host_speed;
    SimDist service;
    const SimCalibRow2 *rows;
    guint n_rows;
} SimCalibSource;

/*
 * IOPS of @w under a static @triple on QEMU @model (7.2's or 10's block_ns
 * accounting, not the v4 series'), over @span_ns after a 20 ms warm-up, on
 * a host with cores to spare.
 */
double sim_workload_iops(const SimWorkload *w, const PolicyTriple *triple, SimQemuModel model,
                         double span_ns, guint64 seed);

/* Stefan Hajnoczi's 2020 polling scalability series. */
extern const SimCalibSource sim_calib_many_handlers;

/* @costs with every cost multiplied by @speed. */
SimCosts sim_costs_scaled(const SimCosts *costs, double speed);
/* IOPS of @row of @src with the calibrated costs. */
double sim_calib_source_iops(const SimCalibSource *src, const SimCalibRow2 *row, double span_ns,
                             guint64 seed);
