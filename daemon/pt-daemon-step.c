/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy step of a tick: the sampled iothreads (groups as one) go to
 * the engine, and each decision is applied or recorded by the mode.
 */
#include "pt-daemon-step.h"
#include "pt-daemon-private.h"
#include "pt-daemon-memory.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-overrides.h"
#include "pt-daemon-record.h"
#include "pt-daemon-rules.h"
#include "pt-tick.h"
#include "pt-log.h"

/* The members of @io's group in @t (just @io when alone), by id. */
static GPtrArray *
pt_group_members(PtTarget *t, PtIothread *io)
{
    GPtrArray *members = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;

    if (!io->group) {
        g_ptr_array_add(members, io);
        return members;
    }
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (g_strcmp0(((PtIothread *)v)->group, io->group) == 0)
            g_ptr_array_add(members, v);
    return members;
}

const char *const *
pt_group_member_ids(PtTarget *t, PtIothread *io, GPtrArray *keep)
{
    g_autoptr(GPtrArray) members = NULL;
    GPtrArray *ids;

    if (!io->group)
        return NULL;
    members = pt_group_members(t, io);
    ids = g_ptr_array_sized_new(members->len + 1);
    for (guint k = 0; k < members->len; k++)
        g_ptr_array_add(ids, ((PtIothread *)members->pdata[k])->id);
    g_ptr_array_add(ids, NULL);
    g_ptr_array_add(keep, ids);
    return (const char *const *)ids->pdata;
}

/*
 * Whether an operator's override pins @io: one on any member of its group
 * pins the whole group, which the engine decides as one.
 */
static gboolean
pt_group_overridden(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(GPtrArray) members = pt_group_members(t, io);

    for (guint i = 0; i < members->len; i++)
        if (pt_daemon_override_for(d, t->name, ((PtIothread *)members->pdata[i])->id))
            return TRUE;
    return FALSE;
}

/*
 * One tick of a group as the policy sees it: the block figures are the
 * group's already (the same on every member); CPU figures are summed, since
 * each member polls on a core of its own, and the run-queue wait is the
 * worst member's.
 */
static void
pt_group_metrics_add(PolicyMetrics *acc, const PolicyMetrics *m)
{
    double iops;

    acc->have_io = acc->have_io && m->have_io;
    if (!acc->have_cpu || !m->have_cpu) {
        acc->have_cpu = FALSE;
        acc->cpu_pct = acc->blocks_per_s = acc->blocks_per_op = 0;
        acc->nvcsw_per_s = acc->run_delay_pct = 0;
        return;
    }
    acc->cpu_pct += m->cpu_pct;
    acc->blocks_per_s += m->blocks_per_s;
    acc->nvcsw_per_s += m->nvcsw_per_s;
    acc->run_delay_pct = MAX(acc->run_delay_pct, m->run_delay_pct);
    iops = policy_metrics_iops(acc);
    acc->blocks_per_op = acc->have_io && iops > 0 ? acc->blocks_per_s / iops : 0;
}

/* The group's history, aligned on the newest tick, as long as the
 * shortest member's. */
static GArray *
pt_group_history(GPtrArray *members)
{
    GArray *h = g_array_new(FALSE, TRUE, sizeof(PolicyMetrics));
    guint n = G_MAXUINT;

    for (guint i = 0; i < members->len; i++)
        n = MIN(n, ((PtIothread *)members->pdata[i])->history->len);
    for (guint k = 0; k < n; k++) {
        PolicyMetrics acc = { 0 };

        for (guint i = 0; i < members->len; i++) {
            const PtIothread *io = members->pdata[i];
            const PolicyMetrics *m = &g_array_index(io->history, PolicyMetrics,
                                                    io->history->len - n + k);

            if (i == 0)
                acc = *m;
            else
                pt_group_metrics_add(&acc, m);
        }
        g_array_append_val(h, acc);
    }
    return h;
}

/* Apply or record @dec on one iothread; @dec->iothread names it. */
PolicyIothreadInput
pt_daemon_policy_input(PtTarget *t, PtIothread *io, GPtrArray *keep)
{
    char *device_key = pt_daemon_device_key(t, io);

    if (device_key)
        g_ptr_array_add(keep, device_key);
    return (PolicyIothreadInput){
        .target = t->name,
        .name = t->display,
        .iothread = pt_iothread_policy_key(io),
        .current = io->triple,
        .history = (const PolicyMetrics *)io->history->data,
        .n_history = io->history->len,
        .n_iothreads = 1,
        .qemu_version = t->qemu_version,
        .poll_model = policy_poll_model_for_version(t->qemu_version),
        .device_key = device_key,
    };
}

static void
pt_daemon_handle_one(PtDaemon *d, PtTarget *t, PolicyDecision *dec, const char *policy)
{
    if (d->mode == PT_MODE_ENFORCE && dec->apply) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);

        /* Not while the last write waits to be read back, nor while
         * writes back off after failing (pt-target.h): the policy asks
         * again on a later tick. */
        if (io && pt_daemon_write_held(io, g_get_monotonic_time()))
            return;
        /* The file may have gone since the tick began: never a write
         * while an original is nowhere on disk. */
        if (!pt_daemon_originals_on_disk(d))
            return;
        pt_daemon_apply(d, t, pt_decision_copy(dec), policy,
                        (gint64)d->conf->policy->max_poll_max_ns, FALSE);
    } else {
        PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);
        PolicyTriple old = io ? io->triple : dec->triple;

        /* A policy repeats its advice every tick while the load holds;
         * the store and the log keep changes, not repetitions. */
        if (io && io->last_decision && io->last_outcome == PT_OUTCOME_RECOMMENDED &&
            g_strcmp0(io->last_policy, policy) == 0 &&
            policy_triple_equal(&io->last_decision->triple, &dec->triple) &&
            policy_triple_equal(&io->last_old, &old))
            return;
        d->stats.decisions_recommended++;
        pt_daemon_record(d, t, dec, &old, policy, PT_OUTCOME_RECOMMENDED, NULL);
    }
}

/*
 * A decision for a group holds for each member: the same triple goes to
 * every one, each written only where it differs.  A member left on another
 * triple (set before the group formed, or by hand) is brought in line when
 * the daemon enforces, even on a tick without a change.
 */
static void
pt_daemon_handle_decision(PtDaemon *d, PtTarget *t, PolicyDecision *dec)
{
    PtIothread *lead = g_hash_table_lookup(t->iothreads, dec->iothread);
    g_autoptr(GPtrArray) members = NULL;
    g_autofree char *policy = NULL;

    if (!lead || !lead->group) {
        if (!dec->change)
            return;
        policy = dec->cause == POLICY_CAUSE_OVERRIDE ? g_strdup("override") :
                 pt_daemon_policy_for(d, t->name, dec->iothread);
        pt_daemon_handle_one(d, t, dec, policy);
        return;
    }
    policy = dec->cause == POLICY_CAUSE_OVERRIDE ? g_strdup("override") :
             pt_daemon_policy_for(d, t->name, lead->group);
    members = pt_group_members(t, lead);
    for (guint i = 0; i < members->len; i++) {
        PtIothread *io = members->pdata[i];
        g_autoptr(PolicyDecision) one = NULL;

        if (!io->have_triple || !io->have_original || !io->original_saved ||
            policy_triple_equal(&io->triple, &dec->triple))
            continue;
        if (!dec->change && d->mode != PT_MODE_ENFORCE)
            continue;
        one = pt_decision_copy(dec);
        g_free(one->iothread);
        one->iothread = g_strdup(io->id);
        if (!dec->change) {
            g_free(one->reason);
            one->reason = g_strdup_printf("align with group %s, which runs one triple",
                                          lead->group);
            one->change = one->apply = TRUE;
        } else {
            g_free(one->reason);
            one->reason = g_strdup_printf("%s (group %s of %u iothreads sharing devices)",
                                          dec->reason, lead->group, members->len);
        }
        pt_daemon_handle_one(d, t, one, policy);
    }
}

void
pt_daemon_run_policy(PtDaemon *d, GPtrArray *targets)
{
    g_autoptr(GArray) inputs = g_array_new(FALSE, TRUE, sizeof(PolicyIothreadInput));
    g_autoptr(GPtrArray) owners = g_ptr_array_new();
    g_autoptr(GPtrArray) group_histories = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_array_unref);
    /* The member ids of each group handed to the engine, kept while it runs. */
    g_autoptr(GPtrArray) group_ids = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_ptr_array_unref);
    g_autoptr(GPtrArray) strings = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GPtrArray) decisions = NULL;

    if (d->mode == PT_MODE_OBSERVE || d->shutting_down)
        return;
    pt_daemon_overrides_expire(d, pt_daemon_tick_now_ms(d));
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        GHashTableIter it;
        gpointer v;

        if (t->detached || t->state != PT_TARGET_ATTACHED)
            continue;
        g_hash_table_iter_init(&it, t->iothreads);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            PtIothread *io = v;
            const char *key = pt_iothread_policy_key(io);
            /* A group follows the rule that matches its first iothread. */
            const PolicySpec *spec = policy_config_lookup_named(d->conf->policy, t->name,
                                                                t->display, key);
            PolicyIothreadInput in;

            /* Never write an iothread whose originals are not known yet: a
             * QEMU just restarted on the same socket still shows its
             * predecessor's figures until it is sampled, and a write made
             * then would be captured as the new process's original. */
            if (!io->have_triple || !io->history->len || !io->have_original ||
                !io->original_saved)
                continue;
            if (spec->kind == POLICY_KIND_OBSERVE && !pt_group_overridden(d, t, io)) {
                if (!io->restored && io->have_original &&
                    !policy_triple_equal(&io->original, &io->triple))
                    pt_daemon_restore_io(d, t, io, "the policy is observe");
                io->restored = TRUE;
                continue;
            }
            io->restored = FALSE;
            /* The group goes in once, under its first iothread. */
            if (io->group && !g_str_equal(io->group, io->id))
                continue;
            in = pt_daemon_policy_input(t, io, strings);
            pt_daemon_memory_prepare(d, t, key);
            if (io->group) {
                g_autoptr(GPtrArray) members = NULL;
                GArray *h;

                members = pt_group_members(t, io);
                h = pt_group_history(members);
                if (!h->len) {
                    g_array_unref(h);
                    continue;
                }
                g_ptr_array_add(group_histories, h);
                in.history = (const PolicyMetrics *)h->data;
                in.n_history = h->len;
                in.n_iothreads = members->len;
                in.members = pt_group_member_ids(t, io, group_ids);
            }
            g_array_append_val(inputs, in);
            g_ptr_array_add(owners, t);
        }
    }
    if (!inputs->len)
        return;
    decisions = policy_engine_tick(d->engine, pt_daemon_get_host(d),
                                   (const PolicyIothreadInput *)inputs->data,
                                   inputs->len, pt_daemon_tick_now_ms(d));
    pt_daemon_memory_save(d);
    for (guint i = 0; i < decisions->len; i++)
        pt_daemon_handle_decision(d, owners->pdata[i], decisions->pdata[i]);
}
