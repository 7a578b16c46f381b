/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix: see sim-matrix.h.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "common/pt-enum-table.h"
#include "sim-calib.h"
#include "sim-matrix-private.h"

/*
 * Thirty 1 s ticks per phase by default: long enough that an exploration
 * of a few ticks costs a few percent at most, short enough for the full
 * grid to run in well under an hour on one core.  POLLSIM_PHASE_S asks
 * for shorter or longer phases (5 s to 10 min), where the policy's
 * explorations cost more or less of a phase.
 */
#define PHASE_S_DEFAULT 30
/* An operator's own choice, unlike anything the policy writes. */
#define OPERATOR_TRIPLE ((PolicyTriple){ 50000, 0, 0 })
/*
 * The triple a cell of the operator start begins at: a wider window with
 * QEMU's growth and shrink changed, as an operator who tuned by hand might
 * leave it; unlike anything the policy writes or its oracle searches.
 */
#define OPERATOR_START ((PolicyTriple){ 100000, 2, 2 })
/*
 * A booting VM's idle time before its load: the test guest boots in about
 * 6 s (docs/GUEST.md); ten idle ticks let the policy settle on idle first,
 * as it does on every real VM.
 */
#define BOOT_IDLE_S 10
/*
 * Ticks into a phase after which an exploration begun by the phase's
 * change is over: a start measured for up to 4 ticks, two probes of up to
 * 3, the return and a dwell's tick of slack.  A write later than that is
 * a steady-phase write.
 */
#define EXPLORATION_TICKS 12

PT_ENUM_IMPL(sim_matrix_start, SimMatrixStart, SIM_START_MAX,
             [SIM_START_DEFAULT] = "default",
             [SIM_START_BOOT] = "boot",
             [SIM_START_OPERATOR] = "operator")

guint
sim_matrix_phase_s(void)
{
    return (guint)sim_env_unsigned("POLLSIM_PHASE_S", 5, 600, PHASE_S_DEFAULT);
}
/* The oracle's grid runs: tick 0 (no policy sample yet) is not scored. */
#define ORACLE_S 4

static const guint loads_qd[] = { 1, 2, 4, 8, 16, 32, 48, 64, 128 };
static const double loads_open[] = { 0.5, 2.0 };
/*
 * Disks of different depths on one iothread: a latency-bound disk beside a
 * throughput-bound one, where a choice for the total can starve the first.
 */
static const guint mixes[][SIM_MAX_DEVICES] = { { 1, 64 }, { 1, 16, 64 } };
static const guint mix_n[] = { 2, 3 };
#define N_LOADS (G_N_ELEMENTS(loads_qd) + G_N_ELEMENTS(loads_open) + G_N_ELEMENTS(mixes))
#define LOAD_MIX0 (G_N_ELEMENTS(loads_qd) + G_N_ELEMENTS(loads_open))
/* 5 us to 500 us, log-spaced (a factor of 10^0.4 apart). */
#define N_SVC 6
static const double noises[] = { 0, 0.10, 0.25, 0.50 };
#define N_NOISE G_N_ELEMENTS(noises)

/* Above the full grid's 312 workload ids: a class's seeds never meet another's. */
#define DEVICE_SEED_OFFSET 100000ull
/* Past every class's offset: a start's seeds meet no other start's, and the
 * cells of the default start keep the seeds they had before starts were a
 * dimension. */
#define START_SEED_OFFSET 1000000ull

static const PolicyTriple oracle_grid[SIM_MATRIX_ORACLE_GRID_N] = {
    { 0, 0, 0 },      { 8192, 0, 0 },   { 16384, 0, 0 },   { 32768, 0, 0 },
    { 65536, 0, 0 },  { 131072, 0, 0 }, { 262144, 0, 0 },  { 500000, 0, 0 },
};

static double
svc_us_at(guint i)
{
    return 5.0 * pow(10.0, 0.4 * i);
}

void
sim_matrix_result_free(SimMatrixResult *r)
{
    if (!r)
        return;
    g_free(r->cells);
    g_free(r);
}

char *
sim_matrix_cell_format(const SimMatrixCell *c)
{
    g_autofree char *load = NULL;

    if (c->w.n_devices >= 2) {
        GString *g = g_string_new("qd=");

        for (guint d = 0; d < c->w.n_devices; d++)
            g_string_append_printf(g, "%s%u", d ? "+" : "", c->w.dev_qd[d]);
        g_string_append(g, " closed");
        load = g_string_free(g, FALSE);
    } else {
        load = c->w.qd ? g_strdup_printf("qd=%u closed", c->w.qd)
                       : g_strdup_printf("open=%.1fx", c->w.open_load);
    }

    return g_strdup_printf("%s svc=%.0fus dev=%s host=%s %s start=%s noise=%.0f%% qemu=%s",
                           load, c->w.svc_us, sim_device_class_to_string(c->w.device),
                           c->w.shared ? "shared" : "dedicated",
                           c->w.change ? "phase-change" : "steady",
                           sim_matrix_start_to_string(c->w.start), 100 * c->noise,
                           sim_qemu_model_to_string(c->w.qemu_model));
}

double
sim_matrix_cell_ratio(const SimMatrixCell *c, SimMatrixPolicy p)
{
    return exp(c->score[p] - c->score[SIM_MATRIX_ORACLE]);
}

static SimWorkload
workload_of(const SimMatrixWorkload *mw, guint qd, gboolean reverse)
{
    double svc = mw->svc_us * 1000;
    SimWorkload w = {
        .qd = qd,
        .compute = mw->shared,
        .service = { SIM_DIST_NORMAL, svc, 0.08 * svc },
        .dev_occupancy = SIM_NVME_OCCUPANCY,
    };

    sim_workload_set_device_class(&w, mw->device);
    if (mw->n_devices >= 2) {
        w.n_devices = mw->n_devices;
        for (guint d = 0; d < mw->n_devices; d++)
            w.dev_qd[d] = mw->dev_qd[reverse ? mw->n_devices - 1 - d : d];
    }
    if (!qd)
        w.open_iops = mw->open_load * 1e9 / (svc + 15000);
    return w;
}

SimWorkload
sim_matrix_workload_of(const SimMatrixWorkload *mw)
{
    return workload_of(mw, mw->qd, FALSE);
}

static void
scenario_of(const SimMatrixWorkload *mw, SimScenario *scn)
{
    *scn = (SimScenario){
        .name = "matrix",
        .what = "generated cell",
        .n_cores = mw->shared ? 1 : 4,
        .n_phases = mw->change ? 2 : 1,
        .phase_s = sim_matrix_phase_s(),
        .n_groups = 1,
        .beneficiary_group = G_MAXUINT,
        .qemu_model = mw->qemu_model,
    };
    scn->groups[0].count = 1;
    scn->groups[0].phase[0] = workload_of(mw, mw->qd, FALSE);
    /*
     * A phase change moves a shallow queue deep and a deep one (or open) to
     * QD1; with several disks it reverses their depths.
     */
    if (mw->change)
        scn->groups[0].phase[1] = workload_of(mw, mw->qd && mw->qd <= 8 ? 32 : 1, TRUE);
}

/*
 * The balanced objective over ticks [from, to) (sim-matrix.h): whole-VM
 * cores are the iothread's CPU plus the vCPU time of the exits, with the
 * policy's default judgements.
 */
double
sim_matrix_span_score(const SimRun *r, guint from, guint to)
{
    PolicyMetrics m = { .have_cpu = TRUE, .have_exits = TRUE };
    double iops = 0, cores = 0, exits = 0;

    from = MAX(from, 1);
    if (from >= to)
        return 0;
    for (guint t = from; t < to; t++) {
        iops += r->ticks[t].iops;
        cores += r->ticks[t].iot_cores;
        exits += r->ticks[t].exits_per_s;
        m.n_devices = r->ticks[t].n_devices;
        for (guint d = 0; d < m.n_devices; d++)
            m.dev_iops[d] += r->ticks[t].dev_iops[d] / (to - from);
    }
    m.rd_iops = iops / (to - from);
    m.cpu_pct = 100.0 * cores / (to - from);
    m.exits_per_s = exits / (to - from);
    return policy_objective_score(POLICY_OBJECTIVE_BALANCED, &m);
}

static void
run_fill(SimMatrixCell *c, SimMatrixPolicy p, const SimRun *r)
{
    guint tpp = r->n_ticks / c->n_phases;

    c->score[p] = 0;
    for (guint ph = 0; ph < c->n_phases; ph++) {
        c->score[p] += sim_matrix_span_score(r, ph * tpp, (ph + 1) * tpp) / c->n_phases;
        c->writes[p][ph] = 0;
        c->steady_writes[p][ph] = 0;
        for (guint t = ph * tpp; t < (ph + 1) * tpp; t++) {
            c->writes[p][ph] += r->ticks[t].writes;
            if (t - ph * tpp >= EXPLORATION_TICKS)
                c->steady_writes[p][ph] += r->ticks[t].writes;
        }
    }
    c->poll_core_s[p] = r->poll_core_s;
    c->app_cores[p] = r->vcpu_cores;
}

typedef struct {
    SimMatrixWorkload w;
    guint64 seed;
    SimMatrixCell *out;         /* N_NOISE cells */
} MatrixJob;

/* A workload's name: its cell's, without the noise, which is the run's. */
static char *
workload_name_of(const char *cell)
{
    char *name = g_strdup(cell);
    char *noise = strstr(name, " noise=");

    if (noise) {
        const char *rest = strchr(noise + 1, ' ');

        if (rest)
            memmove(noise, rest, strlen(rest) + 1);
        else
            *noise = '\0';
    }
    return name;
}

/*
 * POLLSIM_ORACLE=FILE: every workload's oracle search, one line per phase
 * and triple ("WORKLOAD<TAB>PHASE<TAB>TRIPLE<TAB>SCORE"), for
 * bench/pollsim/etc-bound.py, and nothing else: no policy runs (the full
 * grid's search takes minutes, its policy runs half an hour).  The jobs
 * run on several threads, so a workload's lines are written together
 * under a lock.
 */
G_LOCK_DEFINE_STATIC(oracle_dump);

static void
oracle_dump(const char *name, guint n_phases,
            double scores[SIM_MAX_PHASES][SIM_MATRIX_ORACLE_GRID_N])
{
    static FILE *f;
    const char *path = g_getenv("POLLSIM_ORACLE");

    if (!path || !*path)
        return;
    G_LOCK(oracle_dump);
    if (!f && !(f = fopen(path, "w")))
        fprintf(stderr, "pollsim: POLLSIM_ORACLE=%s: %s\n", path, g_strerror(errno));
    for (guint p = 0; f && p < n_phases; p++) {
        for (guint k = 0; k < G_N_ELEMENTS(oracle_grid); k++) {
            g_autofree char *t = policy_triple_format(&oracle_grid[k]);

            fprintf(f, "%s\t%u\t%s\t%.6f\n", name, p, t, scores[p][k]);
        }
    }
    if (f)
        fflush(f);
    G_UNLOCK(oracle_dump);
}

void
sim_matrix_oracle_search(const SimScenario *scn, guint64 seed, PolicyTriple out[SIM_MAX_PHASES],
              double scores[SIM_MAX_PHASES][SIM_MATRIX_ORACLE_GRID_N], FILE *trace)
{
    for (guint p = 0; p < scn->n_phases; p++) {
        SimScenario one = *scn;
        double best = -G_MAXDOUBLE;

        one.n_phases = 1;
        one.phase_s = ORACLE_S;
        one.groups[0].phase[0] = scn->groups[0].phase[p];
        for (guint k = 0; k < G_N_ELEMENTS(oracle_grid); k++) {
            g_autoptr(SimRun) r = sim_scenario_run(&one, NULL, &oracle_grid[k], 1.0, seed);
            double s = sim_matrix_span_score(r, 1, r->n_ticks);

            scores[p][k] = s;

            if (trace)
                fprintf(trace, "oracle phase %u: %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                        "/%" G_GUINT64_FORMAT " score %.4f\n", p, oracle_grid[k].poll_max_ns,
                        oracle_grid[k].poll_grow, oracle_grid[k].poll_shrink, s);
            if (s > best) {
                best = s;
                out[p] = oracle_grid[k];
            }
        }
    }
}

gboolean
sim_matrix_oracle_only(void)
{
    const char *path = g_getenv("POLLSIM_ORACLE");

    return path && *path;
}

/*
 * The every-candidate bound: what a policy could score that knows when
 * each phase begins and which triple is best to commit to, but must still
 * measure each candidate it did not start from for one tick before it
 * commits, as a policy that learns by measuring must.  Its candidates are
 * the adaptive policy's (off, QEMU's default window, the wide window) and
 * the triple the phase starts from: the cell's start in the first phase,
 * the one committed to in the phase before after that.  A phase's first
 * tick runs its start (the first phase's is the run's unscored tick 0),
 * then one tick of each other candidate in the order adaptive probes them
 * (wide, off, QEMU's default), then the commitment to the phase's end.  A
 * cell that boots idle starts its load at QEMU's default: the bound
 * writes nothing while there is nothing to measure.
 *
 * The bound is scored along that path, as every policy is: each
 * commitment is run after the probes, and the best run's phase counts.
 * Scored from the oracle search's fresh runs instead, it credited a
 * triple with what it gives from a fresh start, which on a batching device
 * it may not give after the wide probe (docs/SIMULATOR.md, "Two steady
 * states of one triple"): the bound was then out of any policy's reach.
 */
#define BOUND_MAX_CAND 4

static double
bound_path(const SimScenario *scn, guint64 seed, const SimRunOpts *base, guint tpp)
{
    static const PolicyTriple order[] = { { 262144, 0, 0 }, { 0, 0, 0 }, POLICY_TRIPLE_QEMU_DEFAULT };
    guint n_ticks = tpp * scn->n_phases;
    g_autofree PolicyTriple *sched = g_new0(PolicyTriple, n_ticks);
    PolicyTriple start = base->have_start ? base->start : (PolicyTriple)POLICY_TRIPLE_QEMU_DEFAULT;
    double total = 0;

    for (guint p = 0; p < scn->n_phases; p++) {
        PolicyTriple cand[BOUND_MAX_CAND] = { start };
        guint n_cand = 1, t0 = p * tpp, probe0 = t0 + 1;
        double best = -G_MAXDOUBLE;
        PolicyTriple best_t = start;
        SimScenario upto = *scn;

        upto.n_phases = p + 1;
        for (guint i = 0; i < G_N_ELEMENTS(order); i++)
            if (!policy_triple_equal(&order[i], &start))
                cand[n_cand++] = order[i];
        for (guint t = t0; t < MIN(probe0, n_ticks); t++)
            sched[t] = start;
        for (guint i = 1; i < n_cand && probe0 + i - 1 < (p + 1) * tpp; i++)
            sched[probe0 + i - 1] = cand[i];
        for (guint c = 0; c < n_cand; c++) {
            SimRunOpts o = *base;
            g_autoptr(SimRun) r = NULL;
            double sc;

            for (guint t = probe0 + n_cand - 1; t < (p + 1) * tpp; t++)
                sched[t] = cand[c];
            o.schedule = sched;
            o.have_start = TRUE;
            o.start = sched[0];
            r = sim_scenario_run_opts(&upto, NULL, NULL, 1.0, seed, &o);
            sc = sim_matrix_span_score(r, t0, t0 + tpp);
            if (sc > best) {
                best = sc;
                best_t = cand[c];
            }
        }
        for (guint t = probe0 + n_cand - 1; t < (p + 1) * tpp; t++)
            sched[t] = best_t;
        total += best / scn->n_phases;
        start = best_t;
    }
    return total;
}

/* The run options every run of a cell shares: its start and its warm-up. */
static SimRunOpts
cell_opts(const SimMatrixWorkload *w)
{
    SimRunOpts o = { 0 };

    if (w->start == SIM_START_OPERATOR) {
        o.have_start = TRUE;
        o.start = OPERATOR_START;
    }
    if (w->start == SIM_START_BOOT)
        o.warmup_ticks = BOOT_IDLE_S;
    return o;
}

static void
job_run(gpointer data, gpointer user_data G_GNUC_UNUSED)
{
    MatrixJob *job = data;
    SimScenario scn;
    PolicyTriple best[SIM_MAX_PHASES];
    double scores[SIM_MAX_PHASES][SIM_MATRIX_ORACLE_GRID_N];
    PolicySpec spec = { .objective = POLICY_OBJECTIVE_BALANCED };
    g_autoptr(SimRun) off = NULL, never = NULL, oracle = NULL;
    const SimRunOpts base = cell_opts(&job->w);
    SimRunOpts opts;
    double bound;
    guint tpp;
    gboolean trace_workload;

    scenario_of(&job->w, &scn);
    {
        /* POLLSIM_TRACE also shows the oracle's search, for the workload. */
        const char *trace = g_getenv("POLLSIM_TRACE");
        SimMatrixCell c0 = { .w = job->w };
        g_autofree char *cell = sim_matrix_cell_format(&c0);
        g_autofree char *name = workload_name_of(cell);
        g_autofree char *bare = trace ? workload_name_of(trace) : NULL;

        trace_workload = bare && strstr(name, bare);
        if (trace_workload)
            fprintf(stderr, "== oracle search: %s\n", name);
        sim_matrix_oracle_search(&scn, job->seed, best, scores, trace_workload ? stderr : NULL);
        oracle_dump(name, scn.n_phases, scores);
    }
    if (sim_matrix_oracle_only()) {
        g_free(job);
        return;
    }
    opts = base;
    oracle = sim_scenario_run_opts(&scn, NULL, best, 1.0, job->seed, &opts);
    /*
     * POLLSIM_WRITE=TRIPLE@TICK, with POLLSIM_TRACE: the traced workloads
     * also run with no policy and TRIPLE written by hand at TICK, to see
     * whether a triple's outcome depends on when it is written.
     */
    if (trace_workload && g_getenv("POLLSIM_WRITE")) {
        g_auto(GStrv) w = g_strsplit(g_getenv("POLLSIM_WRITE"), "@", 2);
        PolicySpec obs = { .objective = POLICY_OBJECTIVE_BALANCED,
                           .kind = POLICY_KIND_OBSERVE };
        SimRunOpts wo = base;
        guint64 tick = 0;

        wo.trace = stderr;
        if (g_strv_length(w) == 2 && policy_triple_parse(w[0], &wo.operator_triple, NULL) &&
            g_ascii_string_to_unsigned(w[1], 10, 1, G_MAXUINT, &tick, NULL)) {
            g_autoptr(SimRun) r = NULL;

            wo.operator_tick = (guint)tick;
            fprintf(stderr, "== %s written at tick %u, then left alone\n", w[0],
                    wo.operator_tick);
            r = sim_scenario_run_opts(&scn, &obs, NULL, 1.0, job->seed, &wo);
        } else {
            fprintf(stderr, "pollsim: POLLSIM_WRITE=%s: not TRIPLE@TICK (TICK >= 1)\n",
                    g_getenv("POLLSIM_WRITE"));
        }
    }
    spec.kind = POLICY_KIND_OFF;
    opts = base;
    off = sim_scenario_run_opts(&scn, &spec, NULL, 1.0, job->seed, &opts);
    /* Never write: what the host has without polltune. */
    spec.kind = POLICY_KIND_OBSERVE;
    opts = base;
    never = sim_scenario_run_opts(&scn, &spec, NULL, 1.0, job->seed, &opts);
    spec.kind = POLICY_KIND_ADAPTIVE;
    {
        /*
         * An operator sets a triple of their own half way into the first
         * phase: the policy must leave it alone for the rest of the run
         * (the default hold is an hour).
         */
        g_autoptr(SimRun) a = NULL;

        opts = base;
        opts.operator_tick = scn.phase_s / 2;
        opts.operator_triple = OPERATOR_TRIPLE;
        a = sim_scenario_run_opts(&scn, &spec, NULL, 1.0, job->seed, &opts);
        for (guint n = 0; n < N_NOISE; n++)
            job->out[n].operator_overwrites = n == 0 ? (gint)a->operator_overwrites : -1;
    }
    tpp = never->n_ticks / scn.n_phases;
    bound = bound_path(&scn, job->seed, &base, tpp);
    for (guint n = 0; n < N_NOISE; n++) {
        SimMatrixCell *c = &job->out[n];
        g_autoptr(SimRun) a = NULL;
        g_autofree char *name = NULL;
        const char *trace = g_getenv("POLLSIM_TRACE");

        opts = base;
        opts.noise = noises[n];
        opts.noise_seed = job->seed * 0x2545f4914f6cdd1dull + n + 1;
        c->w = job->w;
        c->noise = noises[n];
        /* POLLSIM_TRACE=substring: the decisions of the cells whose name has it. */
        name = sim_matrix_cell_format(c);
        if (trace && strstr(name, trace)) {
            opts.trace = stderr;
            fprintf(stderr, "== %s\n", name);
        }
        a = sim_scenario_run_opts(&scn, &spec, NULL, 1.0, job->seed, &opts);
        c->n_phases = scn.n_phases;
        run_fill(c, SIM_MATRIX_ORACLE, oracle);
        run_fill(c, SIM_MATRIX_OFF, off);
        run_fill(c, SIM_MATRIX_NEVER_WRITE, never);
        run_fill(c, SIM_MATRIX_ADAPTIVE, a);
        c->score[SIM_MATRIX_BOUND] = bound;
    }
    g_free(job);
}

/*
 * The reduced grid of the test suite: shallow, middle and deep queues and
 * an open loop on a fast, a middle and a slow device on a dedicated host,
 * and the middle device again on a shared core with a phase change; for
 * the batching device class, QD1, QD16 and QD64 on the fast and the middle
 * device, dedicated host, steady (where polling wins at QD1 and loses at
 * depth); QD1 beside QD64 and QD1+QD16+QD64 on one iothread, nvme, the
 * fast and the middle device, dedicated host, steady.  About two minutes
 * of CPU.
 */
static gboolean
in_reduced(SimDeviceClass device, guint load, guint svc, gboolean shared, gboolean change)
{
    gboolean load_ok = load == 0 || load == 4 || load == 7 || load == G_N_ELEMENTS(loads_qd);

    if (load >= LOAD_MIX0)
        return device == SIM_DEVICE_NVME && (svc == 0 || svc == 2) && !shared && !change;
    if (device == SIM_DEVICE_BATCHING)
        return (load == 0 || load == 4 || load == 7) && (svc == 0 || svc == 2) && !shared &&
               !change;
    if (!load_ok || shared != change)
        return FALSE;
    return shared ? svc == 2 : (svc == 0 || svc == 2 || svc == 4);
}

/*
 * POLLSIM_ONLY=substring: only the workloads whose coordinates have it, to
 * look into one corner of the full grid without running all of it.  The
 * seeds are the grid's, so a cell gives the figures it gives in the grid.
 */
static gboolean
matrix_only(const SimMatrixWorkload *w)
{
    const char *only = g_getenv("POLLSIM_ONLY");
    SimMatrixCell c = { .w = *w };
    g_autofree char *name = NULL;

    if (!only)
        return TRUE;
    name = sim_matrix_cell_format(&c);
    return strstr(name, only) != NULL;
}

/*
 * POLLSIM_STARTS=default,boot: only the cells of these starts (names as in
 * the cell's "start=" coordinate), with the grid's seeds.  The test suite
 * runs the default start, where its floors were set, and the boot path every
 * VM takes; the operator's start stays in `pollsim --matrix`.  An unknown
 * name is refused, so a typo cannot shrink a run unseen.
 */
gboolean
sim_matrix_start_wanted(SimMatrixStart start)
{
    const char *list = g_getenv("POLLSIM_STARTS");
    g_auto(GStrv) names = NULL;
    gboolean wanted = FALSE;

    if (!list)
        return TRUE;
    names = g_strsplit(list, ",", -1);
    for (guint i = 0; names[i]; i++) {
        SimMatrixStart s = sim_matrix_start_from_string(g_strstrip(names[i]));

        if (s == SIM_START_INVALID) {
            fprintf(stderr, "POLLSIM_STARTS=\"%s\": \"%s\" is not a start (default, boot, "
                    "operator)\n", list, names[i]);
            exit(2);
        }
        wanted |= s == start;
    }
    return wanted;
}

/*
 * POLLSIM_SAMPLE=k: one workload in k, with the grid's seeds.  The sanitized
 * test build runs the reduced grid this way: the sanitizers see every kind
 * of cell (device class, disks, shared core, phase change, operator write)
 * at a quarter of the cost, and the figures' floors are held in the plain
 * build, where every cell runs.  Anything but a whole number from 1 to 64
 * is refused, so a typo cannot shrink a run unseen.
 */
guint
sim_matrix_sample_stride(void)
{
    return (guint)sim_env_unsigned("POLLSIM_SAMPLE", 1, 64, 1);
}

/*
 * Whether the @i-th workload (in grid order) is in a sample of one in @k.
 * Not every k-th: the reduced grid repeats its service times and hosts
 * every four workloads, so that sample would hold one service time on one
 * host.  The i-th block of k takes its (i mod k)-th workload instead.
 */
gboolean
sim_matrix_sampled(guint i, guint k)
{
    return i % k == (i / k) % k;
}

SimMatrixResult *
sim_matrix_run(gboolean full, SimQemuModel model, guint64 seed, guint n_threads)
{
    SimMatrixResult *r = g_new0(SimMatrixResult, 1);
    g_autoptr(GPtrArray) jobs = g_ptr_array_new();
    GThreadPool *pool;
    guint stride = sim_matrix_sample_stride();
    guint n_seen = 0;

    for (int start = 0; start < SIM_START_MAX; start++)
    for (int device = 0; device < SIM_DEVICE_MAX && sim_matrix_start_wanted(start); device++) {
        guint id = 0;

        for (guint load = 0; load < N_LOADS; load++)
            for (guint svc = 0; svc < N_SVC; svc++)
                for (guint host = 0; host < 2; host++)
                    for (guint change = 0; change < 2; change++) {
                        MatrixJob *job;

                        id++;
                        if (!full && !in_reduced(device, load, svc, host, change))
                            continue;
                        job = g_new0(MatrixJob, 1);
                        if (load >= LOAD_MIX0) {
                            guint k = load - LOAD_MIX0;

                            job->w.n_devices = mix_n[k];
                            for (guint d = 0; d < mix_n[k]; d++)
                                job->w.dev_qd[d] = mixes[k][d];
                        } else {
                            job->w.qd = load < G_N_ELEMENTS(loads_qd) ? loads_qd[load] : 0;
                            job->w.open_load =
                                job->w.qd ? 0 : loads_open[load - G_N_ELEMENTS(loads_qd)];
                        }
                        job->w.svc_us = svc_us_at(svc);
                        job->w.shared = host;
                        job->w.change = change;
                        job->w.qemu_model = model;
                        job->w.device = device;
                        job->w.start = start;
                        /*
                         * The cell's coordinates pick its seed: arrivals and
                         * jitter vary by cell.  Each device class after nvme
                         * is offset past every id of the grid, and each start
                         * after the default past every class, so the cells
                         * keep the seeds they had before the class and the
                         * start were dimensions.
                         */
                        job->seed = seed * 1000003ull + id + (guint64)device * DEVICE_SEED_OFFSET +
                                    (guint64)start * START_SEED_OFFSET;
                        if (!matrix_only(&job->w) || !sim_matrix_sampled(n_seen++, stride)) {
                            g_free(job);
                            continue;
                        }
                        g_ptr_array_add(jobs, job);
                    }
    }
    r->n_cells = jobs->len * N_NOISE;
    r->cells = g_new0(SimMatrixCell, r->n_cells);
    r->phase_s = sim_matrix_phase_s();
    if (!n_threads)
        n_threads = MAX(g_get_num_processors(), 1);
    pool = g_thread_pool_new(job_run, NULL, (gint)n_threads, TRUE, NULL);
    for (guint i = 0; i < jobs->len; i++) {
        MatrixJob *job = g_ptr_array_index(jobs, i);

        job->out = &r->cells[i * N_NOISE];
        g_thread_pool_push(pool, job, NULL);
    }
    g_thread_pool_free(pool, FALSE, TRUE);
    sim_matrix_summarise(r);
    return r;
}

