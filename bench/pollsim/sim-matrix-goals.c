/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-matrix-goals: the matrix's goals, judged for adaptive and for the
 * trivial policies, and its tables.  See sim-matrix.h.
 */
#include <math.h>
#include <stdlib.h>

#include "sim-matrix-private.h"

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

/* exp(@p's score - never-write's): below 0.97 the cell is harmed. */
static double
vs_never(const SimMatrixCell *c, SimMatrixPolicy p)
{
    return exp(c->score[p] - c->score[SIM_MATRIX_NEVER_WRITE]);
}

/* The most writes policy @p made in one phase of a cell, any noise. */
static guint
writes_max(const SimMatrixResult *r, SimMatrixPolicy p)
{
    guint most = 0;

    for (guint i = 0; i < r->n_cells; i++)
        for (guint ph = 0; ph < r->cells[i].n_phases; ph++)
            most = MAX(most, r->cells[i].writes[p][ph]);
    return most;
}

/* Policy @p's writes after the explorations, summed over the cells. */
static guint
writes_steady(const SimMatrixResult *r, SimMatrixPolicy p)
{
    guint n = 0;

    for (guint i = 0; i < r->n_cells; i++)
        for (guint ph = 0; ph < r->cells[i].n_phases; ph++)
            n += r->cells[i].steady_writes[p][ph];
    return n;
}

/*
 * The goals' figures for each judged policy.  The gain is the oracle's
 * over never-write, in objective units, summed over the cells where it is
 * more than 3%; the CPU is never-write's polling CPU that a policy saves,
 * over the cells where off is within 0.5% of the oracle (polling cannot
 * pay there).
 */
static void
goals_measure(SimMatrixResult *r)
{
    static const SimMatrixPolicy judged[] = { SIM_MATRIX_ADAPTIVE, SIM_MATRIX_OFF,
                                              SIM_MATRIX_NEVER_WRITE };
    double gain = 0, got[SIM_MATRIX_N_POLICIES] = { 0 };
    double cpu = 0, saved[SIM_MATRIX_N_POLICIES] = { 0 };
    guint near_bound[SIM_MATRIX_N_POLICIES] = { 0 };

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];
        double o_gain = c->score[SIM_MATRIX_ORACLE] - c->score[SIM_MATRIX_NEVER_WRITE];
        gboolean gains = exp(o_gain) > 1.03;
        gboolean cannot_pay = exp(c->score[SIM_MATRIX_ORACLE] - c->score[SIM_MATRIX_OFF]) < 1.005;

        r->gain_cells += gains;
        gain += gains ? o_gain : 0;
        r->cpu_cells += cannot_pay;
        cpu += cannot_pay ? c->poll_core_s[SIM_MATRIX_NEVER_WRITE] : 0;
        for (guint k = 0; k < G_N_ELEMENTS(judged); k++) {
            SimMatrixPolicy p = judged[k];
            gboolean harmed = vs_never(c, p) < 0.97;

            r->harm[p] += harmed;
            r->harm_low_noise[p] += harmed && c->noise <= 0.10 + 1e-9;
            if (gains)
                got[p] += c->score[p] - c->score[SIM_MATRIX_NEVER_WRITE];
            if (cannot_pay)
                saved[p] += c->poll_core_s[SIM_MATRIX_NEVER_WRITE] - c->poll_core_s[p];
            near_bound[p] += exp(c->score[p] - c->score[SIM_MATRIX_BOUND]) >= 0.97;
        }
    }
    for (guint k = 0; k < G_N_ELEMENTS(judged); k++) {
        SimMatrixPolicy p = judged[k];

        r->captured[p] = gain > 0 ? got[p] / gain : 1.0;
        r->cpu_saved[p] = cpu > 0 ? saved[p] / cpu : 1.0;
        r->share_bound[p] = r->n_cells ? (double)near_bound[p] / r->n_cells : 0;
    }
}

static void
goals_judge(SimMatrixResult *r)
{
    static const SimMatrixPolicy judged[] = { SIM_MATRIX_ADAPTIVE, SIM_MATRIX_OFF,
                                              SIM_MATRIX_NEVER_WRITE };
    SimMatrixGoal *g = r->goals;
    const SimMatrixPolicy A = SIM_MATRIX_ADAPTIVE, O = SIM_MATRIX_OFF, N = SIM_MATRIX_NEVER_WRITE;

    goals_measure(r);
    g[0].name = "do no harm: <= 1% of cells > 3% below never-write, none at noise <= 10%";
    g[1].name = "capture the gain: >= 75% of the oracle's gain over never-write";
    g[2].name = ">= 95% of cells within 3% of the every-candidate bound";
    g[3].name = "writes: p95 per change <= 3 at +-50%, <= 4 in any phase, none steady";
    for (guint k = 0; k < G_N_ELEMENTS(judged); k++) {
        SimMatrixPolicy p = judged[k];

        g[0].pass[p] = r->harm[p] <= 0.01 * r->n_cells && r->harm_low_noise[p] == 0;
        g[1].pass[p] = r->captured[p] >= 0.75;
        g[2].pass[p] = r->share_bound[p] >= 0.95;
        g[3].pass[p] = writes_quantile(r, p, 0.5, 0.95) <= 3 && writes_max(r, p) <= 4 &&
                       writes_steady(r, p) == 0;
    }
    g_snprintf(g[0].detail, sizeof(g[0].detail),
               "cells below (at noise <= 10%%): adaptive %u (%u), off %u (%u), never-write %u",
               r->harm[A], r->harm_low_noise[A], r->harm[O], r->harm_low_noise[O], r->harm[N]);
    g_snprintf(g[1].detail, sizeof(g[1].detail),
               "%u cells: adaptive %.1f%%, off %.1f%%, never-write 0%%; polling CPU saved where "
               "it cannot pay (%u cells): adaptive %.1f%%, off %.1f%%", r->gain_cells,
               100 * r->captured[A], 100 * r->captured[O], r->cpu_cells, 100 * r->cpu_saved[A],
               100 * r->cpu_saved[O]);
    g_snprintf(g[2].detail, sizeof(g[2].detail), "adaptive %.1f%%, off %.1f%%, never-write %.1f%%",
               100 * r->share_bound[A], 100 * r->share_bound[O], 100 * r->share_bound[N]);
    g_snprintf(g[3].detail, sizeof(g[3].detail),
               "p95 at +-50%%: adaptive %.0f, off %.0f, never-write %.0f; most in a phase: "
               "adaptive %u; steady writes: adaptive %u",
               writes_quantile(r, A, 0.5, 0.95), writes_quantile(r, O, 0.5, 0.95),
               writes_quantile(r, N, 0.5, 0.95), writes_max(r, A), writes_steady(r, A));
}

void
sim_matrix_summarise(SimMatrixResult *r)
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
        poll_d += c->poll_core_s[SIM_MATRIX_NEVER_WRITE];
    }
    r->share_within = r->n_cells ? (double)within / r->n_cells : 0;
    r->p5_ratio = quantile(ratios, r->n_cells, 0.05);
    r->writes_median = writes_quantile(r, SIM_MATRIX_ADAPTIVE, -1, 0.5);
    r->writes_p95 = writes_quantile(r, SIM_MATRIX_ADAPTIVE, -1, 0.95);
    r->writes_p95_noise50 = writes_quantile(r, SIM_MATRIX_ADAPTIVE, 0.5, 0.95);
    r->writes_max_phase = writes_max(r, SIM_MATRIX_ADAPTIVE);
    r->steady_writes = writes_steady(r, SIM_MATRIX_ADAPTIVE);
    r->poll_vs_default = poll_d > 0 ? poll_a / poll_d : 0;
    goals_judge(r);
}

gboolean
sim_matrix_goals_pass(const SimMatrixResult *r)
{
    for (guint k = 0; k < SIM_MATRIX_N_GOALS; k++)
        if (!r->goals[k].pass[SIM_MATRIX_ADAPTIVE])
            return FALSE;
    return TRUE;
}

/* A slice of the grid: the cells whose @key is @value. */
typedef double (*SliceKey)(const SimMatrixCell *c);

static double key_noise(const SimMatrixCell *c) { return c->noise; }
/* One disk's depth (0: open loop); -1 for several disks, a slice of their own. */
static double key_qd(const SimMatrixCell *c) { return c->w.n_devices >= 2 ? -1.0 : (double)c->w.qd; }
static double key_disks(const SimMatrixCell *c) { return MAX(c->w.n_devices, 1); }
static double key_svc(const SimMatrixCell *c) { return c->w.svc_us; }
static double key_device(const SimMatrixCell *c) { return c->w.device; }
static double key_host(const SimMatrixCell *c) { return c->w.shared; }
static double key_change(const SimMatrixCell *c) { return c->w.change; }
static double key_start(const SimMatrixCell *c) { return c->w.start; }

/*
 * One row: the cells' share within 3% of the oracle and of the bound,
 * those more than 3% below never-write, the mean of each policy's score
 * against the oracle's (ln x 100, so -3.0 is about 3% below), and the
 * worst cell's share of the oracle.
 */
static void
print_slice(const SimMatrixResult *r, FILE *out, const char *label, SliceKey key, double value)
{
    guint n = 0, within = 0, near_bound = 0, harmed = 0;
    double mean[SIM_MATRIX_N_POLICIES] = { 0 }, worst = G_MAXDOUBLE;

    for (guint i = 0; i < r->n_cells; i++) {
        const SimMatrixCell *c = &r->cells[i];
        double x = sim_matrix_cell_ratio(c, SIM_MATRIX_ADAPTIVE);

        if (fabs(key(c) - value) > 1e-9)
            continue;
        n++;
        within += x >= 0.97;
        near_bound += exp(c->score[SIM_MATRIX_ADAPTIVE] - c->score[SIM_MATRIX_BOUND]) >= 0.97;
        harmed += vs_never(c, SIM_MATRIX_ADAPTIVE) < 0.97;
        worst = MIN(worst, x);
        for (guint p = 0; p < SIM_MATRIX_N_POLICIES; p++)
            mean[p] += c->score[p] - c->score[SIM_MATRIX_ORACLE];
    }
    if (!n)
        return;
    fprintf(out, "| %s | %u | %.1f%% | %.1f%% | %u | %.2f | %.2f | %.2f | %.1f%% |\n", label, n,
            100.0 * within / n, 100.0 * near_bound / n, harmed,
            100 * mean[SIM_MATRIX_ADAPTIVE] / n, 100 * mean[SIM_MATRIX_NEVER_WRITE] / n,
            100 * mean[SIM_MATRIX_OFF] / n, 100 * worst);
}

static int
cmp_double_asc(const void *a, const void *b)
{
    return cmp_double(a, b);
}

/* A row per value of @key the cells have, in ascending order. */
static void
print_slices(const SimMatrixResult *r, FILE *out, SliceKey key,
             char *(*label)(double value))
{
    g_autoptr(GArray) seen = g_array_new(FALSE, FALSE, sizeof(double));

    for (guint i = 0; i < r->n_cells; i++) {
        double v = key(&r->cells[i]);
        gboolean found = FALSE;

        for (guint k = 0; k < seen->len && !found; k++)
            found = fabs(g_array_index(seen, double, k) - v) < 1e-9;
        if (!found)
            g_array_append_val(seen, v);
    }
    g_array_sort(seen, cmp_double_asc);
    for (guint k = 0; k < seen->len; k++) {
        double v = g_array_index(seen, double, k);
        g_autofree char *l = label(v);

        print_slice(r, out, l, key, v);
    }
}

static char *label_noise(double v) { return g_strdup_printf("noise +-%.0f%%", 100 * v); }
static char *
label_qd(double v)
{
    return v < 0 ? g_strdup("2-3 disks") : v == 0 ? g_strdup("open loop")
                                                   : g_strdup_printf("closed QD%.0f", v);
}
static char *label_disks(double v) { return g_strdup_printf("%.0f disk(s) on one iothread", v); }
static char *label_svc(double v) { return g_strdup_printf("service %.0f us", v); }
static char *
label_device(double v)
{
    return g_strdup_printf("device %s", sim_device_class_to_string((SimDeviceClass)v));
}
static char *label_host(double v) { return g_strdup(v > 0 ? "shared core" : "dedicated cores"); }
static char *label_change(double v) { return g_strdup(v > 0 ? "phase change" : "steady"); }
static char *
label_start(double v)
{
    return g_strdup_printf("start %s", sim_matrix_start_to_string((SimMatrixStart)v));
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
                 "never-write %.3f, oracle %.3f\n", n, sum[SIM_MATRIX_ADAPTIVE] / n,
            sum[SIM_MATRIX_OFF] / n, sum[SIM_MATRIX_NEVER_WRITE] / n, sum[SIM_MATRIX_ORACLE] / n);
}

static double
mean_score(const SimMatrixResult *r, SimMatrixPolicy p)
{
    double sum = 0;

    for (guint i = 0; i < r->n_cells; i++)
        sum += r->cells[i].score[p];
    return r->n_cells ? sum / r->n_cells : 0;
}

static int
cmp_cell_ratio(gconstpointer a, gconstpointer b, gpointer data)
{
    const SimMatrixResult *r = data;
    double x = sim_matrix_cell_ratio(&r->cells[*(const guint *)a], SIM_MATRIX_ADAPTIVE);
    double y = sim_matrix_cell_ratio(&r->cells[*(const guint *)b], SIM_MATRIX_ADAPTIVE);

    return x < y ? -1 : x > y ? 1 : (int)*(const guint *)a - (int)*(const guint *)b;
}

void
sim_matrix_print(const SimMatrixResult *r, FILE *out)
{
    static const struct {
        SliceKey key;
        char *(*label)(double value);
    } slices[] = {
        { key_noise, label_noise }, { key_qd, label_qd },       { key_disks, label_disks },
        { key_svc, label_svc },     { key_device, label_device }, { key_host, label_host },
        { key_change, label_change }, { key_start, label_start },
    };
    g_autofree char *worst = r->n_cells ? sim_matrix_cell_format(&r->cells[r->worst_cell]) : NULL;
    g_autofree guint *idx = g_new(guint, r->n_cells + 1);
    /* POLLSIM_CELLS=1: every cell, worst first, instead of the ten worst. */
    guint n_show = MIN(g_getenv("POLLSIM_CELLS") ? r->n_cells : 10, r->n_cells);

    fprintf(out, "phases of %u s\n\n", r->phase_s);
    fprintf(out, "| slice | cells | within 3%% of oracle | within 3%% of bound "
                 "| > 3%% below never-write | mean vs oracle: adaptive | never-write | off "
                 "| worst |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (guint k = 0; k < G_N_ELEMENTS(slices); k++)
        print_slices(r, out, slices[k].key, slices[k].label);

    /* The worst cells (n_show of them), where the policy still loses. */
    for (guint i = 0; i < r->n_cells; i++)
        idx[i] = i;
    g_qsort_with_data(idx, (gint)r->n_cells, sizeof(*idx), cmp_cell_ratio, (gpointer)r);
    fprintf(out, "\n| worst cells | adaptive | off | never-write | bound | adaptive writes "
                 "| guest app cores: adaptive / never-write |\n"
                 "|---|---:|---:|---:|---:|---:|---:|\n");
    for (guint i = 0; i < n_show; i++) {
        const SimMatrixCell *c = &r->cells[idx[i]];
        g_autofree char *co = sim_matrix_cell_format(c);
        g_autofree char *app = c->w.shared
            ? g_strdup_printf("%.3f / %.3f", c->app_cores[SIM_MATRIX_ADAPTIVE],
                              c->app_cores[SIM_MATRIX_NEVER_WRITE])
            : g_strdup("-");

        fprintf(out, "| %s | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %u | %s |\n", co,
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_ADAPTIVE),
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_OFF),
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_NEVER_WRITE),
                100 * sim_matrix_cell_ratio(c, SIM_MATRIX_BOUND),
                c->writes[SIM_MATRIX_ADAPTIVE][0] + (c->n_phases > 1 ? c->writes[SIM_MATRIX_ADAPTIVE][1] : 0),
                app);
    }

    fprintf(out, "\nadaptive: %.1f%% of cells within 3%% of the oracle, p5 %.1f%%, worst %.1f%%; "
                 "writes per workload change median %.0f, p95 %.0f (p95 at +-50%% noise %.0f), "
                 "most in a phase %u, steady %u; polling CPU %.2fx never-write's\n",
            100 * r->share_within, 100 * r->p5_ratio, 100 * r->worst_ratio, r->writes_median,
            r->writes_p95, r->writes_p95_noise50, r->writes_max_phase, r->steady_writes,
            r->poll_vs_default);
    fprintf(out, "\noperator writes: %u runs, %u where the policy wrote over the operator's "
                 "triple within its hold\n", r->operator_runs, r->operator_overwritten);
    print_app_cores(r, out);
    fprintf(out, "\n| goal | adaptive | also met by off | also met by never-write | numbers |\n"
                 "|---|---|---|---|---|\n");
    for (guint k = 0; k < SIM_MATRIX_N_GOALS; k++) {
        const SimMatrixGoal *g = &r->goals[k];

        fprintf(out, "| %s | %s | %s | %s | %s |\n", g->name,
                g->pass[SIM_MATRIX_ADAPTIVE] ? "PASS" : "FAIL",
                g->pass[SIM_MATRIX_OFF] ? "yes" : "no",
                g->pass[SIM_MATRIX_NEVER_WRITE] ? "yes" : "no", g->detail);
    }
    fprintf(out, "\nmatrix: %u cells, %.1f%% within 3%% of the bound, %u below never-write "
                 "(%u at noise <= 10%%), %.1f%% of the gain, %.1f%% within 3%% of oracle, "
                 "mean objective %.4f (never-write %.4f), worst %.1f%% at (%s), "
                 "p95 writes per change %.0f, most in a phase %u\n",
            r->n_cells, 100 * r->share_bound[SIM_MATRIX_ADAPTIVE], r->harm[SIM_MATRIX_ADAPTIVE],
            r->harm_low_noise[SIM_MATRIX_ADAPTIVE], 100 * r->captured[SIM_MATRIX_ADAPTIVE],
            100 * r->share_within, mean_score(r, SIM_MATRIX_ADAPTIVE),
            mean_score(r, SIM_MATRIX_NEVER_WRITE), 100 * r->worst_ratio, worst ? worst : "none",
            r->writes_p95_noise50, r->writes_max_phase);
}
