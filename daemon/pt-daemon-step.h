/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-step: the policy step of a tick.
 */
#pragma once

#include "pt-daemon-types.h"

/* Decide for the iothreads of @targets, which were sampled this tick. */
void pt_daemon_run_policy(PtDaemon *d, GPtrArray *targets);
/* @io as the engine sees it: a group's first iothread names the group, with
 * @io's own history (the tick puts the group's history in); @keep (freeing
 * with g_free) holds the strings made for it. */
PolicyIothreadInput pt_daemon_policy_input(PtTarget *t, PtIothread *io, GPtrArray *keep);
/* The ids of @io's group, NULL-terminated, for PolicyIothreadInput.members
 * (NULL when @io is in no group); @keep holds them until it is freed. */
const char *const *pt_group_member_ids(PtTarget *t, PtIothread *io, GPtrArray *keep);
