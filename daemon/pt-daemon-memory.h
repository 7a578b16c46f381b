/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-memory: the workload memories the daemon holds
 * (PtDaemonMemory, its own), between the engine and the store.
 */
#pragma once

#include "pt-daemon-types.h"

/* The workload memories held: this room's own. */
typedef struct PtDaemonMemory PtDaemonMemory;

/*
 * The workload memory of @vm, the name the VM goes by
 * (pt_daemon_vm_name()), one listing per iothread (@iothread NULL: every
 * iothread with entries), read from the engine while it holds it, else
 * from the store.  @t: the attached target of that name, or NULL for a VM
 * the daemon does not reach now.
 */
typedef struct {
    char *iothread;
    GPtrArray *rows;            /* PtMemoryRow *, ordered by signature */
} PtMemoryListing;
void pt_memory_listing_free(PtMemoryListing *l);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtMemoryListing, pt_memory_listing_free)
GPtrArray *pt_daemon_memory_list(PtDaemon *d, PtTarget *t, const char *vm,
                                 const char *iothread, GError **error);
/* Forgets it, in the store and in the engine; @dropped: how many entries. */
gboolean pt_daemon_memory_forget(PtDaemon *d, PtTarget *t, const char *vm,
                                 const char *iothread, guint *dropped, GError **error);
/* The name a VM's memory is kept under: the name status shows. */
const char *pt_daemon_vm_name(const PtTarget *t);

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
 * sample (a group's, for one of a group), each with its source where the
 * target knew it (probe_devmap_set_source()); NULL: none known. */
char *pt_daemon_device_key(PtTarget *t, PtIothread *io);
