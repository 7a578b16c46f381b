/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The checks of a control command's arguments, which every family of
 * commands makes (pt-control-private.h).
 */
#include "pt-control-private.h"
#include "common/pt-escape.h"

#include <string.h>

gboolean
pt_arg_bad(GError **error, const char *key, const char *why)
{
    g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                "%s: %s", key, why);
    return FALSE;
}

/* A string argument: NULL and TRUE when absent and optional. */
gboolean
pt_arg_str(json_object *args, const char *key, gboolean required, const char **out,
           GError **error)
{
    json_object *v = NULL;

    *out = NULL;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v) {
        if (required)
            return pt_arg_bad(error, key, "missing");
        return TRUE;
    }
    if (!json_object_is_type(v, json_type_string))
        return pt_arg_bad(error, key, "not a string");
    /* JSON allows "\u0000" inside a string; C stops there, so
     * "off\u0000static:1" would be read as "off".  Refused, never cut. */
    if (!qmp_json_string(v)) {
        *out = NULL;
        return pt_arg_bad(error, key, "contains a NUL character");
    }
    *out = json_object_get_string(v);
    if (strlen(*out) > 4096) {
        *out = NULL;
        return pt_arg_bad(error, key, "too long");
    }
    /* Names, globs, paths and reasons end up in logs, replies and the
     * store: no control characters, and UTF-8. */
    if (pt_escape_needed(*out)) {
        *out = NULL;
        return pt_arg_bad(error, key, "contains a control character or is not UTF-8");
    }
    return TRUE;
}

gboolean
pt_arg_int(json_object *args, const char *key, gint64 *out, gboolean *present,
           GError **error)
{
    json_object *v = NULL;

    *present = FALSE;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v)
        return TRUE;
    if (!json_object_is_type(v, json_type_int))
        return pt_arg_bad(error, key, "not an integer");
    *out = json_object_get_int64(v);
    *present = TRUE;
    return TRUE;
}

/* An integer argument that must be non-negative when given. */
gboolean
pt_arg_uint(json_object *args, const char *key, gint64 *out, gboolean *present,
            GError **error)
{
    if (!pt_arg_int(args, key, out, present, error))
        return FALSE;
    if (*present && *out < 0)
        return pt_arg_bad(error, key, "must not be negative");
    return TRUE;
}

/* A boolean argument; FALSE when absent. */
gboolean
pt_arg_bool(json_object *args, const char *key, gboolean *out, GError **error)
{
    json_object *v = NULL;

    *out = FALSE;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v)
        return TRUE;
    if (!json_object_is_type(v, json_type_boolean))
        return pt_arg_bad(error, key, "not a boolean");
    *out = json_object_get_boolean(v);
    return TRUE;
}
