/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-metadata: the per-domain policies from libvirt metadata.
 */
#pragma once

#include "pt-daemon-types.h"

/* Domain @domain's polltune metadata element as libvirt returned it (NULL:
 * none), or @read_error when it could not be read: installs, replaces or
 * removes its rule; bad metadata is logged and changes nothing. */
void pt_daemon_metadata_update(PtDaemon *d, const char *domain, const char *xml,
                               const char *read_error);
/* Puts the running configuration's metadata rules into @policy (a reload);
 * one the new bounds refuse is dropped with a warning. */
void pt_daemon_metadata_install_all(PtDaemon *d, PolicyConfig *policy);
