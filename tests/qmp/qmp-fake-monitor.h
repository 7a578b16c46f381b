/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-fake-monitor: a scripted QMP peer over a socketpair, for tests.
 *
 * The script is a queue of steps run in order on the thread-default main
 * context.  A send step goes out as soon as it reaches the head; an expect
 * step waits for the next command, checks its name (and its arguments, when
 * given, compared as JSON), answers with the canned reply carrying the
 * command's id, and moves on.  A command that arrives when no expect step is
 * at the head, or that differs from the expected one, is recorded as a
 * failure that qmp_fake_monitor_finish() reports.
 *
 * Commands that arrive when the script is empty can go to a responder
 * instead, which answers them as a given QEMU would (state kept by the
 * test): a daemon that polls every tick needs a peer, not a script.  The
 * fake can also listen on a socket path, for code that connects by path.
 *
 * Besides well-behaved replies, the fake can send raw bytes (garbage,
 * truncated messages), a huge message generated on the fly (nothing of that
 * size is ever allocated), bytes dripped one at a time, swallow a command
 * without answering, and close its end.
 */
#pragma once

#include <glib.h>

struct json_object;

typedef struct QmpFakeMonitor QmpFakeMonitor;

/* Creates the socketpair; *client_fd is the end to give the client. */
QmpFakeMonitor *qmp_fake_monitor_new(int *client_fd);
/* Listens on the unix socket @path; the first client to connect is served
 * (what the script sent before that waits for it). */
QmpFakeMonitor *qmp_fake_monitor_new_listen(const char *path);

/*
 * Answer @command (@args may be NULL) when no script step waits for it:
 * return the reply without "id" as JSON text ({"return": ...} or
 * {"error": ...}), or NULL to record the command as unexpected.
 */
typedef char *(*QmpFakeResponder)(const char *command, struct json_object *args,
                                  gpointer user_data);
void qmp_fake_monitor_set_responder(QmpFakeMonitor *f, QmpFakeResponder fn,
                                    gpointer user_data);
/* Serves the connected socket @fd (taken), e.g. one accepted on a path
 * that a client reaches by name. */
QmpFakeMonitor *qmp_fake_monitor_new_fd(int fd);
void qmp_fake_monitor_free(QmpFakeMonitor *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpFakeMonitor, qmp_fake_monitor_free)

/* QEMU 7.2's greeting, then expect qmp_capabilities and accept it. */
void qmp_fake_handshake(QmpFakeMonitor *f);
/* The same with the greeting of QEMU @major.@minor.@micro. */
void qmp_fake_handshake_version(QmpFakeMonitor *f, int major, int minor, int micro);

void qmp_fake_send(QmpFakeMonitor *f, const char *bytes);
/* A message of @size bytes: a "return" whose string never ends in time. */
void qmp_fake_send_huge(QmpFakeMonitor *f, gsize size);
/* @bytes, one byte every @interval_ms. */
void qmp_fake_drip(QmpFakeMonitor *f, const char *bytes, guint interval_ms);
/* @reply is a JSON object without "id"; the fake adds the command's id. */
void qmp_fake_expect(QmpFakeMonitor *f, const char *command,
                     const char *args_json, const char *reply);
/* Accept @command and never answer it. */
void qmp_fake_expect_silence(QmpFakeMonitor *f, const char *command);
void qmp_fake_close(QmpFakeMonitor *f);

/* Commands received so far. */
guint qmp_fake_monitor_n_received(QmpFakeMonitor *f);
/* TRUE once every step ran. */
gboolean qmp_fake_monitor_done(QmpFakeMonitor *f);
/* TRUE if every step ran and nothing unexpected arrived. */
gboolean qmp_fake_monitor_finish(QmpFakeMonitor *f, GError **error);
