/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl: polltune's operator command line.
 *
 * Global options, the command table and dispatch.  Exit status: 0 ok,
 * 1 error, 2 usage.
 */
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <string.h>

#include "cli-commands.h"
#include "cli-format.h"
#include "pt-config.h"
#include "qmp-json.h"

static char *opt_socket;
static char *opt_db;
static gboolean opt_json;
static gint opt_timeout_s;
static gboolean opt_version;

static const GOptionEntry global_entries[] = {
    { "socket", 's', 0, G_OPTION_ARG_FILENAME, &opt_socket,
      "polltuned's control socket (default $POLLTUNE_SOCKET, else " CLI_DEFAULT_SOCKET ")",
      "PATH" },
    { "db", 0, 0, G_OPTION_ARG_FILENAME, &opt_db,
      "Read this history database, read-only, instead of asking the daemon "
      "(history, export, report, memory)", "FILE" },
    { "json", 'j', 0, G_OPTION_ARG_NONE, &opt_json, "Machine-readable output", NULL },
    { "timeout", 0, 0, G_OPTION_ARG_INT, &opt_timeout_s,
      "Seconds to wait for the daemon (default 30); with report --prometheus, for the "
      "whole exchange with the server (default 60)", "SECONDS" },
    { NULL },
};

static const GOptionEntry top_entries[] = {
    { "version", 'V', 0, G_OPTION_ARG_NONE, &opt_version, "Print the version and exit", NULL },
    { NULL },
};

const CliCommand cli_commands[] = {
    { "status", NULL, "", "Mode, tick health and every iothread at a glance", NULL, 0, 0,
      FALSE, cli_cmd_status },
    { "list", NULL, "", "Targets and their iothreads", NULL, 0, 0, FALSE, cli_cmd_list },
    { "show", NULL, "VM[/IOTHREAD]", "One target: values, recent history, decisions",
      cli_show_entries, 1, 1, FALSE, cli_cmd_show },
    { "explain", NULL, "VM[/IOTHREAD]",
      "Why the policy does what it does: measurements, candidates, guards, next look",
      NULL, 1, 1, FALSE, cli_cmd_explain },
    { "policy", "get", "[TARGET]", "Show the default policy, the rules and each target's",
      NULL, 0, 1, FALSE, cli_cmd_policy_get },
    { "policy", "set", "GLOB POLICY [OBJECTIVE]",
      "Set the policy of targets matching GLOB; kept across restarts",
      cli_policy_set_entries, 1, 3, FALSE,
      cli_cmd_policy_set,
      "POLICY is one of:\n"
      "  observe                        measure only, never write\n"
      "  off                            poll-max-ns 0: no polling\n"
      "  qemu-default                   QEMU's own 32768/0/0\n"
      "  static:MAX[/GROW[/SHRINK]]     fixed values, e.g. static:50000/2/2\n"
      "  adaptive[:OBJECTIVE]           measure and choose (default objective balanced)\n"
      "OBJECTIVE is latency, balanced or efficiency (docs/POLICY.md).\n"
      "GLOB matches TARGET or TARGET/IOTHREAD, e.g. 'db-*' or 'vm-3/iothread1'.\n"
      "--poll-max-ns N [--poll-grow N] [--poll-shrink N] instead of POLICY is\n"
      "static:N/GROW/SHRINK, as virsh iothreadset takes the values.\n" },
    { "policy", "clear", "GLOB", "Remove the rule policy set added for GLOB", NULL, 1, 1,
      FALSE, cli_cmd_policy_clear },
    { "override", "set", "VM[/IOTHREAD] poll-max-ns=N [poll-grow=N] [poll-shrink=N]",
      "Pin polling values on an iothread or a whole VM", cli_override_set_entries, 1, 4,
      FALSE, cli_cmd_override_set },
    { "override", "clear", "VM[/IOTHREAD]", "End an override", cli_override_clear_entries, 0,
      1, FALSE, cli_cmd_override_clear },
    { "mode", NULL, "[observe|recommend|enforce]", "Show or set the daemon's mode", NULL, 0, 1,
      FALSE, cli_cmd_mode,
      "observe     measure, decide nothing, restore the original values\n"
      "recommend   decide and record, write nothing\n"
      "enforce     decide and write\n" },
    { "attach", NULL, "PATH", "Attach a QEMU by its QMP socket", cli_attach_entries, 1, 1,
      FALSE, cli_cmd_attach },
    { "detach", NULL, "NAME", "Restore a target's values and detach it", NULL, 1, 1, FALSE,
      cli_cmd_detach },
    { "memory", NULL, "VM[/IOTHREAD]",
      "What the adaptive policy remembers of each workload: winners, scores, confirmations",
      NULL, 1, 1, TRUE, cli_cmd_memory },
    { "forget", NULL, "VM[/IOTHREAD]", "Clear a VM's workload memory: it is explored afresh",
      NULL, 1, 1, FALSE, cli_cmd_forget },
    { "history", NULL, "VM[/IOTHREAD]", "A table with sparklines of IOPS, latency and CPU",
      cli_history_entries, 1, 1, TRUE, cli_cmd_history },
    { "export", NULL, "", "Stream history as CSV or JSON Lines", cli_export_entries, 0, 0,
      TRUE, cli_cmd_export },
    { "report", NULL, "", "Write a self-contained HTML capacity-planning report",
      cli_report_entries, 0, 0, TRUE, cli_cmd_report },
    { "metrics", NULL, "", "The daemon's OpenMetrics text", NULL, 0, 0, FALSE,
      cli_cmd_metrics },
    { "reload", NULL, "", "Make the daemon re-read its configuration", NULL, 0, 0, FALSE,
      cli_cmd_reload },
    { "version", NULL, "", "polltunectl's and the daemon's versions", NULL, 0, 0, FALSE,
      cli_cmd_version },
    { "help", NULL, "[COMMAND [SUBCOMMAND]]", "This list, or a command's help", NULL, 0, 2,
      FALSE, NULL },
    { NULL },
};

CliDb *
cli_context_db_open(CliContext *ctx, GError **error)
{
    return cli_db_open(ctx->db_path, error);
}

CliClient *
cli_context_client(CliContext *ctx, GError **error)
{
    if (!ctx->client)
        ctx->client = cli_client_connect(ctx->socket_path, ctx->timeout_ms, error);
    return ctx->client;
}

json_object *
cli_context_call(CliContext *ctx, const char *command, json_object *args, GError **error)
{
    CliClient *c = cli_context_client(ctx, error);

    return c ? cli_client_call(c, command, args, NULL, NULL, error) : NULL;
}

void
cli_print_json(json_object *obj)
{
    fputs(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PRETTY |
                                         JSON_C_TO_STRING_SPACED |
                                         JSON_C_TO_STRING_NOSLASHESCAPE), stdout);
    fputc('\n', stdout);
}

gboolean
cli_target_split(const char *text, char **target, char **iothread, GError **error)
{
    const char *slash = strchr(text, '/');

    /* A QMP target named by its identity, the socket's absolute path, or
     * PATH/IOTHREAD: the path is what names a file here (the daemon runs
     * on this host), or else the whole text (a socket gone since). */
    if (text[0] == '/') {
        const char *last = strrchr(text, '/');
        g_autofree char *dir = g_strndup(text, last - text);

        if (last[1] && last != text && !g_file_test(text, G_FILE_TEST_EXISTS) &&
            g_file_test(dir, G_FILE_TEST_EXISTS) && !g_file_test(dir, G_FILE_TEST_IS_DIR)) {
            *target = g_steal_pointer(&dir);
            *iothread = g_strdup(last + 1);
        } else {
            *target = g_strdup(text);
            *iothread = NULL;
        }
        return TRUE;
    }

    if (!*text || slash == text || (slash && (!slash[1] || strchr(slash + 1, '/')))) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "\"%s\": expected VM or VM/IOTHREAD",
                    text);
        return FALSE;
    }
    *target = slash ? g_strndup(text, slash - text) : g_strdup(text);
    *iothread = slash ? g_strdup(slash + 1) : NULL;
    return TRUE;
}

gboolean
cli_target_add(json_object *req, const char *text, GError **error)
{
    g_autofree char *target = NULL;
    g_autofree char *iothread = NULL;

    if (!cli_target_split(text, &target, &iothread, error))
        return FALSE;
    json_object_object_add(req, "target", json_object_new_string(target));
    if (iothread)
        json_object_object_add(req, "iothread", json_object_new_string(iothread));
    return TRUE;
}

gboolean
cli_time_check(const char *option, const char *text, gint64 now_ms, gboolean absolute_ok,
               gint64 *ms_out, GError **error)
{
    g_autoptr(GError) local = NULL;
    gint64 ms, span;
    /* A span in the one duration grammar, with its unit (a bare number is
     * neither a span nor a time). */
    gboolean relative = strspn(text, "0123456789") < strlen(text) &&
                        store_duration_parse(text, &span, NULL);

    if ((!relative && !absolute_ok) || !store_time_parse(text, now_ms, &ms, &local)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s %s: expected %s", option, text,
                    absolute_ok ? "a span back from now (30m, 12h, 7d) or an ISO 8601 time "
                                  "(2026-12-01T10:00:00Z)"
                                : "a duration such as 90s, 30m, 12h or 7d");
        return FALSE;
    }
    if (ms_out)
        *ms_out = ms;
    return TRUE;
}

static char *
commands_description(void)
{
    GString *s = g_string_new("Commands:\n");

    for (const CliCommand *c = cli_commands; c->name; c++) {
        g_autofree char *name = g_strdup_printf("%s%s%s%s%s", c->name, c->sub ? " " : "",
                                                c->sub ? c->sub : "", *c->params ? " " : "",
                                                c->params);

        if (strlen(name) > 32)
            g_string_append_printf(s, "  %s\n  %-32s %s\n", name, "", c->summary);
        else
            g_string_append_printf(s, "  %-32s %s\n", name, c->summary);
    }
    g_string_append(s, "\nRun \"polltunectl COMMAND --help\" for a command's options. "
                    "Exit status: 0 ok, 1 error, 2 usage.");
    return g_string_free(s, FALSE);
}

/* "get, set or clear": the subcommands of group @name, from the table. */
static char *
command_subs(const char *name)
{
    g_autoptr(GPtrArray) subs = g_ptr_array_new();
    GString *s = g_string_new(NULL);

    for (const CliCommand *c = cli_commands; c->name; c++)
        if (g_str_equal(c->name, name) && c->sub)
            g_ptr_array_add(subs, (gpointer)c->sub);
    for (guint i = 0; i < subs->len; i++)
        g_string_append_printf(s, "%s%s", i == 0 ? "" : i + 1 == subs->len ? " or " : ", ",
                               (const char *)subs->pdata[i]);
    return g_string_free(s, FALSE);
}

/* The help of a group of subcommands ("policy"): each with its summary. */
static void
command_group_help(const char *name)
{
    printf("Usage:\n");
    for (const CliCommand *c = cli_commands; c->name; c++)
        if (g_str_equal(c->name, name) && c->sub)
            printf("  polltunectl %s %s %s\n      %s\n", c->name, c->sub, c->params,
                   c->summary);
    printf("\nRun \"polltunectl %s SUBCOMMAND --help\" for its options.\n", name);
}

static const CliCommand *
command_find(int argc, char **argv, int *consumed, GError **error)
{
    gboolean name_known = FALSE;

    for (const CliCommand *c = cli_commands; c->name; c++) {
        if (!g_str_equal(c->name, argv[0]))
            continue;
        name_known = TRUE;
        if (!c->sub) {
            *consumed = 1;
            return c;
        }
        if (argc > 1 && g_str_equal(c->sub, argv[1])) {
            *consumed = 2;
            return c;
        }
    }
    if (name_known) {
        g_autofree char *subs = command_subs(argv[0]);

        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: expected %s (try \"polltunectl "
                    "help %s\")", argv[0], subs, argv[0]);
    } else
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: unknown command (try --help)",
                    argv[0]);
    return NULL;
}

/* @cmd's option parser, which also writes its --help. */
static GOptionContext *
command_options(const CliCommand *cmd)
{
    g_autofree char *name = g_strjoin(" ", cmd->name, cmd->sub, NULL);
    g_autofree char *params = g_strdup_printf("%s - %s", cmd->params, cmd->summary);
    GOptionContext *oc = g_option_context_new(params);
    GOptionGroup *global = g_option_group_new("global", "Global options:",
                                              "Show global options", NULL, NULL);
    g_autofree char *prgname = g_strdup_printf("polltunectl %s", name);

    g_set_prgname(prgname);
    if (cmd->details)
        g_option_context_set_description(oc, cmd->details);
    g_option_group_add_entries(global, global_entries);
    g_option_context_add_group(oc, global);
    if (cmd->entries)
        g_option_context_add_main_entries(oc, cmd->entries, NULL);
    return oc;
}

static gboolean
command_is_group(const char *name)
{
    for (const CliCommand *c = cli_commands; c->name; c++)
        if (g_str_equal(c->name, name) && c->sub)
            return TRUE;
    return FALSE;
}

/* polltunectl help [COMMAND [SUBCOMMAND]] */
static int
help_run(GOptionContext *top, char **words, int n)
{
    g_autoptr(GOptionContext) oc = NULL;
    g_autoptr(GError) error = NULL;
    g_autofree char *text = NULL;
    const CliCommand *cmd;
    int consumed = 0;
    static char *help_self[] = { (char *)"help", NULL };

    /* "help --help" is the usage of help itself, as for any command. */
    if (n == 1 && (g_str_equal(words[0], "--help") || g_str_equal(words[0], "-h")))
        words = help_self;
    if (n == 0) {
        text = g_option_context_get_help(top, TRUE, NULL);
        printf("%s", text);
        return 0;
    }
    if (n == 1 && command_is_group(words[0])) {
        command_group_help(words[0]);
        return 0;
    }
    if (!(cmd = command_find(n, words, &consumed, &error))) {
        g_printerr("polltunectl: help: %s\n", cli_text(error->message));
        return 2;
    }
    if (consumed != n) {
        g_printerr("polltunectl: help: expected COMMAND [SUBCOMMAND]\n");
        return 2;
    }
    oc = command_options(cmd);
    text = g_option_context_get_help(oc, TRUE, NULL);
    printf("%s", text);
    return 0;
}

static gboolean
command_run(CliContext *ctx, const CliCommand *cmd, int argc, char **argv, GError **error)
{
    g_autofree char *name = g_strjoin(" ", cmd->name, cmd->sub, NULL);
    g_autoptr(GOptionContext) oc = command_options(cmd);
    g_autoptr(GError) local = NULL;
    guint n;

    if (!g_option_context_parse(oc, &argc, &argv, &local)) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: %s", name, local->message);
        return FALSE;
    }
    /* argv[0] is the command's name; the rest are its parameters. */
    n = argc > 0 ? (guint)argc - 1 : 0;
    if (n < cmd->min_args || n > cmd->max_args) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: expected %s (try \"polltunectl "
                    "%s --help\")", name, *cmd->params ? cmd->params : "no parameters", name);
        return FALSE;
    }
    /* --socket, then $POLLTUNE_SOCKET (an empty one counts as unset, as
     * an empty path could only fail), then the default. */
    ctx->socket_path = opt_socket ? opt_socket :
                       g_getenv("POLLTUNE_SOCKET") && *g_getenv("POLLTUNE_SOCKET") ?
                       g_getenv("POLLTUNE_SOCKET") : CLI_DEFAULT_SOCKET;
    ctx->db_path = opt_db;
    ctx->json = opt_json;
    ctx->timeout_ms = opt_timeout_s > 0 ? (guint)opt_timeout_s * 1000 : 30000;
    ctx->timeout_given = opt_timeout_s > 0;
    if (opt_db && !cmd->offline) {
        g_set_error(error, CLI_ERROR, CLI_ERROR_USAGE, "%s: --db works only with history, "
                    "export, report and memory; this command needs polltuned", name);
        return FALSE;
    }
    return cmd->run(ctx, argv + 1, n, error);
}

int
main(int argc, char **argv)
{
    g_autoptr(GOptionContext) oc = g_option_context_new("COMMAND [ARGS...]");
    g_autofree char *description = commands_description();
    g_autoptr(GError) error = NULL;
    CliContext ctx = { .now_ms = g_get_real_time() / 1000 };
    const CliCommand *cmd;
    int consumed = 0, status;

    setlocale(LC_ALL, "");
    g_option_context_set_summary(oc, "polltune's operator tool: talks to polltuned over its "
                                 "control socket, or reads a history database offline.");
    g_option_context_set_description(oc, description);
    g_option_context_add_main_entries(oc, global_entries, NULL);
    g_option_context_add_main_entries(oc, top_entries, NULL);
    /* Stop at the command name: the rest belongs to the command. */
    g_option_context_set_strict_posix(oc, TRUE);
    if (!g_option_context_parse(oc, &argc, &argv, &error)) {
        g_printerr("polltunectl: %s (try --help)\n", cli_text(error->message));
        return 2;
    }
    if (opt_version) {
        printf("polltunectl %s\n", PT_VERSION);
        return 0;
    }
    if (argc < 2) {
        g_printerr("polltunectl: no command given (try --help)\n");
        return 2;
    }
    /* "help [COMMAND [SUB]]" and "GROUP --help" answer here; a command's
     * own --help is its option parser's. */
    if (g_str_equal(argv[1], "help"))
        return help_run(oc, argv + 2, argc - 2);
    if (argc == 3 && command_is_group(argv[1]) &&
        (g_str_equal(argv[2], "--help") || g_str_equal(argv[2], "-h"))) {
        command_group_help(argv[1]);
        return 0;
    }
    if (!(cmd = command_find(argc - 1, argv + 1, &consumed, &error))) {
        g_printerr("polltunectl: %s\n", cli_text(error->message));
        return 2;
    }
    /* The command's own parse sees "NAME args...". */
    argv[consumed] = argv[0];
    if (!command_run(&ctx, cmd, argc - consumed, argv + consumed, &error)) {
        status = g_error_matches(error, CLI_ERROR, CLI_ERROR_USAGE) ? 2 : 1;
        g_printerr("polltunectl: %s\n", cli_text(error->message));
    } else {
        status = 0;
    }
    if (fflush(stdout) != 0 && status == 0) {
        g_printerr("polltunectl: writing the output failed\n");
        status = 1;
    }
    cli_client_free(ctx.client);
    return status;
}
