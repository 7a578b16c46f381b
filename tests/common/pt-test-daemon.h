/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-daemon: run the real polltuned for a test and talk to it.
 *
 * The daemon runs as a child process with a private directory holding its
 * configuration, database and control socket.  pt_test_daemon_call() sends
 * one control request and returns the reply object as JSON text parsed by
 * json-c, so tests assert on what an operator's client would see.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>
#include <sys/types.h>

typedef struct {
    GPid pid;
    char *dir;
    char *conf_path;
    char *db_path;
    char *socket_path;
    char *log_path;
    char *binary;
    char **args;            /* extra command-line arguments, or NULL */
    gboolean stop_at_free;  /* pt_test_daemon_free() stops it first (pt-test-fixture.h) */
} PtTestDaemon;

/* Write @conf_body to DIR/polltuned.conf, after a [daemon] group with the
 * database and the control socket in DIR (those @conf_body does not set
 * itself: then d->db_path or d->socket_path is its), and start polltuned
 * in the foreground. */
PtTestDaemon *pt_test_daemon_start(const char *conf_body, GError **error);
/* The same, with @args (NULL-terminated) added to the command line; they
 * are given again on a restart. */
PtTestDaemon *pt_test_daemon_start_args(const char *conf_body, const char *const *args,
                                        GError **error);
/* The configuration file pt_test_daemon_start() writes for @conf_body, to
 * write another one for a reload or a restart. */
char *pt_test_daemon_conf_text(PtTestDaemon *d, const char *conf_body);
/* @d's configuration file without the lines that set any of @keys
 * (NULL-terminated), for a test to append new values to: polltuned
 * refuses a key set twice. */
char *pt_test_daemon_conf_without(PtTestDaemon *d, const char *const *keys);
/* Start again with the same directory (after a stop or a kill). */
gboolean pt_test_daemon_restart(PtTestDaemon *d, GError **error);
/* SIGTERM and wait (clean stop); returns the exit status. */
int pt_test_daemon_stop(PtTestDaemon *d);
/* Wait for a daemon already signalled to exit; returns the exit status. */
int pt_test_daemon_reap(PtTestDaemon *d);
/* SIGKILL and reap. */
void pt_test_daemon_kill(PtTestDaemon *d);
/* Kills a daemon still running; with d->stop_at_free, SIGTERM first, and
 * SIGKILL only when it has not exited in time. */
void pt_test_daemon_free(PtTestDaemon *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestDaemon, pt_test_daemon_free)

/* Send {"execute": @command, "arguments": @args_json} and return the whole
 * reply ({"return": ...} or {"error": ...}); NULL with @error on I/O. */
json_object *pt_test_daemon_call(PtTestDaemon *d, const char *command,
                                 const char *args_json, GError **error);
/* TRUE, with the test skipped and the reason given, unless the test can
 * act as nobody:nogroup (65534:65534): it runs as root and the group is
 * there. */
gboolean pt_test_skip_without_nobody(void);
/* The same from a child process running as @uid, with @gid as its only
 * group: what the daemon answers another user.  Needs root. */
json_object *pt_test_daemon_call_as(PtTestDaemon *d, uid_t uid, gid_t gid,
                                    const char *command, const char *args_json);
/* The same, asserting success; returns a new reference to "return". */
json_object *pt_test_daemon_ok(PtTestDaemon *d, const char *command, const char *args_json);
/* What @uid:@gid gets for @command: "ok", the error's class, or "io". */
char *pt_test_daemon_class_as(PtTestDaemon *d, uid_t uid, gid_t gid, const char *command,
                              const char *args_json);
/* How many originals the daemon's database keeps for @target. */
gint64 pt_test_daemon_stored_originals(PtTestDaemon *d, const char *target);
/* polltune_targets{state=@state} in the daemon's exposition, or -1. */
gint64 pt_test_daemon_targets_in_state(PtTestDaemon *d, const char *state);

/*
 * The least time a wait on a state is given before the test fails.  A wait
 * returns as soon as its state holds, so a long deadline costs nothing
 * while things work; it must only outlast a loaded machine: a load
 * average of 10 and more on 2 cores, the daemon under ASan and UBSan (a
 * few times slower), a 200 ms tick stretched to seconds.  Tests name what
 * they expect on a quiet machine; every wait below takes the larger of
 * that and this.  A check that something does not happen waits for ticks
 * to pass instead (pt_test_wait_ticks()).
 */
#define PT_TEST_WAIT_MIN_MS 60000
/* The deadline a wait of @ms has: MAX(@ms, PT_TEST_WAIT_MIN_MS). */
guint pt_test_wait_ms(guint ms);

/* Poll @cond every 50 ms for at most pt_test_wait_ms(@timeout_ms). */
gboolean pt_test_wait(gboolean (*cond)(gpointer), gpointer data, guint timeout_ms);

/* A JSON path lookup: "targets/0/iothreads/1/triple/poll-max-ns". */
json_object *pt_json_path(json_object *root, const char *path);
gint64 pt_json_path_int(json_object *root, const char *path);
const char *pt_json_path_str(json_object *root, const char *path);
/* Remove @dir and everything under it (symbolic links, not their targets). */
void pt_test_rm_rf(const char *dir);

/* The target named @name in a status or list reply's "targets" (by its
 * identity or the name it goes by), or NULL. */
json_object *pt_test_status_target(json_object *status, const char *name);
/* Iothread @id of @target in a status reply, or NULL. */
json_object *pt_test_status_iothread(json_object *status, const char *target, const char *id);

/*
 * A wait on the daemon: @command ("status" when NULL) is asked every
 * 50 ms until @check finds what it wants in the reply.  The other members
 * are for @check; pt_test_daemon_wait() sets @took_ms.
 */
typedef struct PtDaemonWait PtDaemonWait;
struct PtDaemonWait {
    PtTestDaemon *d;
    const char *command;
    gboolean (*check)(json_object *reply, const PtDaemonWait *w);
    const char *target;
    const char *iothread;
    gint64 value;
    gboolean want;
    gint64 took_ms;
};
/* Wait up to @ms; FALSE when @check never held. */
gboolean pt_test_daemon_wait(PtDaemonWait *w, guint ms);
/* A PtDaemonWait check: the target @w->target is listed in state
 * @w->iothread (a state name). */
gboolean pt_test_target_in_state(json_object *status, const PtDaemonWait *w);

/*
 * Wait up to @ms until the daemon lists @target attached with
 * @n_iothreads iothreads (0: any number; the daemon lists them once it has
 * sampled the target), or, with @want FALSE, until it does not.  Returns
 * the time it took in ms, or -1.
 */
gint64 pt_test_wait_target(PtTestDaemon *d, const char *target, guint n_iothreads,
                           gboolean want, guint ms);
/* How often the daemon's log holds @needle. */
guint pt_test_daemon_log_count(PtTestDaemon *d, const char *needle);
/* Wait up to @ms until it holds @needle @n times. */
gboolean pt_test_wait_log(PtTestDaemon *d, const char *needle, guint n, guint ms);
/* The ticks the daemon has run so far (status "ticks"). */
gint64 pt_test_daemon_ticks(PtTestDaemon *d);
/* Wait up to @ms until the daemon has run @ticks ticks since it started. */
gboolean pt_test_wait_ticks(PtTestDaemon *d, gint64 ticks, guint ms);
/* Wait up to @ms until everything @target/@iothread sampled up to
 * @after_ms is in the database: a later tick is shown and no write is
 * pending. */
gboolean pt_test_wait_stored(PtTestDaemon *d, const char *target, const char *iothread,
                             gint64 after_ms, guint ms);
