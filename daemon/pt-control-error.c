/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-control-error: the control protocol's error domain and its class
 * names, below the server so that the access check can speak it too.
 */
#include "pt-control-error.h"
#include "policy.h"
#include "store.h"

G_DEFINE_QUARK(pt-control-error-quark, pt_control_error)

static const char *const pt_control_class_table[PT_CONTROL_ERROR_MAX] = {
    [PT_CONTROL_ERROR_GENERIC] = "GenericError",
    [PT_CONTROL_ERROR_COMMAND_NOT_FOUND] = "CommandNotFound",
    [PT_CONTROL_ERROR_INVALID_PARAMETER] = "InvalidParameter",
    [PT_CONTROL_ERROR_NOT_FOUND] = "NotFound",
    [PT_CONTROL_ERROR_PERMISSION_DENIED] = "PermissionDenied",
    [PT_CONTROL_ERROR_TOO_LARGE] = "TooLarge",
    [PT_CONTROL_ERROR_BUSY] = "Busy",
};

const char *
pt_control_error_class(const GError *err)
{
    if (err->domain == PT_CONTROL_ERROR && err->code >= 0 && err->code < PT_CONTROL_ERROR_MAX)
        return pt_control_class_table[err->code];
    if (err->domain == G_IO_ERROR && err->code == G_IO_ERROR_NOT_FOUND)
        return "NotFound";
    if (err->domain == G_IO_ERROR && err->code == G_IO_ERROR_INVALID_ARGUMENT)
        return "InvalidParameter";
    if (err->domain == POLICY_ERROR)
        return "InvalidParameter";
    if (err->domain == STORE_ERROR && err->code == STORE_ERROR_INVALID)
        return "InvalidParameter";
    if (err->domain == STORE_ERROR && err->code == STORE_ERROR_NOT_FOUND)
        return "NotFound";
    return "GenericError";
}
