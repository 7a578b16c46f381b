/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-explain: explain, the policy's reasoning for each iothread of a
 * VM as the daemon gives it.
 */
#include <math.h>
#include <stdio.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "cli-reply.h"
#include "qmp-json.h"

/* A rendered table, each line indented under its heading. */
static void
print_indented(const char *text, const char *pad)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

    for (guint i = 0; lines[i]; i++)
        if (*lines[i])
            printf("%s%s\n", pad, lines[i]);
}

static char *
triple_text(json_object *t)
{
    g_autofree char *max = cli_reply_int_text(t, "poll-max-ns");
    g_autofree char *grow = cli_reply_int_text(t, "poll-grow");
    g_autofree char *shrink = cli_reply_int_text(t, "poll-shrink");

    return t ? g_strdup_printf("%s/%s/%s", max, grow, shrink) : g_strdup("-");
}

/* "64.0%", "3.5 s", "0.40 cores"; "-" when not measured. */
static char *
guard_figure(json_object *g, const char *key)
{
    const char *unit = cli_reply_str(g, "unit");
    double v = cli_reply_number(g, key);

    if (isnan(v))
        return g_strdup("-");
    if (g_str_equal(unit, "%"))
        return g_strdup_printf("%.1f%%", v);
    if (g_str_equal(unit, "cores"))
        return g_strdup_printf("%.2f cores", v);
    return g_strdup_printf("%.1f %s", v, unit);
}

static void
print_explain_metrics(CliContext *ctx, json_object *x)
{
    json_object *m = cli_reply_member(x, "metrics");
    g_autofree char *iops = NULL, *lat = NULL, *qd = NULL, *cpu = NULL, *bpo = NULL;
    g_autofree char *rd = NULL, *age = NULL;

    if (!m) {
        printf("  last tick     no measurements yet\n");
        return;
    }
    iops = cli_reply_num_text(m, "iops", -1);
    lat = cli_reply_num_text(m, "lat_us", 1);
    qd = cli_reply_num_text(m, "queue_depth", 2);
    cpu = cli_reply_num_text(m, "cpu_pct", 1);
    bpo = cli_reply_num_text(m, "blocks_per_op", 2);
    rd = cli_reply_num_text(m, "run_delay_pct", 1);
    age = cli_format_duration_ms((gint64)(cli_reply_number(x, "metrics_age_s") * 1000));
    printf("  last tick     %s ago: %s IOPS, latency %s us, queue depth %s, CPU %s%%, "
           "blocks/op %s, run delay %s%%\n", age, iops, lat, qd, cpu, bpo, rd);
}

static void
print_explain_candidates(json_object *x)
{
    json_object *cands = cli_reply_member(x, "candidates");
    g_autoptr(CliTable) t = NULL;
    g_autofree char *table = NULL;
    json_object *b = cli_reply_member(x, "benefit");

    if (!cli_reply_array_len(cands)) {
        printf("  candidates    none measured\n");
    } else {
        t = cli_table_new("TRIPLE", "ROLE", ">TICKS", ">SCORE", ">IOPS", ">CPU%", ">AGE", NULL);
        for (gsize i = 0; i < cli_reply_array_len(cands); i++) {
            json_object *c = json_object_array_get_idx(cands, i);
            g_autofree char *tr = triple_text(cli_reply_member(c, "triple"));
            g_autofree char *ticks = cli_reply_int_text(c, "ticks");
            g_autofree char *score = cli_reply_num_text(c, "score", 4);
            g_autofree char *iops = cli_reply_num_text(c, "iops", -1);
            g_autofree char *cpu = cli_reply_num_text(c, "cpu_pct", 1);
            g_autofree char *age = isnan(cli_reply_number(c, "age_s")) ? g_strdup("-") :
                cli_format_duration_ms((gint64)(cli_reply_number(c, "age_s") * 1000));
            gboolean chosen = json_object_get_boolean(cli_reply_member(c, "chosen"));

            cli_table_row(t);
            cli_table_cellf(t, "%s%s", tr, chosen ? " *" : "");
            cli_table_cell(t, cli_reply_str(c, "role"));
            cli_table_cell(t, ticks);
            cli_table_cell(t, score);
            cli_table_cell(t, iops);
            cli_table_cell(t, cpu);
            cli_table_cell(t, age);
        }
        table = cli_table_render(t);
        printf("  candidates    (* chosen; score in natural-log units, 0.01 is about 1%%)\n");
        print_indented(table, "    ");
    }
    if (b) {
        g_autofree char *gain = cli_reply_num_text(b, "gain", 3);
        g_autofree char *cores = cli_reply_num_text(b, "poll_cores", 2);

        printf("  polling buys  %s in score for %s cores\n", gain, cores);
    }
}

/* "memory        remembered: workload W, ...; 3 workloads remembered" */
static void
print_explain_memory(json_object *x)
{
    gint64 n = 0;

    qmp_json_get_int(x, "memory_entries", &n);
    if (!cli_reply_member(x, "memory") && n <= 0)
        return;
    printf("  memory        %s%s%" G_GINT64_FORMAT " workload%s remembered\n",
           cli_reply_member(x, "memory") ? cli_reply_str(x, "memory") : "", cli_reply_member(x, "memory") ? "; " : "",
           n, n == 1 ? "" : "s");
}

static void
print_explain_guards(json_object *x)
{
    json_object *guards = cli_reply_member(x, "guards");
    g_autoptr(CliTable) t = cli_table_new("GUARD", "HOLDS", ">VALUE", ">LIMIT", "DETAIL", NULL);
    g_autofree char *table = NULL;

    for (gsize i = 0; i < cli_reply_array_len(guards); i++) {
        json_object *g = json_object_array_get_idx(guards, i);
        g_autofree char *value = guard_figure(g, "value");
        g_autofree char *limit = guard_figure(g, "limit");

        cli_table_row(t);
        cli_table_cell(t, cli_reply_str(g, "guard"));
        cli_table_cell(t, json_object_get_boolean(cli_reply_member(g, "holds")) ? "HOLDS" : "no");
        cli_table_cell(t, value);
        cli_table_cell(t, limit);
        cli_table_cell(t, cli_reply_str(g, "detail"));
    }
    table = cli_table_render(t);
    printf("  guards\n");
    print_indented(table, "    ");
}

static void
print_explain(CliContext *ctx, json_object *x)
{
    json_object *src = cli_reply_member(x, "policy_source");
    g_autofree char *triple = triple_text(cli_reply_member(x, "triple"));
    g_autofree char *written = cli_reply_age_text(ctx, x, "last_write_ms");
    json_object *holding = cli_reply_member(x, "holding");
    gint64 next;

    printf("%s/%s \302\267 policy %s (%s: %s) \302\267 mode %s\n",
           cli_text(qmp_json_get_string(x, "display_name")) ?: cli_reply_str(x, "target"),
           cli_reply_str(x, "iothread"), cli_reply_str(x, "policy"), cli_reply_str(src, "kind"), cli_reply_str(src, "detail"),
           cli_reply_str(x, "mode"));
    if (qmp_json_get_string(x, "display_name"))
        printf("  target        %s\n", cli_reply_str(x, "target"));
    printf("  now           %s \302\267 %s \302\267 last write %s\n", triple, cli_reply_str(x, "phase"),
           g_str_equal(written, "-") ? "never" : written);
    if (cli_reply_member(x, "override")) {
        g_autofree char *text = cli_reply_override_text(ctx, cli_reply_member(x, "override"));

        printf("  pinned by     %s\n", text);
    }
    print_explain_metrics(ctx, x);
    print_explain_candidates(x);
    print_explain_memory(x);
    if (cli_reply_array_len(holding)) {
        GString *h = g_string_new(NULL);

        for (gsize i = 0; i < cli_reply_array_len(holding); i++)
            g_string_append_printf(h, "%s%s", i ? ", " : "",
                                   cli_text(json_object_get_string(
                                       json_object_array_get_idx(holding, i))));
        printf("  held back by  %s\n", h->str);
        g_string_free(h, TRUE);
    } else {
        printf("  held back by  nothing\n");
    }
    print_explain_guards(x);
    if (qmp_json_get_int(x, "next_look_ms", &next)) {
        g_autofree char *in = cli_format_duration_left_ms(MAX(next - ctx->now_ms, 0));

        printf("  next look     in %s: %s\n", in, cli_reply_str(x, "next_look"));
    } else {
        printf("  next look     %s\n", cli_reply_str(x, "next_look"));
    }
}

gboolean
cli_cmd_explain(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    json_object *its;

    if (!cli_target_add(req, args[0], error))
        return FALSE;
    if (!(r = cli_context_call(ctx, "explain", req, error)))
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    its = cli_reply_member(r, "iothreads");
    if (!cli_reply_array_len(its))
        printf("%s (%s): no iothreads\n", cli_text(qmp_json_get_string(r, "display_name")) ?:
               cli_reply_str(r, "target"), cli_reply_str(r, "state"));
    for (gsize i = 0; i < cli_reply_array_len(its); i++) {
        if (i)
            printf("\n");
        print_explain(ctx, json_object_array_get_idx(its, i));
    }
    return TRUE;
}
