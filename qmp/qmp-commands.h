/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-commands: typed wrappers for the QMP commands polltune uses.
 *
 * Each wrapper comes as _async/_finish and hands back plain C structs;
 * nothing here exposes json-c.  Every reply is checked for the members we
 * rely on, and a reply of the wrong shape fails with QMP_ERROR_UNEXPECTED
 * naming the member, as an error reply does with QMP_ERROR_COMMAND.
 * Members we don't know are ignored.  The synchronous forms, and the
 * commands only tests send, are in tests/common/pt-test-qmp-sync.h.
 *
 * Writes are validated before anything is sent: QEMU itself refuses only
 * negative poll parameters, so bounds are ours to keep.
 */
#pragma once

#include "metric-vec.h"
#include "qmp-client.h"

/* ---- query-iothreads --------------------------------------------------- */

typedef struct {
    char *id;
    gint64 thread_id;
    guint64 poll_max_ns;
    guint64 poll_grow;
    guint64 poll_shrink;
    guint64 aio_max_batch;
} QmpIothread;

void qmp_iothread_free(QmpIothread *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpIothread, qmp_iothread_free)

/* Result: GPtrArray of QmpIothread, freeing its elements. */
void qmp_query_iothreads_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud);
GPtrArray *qmp_query_iothreads_finish(QmpClient *c, GAsyncResult *res, GError **error);

/* ---- iothread properties through qom-set / qom-get --------------------- */

typedef enum {
    QMP_IOTHREAD_POLL_MAX_NS,
    QMP_IOTHREAD_POLL_GROW,
    QMP_IOTHREAD_POLL_SHRINK,
    QMP_IOTHREAD_AIO_MAX_BATCH,
    QMP_IOTHREAD_PROP_MAX,
    QMP_IOTHREAD_PROP_INVALID = -1,
} QmpIothreadProp;

const char *qmp_iothread_prop_to_string(QmpIothreadProp p);
QmpIothreadProp qmp_iothread_prop_from_string(const char *s);

/*
 * Set @prop of iothread @iothread_id to @value.  Fails without sending when
 * @value is negative or above @max (pass G_MAXINT64 for no bound of ours),
 * or @iothread_id is not a plain QOM id.
 */
void qmp_iothread_set_async(QmpClient *c, const char *iothread_id,
                            QmpIothreadProp prop, gint64 value, gint64 max,
                            GAsyncReadyCallback cb, gpointer ud);
gboolean qmp_iothread_set_finish(QmpClient *c, GAsyncResult *res, GError **error);

/* ---- query-blockstats and the device -> iothread map ------------------- */

typedef struct {
    char *device;           /* legacy drive name, often "" under -blockdev */
    char *node_name;        /* may be NULL */
    char *qdev;             /* QOM path or id of the attached device, may be NULL */
    /* The block counters (the metric table's METRIC_SOURCE_BLOCK entries)
     * as read, cumulative; the rest absent. */
    MetricVec v;
} QmpBlockStats;

void qmp_block_stats_free(QmpBlockStats *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpBlockStats, qmp_block_stats_free)

/* Result: GPtrArray of QmpBlockStats, one per top-level block backend. */
void qmp_query_blockstats_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud);
GPtrArray *qmp_query_blockstats_finish(QmpClient *c, GAsyncResult *res, GError **error);

/*
 * What backs each block backend, from query-block: where the daemon keys
 * a device's workload memory (probe_devmap_set_source()), so that a disk
 * replaced behind the same device learns again.
 */
typedef struct {
    char *device;           /* legacy drive name, "" under -blockdev */
    char *qdev;             /* as query-blockstats names it; NULL: no device */
    /* The medium's "inserted" "file": the top image's filename as QEMU
     * prints it (a path, a protocol URI, or "json:{...}"); NULL: no
     * medium (an empty cdrom). */
    char *file;
} QmpBlockInfo;

void qmp_block_info_free(QmpBlockInfo *b);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpBlockInfo, qmp_block_info_free)

/* Result: GPtrArray of QmpBlockInfo, one per block backend. */
void qmp_query_block_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud);
GPtrArray *qmp_query_block_finish(QmpClient *c, GAsyncResult *res, GError **error);

/*
 * The iothreads a block device runs in, as a NULL-terminated array of
 * iothread ids: empty when it runs in the main loop.  @qdev is what
 * query-blockstats reports, a QOM path or a device id (taken as
 * /machine/peripheral/<id>, which for virtio-blk-pci aliases the backend's
 * properties and for virtio-blk on virtio-mmio is the device itself).
 *
 * Asked in this order, once per device:
 *   1. iothread-vq-mapping (QEMU 9.0+ virtio-blk, 10.0+ virtio-scsi): a
 *      list of {iothread, vqs}; every iothread named serves the device;
 *   2. the iothread link ("/objects/<id>", or "" for the main loop);
 *   3. a device with neither (scsi-hd, scsi-cd) runs where its controller
 *      does: its parent_bus link names the bus, whose parent object is the
 *      controller, asked 1 and 2 in turn.
 * A command error at a step (no such property, no such object) moves to
 * the next; only a broken channel or a reply of the wrong shape fails.
 */
void qmp_device_iothreads_async(QmpClient *c, const char *qdev,
                                GAsyncReadyCallback cb, gpointer ud);
/* *@iothreads: a GStrv, possibly empty (the main loop). */
gboolean qmp_device_iothreads_finish(QmpClient *c, GAsyncResult *res,
                                     char ***iothreads, GError **error);

/* ---- query-stats and query-stats-schemas ------------------------------- */

typedef enum {
    QMP_STATS_TARGET_VM,
    QMP_STATS_TARGET_VCPU,
    QMP_STATS_TARGET_MAX,
    QMP_STATS_TARGET_INVALID = -1,
} QmpStatsTarget;

const char *qmp_stats_target_to_string(QmpStatsTarget t);

typedef struct {
    char *provider;
    char *qom_path;         /* the vCPU for target vcpu, else NULL */
    GHashTable *values;     /* name -> guint64*; histograms are left out */
} QmpStatsEntity;

typedef struct {
    GPtrArray *entities;    /* QmpStatsEntity: one for vm, one per vCPU */
} QmpStats;

void qmp_stats_free(QmpStats *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpStats, qmp_stats_free)

/* Sum of @name over every entity (every vCPU); FALSE if none has it. */
gboolean qmp_stats_sum(const QmpStats *s, const char *name, guint64 *out);

/* The statistics qmp_query_stats_*() asks for @t: a NULL-terminated list,
 * or NULL for all of them.  A counter read with qmp_stats_sum() must be in
 * this list. */
const char *const *qmp_stats_target_names(QmpStatsTarget t);

/* Asks provider kvm only, for qmp_stats_target_names(@target).  Fails with
 * QMP_ERROR_COMMAND without KVM. */
void qmp_query_stats_async(QmpClient *c, QmpStatsTarget target,
                           GAsyncReadyCallback cb, gpointer ud);
QmpStats *qmp_query_stats_finish(QmpClient *c, GAsyncResult *res, GError **error);

typedef struct {
    char *provider;
    char *target;
    char *name;
    char *type;             /* cumulative, instant, peak, *-histogram */
    char *unit;             /* may be NULL */
    gint64 base;
    gint64 exponent;
} QmpStatSchema;

void qmp_stat_schema_free(QmpStatSchema *s);

/* ---- query-status, query-name, query-version --------------------------- */

typedef struct {
    gboolean running;
    char *status;
} QmpStatus;

void qmp_status_free(QmpStatus *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpStatus, qmp_status_free)

/* The VM's -name, or "" when it has none. */
void qmp_query_name_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud);
char *qmp_query_name_finish(QmpClient *c, GAsyncResult *res, GError **error);

void qmp_version_free(QmpVersion *v);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpVersion, qmp_version_free)
