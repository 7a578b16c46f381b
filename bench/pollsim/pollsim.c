/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench/pollsim: calibrate the simulator against seed 004, run the scenario
 * suite against off, qemu-default and the oracle, and enforce the goals.
 *
 *   pollsim --calibrate        the seed 004 table and the many-handler rows, simulated
 *   pollsim --regimes          where polling wins and loses (device classes, handlers)
 *   pollsim --suite            every scenario, its table and its goals
 *   pollsim --suite --scenario S4 --scale 0.25
 *   pollsim --matrix           the reduced scenario matrix (sim-matrix.h)
 *   pollsim --matrix=full      the full matrix
 *   pollsim --lifetimes[=full] VM lifetimes and their goals (sim-lifetime.h)
 *   --qemu-model 7.2|10        the polling mechanism modelled (suite, matrix)
 * Exit status 1 when a calibration row or a goal fails, unless
 * PT_BENCH_SMOKE is set: a run at a tiny size that checks the program still
 * runs, where goals may miss for want of time and the verdicts are only
 * printed.
 */
#include <math.h>
#include <stdio.h>

#include "sim-calib.h"
#include "sim-goals.h"
#include "sim-lifetime.h"
#include "sim-matrix.h"

/* --matrix and --lifetimes take an optional value: "reduced" (the default) or "full". */
static char *matrix_arg, *lifetimes_arg;

/* The exit status for goals that passed or not (see the top). */
static int
goals_status(gboolean pass)
{
    if (pass)
        return 0;
    if (g_getenv("PT_BENCH_SMOKE")) {
        printf("pollsim: a goal missed; PT_BENCH_SMOKE is set, so this run does not fail\n");
        return 0;
    }
    return 1;
}

static gboolean
matrix_option(const char *name, const char *value, gpointer data G_GNUC_UNUSED,
              GError **error)
{
    char **arg = g_str_equal(name, "--lifetimes") ? &lifetimes_arg : &matrix_arg;

    if (value && !g_str_equal(value, "full") && !g_str_equal(value, "reduced")) {
        g_set_error(error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE,
                    "%s=%s: expected \"full\" or \"reduced\"", name, value);
        return FALSE;
    }
    g_free(*arg);
    *arg = g_strdup(value ? value : "reduced");
    return TRUE;
}

/* Rows with a tolerance must hold; the others are printed with their error. */
static gboolean
calibrate_source(const SimCalibSource *src)
{
    gboolean ok = TRUE;

    printf("\n%s (%s), host speed %.2f, device %.1f us\n\n", src->name, src->citation,
           src->host_speed, src->service.a / 1000);
    printf("| row | measured | sim | err | held to |\n|---|---:|---:|---:|---:|\n");
    for (guint i = 0; i < src->n_rows; i++) {
        const SimCalibRow2 *r = &src->rows[i];
        double got = sim_calib_source_iops(src, r, 1e9, 1), e = got / r->iops - 1;
        g_autofree char *held = r->tolerance > 0 ? g_strdup_printf("+-%.0f%%", 100 * r->tolerance)
                                                 : g_strdup("not fitted");

        if (r->tolerance > 0)
            ok &= fabs(e) <= r->tolerance;
        printf("| %s | %.0f | %.0f | %+.1f%% | %s |\n", r->what, r->iops, got, 100 * e, held);
    }
    printf("calibration: %s: %s\n", src->name, ok ? "PASS" : "FAIL");
    return ok;
}

static gboolean
calibrate(void)
{
    gboolean ok = TRUE;

    printf("| poll-max-ns | QD1 seed | QD1 sim | err | QD32 seed | QD32 sim | err |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < sim_calib_n_rows; i++) {
        const SimCalibRow *r = &sim_calib_table[i];
        double q1 = sim_calib_iops(r->poll_max_ns, 1, 1e9, 1);
        double q32 = sim_calib_iops(r->poll_max_ns, 32, 1e9, 1);
        double e1 = q1 / r->iops_qd1 - 1, e32 = q32 / r->iops_qd32 - 1;

        ok &= fabs(e1) <= 0.10 && fabs(e32) <= 0.10;
        printf("| %" G_GUINT64_FORMAT " | %.0f | %.0f | %+.1f%% | %.0f | %.0f | %+.1f%% |\n",
               r->poll_max_ns, r->iops_qd1, q1, 100 * e1, r->iops_qd32, q32, 100 * e32);
    }
    printf("calibration: %s (every row within +-10%%)\n", ok ? "PASS" : "FAIL");
    ok &= calibrate_source(&sim_calib_many_handlers);
    return ok;
}

/*
 * Where polling wins and where it loses: IOPS under off, QEMU's default
 * triple and a wide fixed window, per device class and queue depth, and
 * at QD1 against the number of idle poll handlers on the iothread.
 */
static void
regimes(SimQemuModel model)
{
    static const guint qds[] = { 1, 2, 4, 8, 16, 32, 48, 64, 128 };
    static const guint idle[] = { 0, 30, 300, 1000, 3200 };
    const PolicyTriple off = { 0, 0, 0 }, def = POLICY_TRIPLE_QEMU_DEFAULT, wide = { 262144, 0, 0 };

    printf("QEMU %s, NVMe latency; IOPS, and polling against off\n\n",
           sim_qemu_model_to_string(model));
    printf("| device | QD | off | qemu-default | vs off | 262144 | vs off |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (int c = 0; c < SIM_DEVICE_MAX; c++) {
        for (guint i = 0; i < G_N_ELEMENTS(qds); i++) {
            SimWorkload w = sim_calib_workload(qds[i]);
            double o, d, p;

            sim_workload_set_device_class(&w, c);
            o = sim_workload_iops(&w, &off, model, 500e6, 1);
            d = sim_workload_iops(&w, &def, model, 500e6, 1);
            p = sim_workload_iops(&w, &wide, model, 500e6, 1);
            printf("| %s | %u | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% |\n",
                   sim_device_class_to_string(c), qds[i], o, d, 100 * (d / o - 1), p,
                   100 * (p / o - 1));
        }
    }
    printf("\n| idle handlers | QD | off | qemu-default | vs off | 262144 | vs off |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < G_N_ELEMENTS(idle); i++) {
        SimWorkload w = sim_calib_workload(1);
        double o, d, p;

        w.idle_handlers = idle[i];
        o = sim_workload_iops(&w, &off, model, 500e6, 1);
        d = sim_workload_iops(&w, &def, model, 500e6, 1);
        p = sim_workload_iops(&w, &wide, model, 500e6, 1);
        printf("| %u | 1 | %.0f | %.0f | %+.1f%% | %.0f | %+.1f%% |\n", idle[i], o, d,
               100 * (d / o - 1), p, 100 * (p / o - 1));
    }
}

static void
print_run(const SimScenario *scn, const SimRun *r, const SimRun *off)
{
    printf("| %s | %s | %.0f | %+.1f%% | %.1f | %.1f | %.2f | %.0f | %.3f | %u |\n", scn->name,
           r->label, r->iops, 100 * (r->iops / MAX(off->iops, 1e-9) - 1), r->lat_mean_us,
           r->lat_p99_us, r->poll_core_s, r->exits_per_s, r->vcpu_cores, r->n_writes);
}

int
main(int argc, char **argv)
{
    gboolean do_calibrate = FALSE, do_suite = FALSE, do_regimes = FALSE;
    g_autofree char *only = NULL;
    double scale = 1.0;
    gint64 seed = 1;
    gint threads = 0;
    g_autofree char *model_s = NULL;
    SimQemuModel model = SIM_QEMU_7_2;
    GOptionEntry entries[] = {
        { "calibrate", 0, 0, G_OPTION_ARG_NONE, &do_calibrate, "Reproduce seed 004's table", NULL },
        { "suite", 0, 0, G_OPTION_ARG_NONE, &do_suite, "Run the scenario suite and its goals", NULL },
        { "regimes", 0, 0, G_OPTION_ARG_NONE, &do_regimes,
          "Where polling wins and loses: device classes by depth, idle handlers", NULL },
        { "scenario", 0, 0, G_OPTION_ARG_STRING, &only, "Only this scenario (S1..S8)", "NAME" },
        { "scale", 0, 0, G_OPTION_ARG_DOUBLE, &scale, "Shorten phases by this factor", "X" },
        { "seed", 0, 0, G_OPTION_ARG_INT64, &seed, "PRNG seed", "N" },
        { "matrix", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, matrix_option,
          "Run the scenario matrix and its goals (reduced grid, or =full)", "full" },
        { "lifetimes", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, matrix_option,
          "Run VM lifetimes and print their goals (reduced, or =full)", "full" },
        { "threads", 0, 0, G_OPTION_ARG_INT, &threads,
          "Matrix cells or lifetimes run at once (0: one per CPU)", "N" },
        { "qemu-model", 0, 0, G_OPTION_ARG_STRING, &model_s,
          "QEMU polling mechanism: 7.2 (one window) or 10 (per-handler windows)", "7.2|10" },
        { NULL },
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- QEMU iothread polling simulator");
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) goals = g_ptr_array_new_with_free_func((GDestroyNotify)sim_goal_free);
    gboolean ok = TRUE;
    guint failed = 0;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &error)) {
        fprintf(stderr, "pollsim: %s\n", error->message);
        return 2;
    }
    if (model_s && !sim_qemu_model_parse(model_s, &model)) {
        fprintf(stderr, "pollsim: --qemu-model %s: expected 7.2 or 10\n", model_s);
        return 2;
    }
    if ((matrix_arg || lifetimes_arg) && threads < 0) {
        fprintf(stderr, "pollsim: --threads must be >= 0\n");
        return 2;
    }
    if (lifetimes_arg) {
        /* The goals are printed, not held: the policy does not learn yet. */
        SimLifetimeParams p = sim_lifetime_params(g_str_equal(lifetimes_arg, "full"), model,
                                                  (guint64)seed, (guint)threads);
        g_autoptr(SimLifetimeResult) r = sim_lifetime_run(&p);

        sim_lifetime_print(r, stdout);
        g_clear_pointer(&lifetimes_arg, g_free);
        return 0;
    }
    if (matrix_arg) {
        g_autoptr(SimMatrixResult) m = NULL;

        m = sim_matrix_run(g_str_equal(matrix_arg, "full"), model, (guint64)seed, (guint)threads);
        if (!m->n_cells) {
            fprintf(stderr, "pollsim: POLLSIM_ONLY=\"%s\" matches no workload of the %s grid\n",
                    g_getenv("POLLSIM_ONLY"), matrix_arg);
            g_clear_pointer(&matrix_arg, g_free);
            return 2;
        }
        if (sim_matrix_oracle_only()) {
            printf("pollsim: the %s grid's oracle search is in %s; no policy ran\n",
                   matrix_arg, g_getenv("POLLSIM_ORACLE"));
            g_clear_pointer(&matrix_arg, g_free);
            return 0;
        }
        sim_matrix_print(m, stdout);
        g_clear_pointer(&matrix_arg, g_free);
        return goals_status(sim_matrix_goals_pass(m));
    }
    if (do_regimes) {
        regimes(model);
        return 0;
    }
    if (!do_calibrate && !do_suite)
        do_suite = TRUE;
    if (scale <= 0 || scale > 1) {
        fprintf(stderr, "pollsim: --scale must be in (0, 1]\n");
        return 2;
    }
    if (do_calibrate)
        ok &= calibrate();
    if (!do_suite)
        return goals_status(ok);

    printf("\n| scenario | policy | IOPS | vs off | mean lat us | p99 lat us | "
           "polling core-s | exits/s | vCPU app cores | writes |\n");
    printf("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < sim_n_scenarios; i++) {
        SimScenario one = sim_scenarios[i];
        const SimScenario *scn = &one;
        g_autoptr(SimResult) r = NULL;

        if (only && g_ascii_strcasecmp(only, scn->name) != 0)
            continue;
        one.qemu_model = model;
        r = sim_result_run(scn, scale, (guint64)seed);
        print_run(scn, r->off, r->off);
        print_run(scn, r->qemu_default, r->off);
        print_run(scn, r->oracle, r->off);
        print_run(scn, r->adaptive, r->off);
        fflush(stdout);
        sim_goals_check(scn, r, scale, goals);
    }
    printf("\n| scenario | goal | result | numbers |\n|---|---|---|---|\n");
    for (guint i = 0; i < goals->len; i++) {
        const SimGoal *g = g_ptr_array_index(goals, i);

        failed += !g->pass;
        printf("| %s | %s | %s | %s |\n", g->scenario, g->goal, g->pass ? "PASS" : "FAIL",
               g->detail);
    }
    printf("\ngoals: %u of %u pass\n", goals->len - failed, goals->len);
    return goals_status(ok && failed == 0);
}
