/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-domain policies from libvirt metadata (docs/LIBVIRT.md).
 *
 * An orchestrator sets <polltune:policy> in a domain's metadata; the
 * daemon reads it whenever it lists the domains (at connect, on domain
 * start, and on libvirt's metadata-change event) and turns it into a rule
 * of origin POLICY_ORIGIN_LIBVIRT_METADATA for exactly that domain, which
 * the engine ranks above the configuration's rules and below policy-set
 * and overrides.  Metadata that does not parse is refused with a warning
 * naming the domain and the cause, and whatever applied before keeps
 * applying.
 */
#include "pt-daemon-metadata.h"
#include "pt-daemon-private.h"
#include "pt-libvirt-metadata.h"
#include "pt-log.h"

#include <string.h>

/* The policy text of @xml, checked as a rule for @domain would be. */
static gboolean
pt_metadata_policy(PtDaemon *d, const char *domain, const char *xml, PolicySpec *spec,
                   GError **error)
{
    g_autofree char *text = pt_libvirt_policy_metadata_parse(xml, error);

    if (!text)
        return FALSE;
    /* A rule's glob is the domain's name: one with glob characters would
     * match other domains too. */
    if (strpbrk(domain, "*?[")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "the domain name has glob characters, so no rule can name it alone");
        return FALSE;
    }
    if (!policy_spec_parse(text, spec, error))
        return FALSE;
    return spec->kind != POLICY_KIND_STATIC ||
           policy_config_check_triple(d->conf->policy, &spec->triple, error);
}

void
pt_daemon_metadata_update(PtDaemon *d, const char *domain, const char *xml,
                          const char *read_error)
{
    PolicyConfig *policy = d->conf->policy;
    const PolicyRule *old = policy_config_find_rule(policy, POLICY_ORIGIN_LIBVIRT_METADATA,
                                                    domain);
    g_autofree char *was = old ? policy_spec_format(&old->spec) : NULL;
    g_autofree char *now = NULL;
    g_autoptr(GError) err = NULL;
    PolicySpec spec;

    if (read_error) {
        pt_warn(domain, NULL, "libvirt metadata: cannot read the polltune policy element: %s; "
                "the policy stays %s", read_error, was ? was : "the configuration's");
        return;
    }
    if (!xml) {
        if (!old)
            return;
        pt_info(domain, NULL, "libvirt metadata: the polltune policy element (%s) was removed; "
                "the configuration's policy applies again", was);
        policy_config_clear_rule(policy, POLICY_ORIGIN_LIBVIRT_METADATA, domain);
        return;
    }
    if (!pt_metadata_policy(d, domain, xml, &spec, &err)) {
        g_autofree char *shown = g_strescape(xml, NULL);

        pt_warn(domain, NULL, "libvirt metadata <polltune:policy> refused: %s (in \"%.200s\"); "
                "the policy stays %s", err->message, shown, was ? was : "the configuration's");
        return;
    }
    now = policy_spec_format(&spec);
    if (g_strcmp0(was, now) == 0)
        return;
    if (!policy_config_set_rule(policy, POLICY_ORIGIN_LIBVIRT_METADATA, domain, &spec,
                                "libvirt metadata", 0, &err))
        g_assert_not_reached();     /* checked by pt_metadata_policy() */
    pt_info(domain, NULL, "policy %s from libvirt metadata", now);
}

void
pt_daemon_metadata_install_all(PtDaemon *d, PolicyConfig *policy)
{
    const GPtrArray *from = d->conf->policy->rules;

    /* Oldest last in the list: set from the back so that the order stays. */
    for (guint i = from->len; i > 0; i--) {
        const PolicyRule *r = from->pdata[i - 1];
        g_autoptr(GError) err = NULL;

        if (r->origin != POLICY_ORIGIN_LIBVIRT_METADATA)
            continue;
        if (!policy_config_set_rule(policy, r->origin, r->glob, &r->spec, r->who, r->set_ms,
                                    &err)) {
            g_autofree char *spec = policy_spec_format(&r->spec);

            pt_warn(r->glob, NULL, "policy %s from libvirt metadata no longer fits the "
                    "configuration: %s; dropped until the metadata changes", spec,
                    err->message);
        }
    }
}
