/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-html: the report's page.
 *
 * The page is XHTML-compatible HTML5 (every element closed, no named
 * entities beyond XML's five), so a browser renders it and an XML parser
 * can check it.  Sections are written to the stream as they are made.
 */
#include <math.h>
#include <string.h>

#include "cli-format.h"
#include "cli-report-evidence.h"
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
    "th:first-child,td:first-child{text-align:left}td{white-space:nowrap}"
    "td.text{max-width:640px;white-space:normal}"
    /* Words where a projection has no figure: they may wrap, so the
     * table stays within the page. */
    "td.beyond{white-space:normal;min-width:6em;color:#5b6573;font-size:12px}"
    "table.log th,table.log td{text-align:left}"
    ".key{font-size:12px;color:#5b6573}.key b.applied{color:#c0392b}"
    ".key b.recommended{color:#8e44ad}"
    ".ev{font-size:12px;color:#4a5563}.ev b{font-weight:600}"
    "tr.total td{font-weight:600;border-top:2px solid #d5dbe3}"
    "ul.assume{font-size:13px;color:#4a5563;margin:4px 0 12px}";

static void
esc(GString *out, const char *s)
{
    g_autofree char *e = g_markup_escape_text(s ? s : "", -1);

    g_string_append(out, e);
}

static gboolean
flush(GString *buf, GOutputStream *out, GError **error)
{
    gboolean ok = g_output_stream_write_all(out, buf->str, buf->len, NULL, NULL, error);

    g_string_truncate(buf, 0);
    return ok;
}

void
report_cell_num(GString *out, double v, gboolean si, int decimals)
{
    g_autofree char *t = si ? cli_format_si(v) : cli_format_fixed(v, decimals);

    g_string_append_printf(out, "<td>%s</td>", t);
}

static void
cell_text(GString *out, const char *text)
{
    g_string_append(out, "<td>");
    esc(out, text);
    g_string_append(out, "</td>");
}

/* How long ago, for a column headed "(ago)". */
static char *
age_text(gint64 now_ms, gint64 ts_ms)
{
    if (ts_ms <= 0)
        return g_strdup("-");
    return cli_format_duration_ms(MAX(now_ms - ts_ms, 0));
}

static char *
series_name(const ReportSeries *s)
{
    return g_strdup_printf("%s/%s", s->name, s->iothread);
}

static char *
step_text(gint64 step_ms)
{
    return cli_format_duration_ms(step_ms);
}

static void
write_header(GString *h, CliReport *r, gint64 now_ms, guint n_vms)
{
    g_autofree char *from = cli_format_time_ms(r->from_ms, FALSE);
    g_autofree char *to = cli_format_time_ms(r->to_ms, FALSE);
    g_autofree char *now = cli_format_time_ms(now_ms, FALSE);
    g_autofree char *span = cli_format_duration_ms(r->to_ms - r->from_ms);
    g_autofree char *step = step_text(r->step_ms);

    g_string_append(h, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"/>"
                    "<meta name=\"viewport\" content=\"width=device-width\"/>"
                    "<title>polltune capacity report</title><style>");
    g_string_append(h, style);
    g_string_append(h, "</style></head><body><h1>polltune capacity report</h1>"
                    "<p class=\"meta\" id=\"range\">");
    g_string_append_printf(h, "<span data-from-ms=\"%" G_GINT64_FORMAT "\" data-to-ms=\"%"
                           G_GINT64_FORMAT "\">%s to %s UTC</span> (%s) &#183; buckets of %s "
                           "&#183; %s resolution &#183; ", r->from_ms, r->to_ms, from, to, span,
                           step, store_resolution_to_string(r->resolution));
    esc(h, r->source);
    g_string_append_printf(h, " &#183; %u VMs, %u iothreads, %" G_GUINT64_FORMAT " points, %"
                           G_GUINT64_FORMAT " decisions &#183; generated %s UTC</p>", n_vms,
                           r->series->len, r->n_points, r->n_decisions, now);
    if (r->range_fitted)
        g_string_append(h, "<p class=\"meta\">The history is shorter than the range asked: "
                        "the page spans its first to its last sample.</p>");
    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);

        if (s->ticks_cut && s->ticks->len) {
            g_autofree char *since = cli_format_time_ms(
                g_array_index(s->ticks, ReportPoint, 0).ts_ms, FALSE);

            g_string_append_printf(h, "<p class=\"meta\" id=\"ticks-cut\">Which ticks polled "
                                   "(time polling, off/on pairs, the comparison with QEMU's "
                                   "default, the projection) is read from the newest %u "
                                   "per-tick rows of each iothread: from %s UTC on.</p>",
                                   CLI_REPORT_MAX_TICKS, since);
            break;
        }
    }
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

/* One per-bucket VM figure, stacked by the top VMs and the rest. */
static void
host_stacked_chart(GString *h, CliReport *r, GPtrArray *by_cores, const char *title,
                   const char *unit, gsize offset)
{
    g_autoptr(GPtrArray) with = g_ptr_array_new();
    guint top;
    gboolean others;
    g_autofree CliSvgSeries *series = NULL;
    g_autofree double *rest = g_new(double, r->nb);

    /* VMs with nothing to draw stay out of the legend. */
    for (guint i = 0; i < by_cores->len; i++) {
        ReportVm *vm = g_ptr_array_index(by_cores, i);

        if (!isnan(report_mean(G_STRUCT_MEMBER(double *, vm, offset), r->nb)))
            g_ptr_array_add(with, vm);
    }
    top = MIN(with->len, TOP_VMS);
    others = with->len > top;
    series = g_new0(CliSvgSeries, top + 1);
    for (guint i = 0; i < top; i++) {
        ReportVm *vm = g_ptr_array_index(with, i);

        series[i] = (CliSvgSeries){ vm->name, palette[i % G_N_ELEMENTS(palette)],
                                    G_STRUCT_MEMBER(double *, vm, offset) };
    }
    for (guint b = 0; b < r->nb; b++) {
        rest[b] = NAN;
        for (guint i = top; i < with->len; i++) {
            double v = G_STRUCT_MEMBER(double *, g_ptr_array_index(with, i), offset)[b];

            if (!isnan(v))
                rest[b] = (isnan(rest[b]) ? 0 : rest[b]) + v;
        }
    }
    if (others)
        series[top] = (CliSvgSeries){ "other VMs", "#aab2bd", rest };
    cli_svg_chart(h, &(CliSvgChart){
        .title = title, .unit = unit, .from_ms = r->from_ms, .to_ms = r->to_ms, .n = r->nb,
        .series = series, .n_series = top + (others ? 1 : 0), .stacked = TRUE, .width = 760,
        .height = 220 });
}

void
report_row_start(GString *h, const ReportSeries *s)
{
    g_autofree char *name = series_name(s);

    g_string_append(h, "<tr>");
    cell_text(h, name);
}

/* The pairs left out of each estimate because the two runs were not the
 * same workload, when there were any. */
static void
unlike_note(GString *h, CliReport *r, const char *id, gboolean vs_default)
{
    gboolean any = FALSE;

    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);
        guint n = vs_default ? s->vs_default_unlike : s->onoff.n_unlike;
        g_autofree char *name = series_name(s);

        if (!n)
            continue;
        if (!any)
            g_string_append_printf(h, "<p class=\"key\" id=\"%s\">Adjacent runs left out "
                                   "as not the same workload: ", id);
        g_string_append(h, any ? ", " : "");
        esc(h, name);
        g_string_append_printf(h, " %u", n);
        any = TRUE;
    }
    if (any)
        g_string_append(h, ".</p>");
}

/* The rule every pair of runs must meet, as the page states it. */
static void
pair_rule(GString *h, gboolean need_load)
{
    g_string_append_printf(h, "A pair is two adjacent runs of the same workload: %sboth with "
                           "load and their IOPS and their queue depths (IOPS &#215; latency) "
                           "each within a factor of %.1f of the other's; idle is under %.0f "
                           "ops/s.  Runs either side of a change of load are not a pair.",
                           need_load ? "" : "both idle, or ", REPORT_PAIR_BAND,
                           REPORT_LOAD_MIN_IOPS);
}

/* Whether any bucket of any iothread was charged polling CPU (a host's
 * replay: a fleet report has the counters' means only). */
static gboolean
polling_charged(const CliReport *r)
{
    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);

        for (guint k = 0; s->poll_cpu && k < r->nb; k++)
            if (!isnan(s->poll_cpu[k]))
                return TRUE;
    }
    return FALSE;
}

/* What polling costs and buys, from the off/on pairs. */
static void
host_polling(GString *h, CliReport *r, GPtrArray *by_cores, gint64 now_ms)
{
    double total = 0;
    guint with_pairs = 0, with_mean = 0;

    g_string_append(h, "<h3 id=\"polling\">What polling costs and what it buys</h3><p class="
                    "\"meta\">From the policy's own measurements: each pair is a run of ticks "
                    "with polling off (poll-max-ns 0) next to a run with it on.  ");
    pair_rule(h, FALSE);
    g_string_append(h, "  Polling CPU is the iothread's CPU with polling on minus its CPU with "
                    "it off, charged only for the time polling was on, each tick by the pairs "
                    "of its own workload closed in the 12 h before it; polling CPU when on is "
                    "those charges over the time charged, and its error the spread of the "
                    "range's pairs.  The daemon's counters charge the same way, so a fleet "
                    "report gives the same figures.  Without a pair there is "
                    "no estimate: an iothread's whole CPU is never counted as polling.  Latency "
                    "is the time a request spends in QEMU's block layer (query-blockstats), "
                    "not what the guest sees, which is more.</p><table id=\"polling-table\">"
                    "<tr><th>iothread</th><th>polling on (% of time)</th><th>off/on pairs</th>"
                    "<th>ticks off + on</th><th>newest pair (ago)</th><th>polling CPU when on "
                    "(% of one core)</th><th>confidence</th><th>IOPS off &#8594; on (ops/s)</th>"
                    "<th>latency in QEMU off &#8594; on (&#181;s)</th><th>polling, mean over "
                    "the range (cores)</th></tr>");
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        const ReportCompare *c = &s->onoff;
        g_autofree char *age = age_text(now_ms, c->newest_ms);

        report_row_start(h, s);
        report_cell_num(h, s->on_share * 100, FALSE, 1);
        g_string_append_printf(h, "<td>%u</td><td>%u + %u</td>", c->n_pairs, c->n_ticks_a,
                               c->n_ticks_b);
        cell_text(h, age);
        if (c->n_pairs) {
            g_autofree char *d = cli_format_fixed(s->poll_on_pct, 1);
            g_autofree char *se = cli_format_fixed(c->d_cpu_se, 1);
            g_autofree char *ia = cli_format_si(c->iops_a);
            g_autofree char *ib = cli_format_si(c->iops_b);
            g_autofree char *la = cli_format_fixed(c->lat_a, 1);
            g_autofree char *lb = cli_format_fixed(c->lat_b, 1);

            g_string_append_printf(h, "<td>%s &#177; %s</td><td>%s</td><td>%s &#8594; %s"
                                   "</td><td>%s &#8594; %s</td>", d, se,
                                   report_confidence_to_string(s->onoff_confidence), ia, ib,
                                   la, lb);
            with_pairs++;
        } else if (!isnan(s->poll_on_pct)) {
            /* Charged by pairs before the range, or a fleet's counters
             * whose pairs its scrapes are too coarse to see. */
            report_cell_num(h, s->poll_on_pct, FALSE, 1);
            g_string_append(h, "<td>-</td><td>-</td><td>-</td>");
        } else {
            g_string_append(h, "<td>no pair</td><td>none</td><td>-</td><td>-</td>");
        }
        report_cell_num(h, s->mean_poll_cores, FALSE, 3);
        g_string_append(h, "</tr>");
        if (!isnan(s->mean_poll_cores)) {
            total += s->mean_poll_cores;
            with_mean++;
        }
    }
    g_string_append_printf(h, "<tr class=\"total\"><td>host</td><td></td><td></td><td></td>"
                           "<td></td><td></td><td></td><td></td><td></td>");
    report_cell_num(h, with_mean ? total : NAN, FALSE, 3);
    g_string_append(h, "</tr></table>");
    unlike_note(h, r, "polling-unlike", FALSE);
    if (polling_charged(r))
        host_stacked_chart(h, r, by_cores, "Estimated CPU spent on polling, host total",
                           "cores, stacked by VM; from off/on pairs",
                           G_STRUCT_OFFSET(ReportVm, poll_cores));
    else if (with_mean && r->fleet)
        g_string_append(h, "<p class=\"note\" id=\"polling-counters\">The means above are "
                        "the daemons' counters over the range; each host's own report charts "
                        "them over time.</p>");
    else if (!with_pairs)
        g_string_append(h, "<p class=\"note\" id=\"no-pairs\">No off/on pair in this range, "
                        "so no estimate of the CPU spent on polling.  Pairs need per-tick rows "
                        "(raw resolution) and a policy that probes polling off.</p>");
}

/*
 * A host's figures are its replayed ticks': where the per-tick rows start
 * well after the range (rollups beside the newest rows, raw rows kept
 * 48 h by default), they are means over less than the range, which a
 * fleet report of the same range, from counters, is not.  Say so.
 */
static void
gains_span_note(GString *h, const CliReport *r)
{
    gint64 first = G_MAXINT64;
    g_autofree char *since = NULL;

    if (r->fleet)
        return;
    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);
        GArray *ticks = s->ticks ? s->ticks : s->points;

        if (ticks->len)
            first = MIN(first, g_array_index(ticks, ReportPoint, 0).ts_ms);
    }
    /* A minute of slack: a history starts when it starts. */
    if (first == G_MAXINT64 || first - r->from_ms <= 60000)
        return;
    since = cli_format_time_ms(first, FALSE);
    g_string_append_printf(h, "<p class=\"note\" id=\"gains-span\">The per-tick rows replayed "
                           "start at %s UTC, after the range: these figures are means over "
                           "the time from there on.  The daemon's counters cover the whole "
                           "range (report --prometheus).</p>", since);
}

/* Against QEMU's default triple, per iothread and for the host. */
static void
host_vs_default(GString *h, CliReport *r, gint64 now_ms)
{
    double saved = 0, gained = 0;
    guint measured = 0;

    g_string_append(h, "<h3 id=\"vs-default\">Against QEMU's default (poll-max-ns 32768)</h3>"
                    "<p class=\"meta\">Each pair is a run at QEMU's default next to a run at "
                    "another setting.  ");
    pair_rule(h, TRUE);
    g_string_append_printf(h, "  Each tick with load at another setting is charged the CPU "
                    "and IOPS difference of that setting's pairs on the tick's own workload "
                    "(IOPS and queue depth within %.1f&#215; of the pair's) closed in the 12 h "
                    "before the tick, never by a later pair: a gain at queue depth 1 says "
                    "nothing of queue depth 16, and the daemon's counters charge the same way, "
                    "so a fleet report gives the same figures.  Ticks at the default count zero; "
                    "idle ticks at another setting, and ticks whose workload no pair measured, "
                    "are unmeasured and count nothing.  Positive cores are saved, negative "
                    "ones are what polltune spent for the IOPS it gained.</p>"
                    "<table id=\"default-table\"><tr><th>iothread</th><th>at the default (%% of "
                    "time)</th><th>at measured settings (%% of time)</th><th>unmeasured (%% of "
                    "time)</th><th>pairs with the default</th><th>newest pair (ago)</th><th>"
                    "cores saved, mean (cores)</th><th>IOPS gained, mean (ops/s)</th></tr>",
                    REPORT_PAIR_BAND);
    for (guint i = 0; i < r->series->len; i++) {
        ReportSeries *s = g_ptr_array_index(r->series, i);
        g_autofree char *age = age_text(now_ms, s->vs_default_newest_ms);
        gboolean known = !isnan(s->on_share);

        report_row_start(h, s);
        report_cell_num(h, known ? s->default_share * 100 : NAN, FALSE, 1);
        report_cell_num(h, known ? s->measured_share * 100 : NAN, FALSE, 1);
        report_cell_num(h, known ? s->unmeasured_share * 100 : NAN, FALSE, 1);
        g_string_append_printf(h, "<td>%u</td>", s->vs_default_pairs);
        cell_text(h, age);
        if (s->vs_default_pairs || !isnan(s->saved_cores)) {
            report_cell_num(h, s->saved_cores, FALSE, 3);
            report_cell_num(h, s->gained_iops, TRUE, 0);
        } else {
            g_string_append(h, "<td>no pair</td><td>no pair</td>");
        }
        g_string_append(h, "</tr>");
        if (!isnan(s->saved_cores)) {
            saved += s->saved_cores;
            gained += isnan(s->gained_iops) ? 0 : s->gained_iops;
            measured++;
        }
    }
    g_string_append(h, "<tr class=\"total\"><td>host</td><td></td><td></td><td></td><td></td>"
                    "<td></td>");
    report_cell_num(h, measured ? saved : NAN, FALSE, 3);
    report_cell_num(h, measured ? gained : NAN, TRUE, 0);
    g_string_append(h, "</tr></table>");
    unlike_note(h, r, "default-unlike", TRUE);
    gains_span_note(h, r);
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
    g_string_append_printf(h, "<h3 id=\"consumers\">Top consumers</h3><p class=\"meta\">iothread "
                    "CPU is everything the iothread's thread ran: I/O work and polling "
                    "together. An exploration is the adaptive policy's run of probes "
                    "(decisions of cause probe less than %d minutes apart).</p><table><tr>"
                    "<th>VM</th><th>iothreads</th><th>iothread CPU, "
                    "mean (cores)</th><th>iothread CPU, p95 (cores)</th><th>share of "
                    "iothread CPU (%%)</th><th>IOPS, mean (ops/s)</th><th>IOPS per iothread "
                    "core (ops/s per core)</th><th>decisions</th><th>explorations per "
                    "hour</th></tr>", REPORT_EXPLORATION_GAP_MS / 60000);
    for (guint i = 0; i < by_cores->len; i++) {
        ReportVm *vm = g_ptr_array_index(by_cores, i);
        double share = total > 0 && !isnan(vm->mean_cores) ? vm->mean_cores / total * 100 : NAN;

        per_core[i] = vm->mean_cores > 0 ? vm->mean_iops / vm->mean_cores : NAN;
        g_string_append(h, "<tr><td>");
        esc(h, vm->name);
        g_string_append_printf(h, "</td><td>%u</td>", vm->series->len);
        report_cell_num(h, vm->mean_cores, FALSE, 3);
        report_cell_num(h, vm->cores_p95, FALSE, 3);
        report_cell_num(h, share, FALSE, 1);
        report_cell_num(h, vm->mean_iops, TRUE, 0);
        report_cell_num(h, per_core[i], TRUE, 0);
        g_string_append_printf(h, "<td>%u</td>", vm->decisions);
        report_cell_num(h, vm->explorations_per_h, FALSE, 2);
        g_string_append(h, "</tr>");
        bars[i] = (CliSvgBar){ vm->name, per_core[i], NULL };
    }
    g_string_append(h, "</table>");
    cli_svg_bars(h, "IOPS per iothread core, by VM (mean IOPS / mean iothread cores; ops/s "
                 "per core)", bars, by_cores->len, 760);

    g_string_append(h, "<h3 id=\"sizing\">Sizing</h3><p class=\"meta\">Percentiles over the "
                    "report's time buckets of each VM's totals across its iothreads.  Latency "
                    "is the time a request spends in QEMU's block layer, from QEMU's own "
                    "accounting (query-blockstats); the guest's latency adds the virtqueue, "
                    "the interrupt and its own scheduling, and is higher.</p><table>"
                    "<tr><th>VM</th><th>IOPS p50 (ops/s)</th><th>IOPS p95 (ops/s)</th><th>"
                    "latency in QEMU p50 (&#181;s)</th><th>latency in QEMU p95 (&#181;s)</th>"
                    "<th>iothread CPU p50 (cores)</th><th>iothread CPU p95 (cores)</th></tr>");
    for (guint i = 0; i < vms->len; i++) {
        ReportVm *vm = g_ptr_array_index(vms, i);

        g_string_append(h, "<tr><td>");
        esc(h, vm->name);
        g_string_append(h, "</td>");
        report_cell_num(h, vm->iops_p50, TRUE, 0);
        report_cell_num(h, vm->iops_p95, TRUE, 0);
        report_cell_num(h, vm->lat_p50, FALSE, 1);
        report_cell_num(h, vm->lat_p95, FALSE, 1);
        report_cell_num(h, vm->cores_p50, FALSE, 3);
        report_cell_num(h, vm->cores_p95, FALSE, 3);
        g_string_append(h, "</tr>");
    }
    g_string_append(h, "</table>");
}

typedef struct {
    char *host;
    guint vms, iothreads;
    double cores, poll_cores, iops;
    gboolean any_poll;
} HostRow;

static void
host_row_free(gpointer p)
{
    HostRow *h = p;

    g_free(h->host);
    g_free(h);
}

/*
 * A fleet's VMs are named HOST/DOMAIN (report --prometheus; a domain or a
 * QMP target's name has no '/', a host label's value may): their figures
 * summed per host.
 */
static void
fleet_hosts(GString *h, GPtrArray *vms)
{
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(host_row_free);

    for (guint i = 0; i < vms->len; i++) {
        ReportVm *vm = g_ptr_array_index(vms, i);
        const char *slash = strrchr(vm->name, '/');
        HostRow *row = rows->len ? g_ptr_array_index(rows, rows->len - 1) : NULL;

        if (!slash)
            return;
        /* vms is sorted by name: one host's VMs are together. */
        if (!row || strncmp(row->host, vm->name, slash - vm->name) != 0 ||
            row->host[slash - vm->name] != '\0') {
            row = g_new0(HostRow, 1);
            row->host = g_strndup(vm->name, slash - vm->name);
            g_ptr_array_add(rows, row);
        }
        row->vms++;
        row->iothreads += vm->series->len;
        row->cores += isnan(vm->mean_cores) ? 0 : vm->mean_cores;
        row->iops += isnan(vm->mean_iops) ? 0 : vm->mean_iops;
        for (guint k = 0; k < vm->series->len; k++) {
            const ReportSeries *s = g_ptr_array_index(vm->series, k);

            if (!isnan(s->mean_poll_cores)) {
                row->poll_cores += s->mean_poll_cores;
                row->any_poll = TRUE;
            }
        }
    }
    g_string_append(h, "<h3 id=\"hosts\">By host</h3><table id=\"hosts-table\"><tr><th>host"
                    "</th><th>VMs</th><th>iothreads</th><th>iothread CPU, mean (cores)</th>"
                    "<th>polling, mean (cores; from off/on pairs)</th><th>IOPS, mean (ops/s)"
                    "</th></tr>");
    for (guint i = 0; i < rows->len; i++) {
        const HostRow *row = g_ptr_array_index(rows, i);

        g_string_append(h, "<tr>");
        cell_text(h, row->host);
        g_string_append_printf(h, "<td>%u</td><td>%u</td>", row->vms, row->iothreads);
        report_cell_num(h, row->cores, FALSE, 3);
        report_cell_num(h, row->any_poll ? row->poll_cores : NAN, FALSE, 3);
        report_cell_num(h, row->iops, TRUE, 0);
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
    g_autofree char *text = NULL;

    /* Only the reason's prose goes in the chart's label; the evidence
     * fields are listed under the decisions table (evidence_list). */
    g_ptr_array_unref(cli_evidence_parse(d->reason, &text));

    return g_strdup_printf("%s %s poll-max-ns %s -> %s ns (%s): %s", when,
                           d->applied ? "applied" : "recommended", old, new,
                           d->policy ? d->policy : "?", text);
}

static void
series_charts(GString *h, CliReport *r, ReportSeries *s)
{
    g_autofree double *iops = g_new(double, r->nb);
    g_autofree double *lat = g_new(double, r->nb);
    g_autofree double *cpu_on = g_new(double, r->nb);
    g_autofree double *cpu_off = g_new(double, r->nb);
    g_autofree double *cpu = g_new(double, r->nb);
    g_autofree CliSvgMarker *marks = g_new0(CliSvgMarker, MAX(s->decisions->len, 1));
    g_autoptr(GPtrArray) labels = g_ptr_array_new_with_free_func(g_free);
    gboolean split = FALSE;
    CliSvgChart base = { .from_ms = r->from_ms, .to_ms = r->to_ms, .n = r->nb,
                         .markers = marks, .n_markers = s->decisions->len };
    CliSvgChart c;

    for (guint i = 0; i < r->nb; i++) {
        iops[i] = report_bucket_iops(&s->b[i]);
        lat[i] = report_bucket_lat(&s->b[i]);
        cpu[i] = report_bucket_cpu(&s->b[i]);
        cpu_on[i] = report_bucket_cpu_on(&s->b[i]);
        cpu_off[i] = report_bucket_cpu_off(&s->b[i]);
        split = split || s->b[i].known_n > 0;
    }
    for (guint i = 0; i < s->decisions->len; i++) {
        const ReportDecision *d = &g_array_index(s->decisions, ReportDecision, i);
        char *label = decision_label(d);

        g_ptr_array_add(labels, label);
        marks[i] = (CliSvgMarker){ d->ts_ms, d->applied, label };
    }
    g_string_append(h, "<div class=\"charts\">");
    c = base;
    c.title = "IOPS";
    c.unit = "ops/s";
    c.series = &(CliSvgSeries){ NULL, "#3366cc", iops };
    c.n_series = 1;
    cli_svg_chart(h, &c);
    c.title = "Latency in QEMU's block layer";
    c.unit = "\302\265s per operation; the guest sees more";
    c.series = &(CliSvgSeries){ NULL, "#2e8b57", lat };
    cli_svg_chart(h, &c);
    c.title = "iothread CPU (I/O work and polling)";
    c.unit = "% of one core";
    if (split) {
        /* Which ticks polled is known: show the two apart. */
        const CliSvgSeries two[] = { { "polling on", "#dc7633", cpu_on },
                                     { "polling off", "#7f8c8d", cpu_off } };

        c.series = two;
        c.n_series = 2;
        cli_svg_chart(h, &c);
    } else {
        c.series = &(CliSvgSeries){ NULL, "#dc7633", cpu };
        cli_svg_chart(h, &c);
    }
    if (s->onoff.n_pairs) {
        c.title = "Estimated CPU spent on polling";
        c.unit = "% of one core, from off/on pairs";
        c.series = &(CliSvgSeries){ NULL, "#b03a2e", s->poll_cpu };
        c.n_series = 1;
        cli_svg_chart(h, &c);
    }
    g_string_append(h, "</div>");
}

/* The reason, then its evidence as "label value" pairs in the same
 * paragraph: one table row reads as one sentence. */
static void
evidence_list(GString *h, const char *reason)
{
    g_autofree char *text = NULL;
    g_autoptr(GPtrArray) fields = cli_evidence_parse(reason, &text);

    esc(h, text);
    if (!fields->len)
        return;
    g_string_append(h, " <span class=\"ev\">&#8212; ");
    for (guint i = 0; i < fields->len; i++) {
        const CliEvidenceField *f = g_ptr_array_index(fields, i);

        g_string_append(h, i ? " &#183; <b>" : "<b>");
        esc(h, f->label);
        g_string_append(h, "</b> ");
        esc(h, f->value);
    }
    g_string_append(h, "</span>");
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
                           "&#166;</b> recommended); the latest %u:</p><table class=\"log\"><tr>"
                           "<th>time (UTC)</th><th>outcome</th><th>poll-max-ns (ns)</th><th>"
                           "policy</th><th>reason and evidence</th></tr>", s->decisions_total,
                           shown);
    for (guint i = n; i-- > n - shown;) {
        const ReportDecision *d = &g_array_index(s->decisions, ReportDecision, i);
        g_autofree char *when = cli_format_time_ms(d->ts_ms, FALSE);
        g_autofree char *old = max_ns_text(d->old_max_ns);
        g_autofree char *new = max_ns_text(d->new_max_ns);

        g_string_append_printf(h, "<tr><td>%s</td><td>%s</td><td>%s &#8594; %s</td><td>",
                               when, d->applied ? "applied" : "recommended", old, new);
        esc(h, d->policy);
        g_string_append(h, "</td><td class=\"text\">");
        evidence_list(h, d->reason);
        g_string_append(h, "</td></tr>");
    }
    g_string_append(h, "</table>");
}

/* "Fleet" when the VMs are HOST/DOMAIN (report --prometheus), else "Host". */
/* "Fleet", or the one host the page is of, by the machine's name. */
static void
report_scope(GString *h, CliReport *r)
{
    g_string_append(h, "<h2 id=\"scope\">");
    if (r->fleet)
        g_string_append(h, "Fleet");
    else if (r->host_name) {
        g_string_append(h, "Host ");
        esc(h, r->host_name);
    } else
        g_string_append(h, "Host");
    g_string_append(h, "</h2>");
}

gboolean
cli_report_write(CliReport *r, GOutputStream *out, gint64 now_ms, GError **error)
{
    g_autoptr(GPtrArray) vms = NULL;
    g_autoptr(GPtrArray) by_cores = g_ptr_array_new();
    g_autoptr(GString) h = g_string_sized_new(64 * 1024);

    report_settle(r);
    vms = report_vms_build(r);
    /* A second order over the same VMs; vms owns them. */
    for (guint i = 0; i < vms->len; i++)
        g_ptr_array_add(by_cores, g_ptr_array_index(vms, i));

    g_ptr_array_sort(by_cores, cmp_vm_cores);
    write_header(h, r, now_ms, vms->len);
    report_scope(h, r);
    if (vms->len == 0)
        g_string_append(h, "<p class=\"note\">No samples in this range.</p>");
    else {
        if (r->fleet)
            fleet_hosts(h, vms);
        host_polling(h, r, by_cores, now_ms);
        host_vs_default(h, r, now_ms);
        report_html_projection(h, r);
        host_stacked_chart(h, r, by_cores, "iothread CPU, host total",
                           "cores, stacked by VM; I/O work and polling together",
                           G_STRUCT_OFFSET(ReportVm, cores));
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

        double poll = 0;
        guint pairs = 0, charged = 0;

        for (guint i = 0; i < vm->series->len; i++) {
            const ReportSeries *s = g_ptr_array_index(vm->series, i);

            pairs += s->onoff.n_pairs;
            if (!isnan(s->mean_poll_cores)) {
                poll += s->mean_poll_cores;
                charged++;
            }
        }
        g_string_append(h, "<h3>");
        esc(h, vm->name);
        g_string_append_printf(h, "</h3><p class=\"meta\">mean %s ops/s, %s iothread cores, "
                               "IOPS p95 %s ops/s, latency in QEMU p95 %s &#181;s", iops, cores,
                               iops95, lat95);
        if (charged && pairs)
            g_string_append_printf(h, ", of which polling %.3f cores (%u off/on pairs in the "
                                   "range)", poll, pairs);
        else if (charged)
            g_string_append_printf(h, ", of which polling %.3f cores (charged by off/on pairs)",
                                   poll);
        else
            g_string_append(h, "; no off/on pair, so no estimate of its polling CPU");
        g_string_append(h, "</p>");
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
