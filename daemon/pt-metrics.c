/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The OpenMetrics exposition, served over HTTP (pt-metrics-http.c) and
 * returned by the control command `metrics`.
 *
 * Families are per iothread (labels domain, iothread, as the libvirt
 * exporter names them), per VM, and for the daemon's own health.  Rates
 * are exported as counters so that any scrape interval works; gauges are
 * for states only.  Names follow the OpenMetrics conventions: counters end in
 * _total, units are base units (seconds, bytes), and the text ends in
 * "# EOF".  The same figures go out in the Prometheus text format to
 * clients that do not ask for OpenMetrics; promtool checks that in the
 * test suite.
 */
#include "pt-config.h"
#include "pt-metrics.h"

#include <string.h>

/* Label values must escape backslash, double quote and newline. */
static void
pt_label(GString *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            g_string_append_c(out, '\\');
        if (*s == '\n') {
            g_string_append(out, "\\n");
            continue;
        }
        g_string_append_c(out, *s);
    }
}

typedef struct {
    const char *name;
    const char *type;
    const char *unit;
    const char *help;
} PtFamily;

/*
 * The two formats differ only in the metadata: OpenMetrics names a counter
 * family without "_total" and has UNIT lines and "# EOF"; the Prometheus
 * text format (0.0.4, what promtool checks and older scrapers ask for)
 * names the family as its sample and has neither.
 */
static gboolean pt_om = TRUE;

static void
pt_family(GString *out, const PtFamily *f)
{
    const char *suffix = !pt_om && g_str_equal(f->type, "counter") ? "_total" : "";

    g_string_append_printf(out, "# TYPE %s%s %s\n", f->name, suffix, f->type);
    if (f->unit && pt_om)
        g_string_append_printf(out, "# UNIT %s %s\n", f->name, f->unit);
    g_string_append_printf(out, "# HELP %s%s %s\n", f->name, suffix, f->help);
}

/* A bucket bound as OpenMetrics writes numbers: "1.0", not "1". */
static void
pt_le(GString *out, double le)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    g_ascii_formatd(buf, sizeof(buf), "%g", le);
    g_string_append(out, buf);
    if (!strpbrk(buf, ".e"))
        g_string_append(out, ".0");
}

/* The tick durations as a histogram: cumulative buckets, count and sum. */
static void
pt_tick_histogram(GString *out, const PtDaemonStats *st)
{
    static const char *name = "polltune_tick_duration_seconds";
    guint64 cum = 0;
    char sum[G_ASCII_DTOSTR_BUF_SIZE];

    pt_family(out, &(PtFamily){ name, "histogram", "seconds",
                                "Tick durations, from a tick's start to its last write." });
    for (guint b = 0; b < PT_TICK_BUCKETS; b++) {
        cum += st->tick_hist[b];
        g_string_append_printf(out, "%s_bucket{le=\"", name);
        pt_le(out, pt_tick_bucket_le[b]);
        g_string_append_printf(out, "\"} %" G_GUINT64_FORMAT "\n", cum);
    }
    cum += st->tick_hist[PT_TICK_BUCKETS];
    g_string_append_printf(out, "%s_bucket{le=\"+Inf\"} %" G_GUINT64_FORMAT "\n", name, cum);
    g_string_append_printf(out, "%s_count %" G_GUINT64_FORMAT "\n", name, cum);
    g_ascii_formatd(sum, sizeof(sum), "%.6f", st->tick_s_sum);
    g_string_append_printf(out, "%s_sum %s\n", name, sum);
}

/*
 * domain is the name the VM goes by (the libvirt domain; a QMP target's
 * QEMU -name), as the libvirt exporter labels it, so that dashboards and
 * joins keep it; a target whose identity differs from it (a QMP target's
 * socket path, pt-target.h) has it as socket too, which keeps every series
 * one target's even where two VMs go by one name.
 */
static void
pt_labels(GString *out, const char *name, const PtTarget *t, const PtIothread *io)
{
    g_string_append_printf(out, "%s{domain=\"", name);
    pt_label(out, pt_target_display(t));
    if (t->display) {
        g_string_append(out, "\",socket=\"");
        pt_label(out, t->name);
    }
    if (io) {
        g_string_append(out, "\",iothread=\"");
        pt_label(out, io->id);
    }
    g_string_append_c(out, '"');
}

/* The first entry of the metric table that names @family. */
static MetricId
pt_family_first(const char *family)
{
    for (int i = 0; i < METRIC_MAX; i++)
        if (metric_def(i)->om_family && g_str_equal(metric_def(i)->om_family, family))
            return i;
    return METRIC_INVALID;
}

/* One iothread's samples of the family that starts at entry @first. */
static void
pt_render_member_samples(GString *out, const char *sample, MetricId first, const PtTarget *t,
                         const PtIothread *io)
{
    const MetricDef *f = metric_def(first);
    gint64 sum = 0, v;
    gboolean any = FALSE;

    for (int i = first; i < METRIC_MAX; i++) {
        const MetricDef *d = metric_def(i);

        if (!d->om_family || !g_str_equal(d->om_family, f->om_family))
            continue;
        if (!f->om_label) {
            /* Members without a label are one figure: their sum. */
            if (pt_iothread_metric(io, i, -1, &v)) {
                sum += v;
                any = TRUE;
            }
            continue;
        }
        for (int pol = 0; pol < 2; pol++) {
            /* A label without a value splits by whether polling was on. */
            if (!pt_iothread_metric(io, i, d->om_label_value ? -1 : pol, &v))
                break;
            pt_labels(out, sample, t, io);
            g_string_append_printf(out, ",%s=\"%s\"} %.9g\n", d->om_label,
                                   d->om_label_value ? d->om_label_value : pol ? "on" : "off",
                                   v * d->om_scale);
            if (d->om_label_value)
                break;
        }
    }
    if (any) {
        pt_labels(out, sample, t, io);
        g_string_append_printf(out, "} %.9g\n", sum * f->om_scale);
    }
}

/*
 * Per-iothread families, from the metric table: gauges for the settings
 * in force, counters for the rest, so that whatever the scrape interval,
 * rate() of these gives IOPS, bandwidth, mean latency (io_time over
 * operations), mean queue depth (rate of io_time), cores and blocks per
 * operation.  Each is absent until its source first gave a figure.
 */
static void
pt_render_table(GString *out, GPtrArray *ios, GPtrArray *owners, gboolean gauges)
{
    for (int i = 0; i < METRIC_MAX; i++) {
        const MetricDef *d = metric_def(i);
        gboolean gauge = d->reset == METRIC_RESET_GAUGE;
        g_autofree char *sample = NULL;

        if (!d->om_family || gauge != gauges || pt_family_first(d->om_family) != i)
            continue;
        pt_family(out, &(PtFamily){ d->om_family, gauge ? "gauge" : "counter", d->om_unit,
                                    d->om_help });
        sample = g_strconcat(d->om_family, gauge ? "" : "_total", NULL);
        for (guint k = 0; k < ios->len; k++)
            pt_render_member_samples(out, sample, i, owners->pdata[k], ios->pdata[k]);
    }
}

/* 1: the I/O counters are the iothread's own; N: its group's, shared by N. */
static void
pt_render_io_shared_by(GString *out, GPtrArray *ios, GPtrArray *owners)
{
    static const PtFamily f = { "polltune_iothread_io_shared_by", "gauge", NULL,
                                "Iothreads whose I/O counters are these same figures: 1 for "
                                "an iothread's own, the group's size when iothreads share "
                                "devices." };

    pt_family(out, &f);
    for (guint i = 0; i < ios->len; i++) {
        const PtIothread *io = ios->pdata[i];
        const PolicyMetrics *m = io->history->len ?
            &g_array_index(io->history, PolicyMetrics, io->history->len - 1) : NULL;

        if (!m || !m->have_io)
            continue;
        pt_labels(out, f.name, owners->pdata[i], io);
        g_string_append_printf(out, "} %u\n", MAX(m->io_shared_by, 1));
    }
}

/*
 * Gains against QEMU's default, as counters that a fleet report and
 * recording rules divide by their increases over a range: the same code
 * (policy-gain.h) the single-host report replays over the store's ticks,
 * so both give the same figures.  Seconds are of tick time, operations
 * and CPU against the default, gains and losses apart since a counter
 * never falls.
 */
static void
pt_render_gain(GString *out, GPtrArray *ios, GPtrArray *owners)
{
    for (int c = 0; c < POLICY_GAIN_MAX; c++) {
        const PolicyGainCounterDef *def = policy_gain_counter_def(c);
        g_autofree char *sample = g_strconcat(def->family, "_total", NULL);

        pt_family(out, &(PtFamily){ def->family, "counter", def->unit, def->help });
        for (guint i = 0; i < ios->len; i++) {
            const PtIothread *io = ios->pdata[i];

            pt_labels(out, sample, owners->pdata[i], io);
            /* 15 digits: an increase over a short range of a large
             * total stays exact to well below one operation a second. */
            g_string_append_printf(out, "} %.15g\n",
                                   policy_gain_totals_get(policy_gain_totals(io->gain), c));
        }
    }
}

/* What holds the policy back on each iothread, and when it looks again
 * (`polltunectl explain` in full). */
static void
pt_render_explain(GString *out, PtDaemon *d, GPtrArray *ios, GPtrArray *owners, gint64 now_ms)
{
    g_autoptr(GPtrArray) views = g_ptr_array_new_with_free_func(
        (GDestroyNotify)policy_explain_free);

    for (guint i = 0; i < ios->len; i++)
        g_ptr_array_add(views, pt_daemon_explain(d, owners->pdata[i], ios->pdata[i]));
    pt_family(out, &(PtFamily){ "polltune_guard_holds", "gauge", NULL,
                                "1 while the guard holds the policy back on this iothread." });
    for (guint i = 0; i < ios->len; i++) {
        const PolicyExplain *x = views->pdata[i];

        for (int g = 0; g < POLICY_GUARD_MAX; g++) {
            pt_labels(out, "polltune_guard_holds", owners->pdata[i], ios->pdata[i]);
            g_string_append_printf(out, ",guard=\"%s\"} %d\n", policy_guard_to_string(g),
                                   x->guards[g].holds);
        }
    }
    pt_family(out, &(PtFamily){ "polltune_next_look_seconds", "gauge", "seconds",
                                "Time until the policy may next change this iothread.  "
                                "Absent: not before an operator acts or the load moves." });
    for (guint i = 0; i < ios->len; i++) {
        const PolicyExplain *x = views->pdata[i];

        if (x->next_look_ms == G_MININT64)
            continue;
        pt_labels(out, "polltune_next_look_seconds", owners->pdata[i], ios->pdata[i]);
        g_string_append_printf(out, "} %.3f\n", MAX(x->next_look_ms - now_ms, 0) / 1000.0);
    }
}

/* States: the build, the mode, the budget, libvirt, overrides. */
static void
pt_render_states(GString *out, PtDaemon *d, GPtrArray *ios, GPtrArray *owners,
                 GPtrArray *targets)
{
    gint64 now_ms = g_get_real_time() / 1000;
    gboolean lv_enabled = FALSE;
    guint64 lv_connects = 0;
    gboolean lv_up = pt_daemon_libvirt_connected(d, &lv_enabled, &lv_connects);

    pt_family(out, &(PtFamily){ "polltune_build_info", "gauge", NULL,
                                "polltuned's version, as a label; always 1." });
    g_string_append_printf(out, "polltune_build_info{version=\"%s\"} 1\n", PT_VERSION);
    pt_family(out, &(PtFamily){ "polltune_mode", "gauge", NULL,
                                "The daemon's mode: 1 for the one in force." });
    for (int m = 0; m < PT_MODE_MAX; m++)
        g_string_append_printf(out, "polltune_mode{mode=\"%s\"} %d\n", pt_mode_to_string(m),
                               pt_daemon_get_mode(d) == (PtMode)m);
    pt_family(out, &(PtFamily){ "polltune_budget_cores", "gauge", NULL,
                                "Host-wide polling budget in cores; 0: none set." });
    g_string_append_printf(out, "polltune_budget_cores %.4f\n",
                           pt_daemon_get_conf(d)->policy->budget_cores);
    if (lv_enabled) {
        pt_family(out, &(PtFamily){ "polltune_libvirt_connected", "gauge", NULL,
                                    "1 while the daemon is connected to libvirt." });
        g_string_append_printf(out, "polltune_libvirt_connected %d\n", lv_up);
        /* Tells a connection lost from one never made: libvirt = true is
         * the shipped default, also on hosts without libvirtd. */
        pt_family(out, &(PtFamily){ "polltune_libvirt_connections", "counter", NULL,
                                    "Connections to libvirt made since the daemon started." });
        g_string_append_printf(out, "polltune_libvirt_connections_total %" G_GUINT64_FORMAT
                               "\n", lv_connects);
    }
    pt_family(out, &(PtFamily){ "polltune_override_remaining_seconds", "gauge", "seconds",
                                "Time left of an operator's override; +Inf: until cleared. "
                                "Absent: no override." });
    for (guint i = 0; i < ios->len; i++) {
        const PtIothread *io = ios->pdata[i];
        const PtTarget *t = owners->pdata[i];
        const PolicyOverrideInfo *ov = pt_daemon_override_for(d, t->name, io->id);

        if (!ov)
            continue;
        pt_labels(out, "polltune_override_remaining_seconds", t, io);
        if (!ov->expires_ms)
            g_string_append(out, "} +Inf\n");
        else
            g_string_append_printf(out, "} %.3f\n", MAX(ov->expires_ms - now_ms, 0) / 1000.0);
    }
    pt_family(out, &(PtFamily){ "polltune_external_hold_remaining_seconds", "gauge", "seconds",
                                "Time left of a write made outside polltune that the policy "
                                "holds as an implicit override.  Absent: none." });
    for (guint i = 0; i < ios->len; i++) {
        const PtIothread *io = ios->pdata[i];
        const PtTarget *t = owners->pdata[i];
        gint64 until;

        if (!pt_daemon_external_hold_for(d, t->name, io->group ? io->group : io->id, NULL, NULL,
                                         &until))
            continue;
        pt_labels(out, "polltune_external_hold_remaining_seconds", t, io);
        g_string_append_printf(out, "} %.3f\n", MAX(until - now_ms, 0) / 1000.0);
    }
    pt_render_explain(out, d, ios, owners, now_ms);
    pt_family(out, &(PtFamily){ "polltune_vm_exits", "counter", NULL,
                                "KVM exits of the whole VM since the daemon first saw it." });
    for (guint i = 0; i < targets->len; i++) {
        const PtTarget *t = targets->pdata[i];

        if (!t->have_exits_total)
            continue;
        pt_labels(out, "polltune_vm_exits_total", t, NULL);
        g_string_append_printf(out, "} %" G_GINT64_FORMAT "\n", t->exits_total);
    }
}

static GPtrArray *
pt_all_iothreads(PtDaemon *d, GPtrArray **owners)
{
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);
    GPtrArray *out = g_ptr_array_new();

    *owners = g_ptr_array_new();
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, t->iothreads);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            g_ptr_array_add(out, v);
            g_ptr_array_add(*owners, t);
        }
    }
    return out;
}

static char *pt_render(PtDaemon *d);

char *
pt_daemon_render_metrics(PtDaemon *d, gboolean openmetrics)
{
    /* The main loop is single-threaded; the flag lives for one render. */
    pt_om = openmetrics;
    return pt_render(d);
}

static char *
pt_render(PtDaemon *d)
{
    GString *out = g_string_new(NULL);
    g_autoptr(GPtrArray) owners = NULL;
    g_autoptr(GPtrArray) ios = pt_all_iothreads(d, &owners);
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);
    StoreStats ss;
    PtDaemonStats stats;
    guint by_state[PT_TARGET_STATE_MAX] = { 0 };

    pt_render_table(out, ios, owners, TRUE);
    pt_render_io_shared_by(out, ios, owners);
    pt_render_table(out, ios, owners, FALSE);
    pt_render_gain(out, ios, owners);
    pt_render_states(out, d, ios, owners, targets);
    pt_daemon_get_stats(d, &stats);

    pt_family(out, &(PtFamily){ "polltune_ticks", "counter", NULL, "Ticks completed." });
    g_string_append_printf(out, "polltune_ticks_total %" G_GUINT64_FORMAT "\n", stats.ticks);
    pt_family(out, &(PtFamily){ "polltune_tick_overruns", "counter", NULL,
                                "Ticks that took longer than the interval." });
    g_string_append_printf(out, "polltune_tick_overruns_total %" G_GUINT64_FORMAT "\n",
                           stats.overruns);
    pt_tick_histogram(out, &stats);
    pt_family(out, &(PtFamily){ "polltune_tick_last_duration_seconds", "gauge", "seconds",
                                "Duration of the last tick." });
    g_string_append_printf(out, "polltune_tick_last_duration_seconds %.6f\n",
                           stats.last_tick_ms / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_tick_wait_seconds", "counter", "seconds",
                                "Tick time spent waiting for the targets' answers." });
    g_string_append_printf(out, "polltune_tick_wait_seconds_total %.6f\n", stats.wait_s_total);
    pt_family(out, &(PtFamily){ "polltune_tick_work_seconds", "counter", "seconds",
                                "Tick time spent on the daemon's own work after the answers "
                                "(derive, store, policy)." });
    g_string_append_printf(out, "polltune_tick_work_seconds_total %.6f\n", stats.work_s_total);
    pt_family(out, &(PtFamily){ "polltune_tick_duration_p50_seconds", "gauge", "seconds",
                                "Median tick duration over the last 600 ticks." });
    g_string_append_printf(out, "polltune_tick_duration_p50_seconds %.6f\n",
                           stats.tick_ms_p50 / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_tick_duration_p99_seconds", "gauge", "seconds",
                                "99th percentile tick duration over the last 600 ticks." });
    g_string_append_printf(out, "polltune_tick_duration_p99_seconds %.6f\n",
                           stats.tick_ms_p99 / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_late_samples", "counter", NULL,
                                "Target samples that missed their tick's deadline." });
    g_string_append_printf(out, "polltune_late_samples_total %" G_GUINT64_FORMAT "\n",
                           stats.late_targets);
    store_db_get_stats(pt_daemon_get_store(d), &ss);
    pt_family(out, &(PtFamily){ "polltune_store_errors", "counter", NULL,
                                "Tick writes that failed." });
    g_string_append_printf(out, "polltune_store_errors_total %" G_GUINT64_FORMAT "\n",
                           stats.store_errors);
    pt_family(out, &(PtFamily){ "polltune_store_dropped_ticks", "counter", NULL,
                                "Ticks dropped because the pending queue overflowed." });
    g_string_append_printf(out, "polltune_store_dropped_ticks_total %" G_GUINT64_FORMAT "\n",
                           ss.ticks_dropped);
    pt_family(out, &(PtFamily){ "polltune_store_pending_ticks", "gauge", NULL,
                                "Ticks kept in memory until the database takes them." });
    g_string_append_printf(out, "polltune_store_pending_ticks %u\n", ss.pending_ticks);
    pt_family(out, &(PtFamily){ "polltune_decisions", "counter", NULL,
                                "Policy decisions by outcome." });
    g_string_append_printf(out, "polltune_decisions_total{outcome=\"applied\"} %" G_GUINT64_FORMAT "\n"
                           "polltune_decisions_total{outcome=\"failed\"} %" G_GUINT64_FORMAT "\n"
                           "polltune_decisions_total{outcome=\"recommended\"} %" G_GUINT64_FORMAT "\n",
                           stats.decisions_applied, stats.decisions_failed,
                           stats.decisions_recommended);
    pt_family(out, &(PtFamily){ "polltune_target_sample_seconds", "gauge", "seconds",
                                "Time the last sample of a VM took, first query to last answer." });
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        by_state[t->state]++;
        if (t->sample_ms < 0)
            continue;
        pt_labels(out, "polltune_target_sample_seconds", t, NULL);
        g_string_append_printf(out, "} %.6f\n", t->sample_ms / 1000.0);
    }
    pt_family(out, &(PtFamily){ "polltune_target_exits_source", "gauge", NULL,
                                "1 for the source of the VM's exit figures "
                                "(none: absent; the reason is in status)." });
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        pt_labels(out, "polltune_target_exits_source", t, NULL);
        g_string_append_printf(out, ",source=\"%s\"} 1\n",
                               probe_exit_source_to_string(pt_target_exit_source(t, NULL)));
    }
    pt_family(out, &(PtFamily){ "polltune_target_qemu_version", "gauge", NULL,
                                "QEMU release of the VM as major * 1000000 + minor * 1000 "
                                "+ micro." });
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        if (!t->qemu_version)
            continue;
        pt_labels(out, "polltune_target_qemu_version", t, NULL);
        g_string_append_printf(out, "} %u\n", t->qemu_version);
    }
    pt_family(out, &(PtFamily){ "polltune_targets", "gauge", NULL, "Targets by state." });
    for (int s = 0; s < PT_TARGET_STATE_MAX; s++)
        g_string_append_printf(out, "polltune_targets{state=\"%s\"} %u\n",
                               pt_target_state_to_string(s), by_state[s]);
    pt_family(out, &(PtFamily){ "polltune_polling_cores", "gauge", NULL,
                                "CPU of iothreads with polling enabled, in cores." });
    g_string_append_printf(out, "polltune_polling_cores %.4f\n", pt_daemon_polling_cores(d));
    if (pt_om)
        g_string_append(out, "# EOF\n");
    return g_string_free(out, FALSE);
}
