/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt-parse: pure conversions from what libvirt returns into
 * pt-libvirt's plain structs, kept apart from the threads so that tests can
 * feed them canned input.
 *
 * - The live domain XML gives the iothread ids (<iothreadids>, or 1..N from
 *   <iothreads>N</iothreads>) and each disk's target dev with the iothreads
 *   it runs in: its <driver iothread='N'/>, or every <iothread id='N'> of
 *   its <driver><iothreads> (libvirt 10.0+, QEMU's iothread-vq-mapping);
 *   a disk on bus 'scsi' without either runs in those of its controller
 *   (<address controller='N'/>, else 0): <controller type='scsi'> with
 *   <driver iothread='N'/> or <driver><iothreads> (libvirt 11.2+).
 * - A virDomainStatsRecord's typed parameters ("iothread.<id>.poll-max-ns",
 *   "block.<i>.rd.reqs", "vm.<name>", ...) become PtLibvirtDomainStats.
 * Errors follow pt-libvirt.h.
 */
#pragma once

#include <libvirt/libvirt.h>

#include "pt-libvirt.h"

/* Fill @d->iothread_ids and @d->disks from a live domain XML. */
gboolean pt_libvirt_domain_xml_parse(PtLibvirtDomain *d, const char *xml,
                                     GError **error);

/* An empty domain record with its arrays allocated. */
PtLibvirtDomain *pt_libvirt_domain_new(const char *name, const char *uuid);

PtLibvirtDomainStats *pt_libvirt_stats_from_params(const char *name,
                                                   const char *uuid,
                                                   const virTypedParameter *params,
                                                   int nparams);

/* The pid in @dir/@name.pid, or 0 when missing or malformed. */
GPid pt_libvirt_pid_read(const char *dir, const char *name);
