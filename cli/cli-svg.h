/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-svg: the inline SVG charts of the capacity report.
 *
 * Time series over evenly spaced buckets (lines, or stacked areas for
 * shares of a total) with decisions marked as vertical lines, and
 * horizontal bar charts.  The output is well-formed XML that also parses as
 * HTML5, so the report stays one file a browser opens without fetching
 * anything and an XML parser can check.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef struct {
    const char *name;           /* legend text; NULL for a single series */
    const char *color;          /* CSS colour */
    const double *y;            /* one value per bucket; NAN is a gap */
} CliSvgSeries;

typedef struct {
    gint64 ts_ms;
    gboolean applied;           /* FALSE: recommended only */
    const char *label;          /* tooltip */
} CliSvgMarker;

typedef struct {
    const char *title;
    const char *unit;           /* shown after the title */
    gint64 from_ms, to_ms;      /* the x range; bucket i covers an n-th of it */
    guint n;                    /* buckets */
    const CliSvgSeries *series;
    guint n_series;
    gboolean stacked;           /* draw cumulative filled areas */
    const CliSvgMarker *markers;
    guint n_markers;
    guint width, height;        /* 0: defaults */
    double ymax;                /* the value axis' top; 0: from the data */
} CliSvgChart;

void cli_svg_chart(GString *out, const CliSvgChart *chart);

typedef struct {
    const char *label;
    double value;
    const char *value_text;     /* NULL: the value, shortened */
} CliSvgBar;

void cli_svg_bars(GString *out, const char *title, const CliSvgBar *bars, guint n,
                  guint width);

/* The label of @v on a value axis of ticks @step apart up to @ymax: in the
 * top's unit (k, M, ...), with the decimals the step needs, so no two
 * ticks read alike ("0.005", "2.5k", "0"). */
char *cli_svg_axis_label(double v, double step, double ymax);

/* A round axis maximum at or above @v (1, 2, 2.5 or 5 times a power of 10). */
double cli_svg_nice_ceiling(double v);

G_END_DECLS
