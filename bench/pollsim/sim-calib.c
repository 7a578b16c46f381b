/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-calib: see sim-calib.h.
 */
#include "sim-calib.h"

/* Seed 004; the seed's text drops digits of 10000, 20000, 30000, 60000. */
const SimCalibRow sim_calib_table[] = {
    { 0, 24806.94, 151430.36 },
    { 1, 24435.02, 155285.59 },
    { 100, 24702.41, 149937.2 },
    { 1000, 24457.08, 152936.3 },
    { 10000, 24605.05, 156158.12 },
    { 13000, 24412.95, 154908.73 },
    { 16000, 30654.24, 185731.58 },
    { 18000, 36365.69, 185538.78 },
    { 20000, 35640.48, 188640.61 },
    { 30000, 37411.05, 184198.39 },
    { 60000, 35230.66, 190427.42 },
};
const guint sim_calib_n_rows = G_N_ELEMENTS(sim_calib_table);

/* Fam's host had cores to spare: no CPU contention in the table. */
#define CALIB_CORES 8

SimWorkload
sim_calib_workload(guint qd)
{
    return (SimWorkload){
        .qd = qd,
        .service = SIM_NVME_SERVICE,
        .dev_occupancy = SIM_NVME_OCCUPANCY,
    };
}

double
sim_calib_iops(guint64 poll_max_ns, guint qd, double span_ns, guint64 seed)
{
    SimWorkload w = sim_calib_workload(qd);

    return sim_calib_iops_with(sim_costs_calibrated(), &w, poll_max_ns, span_ns, seed);
}

double
sim_calib_iops_with(const SimCosts *costs, const SimWorkload *w, guint64 poll_max_ns,
                    double span_ns, guint64 seed)
{
    g_autoptr(Sim) sim = sim_new(CALIB_CORES, costs, seed);
    PolicyTriple t = { poll_max_ns, 0, 0 };
    PolicyCounters a, b;
    guint vm = sim_add_vm(sim, w, &t);
    double warm = 20e6;

    sim_set_qemu_v4(sim, TRUE);

    sim_run_until(sim, warm);
    sim_vm_counters(sim, vm, &a);
    sim_run_until(sim, warm + span_ns);
    sim_vm_counters(sim, vm, &b);
    return (b.rd_ops - a.rd_ops) / (span_ns / 1e9);
}
