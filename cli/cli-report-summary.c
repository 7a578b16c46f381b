/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-summary: each series' figures as `report --json` prints
 * them (docs/CLI.md), from the estimates the page was written with.
 */
#include <math.h>

#include "cli-report-private.h"

static void
summary_double(json_object *o, const char *key, double v)
{
    if (!isnan(v) && !isinf(v))
        json_object_object_add(o, key, json_object_new_double(v));
}

json_object *
cli_report_summary(CliReport *r)
{
    json_object *a = json_object_new_array();

    for (guint i = 0; i < r->series->len; i++) {
        const ReportSeries *s = g_ptr_array_index(r->series, i);
        json_object *o = json_object_new_object();
        GArray *ticks = s->ticks ? s->ticks : s->points;
        gint64 last_max = -1;

        for (guint k = ticks->len; k-- > 0 && last_max < 0;)
            last_max = g_array_index(ticks, ReportPoint, k).max_ns;
        json_object_object_add(o, "target", json_object_new_string(s->target));
        json_object_object_add(o, "name", json_object_new_string(s->name ? s->name : s->target));
        json_object_object_add(o, "iothread", json_object_new_string(s->iothread));
        json_object_object_add(o, "points", json_object_new_int64((gint64)s->n_points));
        summary_double(o, "iops_mean", s->mean_iops);
        summary_double(o, "cpu_pct_mean", s->mean_cpu_pct);
        summary_double(o, "polling_share", s->on_share);
        if (last_max >= 0)
            json_object_object_add(o, "poll_max_ns_last", json_object_new_int64(last_max));
        json_object_object_add(o, "onoff_pairs", json_object_new_int64(s->onoff.n_pairs));
        summary_double(o, "polling_cpu_pct", s->poll_on_pct);
        summary_double(o, "polling_cores_mean", s->mean_poll_cores);
        summary_double(o, "cores_saved_mean", s->saved_cores);
        summary_double(o, "iops_gained_mean", s->gained_iops);
        summary_double(o, "unmeasured_share", s->unmeasured_share);
        json_object_object_add(o, "explorations", json_object_new_int64(s->explorations));
        summary_double(o, "explorations_per_hour", report_per_hour(r, s->explorations));
        json_object_array_add(a, o);
    }
    return a;
}
