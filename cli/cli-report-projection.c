/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-projection: the report's headroom and projection section.
 *
 * A projection is what a credible line (REPORT_FIT_MIN_POINTS) says more
 * load costs, added to what today's busy load measured: it never reads
 * backwards (more load, less CPU), and it stops at the highest load the
 * line was measured at.  Where the line is not credible the page says "not
 * enough evidence", where the load lies past it "beyond the measured
 * range", never a number nobody measured.
 */
#include <math.h>

#include "cli-format.h"
#include "cli-report-private.h"
#include "cli-svg.h"

/* The loads projected: twice today's busy load (the 95th percentile of
 * the points with load, never the mean, which idle time dilutes), and the
 * peak, the highest load measured. */
typedef enum {
    LOAD_DOUBLE,
    LOAD_PEAK,
    LOAD_N,
} LoadBasis;

static const char *const load_names[LOAD_N] = { "2&#215; busy p95", "the peak" };

static double
load_iops(const ReportSeries *s, LoadBasis k)
{
    return k == LOAD_DOUBLE ? 2.0 * s->busy_p95_iops : s->peak_iops;
}

/* The line of @fit at @iops, NAN when it may not say. */
static double
fit_at(const ReportFit *fit, double iops)
{
    return fit->ok && iops <= fit->x_max ? fit->a + fit->b * iops : NAN;
}

/* Polling's part of @cpu at @iops: the line with polling on minus the
 * line with it off where both are credible there, else the off/on pairs'
 * figure; none when the iothread runs with polling off. */
static double
projected_polling(const ReportSeries *s, double iops, double cpu)
{
    double off = fit_at(&s->fit_off, iops), on = fit_at(&s->fit_on, iops);
    double poll = !isnan(off) && !isnan(on) ? on - off
                  : s->onoff.n_pairs ? s->onoff.d_cpu_pct : NAN;

    if (isnan(cpu) || isnan(poll))
        return NAN;
    if (s->fit.n == s->fit_off.n && s->fit_off.n > s->fit_on.n)
        return 0.0;
    return CLAMP(poll, 0.0, cpu);
}

/* Why a projection at @iops has no figure, NULL when it has one. */
static const char *
projected_why(const ReportSeries *s, double iops)
{
    if (isnan(iops) || isnan(s->busy_p95_cpu_pct))
        return NULL;
    if (!s->fit.ok)
        return "not enough evidence";
    if (report_project_beyond(s, iops))
        return "beyond the measured range";
    return NULL;
}

static void
cell_projected(GString *h, const ReportSeries *s, double iops, double v)
{
    const char *why = projected_why(s, iops);

    if (why)
        g_string_append_printf(h, "<td class=\"beyond\">%s</td>", why);
    else
        report_cell_num(h, v, FALSE, 1);
}

/* The host's CPU and pressure, which bound every iothread at once. */
static void
host_load(GString *h, CliReport *r)
{
    const ReportHostSummary *hs = &r->hs;
    g_autofree char *since = NULL;
    g_autofree char *busy_mean = NULL, *busy_p95 = NULL, *busy_max = NULL;
    g_autofree char *psi_mean = NULL, *psi_p95 = NULL;

    g_string_append(h, "<h4 id=\"host-load\">The host</h4>");
    if (!hs->n) {
        g_string_append(h, "<p class=\"meta\" id=\"no-host\">No host figures in this range: "
                        "the daemon records the host's CPU from history schema 8 on and its "
                        "CPU pressure where the kernel has PSI; a fleet report from Prometheus "
                        "has neither.  The headroom below is per iothread and says nothing of "
                        "the host.</p>");
        return;
    }
    since = cli_format_time_ms(hs->first_ms, FALSE);
    busy_mean = cli_format_fixed(hs->busy_mean, 1);
    busy_p95 = cli_format_fixed(hs->busy_p95, 1);
    busy_max = cli_format_fixed(hs->busy_max, 1);
    psi_mean = cli_format_fixed(hs->psi_mean, 1);
    psi_p95 = cli_format_fixed(hs->psi_p95, 1);
    g_string_append_printf(h, "<p class=\"meta\">Every CPU of the host, from %u ticks from "
                           "%s UTC on: how busy they were (/proc/stat) and how much of the "
                           "time some task waited for one (PSI cpu &#8220;some&#8221;).  A tick "
                           "is saturated with its CPUs %.0f %% busy or more, or a task waiting "
                           "%.0f %% of it or more.</p><table id=\"host-table\"><tr><th>host</th>"
                           "<th>CPUs</th><th>CPU busy, mean / p95 / peak (%% of all CPUs)</th>"
                           "<th>CPU pressure, mean / p95 (%% of time)</th><th>saturated (%% of "
                           "ticks)</th></tr><tr><td>host</td>", hs->n, since,
                           REPORT_HOST_BUSY_FULL, REPORT_HOST_PSI_FULL);
    report_cell_num(h, hs->cpus, FALSE, 0);
    if (isnan(hs->busy_mean))
        g_string_append(h, "<td>-</td>");
    else
        g_string_append_printf(h, "<td>%s / %s / %s</td>", busy_mean, busy_p95, busy_max);
    if (isnan(hs->psi_mean))
        g_string_append(h, "<td>-</td>");
    else
        g_string_append_printf(h, "<td>%s / %s</td>", psi_mean, psi_p95);
    report_cell_num(h, hs->saturated_share * 100, FALSE, 1);
    g_string_append(h, "</tr></table>");
    if (hs->saturated_share >= REPORT_HOST_SATURATED_WARN)
        g_string_append_printf(h, "<p class=\"note\" id=\"host-saturated\">The host was "
                               "saturated in %.0f %% of its ticks.  The headroom below is per "
                               "iothread, one core each, and assumes the host has a core to "
                               "give; it had none to spare, so more load would have waited for "
                               "a CPU, not found headroom.</p>", hs->saturated_share * 100);
    {
        const CliSvgSeries two[] = { { "CPU busy (% of all CPUs)", "#b03a2e", hs->busy },
                                     { "CPU pressure (% of time)", "#7d3c98", hs->psi } };

        cli_svg_chart(h, &(CliSvgChart){
            .title = "Host CPU and CPU pressure", .unit = "%", .from_ms = r->from_ms,
            .to_ms = r->to_ms, .n = r->nb, .series = two, .n_series = 2, .width = 760,
            .height = 180, .ymax = 100 });
    }
}

static void
projection_head(GString *h)
{
    g_string_append_printf(h, "<h4>Per iothread</h4><ul class=\"assume\"><li>Load is the "
                           "iothread's busy load: the 95th percentile of its IOPS over the "
                           "points with load (%.0f ops/s or more), so idle time does not "
                           "dilute it, and the peak, the highest IOPS measured; 2&#215; scales "
                           "it with the same mix of reads, writes and sizes.</li><li>The "
                           "iothread's CPU at a higher load is its CPU at the busy load plus "
                           "the slope of the straight line through its (IOPS, CPU) ticks with "
                           "load, at the polling state it spent most time in.  The line counts "
                           "only with %u ticks or more, IOPS spread by %.0f %% or more, and a "
                           "slope above zero; else the page says &#8220;not enough "
                           "evidence&#8221;.  Nothing is projected past the highest IOPS the "
                           "line was measured at: the page says &#8220;beyond the measured "
                           "range&#8221;.  One iothread is one thread: it saturates at 100 %% "
                           "of one core, and only while the host has a core to give.</li>"
                           "<li>Polling CPU at a load is the line measured with polling on "
                           "minus the line with it off (or the off/on pairs' figure), and "
                           "never more than the iothread's CPU.</li><li>Latency is taken as "
                           "unchanged below saturation; queueing near saturation is not "
                           "modelled.</li></ul><table id=\"projection-table\"><tr><th>"
                           "iothread</th><th>busy IOPS p95 / peak (ops/s)</th><th>iothread "
                           "CPU, busy p95 (%% of one core)</th>", REPORT_LOAD_MIN_IOPS,
                           REPORT_FIT_MIN_POINTS, REPORT_FIT_MIN_SPREAD * 100);
    for (int k = 0; k < LOAD_N; k++)
        g_string_append_printf(h, "<th>at %s: IOPS (ops/s)</th><th>iothread CPU (%% of one "
                               "core)</th><th>of it polling (%% of one core)</th>",
                               load_names[k]);
    g_string_append_printf(h, "<th>iothread headroom at %s (%% of one core)</th><th>saturates "
                           "at (ops/s)</th></tr>", load_names[LOAD_PEAK]);
}

void
report_html_projection(GString *h, CliReport *r)
{
    double now_total = 0, at_total[LOAD_N] = { 0 };
    gboolean any = FALSE;
    const char *why_total[LOAD_N] = { NULL };

    g_string_append(h, "<h3 id=\"projection\">Headroom and projection</h3>");
    host_load(h, r);
    projection_head(h);
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        g_autofree char *pi = cli_format_si(s->busy_p95_iops);
        g_autofree char *mi = cli_format_si(s->peak_iops);
        const ReportFit *f = &s->fit;
        double head = NAN, sat = NAN;

        if (f->ok && !isnan(s->busy_p95_cpu_pct))
            sat = s->busy_p95_iops + (100.0 - s->busy_p95_cpu_pct) / f->b;
        report_row_start(h, s);
        g_string_append_printf(h, "<td>%s / %s</td>", pi, mi);
        report_cell_num(h, s->busy_p95_cpu_pct, FALSE, 1);
        if (!isnan(s->busy_p95_cpu_pct))
            now_total += s->busy_p95_cpu_pct / 100.0;
        for (int k = 0; k < LOAD_N; k++) {
            double iops = load_iops(s, k);
            double cpu = report_project_cpu(s, iops);

            report_cell_num(h, iops, TRUE, 0);
            cell_projected(h, s, iops, cpu);
            cell_projected(h, s, iops, projected_polling(s, iops, cpu));
            if (!isnan(cpu)) {
                at_total[k] += cpu / 100.0;
                any = TRUE;
            } else if (!why_total[k]) {
                /* A sum without a part that has no figure would be short. */
                why_total[k] = projected_why(s, iops);
            }
            head = isnan(cpu) ? NAN : 100.0 - cpu;
        }
        cell_projected(h, s, load_iops(s, LOAD_PEAK), head);
        if (!isnan(sat) && report_project_beyond(s, sat))
            g_string_append(h, "<td class=\"beyond\">beyond the measured range</td>");
        else if (!isnan(s->busy_p95_cpu_pct) && !f->ok && !isnan(s->busy_p95_iops))
            g_string_append(h, "<td class=\"beyond\">not enough evidence</td>");
        else
            report_cell_num(h, sat, TRUE, 0);
        g_string_append(h, "</tr>");
    }
    g_string_append(h, "<tr class=\"total\"><td>host, iothread cores</td><td></td>");
    report_cell_num(h, now_total, FALSE, 3);
    for (int k = 0; k < LOAD_N; k++) {
        g_string_append(h, "<td></td>");
        if (why_total[k])
            g_string_append_printf(h, "<td class=\"beyond\">%s</td>", why_total[k]);
        else
            report_cell_num(h, any ? at_total[k] : NAN, FALSE, 3);
        g_string_append(h, "<td></td>");
    }
    g_string_append(h, "<td></td><td></td></tr></table>");
}
