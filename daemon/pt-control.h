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

typedef struct PtControl PtControl;

/*
 * Connection admission: no member of the control group may lock out root
 * or the admin group.  Of @max_connections, @reserved are kept for root
 * and members of the admin group (whoever may mutate), and one uid other
 * than root holds at most @max_per_uid.  polltunectl uses one connection
 * per command, and a status dashboard a few, so 16 per uid is far above
 * honest use; 0 in any member means its default (reserved: an eighth of
 * the connections, max_per_uid: a quarter).
 */
#define PT_CONTROL_MAX_CONNECTIONS 64
typedef struct {
    guint max_connections;      /* 64 */
    guint max_request;          /* 64 KiB */
    guint rate_per_s;           /* 50 */
    guint idle_timeout_ms;      /* 30 s */
    guint reserved;             /* 8: for root and the admin group */
    guint max_per_uid;          /* 16: for any one uid but root */
} PtControlLimits;

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
