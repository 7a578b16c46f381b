/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Per-domain policies from libvirt metadata (docs/LIBVIRT.md).
 *
 * An orchestrator sets <polltune:policy> in a domain's metadata; the
 * daemon reads it whenever it lists the domains (at connect, on domain
 * start, and on libvirt's metadata-change event) and turns it into a rule
 * for exactly that domain.  The rules stand after those set with
 * policy-set and before the configuration's, so the order of precedence is
 * override, policy-set, metadata, configuration rule, default:
 *
 *   conf->policy->rules = [ policy-set rules | metadata rules | file rules ]
 *
 * Metadata that does not parse is refused with a warning naming the domain
 * and the cause, and whatever applied before keeps applying.
 */
#include "pt-daemon-private.h"
#include "pt-libvirt-metadata.h"
#include "pt-log.h"

typedef struct {
    char *domain;
    char *policy;               /* formatted spec */
} PtMetadataRule;

static void
pt_metadata_rule_free(gpointer p)
{
    PtMetadataRule *r = p;

    g_free(r->domain);
    g_free(r->policy);
    g_free(r);
}

static GPtrArray *
pt_metadata_rules(PtDaemon *d)
{
    if (!d->metadata_rules)
        d->metadata_rules = g_ptr_array_new_with_free_func(pt_metadata_rule_free);
    return d->metadata_rules;
}

static gint
pt_metadata_index(PtDaemon *d, const char *domain)
{
    GPtrArray *rules = pt_metadata_rules(d);

    for (guint i = 0; i < rules->len; i++)
        if (g_str_equal(((PtMetadataRule *)rules->pdata[i])->domain, domain))
            return (gint)i;
    return -1;
}

/* Puts a rule for @domain at @at of @policy's rules. */
static gboolean
pt_metadata_install(PolicyConfig *policy, guint at, const char *domain, const char *text,
                    GError **error)
{
    PolicySpec spec;

    if (!policy_spec_parse(text, &spec, error) ||
        !policy_config_add_rule(policy, domain, &spec, error))
        return FALSE;
    g_ptr_array_insert(policy->rules, (gint)at,
                       g_ptr_array_steal_index(policy->rules, policy->rules->len - 1));
    return TRUE;
}

static void
pt_metadata_remove(PtDaemon *d, guint i)
{
    g_ptr_array_remove_index(d->conf->policy->rules, d->runtime_rules->len + i);
    g_ptr_array_remove_index(d->metadata_rules, i);
}

/* The policy text of @xml, checked as a rule for @domain would be. */
static char *
pt_metadata_policy(PtDaemon *d, const char *domain, const char *xml, GError **error)
{
    g_autofree char *text = pt_libvirt_policy_metadata_parse(xml, error);
    PolicySpec spec;

    if (!text)
        return NULL;
    /* A rule's glob is the domain's name: one with glob characters would
     * match other domains too. */
    if (strpbrk(domain, "*?[")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "the domain name has glob characters, so no rule can name it alone");
        return NULL;
    }
    if (!policy_spec_parse(text, &spec, error))
        return NULL;
    if (spec.kind == POLICY_KIND_STATIC &&
        !policy_config_check_triple(d->conf->policy, &spec.triple, error))
        return NULL;
    return policy_spec_format(&spec);
}

void
pt_daemon_metadata_update(PtDaemon *d, const char *domain, const char *xml,
                          const char *read_error)
{
    gint i = pt_metadata_index(d, domain);
    PtMetadataRule *old = i >= 0 ? d->metadata_rules->pdata[i] : NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *policy = NULL;
    PtMetadataRule *r;

    if (read_error) {
        pt_warn(domain, NULL, "libvirt metadata: cannot read the polltune policy element: %s; "
                "the policy stays %s", read_error, old ? old->policy : "the configuration's");
        return;
    }
    if (!xml) {
        if (!old)
            return;
        pt_info(domain, NULL, "libvirt metadata: the polltune policy element (%s) was removed; "
                "the configuration's policy applies again", old->policy);
        pt_metadata_remove(d, (guint)i);
        return;
    }
    if (!(policy = pt_metadata_policy(d, domain, xml, &err))) {
        g_autofree char *shown = g_strescape(xml, NULL);

        pt_warn(domain, NULL, "libvirt metadata <polltune:policy> refused: %s (in \"%.200s\"); "
                "the policy stays %s", err->message, shown,
                old ? old->policy : "the configuration's");
        return;
    }
    if (old && g_str_equal(old->policy, policy))
        return;
    if (old)
        pt_metadata_remove(d, (guint)i);
    if (!pt_metadata_install(d->conf->policy, d->runtime_rules->len + d->metadata_rules->len,
                             domain, policy, &err))
        g_assert_not_reached();     /* checked by pt_metadata_policy() */
    r = g_new0(PtMetadataRule, 1);
    r->domain = g_strdup(domain);
    r->policy = g_strdup(policy);
    g_ptr_array_add(d->metadata_rules, r);
    pt_info(domain, NULL, "policy %s from libvirt metadata", policy);
}

void
pt_daemon_metadata_install_all(PtDaemon *d, PolicyConfig *policy)
{
    GPtrArray *rules = pt_metadata_rules(d);

    for (guint i = 0; i < rules->len;) {
        PtMetadataRule *r = rules->pdata[i];
        g_autoptr(GError) err = NULL;

        if (!pt_metadata_install(policy, d->runtime_rules->len + i, r->domain, r->policy,
                                 &err)) {
            pt_warn(r->domain, NULL, "policy %s from libvirt metadata no longer fits the "
                    "configuration: %s; dropped until the metadata changes", r->policy,
                    err->message);
            g_ptr_array_remove_index(rules, i);
            continue;
        }
        i++;
    }
}

const char *
pt_daemon_metadata_rule_at(PtDaemon *d, guint index)
{
    GPtrArray *rules = pt_metadata_rules(d);
    guint n_rt = d->runtime_rules->len;

    if (index < n_rt || index >= n_rt + rules->len)
        return NULL;
    return ((PtMetadataRule *)rules->pdata[index - n_rt])->domain;
}
