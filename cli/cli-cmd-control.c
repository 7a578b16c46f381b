/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-cmd-control: commands that change what the daemon does: policy,
 * override, mode, attach, detach, reload.  What can be checked here is
 * checked before connecting, so a typo is a usage error (exit 2) and never
 * reaches the daemon; the daemon still checks everything (bounds, names).
 */
#include <stdio.h>
#include <string.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "policy.h"
#include "qmp-json.h"

static char *opt_for;
static char *opt_reason;
static gint64 opt_clear_id = -1;
static char *opt_attach_name;
/* virsh iothreadset's options: --poll-max-ns N --poll-grow N --poll-shrink N */
static char *opt_poll[3];
static const char *const poll_keys[3] = { "poll-max-ns", "poll-grow", "poll-shrink" };

#define POLL_ENTRIES                                                                      \
    { "poll-max-ns", 0, 0, G_OPTION_ARG_STRING, &opt_poll[0],                             \
      "poll-max-ns, as virsh iothreadset takes it", "N" },                                \
    { "poll-grow", 0, 0, G_OPTION_ARG_STRING, &opt_poll[1], "poll-grow", "N" },           \
    { "poll-shrink", 0, 0, G_OPTION_ARG_STRING, &opt_poll[2], "poll-shrink", "N" }

const GOptionEntry cli_policy_set_entries[] = {
    POLL_ENTRIES,
    { NULL },
};

const GOptionEntry cli_override_set_entries[] = {
    POLL_ENTRIES,
    { "for", 'f', 0, G_OPTION_ARG_STRING, &opt_for,
      "End the override after this long (90s, 30m, 12h, 7d; a bare number is seconds); "
      "default: until cleared",
      "DURATION" },
    { "reason", 'r', 0, G_OPTION_ARG_STRING, &opt_reason, "Why, for the decision log", "TEXT" },
    { NULL },
};

const GOptionEntry cli_override_clear_entries[] = {
    { "id", 0, 0, G_OPTION_ARG_INT64, &opt_clear_id, "Clear the override with this id",
      "ID" },
    { NULL },
};

const GOptionEntry cli_attach_entries[] = {
    { "name", 'n', 0, G_OPTION_ARG_STRING, &opt_attach_name,
      "The target's name (default: QEMU's -name, else the socket's file name)", "NAME" },
    { NULL },
};

typedef enum {
    MODE_OBSERVE,
    MODE_RECOMMEND,
    MODE_ENFORCE,
    MODE_MAX,
    MODE_INVALID = -1,
} CliMode;

static const char *const mode_names[MODE_MAX] = {
    [MODE_OBSERVE] = "observe",
    [MODE_RECOMMEND] = "recommend",
    [MODE_ENFORCE] = "enforce",
};


static gboolean
name_in(const char *s, const char *const *names, gsize n)
{
    for (gsize i = 0; i < n; i++)
        if (g_str_equal(s, names[i]))
            return TRUE;
    return FALSE;
}

static void
print_done(CliContext *ctx, json_object *reply, const char *text)
{
    if (ctx->json)
        cli_print_json(reply);
    else if (text)
        printf("%s\n", cli_text(text));
}

gboolean
cli_cmd_policy_get(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autoptr(CliTable) rules = NULL;
    g_autoptr(CliTable) targets = NULL;
    g_autofree char *rt = NULL;
    g_autofree char *tt = NULL;
    json_object *a;

    if (n > 0 && !cli_target_add(req, args[0], error))
        return FALSE;
    if (!(r = cli_context_call(ctx, "policy-get", req, error)))
        return FALSE;
    if (ctx->json) {
        cli_print_json(r);
        return TRUE;
    }
    printf("default policy: %s\n", cli_text(qmp_json_get_string(r, "default")) ?: "-");
    rules = cli_table_new("GLOB", "POLICY", "FROM", NULL);
    if (json_object_object_get_ex(r, "rules", &a) && json_object_is_type(a, json_type_array))
        for (gsize i = 0; i < json_object_array_length(a); i++) {
            json_object *e = json_object_array_get_idx(a, i);
            const char *by = qmp_json_get_string(e, "set-by");
            g_autofree char *from = NULL;

            if (by) {
                gint64 ms = 0;
                g_autoptr(GDateTime) at = NULL;
                g_autofree char *when = NULL;

                qmp_json_get_int(e, "set-at", &ms);
                at = g_date_time_new_from_unix_utc(ms / 1000);
                when = at ? g_date_time_format(at, "%F %T") : NULL;

                from = g_strdup_printf("policy set by %s, %s UTC", by, when ? when : "?");
            }
            cli_table_row(rules);
            cli_table_cell(rules, qmp_json_get_string(e, "glob"));
            cli_table_cell(rules, qmp_json_get_string(e, "policy"));
            cli_table_cell(rules, from ? from : "configuration");
        }
    targets = cli_table_new("TARGET", "POLICY", NULL);
    if (json_object_object_get_ex(r, "targets", &a) && json_object_is_type(a, json_type_array))
        for (gsize i = 0; i < json_object_array_length(a); i++) {
            json_object *e = json_object_array_get_idx(a, i);
            const char *iot = qmp_json_get_string(e, "iothread");

            cli_table_row(targets);
            cli_table_cellf(targets, "%s%s%s", qmp_json_get_string(e, "display_name") ?:
                            qmp_json_get_string(e, "name"), iot ? "/" : "", iot ? iot : "");
            cli_table_cell(targets, qmp_json_get_string(e, "policy"));
        }
    if (cli_table_n_rows(rules) > 0) {
        rt = cli_table_render(rules);
        printf("\nrules, first match wins:\n%s", rt);
    }
    if (cli_table_n_rows(targets) > 0) {
        tt = cli_table_render(targets);
        printf("\n%s", tt);
    }
    return TRUE;
}

/* One "key=N" of @cmd into @req. */
static gboolean
poll_value(const char *cmd, const char *arg, json_object *req, GError **error)
{
    const char *eq = strchr(arg, '=');
    g_autofree char *key = eq ? g_strndup(arg, eq - arg) : g_strdup(arg);
    guint64 v;

    if (!eq || !name_in(key, poll_keys, G_N_ELEMENTS(poll_keys))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: %s: expected "
                    "poll-max-ns=N, poll-grow=N or poll-shrink=N", cmd, arg);
        return FALSE;
    }
    if (json_object_object_get_ex(req, key, NULL)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: %s given twice", cmd, key);
        return FALSE;
    }
    if (!g_ascii_string_to_unsigned(eq + 1, 10, 0, G_MAXINT64, &v, NULL)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: %s: \"%s\" is not a "
                    "non-negative integer", cmd, key, eq + 1);
        return FALSE;
    }
    json_object_object_add(req, key, json_object_new_int64((gint64)v));
    return TRUE;
}

/* The --poll-* options given, into @req as poll_value() reads KEY=N. */
static gboolean
poll_options_add(const char *cmd, json_object *req, GError **error)
{
    for (guint i = 0; i < G_N_ELEMENTS(opt_poll); i++) {
        g_autofree char *arg = opt_poll[i] ? g_strdup_printf("%s=%s", poll_keys[i],
                                                             opt_poll[i]) : NULL;

        if (arg && !poll_value(cmd, arg, req, error))
            return FALSE;
    }
    return TRUE;
}

gboolean
cli_cmd_policy_set(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *spec = NULL;
    g_autofree char *done = NULL;
    const char *policy = n > 1 ? args[1] : NULL;
    g_autoptr(GError) perr = NULL;
    g_autoptr(json_object) values = json_object_new_object();
    PolicySpec parsed;

    if (!poll_options_add("policy set", values, error))
        return FALSE;
    /* --poll-max-ns N [--poll-grow N] [--poll-shrink N], as virsh
     * iothreadset: a static policy, written the one way a spec is. */
    if (json_object_object_length(values) > 0) {
        gint64 v[3] = { 0, 0, 0 };

        if (n > 1 || !json_object_object_get_ex(values, "poll-max-ns", NULL)) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "policy set: --poll-max-ns N "
                        "(with --poll-grow, --poll-shrink) stands for POLICY; give one");
            return FALSE;
        }
        for (guint i = 0; i < G_N_ELEMENTS(v); i++)
            qmp_json_get_int(values, poll_keys[i], &v[i]);
        spec = g_strdup_printf("static:%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%"
                               G_GINT64_FORMAT, v[0], v[1], v[2]);
    } else if (n < 2) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "policy set: expected GLOB POLICY "
                    "[OBJECTIVE] or GLOB --poll-max-ns N");
        return FALSE;
    }
    /* The daemon's own grammar (policy_spec_parse), so that what the
     * documentation allows, such as static:32768, is accepted here too. */
    if (!spec && n == 3) {
        if (!g_str_equal(policy, "adaptive") ||
            policy_objective_from_string(args[2]) == POLICY_OBJECTIVE_INVALID) {
            g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "policy set: objective %s: only "
                        "for adaptive, and one of latency, efficiency, balanced", args[2]);
            return FALSE;
        }
        spec = g_strdup_printf("adaptive:%s", args[2]);
    } else if (!spec) {
        spec = g_strdup(policy);
    }
    if (!policy_spec_parse(spec, &parsed, &perr)) {
        /* The parser's message names the choices: once is enough. */
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "policy set: %s", perr->message);
        return FALSE;
    }
    json_object_object_add(req, "target", json_object_new_string(args[0]));
    json_object_object_add(req, "policy", json_object_new_string(spec));
    if (!(r = cli_context_call(ctx, "policy-set", req, error)))
        return FALSE;
    done = g_strdup_printf("%s: policy %s (kept until `polltunectl policy clear %s`)", args[0],
                           spec, args[0]);
    print_done(ctx, r, done);
    /* Not an error: the rule is kept, for VMs to come. */
    if (!ctx->json && qmp_json_get_string(r, "note"))
        printf("note: %s\n", cli_text(qmp_json_get_string(r, "note")));
    return TRUE;
}

gboolean
cli_cmd_policy_clear(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *done = NULL;

    json_object_object_add(req, "target", json_object_new_string(args[0]));
    if (!(r = cli_context_call(ctx, "policy-clear", req, error)))
        return FALSE;
    done = g_strdup_printf("%s: rule removed; the configured policy applies", args[0]);
    print_done(ctx, r, done);
    return TRUE;
}

gboolean
cli_cmd_override_set(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *done = NULL;
    g_autofree char *until = NULL;
    g_autofree char *replaces = NULL;
    gint64 id = -1, expires, replaced;

    if (!cli_target_add(req, args[0], error))
        return FALSE;
    for (guint i = 1; i < n; i++)
        if (!poll_value("override set", args[i], req, error))
            return FALSE;
    if (!poll_options_add("override set", req, error))
        return FALSE;
    if (!json_object_object_get_ex(req, "poll-max-ns", NULL)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "override set: poll-max-ns=N (or "
                    "--poll-max-ns N) is required");
        return FALSE;
    }
    if (opt_for) {
        /* A bare number is seconds, as sleep(1) and timeout(1) take it; the
         * daemon's grammar (a bare number is ms, as in the configuration)
         * then gets it with its unit. */
        g_autofree char *span = *opt_for && strspn(opt_for, "0123456789") == strlen(opt_for) ?
            g_strconcat(opt_for, "s", NULL) : g_strdup(opt_for);

        if (!cli_time_check("--for", span, ctx->now_ms, FALSE, NULL, error))
            return FALSE;
        json_object_object_add(req, "for", json_object_new_string(span));
    }
    if (opt_reason)
        json_object_object_add(req, "reason", json_object_new_string(opt_reason));
    if (!(r = cli_context_call(ctx, "override-set", req, error)))
        return FALSE;
    qmp_json_get_int(r, "id", &id);
    if (qmp_json_get_int(r, "expires_ms", &expires)) {
        g_autofree char *t = cli_format_time_ms(expires, FALSE);

        until = g_strdup_printf("until %s UTC", t);
    }
    if (qmp_json_get_int(r, "replaced", &replaced))
        replaces = g_strdup_printf("; replaces override %" G_GINT64_FORMAT, replaced);
    done = g_strdup_printf("override %" G_GINT64_FORMAT " on %s: %s%s", id, args[0],
                           until ? until : "until cleared", replaces ? replaces : "");
    print_done(ctx, r, done);
    return TRUE;
}

gboolean
cli_cmd_override_clear(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *done = NULL;
    gint64 cleared = 0;

    if ((n == 0) == (opt_clear_id < 0)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "override clear: give VM[/IOTHREAD] "
                    "or --id N, not both");
        return FALSE;
    }
    if (n > 0) {
        if (!cli_target_add(req, args[0], error))
            return FALSE;
    } else {
        json_object_object_add(req, "id", json_object_new_int64(opt_clear_id));
    }
    if (!(r = cli_context_call(ctx, "override-clear", req, error)))
        return FALSE;
    qmp_json_get_int(r, "cleared", &cleared);
    done = g_strdup_printf("cleared %" G_GINT64_FORMAT " override%s", cleared,
                           cleared == 1 ? "" : "s");
    print_done(ctx, r, done);
    return TRUE;
}

gboolean
cli_cmd_mode(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;

    if (n == 0) {
        /* No argument: show the mode, from status. */
        g_autoptr(json_object) mode = NULL;

        if (!(r = cli_context_call(ctx, "status", NULL, error)))
            return FALSE;
        if (ctx->json) {
            mode = json_object_new_object();
            json_object_object_add(mode, "mode", json_object_new_string(
                                       qmp_json_get_string(r, "mode") ?: ""));
            cli_print_json(mode);
        } else {
            printf("%s\n", cli_text(qmp_json_get_string(r, "mode")) ?: "-");
        }
        return TRUE;
    }
    if (!name_in(args[0], mode_names, MODE_MAX)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "mode %s: expected observe, recommend "
                    "or enforce", args[0]);
        return FALSE;
    }
    json_object_object_add(req, "mode", json_object_new_string(args[0]));
    if (!(r = cli_context_call(ctx, "mode-set", req, error)))
        return FALSE;
    if (ctx->json)
        cli_print_json(r);
    else
        printf("mode %s\n", cli_text(qmp_json_get_string(r, "mode") ?: args[0]));
    return TRUE;
}

gboolean
cli_cmd_attach(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *path = NULL;
    g_autofree char *cwd = NULL;
    g_autofree char *done = NULL;

    /* A bare word that is no file here is a libvirt domain, by name or
     * UUID; anything else is a QMP socket path. */
    if (!strchr(args[0], '/') && !g_file_test(args[0], G_FILE_TEST_EXISTS)) {
        path = g_strdup(args[0]);
        json_object_object_add(req, "domain", json_object_new_string(path));
    } else {
        /* The daemon's working directory is not ours. */
        if (g_path_is_absolute(args[0])) {
            path = g_strdup(args[0]);
        } else {
            cwd = g_get_current_dir();
            path = g_build_filename(cwd, args[0], NULL);
        }
        json_object_object_add(req, "path", json_object_new_string(path));
    }
    if (opt_attach_name)
        json_object_object_add(req, "name", json_object_new_string(opt_attach_name));
    if (!(r = cli_context_call(ctx, "attach", req, error)))
        return FALSE;
    done = g_strdup_printf("attached %s as %s", path, qmp_json_get_string(r, "display_name") ?:
                           qmp_json_get_string(r, "name") ?: "?");
    print_done(ctx, r, done);
    return TRUE;
}

gboolean
cli_cmd_detach(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) req = json_object_new_object();
    g_autoptr(json_object) r = NULL;
    g_autofree char *done = NULL;

    json_object_object_add(req, "name", json_object_new_string(args[0]));
    if (!(r = cli_context_call(ctx, "detach", req, error)))
        return FALSE;
    done = g_strdup_printf("detached %s; its original values are restored", args[0]);
    print_done(ctx, r, done);
    return TRUE;
}

gboolean
cli_cmd_reload(CliContext *ctx, char **args, guint n, GError **error)
{
    g_autoptr(json_object) r = cli_context_call(ctx, "reload", NULL, error);

    if (!r)
        return FALSE;
    print_done(ctx, r, "configuration reloaded");
    return TRUE;
}
