/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-devmap: which iothreads serve which block device, and what that
 * makes of each iothread's block figures.
 *
 * A device runs in the main loop, in one iothread (the iothread link, a
 * libvirt <driver iothread='N'/>, a virtio-scsi controller's iothread), or
 * in several (iothread-vq-mapping, QEMU 9.0+; libvirt <driver><iothreads>).
 * One iothread may serve several devices.
 *
 * Blockstats count per device, so the I/O of a device served by several
 * iothreads cannot be split between them.  Iothreads connected through
 * shared devices (the connected components of the iothread-device graph)
 * therefore form a group, and the group is the unit: every member is given
 * every device of the group, so each member's block figures are the
 * group's, and the snapshot marks them shared (group, group_size).  An
 * iothread with devices of its own only is a group of one, as before.
 *
 * Pure: no I/O.  Both the QMP and the libvirt target fill their snapshot
 * through probe_devmap_fill().
 */
#pragma once

#include <glib.h>
#include "probe-snap.h"

typedef struct ProbeDevMap ProbeDevMap;

ProbeDevMap *probe_devmap_new(void);
void probe_devmap_free(ProbeDevMap *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(ProbeDevMap, probe_devmap_free)

void probe_devmap_clear(ProbeDevMap *m);
/* @device runs in @iothreads (NULL-terminated; NULL or empty: the main
 * loop).  Replaces what was known of @device. */
void probe_devmap_set(ProbeDevMap *m, const char *device, const char *const *iothreads);
/*
 * What backs @device (its image file, host block device or network URI:
 * the identity policy_signature_device_key() keys it by, so that another
 * disk behind the same name learns again); NULL or "": unknown.  Kept
 * apart from its iothreads, cleared and forgotten with them.
 */
void probe_devmap_set_source(ProbeDevMap *m, const char *device, const char *source);
/* NULL: unknown. */
const char *probe_devmap_source(const ProbeDevMap *m, const char *device);
/* Forget what is known of the device QEMU deleted (its DEVICE_DELETED
 * event): the key @device (its id, as query-blockstats names a scsi-hd or
 * an ide disk), @path (its QOM path), and every key under @path (a
 * virtio-blk's .../virtio-backend).  Either may be NULL.  A device added
 * again under the same id may sit elsewhere, so it is mapped anew.
 * Returns how many entries went. */
guint probe_devmap_forget(ProbeDevMap *m, const char *device, const char *path);
gboolean probe_devmap_contains(const ProbeDevMap *m, const char *device);
/* The iothreads of @device (empty: main loop), or NULL when unknown. */
const char *const *probe_devmap_lookup(const ProbeDevMap *m, const char *device);

/* One device's totals as the target read them this tick. */
typedef struct {
    const char *device;         /* the key of the map */
    const char *name;           /* recorded under this name */
    MetricVec v;                /* its block counters */
} ProbeDevSample;

/*
 * Group the iothreads already in @snap by the devices of @devs, then record
 * each device's counters, and its source, on every member of its group.  Devices in the
 * main loop, unknown to the map, or whose iothreads are not in @snap are
 * left out; an iothread the map names but @snap lacks is ignored.
 */
void probe_devmap_fill(const ProbeDevMap *m, ProbeTargetSnap *snap,
                       const ProbeDevSample *devs, guint n_devs);
