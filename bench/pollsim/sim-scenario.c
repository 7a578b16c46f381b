/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-scenario: see sim-scenario.h.
 */
#include <math.h>
#include <string.h>

#include "policy-counters.h"
#include "sim-calib.h"
#include "sim-scenario.h"
#include "common/pt-enum-table.h"

/*
 * A "completion gap" is what QEMU's loop measures with polling off: the
 * block_ns of an iteration waiting for the device, that is the device's
 * latency plus the wake-up (wake_lat + wake_cpu of the calibrated costs).
 */
#define WAKE_NS 2680
#define NVME .service = SIM_NVME_SERVICE, .dev_occupancy = SIM_NVME_OCCUPANCY
#define SLOW .service = { SIM_DIST_NORMAL, 200000 - WAKE_NS, 20000 }, \
             .dev_occupancy = SIM_NVME_OCCUPANCY
#define GAP100 .service = { SIM_DIST_NORMAL, 100000 - WAKE_NS, 10000 }, \
               .dev_occupancy = SIM_NVME_OCCUPANCY
#define GAP45 .service = { SIM_DIST_UNIFORM, 40000 - WAKE_NS, 50000 - WAKE_NS }, \
              .dev_occupancy = SIM_NVME_OCCUPANCY

#define QD1 { .qd = 1, NVME }
#define QD32 { .qd = 32, NVME }
#define IDLE { .qd = 0, .open_iops = 0, NVME }

const SimScenario sim_scenarios[] = {
    { "S1", "steady QD1, fast NVMe (seed 004)", 4, 1, 60, { { 1, { QD1 } } }, 1, 0, G_MAXUINT },
    { "S2", "steady QD32, fast NVMe", 4, 1, 60, { { 1, { QD32 } } }, 1, 0, G_MAXUINT },
    { "S3", "slow device, ~200 us completion gap", 4, 1, 60,
      { { 1, { { .qd = 1, SLOW } } } }, 1, 0, G_MAXUINT },
    { "S4", "device with a 40-50 us gap", 4, 1, 60,
      { { 1, { { .qd = 1, GAP45 } } } }, 1, 0, G_MAXUINT },
    { "S5", "nearly idle, 10 IOPS", 4, 1, 60,
      { { 1, { { .qd = 0, .open_iops = 10, NVME } } } }, 1, 0, G_MAXUINT },
    { "S6", "phases: idle, QD1, QD32, slow, QD1", 4, 5, 60,
      { { 1, { IDLE, QD1, QD32, { .qd = 1, SLOW }, QD1 } } }, 1, 0, G_MAXUINT },
    { "S7", "4 VMs, CPU-bound vCPUs + QD1 on the 40-50 us device, 2 cores", 2, 1, 60,
      { { 4, { { .qd = 1, .compute = TRUE, GAP45 } } } }, 1, 0, G_MAXUINT },
    { "S8", "16 iothreads, 2-core budget, 4 benefit", 24, 1, 30,
      { { 6, { { .qd = 0, .open_iops = 10, NVME } } },
        { 6, { { .qd = 1, GAP100 } } },
        { 4, { { .qd = 8, NVME } } } }, 3, 2.0, 2 },
};
const guint sim_n_scenarios = G_N_ELEMENTS(sim_scenarios);

PT_ENUM_IMPL(sim_device_class, SimDeviceClass, SIM_DEVICE_MAX,
             [SIM_DEVICE_NVME] = "nvme",
             [SIM_DEVICE_BATCHING] = "batching")

void
sim_workload_set_device_class(SimWorkload *w, SimDeviceClass c)
{
    switch (c) {
    case SIM_DEVICE_BATCHING:
        w->dev_occupancy = SIM_BATCHING_OCCUPANCY;
        w->dev_batch_ns = SIM_BATCHING_COMMAND_NS;
        w->guest_batch = SIM_BATCHING_GUEST_BATCH;
        break;
    case SIM_DEVICE_NVME:
    default:
        w->dev_occupancy = SIM_NVME_OCCUPANCY;
        w->dev_batch_ns = 0;
        w->guest_batch = 0;
        break;
    }
}

const SimScenario *
sim_scenario_find(const char *name)
{
    for (guint i = 0; i < sim_n_scenarios; i++)
        if (g_ascii_strcasecmp(sim_scenarios[i].name, name) == 0)
            return &sim_scenarios[i];
    return NULL;
}

void
sim_run_free(SimRun *run)
{
    if (!run)
        return;
    g_free(run->label);
    g_free(run->ticks);
    g_free(run);
}

guint
sim_scenario_n_vms(const SimScenario *scn)
{
    guint n = 0;

    for (guint g = 0; g < scn->n_groups; g++)
        n += scn->groups[g].count;
    return n;
}

static guint
group_of(const SimScenario *scn, guint vm)
{
    for (guint g = 0; g < scn->n_groups; g++) {
        if (vm < scn->groups[g].count)
            return g;
        vm -= scn->groups[g].count;
    }
    return 0;
}

static guint
ticks_per_phase(const SimScenario *scn, double scale)
{
    return MAX(2, (guint)lround(scn->phase_s * scale));
}

#define HISTORY 16

typedef struct {
    PolicyMetrics hist[HISTORY];
    guint n_hist;
    SimTruth truth0;
    char name[32];
    char devices[64];           /* the device key: "vda=nvme", ... */
} VmLoop;

/* The disks behind @l's iothread as the daemon names them: each by its
 * name and what backs it, so that a lifetime's device change is a new
 * disk to the policy's memory, as a new <source> is to the daemon. */
static void
vm_loop_set_devices(VmLoop *l, const SimWorkload *w)
{
    const char *cls = sim_device_class_to_string(w->dev_batch_ns > 0 ? SIM_DEVICE_BATCHING
                                                                     : SIM_DEVICE_NVME);

    l->devices[0] = 0;
    for (guint d = 0; d < MAX(w->n_devices, 1) && d < SIM_MAX_DEVICES; d++)
        g_snprintf(l->devices + strlen(l->devices), sizeof(l->devices) - strlen(l->devices),
                   "%svd%c=%s", d ? "," : "", 'a' + d, cls);
}

static void
hist_push(VmLoop *l, const PolicyMetrics *m)
{
    if (l->n_hist == HISTORY) {
        memmove(l->hist, l->hist + 1, sizeof(l->hist[0]) * (HISTORY - 1));
        l->n_hist--;
    }
    l->hist[l->n_hist++] = *m;
}

/* splitmix64: the noise generator, independent of the simulator's PRNG. */
static guint64
noise_next(guint64 *state)
{
    guint64 z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void
sim_metrics_add_noise(PolicyMetrics *m, double noise, guint64 *state)
{
    double u = (noise_next(state) >> 11) * (1.0 / 9007199254740992.0);
    double f = 1.0 + noise * (2 * u - 1);

    /* Each operation adds its latency to total_time_ns, whose rate is the
     * queue depth: left alone, qd / latency would be the noise-free IOPS. */
    m->queue_depth *= f;
    m->rd_iops *= f;
    m->wr_iops *= f;
    m->flush_iops *= f;
    for (guint d = 0; d < m->n_devices && d < POLICY_MAX_DEVICES; d++)
        m->dev_iops[d] *= f;
    m->rd_mbps *= f;
    m->wr_mbps *= f;
    if (m->have_cpu && f > 0)
        m->blocks_per_op /= f;
    if (m->have_exits && f > 0)
        m->exits_per_op /= f;
}

guint64
sim_env_unsigned(const char *name, guint64 min, guint64 max, guint64 unset)
{
    const char *s = g_getenv(name);
    guint64 v;

    if (!s)
        return unset;
    if (!g_ascii_string_to_unsigned(s, 10, min, max, &v, NULL)) {
        fprintf(stderr, "%s=\"%s\": not a whole number from %" G_GUINT64_FORMAT " to %"
                G_GUINT64_FORMAT "\n", name, s, min, max);
        exit(2);
    }
    return v;
}

/*
 * POLLSIM_REVALIDATE=SECONDS: the policy's revalidate period in place of
 * its default (300 s), within the daemon's own range (0, off, to 7 days):
 * a grid phase lasts 30 s, so only a period shorter than that re-explores
 * inside one.
 */
static gint64
revalidate_override_ms(void)
{
    guint64 s = sim_env_unsigned("POLLSIM_REVALIDATE", 0, 7 * 24 * 3600, G_MAXUINT64);

    return s == G_MAXUINT64 ? -1 : (gint64)s * 1000;
}

SimWorkload
sim_workload_idle(const SimWorkload *w)
{
    SimWorkload idle = *w;

    idle.qd = 0;
    idle.open_iops = 0;
    for (guint d = 0; d < SIM_MAX_DEVICES; d++)
        idle.dev_qd[d] = 0;
    return idle;
}

SimRun *
sim_scenario_run(const SimScenario *scn, const PolicySpec *spec,
                 const PolicyTriple *phase_triples, double scale, guint64 seed)
{
    return sim_scenario_run_opts(scn, spec, phase_triples, scale, seed, NULL);
}

SimRun *
sim_scenario_run_opts(const SimScenario *scn, const PolicySpec *spec,
                      const PolicyTriple *phase_triples, double scale, guint64 seed,
                      const SimRunOpts *opts)
{
    guint n = sim_scenario_n_vms(scn), tpp = ticks_per_phase(scn, scale);
    guint n_ticks = tpp * scn->n_phases;
    g_autoptr(Sim) sim = sim_new(scn->n_cores, sim_costs_calibrated(), seed);
    g_autoptr(PolicyConfig) cfg = policy_config_new();
    g_autoptr(PolicyEngine) engine = NULL;
    g_autofree VmLoop *loops = g_new0(VmLoop, n);
    g_autofree PolicyIothreadInput *inputs = g_new0(PolicyIothreadInput, n);
    SimRun *run = g_new0(SimRun, 1);
    PolicyHostCounters hprev, hcur;
    double lat_sum = 0, ops_sum = 0;
    guint64 hist_all[2048] = { 0 };
    guint64 noise_state = opts ? opts->noise_seed : 0;
    gint64 revalidate_ms = revalidate_override_ms();
    guint warm = opts ? opts->warmup_ticks : 0;

    sim_set_qemu_model(sim, scn->qemu_model);
    run->n_ticks = n_ticks;
    run->ticks = g_new0(SimTickStats, n_ticks);
    if (spec) {
        cfg->default_spec = *spec;
        cfg->budget_cores = scn->budget_cores;
        /*
         * POLLSIM_NO_CONTENTION_GUARD=1: the daemon with its contention
         * limits at 0, as an operator can set them.  The guard trades the
         * VM's I/O for the host's CPU on purpose, and the matrix scores
         * only the I/O objective: this shows what that trade costs there.
         */
        if (g_getenv("POLLSIM_NO_CONTENTION_GUARD"))
            cfg->psi_some_limit = cfg->vcpu_delay_limit = cfg->iothread_delay_limit = 0;
        if (revalidate_ms >= 0)
            cfg->revalidate_ms = revalidate_ms;
        engine = policy_engine_new(cfg, NULL);
        run->label = policy_spec_format(spec);
    } else {
        run->label = g_strdup("oracle");
    }
    for (guint i = 0; i < n; i++) {
        PolicyTriple start = phase_triples ? phase_triples[0] :
                             opts && opts->have_start ? opts->start : POLICY_TRIPLE_QEMU_DEFAULT;
        SimWorkload w0 = scn->groups[group_of(scn, i)].phase[0];

        if (warm)
            w0 = sim_workload_idle(&w0);
        sim_add_vm(sim, &w0, &start);
        g_snprintf(loops[i].name, sizeof(loops[i].name), "iothread%u", i);
        /* the baseline: the first tick's delta starts here */
        sim_vm_delta(sim, i, &(PolicyDelta){ 0 });
    }
    sim_host_counters(sim, &hprev);

    /* Tick k of the simulation; t = k - warm of the run, once warmed up. */
    for (guint k = 0; k < warm + n_ticks; k++) {
        guint t = k >= warm ? k - warm : 0;
        SimTickStats warm_ts = { 0 };
        SimTickStats *ts = k >= warm ? &run->ticks[t] : &warm_ts;
        PolicyHost host;
        g_autoptr(GPtrArray) ds = NULL;

        sim_run_until(sim, (k + 1) * 1e9);
        sim_host_counters(sim, &hcur);
        policy_host_from_counters(&hprev, &hcur, &host, NULL);
        hprev = hcur;
        for (guint i = 0; i < n; i++) {
            PolicyDelta delta;
            PolicyMetrics m;
            const SimTruth *tr;

            sim_vm_delta(sim, i, &delta);
            policy_metrics_from_delta(&delta, &m);
            hist_push(&loops[i], &m);
            tr = sim_vm_truth(sim, i);
            ts->iops += policy_metrics_iops(&m);
            ts->n_devices = MAX(ts->n_devices, m.n_devices);
            for (guint d = 0; d < m.n_devices && d < POLICY_MAX_DEVICES; d++)
                ts->dev_iops[d] += m.dev_iops[d];
            ts->poll_cores += (tr->poll_cpu_ns - loops[i].truth0.poll_cpu_ns) / 1e9;
            ts->iot_cores += (tr->iot_cpu_ns - loops[i].truth0.iot_cpu_ns) / 1e9;
            ts->vcpu_compute_cores += (tr->vcpu_compute_ns - loops[i].truth0.vcpu_compute_ns) / 1e9;
            ts->exits_per_s += m.exits_per_s;
            if (k > warm) {
                lat_sum += tr->guest_lat_sum_ns - loops[i].truth0.guest_lat_sum_ns;
                ops_sum += tr->guest_ops - loops[i].truth0.guest_ops;
                for (guint b = 0; b < 2048; b++)
                    hist_all[b] += tr->lat_hist[b] - loops[i].truth0.lat_hist[b];
            }
            loops[i].truth0 = *tr;
            /* The scores above saw the truth; the policy sees the noisy figures. */
            if (opts && opts->noise > 0)
                sim_metrics_add_noise(&loops[i].hist[loops[i].n_hist - 1], opts->noise, &noise_state);
            inputs[i] = (PolicyIothreadInput){ SIM_TARGET, loops[i].name, sim_vm_triple(sim, i),
                                               loops[i].hist, loops[i].n_hist };
            /* What the daemon reads from QEMU and libvirt: the release the
             * memory's signatures carry, and the disks behind the iothread. */
            inputs[i].qemu_version = sim_qemu_model(sim) == SIM_QEMU_10 ? 10000000 : 7002000;
            vm_loop_set_devices(&loops[i], sim_vm_workload(sim, i));
            inputs[i].device_key = loops[i].devices;
        }
        if (engine) {
            ds = policy_engine_tick(engine, &host, inputs, n, (gint64)(k + 1) * 1000);
            for (guint i = 0; i < n; i++) {
                const PolicyDecision *d = g_ptr_array_index(ds, i);
                g_autofree char *tt = NULL;

                if (opts && opts->trace) {
                    g_autoptr(GString) disks = g_string_new("");

                    /* Each disk's IOPS, where the total hides one's loss. */
                    for (guint dk = 0; ts->n_devices > 1 && dk < ts->n_devices &&
                                       dk < POLICY_MAX_DEVICES; dk++)
                        g_string_append_printf(disks, "%s%.0f", dk ? "/" : " disks=",
                                               ts->dev_iops[dk]);
                    tt = policy_triple_format(&d->triple);
                    fprintf(opts->trace, "t=%d %s iops=%.0f%s dev=%s%s %s |%s\n",
                            (int)k - (int)warm,
                            loops[i].name, ts->iops, disks->str, tt,
                            d->change && d->apply ? " WRITE" : "", d->reason,
                            d->evidence ? d->evidence : "");
                }
                if (d->change && d->apply) {
                    sim_vm_set_triple(sim, i, &d->triple);
                    run->n_writes++;
                    ts->writes++;
                    ts->probes += d->cause == POLICY_CAUSE_PROBE;
                    if (i == 0 && opts && opts->operator_tick && k >= warm &&
                        t > opts->operator_tick)
                        run->operator_overwrites++;
                }
            }
        }
        if (k < warm) {
            /* The load arrives at the end of the warm-up. */
            if (k + 1 == warm)
                for (guint i = 0; i < n; i++)
                    sim_vm_set_workload(sim, i, &scn->groups[group_of(scn, i)].phase[0]);
            continue;
        }
        if (opts && opts->operator_tick && t == opts->operator_tick)
            sim_vm_set_triple(sim, 0, &opts->operator_triple);
        for (guint i = 0; opts && opts->schedule && t + 1 < n_ticks && i < n; i++) {
            PolicyTriple cur = sim_vm_triple(sim, i);

            if (!policy_triple_equal(&cur, &opts->schedule[t + 1])) {
                sim_vm_set_triple(sim, i, &opts->schedule[t + 1]);
                run->n_writes++;
                ts->writes++;
            }
        }
        if (opts && opts->tick_hook) {
            SimRunEvent ev = opts->tick_hook(sim, t, opts->hook_data);

            if (ev != SIM_RUN_GO_ON && engine) {
                if (ev == SIM_RUN_DAEMON_RESTART) {
                    PolicyEngine *old = engine;

                    engine = policy_engine_new(cfg, NULL);
                    if (opts->restart_hook)
                        opts->restart_hook(old, engine, opts->hook_data);
                    policy_engine_free(old);
                } else {
                    policy_engine_forget(engine, SIM_TARGET);
                }
                for (guint i = 0; i < n; i++)
                    loops[i].n_hist = 0;
            }
        }
        if ((t + 1) % tpp == 0 && t + 1 < n_ticks) {
            guint p = (t + 1) / tpp;

            for (guint i = 0; i < n; i++) {
                sim_vm_set_workload(sim, i, &scn->groups[group_of(scn, i)].phase[p]);
                if (phase_triples) {
                    sim_vm_set_triple(sim, i, &phase_triples[p]);
                    run->n_writes++;
                }
            }
        }
        for (guint i = 0; i < n; i++) {
            PolicyTriple tr = sim_vm_triple(sim, i);

            if (tr.poll_max_ns > 0) {
                ts->n_polling++;
                if (group_of(scn, i) == scn->beneficiary_group)
                    ts->benef_polling++;
            }
        }
    }
    for (guint t = 1; t < n_ticks; t++) {
        run->iops += run->ticks[t].iops;
        run->poll_core_s += run->ticks[t].poll_cores;
        run->iot_core_s += run->ticks[t].iot_cores;
        run->exits_per_s += run->ticks[t].exits_per_s;
        run->vcpu_cores += run->ticks[t].vcpu_compute_cores;
    }
    run->iops /= n_ticks - 1;
    run->exits_per_s /= n_ticks - 1;
    run->vcpu_cores /= n_ticks - 1;
    run->lat_mean_us = ops_sum > 0 ? lat_sum / ops_sum / 1000 : 0;
    run->lat_p99_us = sim_hist_quantile(hist_all, NULL, 0.99) / 1000;
    return run;
}

double
sim_run_phase_iops(const SimRun *run, const SimScenario *scn, double scale, guint p, guint skip)
{
    guint tpp = ticks_per_phase(scn, scale), from = p * tpp + skip, to = (p + 1) * tpp;
    double sum = 0;

    if (from >= to)
        return 0;
    for (guint t = from; t < to; t++)
        sum += run->ticks[t].iops;
    return sum / (to - from);
}

/* The grid the oracle searches. */
/* Multi-VM scenarios search a coarser grid on shorter runs. */
static const PolicyTriple oracle_grid_small[] = {
    { 0, 0, 0 }, { 16384, 0, 0 }, { 32768, 0, 0 }, { 65536, 0, 0 }, { 262144, 0, 0 },
};

static const PolicyTriple oracle_grid[] = {
    { 0, 0, 0 },      { 8192, 0, 0 },   { 16384, 0, 0 },  { 24576, 0, 0 },
    { 32768, 0, 0 },  { 49152, 0, 0 },  { 65536, 0, 0 },  { 131072, 0, 0 },
    { 262144, 0, 0 }, { 500000, 0, 0 }, { 65536, 2, 2 },  { 262144, 2, 2 },
};

/*
 * The oracle ranks static triples by the balanced objective, the one the
 * suite runs adaptive with, per VM: ln(IOPS) - 0.10 * iothread cores.
 */
static double
oracle_score(const SimRun *r, guint n_vms)
{
    PolicyMetrics m = { .have_cpu = TRUE };
    double secs = r->n_ticks - 1;

    m.rd_iops = r->iops / n_vms;
    m.cpu_pct = 100.0 * r->iot_core_s / secs / n_vms;
    return policy_objective_score(POLICY_OBJECTIVE_BALANCED, &m);
}

void
sim_scenario_oracle(const SimScenario *scn, double scale, guint64 seed,
                    PolicyTriple out[SIM_MAX_PHASES])
{
    for (guint p = 0; p < scn->n_phases; p++) {
        SimScenario one = *scn;
        double best = 0;

        gboolean small = sim_scenario_n_vms(scn) > 1;
        const PolicyTriple *grid = small ? oracle_grid_small : oracle_grid;
        guint n_grid = small ? G_N_ELEMENTS(oracle_grid_small) : G_N_ELEMENTS(oracle_grid);

        one.n_phases = 1;
        one.phase_s = MIN(scn->phase_s * scale, small ? 3.0 : 6.0) / scale;
        for (guint g = 0; g < scn->n_groups; g++)
            one.groups[g].phase[0] = scn->groups[g].phase[p];
        out[p] = grid[0];
        for (guint k = 0; k < n_grid; k++) {
            PolicyTriple tr[1] = { grid[k] };
            g_autoptr(SimRun) r = sim_scenario_run(&one, NULL, tr, scale, seed);
            double score = oracle_score(r, sim_scenario_n_vms(&one));

            if (k == 0 || score > best) {
                best = score;
                out[p] = grid[k];
            }
        }
    }
}
