/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-prometheus: query_range over HTTP with libsoup (already the daemon's
 * HTTP library for /metrics), replies read with a size limit, matrices
 * joined into report points.
 */
#include <json-c/json.h>
#include <libsoup/soup.h>
#include <math.h>
#include <string.h>

#include "cli-client.h"
#include "cli-prometheus.h"
#include "qmp-json.h"

typedef enum {
    PROM_Q_OPS,
    PROM_Q_FLUSH,
    PROM_Q_IO_TIME,
    PROM_Q_CPU,
    PROM_Q_MAX_NS,
    PROM_Q_N,
} PromQuery;

/* The families of docs/METRICS.md, per iothread.  The counters are read
 * as rates over the window; poll-max-ns is a gauge of the state. */
static const struct {
    const char *family;
    gboolean rate;
} queries[PROM_Q_N] = {
    [PROM_Q_OPS] = { "polltune_iothread_operations_total", TRUE },
    [PROM_Q_FLUSH] = { "polltune_iothread_flush_operations_total", TRUE },
    [PROM_Q_IO_TIME] = { "polltune_iothread_io_time_seconds_total", TRUE },
    [PROM_Q_CPU] = { "polltune_iothread_cpu_seconds_total", TRUE },
    [PROM_Q_MAX_NS] = { "polltune_poll_max_seconds", FALSE },
};

#define PROM_BY "host, instance, domain, iothread"

typedef struct {
    char *host, *domain, *iothread;
    double *v[PROM_Q_N];        /* n steps each, NAN where absent */
} PromSeries;

typedef struct {
    const CliPromOptions *o;
    SoupSession *session;
    gint64 from_ms, step_ms;
    guint n;                    /* steps */
    GHashTable *series;         /* "host\x1fdomain\x1fiothread" -> PromSeries */
} Prom;

static void
prom_series_free(gpointer p)
{
    PromSeries *s = p;

    g_free(s->host);
    g_free(s->domain);
    g_free(s->iothread);
    for (int q = 0; q < PROM_Q_N; q++)
        g_free(s->v[q]);
    g_free(s);
}

static char *
prom_query_text(const Prom *p, PromQuery q, gint64 window_ms)
{
    g_autofree char *sel = g_strdup_printf("%s{%s}", queries[q].family,
                                           p->o->selector ? p->o->selector : "");

    if (!queries[q].rate)
        return g_strdup_printf("max by (" PROM_BY ") (%s)", sel);
    return g_strdup_printf("sum by (" PROM_BY ") (rate(%s[%" G_GINT64_FORMAT "ms]))", sel,
                           window_ms);
}

/* The body of a GET, at most CLI_PROM_MAX_REPLY bytes. */
static GBytes *
prom_get(Prom *p, const char *url, const char *what, guint *status, GError **error)
{
    g_autoptr(SoupMessage) m = soup_message_new("GET", url);
    g_autoptr(GInputStream) in = NULL;
    g_autoptr(GByteArray) body = g_byte_array_new();
    g_autoptr(GError) local = NULL;
    guint8 buf[65536];

    if (!m) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--prometheus %s: not an http:// URL",
                    p->o->url);
        return NULL;
    }
    if (!(in = soup_session_send(p->session, m, NULL, &local))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: %s", p->o->url,
                    what, local->message);
        return NULL;
    }
    for (;;) {
        gssize got = g_input_stream_read(in, buf, sizeof(buf), NULL, &local);

        if (got < 0) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: reading "
                        "the reply: %s", p->o->url, what, local->message);
            return NULL;
        }
        if (got == 0)
            break;
        if (body->len + (gsize)got > CLI_PROM_MAX_REPLY) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: the reply "
                        "is larger than %u MiB; narrow the fleet with --selector or the range",
                        p->o->url, what, CLI_PROM_MAX_REPLY >> 20);
            return NULL;
        }
        g_byte_array_append(body, buf, got);
    }
    *status = soup_message_get_status(m);
    return g_byte_array_free_to_bytes(g_steal_pointer(&body));
}

/* The "data" of an API reply, or an error with the server's own words. */
static json_object *
prom_api(Prom *p, const char *query, gint64 from_ms, gint64 to_ms, gint64 step_ms,
         json_object **root, GError **error)
{
    g_autofree char *escaped = g_uri_escape_string(query, NULL, FALSE);
    g_autofree char *base = g_strdup(p->o->url);
    g_autofree char *url = NULL;
    g_autoptr(GBytes) body = NULL;
    json_tokener *tok = NULL;
    json_object *data;
    const char *status;
    gsize len;
    const char *text;
    guint http = 0;

    while (*base && base[strlen(base) - 1] == '/')
        base[strlen(base) - 1] = '\0';
    url = g_strdup_printf("%s/api/v1/query_range?query=%s&start=%.3f&end=%.3f&step=%.3f", base,
                          escaped, from_ms / 1000.0, to_ms / 1000.0, step_ms / 1000.0);
    if (!(body = prom_get(p, url, query, &http, error)))
        return NULL;
    text = g_bytes_get_data(body, &len);
    tok = json_tokener_new_ex(64);
    *root = len ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    json_tokener_free(tok);
    if (!*root || !json_object_is_type(*root, json_type_object)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: HTTP %u, "
                    "not a JSON API reply", p->o->url, query, http);
        return NULL;
    }
    status = json_object_get_string(json_object_object_get(*root, "status"));
    if (g_strcmp0(status, "success") != 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: HTTP %u: %s",
                    p->o->url, query, http,
                    json_object_get_string(json_object_object_get(*root, "error")) ?: "failed");
        return NULL;
    }
    data = json_object_object_get(*root, "data");
    if (!data || g_strcmp0(json_object_get_string(json_object_object_get(data, "resultType")),
                           "matrix") != 0 ||
        !json_object_is_type(json_object_object_get(data, "result"), json_type_array)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: the reply "
                    "has no matrix", p->o->url, query);
        return NULL;
    }
    return json_object_object_get(data, "result");
}

static const char *
label(json_object *metric, const char *name)
{
    json_object *v;

    return json_object_object_get_ex(metric, name, &v) ? json_object_get_string(v) : NULL;
}

static PromSeries *
prom_series_get(Prom *p, json_object *metric)
{
    const char *host = label(metric, "host"), *domain = label(metric, "domain");
    const char *iothread = label(metric, "iothread");
    g_autofree char *key = NULL;
    PromSeries *s;

    if (!host || !*host)
        host = label(metric, "instance");
    if (!host || !domain || !iothread)
        return NULL;
    key = g_strdup_printf("%s\x1f%s\x1f%s", host, domain, iothread);
    if ((s = g_hash_table_lookup(p->series, key)))
        return s;
    s = g_new0(PromSeries, 1);
    s->host = g_strdup(host);
    s->domain = g_strdup(domain);
    s->iothread = g_strdup(iothread);
    for (int q = 0; q < PROM_Q_N; q++) {
        s->v[q] = g_new(double, p->n);
        for (guint i = 0; i < p->n; i++)
            s->v[q][i] = NAN;
    }
    g_hash_table_insert(p->series, g_steal_pointer(&key), s);
    return s;
}

/* One sample pair [unix seconds, "value"]; FALSE when malformed. */
static gboolean
sample_parse(json_object *pair, double *t, double *v)
{
    const char *text;
    char *end = NULL;

    if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2)
        return FALSE;
    *t = json_object_get_double(json_object_array_get_idx(pair, 0));
    text = json_object_get_string(json_object_array_get_idx(pair, 1));
    if (!text)
        return FALSE;
    *v = g_ascii_strtod(text, &end);
    return end && *end == '\0' && end != text;
}

static gboolean
prom_read_query(Prom *p, PromQuery q, gint64 to_ms, GError **error)
{
    /* A rate needs two samples in its window: at least four scrapes wide,
     * and at least one step, so no scrape falls between two windows. */
    gint64 window = MAX(p->step_ms, 4 * p->o->scrape_ms);
    g_autofree char *query = prom_query_text(p, q, window);
    g_autoptr(json_object) root = NULL;
    json_object *result = prom_api(p, query, p->from_ms, to_ms, p->step_ms, &root, error);

    if (!result)
        return FALSE;
    for (gsize i = 0; i < json_object_array_length(result); i++) {
        json_object *r = json_object_array_get_idx(result, i);
        json_object *values = json_object_object_get(r, "values");
        PromSeries *s = prom_series_get(p, json_object_object_get(r, "metric"));

        if (!s || !json_object_is_type(values, json_type_array))
            continue;
        for (gsize k = 0; k < json_object_array_length(values); k++) {
            double t, v;
            gint64 idx;

            if (!sample_parse(json_object_array_get_idx(values, k), &t, &v)) {
                g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: "
                            "malformed sample in series %zu", p->o->url, query, i);
                return FALSE;
            }
            idx = ((gint64)llround(t * 1000) - p->from_ms) / p->step_ms;
            if (idx >= 0 && idx < p->n)
                s->v[q][idx] = v;
        }
    }
    return TRUE;
}

/* A step of whole seconds giving at most CLI_PROM_MAX_POINTS points, and
 * no finer than a scrape. */
static gint64
prom_step(gint64 span_ms, gint64 scrape_ms)
{
    gint64 step = (span_ms + CLI_PROM_MAX_POINTS - 1) / CLI_PROM_MAX_POINTS;

    step = MAX(step, scrape_ms);
    return (step + 999) / 1000 * 1000;
}

/* The first and last step at which any polltune iothread was scraped, and
 * how many steps had one. */
static gboolean
prom_extent_at(Prom *p, gint64 from_ms, gint64 to_ms, gint64 step, gint64 *first,
               gint64 *last, guint *n, GError **error)
{
    g_autofree char *query = g_strdup_printf("count(polltune_poll_max_seconds{%s})",
                                             p->o->selector ? p->o->selector : "");
    g_autoptr(json_object) root = NULL;
    json_object *result = prom_api(p, query, from_ms, to_ms, step, &root, error);

    *n = 0;
    if (!result)
        return FALSE;
    for (gsize i = 0; i < json_object_array_length(result); i++) {
        json_object *values = json_object_object_get(json_object_array_get_idx(result, i),
                                                     "values");

        for (gsize k = 0; values && k < json_object_array_length(values); k++) {
            double t, v;
            gint64 ms;

            if (!sample_parse(json_object_array_get_idx(values, k), &t, &v))
                continue;
            ms = (gint64)llround(t * 1000);
            if (!*n || ms < *first)
                *first = ms;
            if (!*n || ms > *last)
                *last = ms;
            (*n)++;
        }
    }
    return TRUE;
}

/*
 * Where the data is in [from, to).  A coarse look finds the step it starts
 * in; while that leaves few steps with data (a 20-minute history seen in
 * 3-hour steps), look again from there with a finer step.  Each look is
 * one small query of CLI_PROM_MAX_POINTS points at most.
 */
static gboolean
prom_extent(Prom *p, gint64 from_ms, gint64 to_ms, gint64 *first, gint64 *last,
            GError **error)
{
    for (int look = 0; look < 4; look++) {
        gint64 step = prom_step(to_ms - from_ms, p->o->scrape_ms);
        guint n = 0;

        if (!prom_extent_at(p, from_ms, to_ms, step, first, last, &n, error))
            return FALSE;
        if (n == 0)
            return TRUE;
        /* A step's sample stands for the step before it. */
        *first = MAX(from_ms, *first - step);
        if (n >= CLI_PROM_MAX_POINTS / 4 || step <= p->o->scrape_ms)
            return TRUE;
        from_ms = *first;
        to_ms = MIN(to_ms, *last + step);
    }
    return TRUE;
}

static void
prom_feed(Prom *p, CliReport *rep)
{
    GHashTableIter it;
    gpointer value;

    g_hash_table_iter_init(&it, p->series);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        PromSeries *s = value;
        g_autofree char *target = g_strdup_printf("%s/%s", s->host, s->domain);

        for (guint i = 0; i < p->n; i++) {
            double ops = s->v[PROM_Q_OPS][i], flush = s->v[PROM_Q_FLUSH][i];
            double iops = isnan(ops) ? NAN : ops + (isnan(flush) ? 0 : flush);
            double io_time = s->v[PROM_Q_IO_TIME][i], cpu = s->v[PROM_Q_CPU][i];
            double max_s = s->v[PROM_Q_MAX_NS][i];
            CliPoint pt = {
                .ts_ms = p->from_ms + (gint64)i * p->step_ms, .target = target,
                .iothread = s->iothread, .iops = iops,
                .lat_us = iops > 0 && !isnan(io_time) ? io_time / iops * 1e6 : NAN,
                .cpu_pct = isnan(cpu) ? NAN : cpu * 100.0,
                .poll_max_ns = isnan(max_s) ? -1 : (gint64)llround(max_s * 1e9),
            };

            if (isnan(pt.iops) && isnan(pt.cpu_pct) && pt.poll_max_ns < 0)
                continue;
            cli_report_add_point(rep, &pt);
        }
    }
}

gboolean
cli_prometheus_read(const CliPromOptions *o, CliReport *rep, gint64 from_ms, gint64 to_ms,
                    guint *n_series, GError **error)
{
    g_autoptr(SoupSession) session = soup_session_new_with_options(
        "timeout", (guint)o->timeout_s, "user-agent", "polltunectl", NULL);
    g_autoptr(GHashTable) series = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                         prom_series_free);
    Prom p = { .o = o, .session = session, .series = series };
    gint64 first = from_ms, last = to_ms;

    if (!g_str_has_prefix(o->url, "http://")) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--prometheus %s: not an http:// URL",
                    o->url);
        return FALSE;
    }
    /* Where the history is shorter than the range, ask only for it: the
     * points per series are few, so they go where the data is. */
    if (!prom_extent(&p, from_ms, to_ms, &first, &last, error))
        return FALSE;
    from_ms = first;
    to_ms = MIN(to_ms, last + 1);
    p.step_ms = prom_step(to_ms - from_ms, o->scrape_ms);
    p.from_ms = from_ms / p.step_ms * p.step_ms;
    p.n = (guint)((to_ms - p.from_ms) / p.step_ms + 1);
    for (int q = 0; q < PROM_Q_N; q++)
        if (!prom_read_query(&p, q, to_ms, error))
            return FALSE;
    prom_feed(&p, rep);
    *n_series = g_hash_table_size(series);
    return TRUE;
}
