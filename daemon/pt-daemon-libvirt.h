/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-libvirt: the daemon's side of libvirt (PtDaemonLibvirt, its
 * own): its connection and the kind of target it manages.
 */
#pragma once

#include "pt-daemon-targets.h"

/* The connection and its domains: its own. */
typedef struct PtDaemonLibvirt PtDaemonLibvirt;

extern const PtTargetKindOps pt_daemon_libvirt_kind;

/* Attach again libvirt domain @domain (name or UUID) detached by request. */
gboolean pt_daemon_attach_libvirt(PtDaemon *d, const char *domain, char **name_out,
                                  GError **error);
/* Whether libvirt is in use (*enabled) and connected now; *connects is
 * how many times the connection came up since the start (0: never, as on
 * a host without libvirtd). */
gboolean pt_daemon_libvirt_connected(PtDaemon *d, gboolean *enabled, guint64 *connects);
