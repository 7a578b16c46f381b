/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-view: the read-only daemon commands: status, list, show,
 * explain, metrics, version.
 */
#include <math.h>
#include <stdio.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "metric-table.h"
#include "pt-config.h"
#include "qmp-json.h"

static gint opt_show_ticks;

const GOptionEntry cli_show_entries[] = {
    { "ticks", 'n', 0, G_OPTION_ARG_INT, &opt_show_ticks,
      "Ticks of recent history (default 60, at most 120)", "N" },
    { NULL },
};

static json_object *
member(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

static double
number(json_object *o, const char *key)
{
    json_object *v = member(o, key);

    if (!v || !(json_object_is_type(v, json_type_double) ||
                json_object_is_type(v, json_type_int)))
        return NAN;
    return json_object_get_double(v);
}

static char *
num_text(json_object *o, const char *key, int decimals)
{
    double v = number(o, key);

    return decimals < 0 ? cli_format_si(v) : cli_format_fixed(v, decimals);
}

static char *
int_text(json_object *o, const char *key)
{
    gint64 v;

    return qmp_json_get_int(o, key, &v) ? g_strdup_printf("%" G_GINT64_FORMAT, v)
                                         : g_strdup("-");
}

/* A string of the reply, escaped for the terminal. */
static const char *
str(json_object *o, const char *key)
{
    const char *s = cli_text(qmp_json_get_string(o, key));

    return s ? s : "-";
}

static gsize
array_len(json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* How a target of @targets (a status or list reply's) is shown: the name it
 * goes by ("display_name": QEMU's -name), unless another target goes by it
 * too; else its identity ("name": a QMP target's socket path). */
static const char *
vm_label(json_object *targets, json_object *tg)
{
    const char *shown = qmp_json_get_string(tg, "display_name");

    for (gsize i = 0; shown && i < array_len(targets); i++) {
        json_object *o = json_object_array_get_idx(targets, i);

        if (o != tg && !g_strcmp0(qmp_json_get_string(o, "display_name"), shown))
            shown = NULL;
    }
    return shown ? shown : str(tg, "name");
}

/* A row of @ids for @tg when it is shown by another name than its identity. */
static void
vm_identity_row(CliTable *ids, json_object *targets, json_object *tg)
{
    const char *shown = vm_label(targets, tg);

    if (g_str_equal(shown, str(tg, "name")))
        return;
    cli_table_row(ids);
    cli_table_cell(ids, shown);
    cli_table_cell(ids, str(tg, "name"));
}

static char *
age_text(CliContext *ctx, json_object *o, const char *key)
{
    gint64 ts;
    g_autofree char *d = NULL;

    if (!qmp_json_get_int(o, key, &ts))
        return g_strdup("-");
    d = cli_format_duration_ms(MAX(ctx->now_ms - ts, 0));
    return g_strdup_printf("%s ago", d);
}

static char *
triple_change(json_object *decision)
{
    g_autofree char *old = int_text(member(decision, "old"), "poll-max-ns");
    g_autofree char *new = int_text(member(decision, "new"), "poll-max-ns");

    return g_strdup_printf("%s \342\206\222 %s", old, new);
}

/* The policy column: the override wins while it lasts. */
static char *
policy_text(CliContext *ctx, json_object *it)
{
    json_object *ov = member(it, "override");
    json_object *held = member(it, "external_hold");
    gint64 expires;

    if (!ov && held && qmp_json_get_int(held, "until_ms", &expires)) {
        g_autofree char *left = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        return g_strdup_printf("held: external write (%s left)", left);
    }
    if (!ov)
        return g_strdup(str(it, "policy"));
    if (qmp_json_get_int(ov, "expires_ms", &expires)) {
        g_autofree char *left = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        return g_strdup_printf("override (%s left)", left);
    }
    return g_strdup("override");
}

/* "override 12 by uid 0, set 3m ago, 7m left: reason" (show, explain). */
static char *
override_text(CliContext *ctx, json_object *ov)
{
    g_autofree char *id = int_text(ov, "id");
    g_autofree char *age = age_text(ctx, ov, "set_ms");
    g_autofree char *left = NULL;
    const char *who = str(ov, "who");
    const char *reason = qmp_json_get_string(ov, "reason");
    gint64 expires;

    if (qmp_json_get_int(ov, "expires_ms", &expires)) {
        g_autofree char *l = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        left = g_strdup_printf("%s left", l);
    }
    return g_strdup_printf("override %s by %s, set %s, %s: %s", id, *who ? who : "?",
                           g_str_equal(age, "-") ? "at an unknown time" : age,
                           left ? left : "until cleared",
                           reason && *reason ? cli_text(reason) : "no reason given");
}

static void
print_status_header(CliContext *ctx, json_object *st)
{
    json_object *store = member(st, "store"), *host = member(st, "host");
    json_object *incident = member(store, "incident");
    g_autofree char *ticks = int_text(st, "ticks");
    g_autofree char *interval = int_text(st, "interval_ms");
    g_autofree char *overruns = int_text(st, "overruns");
    g_autofree char *last = num_text(st, "last_tick_ms", 1);
    g_autofree char *p99_ms = num_text(st, "tick_p99_ms", 1);
    /* A daemon older than the field leaves it out of the line. */
    g_autofree char *p99 = member(st, "tick_p99_ms") ?
        g_strdup_printf(" (p99 %s ms)", p99_ms) : g_strdup("");
    g_autofree char *pending = int_text(store, "pending");
    g_autofree char *dropped = int_text(store, "dropped");
    g_autofree char *busy_pct = num_text(host, "cpu_busy_pct", 1);
    /* 100% is every CPU busy; the count says so. */
    g_autofree char *cpus = int_text(host, "cpus");
    g_autofree char *busy = member(host, "cpus") ?
        g_strdup_printf("%s%% of all %s CPUs", busy_pct, cpus) :
        g_strdup_printf("%s%%", busy_pct);
    g_autofree char *psi = num_text(host, "psi_some_avg10", 2);
    g_autofree char *polling = num_text(host, "polling_cores", 2);
    g_autofree char *budget = num_text(host, "budget_cores", 2);
    double budget_cores = number(host, "budget_cores");
    g_autofree char *up = NULL;
    gint64 uptime_s = 0;

    qmp_json_get_int(st, "uptime_s", &uptime_s);
    up = cli_format_duration_ms(uptime_s * 1000);
    printf("mode    %s \302\267 up %s \302\267 %s ticks every %s ms \302\267 last tick %s ms%s "
           "\302\267 %s overruns\n", str(st, "mode"), up, ticks, interval, last, p99, overruns);
    printf("store   %s: %s \302\267 %s pending \302\267 %s dropped\n", str(store, "path"),
           str(store, "health"), pending, dropped);
    /* What happened to the file last (deleted, its WAL gone, corrupt). */
    if (incident) {
        g_autofree char *age = age_text(ctx, incident, "at_ms");

        printf("        %s: %s\n", age, str(incident, "what"));
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
    targets = member(st, "targets");
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
    for (gsize i = 0; i < array_len(targets); i++) {
        json_object *tg = json_object_array_get_idx(targets, i);
        json_object *its = member(tg, "iothreads");
        const char *src = qmp_json_get_string(tg, "exits_source");
        const char *vm = vm_label(targets, tg);
        gint64 late;

        vm_identity_row(ids, targets, tg);

        if (src) {
            cli_table_row(x);
            cli_table_cell(x, vm);
            cli_table_cell(x, str(tg, "qemu_version"));
            cli_table_cell(x, g_str_equal(src, "none") ? "not shown" : src);
            cli_table_cell(x, str(tg, "exits_reason"));
        }

        if (member(tg, "state_reason")) {
            cli_table_row(why);
            cli_table_cell(why, vm);
            cli_table_cell(why, str(tg, "state"));
            cli_table_cell(why, str(tg, "state_reason"));
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

        if (array_len(its) == 0) {
            cli_table_row(t);
            cli_table_cell(t, vm);
            cli_table_cell(t, str(tg, "state"));
            continue;
        }
        for (gsize k = 0; k < array_len(its); k++) {
            json_object *it = json_object_array_get_idx(its, k);
            json_object *tr = member(it, "triple"), *m = member(it, "metrics");
            json_object *last = member(it, "last_decision");
            g_autofree char *name = g_strdup_printf("%s/%s", vm, str(it, "id"));
            g_autofree char *pmax = int_text(tr, "poll-max-ns");
            g_autofree char *grow = int_text(tr, "poll-grow");
            g_autofree char *shrink = int_text(tr, "poll-shrink");
            g_autofree char *policy = policy_text(ctx, it);

            cli_table_row(t);
            cli_table_cell(t, name);
            cli_table_cell(t, str(tg, "state"));
            cli_table_cell(t, pmax);
            cli_table_cell(t, grow);
            cli_table_cell(t, shrink);
            cli_table_cell(t, policy);
            for (int r = 0; r < METRIC_RATE_MAX; r++) {
                const MetricRateDef *rd = metric_rate_def(r);

                if (rd->cli_header) {
                    g_autofree char *cell = num_text(m, rd->json_key, rd->cli_decimals);

                    cli_table_cell(t, cell);
                }
            }
            if (last) {
                g_autofree char *age = age_text(ctx, last, "ts_ms");
                g_autofree char *change = triple_change(last);

                cli_table_row(d);
                cli_table_cell(d, name);
                cli_table_cell(d, age);
                cli_table_cell(d, str(last, "outcome"));
                cli_table_cell(d, change);
                cli_table_cell(d, str(last, "reason"));
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
    targets = member(r, "targets");
    t = cli_table_new("VM", "TARGET", "KIND", "STATE", ">PID", "IOTHREADS", NULL);
    for (gsize i = 0; i < array_len(targets); i++) {
        json_object *tg = json_object_array_get_idx(targets, i);
        json_object *its = member(tg, "iothreads");
        g_autoptr(GString) names = g_string_new(NULL);
        g_autofree char *pid = int_text(tg, "pid");

        for (gsize k = 0; k < array_len(its); k++) {
            json_object *id = json_object_array_get_idx(its, k);

            g_string_append_printf(names, "%s%s", k ? "," : "",
                                   qmp_json_string(id) ? qmp_json_string(id) : "?");
        }
        cli_table_row(t);
        cli_table_cell(t, vm_label(targets, tg));
        cli_table_cell(t, str(tg, "name"));
        cli_table_cell(t, str(tg, "kind"));
        cli_table_cell(t, str(tg, "state"));
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
    gsize n = array_len(history);
    g_autofree double *v = g_new(double, MAX(n, 1));

    if (n == 0)
        return;
    printf("  last %zu ticks:\n", n);
    for (gsize m = 0; m < G_N_ELEMENTS(metrics); m++) {
        g_autofree char *line = NULL;

        for (gsize i = 0; i < n; i++)
            v[i] = number(json_object_array_get_idx(history, i), metrics[m].key);
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

    if (array_len(decisions) == 0) {
        printf("  no decisions yet\n");
        return;
    }
    /* Newest first: that is what an operator looks for. */
    for (gsize i = array_len(decisions); i-- > 0;) {
        json_object *d = json_object_array_get_idx(decisions, i);
        g_autofree char *age = age_text(ctx, d, "ts_ms");
        g_autofree char *change = triple_change(d);

        cli_table_row(t);
        cli_table_cell(t, age);
        cli_table_cell(t, str(d, "outcome"));
        cli_table_cell(t, change);
        cli_table_cell(t, str(d, "policy"));
        cli_table_cell(t, str(d, "cause"));
        cli_table_cell(t, str(d, "reason"));
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
    json_object *tr = member(it, "triple"), *m = member(it, "metrics");
    g_autofree char *tid = int_text(it, "tid");
    g_autofree char *pmax = int_text(tr, "poll-max-ns");
    g_autofree char *grow = int_text(tr, "poll-grow");
    g_autofree char *shrink = int_text(tr, "poll-shrink");
    g_autofree char *policy = policy_text(ctx, it);

    printf("\n%s (tid %s): poll-max-ns %s, poll-grow %s, poll-shrink %s \302\267 policy %s\n",
           str(it, "id"), tid, pmax, grow, shrink, policy);
    if (member(it, "override")) {
        json_object *ov = member(it, "override");
        g_autofree char *text = override_text(ctx, ov);
        g_autofree char *o_max = int_text(ov, "poll-max-ns");
        g_autofree char *o_grow = member(ov, "poll-grow") ? int_text(ov, "poll-grow")
                                                          : g_strdup("its own");
        g_autofree char *o_shrink = member(ov, "poll-shrink") ? int_text(ov, "poll-shrink")
                                                              : g_strdup("its own");

        printf("  %s\n    holds poll-max-ns %s, poll-grow %s, poll-shrink %s\n", text, o_max,
               o_grow, o_shrink);
    }
    if (m) {
        g_autofree char *iops = num_text(m, "iops", -1);
        g_autofree char *lat = num_text(m, "lat_us", 1);
        g_autofree char *cpu = num_text(m, "cpu_pct", 1);
        g_autofree char *bpo = num_text(m, "blocks_per_op", 2);
        g_autofree char *epo = num_text(m, "exits_per_op", 2);
        g_autofree char *qd = num_text(m, "queue_depth", 2);

        printf("  now: %s IOPS \302\267 %s \302\265s \302\267 queue depth %s \302\267 CPU %s%% "
               "\302\267 %s blocks/op \302\267 %s exits/op\n", iops, lat, qd, cpu, bpo, epo);
    }
    print_history(member(it, "history"));
    print_decisions(ctx, member(it, "decisions"));
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
    pid = int_text(r, "pid");
    if (qmp_json_get_string(r, "display_name"))
        printf("%s [%s] (%s, %s, pid %s) \302\267 policy %s\n", str(r, "display_name"),
               str(r, "name"), str(r, "kind"), str(r, "state"), pid, str(r, "policy"));
    else
        printf("%s (%s, %s, pid %s) \302\267 policy %s\n", str(r, "name"), str(r, "kind"),
               str(r, "state"), pid, str(r, "policy"));
    print_target_qemu(r);
    its = member(r, "iothreads");
    for (gsize i = 0; i < array_len(its); i++)
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
        printf("polltuned %s (control protocol %s)\n", str(r, "version"),
               json_object_to_json_string(member(r, "protocol")));
    return TRUE;
}

/* ---- explain ----------------------------------------------------------- */

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
    g_autofree char *max = int_text(t, "poll-max-ns");
    g_autofree char *grow = int_text(t, "poll-grow");
    g_autofree char *shrink = int_text(t, "poll-shrink");

    return t ? g_strdup_printf("%s/%s/%s", max, grow, shrink) : g_strdup("-");
}

/* "64.0%", "3.5 s", "0.40 cores"; "-" when not measured. */
static char *
guard_figure(json_object *g, const char *key)
{
    const char *unit = str(g, "unit");
    double v = number(g, key);

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
    json_object *m = member(x, "metrics");
    g_autofree char *iops = NULL, *lat = NULL, *qd = NULL, *cpu = NULL, *bpo = NULL;
    g_autofree char *rd = NULL, *age = NULL;

    if (!m) {
        printf("  last tick     no measurements yet\n");
        return;
    }
    iops = num_text(m, "iops", -1);
    lat = num_text(m, "lat_us", 1);
    qd = num_text(m, "queue_depth", 2);
    cpu = num_text(m, "cpu_pct", 1);
    bpo = num_text(m, "blocks_per_op", 2);
    rd = num_text(m, "run_delay_pct", 1);
    age = cli_format_duration_ms((gint64)(number(x, "metrics_age_s") * 1000));
    printf("  last tick     %s ago: %s IOPS, latency %s us, queue depth %s, CPU %s%%, "
           "blocks/op %s, run delay %s%%\n", age, iops, lat, qd, cpu, bpo, rd);
}

static void
print_explain_candidates(json_object *x)
{
    json_object *cands = member(x, "candidates");
    g_autoptr(CliTable) t = NULL;
    g_autofree char *table = NULL;
    json_object *b = member(x, "benefit");

    if (!array_len(cands)) {
        printf("  candidates    none measured\n");
    } else {
        t = cli_table_new("TRIPLE", "ROLE", ">TICKS", ">SCORE", ">IOPS", ">CPU%", ">AGE", NULL);
        for (gsize i = 0; i < array_len(cands); i++) {
            json_object *c = json_object_array_get_idx(cands, i);
            g_autofree char *tr = triple_text(member(c, "triple"));
            g_autofree char *ticks = int_text(c, "ticks");
            g_autofree char *score = num_text(c, "score", 4);
            g_autofree char *iops = num_text(c, "iops", -1);
            g_autofree char *cpu = num_text(c, "cpu_pct", 1);
            g_autofree char *age = isnan(number(c, "age_s")) ? g_strdup("-") :
                cli_format_duration_ms((gint64)(number(c, "age_s") * 1000));
            gboolean chosen = json_object_get_boolean(member(c, "chosen"));

            cli_table_row(t);
            cli_table_cellf(t, "%s%s", tr, chosen ? " *" : "");
            cli_table_cell(t, str(c, "role"));
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
        g_autofree char *gain = num_text(b, "gain", 3);
        g_autofree char *cores = num_text(b, "poll_cores", 2);

        printf("  polling buys  %s in score for %s cores\n", gain, cores);
    }
}

/* "memory        remembered: workload W, ...; 3 workloads remembered" */
static void
print_explain_memory(json_object *x)
{
    gint64 n = 0;

    qmp_json_get_int(x, "memory_entries", &n);
    if (!member(x, "memory") && n <= 0)
        return;
    printf("  memory        %s%s%" G_GINT64_FORMAT " workload%s remembered\n",
           member(x, "memory") ? str(x, "memory") : "", member(x, "memory") ? "; " : "",
           n, n == 1 ? "" : "s");
}

static void
print_explain_guards(json_object *x)
{
    json_object *guards = member(x, "guards");
    g_autoptr(CliTable) t = cli_table_new("GUARD", "HOLDS", ">VALUE", ">LIMIT", "DETAIL", NULL);
    g_autofree char *table = NULL;

    for (gsize i = 0; i < array_len(guards); i++) {
        json_object *g = json_object_array_get_idx(guards, i);
        g_autofree char *value = guard_figure(g, "value");
        g_autofree char *limit = guard_figure(g, "limit");

        cli_table_row(t);
        cli_table_cell(t, str(g, "guard"));
        cli_table_cell(t, json_object_get_boolean(member(g, "holds")) ? "HOLDS" : "no");
        cli_table_cell(t, value);
        cli_table_cell(t, limit);
        cli_table_cell(t, str(g, "detail"));
    }
    table = cli_table_render(t);
    printf("  guards\n");
    print_indented(table, "    ");
}

static void
print_explain(CliContext *ctx, json_object *x)
{
    json_object *src = member(x, "policy_source");
    g_autofree char *triple = triple_text(member(x, "triple"));
    g_autofree char *written = age_text(ctx, x, "last_write_ms");
    json_object *holding = member(x, "holding");
    gint64 next;

    printf("%s/%s \302\267 policy %s (%s: %s) \302\267 mode %s\n",
           cli_text(qmp_json_get_string(x, "display_name")) ?: str(x, "target"),
           str(x, "iothread"), str(x, "policy"), str(src, "kind"), str(src, "detail"),
           str(x, "mode"));
    if (qmp_json_get_string(x, "display_name"))
        printf("  target        %s\n", str(x, "target"));
    printf("  now           %s \302\267 %s \302\267 last write %s\n", triple, str(x, "phase"),
           g_str_equal(written, "-") ? "never" : written);
    if (member(x, "override")) {
        g_autofree char *text = override_text(ctx, member(x, "override"));

        printf("  pinned by     %s\n", text);
    }
    print_explain_metrics(ctx, x);
    print_explain_candidates(x);
    print_explain_memory(x);
    if (array_len(holding)) {
        GString *h = g_string_new(NULL);

        for (gsize i = 0; i < array_len(holding); i++)
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

        printf("  next look     in %s: %s\n", in, str(x, "next_look"));
    } else {
        printf("  next look     %s\n", str(x, "next_look"));
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
    its = member(r, "iothreads");
    if (!array_len(its))
        printf("%s (%s): no iothreads\n", cli_text(qmp_json_get_string(r, "display_name")) ?:
               str(r, "target"), str(r, "state"));
    for (gsize i = 0; i < array_len(its); i++) {
        if (i)
            printf("\n");
        print_explain(ctx, json_object_array_get_idx(its, i));
    }
    return TRUE;
}
