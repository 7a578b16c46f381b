/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-rules: the policy rules in force: the configured ones, and
 * those set at run time with policy-set, which are stored and outlive
 * reloads and restarts.
 */
#pragma once

#include "pt-daemon-types.h"

/* The policy in force for a target or iothread (formatted spec). */
char *pt_daemon_policy_for(PtDaemon *d, const char *target, const char *iothread);
gboolean pt_daemon_policy_set(PtDaemon *d, const char *glob, const char *spec,
                              const char *who, GError **error);
gboolean pt_daemon_policy_clear(PtDaemon *d, const char *glob, GError **error);

/* Reads the policy-set rules from the store and puts them in front of the
 * configured ones; a rule that no longer fits is logged and left out. */
gboolean pt_daemon_load_rules(PtDaemon *d, GError **error);
/* Write the policy-set rules in force into a database file opened anew;
 * counts them in @n.  FALSE when one failed (logged if @say). */
gboolean pt_daemon_rules_rewrite(PtDaemon *d, gboolean say, guint *n);
/* Puts the policy-set rules of @from (a reload's old configuration) in
 * front of @policy's, in their order.  Fails naming the first rule @policy
 * cannot take, and leaves @policy unchanged. */
gboolean pt_daemon_install_rules(const PolicyConfig *from, PolicyConfig *policy,
                                 GError **error);
