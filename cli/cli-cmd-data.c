/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-data: history and export, from the daemon or, with --db, from a
 * database file read-only with no daemon at all, and the range and output
 * file they share with report (cli-cmd-report.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <gio/gunixoutputstream.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli-commands.h"
#include "cli-count-stream.h"
#include "cli-data.h"
#include "cli-format.h"
#include "qmp-json.h"

CliRangeOptions cli_range_options;

static char *opt_format;
static char *opt_vm;
static char *opt_iothread;
static gboolean opt_decisions;
static char *opt_output;

const GOptionEntry cli_history_entries[] = {
    CLI_RANGE_ENTRIES("1h", CLI_RESOLUTION_BY_RANGE),
    { NULL },
};

const GOptionEntry cli_export_entries[] = {
    CLI_RANGE_ENTRIES("30d", "raw, every tick recorded"),
    { "format", 'F', 0, G_OPTION_ARG_STRING, &opt_format, "csv or jsonl (default csv)",
      "FORMAT" },
    { "vm", 0, 0, G_OPTION_ARG_STRING, &opt_vm, "Only this VM", "NAME" },
    { "iothread", 0, 0, G_OPTION_ARG_STRING, &opt_iothread, "Only this iothread", "ID" },
    { "decisions", 0, 0, G_OPTION_ARG_NONE, &opt_decisions,
      "Export the decision log instead of samples", NULL },
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &opt_output, "Write here, not to stdout",
      "FILE" },
    { NULL },
};

gboolean
cli_range_parse(CliContext *ctx, const char *since_default, CliRange *r, GError **error)
{
    const CliRangeOptions *opt = &cli_range_options;

    r->since = opt->since ? opt->since : since_default;
    r->until = opt->until;
    r->to_ms = ctx->now_ms;
    if (!cli_time_check("--since", r->since, ctx->now_ms, TRUE, &r->from_ms, error))
        return FALSE;
    if (r->until && !cli_time_check("--until", r->until, ctx->now_ms, TRUE, &r->to_ms, error))
        return FALSE;
    if (r->to_ms <= r->from_ms) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "--since %s is not before --until %s",
                    r->since, r->until ? r->until : "now");
        return FALSE;
    }
    r->resolution_given = opt->resolution != NULL;
    if (opt->resolution)
        return cli_resolution_parse(opt->resolution, &r->resolution, error);
    r->resolution = cli_resolution_for_span(r->to_ms - r->from_ms);
    return TRUE;
}

char *
cli_iso_time(gint64 ms)
{
    g_autoptr(GDateTime) s = g_date_time_new_from_unix_utc(ms / 1000);
    g_autoptr(GDateTime) t = s ? g_date_time_add(s, ms % 1000 * 1000) : NULL;

    return t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%S.%fZ") : g_strdup("1970-01-01");
}

void
cli_store_filter(StoreFilter *f, const CliRange *r, const char *target, const char *iothread)
{
    store_filter_init(f);
    f->from_ms = r->from_ms;
    f->to_ms = r->to_ms;
    f->target = target;
    f->iothread = iothread;
    f->resolution = r->resolution;
}

/* ---- history ---------------------------------------------------------- */

gboolean
cli_db_target_check(CliContext *ctx, CliDb *db, const char *vm, char **target, GError **error)
{
    *target = NULL;
    return !vm || (*target = cli_db_target_resolve(db, ctx->db_path, vm, error));
}

static json_object *
history_offline(CliContext *ctx, const CliRange *r, const char *target, const char *iothread,
                GError **error)
{
    g_autoptr(CliDb) db = cli_context_db_open(ctx, error);
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(json_object) reply = json_object_new_object();
    g_autoptr(GHashTable) names = NULL;
    g_autofree char *id = NULL;
    json_object *rows = json_object_new_array();
    StoreFilter f;
    const StoreRow *row;

    json_object_object_add(reply, "resolution",
                           json_object_new_string(store_resolution_to_string(r->resolution)));
    json_object_object_add(reply, "rows", rows);
    if (!db || !cli_db_target_check(ctx, db, target, &id, error) ||
        !(names = cli_db_target_names(db, error)))
        return NULL;
    cli_store_filter(&f, r, id, iothread);
    if (!(cur = store_query_range(cli_db_store(db), &f, error)))
        return NULL;
    for (;;) {
        json_object *o;
        const char *name;

        if (!store_cursor_next(cur, &row, error))
            return NULL;
        if (!row)
            break;
        /* The name the VM goes by beside its identity, as report's series. */
        o = cli_row_to_json(row);
        if ((name = g_hash_table_lookup(names, row->target)))
            json_object_object_add(o, "name", json_object_new_string(name));
        json_object_array_add(rows, o);
    }
    return g_steal_pointer(&reply);
}

json_object *
cli_history_online(CliContext *ctx, const CliRange *r, const char *target,
                   const char *iothread, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();

    json_object_object_add(req, "target", json_object_new_string(target));
    if (iothread)
        json_object_object_add(req, "iothread", json_object_new_string(iothread));
    json_object_object_add(req, "since", json_object_new_string(r->since));
    if (r->until)
        json_object_object_add(req, "until", json_object_new_string(r->until));
    json_object_object_add(req, "resolution",
                           json_object_new_string(store_resolution_to_string(r->resolution)));
    return cli_context_call(ctx, "history", req, error);
}

static void
history_print_group(json_object *rows, GArray *idx, gboolean rollup)
{
    gsize n = idx->len;
    g_autofree double *iops = g_new(double, MAX(n, 1));
    g_autofree double *lat = g_new(double, MAX(n, 1));
    g_autofree double *cpu = g_new(double, MAX(n, 1));
    g_autoptr(CliTable) t = rollup
        ? cli_table_new("TIME (UTC)", ">IOPS", ">IOPS-P95", ">LAT-\302\265s", ">LAT-P95",
                        ">CPU-%", ">CPU-MAX", ">N", NULL)
        : cli_table_new("TIME (UTC)", ">IOPS", ">LAT-\302\265s", ">CPU-%", ">POLL-MAX-NS", NULL);
    g_autofree char *table = NULL;
    CliPoint first = { 0 }, last = { 0 };

    for (gsize i = 0; i < n; i++) {
        json_object *row = json_object_array_get_idx(rows, g_array_index(idx, guint, i));
        CliPoint p;
        g_autofree char *when = NULL;
        g_autofree char *a = NULL;
        g_autofree char *b = NULL;
        g_autofree char *c = NULL;

        cli_point_from_json(row, &p);
        if (i == 0)
            first = p;
        last = p;
        iops[i] = p.iops;
        lat[i] = p.lat_us;
        cpu[i] = p.cpu_pct;
        when = cli_format_time_ms(p.ts_ms, FALSE);
        a = cli_format_si(p.iops);
        b = cli_format_fixed(p.lat_us, 1);
        c = cli_format_fixed(p.cpu_pct, 1);
        cli_table_row(t);
        cli_table_cell(t, when);
        cli_table_cell(t, a);
        if (rollup) {
            json_object *o;
            gint64 count = 0;
            double ip95 = NAN, lp95 = NAN, cmax = NAN;
            g_autofree char *d = NULL;
            g_autofree char *e = NULL;
            g_autofree char *f = NULL;

            if (json_object_object_get_ex(row, "iops", &o) &&
                json_object_object_get_ex(o, "p95", &o))
                ip95 = json_object_get_double(o);
            if (json_object_object_get_ex(row, "lat_us", &o) &&
                json_object_object_get_ex(o, "p95", &o))
                lp95 = json_object_get_double(o);
            if (json_object_object_get_ex(row, "cpu_pct", &o) &&
                json_object_object_get_ex(o, "max", &o))
                cmax = json_object_get_double(o);
            qmp_json_get_int(row, "count", &count);
            d = cli_format_si(ip95);
            e = cli_format_fixed(lp95, 1);
            f = cli_format_fixed(cmax, 1);
            cli_table_cell(t, d);
            cli_table_cell(t, b);
            cli_table_cell(t, e);
            cli_table_cell(t, c);
            cli_table_cell(t, f);
            cli_table_cellf(t, "%" G_GINT64_FORMAT, count);
        } else {
            cli_table_cell(t, b);
            cli_table_cell(t, c);
            if (p.poll_max_ns >= 0)
                cli_table_cellf(t, "%" G_GINT64_FORMAT, p.poll_max_ns);
            else
                cli_table_cell(t, "-");
        }
    }
    {
        g_autofree char *from = cli_format_time_ms(first.ts_ms, FALSE);
        g_autofree char *to = cli_format_time_ms(last.ts_ms, FALSE);
        g_autofree char *s1 = cli_sparkline_summary("IOPS", 7, iops, n, 60);
        g_autofree char *s2 = cli_sparkline_summary("lat \302\265s", 7, lat, n, 60);
        g_autofree char *s3 = cli_sparkline_summary("CPU %", 7, cpu, n, 60);

        json_object *row = json_object_array_get_idx(rows, g_array_index(idx, guint, 0));

        printf("%s/%s \302\267 %s \342\206\222 %s UTC \302\267 %zu rows\n  %s\n  %s\n  %s\n\n",
               cli_text(qmp_json_get_string(row, "name") ?: first.target),
               cli_text(first.iothread), from, to, n, s1, s2, s3);
    }
    table = cli_table_render(t);
    fputs(table, stdout);
}

static void
history_print(json_object *reply)
{
    json_object *rows = NULL;
    const char *res = qmp_json_get_string(reply, "resolution");
    g_autoptr(GHashTable) groups = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                         (GDestroyNotify)g_array_unref);
    g_autoptr(GPtrArray) order = g_ptr_array_new();
    gsize n;

    json_object_object_get_ex(reply, "rows", &rows);
    n = rows && json_object_is_type(rows, json_type_array) ? json_object_array_length(rows) : 0;
    if (n == 0) {
        printf("no history in this range\n");
        return;
    }
    /* Rows come in time order, iothreads interleaved: group them. */
    for (gsize i = 0; i < n; i++) {
        CliPoint p;
        g_autofree char *key = NULL;
        GArray *idx;
        guint ui = (guint)i;

        if (!cli_point_from_json(json_object_array_get_idx(rows, i), &p))
            continue;
        key = g_strdup_printf("%s/%s", p.target, p.iothread);
        if (!(idx = g_hash_table_lookup(groups, key))) {
            idx = g_array_new(FALSE, FALSE, sizeof(guint));
            g_ptr_array_add(order, idx);
            g_hash_table_insert(groups, g_steal_pointer(&key), idx);
        }
        g_array_append_val(idx, ui);
    }
    printf("resolution %s\n\n", res ? cli_text(res) : "?");
    for (guint g = 0; g < order->len; g++) {
        if (g > 0)
            printf("\n");
        history_print_group(rows, g_ptr_array_index(order, g), g_strcmp0(res, "raw") != 0);
    }
}

gboolean
cli_cmd_history(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autofree char *target = NULL;
    g_autofree char *iothread = NULL;
    g_autoptr(json_object) reply = NULL;
    CliRange r;

    if (!cli_target_split(args[0], &target, &iothread, error) ||
        !cli_range_parse(ctx, "1h", &r, error))
        return FALSE;
    reply = ctx->db_path ? history_offline(ctx, &r, target, iothread, error)
                         : cli_history_online(ctx, &r, target, iothread, error);
    if (!reply)
        return FALSE;
    if (ctx->json)
        cli_print_json(reply);
    else
        history_print(reply);
    return TRUE;
}

/* ---- output files ----------------------------------------------------- */

/* A file is written under a temporary name and renamed over @path only
 * when everything was written, so a failed export leaves no half file. */
gboolean
cli_output_open(CliOutput *o, const char *path, GError **error)
{
    o->cancel = g_cancellable_new();
    o->progress = isatty(STDERR_FILENO);
    if (!path || g_str_equal(path, "-")) {
        o->base = g_unix_output_stream_new(STDOUT_FILENO, FALSE);
        return TRUE;
    }
    if (g_file_test(path, G_FILE_TEST_EXISTS) && !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        /* A device or a pipe (/dev/null, a FIFO): write to it in place. */
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        if (fd < 0) {
            int e = errno;

            g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: %s", path, g_strerror(e));
            return FALSE;
        }
        o->base = g_unix_output_stream_new(fd, TRUE);
    } else {
        g_autoptr(GFile) f = g_file_new_for_commandline_arg(path);
        g_autoptr(GError) local = NULL;

        o->base = G_OUTPUT_STREAM(g_file_replace(f, NULL, FALSE, G_FILE_CREATE_NONE, NULL,
                                                 &local));
        if (!o->base) {
            /* GIO's messages usually name the file already. */
            if (strstr(local->message, path))
                g_set_error_literal(error, CLI_ERROR, CLI_ERROR_FAILED, local->message);
            else
                g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s: %s", path,
                            local->message);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
cli_output_close(CliOutput *o, gboolean ok, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!ok)
        g_cancellable_cancel(o->cancel);
    if (o->base && !g_output_stream_close(o->base, o->cancel, ok ? &local : NULL) && ok) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "%s", local->message);
        ok = FALSE;
    }
    g_clear_object(&o->base);
    g_clear_object(&o->cancel);
    return ok;
}

void
cli_progress_show(guint64 bytes, guint64 lines, gpointer user_data)
{
    g_autofree char *b = cli_format_si((double)bytes);
    g_autofree char *l = cli_format_si((double)lines);

    g_printerr("\r%s: %sB, %s lines\033[K", (const char *)user_data, b, l);
}

void
cli_progress_end(gboolean shown)
{
    if (shown)
        g_printerr("\r\033[K");
}

/* ---- export ----------------------------------------------------------- */

static gboolean
export_chunk(const char *chunk, gsize len, gpointer user_data, GError **error)
{
    g_autoptr(GError) local = NULL;

    if (!g_output_stream_write_all(user_data, chunk, len, NULL, NULL, &local)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_FAILED, "writing the export: %s",
                    local->message);
        return FALSE;
    }
    return TRUE;
}

static gboolean
export_online(CliContext *ctx, const CliRange *r, StoreFormat format, GOutputStream *out,
              guint64 *rows, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) reply = NULL;
    CliClient *c = cli_context_client(ctx, error);
    gint64 n = 0;

    if (!c)
        return FALSE;
    json_object_object_add(req, "format", json_object_new_string(store_format_to_string(format)));
    json_object_object_add(req, "since", json_object_new_string(r->since));
    if (r->until)
        json_object_object_add(req, "until", json_object_new_string(r->until));
    if (r->resolution_given)
        json_object_object_add(req, "resolution", json_object_new_string(cli_range_options.resolution));
    if (opt_vm)
        json_object_object_add(req, "target", json_object_new_string(opt_vm));
    if (opt_iothread)
        json_object_object_add(req, "iothread", json_object_new_string(opt_iothread));
    if (opt_decisions)
        json_object_object_add(req, "decisions", json_object_new_boolean(TRUE));
    reply = cli_client_call(c, "export", req, export_chunk, out, error);
    if (!reply)
        return FALSE;
    qmp_json_get_int(reply, "rows", &n);
    *rows = (guint64)n;
    return TRUE;
}

static gboolean
export_offline(CliContext *ctx, const CliRange *r, StoreFormat format, GOutputStream *out,
               guint64 *rows, GError **error)
{
    g_autoptr(CliDb) db = cli_context_db_open(ctx, error);
    g_autofree char *target = NULL;
    StoreFilter f;
    CliRange raw = *r;

    if (!db || !cli_db_target_check(ctx, db, opt_vm, &target, error))
        return FALSE;
    /* Without --resolution an export is of what was recorded: raw rows. */
    if (!r->resolution_given)
        raw.resolution = STORE_RES_RAW;
    cli_store_filter(&f, &raw, target, opt_iothread);
    if (!store_export(cli_db_store(db), &f, opt_decisions ? STORE_EXPORT_DECISIONS : STORE_EXPORT_SAMPLES,
                      format, out, NULL, error))
        return FALSE;
    *rows = cli_count_stream_get_lines(CLI_COUNT_STREAM(out));
    /* The CSV header is a line but not a row. */
    if (format == STORE_FORMAT_CSV && *rows > 0)
        (*rows)--;
    return TRUE;
}

gboolean
cli_cmd_export(CliContext *ctx, char **args, guint n, GError **error)
{
    StoreFormat format = store_format_from_string(opt_format ? opt_format : "csv");
    CliOutput o = { 0 };
    g_autoptr(GOutputStream) counted = NULL;
    guint64 rows = 0;
    gboolean ok;
    CliRange r;

    if (format == STORE_FORMAT_INVALID) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "export: --format %s: expected csv or "
                    "jsonl", opt_format);
        return FALSE;
    }
    if (!cli_range_parse(ctx, "30d", &r, error) || !cli_output_open(&o, opt_output, error))
        return FALSE;
    counted = cli_count_stream_new(o.base, o.progress ? cli_progress_show : NULL, "export", 250);
    ok = ctx->db_path ? export_offline(ctx, &r, format, counted, &rows, error)
                      : export_online(ctx, &r, format, counted, &rows, error);
    cli_progress_end(o.progress);
    ok = cli_output_close(&o, ok, error);
    if (!ok)
        return FALSE;
    if (opt_output && !g_str_equal(opt_output, "-")) {
        guint64 bytes = cli_count_stream_get_bytes(CLI_COUNT_STREAM(counted));

        if (ctx->json) {
            g_autoptr(json_object) s = json_object_new_object();

            json_object_object_add(s, "path", json_object_new_string(opt_output));
            json_object_object_add(s, "rows", json_object_new_int64((gint64)rows));
            json_object_object_add(s, "bytes", json_object_new_int64((gint64)bytes));
            cli_print_json(s);
        } else {
            printf("wrote %" G_GUINT64_FORMAT " rows (%" G_GUINT64_FORMAT " bytes) to %s\n",
                   rows, bytes, cli_text(opt_output));
        }
    }
    return TRUE;
}
