/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-view: the read-only daemon commands: status, list, show,
 * metrics, version (explain: cli-cmd-explain.c).
 */
#include <math.h>
#include <stdio.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "cli-reply.h"
#include "metric-table.h"
#include "pt-config.h"
#include "qmp-json.h"

static gint opt_show_ticks;

const GOptionEntry cli_show_entries[] = {
    { "ticks", 'n', 0, G_OPTION_ARG_INT, &opt_show_ticks,
      "Ticks of recent history (default 60, at most 120)", "N" },
    { NULL },
};

/* How a target of @targets (a status or list reply's) is shown: the name it
 * goes by ("display_name": QEMU's -name), unless another target goes by it
 * too; else its identity ("name": a QMP target's socket path). */
static const char *
vm_label(json_object *targets, json_object *tg)
{
    const char *shown = qmp_json_get_string(tg, "display_name");

    for (gsize i = 0; shown && i < cli_reply_array_len(targets); i++) {
        json_object *o = json_object_array_get_idx(targets, i);

        if (o != tg && !g_strcmp0(qmp_json_get_string(o, "display_name"), shown))
            shown = NULL;
    }
    return shown ? shown : cli_reply_str(tg, "name");
}

/* A row of @ids for @tg when it is shown by another name than its identity. */
static void
vm_identity_row(CliTable *ids, json_object *targets, json_object *tg)
{
    const char *shown = vm_label(targets, tg);

    if (g_str_equal(shown, cli_reply_str(tg, "name")))
        return;
    cli_table_row(ids);
    cli_table_cell(ids, shown);
    cli_table_cell(ids, cli_reply_str(tg, "name"));
}

static char *
triple_change(json_object *decision)
{
    g_autofree char *old = cli_reply_int_text(cli_reply_member(decision, "old"), "poll-max-ns");
    g_autofree char *new = cli_reply_int_text(cli_reply_member(decision, "new"), "poll-max-ns");

    return g_strdup_printf("%s \342\206\222 %s", old, new);
}

/* The policy column: the override wins while it lasts. */
static char *
policy_text(CliContext *ctx, json_object *it)
{
    json_object *ov = cli_reply_member(it, "override");
    json_object *held = cli_reply_member(it, "external_hold");
    gint64 expires;

    if (!ov && held && qmp_json_get_int(held, "until_ms", &expires)) {
        g_autofree char *left = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        return g_strdup_printf("held: external write (%s left)", left);
    }
    if (!ov)
        return g_strdup(cli_reply_str(it, "policy"));
    if (qmp_json_get_int(ov, "expires_ms", &expires)) {
        g_autofree char *left = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        return g_strdup_printf("override (%s left)", left);
    }
    return g_strdup("override");
}

static void
print_status_header(CliContext *ctx, json_object *st)
{
    json_object *store = cli_reply_member(st, "store"), *host = cli_reply_member(st, "host");
    json_object *incident = cli_reply_member(store, "incident");
    g_autofree char *ticks = cli_reply_int_text(st, "ticks");
    g_autofree char *interval = cli_reply_int_text(st, "interval_ms");
    g_autofree char *overruns = cli_reply_int_text(st, "overruns");
    g_autofree char *last = cli_reply_num_text(st, "last_tick_ms", 1);
    g_autofree char *p99_ms = cli_reply_num_text(st, "tick_p99_ms", 1);
    /* A daemon older than the field leaves it out of the line. */
    g_autofree char *p99 = cli_reply_member(st, "tick_p99_ms") ?
        g_strdup_printf(" (p99 %s ms)", p99_ms) : g_strdup("");
    g_autofree char *pending = cli_reply_int_text(store, "pending");
    g_autofree char *dropped = cli_reply_int_text(store, "dropped");
    g_autofree char *busy_pct = cli_reply_num_text(host, "cpu_busy_pct", 1);
    /* 100% is every CPU busy; the count says so. */
    g_autofree char *cpus = cli_reply_int_text(host, "cpus");
    g_autofree char *busy = cli_reply_member(host, "cpus") ?
        g_strdup_printf("%s%% of all %s CPUs", busy_pct, cpus) :
        g_strdup_printf("%s%%", busy_pct);
    g_autofree char *psi = cli_reply_num_text(host, "psi_some_avg10", 2);
    g_autofree char *polling = cli_reply_num_text(host, "polling_cores", 2);
    g_autofree char *budget = cli_reply_num_text(host, "budget_cores", 2);
    double budget_cores = cli_reply_number(host, "budget_cores");
    g_autofree char *up = NULL;
    gint64 uptime_s = 0;

    qmp_json_get_int(st, "uptime_s", &uptime_s);
    up = cli_format_duration_ms(uptime_s * 1000);
    printf("mode    %s \302\267 up %s \302\267 %s ticks every %s ms \302\267 last tick %s ms%s "
           "\302\267 %s overruns\n", cli_reply_str(st, "mode"), up, ticks, interval, last, p99, overruns);
    printf("store   %s: %s \302\267 %s pending \302\267 %s dropped\n", cli_reply_str(store, "path"),
           cli_reply_str(store, "health"), pending, dropped);
    /* What happened to the file last (deleted, its WAL gone, corrupt). */
    if (incident) {
        g_autofree char *age = cli_reply_age_text(ctx, incident, "at_ms");

        printf("        %s: %s\n", age, cli_reply_str(incident, "what"));
    }
    /* A budget of 0 means none is set (POLICY.md), not zero cores. */
    if (budget_cores > 0)
        printf("host    CPU busy %s \302\267 PSI cpu some %s \302\267 polling %s of %s cores "
               "budget\n", busy, psi, polling, budget);
    else
        printf("host    CPU busy %s \302\267 PSI cpu some %s \302\267 polling %s cores "
               "(no budget set)\n", busy, psi, polling);
}

gboolean
cli_cmd_status(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) st = cli_context_call(ctx, "status", NULL, error);
    g_autoptr(CliTable) t = NULL;
    g_autoptr(CliTable) d = NULL;
    g_autoptr(CliTable) x = NULL;
    g_autoptr(CliTable) why = NULL;
    g_autoptr(CliTable) ids = NULL;
    g_autofree char *table = NULL;
    json_object *targets;

    if (!st)
        return FALSE;
    if (ctx->json) {
        cli_print_json(st);
        return TRUE;
    }
    print_status_header(ctx, st);
    targets = cli_reply_member(st, "targets");
    t = cli_table_new("VM/IOTHREAD", "STATE", ">POLL-MAX-NS", ">GROW", ">SHRINK", "POLICY",
                      NULL);
    /* Then the rates the metric table gives a column, right-aligned. */
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        if (metric_rate_def(r)->cli_header) {
            g_autofree char *col = g_strconcat(">", metric_rate_def(r)->cli_header, NULL);

            cli_table_add_column(t, col);
        }
    }
    d = cli_table_new("VM/IOTHREAD", "WHEN", "OUTCOME", "POLL-MAX-NS", "REASON", NULL);
    x = cli_table_new("VM", "QEMU", "EXITS FROM", "WHY", NULL);
    why = cli_table_new("VM", "STATE", "REASON", NULL);
    ids = cli_table_new("VM", "TARGET", NULL);
    for (gsize i = 0; i < cli_reply_array_len(targets); i++) {
        json_object *tg = json_object_array_get_idx(targets, i);
        json_object *its = cli_reply_member(tg, "iothreads");
        const char *src = qmp_json_get_string(tg, "exits_source");
        const char *vm = vm_label(targets, tg);
        gint64 late;

        vm_identity_row(ids, targets, tg);

        if (src) {
            cli_table_row(x);
            cli_table_cell(x, vm);
            cli_table_cell(x, cli_reply_str(tg, "qemu_version"));
            cli_table_cell(x, g_str_equal(src, "none") ? "not shown" : src);
            cli_table_cell(x, cli_reply_str(tg, "exits_reason"));
        }

        if (cli_reply_member(tg, "state_reason")) {
            cli_table_row(why);
            cli_table_cell(why, vm);
            cli_table_cell(why, cli_reply_str(tg, "state"));
            cli_table_cell(why, cli_reply_str(tg, "state_reason"));
        }
        if (qmp_json_get_int(tg, "late_ticks", &late) && late > 0) {
            g_autofree char *text = g_strdup_printf("no sample for the last %" G_GINT64_FORMAT
                                                    " tick%s: its answers come after the "
                                                    "tick's deadline; not tuned meanwhile",
                                                    late, late == 1 ? "" : "s");

            cli_table_row(why);
            cli_table_cell(why, vm);
            cli_table_cell(why, "late");
            cli_table_cell(why, text);
        }

        if (cli_reply_array_len(its) == 0) {
            cli_table_row(t);
            cli_table_cell(t, vm);
            cli_table_cell(t, cli_reply_str(tg, "state"));
            continue;
        }
        for (gsize k = 0; k < cli_reply_array_len(its); k++) {
            json_object *it = json_object_array_get_idx(its, k);
            json_object *tr = cli_reply_member(it, "triple"), *m = cli_reply_member(it, "metrics");
            json_object *last = cli_reply_member(it, "last_decision");
            g_autofree char *name = g_strdup_printf("%s/%s", vm, cli_reply_str(it, "id"));
            g_autofree char *pmax = cli_reply_int_text(tr, "poll-max-ns");
            g_autofree char *grow = cli_reply_int_text(tr, "poll-grow");
            g_autofree char *shrink = cli_reply_int_text(tr, "poll-shrink");
            g_autofree char *policy = policy_text(ctx, it);

            cli_table_row(t);
            cli_table_cell(t, name);
            cli_table_cell(t, cli_reply_str(tg, "state"));
            cli_table_cell(t, pmax);
            cli_table_cell(t, grow);
            cli_table_cell(t, shrink);
            cli_table_cell(t, policy);
            for (int r = 0; r < METRIC_RATE_MAX; r++) {
                const MetricRateDef *rd = metric_rate_def(r);

                if (rd->cli_header) {
                    g_autofree char *cell = cli_reply_num_text(m, rd->json_key, rd->cli_decimals);

                    cli_table_cell(t, cell);
                }
            }
            if (last) {
                g_autofree char *age = cli_reply_age_text(ctx, last, "ts_ms");
                g_autofree char *change = triple_change(last);

                cli_table_row(d);
                cli_table_cell(d, name);
                cli_table_cell(d, age);
                cli_table_cell(d, cli_reply_str(last, "outcome"));
                cli_table_cell(d, change);
                cli_table_cell(d, cli_reply_str(last, "reason"));
            }
        }
    }
    if (cli_table_n_rows(t) == 0) {
        printf("\nNo targets attached.\n");
        return TRUE;
    }
    table = cli_table_render(t);
    printf("\n%s", table);
    if (cli_table_n_rows(d) > 0) {
        g_autofree char *dt = cli_table_render(d);

        printf("\nLast decisions\n%s", dt);
    }
    if (cli_table_n_rows(x) > 0) {
        g_autofree char *xt = cli_table_render(x);

        printf("\nExit figures\n%s", xt);
    }
    if (cli_table_n_rows(why) > 0) {
        g_autofree char *wt = cli_table_render(why);

        printf("\nNot healthy\n%s", wt);
    }
    if (cli_table_n_rows(ids) > 0) {
        g_autofree char *it = cli_table_render(ids);

        printf("\nTargets (a QMP socket's path is its identity)\n%s", it);
    }
    return TRUE;
}

gboolean
cli_cmd_list(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) r = cli_context_call(ctx, "list", NULL, error);
    g_autoptr(CliTable) t = NULL;
    g_autofree char *out = NULL;
    json_object *targets;

    if (!r)
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    targets = cli_reply_member(r, "targets");
    t = cli_table_new("VM", "TARGET", "KIND", "STATE", ">PID", "IOTHREADS", NULL);
    for (gsize i = 0; i < cli_reply_array_len(targets); i++) {
        json_object *tg = json_object_array_get_idx(targets, i);
        json_object *its = cli_reply_member(tg, "iothreads");
        g_autoptr(GString) names = g_string_new(NULL);
        g_autofree char *pid = cli_reply_int_text(tg, "pid");

        for (gsize k = 0; k < cli_reply_array_len(its); k++) {
            json_object *id = json_object_array_get_idx(its, k);

            g_string_append_printf(names, "%s%s", k ? "," : "",
                                   qmp_json_string(id) ? qmp_json_string(id) : "?");
        }
        cli_table_row(t);
        cli_table_cell(t, vm_label(targets, tg));
        cli_table_cell(t, cli_reply_str(tg, "name"));
        cli_table_cell(t, cli_reply_str(tg, "kind"));
        cli_table_cell(t, cli_reply_str(tg, "state"));
        cli_table_cell(t, pid);
        cli_table_cell(t, names->len ? names->str : "-");
    }
    out = cli_table_render(t);
    fputs(out, stdout);
    return TRUE;
}

/* The QEMU release and the exit source with its reason; a VM without
 * exit figures says so instead of showing zeros. */
static void
print_target_qemu(json_object *r)
{
    const char *version = cli_text(qmp_json_get_string(r, "qemu_version"));
    const char *src = cli_text(qmp_json_get_string(r, "exits_source"));
    const char *why = cli_text(qmp_json_get_string(r, "exits_reason"));

    if (!src)
        return;
    printf("  QEMU %s \302\267 exits: %s%s%s%s\n", version ? version : "?",
           g_str_equal(src, "none") ? "not shown" : src,
           why ? " (" : "", why ? why : "", why ? ")" : "");
}

static void
print_history(json_object *history)
{
    static const struct {
        const char *label, *key;
    } metrics[] = { { "IOPS", "iops" }, { "lat \302\265s", "lat_us" }, { "CPU %", "cpu_pct" } };
    gsize n = cli_reply_array_len(history);
    g_autofree double *v = g_new(double, MAX(n, 1));

    if (n == 0)
        return;
    printf("  last %zu ticks:\n", n);
    for (gsize m = 0; m < G_N_ELEMENTS(metrics); m++) {
        g_autofree char *line = NULL;

        for (gsize i = 0; i < n; i++)
            v[i] = cli_reply_number(json_object_array_get_idx(history, i), metrics[m].key);
        line = cli_sparkline_summary(metrics[m].label, 7, v, n, 60);
        printf("    %s\n", line);
    }
}

static void
print_decisions(CliContext *ctx, json_object *decisions)
{
    g_autoptr(CliTable) t = cli_table_new("WHEN", "OUTCOME", "POLL-MAX-NS", "POLICY", "CAUSE",
                                          "REASON", NULL);
    g_autofree char *out = NULL;
    g_auto(GStrv) lines = NULL;

    if (cli_reply_array_len(decisions) == 0) {
        printf("  no decisions yet\n");
        return;
    }
    /* Newest first: that is what an operator looks for. */
    for (gsize i = cli_reply_array_len(decisions); i-- > 0;) {
        json_object *d = json_object_array_get_idx(decisions, i);
        g_autofree char *age = cli_reply_age_text(ctx, d, "ts_ms");
        g_autofree char *change = triple_change(d);

        cli_table_row(t);
        cli_table_cell(t, age);
        cli_table_cell(t, cli_reply_str(d, "outcome"));
        cli_table_cell(t, change);
        cli_table_cell(t, cli_reply_str(d, "policy"));
        cli_table_cell(t, cli_reply_str(d, "cause"));
        cli_table_cell(t, cli_reply_str(d, "reason"));
    }
    out = cli_table_render(t);
    lines = g_strsplit(out, "\n", -1);
    printf("  decisions:\n");
    for (char **p = lines; *p; p++)
        if (**p)
            printf("    %s\n", *p);
}

static void
print_iothread(CliContext *ctx, json_object *it)
{
    json_object *tr = cli_reply_member(it, "triple"), *m = cli_reply_member(it, "metrics");
    g_autofree char *tid = cli_reply_int_text(it, "tid");
    g_autofree char *pmax = cli_reply_int_text(tr, "poll-max-ns");
    g_autofree char *grow = cli_reply_int_text(tr, "poll-grow");
    g_autofree char *shrink = cli_reply_int_text(tr, "poll-shrink");
    g_autofree char *policy = policy_text(ctx, it);

    printf("\n%s (tid %s): poll-max-ns %s, poll-grow %s, poll-shrink %s \302\267 policy %s\n",
           cli_reply_str(it, "id"), tid, pmax, grow, shrink, policy);
    if (cli_reply_member(it, "override")) {
        json_object *ov = cli_reply_member(it, "override");
        g_autofree char *text = cli_reply_override_text(ctx, ov);
        g_autofree char *o_max = cli_reply_int_text(ov, "poll-max-ns");
        g_autofree char *o_grow = cli_reply_member(ov, "poll-grow") ? cli_reply_int_text(ov, "poll-grow")
                                                          : g_strdup("its own");
        g_autofree char *o_shrink = cli_reply_member(ov, "poll-shrink") ? cli_reply_int_text(ov, "poll-shrink")
                                                              : g_strdup("its own");

        printf("  %s\n    holds poll-max-ns %s, poll-grow %s, poll-shrink %s\n", text, o_max,
               o_grow, o_shrink);
    }
    if (m) {
        g_autofree char *iops = cli_reply_num_text(m, "iops", -1);
        g_autofree char *lat = cli_reply_num_text(m, "lat_us", 1);
        g_autofree char *cpu = cli_reply_num_text(m, "cpu_pct", 1);
        g_autofree char *bpo = cli_reply_num_text(m, "blocks_per_op", 2);
        g_autofree char *epo = cli_reply_num_text(m, "exits_per_op", 2);
        g_autofree char *qd = cli_reply_num_text(m, "queue_depth", 2);

        printf("  now: %s IOPS \302\267 %s \302\265s \302\267 queue depth %s \302\267 CPU %s%% "
               "\302\267 %s blocks/op \302\267 %s exits/op\n", iops, lat, qd, cpu, bpo, epo);
    }
    print_history(cli_reply_member(it, "history"));
    print_decisions(ctx, cli_reply_member(it, "decisions"));
}

gboolean
cli_cmd_show(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *pid = NULL;
    json_object *its;

    if (!cli_target_add(req, args[0], error))
        return FALSE;
    if (opt_show_ticks < 0 || opt_show_ticks > 120) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE,
                    "show: --ticks %d: expected 1 to 120 (older ticks: polltunectl history)",
                    opt_show_ticks);
        return FALSE;
    }
    if (opt_show_ticks > 0)
        json_object_object_add(req, "ticks", json_object_new_int(opt_show_ticks));
    if (!(r = cli_context_call(ctx, "show", req, error)))
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    pid = cli_reply_int_text(r, "pid");
    if (qmp_json_get_string(r, "display_name"))
        printf("%s [%s] (%s, %s, pid %s) \302\267 policy %s\n", cli_reply_str(r, "display_name"),
               cli_reply_str(r, "name"), cli_reply_str(r, "kind"), cli_reply_str(r, "state"), pid, cli_reply_str(r, "policy"));
    else
        printf("%s (%s, %s, pid %s) \302\267 policy %s\n", cli_reply_str(r, "name"), cli_reply_str(r, "kind"),
               cli_reply_str(r, "state"), pid, cli_reply_str(r, "policy"));
    print_target_qemu(r);
    its = cli_reply_member(r, "iothreads");
    for (gsize i = 0; i < cli_reply_array_len(its); i++)
        print_iothread(ctx, json_object_array_get_idx(its, i));
    return TRUE;
}

gboolean
cli_cmd_metrics(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) r = cli_context_call(ctx, "metrics", NULL, error);
    const char *text;

    if (!r)
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    if (!(text = qmp_json_get_string(r, "text"))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_PROTOCOL, "metrics: the reply has no text");
        return FALSE;
    }
    /* A label value holds a VM's name or socket path as given, and the
     * exposition escapes only its newlines, backslashes and quotes: its
     * lines are escaped like every other peer's text, on a pipe too (what
     * grep passes on reaches a terminal all the same).  A line without
     * control characters is unchanged; --json has the text exactly. */
    {
        g_auto(GStrv) lines = g_strsplit(text, "\n", -1);

        for (guint i = 0; lines[i]; i++)
            printf("%s%s", cli_text(lines[i]), lines[i + 1] ? "\n" : "");
    }
    return TRUE;
}

gboolean
cli_cmd_version(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autoptr(json_object) r = cli_context_call(ctx, "version", NULL, &local);

    /* The client's own version is known without a daemon; say it first,
     * and the daemon's when it answers. */
    if (!r) {
        r = json_object_new_object();
        json_object_object_add(r, "version", NULL);
        json_object_object_add(r, "error", json_object_new_string(local->message));
    }
    json_object_object_add(r, "client", json_object_new_string(PT_VERSION));
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    printf("polltunectl %s\n", PT_VERSION);
    if (local)
        printf("polltuned: not reachable: %s\n", cli_text(local->message));
    else
        printf("polltuned %s (control protocol %s)\n", cli_reply_str(r, "version"),
               json_object_to_json_string(cli_reply_member(r, "protocol")));
    return TRUE;
}
