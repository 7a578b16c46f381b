/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt: polltune's asynchronous connection to libvirt.
 *
 * libvirt's API is synchronous and a call into a busy or hung libvirtd can
 * block for a long time, so the daemon never calls libvirt from its main
 * loop.  A PtLibvirt owns one worker thread, which owns the virConnectPtr and
 * runs one job at a time from a queue, and it shares one process-wide thread
 * that runs libvirt's event loop on a private GMainContext (keepalive, close
 * detection, domain lifecycle events).  Results and notifications reach the
 * caller on the GMainContext given to pt_libvirt_new(), never on another
 * thread.
 *
 * Contract
 * - Create, start, call and free a PtLibvirt from the thread that runs @ctx.
 *   Async calls follow GIO's pattern: the callback runs in the thread-default
 *   main context of the calling thread, which must be @ctx.  PtLibvirt is no
 *   GObject, so the callback's source object is NULL: pass what you need in
 *   user_data.
 * - pt_libvirt_start() connects in the background.  While libvirtd is absent
 *   the worker retries with exponential backoff (0.5 s doubling to 30 s); the
 *   disconnected callback tells the first failure's cause once.
 *   Keepalive (3 s x 3) and a close callback detect a restarted or dead
 *   libvirtd: the disconnected callback fires, the worker reconnects with the
 *   same backoff, and the connected callback fires again.  The caller should
 *   re-list domains on every connected callback (events missed while
 *   disconnected are not replayed).
 * - An async call made while disconnected fails at once with
 *   PT_LIBVIRT_ERROR_NOT_CONNECTED; it does not wait for a reconnect.
 * - Every call has a deadline (default 5 s, pt_libvirt_set_timeout()).  When
 *   it passes, the caller gets PT_LIBVIRT_ERROR_TIMEOUT.  The worker may stay
 *   stuck inside libvirt; later calls queue behind it and each fails at its
 *   own deadline, and a job whose deadline passed is dropped unrun.  Keepalive
 *   eventually closes a connection to a hung libvirtd, which unsticks the
 *   worker and leads to a reconnect.
 * - pt_libvirt_free() stops the worker (closing the connection) and the event
 *   thread when it was the last user.  Callbacks of async calls still pending
 *   run later with PT_LIBVIRT_ERROR_CLOSED; no PtLibvirtCallbacks fire after
 *   it returns.  It waits for the worker, so it can wait as long as a call
 *   stuck in libvirt (bounded by keepalive once connected).
 * - Errors: GError last, the call returns FALSE or NULL when it fails.
 *   Messages name the URI or the domain (and iothread) and carry libvirt's
 *   own message.  This module never prints; libvirt's default printing of
 *   errors to stderr is switched off for the whole process.
 * - Domains are named by UUID string in calls, since names can be reused.
 */
#pragma once

#include <gio/gio.h>
#include "metric-vec.h"

G_BEGIN_DECLS

#define PT_LIBVIRT_DEFAULT_URI "qemu:///system"
#define PT_LIBVIRT_DEFAULT_PID_DIR "/run/libvirt/qemu"
#define PT_LIBVIRT_DEFAULT_TIMEOUT_MS 5000

#define PT_LIBVIRT_ERROR (pt_libvirt_error_quark())
GQuark pt_libvirt_error_quark(void);

typedef enum {
    PT_LIBVIRT_ERROR_FAILED,          /* libvirt refused or failed the call */
    PT_LIBVIRT_ERROR_NOT_CONNECTED,   /* no connection at the moment */
    PT_LIBVIRT_ERROR_TIMEOUT,         /* no answer before the deadline */
    PT_LIBVIRT_ERROR_NOT_FOUND,       /* no such (running) domain */
    PT_LIBVIRT_ERROR_CLOSED,          /* the PtLibvirt was freed */
} PtLibvirtError;

typedef struct _PtLibvirt PtLibvirt;

/*
 * Notifications, all run on @ctx.  Any member may be NULL.  The strings are
 * valid only during the call.  @reason of domain_stopped is one of
 * "shutdown", "destroyed", "crashed", "migrated", "saved", "failed",
 * "from-snapshot" or "unknown".
 */
typedef struct {
    void (*connected)(PtLibvirt *lv, gpointer user_data);
    void (*disconnected)(PtLibvirt *lv, const GError *why, gpointer user_data);
    void (*domain_started)(PtLibvirt *lv, const char *name, const char *uuid,
                           gpointer user_data);
    void (*domain_stopped)(PtLibvirt *lv, const char *name, const char *uuid,
                           const char *reason, gpointer user_data);
    /* polltune's metadata element (pt-libvirt-metadata.h) was set or removed. */
    void (*domain_metadata_changed)(PtLibvirt *lv, const char *name, const char *uuid,
                                    gpointer user_data);
    /* A block job completed (blockcopy --pivot, an active blockcommit):
     * a disk may be backed by another <source>. */
    void (*domain_disks_changed)(PtLibvirt *lv, const char *name, const char *uuid,
                                 gpointer user_data);
} PtLibvirtCallbacks;

/* One disk of a domain: target device and the iothread serving it (0: none). */
/* A disk and the iothreads it runs in (none: the main loop). */
typedef struct {
    char *dev;
    GArray *iothreads;      /* guint, each once, in the XML's order */
    /* What its <source> says backs it: the file, block device or
     * directory path, "volume:POOL/VOLUME", or a network disk's
     * "PROTOCOL:NAME"; NULL without one (an empty cdrom). */
    char *source;
} PtLibvirtDisk;

/* A running domain as pt_libvirt_list_async() finds it. */
typedef struct {
    char *name;
    char *uuid;
    int id;                 /* libvirt domain id */
    GPid pid;               /* QEMU pid from the pid file, 0 if unknown */
    GArray *iothread_ids;   /* guint, ascending */
    GArray *disks;          /* PtLibvirtDisk */
    char *virt_type;        /* <domain type=...>: "kvm", "qemu" (TCG), ... */
    /* The running QEMU's --version: major*1000000+minor*1000+micro, 0 unknown. */
    guint32 qemu_version;
    /* Why it is 0, the first time this process is listed; NULL otherwise. */
    char *qemu_version_error;
    /* polltune's live <metadata> element, as libvirt returns it (NULL:
     * none), or why it could not be read (NULL: it could). */
    char *policy_xml;
    char *policy_xml_error;
} PtLibvirtDomain;

typedef struct {
    guint id;
    guint64 poll_max_ns;
    guint64 poll_grow;
    guint64 poll_shrink;
} PtLibvirtIothreadStats;

typedef struct {
    char *name;             /* target device, e.g. "vda" */
    /* The block counters (the metric table's METRIC_SOURCE_BLOCK
     * entries); 0 where libvirt gave none, the rest unused. */
    MetricVec v;
} PtLibvirtDiskStats;

/* One domain's sample from pt_libvirt_stats_async(). */
typedef struct {
    char *name;
    char *uuid;
    GArray *iothreads;      /* PtLibvirtIothreadStats, ascending id */
    GArray *disks;          /* PtLibvirtDiskStats, in libvirt's order */
    GHashTable *vm;         /* "exits.sum"... (without "vm.") -> guint64 * */
} PtLibvirtDomainStats;

void pt_libvirt_domain_free(PtLibvirtDomain *d);
void pt_libvirt_domain_stats_free(PtLibvirtDomainStats *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtLibvirtDomain, pt_libvirt_domain_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtLibvirtDomainStats, pt_libvirt_domain_stats_free)

/*
 * @uri: NULL for PT_LIBVIRT_DEFAULT_URI.  @ctx: NULL for the calling
 * thread's default main context.  @cb is copied and may be NULL.
 */
PtLibvirt *pt_libvirt_new(const char *uri, GMainContext *ctx,
                          const PtLibvirtCallbacks *cb, gpointer user_data);

/* Where QEMU pid files are (PT_LIBVIRT_DEFAULT_PID_DIR); before start. */
void pt_libvirt_set_pid_dir(PtLibvirt *lv, const char *dir);

/* Deadline of calls made from now on (PT_LIBVIRT_DEFAULT_TIMEOUT_MS). */
void pt_libvirt_set_timeout(PtLibvirt *lv, guint timeout_ms);

/* Start the worker and connect in the background.  Calling it twice is a no-op. */
void pt_libvirt_start(PtLibvirt *lv);

/* TRUE while a connection is up (as last reported on @ctx). */
gboolean pt_libvirt_is_connected(PtLibvirt *lv);

const char *pt_libvirt_get_uri(PtLibvirt *lv);

/* Accepts NULL.  See the contract above. */
void pt_libvirt_free(PtLibvirt *lv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtLibvirt, pt_libvirt_free)

/* Running domains.  finish returns a GPtrArray of PtLibvirtDomain. */
void pt_libvirt_list_async(PtLibvirt *lv, GCancellable *cancellable,
                           GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *pt_libvirt_list_finish(PtLibvirt *lv, GAsyncResult *res,
                                  GError **error);

/*
 * One virConnectGetAllDomainStats() over running domains: iothread and block
 * groups, plus the vm group when libvirtd is 8.9 or newer.  finish returns a
 * GPtrArray of PtLibvirtDomainStats.
 */
void pt_libvirt_stats_async(PtLibvirt *lv, GCancellable *cancellable,
                            GAsyncReadyCallback callback, gpointer user_data);
GPtrArray *pt_libvirt_stats_finish(PtLibvirt *lv, GAsyncResult *res,
                                   GError **error);

/* virDomainSetIOThreadParams(..., VIR_DOMAIN_AFFECT_LIVE) on one iothread. */
void pt_libvirt_set_iothread_async(PtLibvirt *lv, const char *uuid,
                                   guint iothread_id, guint64 poll_max_ns,
                                   guint poll_grow, guint poll_shrink,
                                   GCancellable *cancellable,
                                   GAsyncReadyCallback callback,
                                   gpointer user_data);
gboolean pt_libvirt_set_iothread_finish(PtLibvirt *lv, GAsyncResult *res,
                                        GError **error);

/* Lookups in finished results; NULL when absent. */
const PtLibvirtDomain *pt_libvirt_domains_find(GPtrArray *domains,
                                               const char *uuid);
const PtLibvirtDomainStats *pt_libvirt_stats_find(GPtrArray *stats,
                                                  const char *uuid);

G_END_DECLS
