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

/* What a value of each family can be: a rate of operations or of seconds
 * per second, or poll-max-ns in seconds.  Anything beyond is not polltune's
 * (and would overflow on its way to a point). */
static const double value_max[PROM_Q_N] = {
    [PROM_Q_OPS] = 1e12, [PROM_Q_FLUSH] = 1e12, [PROM_Q_IO_TIME] = 1e9,
    [PROM_Q_CPU] = 1e6, [PROM_Q_MAX_NS] = 1e3,
};

typedef struct {
    guint32 idx;                /* the step */
    double v;
} PromSample;

typedef struct {
    char *host, *domain, *iothread;
    char *job, *instance;       /* the scrape target it came from */
    GArray *v[PROM_Q_N];        /* PromSample, only for the queries that had some */
    PolicyGainTotals gain;      /* the gain counters' increases over the range */
    guint gain_have;            /* bit per PolicyGainCounter read */
} PromSeries;

typedef struct {
    const CliPromOptions *o;
    const char *host_label;
    SoupSession *session;
    GCancellable *cancel;       /* cancelled at the deadline */
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
    g_free(s->job);
    g_free(s->instance);
    for (int q = 0; q < PROM_Q_N; q++)
        if (s->v[q])
            g_array_unref(s->v[q]);
    g_free(s);
}

/* "sum by (job, instance, domain, iothread, HOST)": the scrape target
 * stays in every series, so two targets are never summed into one. */
static char *
prom_by(const Prom *p)
{
    gboolean extra = !g_str_equal(p->host_label, "instance") &&
                     !g_str_equal(p->host_label, "job");

    return g_strdup_printf("job, instance, domain, iothread%s%s", extra ? ", " : "",
                           extra ? p->host_label : "");
}

static char *
prom_query_text(const Prom *p, PromQuery q, gint64 window_ms)
{
    g_autofree char *sel = g_strdup_printf("%s{%s}", queries[q].family,
                                           p->o->selector ? p->o->selector : "");
    g_autofree char *by = prom_by(p);

    if (!queries[q].rate)
        return g_strdup_printf("max by (%s) (%s)", by, sel);
    return g_strdup_printf("sum by (%s) (rate(%s[%" G_GINT64_FORMAT "ms]))", by, sel,
                           window_ms);
}

static gboolean
prom_fail_cancelled(Prom *p, const char *what, GError *local, GError **error)
{
    if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_CANCELLED)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_TIMEOUT, "Prometheus at %s: %s: no complete "
                    "reply within %" G_GINT64_FORMAT " s for the whole report (--timeout)",
                    p->o->url, what, p->o->timeout_ms / 1000);
        return FALSE;
    }
    return TRUE;
}

/* The body of a GET, at most CLI_PROM_MAX_REPLY bytes, before the deadline. */
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
    if (!(in = soup_session_send(p->session, m, p->cancel, &local))) {
        if (prom_fail_cancelled(p, what, local, error))
            g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: %s",
                        p->o->url, what, local->message);
        return NULL;
    }
    *status = soup_message_get_status(m);
    for (;;) {
        gssize got = g_input_stream_read(in, buf, sizeof(buf), p->cancel, &local);

        if (got < 0) {
            if (prom_fail_cancelled(p, what, local, error))
                g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: "
                            "reading the reply: %s", p->o->url, what, local->message);
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
    return g_byte_array_free_to_bytes(g_steal_pointer(&body));
}

/*
 * Counts a reply's objects, arrays and separators outside strings, and
 * refuses one that would parse into more than CLI_PROM_MAX_SERIES series or
 * CLI_PROM_MAX_SAMPLES samples: a matrix series is two objects, a sample an
 * array of two values, a series' labels a few separators.  The parse, not
 * the bytes, is what costs memory.
 */
static gboolean
prom_reply_size_check(Prom *p, const char *query, const char *text, gsize len,
                      GError **error)
{
    guint64 objects = 0, arrays = 0, commas = 0;
    gboolean in_string = FALSE;

    for (gsize i = 0; i < len; i++) {
        char c = text[i];

        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = FALSE;
            continue;
        }
        objects += c == '{';
        arrays += c == '[';
        commas += c == ',';
        in_string = c == '"';
    }
    if (objects <= 2 * (guint64)CLI_PROM_MAX_SERIES + 8 &&
        arrays <= (guint64)CLI_PROM_MAX_SAMPLES + CLI_PROM_MAX_SERIES + 8 &&
        commas <= 2 * (guint64)CLI_PROM_MAX_SAMPLES + 16 * (guint64)CLI_PROM_MAX_SERIES + 16)
        return TRUE;
    g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: the reply holds "
                "more than %u series or %u samples; narrow the fleet with --selector or the "
                "range", p->o->url, query, CLI_PROM_MAX_SERIES, CLI_PROM_MAX_SAMPLES);
    return FALSE;
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
    const char *status, *server_error;
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
    if (!prom_reply_size_check(p, query, text, len, error))
        return NULL;
    tok = json_tokener_new_ex(64);
    *root = len ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    json_tokener_free(tok);
    if (!*root || !json_object_is_type(*root, json_type_object)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: HTTP %u, "
                    "not a JSON API reply", p->o->url, query, http);
        return NULL;
    }
    status = json_object_get_string(json_object_object_get(*root, "status"));
    server_error = json_object_get_string(json_object_object_get(*root, "error"));
    /* The API answers 200 with data, 4xx/5xx with an error: JSON that
     * came with another status is not data, whatever it says. */
    if (http != SOUP_STATUS_OK || g_strcmp0(status, "success") != 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s: HTTP %u: %s",
                    p->o->url, query, http, server_error ? server_error :
                    http != SOUP_STATUS_OK ? "not a successful API reply" : "failed");
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

/* The series @metric names, created on first sight; NULL with @error when
 * it cannot be told apart or there are too many. */
static PromSeries *
prom_series_get(Prom *p, const char *query, json_object *metric, GError **error)
{
    const char *host = label(metric, p->host_label), *domain = label(metric, "domain");
    const char *iothread = label(metric, "iothread"), *job = label(metric, "job");
    const char *instance = label(metric, "instance");
    g_autofree char *key = NULL;
    PromSeries *s;

    if (!domain || !iothread) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: a series "
                    "without domain or iothread", p->o->url, query);
        return NULL;
    }
    if (!host || !*host) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s/%s of "
                    "instance %s has no label %s to name its host; label every target, or "
                    "choose another label with --host-label", p->o->url, domain, iothread,
                    instance ? instance : "?", p->host_label);
        return NULL;
    }
    key = g_strdup_printf("%s\x1f%s\x1f%s", host, domain, iothread);
    if ((s = g_hash_table_lookup(p->series, key))) {
        if (g_strcmp0(s->job, job) != 0 || g_strcmp0(s->instance, instance) != 0) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: %s=%s, "
                        "%s/%s comes from two targets, instance %s (job %s) and instance %s "
                        "(job %s): the label %s does not tell hosts apart, and their figures "
                        "are not summed; give each host its own value, or choose another label "
                        "with --host-label (default instance)", p->o->url, p->host_label,
                        host, domain, iothread, s->instance ? s->instance : "?",
                        s->job ? s->job : "?", instance ? instance : "?", job ? job : "?",
                        p->host_label);
            return NULL;
        }
        return s;
    }
    if (g_hash_table_size(p->series) >= CLI_PROM_MAX_SERIES) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: more than %u "
                    "iothread series; narrow the fleet with --selector", p->o->url,
                    CLI_PROM_MAX_SERIES);
        return NULL;
    }
    s = g_new0(PromSeries, 1);
    s->host = g_strdup(host);
    s->domain = g_strdup(domain);
    s->iothread = g_strdup(iothread);
    s->job = g_strdup(job);
    s->instance = g_strdup(instance);
    g_hash_table_insert(p->series, g_steal_pointer(&key), s);
    return s;
}

/*
 * One sample pair [unix seconds, "value"] of a query over [@from, @to] in
 * steps of @step: the time must lie in that range (a step either side for
 * rounding) and the value be finite within [0, @max], else an error naming
 * what; "NaN" is a gap (*v NAN).  Checked before any arithmetic.
 */
static gboolean
sample_parse(Prom *p, const char *query, json_object *pair, gint64 from_ms, gint64 to_ms,
             gint64 step_ms, double max, gint64 *t_ms, double *v, GError **error)
{
    json_object *jt;
    const char *text;
    char *end = NULL;
    double t;

    if (!json_object_is_type(pair, json_type_array) || json_object_array_length(pair) != 2 ||
        !(jt = json_object_array_get_idx(pair, 0)) ||
        (!json_object_is_type(jt, json_type_double) && !json_object_is_type(jt, json_type_int)) ||
        !(text = json_object_get_string(json_object_array_get_idx(pair, 1)))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: a sample "
                    "is not [time, \"value\"]", p->o->url, query);
        return FALSE;
    }
    t = json_object_get_double(jt);
    if (!isfinite(t) || t * 1000 < (double)(from_ms - step_ms) ||
        t * 1000 > (double)(to_ms + step_ms)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: sample "
                    "time %g outside the range asked (%.3f to %.3f)", p->o->url, query, t,
                    from_ms / 1000.0, to_ms / 1000.0);
        return FALSE;
    }
    *t_ms = (gint64)llround(t * 1000);
    *v = g_ascii_strtod(text, &end);
    if (!end || *end != '\0' || end == text) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: sample "
                    "value \"%.40s\" is not a number", p->o->url, query, text);
        return FALSE;
    }
    if (isnan(*v))
        return TRUE;
    if (!(*v >= 0 && *v <= max)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: sample "
                    "value %s outside 0 to %g", p->o->url, query, text, max);
        return FALSE;
    }
    return TRUE;
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
        gsize nv = json_object_is_type(values, json_type_array) ?
                   json_object_array_length(values) : 0;
        PromSeries *s;

        if (nv == 0)
            continue;
        if (!(s = prom_series_get(p, query, json_object_object_get(r, "metric"), error)))
            return FALSE;
        /* One sample per step at most: memory follows the steps asked. */
        if (nv > p->n || (s->v[q] && s->v[q]->len + nv > p->n)) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "Prometheus at %s: %s: %s/%s "
                        "has more samples than the %u steps asked", p->o->url, query,
                        s->host, s->domain, p->n);
            return FALSE;
        }
        if (!s->v[q])
            s->v[q] = g_array_sized_new(FALSE, FALSE, sizeof(PromSample), (guint)nv);
        for (gsize k = 0; k < nv; k++) {
            gint64 t_ms, idx;
            double v;

            if (!sample_parse(p, query, json_object_array_get_idx(values, k), p->from_ms,
                              to_ms, p->step_ms, value_max[q], &t_ms, &v, error))
                return FALSE;
            idx = (t_ms - p->from_ms) / p->step_ms;
            if (!isnan(v) && idx >= 0 && idx < p->n) {
                PromSample ps = { (guint32)idx, v };

                g_array_append_val(s->v[q], ps);
            }
        }
    }
    return TRUE;
}

/*
 * A gain total's increase over the whole range: at most a year of a
 * gain of 30 M ops/s, or of seconds far more than a range holds; beyond
 * is not polltune's.
 */
#define PROM_GAIN_MAX 1e15

/*
 * The increase of each gain counter (policy-gain.h) over [@from, @to),
 * per iothread: the figures the page shows are their ratios
 * (policy_gain_figures()), as the single-host report's replay of the same
 * ticks gives them.  One sample each, at @to.
 */
static gboolean
prom_read_gain(Prom *p, gint64 from_ms, gint64 to_ms, GError **error)
{
    g_autofree char *by = prom_by(p);

    for (int c = 0; c < POLICY_GAIN_MAX; c++) {
        g_autofree char *query = g_strdup_printf(
            "sum by (%s) (increase(%s_total{%s}[%" G_GINT64_FORMAT "ms]))", by,
            policy_gain_counter_def(c)->family, p->o->selector ? p->o->selector : "",
            MAX(to_ms - from_ms, 1000));
        g_autoptr(json_object) root = NULL;
        json_object *result = prom_api(p, query, to_ms, to_ms, 1000, &root, error);

        if (!result)
            return FALSE;
        for (gsize i = 0; i < json_object_array_length(result); i++) {
            json_object *r = json_object_array_get_idx(result, i);
            json_object *values = json_object_object_get(r, "values");
            PromSeries *s;
            gint64 t_ms;
            double v;

            if (!json_object_is_type(values, json_type_array) ||
                json_object_array_length(values) == 0)
                continue;
            if (!(s = prom_series_get(p, query, json_object_object_get(r, "metric"), error)))
                return FALSE;
            if (!sample_parse(p, query, json_object_array_get_idx(values,
                                                                  json_object_array_length(values) - 1),
                              to_ms, to_ms, 1000, PROM_GAIN_MAX, &t_ms, &v, error))
                return FALSE;
            if (isnan(v))
                continue;
            policy_gain_totals_set(&s->gain, c, v);
            s->gain_have |= 1u << c;
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
            gint64 ms;
            double v;

            /* A count is at most every series the server holds. */
            if (!sample_parse(p, query, json_object_array_get_idx(values, k), from_ms, to_ms,
                              step, 1e9, &ms, &v, error))
                return FALSE;
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

/* Each series' samples, spread over the steps in one scratch row per
 * query (reused: memory is the samples, not series times steps), joined
 * into report points. */
static void
prom_feed(Prom *p, CliReport *rep)
{
    g_autofree double *dense = g_new(double, (gsize)PROM_Q_N * p->n);
    GHashTableIter it;
    gpointer value;

    g_hash_table_iter_init(&it, p->series);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        PromSeries *s = value;
        g_autofree char *target = g_strdup_printf("%s/%s", s->host, s->domain);
        double *v[PROM_Q_N];
        gboolean any = FALSE;

        for (int q = 0; q < PROM_Q_N; q++) {
            v[q] = dense + (gsize)q * p->n;
            for (guint i = 0; i < p->n; i++)
                v[q][i] = NAN;
            for (guint k = 0; s->v[q] && k < s->v[q]->len; k++) {
                const PromSample *ps = &g_array_index(s->v[q], PromSample, k);

                v[q][ps->idx] = ps->v;
            }
        }
        for (guint i = 0; i < p->n; i++) {
            double ops = v[PROM_Q_OPS][i], flush = v[PROM_Q_FLUSH][i];
            double iops = isnan(ops) ? NAN : ops + (isnan(flush) ? 0 : flush);
            double io_time = v[PROM_Q_IO_TIME][i], cpu = v[PROM_Q_CPU][i];
            double max_s = v[PROM_Q_MAX_NS][i];
            CliPoint pt = {
                .ts_ms = p->from_ms + (gint64)i * p->step_ms, .target = target,
                .iothread = s->iothread, .iops = iops,
                .lat_us = iops > 0 && !isnan(io_time) ? io_time / iops * 1e6 : NAN,
                .cpu_pct = isnan(cpu) ? NAN : cpu * 100.0,
                /* At most value_max[PROM_Q_MAX_NS] s: fits in 64 bits. */
                .poll_max_ns = isnan(max_s) ? -1 : (gint64)llround(max_s * 1e9),
            };

            if (isnan(pt.iops) && isnan(pt.cpu_pct) && pt.poll_max_ns < 0)
                continue;
            cli_report_add_point(rep, &pt);
            any = TRUE;
        }
        /* Without every counter (a daemon from before them) the page has
         * no gain figures for the iothread rather than a replay of rates
         * over scrapes; counters alone, without a point, make no row. */
        if (any)
            cli_report_set_gain(rep, target, s->iothread,
                                s->gain_have == (1u << POLICY_GAIN_MAX) - 1 ? &s->gain
                                : &(PolicyGainTotals){ 0 });
    }
}

/* Cancels @cancel at @deadline (monotonic µs) unless ended first: one
 * limit for the whole exchange, however slowly a server sends. */
typedef struct {
    GMutex lock;
    GCond cond;
    gboolean ended;
    gint64 deadline;
    GCancellable *cancel;
    GThread *thread;
} PromDeadline;

static gpointer
prom_deadline_run(gpointer data)
{
    PromDeadline *d = data;

    g_mutex_lock(&d->lock);
    while (!d->ended)
        if (!g_cond_wait_until(&d->cond, &d->lock, d->deadline)) {
            if (!d->ended)
                g_cancellable_cancel(d->cancel);
            break;
        }
    g_mutex_unlock(&d->lock);
    return NULL;
}

static void
prom_deadline_start(PromDeadline *d, GCancellable *cancel, gint64 timeout_ms)
{
    g_mutex_init(&d->lock);
    g_cond_init(&d->cond);
    d->ended = FALSE;
    d->cancel = cancel;
    d->deadline = g_get_monotonic_time() + timeout_ms * 1000;
    d->thread = g_thread_new("prom-deadline", prom_deadline_run, d);
}

static void
prom_deadline_end(PromDeadline *d)
{
    g_mutex_lock(&d->lock);
    d->ended = TRUE;
    g_cond_signal(&d->cond);
    g_mutex_unlock(&d->lock);
    g_thread_join(d->thread);
    g_mutex_clear(&d->lock);
    g_cond_clear(&d->cond);
}

static gboolean
prom_read_all(Prom *p, CliReport *rep, gint64 from_ms, gint64 to_ms, GError **error)
{
    gint64 first = from_ms, last = to_ms;

    /* Where the history is shorter than the range, ask only for it: the
     * points per series are few, so they go where the data is. */
    if (!prom_extent(p, from_ms, to_ms, &first, &last, error))
        return FALSE;
    from_ms = first;
    to_ms = MIN(to_ms, last + 1);
    p->step_ms = prom_step(to_ms - from_ms, p->o->scrape_ms);
    p->from_ms = from_ms / p->step_ms * p->step_ms;
    p->n = (guint)((to_ms - p->from_ms) / p->step_ms + 1);
    for (int q = 0; q < PROM_Q_N; q++)
        if (!prom_read_query(p, q, to_ms, error))
            return FALSE;
    if (!prom_read_gain(p, from_ms, to_ms, error))
        return FALSE;
    prom_feed(p, rep);
    return TRUE;
}

gboolean
cli_prometheus_read(const CliPromOptions *o, CliReport *rep, gint64 from_ms, gint64 to_ms,
                    guint *n_series, GError **error)
{
    guint per_op_s = (guint)MAX(1, o->timeout_ms / 1000);
    g_autoptr(SoupSession) session = soup_session_new_with_options(
        "timeout", per_op_s, "user-agent", "polltunectl", NULL);
    g_autoptr(GHashTable) series = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                         prom_series_free);
    g_autoptr(GCancellable) cancel = g_cancellable_new();
    Prom p = { .o = o, .host_label = o->host_label ? o->host_label : "instance",
               .session = session, .cancel = cancel, .series = series };
    PromDeadline deadline;
    gboolean ok;

    if (!g_str_has_prefix(o->url, "http://")) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--prometheus %s: not an http:// URL",
                    o->url);
        return FALSE;
    }
    prom_deadline_start(&deadline, cancel, o->timeout_ms);
    ok = prom_read_all(&p, rep, from_ms, to_ms, error);
    prom_deadline_end(&deadline);
    if (ok)
        *n_series = g_hash_table_size(series);
    return ok;
}
