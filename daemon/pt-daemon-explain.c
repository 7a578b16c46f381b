/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of explain: the engine's view of one iothread with the
 * figures only the daemon has (the host, the polling CPU in use, the next
 * tick), and where the policy in force comes from.
 */
#include "pt-daemon-private.h"

PolicyExplain *
pt_daemon_explain(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    gint64 now_ms = g_get_real_time() / 1000;
    /* The last tick's start plus the interval; before the first tick, one
     * interval from now. */
    gint64 next = d->tick_now_ms > 0 ? d->tick_now_ms + d->conf->interval_ms
                                     : now_ms + d->conf->interval_ms;
    PolicyExplainContext ctx = {
        .host = &d->host_metrics,
        .host_polling_cores = pt_daemon_polling_cores(d),
        .next_tick_ms = MAX(next, now_ms),
    };
    PolicyIothreadInput in = pt_daemon_policy_input(t, io);

    if (!d->host_metrics.when_ms)
        ctx.host = NULL;
    return policy_engine_explain(d->engine, &ctx, &in, now_ms);
}

const char *
pt_daemon_policy_source(PtDaemon *d, const char *target, const char *iothread, char **detail)
{
    const PolicyConfig *policy = d->conf->policy;
    const PolicySpec *spec = policy_config_lookup(policy, target, iothread);

    *detail = NULL;
    for (guint i = 0; i < policy->rules->len; i++) {
        const PolicyRule *r = policy->rules->pdata[i];
        const StorePolicyRule *rt;

        if (&r->spec != spec)
            continue;
        if (pt_daemon_metadata_rule_at(d, i)) {
            *detail = g_strdup_printf("<polltune:policy> in the metadata of libvirt domain %s",
                                      r->glob);
            return "libvirt-metadata";
        }
        if ((rt = pt_daemon_runtime_rule_at(d, i))) {
            *detail = g_strdup_printf("rule %s set with policy-set by %s", r->glob, rt->who);
            return "policy-set";
        }
        *detail = g_strdup_printf("[rule %s] of %s", r->glob,
                                  d->conf->path ? d->conf->path : "the configuration");
        return "config";
    }
    *detail = g_strdup_printf("default of %s", d->conf->path ? d->conf->path
                                                             : "the configuration");
    return "default";
}
