/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-record: a decision's write through its target, and its row,
 * log line and in-memory outcome.
 */
#pragma once

#include "pt-daemon-types.h"

StoreTriple pt_store_triple(const PolicyTriple *t);
PolicyDecision *pt_decision_copy(const PolicyDecision *src);
/* The iothread the engine knows: a group's first one stands for it all. */
const char *pt_iothread_policy_key(const PtIothread *io);
/* Record @dec on @t with @outcome (@failure: why a write failed, else
 * NULL) in the store, the log and the iothread's last decision. */
void pt_daemon_record(PtDaemon *d, PtTarget *t, const PolicyDecision *dec,
                      const PolicyTriple *old, const char *policy, PtOutcome outcome,
                      const char *failure);
/* Write @dec (taken) to @t and record the outcome; @restore: a write of the
 * originals, which a stop waits for. */
void pt_daemon_apply(PtDaemon *d, PtTarget *t, PolicyDecision *dec, const char *policy,
                     gint64 bound, gboolean restore);

/* The sample taken after @io's last write (@io->triple is its reading):
 * did the write take?  Backs off further writes when it did not. */
void pt_daemon_verify_write(PtDaemon *d, PtTarget *t, PtIothread *io);
/* TRUE while the policy must not write @io: a write waits to be read
 * back, or writes back off after failing. */
gboolean pt_daemon_write_held(const PtIothread *io, gint64 now_us);
