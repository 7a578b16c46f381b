/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-html: the report's page.
 *
 * The page is XHTML-compatible HTML5 (every element closed, no named
 * entities beyond XML's five), so a browser renders it and an XML parser
 * can check it.  Sections are written to the stream as they are made.
 */
#include <math.h>

#include "cli-format.h"
#include "cli-report-private.h"
#include "cli-svg.h"

#define TOP_VMS 6
#define DECISIONS_SHOWN 8

static const char *const palette[] = {
    "#3366cc", "#dc7633", "#2e8b57", "#b03a2e", "#7d3c98", "#b7950b", "#7f8c8d",
};

static const char style[] =
    "body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;color:#1d232b;"
    "margin:0 auto;padding:24px 32px;max-width:1180px;background:#fff}"
    "h1{font-size:24px;margin:0 0 4px}h2{font-size:19px;margin:32px 0 8px;"
    "border-bottom:2px solid #d5dbe3;padding-bottom:4px}h3{font-size:16px;margin:24px 0 4px}"
    "h4{font-size:14px;margin:12px 0 2px;color:#4a5563}"
    ".meta{color:#5b6573;margin:0 0 12px}.note{background:#fff4e0;border-left:4px solid #dc7633;"
    "padding:6px 10px;margin:8px 0}"
    ".charts{display:flex;flex-wrap:wrap;gap:8px 20px}"
    "figure.chart{margin:0}figcaption{font-weight:600;font-size:13px}"
    ".unit{font-weight:400;color:#5b6573}"
    "svg{display:block;font-size:10px}svg .tick{fill:#5b6573}svg .label{fill:#1d232b;font-size:11px}"
    "svg .grid{stroke:#e6e9ee;stroke-width:1}svg .axis{stroke:#9aa3ae;stroke-width:1}"
    "svg path.series{stroke-width:1.5;stroke-linejoin:round}"
    "svg .decision{stroke-width:1;stroke-opacity:.5}svg .decision.applied{stroke:#c0392b}"
    "svg .decision.recommended{stroke:#8e44ad;stroke-dasharray:3 2}"
    "svg .bar{fill:#3366cc}"
    ".legend{font-size:12px;color:#4a5563}.legend span{margin-right:12px}"
    ".legend i{display:inline-block;width:10px;height:10px;margin-right:4px;"
    "vertical-align:-1px}"
    "table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}"
    "th,td{padding:3px 10px;border-bottom:1px solid #e6e9ee;text-align:right;"
    "vertical-align:top}th{background:#f3f5f8}"
    "th:first-child,td:first-child{text-align:left}td.text{max-width:520px}"
    "table.log th,table.log td{text-align:left}"
    ".key{font-size:12px;color:#5b6573}.key b.applied{color:#c0392b}"
    ".key b.recommended{color:#8e44ad}";

static void
esc(GString *out, const char *s)
{
    g_autofree char *e = g_markup_escape_text(s ? s : "", -1);

    g_string_append(out, e);
}

static void
cell_num(GString *out, double v, gboolean si, int decimals)
{
    g_autofree char *t = si ? cli_format_si(v) : cli_format_fixed(v, decimals);

    g_string_append_printf(out, "<td>%s</td>", t);
}

static gboolean
flush(GString *buf, GOutputStream *out, GError **error)
{
    gboolean ok = g_output_stream_write_all(out, buf->str, buf->len, NULL, NULL, error);

    g_string_truncate(buf, 0);
    return ok;
}

static void
write_header(GString *h, CliReport *r, gint64 now_ms, guint n_vms)
{
    g_autofree char *from = cli_format_time_ms(r->from_ms, FALSE);
    g_autofree char *to = cli_format_time_ms(r->to_ms, FALSE);
    g_autofree char *now = cli_format_time_ms(now_ms, FALSE);
    g_autofree char *span = cli_format_duration_ms(r->to_ms - r->from_ms);

    g_string_append(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
                    "<meta name=\"viewport\" content=\"width=device-width\"/>"
                    "<title>polltune capacity report</title><style>");
    g_string_append(h, style);
    g_string_append(h, "</style></head><body><h1>polltune capacity report</h1>"
                    "<p class=\"meta\">");
    g_string_append_printf(h, "%s to %s UTC (%s) &#183; %s resolution &#183; ", from, to, span,
                           store_resolution_to_string(r->resolution));
    esc(h, r->source);
    g_string_append_printf(h, " &#183; %u VMs, %u iothreads, %" G_GUINT64_FORMAT " points, %"
                           G_GUINT64_FORMAT " decisions &#183; generated %s UTC</p>", n_vms,
                           r->series->len, r->n_points, r->n_decisions, now);
    for (guint i = 0; i < r->notes->len; i++) {
        g_string_append(h, "<p class=\"note\">");
        esc(h, g_ptr_array_index(r->notes, i));
        g_string_append(h, "</p>");
    }
}

static int
cmp_vm_cores(gconstpointer a, gconstpointer b)
{
    const ReportVm *x = *(ReportVm *const *)a, *y = *(ReportVm *const *)b;
    double cx = isnan(x->mean_cores) ? -1 : x->mean_cores;
    double cy = isnan(y->mean_cores) ? -1 : y->mean_cores;

    return (cy > cx) - (cy < cx);
}

/* Cores spent polling, stacked by the top VMs and the rest. */
static void
host_cores_chart(GString *h, CliReport *r, GPtrArray *by_cores)
{
    guint top = MIN(by_cores->len, TOP_VMS);
    gboolean others = by_cores->len > top;
    g_autofree CliSvgSeries *series = g_new0(CliSvgSeries, top + 1);
    g_autofree double *rest = g_new(double, r->nb);

    for (guint i = 0; i < top; i++) {
        ReportVm *vm = g_ptr_array_index(by_cores, i);

        series[i] = (CliSvgSeries){ vm->name, palette[i % G_N_ELEMENTS(palette)], vm->cores };
    }
    for (guint b = 0; b < r->nb; b++) {
        rest[b] = NAN;
        for (guint i = top; i < by_cores->len; i++) {
            double v = ((ReportVm *)g_ptr_array_index(by_cores, i))->cores[b];

            if (!isnan(v))
                rest[b] = (isnan(rest[b]) ? 0 : rest[b]) + v;
        }
    }
    if (others)
        series[top] = (CliSvgSeries){ "other VMs", "#aab2bd", rest };
    cli_svg_chart(h, &(CliSvgChart){
        .title = "Cores spent polling, host total", .unit = "cores, stacked by VM",
        .from_ms = r->from_ms, .to_ms = r->to_ms, .n = r->nb, .series = series,
        .n_series = top + (others ? 1 : 0), .stacked = TRUE, .width = 760, .height = 220 });
}

static void
host_tables(GString *h, GPtrArray *by_cores, GPtrArray *vms)
{
    double total = 0;
    g_autofree CliSvgBar *bars = g_new0(CliSvgBar, MAX(vms->len, 1));
    g_autofree double *per_core = g_new(double, MAX(vms->len, 1));

    for (guint i = 0; i < by_cores->len; i++) {
        ReportVm *vm = g_ptr_array_index(by_cores, i);

        if (!isnan(vm->mean_cores))
            total += vm->mean_cores;
    }
    g_string_append(h, "<h3>Top consumers</h3><table><tr><th>VM</th><th>iothreads</th>"
                    "<th>mean cores</th><th>p95 cores</th><th>share of polling</th>"
                    "<th>mean IOPS</th><th>IOPS per polling core</th><th>decisions</th></tr>");
    for (guint i = 0; i < by_cores->len; i++) {
        ReportVm *vm = g_ptr_array_index(by_cores, i);
        double share = total > 0 && !isnan(vm->mean_cores) ? vm->mean_cores / total * 100 : NAN;

        per_core[i] = vm->mean_cores > 0 ? vm->mean_iops / vm->mean_cores : NAN;
        g_string_append(h, "<tr><td>");
        esc(h, vm->name);
        g_string_append_printf(h, "</td><td>%u</td>", vm->series->len);
        cell_num(h, vm->mean_cores, FALSE, 3);
        cell_num(h, vm->cores_p95, FALSE, 3);
        cell_num(h, share, FALSE, 1);
        cell_num(h, vm->mean_iops, TRUE, 0);
        cell_num(h, per_core[i], TRUE, 0);
        g_string_append_printf(h, "<td>%u</td></tr>", vm->decisions);
        bars[i] = (CliSvgBar){ vm->name, per_core[i], NULL };
    }
    g_string_append(h, "</table>");
    cli_svg_bars(h, "IOPS per polling core, by VM (mean IOPS / mean polling cores)", bars,
                 by_cores->len, 760);

    g_string_append(h, "<h3>Sizing</h3><p class=\"meta\">Percentiles over the report's time "
                    "buckets of each VM's totals across its iothreads.</p><table><tr>"
                    "<th>VM</th><th>IOPS p50</th><th>IOPS p95</th><th>latency p50 (&#181;s)"
                    "</th><th>latency p95 (&#181;s)</th><th>polling cores p50</th>"
                    "<th>polling cores p95</th></tr>");
    for (guint i = 0; i < vms->len; i++) {
        ReportVm *vm = g_ptr_array_index(vms, i);

        g_string_append(h, "<tr><td>");
        esc(h, vm->name);
        g_string_append(h, "</td>");
        cell_num(h, vm->iops_p50, TRUE, 0);
        cell_num(h, vm->iops_p95, TRUE, 0);
        cell_num(h, vm->lat_p50, FALSE, 1);
        cell_num(h, vm->lat_p95, FALSE, 1);
        cell_num(h, vm->cores_p50, FALSE, 3);
        cell_num(h, vm->cores_p95, FALSE, 3);
        g_string_append(h, "</tr>");
    }
    g_string_append(h, "</table>");
}

static char *
max_ns_text(gint64 v)
{
    return v < 0 ? g_strdup("?") : g_strdup_printf("%" G_GINT64_FORMAT, v);
}

static char *
decision_label(const ReportDecision *d)
{
    g_autofree char *when = cli_format_time_ms(d->ts_ms, FALSE);
    g_autofree char *old = max_ns_text(d->old_max_ns);
    g_autofree char *new = max_ns_text(d->new_max_ns);

    return g_strdup_printf("%s %s poll-max-ns %s -> %s (%s): %s", when,
                           d->applied ? "applied" : "recommended", old, new,
                           d->policy ? d->policy : "?", d->reason ? d->reason : "");
}

static void
series_charts(GString *h, CliReport *r, ReportSeries *s)
{
    g_autofree double *iops = g_new(double, r->nb);
    g_autofree double *lat = g_new(double, r->nb);
    g_autofree double *cpu = g_new(double, r->nb);
    g_autofree CliSvgMarker *marks = g_new0(CliSvgMarker, MAX(s->decisions->len, 1));
    g_autoptr(GPtrArray) labels = g_ptr_array_new_with_free_func(g_free);
    const struct {
        const char *title, *unit, *color;
        const double *y;
    } charts[] = {
        { "IOPS", "ops/s", "#3366cc", iops },
        { "Latency", "\302\265s per op", "#2e8b57", lat },
        { "Polling CPU", "% of one core", "#dc7633", cpu },
    };

    for (guint i = 0; i < r->nb; i++) {
        iops[i] = report_bucket_iops(&s->b[i]);
        lat[i] = report_bucket_lat(&s->b[i]);
        cpu[i] = report_bucket_cpu(&s->b[i]);
    }
    for (guint i = 0; i < s->decisions->len; i++) {
        const ReportDecision *d = &g_array_index(s->decisions, ReportDecision, i);
        char *label = decision_label(d);

        g_ptr_array_add(labels, label);
        marks[i] = (CliSvgMarker){ d->ts_ms, d->applied, label };
    }
    g_string_append(h, "<div class=\"charts\">");
    for (gsize c = 0; c < G_N_ELEMENTS(charts); c++)
        cli_svg_chart(h, &(CliSvgChart){
            .title = charts[c].title, .unit = charts[c].unit, .from_ms = r->from_ms,
            .to_ms = r->to_ms, .n = r->nb,
            .series = &(CliSvgSeries){ NULL, charts[c].color, charts[c].y }, .n_series = 1,
            .markers = marks, .n_markers = s->decisions->len });
    g_string_append(h, "</div>");
}

static void
series_decisions(GString *h, ReportSeries *s)
{
    guint n = s->decisions->len, shown = MIN(n, DECISIONS_SHOWN);

    if (s->decisions_total == 0) {
        g_string_append(h, "<p class=\"key\">No decisions in this range.</p>");
        return;
    }
    g_string_append_printf(h, "<p class=\"key\">%u decisions in this range "
                           "(<b class=\"applied\">|</b> applied, <b class=\"recommended\">"
                           "&#166;</b> recommended); the latest %u:</p><table class=\"log\"><tr><th>time "
                           "(UTC)</th><th>outcome</th><th>poll-max-ns</th><th>policy</th>"
                           "<th>reason</th></tr>", s->decisions_total, shown);
    for (guint i = n; i-- > n - shown;) {
        const ReportDecision *d = &g_array_index(s->decisions, ReportDecision, i);
        g_autofree char *when = cli_format_time_ms(d->ts_ms, FALSE);
        g_autofree char *old = max_ns_text(d->old_max_ns);
        g_autofree char *new = max_ns_text(d->new_max_ns);

        g_string_append_printf(h, "<tr><td>%s</td><td>%s</td><td>%s &#8594; %s</td><td>",
                               when, d->applied ? "applied" : "recommended", old, new);
        esc(h, d->policy);
        g_string_append(h, "</td><td class=\"text\">");
        esc(h, d->reason);
        g_string_append(h, "</td></tr>");
    }
    g_string_append(h, "</table>");
}

gboolean
cli_report_write(CliReport *r, GOutputStream *out, gint64 now_ms, GError **error)
{
    g_autoptr(GPtrArray) vms = report_vms_build(r);
    g_autoptr(GPtrArray) by_cores = g_ptr_array_new();
    g_autoptr(GString) h = g_string_sized_new(64 * 1024);

    /* A second order over the same VMs; vms owns them. */
    for (guint i = 0; i < vms->len; i++)
        g_ptr_array_add(by_cores, g_ptr_array_index(vms, i));

    g_ptr_array_sort(by_cores, cmp_vm_cores);
    write_header(h, r, now_ms, vms->len);
    g_string_append(h, "<h2>Host</h2>");
    if (vms->len == 0)
        g_string_append(h, "<p class=\"note\">No samples in this range.</p>");
    else {
        host_cores_chart(h, r, by_cores);
        host_tables(h, by_cores, vms);
    }
    if (!flush(h, out, error))
        return FALSE;
    if (vms->len > 0)
        g_string_append(h, "<h2>VMs and iothreads</h2>");
    for (guint v = 0; v < vms->len; v++) {
        ReportVm *vm = g_ptr_array_index(vms, v);
        g_autofree char *iops = cli_format_si(vm->mean_iops);
        g_autofree char *cores = cli_format_fixed(vm->mean_cores, 3);
        g_autofree char *iops95 = cli_format_si(vm->iops_p95);
        g_autofree char *lat95 = cli_format_fixed(vm->lat_p95, 1);

        g_string_append(h, "<h3>");
        esc(h, vm->name);
        g_string_append_printf(h, "</h3><p class=\"meta\">mean %s IOPS, %s polling cores, "
                               "IOPS p95 %s, latency p95 %s &#181;s</p>", iops, cores, iops95,
                               lat95);
        for (guint i = 0; i < vm->series->len; i++) {
            ReportSeries *s = g_ptr_array_index(vm->series, i);

            g_string_append(h, "<h4>");
            esc(h, s->iothread);
            g_string_append(h, "</h4>");
            series_charts(h, r, s);
            series_decisions(h, s);
        }
        if (!flush(h, out, error))
            return FALSE;
    }
    g_string_append(h, "</body></html>\n");
    return flush(h, out, error);
}
