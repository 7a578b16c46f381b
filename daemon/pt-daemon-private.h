/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-private: the daemon's state, shared by its own files only.
 */
#pragma once

#include "pt-daemon.h"
#include "probe-sampler.h"

/* The daemon's side of libvirt: its connection and domain targets
 * (pt-daemon-libvirt.c). */
typedef struct PtDaemonLibvirt PtDaemonLibvirt;

struct PtDaemon {
    PtConf *conf;
    PtMode mode;
    /* Set with mode-set: stays in front of the file's mode across reloads,
     * as runtime rules do; PT_MODE_INVALID when none. */
    PtMode runtime_mode;
    char *proc_root, *debugfs_root, *tracefs_root;
    ProbeRoots proot;

    StoreDb *store;
    PolicyEngine *engine;
    /* StorePolicyRule added by policy-set, oldest first.  They are the first
     * runtime_rules->len rules of conf->policy, in the opposite order: the
     * newest wins. */
    GPtrArray *runtime_rules;
    GPtrArray *overrides;           /* StoreOverrideRow, active */
    /* Rules from libvirt domain metadata, right after the runtime rules in
     * conf->policy (pt-daemon-metadata.c); NULL until the first. */
    GPtrArray *metadata_rules;

    ProbeHostSampler *host;
    ProbeHostSnap *host_prev;
    PolicyHost host_metrics;
    GHashTable *targets;            /* name -> PtTarget */
    GHashTable *detached_paths;     /* QMP sockets detached by request */
    PtDaemonLibvirt *libvirt;       /* NULL unless conf->libvirt */

    guint timer;
    gboolean tick_running;
    guint64 tick_id;
    guint tick_pending;
    guint tick_deadline;
    gint64 tick_start_us;
    gint64 tick_mono_ns;
    gint64 tick_now_ms;
    ProbeHostSnap *tick_host;
    GPtrArray *tick_results;

    PtDaemonStats stats;
    GArray *tick_ms;                /* recent tick durations */

    char *run_marker;               /* exists while we run: detects kill -9 */
    gboolean unclean_start;
    gboolean shutting_down;
    guint pending_restores;
    guint pending_applies;          /* policy writes in flight: a stop waits */
};

void pt_daemon_add_target(PtDaemon *d, PtTarget *t);
void pt_daemon_remove_target(PtDaemon *d, PtTarget *t, const char *why);
gboolean pt_daemon_attach_path(PtDaemon *d, const char *path, const char *name,
                               GError **error);
void pt_daemon_scan_globs(PtDaemon *d);
gint pt_double_cmp(gconstpointer a, gconstpointer b);

/* pt-daemon-policy.c */
/* @io as the engine sees it: a group's first iothread names the group, with
 * @io's own history (the tick puts the group's history in). */
PolicyIothreadInput pt_daemon_policy_input(PtTarget *t, PtIothread *io);
void pt_daemon_capture_original(PtDaemon *d, PtTarget *t, PtIothread *io);
void pt_daemon_save_original(PtDaemon *d, PtTarget *t, PtIothread *io);
/* Decide for the iothreads of @targets, which were sampled this tick. */
void pt_daemon_run_policy(PtDaemon *d, GPtrArray *targets);
/* Restore @t's originals; returns how many writes were started. */
guint pt_daemon_restore_target(PtDaemon *d, PtTarget *t, const char *why);
/* Reads the policy-set rules from the store and puts them in front of the
 * configured ones; a rule that no longer fits is logged and left out. */
gboolean pt_daemon_load_rules(PtDaemon *d, GError **error);
/* Puts @rules (StorePolicyRule, oldest first) in front of @policy's rules,
 * newest first.  Fails naming the first rule @policy cannot take. */
gboolean pt_daemon_install_rules(GPtrArray *rules, PolicyConfig *policy, GError **error);

/* pt-daemon-metadata.c */
/* Domain @domain's polltune metadata element as libvirt returned it (NULL:
 * none), or @read_error when it could not be read: installs, replaces or
 * removes its rule; bad metadata is logged and changes nothing. */
void pt_daemon_metadata_update(PtDaemon *d, const char *domain, const char *xml,
                               const char *read_error);
/* Puts the metadata rules into @policy after its runtime rules (a reload). */
void pt_daemon_metadata_install_all(PtDaemon *d, PolicyConfig *policy);

/* pt-daemon-libvirt.c */
void pt_daemon_libvirt_start(PtDaemon *d);
void pt_daemon_libvirt_stop(PtDaemon *d);
/* Keep detached domain @t out of listings until attached by name or UUID. */
void pt_daemon_libvirt_detached(PtDaemon *d, const PtTarget *t);
/* Whether libvirt is in use (*enabled) and connected now. */
gboolean pt_daemon_libvirt_connected(PtDaemon *d, gboolean *enabled);
