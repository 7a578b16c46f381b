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
/* The daemon's side of direct QMP sockets (pt-daemon-qmp.c). */
typedef struct PtDaemonQmp PtDaemonQmp;
/* The workload memories the daemon holds (pt-daemon-memory.c). */
typedef struct PtDaemonMemory PtDaemonMemory;
/* Which store file holds the originals (pt-daemon-originals.c). */
typedef struct PtDaemonFile PtDaemonFile;

/*
 * How the daemon finds and lets go of the targets of one kind; each kind's
 * file implements it (pt-daemon-qmp.c, pt-daemon-libvirt.c), so that the
 * rest of the daemon never asks which kind a target is.
 */
typedef struct {
    /* At start: attach what the configuration names. */
    void (*start)(PtDaemon *d);
    /* Once a tick, before sampling: attach what appeared.  NULL when the
     * kind learns of new targets by events instead. */
    void (*discover)(PtDaemon *d);
    /* @t was detached by request: leave it out of discovery until it is
     * attached again by name. */
    void (*hold_detached)(PtDaemon *d, const PtTarget *t);
    /* @t's QEMU exited (PT_TARGET_GONE), its originals dropped: keep it,
     * to wait for a QEMU on the same channel, or let it go.  NULL: the
     * kind has no such state. */
    void (*gone)(PtDaemon *d, PtTarget *t);
    /* A stop begins: a call made from now on (the restores) may take up
     * to @timeout_ms, the whole stop, instead of qmp-timeout. */
    void (*stopping)(PtDaemon *d, guint timeout_ms);
    /* Cut the kind's channels; targets may outlive it (restores). */
    void (*stop)(PtDaemon *d);
} PtTargetKindOps;

extern const PtTargetKindOps pt_daemon_qmp_kind;
extern const PtTargetKindOps pt_daemon_libvirt_kind;
/* Indexed by StoreTargetKind. */
extern const PtTargetKindOps *const pt_target_kinds[STORE_TARGET_KIND_MAX];

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

    GHashTable *targets;            /* name -> PtTarget */
    PtDaemonQmp *qmp;
    PtDaemonLibvirt *libvirt;       /* NULL unless conf->libvirt */

    struct PtTick *tick;            /* pt-daemon-tick.c's own */
    PtDaemonStats stats;

    char *run_marker;               /* exists while we run: detects kill -9 */
    gboolean unclean_start;
    gboolean shutting_down;
    guint pending_restores;
    guint pending_applies;          /* policy writes in flight: a stop waits */
    PtDaemonFile *file;             /* pt-daemon-originals.c's own */
    PtDaemonMemory *memory;         /* pt-daemon-memory.c's own; NULL until used */
};

void pt_daemon_add_target(PtDaemon *d, PtTarget *t);
/* Drop @t from the table without a restore (its QEMU is gone); logs @why. */
void pt_daemon_drop_target(PtDaemon *d, PtTarget *t, const char *why);
/* Log once when @t's display name, new or changed, is another target's. */
void pt_daemon_check_name(PtDaemon *d, PtTarget *t);
void pt_daemon_remove_target(PtDaemon *d, PtTarget *t, const char *why);
/* @t's QEMU exited: drop its stored originals and hand it to its kind. */
void pt_daemon_target_gone(PtDaemon *d, PtTarget *t);
/* Attach the QMP socket at @path, held to @reach (NULL: the daemon's
 * own) at every connect; refused when another target has its socket
 * (the same realpath) or its QEMU (pt_daemon_admit()). */
gboolean pt_daemon_attach_path(PtDaemon *d, const char *path, const char *name,
                               const PtCred *reach, GError **error);
/* The target other than @except that has QEMU process @process
 * (PtTarget.process), or NULL. */
PtTarget *pt_daemon_find_process(PtDaemon *d, const PtTarget *except, const char *process);
/* PtTargetAdmit of every target: refuses a QEMU another target has. */
gboolean pt_daemon_admit(PtTarget *t, gpointer data, GError **error);
/* @path, detached before, was attached again by request. */
void pt_daemon_qmp_attached(PtDaemon *d, const char *path);
/* The configured exit source, AUTO when it names none. */
ProbeExitsMode pt_daemon_exits_mode(const PtConf *conf);
/* Logs what the store has queued for an operator to see. */
void pt_daemon_store_notices(PtDaemon *d);

/* pt-daemon-record.c */
StoreTriple pt_store_triple(const PolicyTriple *t);
PolicyDecision *pt_decision_copy(const PolicyDecision *src);
/* The iothread the engine knows: a group's first one stands for it all. */
const char *pt_iothread_policy_key(const PtIothread *io);
/* Record @dec on @t with @outcome (@failure: why a write failed, else
 * NULL) in the store, the log and the iothread's last decision. */
void pt_daemon_record(PtDaemon *d, PtTarget *t, const PolicyDecision *dec,
                      const PolicyTriple *old, const char *policy, PtOutcome outcome,
                      const char *failure);
/* Write @dec (taken) to @t and record the outcome; @restore: a write of the
 * originals, which a stop waits for. */
void pt_daemon_apply(PtDaemon *d, PtTarget *t, PolicyDecision *dec, const char *policy,
                     gint64 bound, gboolean restore);

/* The sample taken after @io's last write (@io->triple is its reading):
 * did the write take?  Backs off further writes when it did not. */
void pt_daemon_verify_write(PtDaemon *d, PtTarget *t, PtIothread *io);
/* TRUE while the policy must not write @io: a write waits to be read
 * back, or writes back off after failing. */
gboolean pt_daemon_write_held(const PtIothread *io, gint64 now_us);

/* pt-daemon-originals.c */
/* Every original held (none yet) is in the file @store has open now. */
PtDaemonFile *pt_daemon_file_new(StoreDb *store);
void pt_daemon_file_free(PtDaemonFile *f);
void pt_daemon_capture_original(PtDaemon *d, PtTarget *t, PtIothread *io);
void pt_daemon_save_original(PtDaemon *d, PtTarget *t, PtIothread *io);
/* @read is @io's triple in a sample begun at @start_us (monotonic), before
 * it becomes @io->triple: one we did not write becomes the original. */
void pt_daemon_note_read(PtDaemon *d, PtTarget *t, PtIothread *io, const PolicyTriple *read,
                         gint64 start_us);
void pt_daemon_restore_io(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why);
/* Put @io's originals back if it is known to differ from them and no such
 * write is in flight; TRUE when a write was started. */
gboolean pt_daemon_restore_changed(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why);
/* Take the originals stored for @io of @t's QEMU instance, if there are
 * any; nothing is saved or written. */
gboolean pt_daemon_adopt_original(PtDaemon *d, PtTarget *t, PtIothread *io);
/* Restore @t's originals; returns how many writes were started. */
guint pt_daemon_restore_target(PtDaemon *d, PtTarget *t, const char *why);
/* Checks the store's file (store_db_check()); TRUE when every original
 * held is in the file open now.  When the store opened a new file, writes
 * them all into it, and with them the overrides, the policy-set rules and
 * the mode set at run time, and returns FALSE: a write to a VM that asked
 * waits a tick.  Asked once a tick before the policy and before each of
 * its writes, so that no VM is changed while its original is nowhere, and
 * before each write of those settings, so that one made into a new file
 * finds the others there. */
gboolean pt_daemon_originals_on_disk(PtDaemon *d);

/* pt-daemon-overrides.c */
/* Read the active overrides from the store into the engine, at start. */
gboolean pt_daemon_overrides_load(PtDaemon *d, gint64 now_ms, GError **error);
/* Put the engine's overrides into @to, the engine a reload replaces it with. */
void pt_daemon_overrides_carry(PtDaemon *d, PolicyEngine *to, gint64 now_ms);
/* Write the engine's overrides into a database file opened anew, under
 * their ids; counts them in @n.  FALSE when one failed (logged if @say). */
gboolean pt_daemon_overrides_rewrite(PtDaemon *d, gint64 now_ms, gboolean say, guint *n);
/* Drop the overrides expired at @now_ms, saying so in the log. */
void pt_daemon_overrides_expire(PtDaemon *d, gint64 now_ms);

/* pt-daemon-memory.c */
/* Read @t/@iothread's memory from the store into the engine, unless held
 * already under its VM's name; before each policy step. */
void pt_daemon_memory_prepare(PtDaemon *d, PtTarget *t, const char *iothread);
/* Write the memories that changed; after each policy step. */
void pt_daemon_memory_save(PtDaemon *d);
/* Every memory held is to be written again (a new database file). */
void pt_daemon_memory_resave(PtDaemon *d);
/* Put the memories held into @to, the engine a reload replaces it with. */
void pt_daemon_memory_carry(PtDaemon *d, PolicyEngine *to);
void pt_daemon_memory_free(PtDaemon *d);
/* policy_signature_device_key() of the devices behind @io in the last
 * sample (a group's, for one of a group); NULL: none known. */
char *pt_daemon_device_key(PtTarget *t, PtIothread *io);

/* pt-daemon-step.c */
/* Decide for the iothreads of @targets, which were sampled this tick. */
void pt_daemon_run_policy(PtDaemon *d, GPtrArray *targets);
/* @io as the engine sees it: a group's first iothread names the group, with
 * @io's own history (the tick puts the group's history in); @keep (freeing
 * with g_free) holds the strings made for it. */
PolicyIothreadInput pt_daemon_policy_input(PtTarget *t, PtIothread *io, GPtrArray *keep);
/* The ids of @io's group, NULL-terminated, for PolicyIothreadInput.members
 * (NULL when @io is in no group); @keep holds them until it is freed. */
const char *const *pt_group_member_ids(PtTarget *t, PtIothread *io, GPtrArray *keep);

/* pt-daemon-mode.c */
/* Tell the policy configuration in force the mode d->mode. */
void pt_daemon_mode_to_policy(PtDaemon *d);
/* Write the mode set with polltunectl, if any, into a database file opened
 * anew.  FALSE when that failed (logged if @say). */
gboolean pt_daemon_mode_rewrite(PtDaemon *d, gboolean say);

/* pt-daemon-rules.c */
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

/* pt-daemon-metadata.c */
/* Domain @domain's polltune metadata element as libvirt returned it (NULL:
 * none), or @read_error when it could not be read: installs, replaces or
 * removes its rule; bad metadata is logged and changes nothing. */
void pt_daemon_metadata_update(PtDaemon *d, const char *domain, const char *xml,
                               const char *read_error);
/* Puts the running configuration's metadata rules into @policy (a reload);
 * one the new bounds refuse is dropped with a warning. */
void pt_daemon_metadata_install_all(PtDaemon *d, PolicyConfig *policy);

/* pt-daemon-libvirt.c */
