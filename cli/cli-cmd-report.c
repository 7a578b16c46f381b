/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-report: report, from the daemon, from a database file with --db,
 * or for a fleet from a Prometheus server with --prometheus.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli-commands.h"
#include "cli-data.h"
#include "cli-format.h"
#include "cli-prometheus.h"
#include "cli-report.h"
#include "qmp-json.h"

/* The daemon returns at most this many history rows per request. */
#define DAEMON_HISTORY_MAX_ROWS 10000

static char *opt_vm;
static char *opt_output;
static char *opt_prometheus;
static char *opt_selector;
static char *opt_scrape;
static char *opt_host_label;

const GOptionEntry cli_report_entries[] = {
    CLI_RANGE_ENTRIES("30d", CLI_RESOLUTION_BY_RANGE),
    { "vm", 0, 0, G_OPTION_ARG_STRING, &opt_vm, "Only this VM", "NAME" },
    { "prometheus", 0, 0, G_OPTION_ARG_STRING, &opt_prometheus,
      "A fleet's report from this Prometheus server (http://HOST:PORT)", "URL" },
    { "selector", 0, 0, G_OPTION_ARG_STRING, &opt_selector,
      "With --prometheus: label matchers for the series (job=\"polltune\",dc=\"b\")",
      "MATCHERS" },
    { "scrape-interval", 0, 0, G_OPTION_ARG_STRING, &opt_scrape,
      "With --prometheus: the servers' scrape interval (default 15s)", "DURATION" },
    { "host-label", 0, 0, G_OPTION_ARG_STRING, &opt_host_label,
      "With --prometheus: the label that names a host (default instance)", "LABEL" },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opt_output, "Write here, not to stdout",
      "FILE" },
    { NULL },
};

/* The host's ticks over @f's range (already cut to the newest per-tick
 * rows the report keeps), as the daemon's `host-history` rows. */
static gboolean
report_offline_host(StoreDb *db, CliReport *rep, const StoreFilter *f, GError **error)
{
    g_autoptr(StoreCursor) cur = store_query_host(db, f, error);
    const StoreHostRow *row;

    if (!cur)
        return FALSE;
    for (;;) {
        g_autoptr(json_object) o = NULL;
        CliHostPoint h;

        if (!store_cursor_next_host(cur, &row, error))
            return FALSE;
        if (!row)
            return TRUE;
        o = store_host_row_to_json(row);
        if (cli_host_point_from_json(o, &h))
            cli_report_add_host(rep, &h);
    }
}

typedef void (*ReportAddRow)(CliReport *r, const CliPoint *p);

/* Each row @f selects, handed to @add as a point. */
static gboolean
report_offline_rows(StoreDb *db, CliReport *rep, const StoreFilter *f, ReportAddRow add,
                    GError **error)
{
    g_autoptr(StoreCursor) cur = store_query_range(db, f, error);
    const StoreRow *row;

    if (!cur)
        return FALSE;
    for (;;) {
        CliPoint p;

        if (!store_cursor_next(cur, &row, error))
            return FALSE;
        if (!row)
            return TRUE;
        cli_point_from_row(row, &p);
        add(rep, &p);
    }
}

/*
 * The raw rows of the POLICY_GAIN_PAIR_MAX_AGE_MS before @range: the
 * pairs they close charge the range's first ticks, as they did in the
 * daemon's counters, which a fleet report of the same range reads
 * (cli_report_add_warmup()).
 */
static gboolean
report_offline_warmup(StoreDb *db, CliReport *rep, const StoreFilter *range, GError **error)
{
    StoreFilter w = *range;

    if (range->from_ms == METRIC_ABSENT)
        return TRUE;
    w.resolution = STORE_RES_RAW;
    w.to_ms = range->from_ms;
    w.from_ms = range->from_ms - POLICY_GAIN_PAIR_MAX_AGE_MS;
    return report_offline_rows(db, rep, &w, cli_report_add_warmup, error);
}

static gboolean
report_offline(StoreDb *db, CliReport *rep, const CliRange *r, const char *target,
               GError **error)
{
    g_autoptr(StoreCursor) dcur = NULL;
    const StoreDecisionRow *drow;
    gint64 first = 0, last = 0, range_from;
    StoreFilter f, hf;

    cli_store_filter(&f, r, target, NULL);
    range_from = f.from_ms;
    for (gboolean ticks = FALSE;; ticks = TRUE) {
        if (!report_offline_rows(db, rep, &f, ticks ? cli_report_add_tick : cli_report_add_point,
                                 error))
            return FALSE;
        /* Rollups do not say which ticks polled: the raw rows kept for the
         * range do, and the policy's off/on runs are only in them.  The
         * report keeps the newest CLI_REPORT_MAX_TICKS of each iothread:
         * read no older ones. */
        if (ticks || f.resolution == STORE_RES_RAW)
            break;
        f.resolution = STORE_RES_RAW;
        if (cli_report_data_span(rep, &first, &last))
            f.from_ms = MAX(f.from_ms, last - (gint64)CLI_REPORT_MAX_TICKS * 1000);
    }
    /* Where the rows replayed start at the range's start; a range of
     * rollups longer than the ticks kept starts its replay later, and
     * is charged from there on. */
    if (f.from_ms == range_from && !report_offline_warmup(db, rep, &f, error))
        return FALSE;
    hf = f;
    if (cli_report_data_span(rep, &first, &last))
        hf.from_ms = MAX(hf.from_ms, last - (gint64)CLI_REPORT_MAX_TICKS * 1000);
    if (!report_offline_host(db, rep, &hf, error) ||
        !(dcur = store_query_decisions(db, &f, error)))
        return FALSE;
    for (;;) {
        CliDecision d;

        if (!store_cursor_next_decision(dcur, &drow, error))
            return FALSE;
        if (!drow)
            break;
        cli_decision_from_row(drow, &d);
        cli_report_add_decision(rep, &d);
    }
    return TRUE;
}

/* Decision lines arrive in chunks cut anywhere: reassemble lines. */
typedef struct {
    CliReport *rep;
    GString *line;
    GHashTable *targets;        /* the decisions' targets (owned strings), or NULL */
} DecisionLines;

static gboolean
decision_chunk(const char *chunk, gsize len, gpointer user_data, GError **error)
{
    DecisionLines *dl = user_data;

    for (gsize i = 0; i < len; i++) {
        g_autoptr(json_object) obj = NULL;
        CliDecision d;

        if (chunk[i] != '\n') {
            g_string_append_c(dl->line, chunk[i]);
            continue;
        }
        obj = json_tokener_parse(dl->line->str);
        if (!obj || !cli_decision_from_json(obj, &d)) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "export: bad decision line "
                        "\"%.80s\"", dl->line->str);
            return FALSE;
        }
        cli_report_add_decision(dl->rep, &d);
        if (dl->targets && d.target)
            g_hash_table_add(dl->targets, g_strdup(d.target));
        g_string_truncate(dl->line, 0);
    }
    return TRUE;
}

/* The daemon's raw rows of @target (and @iothread) over [@from, @to),
 * each handed to @add. */
static gboolean
report_online_raw(CliContext *ctx, CliReport *rep, const CliRange *r, gint64 from_ms,
                  gint64 to_ms, const char *target, const char *iothread, ReportAddRow add,
                  GError **error)
{
    CliRange raw = *r;
    g_autofree char *since = cli_iso_time(from_ms);
    g_autofree char *until = cli_iso_time(to_ms);
    g_autoptr(json_object) reply = NULL;
    json_object *rows;

    raw.resolution = STORE_RES_RAW;
    raw.from_ms = from_ms;
    raw.to_ms = to_ms;
    raw.since = since;
    raw.until = until;
    if (!(reply = cli_history_online(ctx, &raw, target, iothread, error)))
        return FALSE;
    if (!json_object_object_get_ex(reply, "rows", &rows) ||
        !json_object_is_type(rows, json_type_array))
        return TRUE;
    for (gsize i = 0; i < json_object_array_length(rows); i++) {
        CliPoint p;

        if (cli_point_from_json(json_object_array_get_idx(rows, i), &p))
            add(rep, &p);
    }
    return TRUE;
}

/*
 * Rollups do not say which ticks polled; the raw rows do.  The daemon
 * answers at most DAEMON_HISTORY_MAX_ROWS of them, so ask for the newest
 * that many seconds (1 s ticks, the default interval): the policy's latest
 * off/on runs, which the report's estimates need.  *@from_ms: where they
 * start.
 */
static gboolean
report_online_ticks(CliContext *ctx, CliReport *rep, const CliRange *r, const char *target,
                    const char *iothread, gint64 *from_ms, GError **error)
{
    *from_ms = MAX(r->from_ms, r->to_ms - (gint64)DAEMON_HISTORY_MAX_ROWS * 1000);
    return report_online_raw(ctx, rep, r, *from_ms, r->to_ms, target, iothread,
                             cli_report_add_tick, error);
}

/*
 * The raw rows before the range, for the pairs they close
 * (report_offline_warmup()): the 12 h of POLICY_GAIN_PAIR_MAX_AGE_MS, or
 * as many seconds as the daemon answers rows, at 1 s ticks.
 */
static gboolean
report_online_warmup(CliContext *ctx, CliReport *rep, const CliRange *r, const char *target,
                     const char *iothread, GError **error)
{
    gint64 span = MIN(POLICY_GAIN_PAIR_MAX_AGE_MS, (gint64)DAEMON_HISTORY_MAX_ROWS * 1000);

    return report_online_raw(ctx, rep, r, r->from_ms - span, r->from_ms, target, iothread,
                             cli_report_add_warmup, error);
}

/* The host's ticks, as report_online_ticks reads the iothreads': the
 * newest DAEMON_HISTORY_MAX_ROWS seconds.  A daemon from before
 * `host-history` has none to give: the page says so. */
static gboolean
report_online_host(CliContext *ctx, CliReport *rep, const CliRange *r, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) reply = NULL;
    g_autoptr(GError) local = NULL;
    g_autofree char *since = cli_iso_time(MAX(r->from_ms, r->to_ms -
                                              (gint64)DAEMON_HISTORY_MAX_ROWS * 1000));
    json_object *rows;

    json_object_object_add(req, "since", json_object_new_string(since));
    json_object_object_add(req, "until", json_object_new_string(r->until));
    if (!(reply = cli_context_call(ctx, "host-history", req, &local))) {
        if (g_strcmp0(cli_client_error_class(ctx->client), "CommandNotFound") != 0) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
        cli_report_add_note(rep, "This daemon does not give the host's CPU and pressure "
                            "(host-history): the page shows the iothreads alone.");
        return TRUE;
    }
    if (!json_object_object_get_ex(reply, "rows", &rows) ||
        !json_object_is_type(rows, json_type_array))
        return TRUE;
    for (gsize i = 0; i < json_object_array_length(rows); i++) {
        CliHostPoint h;

        if (cli_host_point_from_json(json_object_array_get_idx(rows, i), &h))
            cli_report_add_host(rep, &h);
    }
    return TRUE;
}

static gboolean
report_online_series(CliContext *ctx, CliReport *rep, const CliRange *r, const char *target,
                     const char *iothread, GError **error)
{
    g_autoptr(json_object) reply = cli_history_online(ctx, r, target, iothread, error);
    json_object *rows;
    gint64 ticks_from = r->from_ms;
    gsize n;

    if (!reply)
        return FALSE;
    if (!json_object_object_get_ex(reply, "rows", &rows) ||
        !json_object_is_type(rows, json_type_array)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "history: the reply has no rows");
        return FALSE;
    }
    n = json_object_array_length(rows);
    for (gsize i = 0; i < n; i++) {
        CliPoint p;

        if (cli_point_from_json(json_object_array_get_idx(rows, i), &p))
            cli_report_add_point(rep, &p);
    }
    if (r->resolution != STORE_RES_RAW && !report_online_ticks(ctx, rep, r, target, iothread,
                                                               &ticks_from, error))
        return FALSE;
    /* Where the rows replayed start at the range's start (ticks cut to
     * the newest are charged from where they start). */
    if (n < DAEMON_HISTORY_MAX_ROWS && ticks_from == r->from_ms &&
        !report_online_warmup(ctx, rep, r, target, iothread, error))
        return FALSE;
    if (n >= DAEMON_HISTORY_MAX_ROWS) {
        g_autofree char *note = g_strdup_printf(
            "%s%s%s: the daemon returns at most %d rows per request, so this %s history is "
            "cut short; use a coarser --resolution or --db.", target, iothread ? "/" : "",
            iothread ? iothread : "", DAEMON_HISTORY_MAX_ROWS, iothread ? "iothread's" : "VM's");

        cli_report_add_note(rep, note);
    }
    return TRUE;
}

static gboolean
report_online(CliContext *ctx, CliReport *rep, const CliRange *r, GError **error)
{
    g_autoptr(json_object) list = cli_context_call(ctx, "list", NULL, error);
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) done = NULL;
    g_autoptr(GString) line = g_string_new(NULL);
    g_autoptr(GHashTable) read = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(GHashTable) decided = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    DecisionLines dl = { rep, line, decided };
    json_object *targets;
    gboolean vm_listed = FALSE;
    GHashTableIter it;
    gpointer gone;

    if (!list)
        return FALSE;
    if (json_object_object_get_ex(list, "targets", &targets) &&
        json_object_is_type(targets, json_type_array)) {
        for (gsize i = 0; i < json_object_array_length(targets); i++) {
            json_object *t = json_object_array_get_idx(targets, i), *its;
            const char *name = qmp_json_get_string(t, "name");

            /* --vm names a target by its identity or the name it goes by. */
            if (!name || (opt_vm && !g_str_equal(opt_vm, name) &&
                          g_strcmp0(opt_vm, qmp_json_get_string(t, "display_name"))) ||
                !json_object_object_get_ex(t, "iothreads", &its) ||
                !json_object_is_type(its, json_type_array))
                continue;
            vm_listed = TRUE;
            g_hash_table_add(read, g_strdup(name));
            cli_report_set_name(rep, name, qmp_json_get_string(t, "display_name"));
            for (gsize k = 0; k < json_object_array_length(its); k++) {
                const char *id = json_object_get_string(json_object_array_get_idx(its, k));

                if (!report_online_series(ctx, rep, r, name, id, error))
                    return FALSE;
            }
        }
    }
    /* A VM not tuned now is read from the store, all its iothreads at
     * once; the daemon answers NotFound for a name it never recorded. */
    if (opt_vm && !vm_listed) {
        if (!report_online_series(ctx, rep, r, opt_vm, NULL, error))
            return FALSE;
        g_hash_table_add(read, g_strdup(opt_vm));
    }
    if (!report_online_host(ctx, rep, r, error))
        return FALSE;
    json_object_object_add(req, "format", json_object_new_string("jsonl"));
    json_object_object_add(req, "since", json_object_new_string(r->since));
    json_object_object_add(req, "until", json_object_new_string(r->until));
    json_object_object_add(req, "decisions", json_object_new_boolean(TRUE));
    if (opt_vm)
        json_object_object_add(req, "target", json_object_new_string(opt_vm));
    if (!(done = cli_client_call(ctx->client, "export", req, decision_chunk, &dl, error)))
        return FALSE;
    /* A VM that decided in the range but is no longer listed (its QEMU
     * exited, as the demo's does before its report) is read from the
     * store like a --vm not tuned now: the history is the range's, not
     * only what runs at this moment. */
    g_hash_table_iter_init(&it, decided);
    while (g_hash_table_iter_next(&it, &gone, NULL))
        if (!g_hash_table_contains(read, gone) &&
            !report_online_series(ctx, rep, r, gone, NULL, error))
            return FALSE;
    return TRUE;
}

/* Writes the page; with -o FILE, says so (--json: with each series'
 * figures, for scripts that compare reports). */
static gboolean
report_finish(CliContext *ctx, CliReport *rep, const char *resolution, GError **error)
{
    CliOutput o = { 0 };
    gint64 from, to;
    gboolean ok;

    if (!cli_output_open(&o, opt_output, error))
        return FALSE;
    ok = cli_report_write(rep, o.base, ctx->now_ms, error);
    if (!cli_output_close(&o, ok, error))
        return FALSE;
    if (opt_output && !g_str_equal(opt_output, "-")) {
        if (ctx->json) {
            g_autoptr(json_object) s = json_object_new_object();

            json_object_object_add(s, "path", json_object_new_string(opt_output));
            json_object_object_add(s, "resolution", json_object_new_string(resolution));
            json_object_object_add(s, "points",
                                   json_object_new_int64((gint64)cli_report_n_points(rep)));
            json_object_object_add(s, "series", cli_report_summary(rep));
            cli_report_range(rep, &from, &to);
            json_object_object_add(s, "from_ms", json_object_new_int64(from));
            json_object_object_add(s, "to_ms", json_object_new_int64(to));
            cli_print_json(s);
        } else {
            printf("wrote %s (%" G_GUINT64_FORMAT " points at %s resolution)\n", cli_text(opt_output),
                   cli_report_n_points(rep), resolution);
        }
    }
    return TRUE;
}

/* The Prometheus servers' scrape interval when none is given: theirs. */
#define PROM_DEFAULT_SCRAPE_MS 15000
/* The whole exchange with the server when --timeout is not given: nine
 * queries, each a range query over up to CLI_PROM_MAX_SERIES series. */
#define PROM_DEFAULT_TIMEOUT_MS 60000

/* A Prometheus label name: [a-zA-Z_][a-zA-Z0-9_]*. */
static gboolean
prom_label_name_valid(const char *name)
{
    if (!*name || g_ascii_isdigit(*name))
        return FALSE;
    for (const char *c = name; *c; c++)
        if (!g_ascii_isalnum(*c) && *c != '_')
            return FALSE;
    return TRUE;
}

static gboolean
report_prometheus(CliContext *ctx, const CliRange *r, GError **error)
{
    g_autoptr(CliReport) rep = NULL;
    g_autofree char *source = NULL;
    g_autoptr(GError) local = NULL;
    CliPromOptions o = { .url = opt_prometheus, .selector = opt_selector,
                         .host_label = opt_host_label, .scrape_ms = PROM_DEFAULT_SCRAPE_MS,
                         .timeout_ms = ctx->timeout_given ? ctx->timeout_ms
                                                          : PROM_DEFAULT_TIMEOUT_MS };
    guint n = 0;

    if (ctx->db_path || opt_vm) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--prometheus reads the fleet: it "
                    "takes no %s", ctx->db_path ? "--db" : "--vm (use --selector)");
        return FALSE;
    }
    if (opt_host_label && !prom_label_name_valid(opt_host_label)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--host-label %s: not a label name "
                    "(letters, digits and _, not starting with a digit)", opt_host_label);
        return FALSE;
    }
    if (opt_scrape && (!store_duration_parse(opt_scrape, &o.scrape_ms, &local) ||
                       o.scrape_ms < 1000)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--scrape-interval %s: %s", opt_scrape,
                    local ? local->message : "at least 1s");
        return FALSE;
    }
    source = opt_selector ? g_strdup_printf("Prometheus at %s, series {%s}", opt_prometheus,
                                            opt_selector)
                          : g_strdup_printf("Prometheus at %s", opt_prometheus);
    rep = cli_report_new(r->from_ms, r->to_ms, source, STORE_RES_RAW);
    cli_report_set_fleet(rep, TRUE);
    cli_report_fit_range(rep, !cli_range_options.since);
    if (!cli_prometheus_read(&o, rep, r->from_ms, r->to_ms, &n, error))
        return FALSE;
    cli_report_add_note(rep, "Fleet report from Prometheus: each VM is HOST/DOMAIN, HOST "
                        "being the target's label given by --host-label (default instance); "
                        "rates "
                        "are over a window of at least four scrapes, so off/on runs shorter "
                        "than a step are not seen; decisions and their evidence are in each "
                        "host's own history (polltunectl report on that host).");
    if (n == 0) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "Prometheus at %s: no polltune "
                    "iothread series%s%s%s in the range", opt_prometheus,
                    opt_selector ? " matching {" : "", opt_selector ? opt_selector : "",
                    opt_selector ? "}" : "");
        return FALSE;
    }
    return report_finish(ctx, rep, "prometheus", error);
}

gboolean
cli_cmd_report(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(CliDb) db = NULL;
    g_autoptr(CliReport) rep = NULL;
    g_autoptr(GHashTable) names = NULL;
    g_autofree char *target = NULL;
    g_autofree char *source = NULL;
    g_autofree char *since_iso = NULL;
    g_autofree char *until_iso = NULL;
    CliRange r;

    if (!cli_range_parse(ctx, "30d", &r, error))
        return FALSE;
    /* One absolute range for every request, whatever the daemon's clock. */
    since_iso = cli_iso_time(r.from_ms);
    until_iso = cli_iso_time(r.to_ms);
    r.since = since_iso;
    r.until = until_iso;
    if (opt_prometheus)
        return report_prometheus(ctx, &r, error);
    if (opt_selector || opt_scrape || opt_host_label) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s needs --prometheus",
                    opt_selector ? "--selector" : opt_scrape ? "--scrape-interval"
                                                             : "--host-label");
        return FALSE;
    }
    if (ctx->db_path) {
        if (!(db = cli_context_db_open(ctx, error)) ||
            !cli_db_target_check(ctx, db, opt_vm, &target, error) ||
            !(names = cli_db_target_names(db, error)))
            return FALSE;
        source = g_strdup_printf("database %s", ctx->db_path);
    } else {
        source = g_strdup_printf("polltuned at %s", ctx->socket_path);
    }
    /* Rollups exist only where the daemon's maintenance made them: when the
     * chosen level is empty, fall back to a finer one.  With the default
     * range, a history shorter than it is read at the resolution its own
     * span calls for (22 minutes of history: raw ticks, not one hourly
     * rollup), from its first sample. */
    for (;;) {
        gint64 first = 0, last = 0;
        StoreResolution fits;

        g_clear_pointer(&rep, cli_report_free);
        rep = cli_report_new(r.from_ms, r.to_ms, source, r.resolution);
        /* The daemon runs on this machine (its control socket is local);
         * a database is named by its file, its machine unknown. */
        if (!db)
            cli_report_set_host(rep, g_get_host_name());
        else
            cli_report_set_names(rep, names);
        cli_report_fit_range(rep, !cli_range_options.since);
        if (!(db ? report_offline(cli_db_store(db), rep, &r, target, error)
                 : report_online(ctx, rep, &r, error)))
            return FALSE;
        if (cli_report_n_points(rep) == 0) {
            if (r.resolution_given || r.resolution == STORE_RES_RAW)
                break;
            r.resolution--;
            continue;
        }
        if (cli_range_options.since || r.resolution_given || !cli_report_data_span(rep, &first, &last))
            break;
        fits = cli_resolution_for_span(r.to_ms - first);
        if (fits >= r.resolution)
            break;
        /* A rollup row is stamped with its period's start: keep that period. */
        r.from_ms = MAX(r.from_ms, first);
        r.resolution = fits;
        g_free(since_iso);
        since_iso = cli_iso_time(r.from_ms);
        r.since = since_iso;
    }
    return report_finish(ctx, rep, store_resolution_to_string(r.resolution), error);
}
