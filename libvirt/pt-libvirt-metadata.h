/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt-metadata: polltune's element in a libvirt domain's <metadata>.
 *
 * Orchestrators put per-VM settings where libvirt keeps them for the
 * domain: an element in the application's own namespace (docs/LIBVIRT.md),
 *   <polltune:policy xmlns:polltune="https://polltune.org/xmlns/policy/1">
 *     adaptive:latency
 *   </polltune:policy>
 * set with `virsh metadata DOMAIN --uri NS --key polltune --set
 * '<policy>adaptive:latency</policy>'` (libvirt adds the namespace and the
 * prefix named by --key).
 * virDomainGetMetadata(VIR_DOMAIN_METADATA_ELEMENT, PT_LIBVIRT_POLICY_NS)
 * returns the element alone; this module takes its text out.  Pure: no
 * libvirt call, so the parser is tested and fuzzed on its own.
 */
#pragma once

#include <glib.h>

#define PT_LIBVIRT_POLICY_NS "https://polltune.org/xmlns/policy/1"

/*
 * The policy text of @xml, the element virDomainGetMetadata() returned,
 * trimmed of surrounding white space.  Fails naming the cause when @xml is
 * not one <policy> element (with any prefix) holding text only.  The text
 * itself is not checked here: that is the policy grammar's job.
 */
char *pt_libvirt_policy_metadata_parse(const char *xml, GError **error);
