/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-attach: targets coming and going whatever their kind: attach
 * and detach by request, a QEMU that exited, and the table of kinds.
 */
#pragma once

#include "pt-daemon-targets.h"

/* Indexed by StoreTargetKind. */
extern const PtTargetKindOps *const pt_target_kinds[STORE_TARGET_KIND_MAX];

/* Attach the QMP socket at @path for a caller with @reach (NULL: root):
 * every connect to it, now and later, is held to what she could reach. */
gboolean pt_daemon_attach_qmp(PtDaemon *d, const char *path, const char *name,
                              const PtCred *reach, char **name_out, GError **error);
gboolean pt_daemon_detach(PtDaemon *d, const char *name, GError **error);
/* @t's QEMU exited: drop its stored originals and hand it to its kind. */
void pt_daemon_target_gone(PtDaemon *d, PtTarget *t);
