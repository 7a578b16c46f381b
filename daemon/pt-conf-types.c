/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-types: the names of the configuration's enums, as the file,
 * the control socket and the log spell them.
 */
#include "pt-conf-types.h"

PT_ENUM_IMPL(pt_mode, PtMode, PT_MODE_MAX,
             [PT_MODE_OBSERVE] = "observe",
             [PT_MODE_RECOMMEND] = "recommend",
             [PT_MODE_ENFORCE] = "enforce")

PT_ENUM_IMPL(pt_restart, PtRestart, PT_RESTART_MAX,
             [PT_RESTART_RESTORE] = "restore",
             [PT_RESTART_RESUME] = "resume")
