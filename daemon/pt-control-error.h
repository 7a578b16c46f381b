/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-control-error: the errors a control client is answered with.
 */
#pragma once

#include <glib.h>

#define PT_CONTROL_ERROR (pt_control_error_quark())
GQuark pt_control_error_quark(void);

typedef enum {
    PT_CONTROL_ERROR_GENERIC,
    PT_CONTROL_ERROR_COMMAND_NOT_FOUND,
    PT_CONTROL_ERROR_INVALID_PARAMETER,
    PT_CONTROL_ERROR_NOT_FOUND,
    PT_CONTROL_ERROR_PERMISSION_DENIED,
    PT_CONTROL_ERROR_TOO_LARGE,
    PT_CONTROL_ERROR_BUSY,
    PT_CONTROL_ERROR_MAX,
} PtControlErrorCode;

/* The protocol's class name for any error we may reply with. */
const char *pt_control_error_class(const GError *err);
