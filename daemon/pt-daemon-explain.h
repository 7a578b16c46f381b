/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-explain: the policy's view of an iothread, for explain and the
 * metrics.
 */
#pragma once

#include "pt-daemon-types.h"
#include "policy-explain.h"

/* The policy's current view of @io. */
PolicyExplain *pt_daemon_explain(PtDaemon *d, PtTarget *t, PtIothread *io);
/* Where the policy in force for @target/@iothread comes from: "default",
 * "config", "policy-set" or "libvirt-metadata"; *@detail (to free) says
 * which rule. */
const char *pt_daemon_policy_source(PtDaemon *d, const char *target, const char *iothread,
                                    char **detail);
