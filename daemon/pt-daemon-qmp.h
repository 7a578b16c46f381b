/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-qmp: the daemon's side of direct QMP sockets (PtDaemonQmp, its
 * own): the kind of target reached by a socket path.
 */
#pragma once

#include "pt-daemon-targets.h"

/* The configured sockets, the globs' finds, those detached: its own. */
typedef struct PtDaemonQmp PtDaemonQmp;

extern const PtTargetKindOps pt_daemon_qmp_kind;

/* Attach the QMP socket at @path, held to @reach (NULL: the daemon's
 * own) at every connect; refused when another target has its socket
 * (the same realpath) or its QEMU (pt_daemon_admit()). */
gboolean pt_daemon_attach_path(PtDaemon *d, const char *path, const char *name,
                               const PtCred *reach, GError **error);
/* @path, detached before, was attached again by request. */
void pt_daemon_qmp_attached(PtDaemon *d, const char *path);
