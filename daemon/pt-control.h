/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-control: the control socket (docs/CONTROL.md).
 *
 * A unix stream socket speaking QMP-shaped JSON lines.  Each connection's
 * credentials are read with SO_PEERCRED and SO_PEERGROUPS when it is
 * accepted, before any byte of a request; read commands need root or the
 * control group, mutating ones root or the admin group.
 *
 * Input is framed by qmp-stream with a 64 KiB line limit; requests are rate
 * limited per connection; a connection that stays silent is closed; output
 * is buffered and written as the socket drains, and a connection whose
 * unread output grows past a bound is dropped, so no client can stall the
 * daemon.  Exports run on a worker thread with their own database
 * connection and stream to the client as it reads.
 */
#pragma once

#include <gio/gio.h>

#include "pt-daemon.h"

#include "pt-control-limits.h"

/* Bind @path (replacing a stale socket), mode 0660, group @group if any. */
PtControl *pt_control_new(PtDaemon *daemon, const char *path, const char *group,
                          const char *admin_group, const PtControlLimits *limits,
                          GError **error);
void pt_control_free(PtControl *c);
/* The connection cap under a descriptor limit of @nofile: the default,
 * lowered so that control clients cannot take the descriptors the
 * database, the metrics listener and the targets need. */
guint pt_control_conn_cap(guint64 nofile);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtControl, pt_control_free)

guint pt_control_n_connections(PtControl *c);
