/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-enum-table: the one way an enum gets its string table, in every
 * library (header only, GLib only: below every folder, so that qmp/ and
 * policy/ may use it as well as the daemon).
 *
 *   PT_ENUM_IMPL(policy_cause, PolicyCause, POLICY_CAUSE_MAX,   in one .c
 *                [POLICY_CAUSE_NONE] = "none", ...)
 *
 * defines policy_cause_to_string() (NULL outside 0.._MAX-1) and
 * policy_cause_from_string() (-1, the _INVALID member, for an unknown or
 * NULL string), over the static table policy_cause_strings[].
 * PT_ENUM_IMPL_TO_STRING defines the first only, for an enum that is
 * printed but never parsed.  The strings are external names
 * (configuration, JSON, store, CLI output): changing one changes a
 * protocol.  The library's header declares the two functions.
 */
#pragma once

#include <glib.h>

/* The index of @s in @table, or -1; NULL entries (holes) never match. */
static inline int
pt_enum_lookup(const char *const *table, int n, const char *s)
{
    for (int i = 0; s && i < n; i++)
        if (table[i] && g_str_equal(table[i], s))
            return i;
    return -1;
}

#define PT_ENUM_IMPL_TO_STRING(prefix, Type, max, ...)                      \
    static const char *const prefix##_strings[(max)] = { __VA_ARGS__ };      \
    const char *prefix##_to_string(Type v)                                  \
    {                                                                       \
        return (int)v >= 0 && (int)v < (int)(max) ? prefix##_strings[v] : NULL; \
    }

#define PT_ENUM_IMPL(prefix, Type, max, ...)                                \
    PT_ENUM_IMPL_TO_STRING(prefix, Type, max, __VA_ARGS__)                  \
    Type prefix##_from_string(const char *s)                                \
    {                                                                       \
        return (Type)pt_enum_lookup(prefix##_strings, (int)(max), s);         \
    }
