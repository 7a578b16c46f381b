/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-targets: the table of attached targets, by identity, and how
 * each kind of target (pt-daemon-qmp.c, pt-daemon-libvirt.c) is driven.
 */
#pragma once

#include "pt-daemon-types.h"

/*
 * How the daemon finds and lets go of the targets of one kind; each kind's
 * file implements it (pt-daemon-qmp.c, pt-daemon-libvirt.c), so that the
 * rest of the daemon never asks which kind a target is.  The table of
 * kinds is pt_target_kinds (pt-daemon-attach.h).
 */
typedef struct {
    /* At start: attach what the configuration names. */
    void (*start)(PtDaemon *d);
    /* Once a tick, before sampling: attach what appeared.  NULL when the
     * kind learns of new targets by events instead. */
    void (*discover)(PtDaemon *d);
    /* @t was detached by request: leave it out of discovery until it is
     * attached again by name. */
    void (*hold_detached)(PtDaemon *d, const PtTarget *t);
    /* @t's QEMU exited (PT_TARGET_GONE), its originals dropped: keep it,
     * to wait for a QEMU on the same channel, or let it go.  NULL: the
     * kind has no such state. */
    void (*gone)(PtDaemon *d, PtTarget *t);
    /* A stop begins: a call made from now on (the restores) may take up
     * to @timeout_ms, the whole stop, instead of qmp-timeout. */
    void (*stopping)(PtDaemon *d, guint timeout_ms);
    /* Cut the kind's channels; targets may outlive it (restores). */
    void (*stop)(PtDaemon *d);
} PtTargetKindOps;

void pt_daemon_add_target(PtDaemon *d, PtTarget *t);
/* Drop @t from the table without a restore (its QEMU is gone); logs @why. */
void pt_daemon_drop_target(PtDaemon *d, PtTarget *t, const char *why);
/* Log once when @t's display name, new or changed, is another target's. */
void pt_daemon_check_name(PtDaemon *d, PtTarget *t);
void pt_daemon_remove_target(PtDaemon *d, PtTarget *t, const char *why);
/* Targets sorted by name (PtTarget *, borrowed). */
GPtrArray *pt_daemon_list_targets(PtDaemon *d);
/* The target whose identity is @name (pt-target.h), or NULL. */
PtTarget *pt_daemon_find_target(PtDaemon *d, const char *name);
/* The target @name names: its identity, or else the display name of one
 * target alone (QEMU's -name, or the name given to attach).  Fails with
 * G_IO_ERROR_NOT_FOUND, or G_IO_ERROR_INVALID_ARGUMENT naming the paths of
 * the targets that share the name. */
PtTarget *pt_daemon_resolve_target(PtDaemon *d, const char *name, GError **error);
/* The target other than @except that has QEMU process @process
 * (PtTarget.process), or NULL. */
PtTarget *pt_daemon_find_process(PtDaemon *d, const PtTarget *except, const char *process);
/* PtTargetAdmit of every target: refuses a QEMU another target has. */
gboolean pt_daemon_admit(PtTarget *t, gpointer data, GError **error);
/* The configured exit source, AUTO when it names none. */
ProbeExitsMode pt_daemon_exits_mode(const PtConf *conf);
/* Estimated polling CPU across all iothreads, in cores, last tick. */
double pt_daemon_polling_cores(PtDaemon *d);
