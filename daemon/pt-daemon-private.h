/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-private: the daemon's state, shared by its own files only
 * (pt-daemon*.c, pt-tick.c).  What one file alone uses is that file's own
 * struct, opaque here; each file's functions are declared in its header.
 */
#pragma once

#include "pt-daemon-types.h"
#include "pt-daemon-stats.h"
#include "probe-sampler.h"

struct PtDaemon {
    PtConf *conf;
    PtMode mode;
    /* Set with mode-set: stays in front of the file's mode across reloads,
     * as runtime rules do; PT_MODE_INVALID when none. */
    PtMode runtime_mode;
    /* Where the host's files are read: the daemon's copies of the strings
     * (NULL: the host's own), which proot points to. */
    struct {
        char *proc, *debugfs, *tracefs;
    } root_copy;
    ProbeRoots proot;

    StoreDb *store;
    PolicyEngine *engine;

    /* The targets and their connections, one kind's each. */
    struct {
        GHashTable *by_name;            /* name -> PtTarget */
        struct PtDaemonQmp *qmp;        /* pt-daemon-qmp.c's own */
        struct PtDaemonLibvirt *libvirt; /* pt-daemon-libvirt.c's own; NULL unless
                                         * conf->libvirt */
    } targets;

    struct PtTick *tick;                /* the tick's own (pt-tick-private.h) */
    PtDaemonStats stats;

    char *run_marker;               /* exists while we run: detects kill -9 */
    gboolean unclean_start;
    gboolean shutting_down;
    guint pending_restores;
    guint pending_applies;          /* policy writes in flight: a stop waits */
    struct PtDaemonFile *file;          /* pt-daemon-originals.c's own */
    struct PtDaemonMemory *memory;      /* pt-daemon-memory.c's own; NULL until used */
};
