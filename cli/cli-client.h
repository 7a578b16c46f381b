/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-client: a small blocking client for polltuned's control socket.
 *
 * polltunectl runs one command and exits, so there is no main loop: the
 * client connects, reads the greeting, sends one request and reads until
 * the reply with the request's id arrives.  EXPORT_DATA events that come
 * before the reply are handed to a callback as they arrive, so an export of
 * any size passes through in constant memory.  Framing and parsing are the
 * qmp/ library's (QmpStream, qmp_message_parse); docs/CONTROL.md is the
 * protocol.
 *
 * Contract
 * - Every failure is a GError in CLI_ERROR whose message names the socket
 *   and what failed ("...: connect: No such file or directory").
 * - An {"error": ...} reply is CLI_ERROR_DAEMON, with the message
 *   "COMMAND: CLASS: DESC"; cli_client_error_class() keeps the class
 *   ("NotFound", "PermissionDenied", ...) until the next call.
 * - Every read waits at most the client's timeout; a silent daemon is an
 *   error, never a hang.
 * - A request refused as Busy (the daemon's per-connection rate limit) is
 *   sent again after a pause, for up to two seconds.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

G_BEGIN_DECLS

#define CLI_ERROR (cli_error_quark())
GQuark cli_error_quark(void);

typedef enum {
    CLI_ERROR_FAILED,       /* anything else */
    CLI_ERROR_USAGE,        /* the command line is wrong: exit status 2 */
    CLI_ERROR_CONNECT,      /* no daemon, or the socket refused us */
    CLI_ERROR_PROTOCOL,     /* the daemon broke the protocol */
    CLI_ERROR_CLOSED,       /* the connection ended before the reply */
    CLI_ERROR_TIMEOUT,
    CLI_ERROR_DAEMON,       /* the daemon answered {"error": ...} */
} CliError;

typedef struct CliClient CliClient;

/* Called for each EXPORT_DATA chunk; return FALSE with @error to stop. */
typedef gboolean (*CliChunkFunc)(const char *chunk, gsize len, gpointer user_data,
                                 GError **error);

/* Connects to @path and reads the greeting.  @timeout_ms bounds every wait. */
CliClient *cli_client_connect(const char *path, guint timeout_ms, GError **error);
void cli_client_free(CliClient *c);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliClient, cli_client_free)

/*
 * Runs @command with @args (borrowed, may be NULL) and returns the reply's
 * "return" value (a new reference).  @on_chunk may be NULL, in which case
 * EXPORT_DATA events are a protocol error.
 */
json_object *cli_client_call(CliClient *c, const char *command, json_object *args,
                             CliChunkFunc on_chunk, gpointer user_data, GError **error);

/* The class of the last {"error": ...} reply, or NULL. */
const char *cli_client_error_class(CliClient *c);

G_END_DECLS
