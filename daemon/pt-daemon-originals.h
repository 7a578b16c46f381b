/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-originals: the triples an iothread had before the daemon first
 * wrote it, and which file of the store holds them (PtDaemonFile, its own).
 *
 * The daemon captures each iothread's original triple at first attach (and
 * persists it), restores it on detach, in observe, and at exit when
 * restore-on-exit is set, and after an unclean exit when on-restart says so.
 */
#pragma once

#include "pt-daemon-types.h"

/* Which store file holds the originals: this room's own. */
typedef struct PtDaemonFile PtDaemonFile;

/*
 * What the store's file holds besides the originals, and what the files
 * above this one own: when the store opened a new file, each is written
 * into it again through these (pt-daemon.c fills them in).
 */
typedef struct {
    /* The overrides, the policy-set rules and the mode set at run time;
     * TRUE when all are in.  @say: log what is written and what failed. */
    gboolean (*settings)(PtDaemon *d, gboolean say);
    /* The workload memory: every memory held is to be written again. */
    void (*memory)(PtDaemon *d);
} PtDaemonFileResave;

/* Every original held (none yet) is in the file @store has open now;
 * @resave (static) writes the rest into a new one. */
PtDaemonFile *pt_daemon_file_new(StoreDb *store, const PtDaemonFileResave *resave);
void pt_daemon_file_free(PtDaemonFile *f);
/* Logs what the store has queued for an operator to see. */
void pt_daemon_store_notices(PtDaemon *d);

void pt_daemon_capture_original(PtDaemon *d, PtTarget *t, PtIothread *io);
void pt_daemon_save_original(PtDaemon *d, PtTarget *t, PtIothread *io);
/* @read is @io's triple in a sample begun at @start_us (monotonic), before
 * it becomes @io->triple: one we did not write becomes the original. */
void pt_daemon_note_read(PtDaemon *d, PtTarget *t, PtIothread *io, const PolicyTriple *read,
                         gint64 start_us);
void pt_daemon_restore_io(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why);
/* Put @io's originals back if it is known to differ from them and no such
 * write is in flight; TRUE when a write was started. */
gboolean pt_daemon_restore_changed(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why);
/* Take the originals stored for @io of @t's QEMU instance, if there are
 * any; nothing is saved or written. */
gboolean pt_daemon_adopt_original(PtDaemon *d, PtTarget *t, PtIothread *io);
/* Restore @t's originals; returns how many writes were started. */
guint pt_daemon_restore_target(PtDaemon *d, PtTarget *t, const char *why);
/* Checks the store's file (store_db_check()); TRUE when every original
 * held is in the file open now.  When the store opened a new file, writes
 * them all into it, and with them the overrides, the policy-set rules and
 * the mode set at run time (PtDaemonFileResave), and returns FALSE: a
 * write to a VM that asked waits a tick.  Asked once a tick before the
 * policy and before each of its writes, so that no VM is changed while its
 * original is nowhere, and before each write of those settings, so that
 * one made into a new file finds the others there. */
gboolean pt_daemon_originals_on_disk(PtDaemon *d);
