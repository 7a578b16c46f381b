/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-fake-qemu: the one scripted QEMU of the tests.
 *
 * A QEMU of a given version (7.2.0 unless set) serving one QMP monitor:
 * over a socketpair, a connected fd, or a listening unix socket whose
 * connections it serves in turn.  It runs on the thread-default main
 * context of its creation, or on a thread of its own once started there
 * (for a test that blocks on a daemon while the fake must answer).
 *
 * What it does is a script, run in order: send steps go out as soon as
 * they reach the head; an expect step waits for the next command, checks
 * its name (and its arguments, compared as JSON, when given) and answers.
 * A command that arrives when no expect step is at the head goes, in
 * order, to the responder (answers that depend on the test's state), to
 * the iothread model (query-iothreads and qom-set of its iothreads), then
 * to the standing answers (the same reply every time); a command none of
 * them takes is a failure that qmp_fake_qemu_finish() reports.
 *
 * Every reply and event the fake sends as QMP is checked against the
 * schema captured from the real QEMU it impersonates (qmp-schema.h): a
 * canned reply that QEMU could not send aborts the test where it was
 * scripted; an answer of the responder or the model that it could not
 * send, or a command whose arguments it would refuse answered as if it
 * took them, is a failure.  What is not QMP by intent (garbage, a huge or
 * dripped line, replies of the wrong shape) is sent by the _raw steps and
 * the misbehaviours, which bypass the check.
 *
 * In replay mode every connection runs the script from its first step, as
 * a QEMU that each new client finds greeting afresh.
 */
#pragma once

#include <glib.h>

struct json_object;

typedef struct QmpFakeQemu QmpFakeQemu;

/* Creates the socketpair; *client_fd is the end to give the client. */
QmpFakeQemu *qmp_fake_qemu_new(int *client_fd);
/* Serves the connected socket @fd (taken). */
QmpFakeQemu *qmp_fake_qemu_new_fd(int fd);
/* Listens on the unix socket @path (made anew) and serves each client in
 * turn; what the script sent before one connected waits for it. */
QmpFakeQemu *qmp_fake_qemu_new_listen(const char *path);
void qmp_fake_qemu_free(QmpFakeQemu *f);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpFakeQemu, qmp_fake_qemu_free)

/* The QEMU it is: its greeting, and the schema its replies must fit. */
void qmp_fake_qemu_set_version(QmpFakeQemu *f, int major, int minor, int micro);
/* Each new connection runs the script from its first step. */
void qmp_fake_qemu_set_replay(QmpFakeQemu *f, gboolean replay);
/* Serve from a thread of its own from now on.  The script, the responder
 * and the standing answers are fixed from here; the model's accessors
 * and the counters below stay safe to call. */
void qmp_fake_qemu_start_thread(QmpFakeQemu *f);

/* ---- script ------------------------------------------------------------ */

/* The greeting of the fake's version, then expect qmp_capabilities. */
void qmp_fake_handshake(QmpFakeQemu *f);
/* The same as QEMU @major.@minor.@micro (sets the version). */
void qmp_fake_handshake_version(QmpFakeQemu *f, int major, int minor, int micro);
/* @reply is {"return": ...} or {"error": ...} without "id"; the fake adds
 * the command's.  @args_json NULL: any arguments. */
void qmp_fake_expect(QmpFakeQemu *f, const char *command, const char *args_json,
                     const char *reply);
/* The same with @reply completed as this QEMU sends it: every member it
 * always sends and @reply lacks added, 0, false, "" or [] (qmp-schema.h). */
void qmp_fake_expect_filled(QmpFakeQemu *f, const char *command, const char *args_json,
                            const char *reply);
/* The same with a reply no captured QEMU sends, sent as it is: members a
 * later QEMU may add, which a client must ignore. */
void qmp_fake_expect_unchecked(QmpFakeQemu *f, const char *command, const char *args_json,
                               const char *reply);
/* Accept @command and never answer it. */
void qmp_fake_expect_silence(QmpFakeQemu *f, const char *command);
/* The event @name with @data_json (NULL: none), stamped @timestamp_us
 * (0: now). */
void qmp_fake_event(QmpFakeQemu *f, const char *name, const char *data_json,
                    gint64 timestamp_us);
/* A whole reply to @command with its own "id", sent now: for answers out
 * of order, after expect_silence. */
void qmp_fake_send_reply(QmpFakeQemu *f, const char *command, const char *reply_json);
/* Not QMP: these bytes, unchecked. */
void qmp_fake_send_raw(QmpFakeQemu *f, const char *bytes);
/* Not QMP: @len bytes (NULs too), again every @interval_ms until the
 * client hangs up. */
void qmp_fake_send_raw_repeat(QmpFakeQemu *f, const char *bytes, gsize len,
                              guint interval_ms);
/* Not QMP: @head, then @size bytes of 'a' (generated, never held), then
 * @tail (may be NULL). */
void qmp_fake_send_huge(QmpFakeQemu *f, const char *head, gsize size, const char *tail);
/* Not QMP: @bytes, one every @interval_ms. */
void qmp_fake_drip(QmpFakeQemu *f, const char *bytes, guint interval_ms);
/* Not QMP: from here, every command gets a reply with its id and a
 * "return" of a shape nothing asked for, a different one each time. */
void qmp_fake_answer_wrongly(QmpFakeQemu *f);
/* From here, every command is taken and never answered. */
void qmp_fake_ignore_all(QmpFakeQemu *f);
void qmp_fake_close(QmpFakeQemu *f);

/* ---- answers outside the script ---------------------------------------- */

/* Return the reply to @command (without "id") as JSON text, or NULL to
 * leave it to the model and the standing answers.  Runs on the fake's
 * thread, under its lock: it may call the model's accessors. */
typedef char *(*QmpFakeResponder)(const char *command, struct json_object *args,
                                  gpointer user_data);
void qmp_fake_qemu_set_responder(QmpFakeQemu *f, QmpFakeResponder fn, gpointer user_data);
/* @reply (to @command) completed as the expect_filled step does, for a
 * responder; free it. */
char *qmp_fake_qemu_fill(QmpFakeQemu *f, const char *command, const char *reply);
/* @reply to @command (with arguments equal to @args_json, or any when
 * NULL), every time it is asked.  Checked against the schema now. */
void qmp_fake_answer(QmpFakeQemu *f, const char *command, const char *args_json,
                     const char *reply);
/* The standing answers of an idle QEMU for what polltuned asks beside
 * iothreads: unnamed, no KVM, no block devices, no statistics, no device
 * at any QOM path. */
void qmp_fake_answer_idle(QmpFakeQemu *f);

/* ---- the iothread model ------------------------------------------------- */

typedef enum {
    QMP_FAKE_WRITES_TAKE,       /* qom-set changes the value */
    QMP_FAKE_WRITES_IGNORED,    /* qom-set succeeds and changes nothing */
    QMP_FAKE_WRITES_REFUSED,    /* qom-set fails with the given description */
} QmpFakeWrites;

/* Iothreads "@prefix0".."@prefixN-1" at QEMU's defaults (32768/0/0),
 * thread ids from @first_tid. */
void qmp_fake_qemu_add_iothreads(QmpFakeQemu *f, const char *prefix, guint n,
                                 guint first_tid);
void qmp_fake_qemu_set_writes(QmpFakeQemu *f, QmpFakeWrites writes, const char *refusal);
/* The model's iothread @i: its poll-max-ns, -grow, -shrink (any NULL). */
void qmp_fake_qemu_iothread(QmpFakeQemu *f, guint i, gint64 *max_ns, gint64 *grow,
                            gint64 *shrink);
/* qom-sets received for iothread @i, whatever came of them. */
guint qmp_fake_qemu_iothread_sets(QmpFakeQemu *f, guint i);
/* Every qom-set the model took, in order: "ID PROPERTY=VALUE" (a copy). */
GStrv qmp_fake_qemu_writes(QmpFakeQemu *f);

/* ---- what happened ------------------------------------------------------ */

guint qmp_fake_qemu_n_received(QmpFakeQemu *f);
guint qmp_fake_qemu_n_connections(QmpFakeQemu *f);
guint64 qmp_fake_qemu_bytes_sent(QmpFakeQemu *f);
/* TRUE once every step ran (on this connection, in replay mode). */
gboolean qmp_fake_qemu_done(QmpFakeQemu *f);
/* TRUE if every step ran and nothing unexpected arrived or went out. */
gboolean qmp_fake_qemu_finish(QmpFakeQemu *f, GError **error);
