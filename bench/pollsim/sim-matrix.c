/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix: see sim-matrix.h.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "sim-calib.h"
#include "sim-matrix.h"

/*
 * Thirty 1 s ticks per phase: long enough that an exploration of a few
 * ticks costs a few percent at most, short enough for the full grid to run
 * in well under an hour on one core.
 */
#define PHASE_S 30
/* An operator's own choice, unlike anything the policy writes. */
#define OPERATOR_TRIPLE ((PolicyTriple){ 50000, 0, 0 })
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

static const PolicyTriple oracle_grid[] = {
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

    return g_strdup_printf("%s svc=%.0fus dev=%s host=%s %s noise=%.0f%% qemu=%s", load,
                           c->w.svc_us, sim_device_class_to_string(c->w.device), c->w.shared ? "shared" : "dedicated",
                           c->w.change ? "phase-change" : "steady", 100 * c->noise,
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

static void
scenario_of(const SimMatrixWorkload *mw, SimScenario *scn)
{
    *scn = (SimScenario){
        .name = "matrix",
        .what = "generated cell",
        .n_cores = mw->shared ? 1 : 4,
        .n_phases = mw->change ? 2 : 1,
        .phase_s = PHASE_S,
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
 * The balanced objective over ticks [from, to): ln(mean IOPS) - 0.10 x
 * whole-VM cores (iothread CPU plus the vCPU time of the exits), with the
 * policy's default judgements.  With several disks the IOPS term is the
 * policy's per-disk-fair one, the mean of ln(1 + mean disk IOPS), for the
 * oracle and the baselines as for adaptive.
 */
static double
run_score(const SimRun *r, guint from, guint to)
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
        c->score[p] += run_score(r, ph * tpp, (ph + 1) * tpp) / c->n_phases;
        c->writes[p][ph] = 0;
        for (guint t = ph * tpp; t < (ph + 1) * tpp; t++)
            c->writes[p][ph] += r->ticks[t].writes;
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
            double scores[SIM_MAX_PHASES][G_N_ELEMENTS(oracle_grid)])
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

static void
oracle_search(const SimScenario *scn, guint64 seed, PolicyTriple out[SIM_MAX_PHASES],
              double scores[SIM_MAX_PHASES][G_N_ELEMENTS(oracle_grid)], FILE *trace)
{
    for (guint p = 0; p < scn->n_phases; p++) {
        SimScenario one = *scn;
        double best = -G_MAXDOUBLE;

        one.n_phases = 1;
        one.phase_s = ORACLE_S;
        one.groups[0].phase[0] = scn->groups[0].phase[p];
        for (guint k = 0; k < G_N_ELEMENTS(oracle_grid); k++) {
            g_autoptr(SimRun) r = sim_scenario_run(&one, NULL, &oracle_grid[k], 1.0, seed);
            double s = run_score(r, 1, r->n_ticks);

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

static void
job_run(gpointer data, gpointer user_data G_GNUC_UNUSED)
{
    MatrixJob *job = data;
    SimScenario scn;
    PolicyTriple best[SIM_MAX_PHASES];
    double scores[SIM_MAX_PHASES][G_N_ELEMENTS(oracle_grid)];
    PolicySpec spec = { .objective = POLICY_OBJECTIVE_BALANCED };
    g_autoptr(SimRun) off = NULL, def = NULL, oracle = NULL;
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
        oracle_search(&scn, job->seed, best, scores, trace_workload ? stderr : NULL);
        oracle_dump(name, scn.n_phases, scores);
    }
    if (sim_matrix_oracle_only()) {
        g_free(job);
        return;
    }
    oracle = sim_scenario_run(&scn, NULL, best, 1.0, job->seed);
    /*
     * POLLSIM_WRITE=TRIPLE@TICK, with POLLSIM_TRACE: the traced workloads
     * also run under qemu-default with TRIPLE written by hand at TICK, to
     * see whether a triple's outcome depends on when it is written.
     */
    if (trace_workload && g_getenv("POLLSIM_WRITE")) {
        g_auto(GStrv) w = g_strsplit(g_getenv("POLLSIM_WRITE"), "@", 2);
        PolicySpec qd = { .objective = POLICY_OBJECTIVE_BALANCED,
                          .kind = POLICY_KIND_QEMU_DEFAULT };
        SimRunOpts wo = { .trace = stderr };
        guint64 tick = 0;

        if (g_strv_length(w) == 2 && policy_triple_parse(w[0], &wo.operator_triple, NULL) &&
            g_ascii_string_to_unsigned(w[1], 10, 1, G_MAXUINT, &tick, NULL)) {
            g_autoptr(SimRun) r = NULL;

            wo.operator_tick = (guint)tick;
            fprintf(stderr, "== %s written at tick %u, then left alone\n", w[0],
                    wo.operator_tick);
            r = sim_scenario_run_opts(&scn, &qd, NULL, 1.0, job->seed, &wo);
        } else {
            fprintf(stderr, "pollsim: POLLSIM_WRITE=%s: not TRIPLE@TICK (TICK >= 1)\n",
                    g_getenv("POLLSIM_WRITE"));
        }
    }
    spec.kind = POLICY_KIND_OFF;
    off = sim_scenario_run(&scn, &spec, NULL, 1.0, job->seed);
    spec.kind = POLICY_KIND_QEMU_DEFAULT;
    def = sim_scenario_run(&scn, &spec, NULL, 1.0, job->seed);
    spec.kind = POLICY_KIND_ADAPTIVE;
    {
        /*
         * An operator sets a triple of their own half way into the first
         * phase: the policy must leave it alone for the rest of the run
         * (the default hold is an hour).
         */
        SimRunOpts opts = { .operator_tick = PHASE_S / 2,
                            .operator_triple = OPERATOR_TRIPLE };
        g_autoptr(SimRun) a = sim_scenario_run_opts(&scn, &spec, NULL, 1.0, job->seed, &opts);

        for (guint n = 0; n < N_NOISE; n++)
            job->out[n].operator_overwrites = n == 0 ? (gint)a->operator_overwrites : -1;
    }
    for (guint n = 0; n < N_NOISE; n++) {
        SimMatrixCell *c = &job->out[n];
        SimRunOpts opts = { noises[n], job->seed * 0x2545f4914f6cdd1dull + n + 1 };
        g_autoptr(SimRun) a = NULL;
        g_autofree char *name = NULL;
        const char *trace = g_getenv("POLLSIM_TRACE");

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
        run_fill(c, SIM_MATRIX_QEMU_DEFAULT, def);
        run_fill(c, SIM_MATRIX_ADAPTIVE, a);
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

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

/* The q-quantile (nearest rank) of @v[@n]; sorts @v. */
static double
quantile(double *v, guint n, double q)
{
    guint k;

    if (!n)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    k = (guint)ceil(q * n);
    return v[MIN(MAX(k, 1), n) - 1];
}

/* Writes per workload change of policy @p, over cells at @noise (< 0: all). */
static double
writes_quantile(const SimMatrixResult *r, SimMatrixPolicy p, double noise, double q)
{
    g_autofree double *v = g_new(double, 2 * r->n_cells + 1);
    guint n = 0;

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];

        if (noise >= 0 && fabs(c->noise - noise) > 1e-9)
            continue;
        for (guint ph = 0; ph < c->n_phases; ph++)
            v[n++] = c->writes[p][ph];
    }
    return quantile(v, n, q);
}

static void
goals_judge(SimMatrixResult *r)
{
    static const SimMatrixPolicy judged[] = { SIM_MATRIX_ADAPTIVE, SIM_MATRIX_OFF,
                                              SIM_MATRIX_QEMU_DEFAULT };
    SimMatrixGoal *g = r->goals;
    double mean[SIM_MATRIX_N_POLICIES] = { 0 };
    guint within[SIM_MATRIX_N_POLICIES] = { 0 }, below[SIM_MATRIX_N_POLICIES] = { 0 };
    double worst_vs_trivial = G_MAXDOUBLE;

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];
        double trivial = MAX(c->score[SIM_MATRIX_OFF], c->score[SIM_MATRIX_QEMU_DEFAULT]);

        for (guint k = 0; k < G_N_ELEMENTS(judged); k++) {
            SimMatrixPolicy p = judged[k];

            mean[p] += c->score[p] / r->n_cells;
            within[p] += sim_matrix_cell_ratio(c, p) >= 0.97;
            below[p] += exp(c->score[p] - trivial) < 0.97;
        }
        worst_vs_trivial = MIN(worst_vs_trivial, exp(c->score[SIM_MATRIX_ADAPTIVE] - trivial));
    }
    g[0].name = ">= 95% of cells within 3% of the oracle";
    g[1].name = "no cell > 3% below the better trivial baseline";
    g[2].name = "beats both trivial baselines in aggregate";
    g[3].name = "p95 writes per workload change <= 3 at +-50% noise";
    for (guint k = 0; k < G_N_ELEMENTS(judged); k++) {
        SimMatrixPolicy p = judged[k];

        g[0].pass[p] = within[p] >= 0.95 * r->n_cells;
        g[1].pass[p] = below[p] == 0;
        /* A trivial policy cannot beat itself: it fails goal 3 by definition. */
        g[2].pass[p] = p == SIM_MATRIX_ADAPTIVE &&
                       mean[p] > mean[SIM_MATRIX_OFF] && mean[p] > mean[SIM_MATRIX_QEMU_DEFAULT];
        g[3].pass[p] = writes_quantile(r, p, 0.5, 0.95) <= 3;
    }
    g_snprintf(g[0].detail, sizeof(g[0].detail), "adaptive %.1f%%, off %.1f%%, qemu-default %.1f%%",
               100.0 * within[0] / r->n_cells, 100.0 * within[1] / r->n_cells,
               100.0 * within[2] / r->n_cells);
    g_snprintf(g[1].detail, sizeof(g[1].detail),
               "cells below: adaptive %u (worst %.1f%% of the better baseline), off %u, "
               "qemu-default %u", below[0], 100 * worst_vs_trivial, below[1], below[2]);
    g_snprintf(g[3].detail, sizeof(g[3].detail), "p95 at +-50%%: adaptive %.0f, off %.0f, "
               "qemu-default %.0f", writes_quantile(r, 0, 0.5, 0.95),
               writes_quantile(r, 1, 0.5, 0.95), writes_quantile(r, 2, 0.5, 0.95));
    for (guint i = 0; i < r->n_cells; i++)
        mean[SIM_MATRIX_ORACLE] += r->cells[i].score[SIM_MATRIX_ORACLE] / r->n_cells;
    g_snprintf(g[2].detail, sizeof(g[2].detail),
               "mean objective: adaptive %.4f, off %.4f, qemu-default %.4f, oracle %.4f",
               mean[0], mean[1], mean[2], mean[SIM_MATRIX_ORACLE]);
}

static void
summarise(SimMatrixResult *r)
{
    g_autofree double *ratios = g_new(double, r->n_cells + 1);
    double poll_a = 0, poll_d = 0;
    guint within = 0;

    r->worst_ratio = G_MAXDOUBLE;
    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];
        double x = sim_matrix_cell_ratio(c, SIM_MATRIX_ADAPTIVE);

        ratios[i] = x;
        within += x >= 0.97;
        if (x < r->worst_ratio) {
            r->worst_ratio = x;
            r->worst_cell = i;
        }
        poll_a += c->poll_core_s[SIM_MATRIX_ADAPTIVE];
        if (c->operator_overwrites >= 0) {
            r->operator_runs++;
            r->operator_overwritten += c->operator_overwrites > 0;
        }
        poll_d += c->poll_core_s[SIM_MATRIX_QEMU_DEFAULT];
    }
    r->share_within = r->n_cells ? (double)within / r->n_cells : 0;
    r->p5_ratio = quantile(ratios, r->n_cells, 0.05);
    r->writes_median = writes_quantile(r, SIM_MATRIX_ADAPTIVE, -1, 0.5);
    r->writes_p95 = writes_quantile(r, SIM_MATRIX_ADAPTIVE, -1, 0.95);
    r->writes_p95_noise50 = writes_quantile(r, SIM_MATRIX_ADAPTIVE, 0.5, 0.95);
    r->poll_vs_default = poll_d > 0 ? poll_a / poll_d : 0;
    goals_judge(r);
}

SimMatrixResult *
sim_matrix_run(gboolean full, SimQemuModel model, guint64 seed, guint n_threads)
{
    SimMatrixResult *r = g_new0(SimMatrixResult, 1);
    g_autoptr(GPtrArray) jobs = g_ptr_array_new();
    GThreadPool *pool;
    guint stride = sim_matrix_sample_stride();
    guint n_seen = 0;

    for (int device = 0; device < SIM_DEVICE_MAX; device++) {
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
                        /*
                         * The cell's coordinates pick its seed: arrivals and
                         * jitter vary by cell.  Each device class after nvme
                         * is offset past every id of the grid, so nvme cells
                         * keep the seeds they had before the class was a
                         * dimension.
                         */
                        job->seed = seed * 1000003ull + id + (guint64)device * DEVICE_SEED_OFFSET;
                        if (!matrix_only(&job->w) || !sim_matrix_sampled(n_seen++, stride)) {
                            g_free(job);
                            continue;
                        }
                        g_ptr_array_add(jobs, job);
                    }
    }
    r->n_cells = jobs->len * N_NOISE;
    r->cells = g_new0(SimMatrixCell, r->n_cells);
    if (!n_threads)
        n_threads = MAX(g_get_num_processors(), 1);
    pool = g_thread_pool_new(job_run, NULL, (gint)n_threads, TRUE, NULL);
    for (guint i = 0; i < jobs->len; i++) {
        MatrixJob *job = g_ptr_array_index(jobs, i);

        job->out = &r->cells[i * N_NOISE];
        g_thread_pool_push(pool, job, NULL);
    }
    g_thread_pool_free(pool, FALSE, TRUE);
    summarise(r);
    return r;
}

gboolean
sim_matrix_goals_pass(const SimMatrixResult *r)
{
    for (guint k = 0; k < SIM_MATRIX_N_GOALS; k++)
        if (!r->goals[k].pass[SIM_MATRIX_ADAPTIVE])
            return FALSE;
    return TRUE;
}

/* Adaptive's figures over the cells that @keep selects. */
static void
print_slice(const SimMatrixResult *r, FILE *out, const char *label,
            gboolean (*keep)(const SimMatrixCell *c, double arg), double arg)
{
    g_autofree double *v = g_new(double, r->n_cells + 1);
    guint n = 0, within = 0;
    double worst = G_MAXDOUBLE;

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];
        double x = sim_matrix_cell_ratio(c, SIM_MATRIX_ADAPTIVE);

        if (!keep(c, arg))
            continue;
        v[n++] = x;
        within += x >= 0.97;
        worst = MIN(worst, x);
    }
    if (!n)
        return;
    fprintf(out, "| %s | %u | %.1f%% | %.1f%% | %.1f%% |\n", label, n, 100.0 * within / n,
            100 * quantile(v, n, 0.05), 100 * worst);
}

/*
 * On a shared core the guest's CPU-bound app gets what the vCPU is not
 * spending on exits and the iothread leaves over: what the contention guard
 * protects when it cuts polling, and what the objective (I/O and whole-VM
 * CPU) does not count.  Printed beside the objective so that the cells the
 * guard loses show what they bought.
 */
static void
print_app_cores(const SimMatrixResult *r, FILE *out)
{
    double sum[SIM_MATRIX_N_POLICIES] = { 0 };
    guint n = 0;

    for (guint i = 0; i < r->n_cells; i++) {
        if (!r->cells[i].w.shared)
            continue;
        n++;
        for (guint p = 0; p < SIM_MATRIX_N_POLICIES; p++)
            sum[p] += r->cells[i].app_cores[p];
    }
    if (!n)
        return;
    fprintf(out, "\nshared core: %u cells, guest app cores (mean): adaptive %.3f, off %.3f, "
                 "qemu-default %.3f, oracle %.3f\n", n, sum[SIM_MATRIX_ADAPTIVE] / n,
            sum[SIM_MATRIX_OFF] / n, sum[SIM_MATRIX_QEMU_DEFAULT] / n, sum[SIM_MATRIX_ORACLE] / n);
}

static gboolean
keep_noise(const SimMatrixCell *c, double arg)
{
    return fabs(c->noise - arg) < 1e-9;
}

/* One disk at depth @arg (0: open loop). */
static gboolean
keep_qd(const SimMatrixCell *c, double arg)
{
    return c->w.n_devices < 2 && c->w.qd == (guint)arg;
}

static gboolean
keep_n_devices(const SimMatrixCell *c, double arg)
{
    return c->w.n_devices == (guint)arg;
}

static gboolean
keep_svc(const SimMatrixCell *c, double arg)
{
    return fabs(c->w.svc_us - arg) < 1e-6;
}

static gboolean
keep_device(const SimMatrixCell *c, double arg)
{
    return c->w.device == (SimDeviceClass)arg;
}

static gboolean
keep_host(const SimMatrixCell *c, double arg)
{
    return c->w.shared == (arg > 0);
}

static gboolean
keep_change(const SimMatrixCell *c, double arg)
{
    return c->w.change == (arg > 0);
}

void
sim_matrix_print(const SimMatrixResult *r, FILE *out)
{
    g_autofree char *worst = r->n_cells ? sim_matrix_cell_format(&r->cells[r->worst_cell]) : NULL;
    guint *idx = g_new(guint, r->n_cells + 1);
    /* POLLSIM_CELLS=1: every cell, worst first, instead of the ten worst. */
    guint n_show = MIN(g_getenv("POLLSIM_CELLS") ? r->n_cells : 10, r->n_cells);

    fprintf(out, "| slice | cells | within 3%% of oracle | p5 | worst |\n|---|---:|---:|---:|---:|\n");
    for (guint n = 0; n < N_NOISE; n++) {
        g_autofree char *l = g_strdup_printf("noise +-%.0f%%", 100 * noises[n]);
        print_slice(r, out, l, keep_noise, noises[n]);
    }
    for (guint q = 0; q < G_N_ELEMENTS(loads_qd); q++) {
        g_autofree char *l = g_strdup_printf("closed QD%u", loads_qd[q]);
        print_slice(r, out, l, keep_qd, loads_qd[q]);
    }
    print_slice(r, out, "open loop", keep_qd, 0);
    for (guint k = 0; k < G_N_ELEMENTS(mixes); k++) {
        g_autofree char *l = g_strdup_printf("%u disks on one iothread", mix_n[k]);
        print_slice(r, out, l, keep_n_devices, mix_n[k]);
    }
    for (guint s = 0; s < N_SVC; s++) {
        g_autofree char *l = g_strdup_printf("service %.0f us", svc_us_at(s));
        print_slice(r, out, l, keep_svc, svc_us_at(s));
    }
    for (int d = 0; d < SIM_DEVICE_MAX; d++) {
        g_autofree char *l = g_strdup_printf("device %s", sim_device_class_to_string(d));
        print_slice(r, out, l, keep_device, d);
    }
    print_slice(r, out, "dedicated cores", keep_host, 0);
    print_slice(r, out, "shared core", keep_host, 1);
    print_slice(r, out, "steady", keep_change, 0);
    print_slice(r, out, "phase change", keep_change, 1);

    /* The worst cells (n_show of them), where the policy still loses. */
    for (guint i = 0; i < r->n_cells; i++)
        idx[i] = i;
    for (guint i = 0; i < n_show; i++)
        for (guint j = i + 1; j < r->n_cells; j++)
            if (sim_matrix_cell_ratio(&r->cells[idx[j]], SIM_MATRIX_ADAPTIVE) <
                sim_matrix_cell_ratio(&r->cells[idx[i]], SIM_MATRIX_ADAPTIVE)) {
                guint t = idx[i];
                idx[i] = idx[j];
                idx[j] = t;
            }
    fprintf(out, "\n| worst cells | adaptive | off | qemu-default | adaptive writes "
                 "| guest app cores: adaptive / qemu-default |\n"
                 "|---|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < n_show; i++) {
        const SimMatrixCell *c = &r->cells[idx[i]];
        g_autofree char *co = sim_matrix_cell_format(c);
        g_autofree char *app = c->w.shared
            ? g_strdup_printf("%.3f / %.3f", c->app_cores[SIM_MATRIX_ADAPTIVE],
                              c->app_cores[SIM_MATRIX_QEMU_DEFAULT])
            : g_strdup("-");

        fprintf(out, "| %s | %.1f%% | %.1f%% | %.1f%% | %u | %s |\n", co,
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_ADAPTIVE),
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_OFF),
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_QEMU_DEFAULT),
                c->writes[SIM_MATRIX_ADAPTIVE][0] + (c->n_phases > 1 ? c->writes[SIM_MATRIX_ADAPTIVE][1] : 0),
                app);
    }
    g_free(idx);

    fprintf(out, "\nadaptive: %.1f%% of cells within 3%% of the oracle, p5 %.1f%%, worst %.1f%%; "
                 "writes per workload change median %.0f, p95 %.0f (p95 at +-50%% noise %.0f); "
                 "polling CPU %.2fx qemu-default's\n",
            100 * r->share_within, 100 * r->p5_ratio, 100 * r->worst_ratio, r->writes_median,
            r->writes_p95, r->writes_p95_noise50, r->poll_vs_default);
    fprintf(out, "\noperator writes: %u runs, %u where the policy wrote over the operator's "
                 "triple within its hold\n", r->operator_runs, r->operator_overwritten);
    print_app_cores(r, out);
    fprintf(out, "\n| goal | adaptive | also met by off | also met by qemu-default | numbers |\n"
                 "|---|---|---|---|---|\n");
    for (guint k = 0; k < SIM_MATRIX_N_GOALS; k++) {
        const SimMatrixGoal *g = &r->goals[k];

        fprintf(out, "| %s | %s | %s | %s | %s |\n", g->name,
                g->pass[SIM_MATRIX_ADAPTIVE] ? "PASS" : "FAIL",
                g->pass[SIM_MATRIX_OFF] ? "yes" : "no",
                g->pass[SIM_MATRIX_QEMU_DEFAULT] ? "yes" : "no", g->detail);
    }
    fprintf(out, "\nmatrix: %u cells, %.1f%% within 3%% of oracle, worst %.1f%% at (%s), "
                 "p95 writes per change %.0f\n",
            r->n_cells, 100 * r->share_within, 100 * r->worst_ratio, worst ? worst : "none",
            r->writes_p95_noise50);
}
