/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-export: streaming CSV (RFC 4180) and JSON Lines, and time bounds.
 *
 * Rows come from a cursor and go through one fixed buffer to the output
 * stream, so memory stays constant whatever the row count.  Numbers are
 * formatted by hand: with tens of millions of rows, printf's generality is
 * most of the cost.  Rollup rates are written as decimals (IOPS with three
 * places, CPU as percent of one core with four), exact from the stored
 * scaled integers.  Each row names its target twice: its identity and
 * the name it went by (targets.display_name), read once per export.
 */
#include <string.h>

#include <errno.h>
#include <math.h>

#include "store-private.h"

#define OUT_BUF (256 * 1024)

typedef struct {
    GOutputStream *stream;
    GCancellable *cancellable;
    char *buf;
    gsize len;
    GError *error;
    StoreFormat format;
    gint64 iso_second;          /* cache: the second last formatted */
    char iso[32];
    GHashTable *names;          /* identity -> the name it went by */
    const char *name_of;        /* cache: the identity last looked up */
    const char *name;           /* ... and its name (NULL: unknown) */
} Out;

typedef struct {
    const char *name;
    int decimals;
} Column;

static gboolean
out_flush(Out *o)
{
    if (o->error || o->len == 0)
        return o->error == NULL;
    if (!g_output_stream_write_all(o->stream, o->buf, o->len, NULL, o->cancellable, &o->error))
        return FALSE;
    o->len = 0;
    return TRUE;
}

/* Makes room for @n bytes; the caller writes at most that many. */
static inline char *
out_room(Out *o, gsize n)
{
    if (o->len + n > OUT_BUF)
        out_flush(o);
    return o->buf + o->len;
}

static inline void
out_mem(Out *o, const char *s, gsize n)
{
    if (n > OUT_BUF / 2) {
        out_flush(o);
        if (!o->error)
            g_output_stream_write_all(o->stream, s, n, NULL, o->cancellable, &o->error);
        return;
    }
    memcpy(out_room(o, n), s, n);
    o->len += n;
}

static inline void
out_c(Out *o, char c)
{
    *out_room(o, 1) = c;
    o->len++;
}

static inline void
out_s(Out *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

/* A scaled integer as a decimal with @decimals places ("12.345"). */
static void
out_i64(Out *o, gint64 v, int decimals)
{
    char tmp[32], *p = tmp + sizeof(tmp);
    guint64 u = v < 0 ? -(guint64)v : (guint64)v;
    int digits = 0;

    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
        if (++digits == decimals)
            *--p = '.';
    } while (u || digits <= decimals);
    if (decimals > 0 && *p == '.')
        *--p = '0';
    if (v < 0)
        *--p = '-';
    out_mem(o, p, tmp + sizeof(tmp) - p);
}

static void
out_csv_text(Out *o, const char *s)
{
    if (!s)
        return;
    if (!strpbrk(s, ",\"\r\n")) {
        out_s(o, s);
        return;
    }
    out_c(o, '"');
    for (; *s; s++) {
        if (*s == '"')
            out_c(o, '"');
        out_c(o, *s);
    }
    out_c(o, '"');
}

static void
out_json_text(Out *o, const char *s)
{
    if (!s) {
        out_s(o, "null");
        return;
    }
    out_c(o, '"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            out_c(o, '\\');
            out_c(o, (char)c);
        } else if (c < 0x20) {
            char esc[8];

            g_snprintf(esc, sizeof(esc), "\\u%04x", c);
            out_s(o, esc);
        } else {
            out_c(o, (char)c);
        }
    }
    out_c(o, '"');
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void
civil_from_days(gint64 z, int *y, int *m, int *d)
{
    gint64 era, yoe, doy, mp;
    guint doe;

    z += 719468;
    era = (z >= 0 ? z : z - 146096) / 146097;
    doe = (guint)(z - era * 146097);
    yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

gsize
store_time_format(gint64 ms, char buf[32])
{
    gint64 sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    gint64 days = sec >= 0 ? sec / 86400 : -((-sec + 86399) / 86400);
    int rem = (int)(sec - days * 86400), y, m, d;

    civil_from_days(days, &y, &m, &d);
    return g_snprintf(buf, 32, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d, rem / 3600,
                      rem / 60 % 60, rem % 60, (int)(ms - sec * 1000));
}

static void
out_time(Out *o, gint64 ms)
{
    gint64 sec = ms / 1000;
    int frac = (int)(ms % 1000);

    if (ms < 0 || sec != o->iso_second) {
        store_time_format(ms, o->iso);
        o->iso_second = ms < 0 ? G_MININT64 : sec;
    } else {
        o->iso[20] = (char)('0' + frac / 100);
        o->iso[21] = (char)('0' + frac / 10 % 10);
        o->iso[22] = (char)('0' + frac % 10);
    }
    if (o->format == STORE_FORMAT_JSONL)
        out_c(o, '"');
    out_mem(o, o->iso, 24);
    if (o->format == STORE_FORMAT_JSONL)
        out_c(o, '"');
}

static void
out_header(Out *o, const Column *cols, guint n, const char *const *text_cols, guint n_text)
{
    if (o->format != STORE_FORMAT_CSV)
        return;
    out_s(o, "time,target,name,iothread");
    for (guint i = 0; i < n; i++) {
        out_c(o, ',');
        out_s(o, cols[i].name);
    }
    for (guint i = 0; i < n_text; i++) {
        out_c(o, ',');
        out_s(o, text_cols[i]);
    }
    out_s(o, "\r\n");
}

/* The name @target went by.  Rows come grouped by target, so one lookup
 * a group, not one a row. */
static const char *
out_name(Out *o, const char *target)
{
    if (!o->name_of || !g_str_equal(o->name_of, target)) {
        gpointer key = NULL, name = NULL;

        g_hash_table_lookup_extended(o->names, target, &key, &name);
        /* The table's key outlives the cursor's row. */
        o->name_of = key;
        o->name = name;
    }
    return o->name;
}

/* One record: time, names, numbers (METRIC_ABSENT empty/null), then texts. */
static void
out_record(Out *o, gint64 ts, const char *target, const char *iothread, const Column *cols,
           const gint64 *vals, guint n, const char *const *text_cols, const char *const *texts,
           guint n_text)
{
    gboolean csv = o->format == STORE_FORMAT_CSV;
    const char *name = out_name(o, target);

    if (!csv)
        out_s(o, "{\"time\":");
    out_time(o, ts);
    out_s(o, csv ? "," : ",\"target\":");
    csv ? out_csv_text(o, target) : out_json_text(o, target);
    out_s(o, csv ? "," : ",\"name\":");
    csv ? out_csv_text(o, name) : out_json_text(o, name);
    out_s(o, csv ? "," : ",\"iothread\":");
    csv ? out_csv_text(o, iothread) : out_json_text(o, iothread);
    for (guint i = 0; i < n; i++) {
        if (csv) {
            out_c(o, ',');
        } else {
            out_s(o, ",\"");
            out_s(o, cols[i].name);
            out_s(o, "\":");
        }
        if (vals[i] != METRIC_ABSENT)
            out_i64(o, vals[i], cols[i].decimals);
        else if (!csv)
            out_s(o, "null");
    }
    for (guint i = 0; i < n_text; i++) {
        if (csv) {
            out_c(o, ',');
            out_csv_text(o, texts[i]);
        } else {
            out_s(o, ",\"");
            out_s(o, text_cols[i]);
            out_s(o, "\":");
            out_json_text(o, texts[i]);
        }
    }
    out_s(o, csv ? "\r\n" : "}\n");
}

/* Raw rows: the tick's length, every metric of the table under its name
 * in table order, then the rates the table exports beside them (iops).
 * Columns are only ever added; readers find them by name. */
#define RAW_COLS_MAX (1 + METRIC_MAX + METRIC_RATE_MAX)

static guint
raw_columns(Column *cols)
{
    guint n = 0;

    cols[n++] = (Column){ "tick_ns", 0 };
    for (int i = 0; i < METRIC_MAX; i++)
        cols[n++] = (Column){ metric_def(i)->name, 0 };
    for (int r = 0; r < METRIC_RATE_MAX; r++)
        if (metric_rate_def(r)->raw_export)
            cols[n++] = (Column){ metric_rate_def(r)->json_key,
                                  metric_rate_def(r)->export_decimals };
    return n;
}

/* Rollup rows: the statistics, then the gauges kept (the triple). */
#define ROLLUP_STATS 13
#define ROLLUP_COLS_MAX (ROLLUP_STATS + METRIC_MAX)

static const Column rollup_cols[ROLLUP_STATS] = {
    { "count", 0 }, { "span_ms", 0 },
    { "iops_min", 3 }, { "iops_mean", 3 }, { "iops_max", 3 }, { "iops_p95", 3 },
    { "lat_min_ns", 0 }, { "lat_mean_ns", 0 }, { "lat_max_ns", 0 }, { "lat_p95_ns", 0 },
    { "cpu_min_pct", 4 }, { "cpu_mean_pct", 4 }, { "cpu_max_pct", 4 },
};

static guint
rollup_columns(Column *cols)
{
    MetricId ids[METRIC_MAX];
    int n = store_rolled_gauges(ids);

    memcpy(cols, rollup_cols, sizeof(rollup_cols));
    for (int k = 0; k < n; k++)
        cols[ROLLUP_STATS + k] = (Column){ metric_def(ids[k])->name, 0 };
    return ROLLUP_STATS + n;
}


static const Column decision_cols[] = {
    { "old_poll_max_ns", 0 }, { "old_poll_grow", 0 }, { "old_poll_shrink", 0 },
    { "new_poll_max_ns", 0 }, { "new_poll_grow", 0 }, { "new_poll_shrink", 0 },
    { "applied", 0 },
};
static const char *const decision_texts[] = { "policy", "reason", "cause" };

static void
raw_values(const StoreRow *r, gint64 *v)
{
    guint n = 1 + METRIC_MAX;

    v[0] = r->len_ns;
    /* the sample's columns: the iothread's entries of the vector */
    memcpy(v + 1, r->sample.m.v, METRIC_MAX * sizeof(r->sample.m.v[0]));
    for (int k = 0; k < METRIC_RATE_MAX; k++) {
        const MetricRateDef *d = metric_rate_def(k);
        double rate;

        if (!d->raw_export)
            continue;
        /* As a scaled integer, written with the column's decimals. */
        v[n++] = metric_rate_value(k, &r->sample.m, r->len_ns, &rate) ?
                 llround(rate * pow(10, d->export_decimals)) : METRIC_ABSENT;
    }
}

static void
rollup_values(const StoreRow *r, gint64 *v)
{
    /* CPU is stored in ppm of a core; as percent that is 4 decimals. */
    const gint64 vals[] = {
        r->count, r->span_ms, r->iops.min, r->iops.mean, r->iops.max, r->iops.p95,
        r->lat.min, r->lat.mean, r->lat.max, r->lat.p95, r->cpu.min, r->cpu.mean, r->cpu.max,
    };

    MetricId ids[METRIC_MAX];
    int n = store_rolled_gauges(ids);

    G_STATIC_ASSERT(G_N_ELEMENTS(vals) == ROLLUP_STATS);
    memcpy(v, vals, sizeof(vals));
    for (int k = 0; k < n; k++)
        v[ROLLUP_STATS + k] = r->sample.m.v[ids[k]];
}

static gboolean
export_samples(StoreDb *db, const StoreFilter *f, Out *o, GError **error)
{
    g_autoptr(StoreCursor) cur = store_query_range(db, f, error);
    gboolean raw = f->resolution == STORE_RES_RAW;
    Column cols[MAX(RAW_COLS_MAX, ROLLUP_COLS_MAX)];
    guint n;
    const StoreRow *r;
    gint64 v[MAX(RAW_COLS_MAX, ROLLUP_COLS_MAX)];

    if (!cur)
        return FALSE;
    n = raw ? raw_columns(cols) : rollup_columns(cols);
    out_header(o, cols, n, NULL, 0);
    while (!o->error) {
        if (!store_cursor_next(cur, &r, error))
            return FALSE;
        if (!r)
            break;
        if (raw)
            raw_values(r, v);
        else
            rollup_values(r, v);
        out_record(o, r->ts_ms, r->target, r->iothread, cols, v, n, NULL, NULL, 0);
    }
    return TRUE;
}

static gboolean
export_decisions(StoreDb *db, const StoreFilter *f, Out *o, GError **error)
{
    g_autoptr(StoreCursor) cur = store_query_decisions(db, f, error);
    const StoreDecisionRow *d;

    if (!cur)
        return FALSE;
    out_header(o, decision_cols, G_N_ELEMENTS(decision_cols), decision_texts,
               G_N_ELEMENTS(decision_texts));
    while (!o->error) {
        const char *texts[G_N_ELEMENTS(decision_texts)];
        gint64 v[G_N_ELEMENTS(decision_cols)];

        if (!store_cursor_next_decision(cur, &d, error))
            return FALSE;
        if (!d)
            break;
        v[0] = d->old_triple.poll_max_ns;
        v[1] = d->old_triple.poll_grow;
        v[2] = d->old_triple.poll_shrink;
        v[3] = d->new_triple.poll_max_ns;
        v[4] = d->new_triple.poll_grow;
        v[5] = d->new_triple.poll_shrink;
        v[6] = d->applied;
        texts[0] = d->policy;
        texts[1] = d->reason;
        texts[2] = d->cause;
        out_record(o, d->ts_ms, d->target, d->iothread, decision_cols, v,
                   G_N_ELEMENTS(decision_cols), decision_texts, texts, G_N_ELEMENTS(texts));
    }
    return TRUE;
}

gboolean
store_export(StoreDb *db, const StoreFilter *filter, StoreExportWhat what, StoreFormat format,
             GOutputStream *out, GCancellable *cancellable, GError **error)
{
    Out o = { .stream = out, .cancellable = cancellable, .format = format,
              .iso_second = G_MININT64 };
    g_autoptr(GPtrArray) names = NULL;
    g_autoptr(GHashTable) by_target = g_hash_table_new(g_str_hash, g_str_equal);
    gboolean ok;

    if (format < 0 || format >= STORE_FORMAT_MAX) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: export: bad format", db->path);
        return FALSE;
    }
    /* One row a target ever recorded: a few hundred at most, read once. */
    if (!(names = store_target_names(db, error)))
        return FALSE;
    for (guint i = 0; i < names->len; i++) {
        const StoreTargetName *n = names->pdata[i];

        g_hash_table_insert(by_target, n->target, n->name);
    }
    o.names = by_target;
    o.buf = g_malloc(OUT_BUF);
    ok = what == STORE_EXPORT_DECISIONS ? export_decisions(db, filter, &o, error)
                                        : export_samples(db, filter, &o, error);
    if (ok)
        out_flush(&o);
    g_free(o.buf);
    if (ok && o.error) {
        g_propagate_prefixed_error(error, o.error, "%s: export: ", db->path);
        return FALSE;
    }
    g_clear_error(&o.error);
    return ok;
}

gboolean
store_duration_parse(const char *text, gint64 *ms, GError **error)
{
    /* Longest first among those sharing a letter: "ms" before "m". */
    static const struct {
        const char *unit;
        gint64 ms;
    } units[] = {
        { "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60000 }, { "h", 3600000 },
        { "d", 86400000 }, { "w", 7 * G_GINT64_CONSTANT(86400000) },
    };
    const char *end = NULL;
    guint64 n;

    if (!text || !g_ascii_isdigit(*text)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID,
                    "'%s' is not a duration (a number and one of ms, s, m, h, d, w)",
                    text ? text : "");
        return FALSE;
    }
    errno = 0;
    n = g_ascii_strtoull(text, (char **)&end, 10);
    while (*end == ' ')
        end++;
    for (gsize i = 0; i < G_N_ELEMENTS(units); i++) {
        if (g_ascii_strcasecmp(end, units[i].unit) == 0) {
            if (errno || n > (guint64)(G_MAXINT64 / units[i].ms)) {
                g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID,
                            "'%s' is too large a duration", text);
                return FALSE;
            }
            *ms = (gint64)n * units[i].ms;
            return TRUE;
        }
    }
    g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID,
                "'%s' has an unknown unit for a duration (ms, s, m, h, d, w)", text);
    return FALSE;
}

gboolean
store_time_parse(const char *text, gint64 now_ms, gint64 *ms_out, GError **error)
{
    g_autoptr(GTimeZone) utc = g_time_zone_new_utc();
    g_autoptr(GDateTime) dt = NULL;
    g_autofree char *full = NULL;
    gsize len = text ? strlen(text) : 0;
    gint64 span;

    if (len == 0)
        goto bad;
    if (g_str_equal(text, "now")) {
        *ms_out = now_ms;
        return TRUE;
    }
    /* A span back from now, in the duration grammar; a bare number is no
     * time bound (it would silently mean milliseconds). */
    if (strspn(text, "0123456789") < len &&
        store_duration_parse(text, &span, NULL)) {
        *ms_out = now_ms - span;
        return TRUE;
    }
    /* A bare date means its midnight, UTC. */
    full = len == 10 ? g_strconcat(text, "T00:00:00Z", NULL) : g_strdup(text);
    dt = g_date_time_new_from_iso8601(full, utc);
    if (!dt)
        goto bad;
    *ms_out = g_date_time_to_unix(dt) * 1000 + g_date_time_get_microsecond(dt) / 1000;
    return TRUE;

bad:
    g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "time \"%s\": expected ISO 8601 "
                "(2026-12-01T10:00:00Z) or a span back from now (500ms, 30s, 15m, 12h, 7d, 2w)",
                text ? text : "");
    return FALSE;
}
