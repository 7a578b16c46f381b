/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy rules in force: which rule holds for an iothread, and the rules
 * set at run time with policy-set, kept in front of the file's.
 */
#include "pt-daemon-private.h"
#include "pt-log.h"

char *
pt_daemon_policy_for(PtDaemon *d, const char *target, const char *iothread)
{
    return policy_spec_format(policy_config_lookup(d->conf->policy, target, iothread));
}

/* Puts @rule in front of @policy's rules, so that it wins. */
static gboolean
pt_rule_install(PolicyConfig *policy, const StorePolicyRule *rule, GError **error)
{
    PolicySpec spec;

    if (!policy_spec_parse(rule->policy, &spec, error) ||
        !policy_config_add_rule(policy, rule->glob, &spec, error))
        return FALSE;
    g_ptr_array_insert(policy->rules, 0,
                       g_ptr_array_steal_index(policy->rules, policy->rules->len - 1));
    return TRUE;
}

gboolean
pt_daemon_install_rules(GPtrArray *rules, PolicyConfig *policy, GError **error)
{
    for (guint i = 0; i < rules->len; i++) {
        const StorePolicyRule *r = rules->pdata[i];

        if (!pt_rule_install(policy, r, error)) {
            g_prefix_error(error, "the rule for %s set with policy-set by %s does not fit "
                           "(remove it with `polltunectl policy clear '%s'`): ",
                           r->glob, r->who, r->glob);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
pt_daemon_load_rules(PtDaemon *d, GError **error)
{
    g_autoptr(GPtrArray) rules = store_policy_rule_list(d->store, error);

    if (!rules)
        return FALSE;
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
        g_ptr_array_add(d->runtime_rules, g_steal_pointer(&rules->pdata[i]));
    }
    if (d->runtime_rules->len)
        pt_info(NULL, NULL, "%u policy rules from policy-set restored", d->runtime_rules->len);
    return TRUE;
}

static gint
pt_runtime_rule_index(PtDaemon *d, const char *glob)
{
    for (guint i = 0; i < d->runtime_rules->len; i++)
        if (g_str_equal(((StorePolicyRule *)d->runtime_rules->pdata[i])->glob, glob))
            return (gint)i;
    return -1;
}

const StorePolicyRule *
pt_daemon_runtime_rule_at(PtDaemon *d, guint index)
{
    guint n = d->runtime_rules->len;

    return index < n ? d->runtime_rules->pdata[n - 1 - index] : NULL;
}

/* Drops runtime rule @i from memory and from the policy in force. */
static void
pt_runtime_rule_remove(PtDaemon *d, guint i)
{
    guint n = d->runtime_rules->len;

    g_ptr_array_remove_index(d->conf->policy->rules, n - 1 - i);
    g_ptr_array_remove_index(d->runtime_rules, i);
}

gboolean
pt_daemon_policy_set(PtDaemon *d, const char *glob, const char *spec_text, const char *who,
                     GError **error)
{
    g_autoptr(StorePolicyRule) rule = NULL;
    PolicySpec spec;
    gint old;

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
    if (!store_policy_rule_set(d->store, rule->glob, rule->policy, rule->who, rule->set_ms,
                               error))
        return FALSE;
    old = pt_runtime_rule_index(d, glob);
    if (old >= 0)
        pt_runtime_rule_remove(d, (guint)old);
    if (!pt_rule_install(d->conf->policy, rule, error))
        g_assert_not_reached();     /* checked above */
    g_ptr_array_add(d->runtime_rules, g_steal_pointer(&rule));
    pt_info(NULL, NULL, "policy for %s set to %s by %s", glob, spec_text, who ? who : "?");
    return TRUE;
}

gboolean
pt_daemon_policy_clear(PtDaemon *d, const char *glob, GError **error)
{
    gint i = pt_runtime_rule_index(d, glob);

    if (i < 0) {
        gboolean in_file = FALSE;

        for (guint k = 0; k < d->conf->policy->rules->len; k++)
            in_file |= g_str_equal(((PolicyRule *)d->conf->policy->rules->pdata[k])->glob,
                                   glob);
        if (in_file)
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: the rule comes from "
                        "%s, not from policy-set: edit the file and reload", glob,
                        d->conf->path ? d->conf->path : "the configuration");
        else
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no policy-set rule "
                        "for this glob", glob);
        return FALSE;
    }
    if (!store_policy_rule_clear(d->store, glob, error))
        return FALSE;
    pt_runtime_rule_remove(d, (guint)i);
    pt_info(NULL, NULL, "policy rule for %s cleared", glob);
    return TRUE;
}
