/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-enum: one string table per enum of the daemon (PT_ENUM_IMPL is the
 * project's, common/pt-enum-table.h).
 *
 *   PT_ENUM_DECL(pt_mode, PtMode);                       in the header
 *   PT_ENUM_IMPL(pt_mode, PtMode, PT_MODE_MAX,            in one .c file
 *                [PT_MODE_OBSERVE] = "observe", ...);
 *
 * define pt_mode_to_string() (NULL outside 0.._MAX-1) and
 * pt_mode_from_string() (the _INVALID member, -1, for an unknown or NULL
 * string).  The strings are the external names (configuration, JSON,
 * store, CLI output): changing one changes the protocol.  Each enum has
 * _MAX and _INVALID = -1 members; the tests walk 0.._MAX-1 and check that
 * every value has a name and comes back from it.
 */
#pragma once

#include <glib.h>

#include "common/pt-enum-table.h"

#define PT_ENUM_DECL(prefix, Type)                                          \
    const char *prefix##_to_string(Type v);                                 \
    Type prefix##_from_string(const char *s)
