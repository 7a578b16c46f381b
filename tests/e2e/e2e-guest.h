/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e-guest: the host's view of a running test guest, for the end-to-end
 * tests.
 *
 * The guest's load generator prints PT-... lines on its serial console
 * (docs/GUEST.md).  A GuestSerial follows that console, from QEMU's stdout
 * or from a log file libvirt writes, and stamps every line with the host's
 * wall-clock time on arrival: the same clock as the daemon's sample
 * timestamps, so phases and samples line up without translating the
 * guest's own clock.  GuestPhase is one PT-PHASE report with the host times
 * of its PT-PHASE-BEGIN and PT-PHASE lines.
 *
 * The rest are small helpers the tests share: running polltunectl, pulling
 * the daemon's raw history and averaging it over a phase.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "pt-test-daemon.h"
#include "qmp-json.h"     /* g_autoptr(json_object) */

typedef struct GuestSerial GuestSerial;

/* Follow @fd (a pipe; read until EOF).  Takes ownership of @fd. */
GuestSerial *guest_serial_new_fd(int fd);
/* Follow the file @path as it grows (it may not exist yet). */
GuestSerial *guest_serial_new_file(const char *path);
void guest_serial_free(GuestSerial *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(GuestSerial, guest_serial_free)

/*
 * Wait up to @timeout_ms for a line starting with @prefix; returns the host
 * time (ms since the epoch) it arrived at and, when @line is not NULL, a
 * copy of it.  Lines seen before the call count.  -1 on timeout.
 */
gint64 guest_serial_wait(GuestSerial *s, const char *prefix, guint timeout_ms, char **line);
/*
 * Lines of the guest that end a wait for anything else: the load generator
 * failed (PT-ERROR) or ended (PT-DONE), so what was awaited will not come.
 * A stall ends a wait too: GUEST_STALL_TICKS PT-TICK lines in a row of an
 * I/O phase with the same op count.  The guest printed them, so its vCPU
 * ran all along, yet not one request completed: on a host loaded enough to
 * slow the guest 10x, 1 s of a QD1 phase still completes hundreds.
 */
#define GUEST_STALL_TICKS 10

typedef enum {
    GUEST_WAIT_SEEN,
    GUEST_WAIT_TIMEOUT,
    GUEST_WAIT_FAILED,          /* PT-ERROR, or PT-DONE with status=error */
    GUEST_WAIT_ENDED,           /* PT-DONE status=ok, or the console closed */
    GUEST_WAIT_STALLED,
} GuestWaitResult;

/*
 * Wait up to @timeout_ms for a line starting with @prefix, as
 * guest_serial_wait(), but give up at once when the guest shows it will
 * never come (above).  *@host_ms gets the arrival of the awaited line,
 * *@why (when not NULL) a sentence naming what ended the wait otherwise.
 */
GuestWaitResult guest_serial_wait_for(GuestSerial *s, const char *prefix, guint timeout_ms,
                                      gint64 *host_ms, char **why);

/* Every line so far, "HOST_MS LINE\n" each, for failure messages. */
char *guest_serial_dump(GuestSerial *s);
/* Append every line, so far and from now on, to the file @path in that
 * form, as it arrives: a failed run keeps it (e2e-keep.h). */
void guest_serial_log_to(GuestSerial *s, const char *path);

typedef struct {
    guint idx;
    char *name;
    gint64 begin_host_ms;       /* arrival of PT-PHASE-BEGIN */
    gint64 end_host_ms;         /* arrival of PT-PHASE */
    double iops;                /* as the guest printed it */
    gint64 ops;
    gint64 dur_ms;
    /* PT-TICK lines of the phase: host arrival and cumulative ops. */
    GArray *tick_host_ms;
    GArray *tick_ops;
} GuestPhase;

/* The phases reported so far, in order; an array of GuestPhase. */
GArray *guest_serial_phases(GuestSerial *s);

/* The guest's own rate over [@from_ms, @to_ms] (host times), interpolated
 * from the PT-TICK lines; < 0 when the ticks do not cover the window. */
double guest_phase_rate(const GuestPhase *p, gint64 from_ms, gint64 to_ms);

/* The value of KEY=VALUE in a PT- line, or NULL. */
char *guest_field(const char *line, const char *key);

/* Build the guest (cached); FALSE with *why when it cannot be built. */
gboolean guest_build(char **why);

/* The environment variable @name as a whole number of seconds from @min to
 * @max (a benchmark's phase length), @dflt when unset or empty; anything
 * else fails the run with the range. */
guint e2e_env_seconds(const char *name, guint dflt, guint min, guint max);

/*
 * Run build/cli/polltunectl with @args (NULL-terminated) and return its
 * stdout; a non-zero exit fails the test with its stderr.
 */
char *e2e_ctl(const char *first, ...) G_GNUC_NULL_TERMINATED;

/* Raw history rows of @target/@iothread over the last hour (array). */
json_object *e2e_history(PtTestDaemon *d, const char *target, const char *iothread);

/*
 * Mean of the member @key over the rows whose whole tick lies inside @p,
 * leaving out the first @skip_head and the last @skip_tail of those ticks
 * (where a phase edge or a new setting may still show).  *n gets the number
 * of rows used.
 */
double e2e_phase_mean(json_object *rows, const GuestPhase *p, const char *key,
                      gint64 interval_ms, guint skip_head, guint skip_tail, guint *n);
/* The host-time window those rows cover, for guest_phase_rate(). */
void e2e_phase_window(json_object *rows, const GuestPhase *p, gint64 interval_ms,
                      guint skip_head, guint skip_tail, gint64 *from_ms, gint64 *to_ms);

/* Kill these with SIGKILL if the test process aborts (a failed assertion),
 * so that no QEMU or daemon outlives a failed run.  0 removes nothing. */
void e2e_reap_on_abort(GPid pid);
void e2e_reap_forget(GPid pid);
