/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-control-limits: the control socket (opaque) and its limits, which its
 * connections
 * are held to (pt-control-conn.c) and main() sets (pt-control.h).
 */
#pragma once

#include <glib.h>

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
