/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy rules in force: which rule holds for an iothread, and the rules
 * set at run time with policy-set, kept in front of the file's.
 */
#include "pt-daemon-rules.h"
#include "pt-daemon-private.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-targets.h"
#include "pt-log.h"

char *
pt_daemon_policy_for(PtDaemon *d, const char *target, const char *iothread)
{
    PtTarget *t = pt_daemon_find_target(d, target);

    return policy_spec_format(policy_config_lookup_named(d->conf->policy, target,
                                                         t ? t->display : NULL, iothread));
}

/* Puts stored @rule in front of @policy's rules of lower origins. */
static gboolean
pt_rule_install(PolicyConfig *policy, const StorePolicyRule *rule, GError **error)
{
    PolicySpec spec;

    return policy_spec_parse(rule->policy, &spec, error) &&
           policy_config_set_rule(policy, POLICY_ORIGIN_POLICY_SET, rule->glob, &spec,
                                  rule->who, rule->set_ms, error);
}

gboolean
pt_daemon_install_rules(const PolicyConfig *from, PolicyConfig *policy, GError **error)
{
    for (guint i = 0; i < from->rules->len; i++) {
        const PolicyRule *r = from->rules->pdata[i];

        if (r->origin != POLICY_ORIGIN_POLICY_SET)
            continue;
        /* Name the first rule @policy cannot take, as the operator set it. */
        if (r->spec.kind == POLICY_KIND_STATIC &&
            !policy_config_check_triple(policy, &r->spec.triple, error)) {
            g_prefix_error(error, "the rule for %s set with policy-set by %s does not fit "
                           "(remove it with `polltunectl policy clear '%s'`): ",
                           r->glob, r->who, r->glob);
            return FALSE;
        }
    }
    return policy_config_copy_rules(policy, from, POLICY_ORIGIN_POLICY_SET, error);
}

gboolean
pt_daemon_load_rules(PtDaemon *d, GError **error)
{
    g_autoptr(GPtrArray) rules = store_policy_rule_list(d->store, error);
    guint n = 0;

    if (!rules)
        return FALSE;
    /* Oldest first, each in front of the last: the newest wins. */
    for (guint i = 0; i < rules->len; i++) {
        StorePolicyRule *r = rules->pdata[i];
        g_autoptr(GError) err = NULL;

        if (!pt_rule_install(d->conf->policy, r, &err)) {
            /* Kept in the store: a later configuration may take it. */
            pt_warn(NULL, NULL, "policy rule for %s (%s, set by %s) not applied: %s; "
                    "`polltunectl policy clear '%s'` removes it", r->glob, r->policy, r->who,
                    err->message, r->glob);
            continue;
        }
        n++;
    }
    if (n)
        pt_info(NULL, NULL, "%u policy rules from policy-set restored", n);
    return TRUE;
}

gboolean
pt_daemon_policy_set(PtDaemon *d, const char *glob, const char *spec_text, const char *who,
                     GError **error)
{
    g_autoptr(StorePolicyRule) rule = NULL;
    PolicySpec spec;

    if (!glob || !*glob) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "target: empty");
        return FALSE;
    }
    if (!policy_spec_parse(spec_text, &spec, error))
        return FALSE;
    if (spec.kind == POLICY_KIND_STATIC &&
        !policy_config_check_triple(d->conf->policy, &spec.triple, error))
        return FALSE;
    rule = g_new0(StorePolicyRule, 1);
    rule->glob = g_strdup(glob);
    rule->policy = policy_spec_format(&spec);
    rule->set_ms = g_get_real_time() / 1000;
    rule->who = g_strdup(who ? who : "?");
    /* Stored first: a rule that would not outlive a restart is refused. */
    pt_daemon_originals_on_disk(d);
    if (!store_policy_rule_set(d->store, rule->glob, rule->policy, rule->who, rule->set_ms,
                               error))
        return FALSE;
    if (!pt_rule_install(d->conf->policy, rule, error))
        g_assert_not_reached();     /* checked above */
    pt_info(NULL, NULL, "policy for %s set to %s by %s", glob, spec_text, who ? who : "?");
    return TRUE;
}

gboolean
pt_daemon_policy_clear(PtDaemon *d, const char *glob, GError **error)
{
    if (!policy_config_find_rule(d->conf->policy, POLICY_ORIGIN_POLICY_SET, glob)) {
        if (policy_config_find_rule(d->conf->policy, POLICY_ORIGIN_CONFIG, glob))
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: the rule comes from "
                        "%s, not from policy-set: edit the file and reload", glob,
                        d->conf->path ? d->conf->path : "the configuration");
        else
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no policy-set rule "
                        "for this glob", glob);
        return FALSE;
    }
    pt_daemon_originals_on_disk(d);
    if (!store_policy_rule_clear(d->store, glob, error))
        return FALSE;
    policy_config_clear_rule(d->conf->policy, POLICY_ORIGIN_POLICY_SET, glob);
    pt_info(NULL, NULL, "policy rule for %s cleared", glob);
    return TRUE;
}

gboolean
pt_daemon_rules_rewrite(PtDaemon *d, gboolean say, guint *n)
{
    gboolean ok = TRUE;

    for (guint i = 0; i < d->conf->policy->rules->len; i++) {
        const PolicyRule *r = d->conf->policy->rules->pdata[i];
        g_autoptr(GError) err = NULL;
        g_autofree char *spec = NULL;

        if (r->origin != POLICY_ORIGIN_POLICY_SET)
            continue;
        spec = policy_spec_format(&r->spec);
        if (!store_policy_rule_set(d->store, r->glob, spec, r->who ? r->who : "?", r->set_ms,
                                   &err)) {
            if (say)
                pt_warn(NULL, NULL, "store: policy rule for %s: %s", r->glob, err->message);
            ok = FALSE;
            continue;
        }
        (*n)++;
    }
    return ok;
}
