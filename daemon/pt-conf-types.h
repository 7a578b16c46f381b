/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-types: the configuration as data (PtConf), and its enums with
 * their names (pt-conf-types.c); the parser that fills it is pt-conf.c.
 */
#pragma once

/* The runtime directory polltuned may create (systemd's RuntimeDirectory=
 * creates it under the unit); the default control socket and pidfile live
 * in it. */
#define PT_RUNTIME_DIR "/run/polltune"
#define PT_STATE_DIR "/var/lib/polltune"

#include <glib.h>

#include "policy.h"
#include "pt-enum.h"

typedef enum {
    PT_MODE_OBSERVE,        /* measure and record; write nothing, restore originals */
    PT_MODE_RECOMMEND,      /* decide and record; write nothing */
    PT_MODE_ENFORCE,        /* decide and write */
    PT_MODE_MAX,
    PT_MODE_INVALID = -1,
} PtMode;

PT_ENUM_DECL(pt_mode, PtMode);

typedef enum {
    PT_RESTART_RESTORE,     /* after an unclean exit, restore originals */
    PT_RESTART_RESUME,      /* keep what the last run's policy chose */
    PT_RESTART_MAX,
    PT_RESTART_INVALID = -1,
} PtRestart;

PT_ENUM_DECL(pt_restart, PtRestart);

/* Settings from polltuned's command line: they stand in front of the
 * file's, at start and across every reload. */
typedef struct {
    char *database;             /* --db, or NULL */
    char *control_socket;       /* --socket, or NULL */
    PtMode mode;                /* --mode, or PT_MODE_INVALID */
    guint interval_ms;          /* --interval, or 0 */
} PtConfOverrides;

typedef struct {
    char *path;                 /* the file this came from, or NULL */
    gboolean from_file;         /* read from @path, not defaults for its absence */
    PtConfOverrides overrides;  /* what the command line put in front */

    guint interval_ms;
    PtMode mode;
    gboolean restore_on_exit;
    PtRestart on_restart;
    guint qmp_timeout_ms;
    char *exits_source;         /* auto, debugfs, perf, off */

    gboolean libvirt;
    char *libvirt_uri;
    char *libvirt_pid_dir;      /* where libvirt keeps QEMU pid files */
    char **qmp_sockets;         /* NULL-terminated */
    char **qmp_globs;

    char *database;
    gint64 raw_retention_ms;
    gint64 rollup_1m_retention_ms;
    gint64 rollup_1h_retention_ms;
    gint64 max_size_bytes;

    char *control_socket;
    char *control_group;
    char *admin_group;          /* NULL: only root mutates */
    char *metrics_listen;       /* "HOST:PORT"; NULL: off */
    guint metrics_max_conns;    /* open HTTP connections at once */
    guint metrics_idle_ms;      /* a connection is closed this long after accept */

    PolicyConfig *policy;

    /* "group/key" -> a duration or size as the file wrote it ("48h"), so
     * that --check-config shows it so. */
    GHashTable *written;
} PtConf;
