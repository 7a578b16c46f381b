/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon: polltuned's lifecycle (new, start, reload, free), and the
 * daemon's face to what stands above it: the control socket, the metrics
 * endpoint and main() include this header, and through it the headers of
 * the daemon's files whose functions they call.  The daemon's own files
 * include their neighbours' headers directly, never this one.
 *
 * The daemon's files stand in layers, each including only headers of the
 * layers below it (docs/HACKING.md, "Libraries and their arrows").
 */
#pragma once

#include "pt-daemon-types.h"
#include "pt-daemon-stats.h"
#include "pt-daemon-attach.h"
#include "pt-daemon-explain.h"
#include "pt-daemon-libvirt.h"
#include "pt-daemon-memory.h"
#include "pt-daemon-mode.h"
#include "pt-daemon-overrides.h"
#include "pt-daemon-rules.h"
#include "pt-daemon-shutdown.h"
#include "pt-daemon-targets.h"
#include "pt-tick.h"

typedef struct {
    const char *proc_root;      /* NULL: /proc (tests point these elsewhere) */
    const char *debugfs_root;
    const char *tracefs_root;
} PtDaemonRoots;

/* The directory of @database exists, or is the state directory and was
 * created; fails naming it otherwise. */
gboolean pt_daemon_prepare_state_dir(const char *database, GError **error);

/* Takes @conf.  Opens the store; nothing runs until pt_daemon_start(). */
PtDaemon *pt_daemon_new(PtConf *conf, const PtDaemonRoots *roots, GError **error);
void pt_daemon_free(PtDaemon *d);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtDaemon, pt_daemon_free)

/* Attach configured targets, start the tick timer. */
gboolean pt_daemon_start(PtDaemon *d, GError **error);

/* Replace the configuration with @conf (taken).  On error nothing
 * changes: a key read only at start that differs is refused, naming it. */
gboolean pt_daemon_reload(PtDaemon *d, PtConf *conf, GError **error);
/* The one reload path, for SIGHUP and the control command `reload`: read
 * the running configuration's file again, put the command-line settings in
 * front as at start, and pt_daemon_reload() it.  Logs the outcome. */
gboolean pt_daemon_reload_file(PtDaemon *d, GError **error);

const PtConf *pt_daemon_get_conf(PtDaemon *d);
StoreDb *pt_daemon_get_store(PtDaemon *d);
PtMode pt_daemon_get_mode(PtDaemon *d);
void pt_daemon_get_stats(PtDaemon *d, PtDaemonStats *stats);
