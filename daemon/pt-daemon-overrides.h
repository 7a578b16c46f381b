/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-overrides: the operator's overrides, held by the engine and
 * written through to the store.
 */
#pragma once

#include "pt-daemon-types.h"

/*
 * The longest an override may be set for.  An override is the operator's
 * temporary hand on an iothread: a maintenance window, a benchmark, an
 * incident; one meant to outlast a year is a rule (policy-set) or an
 * override without expiry.  The bound also keeps now + for far from the
 * end of gint64: "106751991d" is within gint64 as milliseconds, and the
 * expiry used to wrap to a negative time, stored already expired.
 */
#define PT_OVERRIDE_FOR_MAX_MS (366 * G_GINT64_CONSTANT(86400000))
#define PT_OVERRIDE_FOR_MAX_TEXT "366d"
/* poll_grow/poll_shrink < 0: keep the current value.  @for_ms 0: no expiry;
 * otherwise 1..PT_OVERRIDE_FOR_MAX_MS.  Replaces the override of exactly
 * @target and @iothread (the whole target when NULL), whose id goes to
 * @replaced_out (0: there was none). */
gboolean pt_daemon_override_set(PtDaemon *d, const char *target, const char *iothread,
                                gint64 poll_max_ns, gint64 poll_grow, gint64 poll_shrink,
                                gint64 for_ms, const char *who, const char *reason,
                                gint64 *id_out, gint64 *expires_out, gint64 *replaced_out,
                                GError **error);
/* By @id when > 0, else by @target (required then) and @iothread.
 * Returns how many, with @error set when none. */
guint pt_daemon_override_clear(PtDaemon *d, const char *target, const char *iothread,
                               gint64 id, GError **error);
/* The operator's override in force on @target/@iothread (set on it or on
 * the whole target), or NULL; borrowed until the overrides next change. */
const PolicyOverrideInfo *pt_daemon_override_for(PtDaemon *d, const char *target,
                                                 const char *iothread);
/* A write made outside polltune that the policy holds as an implicit
 * override (docs/POLICY.md): FALSE when none.  Out-parameters may be NULL. */
gboolean pt_daemon_external_hold_for(PtDaemon *d, const char *target, const char *iothread,
                                     PolicyTriple *triple, gint64 *since_ms, gint64 *until_ms);

/* Read the active overrides from the store into the engine, at start. */
gboolean pt_daemon_overrides_load(PtDaemon *d, gint64 now_ms, GError **error);
/* Put the engine's overrides into @to, the engine a reload replaces it with. */
void pt_daemon_overrides_carry(PtDaemon *d, PolicyEngine *to, gint64 now_ms);
/* Write the engine's overrides into a database file opened anew, under
 * their ids; counts them in @n.  FALSE when one failed (logged if @say). */
gboolean pt_daemon_overrides_rewrite(PtDaemon *d, gint64 now_ms, gboolean say, guint *n);
/* Drop the overrides expired at @now_ms, saying so in the log. */
void pt_daemon_overrides_expire(PtDaemon *d, gint64 now_ms);
