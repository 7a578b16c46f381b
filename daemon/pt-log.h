/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-log: the daemon's only way to say something.
 *
 * Under systemd (JOURNAL_STREAM names our stderr) messages go to the journal
 * with structured fields POLLTUNE_VM and POLLTUNE_IOTHREAD, so operators can
 * filter with `journalctl POLLTUNE_VM=vm-3`; otherwise to stderr, one line
 * each.  Library code never logs: the daemon's top level does, here.
 * Control characters in the message and the names are written out
 * (common/pt-escape.h): much of what is logged is a peer's text.
 */
#pragma once

#include <glib.h>
#include <syslog.h>

void pt_log_init(gboolean verbose);
/* From now on log to syslog (daemon facility): after daemonising, when
 * stderr is /dev/null and no journal stream is ours. */
void pt_log_use_syslog(void);
/* @vm and @iothread may be NULL. */
void pt_log(int priority, const char *vm, const char *iothread, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

#define pt_info(vm, io, ...) pt_log(LOG_INFO, vm, io, __VA_ARGS__)
#define pt_warn(vm, io, ...) pt_log(LOG_WARNING, vm, io, __VA_ARGS__)
#define pt_err(vm, io, ...) pt_log(LOG_ERR, vm, io, __VA_ARGS__)
#define pt_debug(vm, io, ...) pt_log(LOG_DEBUG, vm, io, __VA_ARGS__)
