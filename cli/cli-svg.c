/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-svg: line, stacked-area and bar charts as inline SVG.
 */
#include <math.h>

#include "cli-format.h"
#include "cli-svg.h"

#define MARGIN_LEFT 46
#define MARGIN_RIGHT 10
#define MARGIN_TOP 8
#define MARGIN_BOTTOM 22

double
cli_svg_nice_ceiling(double v)
{
    static const double steps[] = { 1, 2, 2.5, 5, 10 };
    double p;

    if (!(v > 0) || isinf(v))
        return 1;
    p = pow(10, floor(log10(v)));
    for (gsize i = 0; i < G_N_ELEMENTS(steps); i++)
        if (steps[i] * p >= v * (1 - 1e-9))
            return steps[i] * p;
    return 10 * p;
}

static void
text_escaped(GString *out, const char *s)
{
    g_autofree char *e = g_markup_escape_text(s ? s : "", -1);

    g_string_append(out, e);
}

typedef struct {
    double x0, y0, w, h;        /* plot area */
    gint64 from, to;
    double ymax;
} Frame;

static double
frame_x_ms(const Frame *f, gint64 ms)
{
    return f->x0 + (double)(ms - f->from) / (double)(f->to - f->from) * f->w;
}

static double
frame_x_bucket(const Frame *f, guint i, guint n)
{
    return f->x0 + (i + 0.5) / n * f->w;
}

static double
frame_y(const Frame *f, double v)
{
    return f->y0 + f->h - CLAMP(v / f->ymax, 0, 1) * f->h;
}

/* Time axis ticks at round intervals, at most six of them. */
static void
axis_time(GString *out, const Frame *f)
{
    static const gint64 steps_s[] = {
        60, 300, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400,
        14 * 86400, 30 * 86400,
    };
    gint64 span_s = (f->to - f->from) / 1000, step = steps_s[G_N_ELEMENTS(steps_s) - 1];
    const char *fmt;

    for (gsize i = 0; i < G_N_ELEMENTS(steps_s); i++) {
        if (span_s / steps_s[i] <= 5) {
            step = steps_s[i];
            break;
        }
    }
    fmt = step >= 86400 ? "%m-%d" : span_s > 86400 ? "%m-%d %H:%M" : "%H:%M";
    for (gint64 t = (f->from / 1000 / step + 1) * step; t * 1000 < f->to; t += step) {
        g_autoptr(GDateTime) dt = g_date_time_new_from_unix_utc(t);
        g_autofree char *label = g_date_time_format(dt, fmt);
        double x = frame_x_ms(f, t * 1000);

        g_string_append_printf(out, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                               "y2=\"%.1f\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                               "text-anchor=\"middle\">%s</text>", x, x, f->y0, f->y0 + f->h,
                               x, f->y0 + f->h + 14, label);
    }
}

/* The fewest decimals that write @step exactly (0.25: 2, 0.5: 1, 5: 0). */
static int
step_decimals(double step)
{
    for (int d = 0; d < 9; d++) {
        double x = step * pow(10, d);

        if (fabs(x - round(x)) < 1e-6 * x)
            return d;
    }
    return 9;
}

char *
cli_svg_axis_label(double v, double step, double ymax)
{
    static const char suffix[] = { 'k', 'M', 'G', 'T' };
    double unit = 1;
    int si = -1;

    if (v == 0)
        return g_strdup("0");
    /* Labels in the unit of the axis' top (k, M, ...), with as many
     * decimals as the step needs: every label differs from the next. */
    while (ymax / unit >= 1000 && si < 3) {
        unit *= 1000;
        si++;
    }
    if (si < 0)
        return g_strdup_printf("%.*f", step_decimals(step), v);
    return g_strdup_printf("%.*f%c", step_decimals(step / unit), v / unit, suffix[si]);
}

static void
axis_values(GString *out, const Frame *f)
{
    /* Steps of 1, 2, 2.5 or 5 times a power of ten: round labels. */
    double lead = f->ymax / pow(10, floor(log10(f->ymax)));
    int steps = fabs(lead - 2.5) < 1e-9 || fabs(lead - 5) < 1e-9 ? 5 : 4;

    for (int i = 0; i <= steps; i++) {
        double v = f->ymax * i / steps, y = frame_y(f, v);
        g_autofree char *label = cli_svg_axis_label(v, f->ymax / steps, f->ymax);

        g_string_append_printf(out, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" "
                               "y2=\"%.1f\"/><text class=\"tick\" x=\"%.1f\" y=\"%.1f\" "
                               "text-anchor=\"end\">%s</text>", i ? "grid" : "axis", f->x0,
                               f->x0 + f->w, y, y, f->x0 - 4, y + 4, label);
    }
}

/* Empty buckets up to this many in a row are bridged; a longer run is a
 * gap in the data (the daemon was down, the VM was off) and breaks the line. */
#define MAX_BRIDGED 3

/* The end of the segment starting at @i: the last bucket with a value
 * before a run of more than MAX_BRIDGED empty ones. */
static guint
segment_end(const double *y, guint n, guint i)
{
    guint last = i;

    for (guint j = i + 1; j < n && j - last <= MAX_BRIDGED + 1; j++)
        if (!isnan(y[j]))
            last = j;
    return last;
}

/* A line (or, with @fill, an area down to @base) through the buckets that
 * have a value. */
static guint
path_line(GString *out, const Frame *f, const double *y, const double *base, guint n,
          const char *color, gboolean fill)
{
    guint points = 0;
    gsize start = out->len;

    g_string_append_printf(out, "<path class=\"series\" fill=\"%s\" stroke=\"%s\" d=\"",
                           fill ? color : "none", color);
    for (guint i = 0; i < n; i++) {
        guint end;

        if (isnan(y[i]))
            continue;
        end = segment_end(y, n, i);
        for (guint j = i; j <= end; j++) {
            if (isnan(y[j]))
                continue;
            g_string_append_printf(out, "%c%.1f %.1f", j == i ? 'M' : 'L',
                                   frame_x_bucket(f, j, n),
                                   frame_y(f, base ? base[j] + y[j] : y[j]));
            points++;
        }
        /* Close an area back along the series below it. */
        for (guint j = end + 1; fill && j-- > i;)
            if (!isnan(y[j]))
                g_string_append_printf(out, "L%.1f %.1f", frame_x_bucket(f, j, n),
                                       frame_y(f, base ? base[j] : 0));
        if (fill)
            g_string_append_c(out, 'Z');
        i = end;
    }
    if (points == 0) {
        g_string_truncate(out, start);
        return 0;
    }
    g_string_append_printf(out, "\" data-points=\"%u\"%s/>", points,
                           fill ? " fill-opacity=\"0.55\"" : "");
    return points;
}

static void
markers(GString *out, const Frame *f, const CliSvgChart *c)
{
    for (guint i = 0; i < c->n_markers; i++) {
        const CliSvgMarker *m = &c->markers[i];
        double x;

        if (m->ts_ms < f->from || m->ts_ms >= f->to)
            continue;
        x = frame_x_ms(f, m->ts_ms);
        g_string_append_printf(out, "<line class=\"decision %s\" x1=\"%.1f\" x2=\"%.1f\" "
                               "y1=\"%.1f\" y2=\"%.1f\"><title>", m->applied ? "applied"
                               : "recommended", x, x, f->y0, f->y0 + f->h);
        text_escaped(out, m->label);
        g_string_append(out, "</title></line>");
    }
}

static double
chart_max(const CliSvgChart *c)
{
    double max = 0;

    if (c->ymax > 0)
        return c->ymax;
    for (guint i = 0; i < c->n; i++) {
        double sum = 0;

        for (guint s = 0; s < c->n_series; s++) {
            double v = c->series[s].y[i];

            if (isnan(v))
                continue;
            sum = c->stacked ? sum + v : MAX(sum, v);
        }
        max = MAX(max, sum);
    }
    /* Headroom, so a flat series does not run along the top edge. */
    return cli_svg_nice_ceiling(max * 1.08);
}

void
cli_svg_chart(GString *out, const CliSvgChart *c)
{
    guint width = c->width ? c->width : 360, height = c->height ? c->height : 150;
    Frame f = { MARGIN_LEFT, MARGIN_TOP, width - MARGIN_LEFT - MARGIN_RIGHT,
                height - MARGIN_TOP - MARGIN_BOTTOM, c->from_ms, MAX(c->to_ms, c->from_ms + 1),
                chart_max(c) };
    g_autofree double *base = c->stacked ? g_new0(double, c->n) : NULL;

    g_string_append(out, "<figure class=\"chart\"><figcaption>");
    text_escaped(out, c->title);
    if (c->unit) {
        g_string_append(out, " <span class=\"unit\">");
        text_escaped(out, c->unit);
        g_string_append(out, "</span>");
    }
    g_string_append_printf(out, "</figcaption><svg role=\"img\" width=\"%u\" height=\"%u\" "
                           "viewBox=\"0 0 %u %u\">", width, height, width, height);
    axis_values(out, &f);
    axis_time(out, &f);
    for (guint s = 0; s < c->n_series; s++) {
        path_line(out, &f, c->series[s].y, base, c->n, c->series[s].color, c->stacked);
        for (guint i = 0; base && i < c->n; i++)
            if (!isnan(c->series[s].y[i]))
                base[i] += c->series[s].y[i];
    }
    markers(out, &f, c);
    g_string_append(out, "</svg>");
    if (c->n_series > 1 || (c->n_series == 1 && c->series[0].name)) {
        g_string_append(out, "<div class=\"legend\">");
        for (guint s = 0; s < c->n_series; s++) {
            g_string_append_printf(out, "<span><i style=\"background:%s\"></i>",
                                   c->series[s].color);
            text_escaped(out, c->series[s].name);
            g_string_append(out, "</span>");
        }
        g_string_append(out, "</div>");
    }
    g_string_append(out, "</figure>");
}

void
cli_svg_bars(GString *out, const char *title, const CliSvgBar *bars, guint n, guint width)
{
    const guint row = 20, label_w = 150, value_w = 70;
    guint height = n * row + 4;
    double max = 0, plot_w = width - label_w - value_w;

    for (guint i = 0; i < n; i++)
        if (!isnan(bars[i].value))
            max = MAX(max, bars[i].value);
    g_string_append(out, "<figure class=\"chart\"><figcaption>");
    text_escaped(out, title);
    g_string_append_printf(out, "</figcaption><svg role=\"img\" width=\"%u\" height=\"%u\" "
                           "viewBox=\"0 0 %u %u\">", width, height, width, height);
    for (guint i = 0; i < n; i++) {
        double v = isnan(bars[i].value) ? 0 : bars[i].value;
        double w = max > 0 ? v / max * plot_w : 0;
        g_autofree char *vt = bars[i].value_text ? g_strdup(bars[i].value_text)
                                                 : cli_format_si(bars[i].value);
        guint y = i * row + 2;

        g_string_append_printf(out, "<text class=\"label\" x=\"%u\" y=\"%u\" "
                               "text-anchor=\"end\">", label_w - 6, y + 13);
        text_escaped(out, bars[i].label);
        g_string_append_printf(out, "</text><rect class=\"bar\" x=\"%u\" y=\"%u\" "
                               "width=\"%.1f\" height=\"%u\"/><text class=\"tick\" x=\"%.1f\" "
                               "y=\"%u\">", label_w, y + 2, MAX(w, 1.0), row - 6,
                               label_w + MAX(w, 1.0) + 4, y + 13);
        text_escaped(out, vt);
        g_string_append(out, "</text>");
    }
    g_string_append(out, "</svg></figure>");
}
