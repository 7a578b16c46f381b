/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-error: the error domain of the QMP library.
 *
 * Error contract for every function in qmp/: a GError **error is the last
 * parameter; the function also returns success (TRUE / non-NULL).  Library
 * code never logs: it describes the failure in the GError message, naming
 * the peer or command and the cause, and leaves handling to the caller.
 */
#pragma once

#include <glib.h>

#define QMP_ERROR (qmp_error_quark())
GQuark qmp_error_quark(void);

typedef enum {
    QMP_ERROR_PROTOCOL,     /* the peer broke the wire protocol */
    QMP_ERROR_TOO_BIG,      /* a message exceeded the size limit */
    QMP_ERROR_TOO_DEEP,     /* a message exceeded the nesting limit */
    QMP_ERROR_CLOSED,       /* the connection is closed or was lost */
    QMP_ERROR_TIMEOUT,      /* a command or the greeting timed out */
    QMP_ERROR_COMMAND,      /* the peer answered {"error": ...} */
    QMP_ERROR_INVALID,      /* the caller passed a value we refuse to send */
    QMP_ERROR_UNEXPECTED,   /* a reply of the wrong shape */
} QmpErrorCode;
