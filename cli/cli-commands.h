/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-commands: polltunectl's commands and what they share.
 *
 * polltunectl.c parses the global options and picks a command from the
 * table; each command gets its own GOptionContext with its options plus the
 * global ones, so options may come before or after the command name.  A
 * command returns FALSE with a GError: CLI_ERROR_USAGE exits 2, anything
 * else 1.  Commands print; the libraries they use do not.
 */
#pragma once

#include <json-c/json.h>

#include "cli-client.h"
#include "cli-data.h"
#include "store.h"

G_BEGIN_DECLS

#define CLI_DEFAULT_SOCKET "/run/polltune/control.sock"

typedef struct {
    const char *socket_path;
    const char *db_path;        /* offline: history, export, report */
    gboolean json;
    guint timeout_ms;
    gboolean timeout_given;     /* --timeout was given, else timeout_ms is the default */
    gint64 now_ms;              /* read once at start */
    CliClient *client;          /* connected on first use */
} CliContext;

typedef gboolean (*CliRunFunc)(CliContext *ctx, char **args, guint n_args, GError **error);

typedef struct {
    const char *name;
    const char *sub;            /* "get" for "policy get", else NULL */
    const char *params;         /* positional parameters, for --help */
    const char *summary;
    const GOptionEntry *entries;    /* NULL-terminated, or NULL */
    guint min_args, max_args;
    gboolean offline;           /* works with --db */
    CliRunFunc run;
    const char *details;        /* accepted values, for --help; or NULL */
} CliCommand;

/* The command table, terminated by an entry with a NULL name. */
extern const CliCommand cli_commands[];

/* Connects on first use and returns the context's client. */
CliClient *cli_context_client(CliContext *ctx, GError **error);
/* Runs one daemon command; @args is borrowed and may be NULL. */
json_object *cli_context_call(CliContext *ctx, const char *command, json_object *args,
                              GError **error);

/* Prints @obj pretty-printed with a trailing newline. */
void cli_print_json(json_object *obj);

/* "VM" or "VM/IOTHREAD" into its parts (@iothread NULL when absent). */
gboolean cli_target_split(const char *text, char **target, char **iothread, GError **error);

/* Opens the --db file read-only (cli_db_open). */
CliDb *cli_context_db_open(CliContext *ctx, GError **error);

/* Adds "target" and, when given, "iothread" from VM[/IOTHREAD] to @req. */
gboolean cli_target_add(json_object *req, const char *text, GError **error);

/* Checks a relative span ("30m") or, when @absolute_ok, an ISO time too. */
gboolean cli_time_check(const char *option, const char *text, gint64 now_ms,
                        gboolean absolute_ok, gint64 *ms_out, GError **error);

/* --since, --until and --resolution as given, for every command with a
 * range (CLI_RANGE_ENTRIES); cli_range_parse() reads them. */
typedef struct {
    char *since, *until, *resolution;
} CliRangeOptions;
extern CliRangeOptions cli_range_options;

#define CLI_RANGE_ENTRIES(since_default, resolution_default)                              \
    { "since", 0, 0, G_OPTION_ARG_STRING, &cli_range_options.since,                      \
      "Start: a span back from now (30m, 12h, 7d) or ISO 8601 (default " since_default ")", \
      "TIME" },                                                                         \
    { "until", 0, 0, G_OPTION_ARG_STRING, &cli_range_options.until,                      \
      "End, exclusive (default now)", "TIME" },                                         \
    { "resolution", 0, 0, G_OPTION_ARG_STRING, &cli_range_options.resolution,            \
      "raw, 1m or 1h (default: " resolution_default ")", "RES" }

/* history and report pick the level by the range (cli_resolution_for_span());
 * an export is of what was recorded. */
#define CLI_RESOLUTION_BY_RANGE "by the length of the range"

/* A time range from --since, --until and --resolution. */
typedef struct {
    gint64 from_ms, to_ms;
    const char *since, *until;  /* as given, for the daemon */
    StoreResolution resolution;
    gboolean resolution_given;
} CliRange;

gboolean cli_range_parse(CliContext *ctx, const char *since_default, CliRange *r,
                         GError **error);
void cli_store_filter(StoreFilter *f, const CliRange *r, const char *target,
                      const char *iothread);
/* ISO 8601 UTC with microseconds, for the daemon. */
char *cli_iso_time(gint64 ms);

/* The daemon's rule (NotFound, exit 1) for a name never recorded; a VM is
 * named by its identity or the name it goes by.  *@target: the identity. */
gboolean cli_db_target_check(CliContext *ctx, CliDb *db, const char *vm, char **target,
                             GError **error);
/* The daemon's `history` over @r of @target (and @iothread, or NULL). */
json_object *cli_history_online(CliContext *ctx, const CliRange *r, const char *target,
                                const char *iothread, GError **error);

/* stdout or a file written under a temporary name and renamed into place
 * only when cli_output_close() is told all went well. */
typedef struct {
    GOutputStream *base;
    GCancellable *cancel;
    gboolean progress;          /* stderr is a terminal */
} CliOutput;

gboolean cli_output_open(CliOutput *o, const char *path, GError **error);
gboolean cli_output_close(CliOutput *o, gboolean ok, GError **error);
/* Progress on stderr; @user_data is the label. */
void cli_progress_show(guint64 bytes, guint64 lines, gpointer user_data);
void cli_progress_end(gboolean shown);

/* Commands, by file. */
gboolean cli_cmd_status(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_list(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_show(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_explain(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_metrics(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_version(CliContext *ctx, char **args, guint n, GError **error);

gboolean cli_cmd_policy_get(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_policy_set(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_policy_clear(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_override_set(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_override_clear(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_mode(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_attach(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_detach(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_reload(CliContext *ctx, char **args, guint n, GError **error);

gboolean cli_cmd_memory(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_forget(CliContext *ctx, char **args, guint n, GError **error);

gboolean cli_cmd_history(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_export(CliContext *ctx, char **args, guint n, GError **error);
gboolean cli_cmd_report(CliContext *ctx, char **args, guint n, GError **error);

extern const GOptionEntry cli_show_entries[];
extern const GOptionEntry cli_policy_set_entries[];
extern const GOptionEntry cli_override_set_entries[];
extern const GOptionEntry cli_override_clear_entries[];
extern const GOptionEntry cli_attach_entries[];
extern const GOptionEntry cli_history_entries[];
extern const GOptionEntry cli_export_entries[];
extern const GOptionEntry cli_report_entries[];

G_END_DECLS
