/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-types: what the headers of the daemon's files share.  PtDaemon
 * is opaque here; its fields (pt-daemon-private.h) are for the pt-daemon*
 * files, and the control, the metrics and main() call functions only.
 */
#pragma once

#include <gio/gio.h>

#include "pt-conf.h"
#include "pt-target.h"
#include "policy.h"
#include "store.h"

typedef struct PtDaemon PtDaemon;
