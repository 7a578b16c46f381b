/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of explain: the engine's view of one iothread with the
 * figures only the daemon has (the host, the polling CPU in use, the next
 * tick), and where the policy in force comes from.
 */
#include "pt-daemon-explain.h"
#include "pt-daemon-private.h"
#include "pt-daemon-step.h"
#include "pt-daemon-targets.h"
#include "pt-tick.h"

PolicyExplain *
pt_daemon_explain(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    gint64 now_ms = g_get_real_time() / 1000;
    gint64 tick_ms = pt_daemon_tick_now_ms(d);
    /* The last tick's start plus the interval; before the first tick, one
     * interval from now. */
    gint64 next = tick_ms > 0 ? tick_ms + d->conf->interval_ms : now_ms + d->conf->interval_ms;
    PolicyExplainContext ctx = {
        .host = pt_daemon_get_host(d),
        .host_polling_cores = pt_daemon_polling_cores(d),
        .next_tick_ms = MAX(next, now_ms),
    };
    g_autoptr(GPtrArray) strings = g_ptr_array_new_with_free_func(g_free);
    PolicyIothreadInput in = pt_daemon_policy_input(t, io, strings);
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func((GDestroyNotify)g_ptr_array_unref);

    /* An override on any member of the group pins it. */
    in.members = pt_group_member_ids(t, io, ids);
    if (!pt_daemon_get_host(d)->when_ms)
        ctx.host = NULL;
    return policy_engine_explain(d->engine, &ctx, &in, now_ms);
}

const char *
pt_daemon_policy_source(PtDaemon *d, const char *target, const char *iothread, char **detail)
{
    const PolicyConfig *policy = d->conf->policy;
    PtTarget *t = pt_daemon_find_target(d, target);
    const PolicySpec *spec = policy_config_lookup_named(policy, target, t ? t->display : NULL,
                                                        iothread);
    const char *file = d->conf->path ? d->conf->path : "the configuration";

    for (guint i = 0; i < policy->rules->len; i++) {
        const PolicyRule *r = policy->rules->pdata[i];

        if (&r->spec != spec)
            continue;
        switch (r->origin) {
        case POLICY_ORIGIN_LIBVIRT_METADATA:
            *detail = g_strdup_printf("<polltune:policy> in the metadata of libvirt domain %s",
                                      r->glob);
            break;
        case POLICY_ORIGIN_POLICY_SET:
            *detail = g_strdup_printf("rule %s set with policy-set by %s", r->glob,
                                      r->who ? r->who : "?");
            break;
        default:
            *detail = g_strdup_printf("[rule %s] of %s", r->glob, file);
            break;
        }
        return policy_origin_to_string(r->origin);
    }
    *detail = g_strdup_printf("default of %s", file);
    return "default";
}
