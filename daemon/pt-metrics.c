/*
 * The OpenMetrics exposition, served over HTTP with libsoup and returned by
 * the control command `metrics`.
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
#include "pt-daemon-private.h"
#include "pt-metrics.h"
#include "pt-log.h"

#include <libsoup/soup.h>

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

typedef double (*PtGetter)(const PtIothread *io, const PolicyMetrics *m, gboolean *ok);

static double
get_poll_max(const PtIothread *io, const PolicyMetrics *m, gboolean *ok)
{
    *ok = io->have_triple;
    return io->triple.poll_max_ns / 1e9;
}

static double
get_poll_grow(const PtIothread *io, const PolicyMetrics *m, gboolean *ok)
{
    *ok = io->have_triple;
    return io->triple.poll_grow;
}

static double
get_poll_shrink(const PtIothread *io, const PolicyMetrics *m, gboolean *ok)
{
    *ok = io->have_triple;
    return io->triple.poll_shrink;
}

static const struct {
    PtFamily f;
    PtGetter get;
} pt_iothread_families[] = {
    { { "polltune_poll_max_seconds", "gauge", "seconds", "The iothread's poll-max-ns, in seconds." }, get_poll_max },
    { { "polltune_poll_grow", "gauge", NULL, "The iothread's poll-grow (0: QEMU's default)." }, get_poll_grow },
    { { "polltune_poll_shrink", "gauge", NULL, "The iothread's poll-shrink (0: reset)." }, get_poll_shrink },
};

/*
 * Per-iothread counters (PtIothreadTotals): whatever the scrape interval,
 * rate() of these gives IOPS, bandwidth, mean latency (io_time over
 * operations), mean queue depth (rate of io_time), cores and blocks per
 * operation.  Each is absent until its source first gave a figure.
 */
typedef struct {
    PtFamily f;
    const char *label;          /* extra label name, or NULL */
    const char *values[2];      /* its values, one per counter */
    gsize offset[2];            /* of the gint64 counters in PtIothreadTotals */
    double scale;               /* to base units */
    gsize have;                 /* offset of the gboolean that says present */
} PtCounterFamily;

#define TOT(f) G_STRUCT_OFFSET(PtIothreadTotals, f)

static const PtCounterFamily pt_iothread_counters[] = {
    { { "polltune_iothread_operations", "counter", NULL,
        "Read, write and flush operations on the devices the iothread serves." },
      "op", { "read", "write" }, { TOT(rd_ops), TOT(wr_ops) }, 1, TOT(have_io) },
    { { "polltune_iothread_flush_operations", "counter", NULL,
        "Flush operations on the devices the iothread serves." },
      NULL, { NULL }, { TOT(flush_ops) }, 1, TOT(have_io) },
    { { "polltune_iothread_bytes", "counter", "bytes",
        "Bytes read and written on the devices the iothread serves." },
      "op", { "read", "write" }, { TOT(rd_bytes), TOT(wr_bytes) }, 1, TOT(have_io) },
    { { "polltune_iothread_io_time_seconds", "counter", "seconds",
        "Time the operations were in flight, summed over operations; its rate is the "
        "mean queue depth." },
      NULL, { NULL }, { TOT(io_time_ns) }, 1e-9, TOT(have_io) },
    { { "polltune_iothread_cpu_seconds", "counter", "seconds",
        "CPU time of the iothread's thread, split by whether poll-max-ns was above 0 "
        "during the tick (the CPU of a polling iothread, not the CPU spent polling)." },
      "polling", { "off", "on" }, { TOT(cpu_ns[0]), TOT(cpu_ns[1]) }, 1e-9, TOT(have_cpu) },
    { { "polltune_iothread_blocks", "counter", NULL,
        "Voluntary context switches of the iothread: each is one real block in "
        "ppoll/epoll_wait." },
      NULL, { NULL }, { TOT(ctx_vol) }, 1, TOT(have_cpu) },
    { { "polltune_iothread_run_delay_seconds", "counter", "seconds",
        "Time the iothread waited for a CPU (schedstat run-queue wait)." },
      NULL, { NULL }, { TOT(runq_wait_ns) }, 1e-9, TOT(have_cpu) },
};

static void
pt_labels(GString *out, const char *name, const PtTarget *t, const PtIothread *io)
{
    g_string_append_printf(out, "%s{domain=\"", name);
    pt_label(out, t->name);
    if (io) {
        g_string_append(out, "\",iothread=\"");
        pt_label(out, io->id);
    }
    g_string_append_c(out, '"');
}

static void
pt_render_counters(GString *out, GPtrArray *ios, GPtrArray *owners)
{
    for (gsize f = 0; f < G_N_ELEMENTS(pt_iothread_counters); f++) {
        const PtCounterFamily *c = &pt_iothread_counters[f];
        g_autofree char *sample = g_strconcat(c->f.name, "_total", NULL);

        pt_family(out, &c->f);
        for (guint i = 0; i < ios->len; i++) {
            const PtIothread *io = ios->pdata[i];
            const char *base = (const char *)&io->totals;

            if (!G_STRUCT_MEMBER(gboolean, &io->totals, c->have))
                continue;
            for (int k = 0; k < 2 && (k == 0 || c->label); k++) {
                gint64 v = *(const gint64 *)(base + c->offset[k]);

                pt_labels(out, sample, owners->pdata[i], io);
                if (c->label)
                    g_string_append_printf(out, ",%s=\"%s\"", c->label, c->values[k]);
                g_string_append_printf(out, "} %.9g\n", v * c->scale);
            }
        }
    }
}

/* States: the build, the mode, the budget, libvirt, overrides. */
static void
pt_render_states(GString *out, PtDaemon *d, GPtrArray *ios, GPtrArray *owners,
                 GPtrArray *targets)
{
    gint64 now_ms = g_get_real_time() / 1000;
    gboolean lv_enabled = FALSE;
    gboolean lv_up = pt_daemon_libvirt_connected(d, &lv_enabled);

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
                           d->conf->policy->budget_cores);
    if (lv_enabled) {
        pt_family(out, &(PtFamily){ "polltune_libvirt_connected", "gauge", NULL,
                                    "1 while the daemon is connected to libvirt." });
        g_string_append_printf(out, "polltune_libvirt_connected %d\n", lv_up);
    }
    pt_family(out, &(PtFamily){ "polltune_override_remaining_seconds", "gauge", "seconds",
                                "Time left of an operator's override; +Inf: until cleared. "
                                "Absent: no override." });
    for (guint i = 0; i < ios->len; i++) {
        const PtIothread *io = ios->pdata[i];
        const PtTarget *t = owners->pdata[i];
        const StoreOverrideRow *ov = pt_daemon_override_for(d, t->name, io->id);

        if (!ov)
            continue;
        pt_labels(out, "polltune_override_remaining_seconds", t, io);
        if (ov->ov.expires_ms == STORE_NULL)
            g_string_append(out, "} +Inf\n");
        else
            g_string_append_printf(out, "} %.3f\n", MAX(ov->ov.expires_ms - now_ms, 0) / 1000.0);
    }
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
    guint by_state[PT_TARGET_STATE_MAX] = { 0 };

    for (gsize f = 0; f < G_N_ELEMENTS(pt_iothread_families); f++) {
        pt_family(out, &pt_iothread_families[f].f);
        for (guint i = 0; i < ios->len; i++) {
            PtIothread *io = ios->pdata[i];
            PtTarget *t = owners->pdata[i];
            const PolicyMetrics *m = io->history->len ?
                &g_array_index(io->history, PolicyMetrics, io->history->len - 1) : NULL;
            gboolean ok = FALSE;
            double v = pt_iothread_families[f].get(io, m, &ok);

            if (!ok)
                continue;
            pt_labels(out, pt_iothread_families[f].f.name, t, io);
            g_string_append_printf(out, "} %.9g\n", v);
        }
    }
    pt_render_counters(out, ios, owners);
    pt_render_states(out, d, ios, owners, targets);

    pt_family(out, &(PtFamily){ "polltune_ticks", "counter", NULL, "Ticks completed." });
    g_string_append_printf(out, "polltune_ticks_total %" G_GUINT64_FORMAT "\n", d->stats.ticks);
    pt_family(out, &(PtFamily){ "polltune_tick_overruns", "counter", NULL,
                                "Ticks that took longer than the interval." });
    g_string_append_printf(out, "polltune_tick_overruns_total %" G_GUINT64_FORMAT "\n",
                           d->stats.overruns);
    pt_tick_histogram(out, &d->stats);
    pt_family(out, &(PtFamily){ "polltune_tick_last_duration_seconds", "gauge", "seconds",
                                "Duration of the last tick." });
    g_string_append_printf(out, "polltune_tick_last_duration_seconds %.6f\n",
                           d->stats.last_tick_ms / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_tick_wait_seconds", "counter", "seconds",
                                "Tick time spent waiting for the targets' answers." });
    g_string_append_printf(out, "polltune_tick_wait_seconds_total %.6f\n", d->stats.wait_s_total);
    pt_family(out, &(PtFamily){ "polltune_tick_work_seconds", "counter", "seconds",
                                "Tick time spent on the daemon's own work after the answers "
                                "(derive, store, policy)." });
    g_string_append_printf(out, "polltune_tick_work_seconds_total %.6f\n", d->stats.work_s_total);
    pt_family(out, &(PtFamily){ "polltune_tick_duration_p50_seconds", "gauge", "seconds",
                                "Median tick duration over the last 600 ticks." });
    g_string_append_printf(out, "polltune_tick_duration_p50_seconds %.6f\n",
                           d->stats.tick_ms_p50 / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_tick_duration_p99_seconds", "gauge", "seconds",
                                "99th percentile tick duration over the last 600 ticks." });
    g_string_append_printf(out, "polltune_tick_duration_p99_seconds %.6f\n",
                           d->stats.tick_ms_p99 / 1000.0);
    pt_family(out, &(PtFamily){ "polltune_late_samples", "counter", NULL,
                                "Target samples that missed their tick's deadline." });
    g_string_append_printf(out, "polltune_late_samples_total %" G_GUINT64_FORMAT "\n",
                           d->stats.late_targets);
    store_db_get_stats(d->store, &ss);
    pt_family(out, &(PtFamily){ "polltune_store_errors", "counter", NULL,
                                "Tick writes that failed." });
    g_string_append_printf(out, "polltune_store_errors_total %" G_GUINT64_FORMAT "\n",
                           d->stats.store_errors);
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
                           d->stats.decisions_applied, d->stats.decisions_failed,
                           d->stats.decisions_recommended);
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

/* ---- HTTP -------------------------------------------------------------- */

/*
 * Known issue: with Debian 12's libsoup 3.2.3, valgrind reports 344 bytes
 * (the accepted GSocket and its state) definitely lost per HTTP connection,
 * inside libsoup's accept path; answering with "Connection: close" does not
 * avoid it.  Upstream reports an idle-connection leak fixed in 3.3.0
 * (libsoup commit d20c6601).  At one scrape every 15 s that is about 2 MB a
 * day; the control socket's `metrics` command does not go through libsoup.
 */

struct PtMetricsServer {
    SoupServer *server;
};

static void
pt_metrics_handler(SoupServer *server, SoupServerMessage *msg, const char *path,
                   GHashTable *query, gpointer data)
{
    PtDaemon *d = data;
    const char *accept = soup_message_headers_get_list(
        soup_server_message_get_request_headers(msg), "Accept");
    gboolean om = accept && strstr(accept, "application/openmetrics-text");
    char *text;

    if (soup_server_message_get_method(msg) != SOUP_METHOD_GET &&
        soup_server_message_get_method(msg) != SOUP_METHOD_HEAD) {
        soup_server_message_set_status(msg, SOUP_STATUS_METHOD_NOT_ALLOWED, NULL);
        return;
    }
    /* Prometheus asks for OpenMetrics; anything else gets the text format. */
    text = pt_daemon_render_metrics(d, om);
    soup_server_message_set_status(msg, SOUP_STATUS_OK, NULL);
    soup_server_message_set_response(msg,
        om ? "application/openmetrics-text; version=1.0.0; charset=utf-8" :
             "text/plain; version=0.0.4; charset=utf-8",
        SOUP_MEMORY_TAKE, text, strlen(text));
}

PtMetricsServer *
pt_metrics_server_new(PtDaemon *d, const char *listen, GError **error)
{
    g_autofree char *host = g_strdup(listen);
    char *colon = strrchr(host, ':');
    guint64 port;
    g_autoptr(GInetAddress) addr = NULL;
    g_autoptr(GSocketAddress) sa = NULL;
    PtMetricsServer *m;

    if (!colon || !g_ascii_string_to_unsigned(colon + 1, 10, 1, 65535, &port, NULL)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "metrics-listen: '%s' is not HOST:PORT", listen);
        return NULL;
    }
    *colon = 0;
    if (host[0] == '[' && colon[-1] == ']') {
        colon[-1] = 0;
        memmove(host, host + 1, strlen(host));
    }
    addr = g_inet_address_new_from_string(host);
    if (!addr) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "metrics-listen: '%s' is not an IP address", host);
        return NULL;
    }
    sa = g_inet_socket_address_new(addr, (guint16)port);
    m = g_new0(PtMetricsServer, 1);
    m->server = soup_server_new("server-header", "polltuned", NULL);
    soup_server_add_handler(m->server, "/metrics", pt_metrics_handler, d, NULL);
    if (!soup_server_listen(m->server, sa, 0, error)) {
        g_prefix_error(error, "metrics-listen %s: ", listen);
        pt_metrics_server_free(m);
        return NULL;
    }
    return m;
}

void
pt_metrics_server_free(PtMetricsServer *m)
{
    if (!m)
        return;
    g_clear_object(&m->server);
    g_free(m);
}
