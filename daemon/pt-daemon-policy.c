/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The daemon's side of decisions: feeding the policy engine, applying what
 * it decides, recording every decision with its outcome, overrides, and
 * putting original values back.
 */
#include "pt-daemon-private.h"
#include "pt-log.h"
#include "qmp-client.h"

#include <errno.h>
#include <glib/gstdio.h>

static StoreTriple
pt_store_triple(const PolicyTriple *t)
{
    return (StoreTriple){ (gint64)MIN(t->poll_max_ns, (guint64)G_MAXINT64),
                          (gint64)MIN(t->poll_grow, (guint64)G_MAXINT64),
                          (gint64)MIN(t->poll_shrink, (guint64)G_MAXINT64) };
}

static PolicyDecision *
pt_decision_copy(const PolicyDecision *src)
{
    PolicyDecision *d = g_new0(PolicyDecision, 1);

    *d = *src;
    d->target = g_strdup(src->target);
    d->iothread = g_strdup(src->iothread);
    d->reason = g_strdup(src->reason);
    d->evidence = g_strdup(src->evidence);
    return d;
}

/* The iothread the engine knows: a group's first one stands for it all. */
static const char *
pt_iothread_policy_key(const PtIothread *io)
{
    return io->group ? io->group : io->id;
}

PolicyIothreadInput
pt_daemon_policy_input(PtTarget *t, PtIothread *io)
{
    return (PolicyIothreadInput){
        .target = t->name,
        .iothread = pt_iothread_policy_key(io),
        .current = io->triple,
        .history = (const PolicyMetrics *)io->history->data,
        .n_history = io->history->len,
        .n_iothreads = 1,
        .qemu_version = t->qemu_version,
        .poll_model = policy_poll_model_for_version(t->qemu_version),
    };
}

/* ---- recording --------------------------------------------------------- */

typedef struct {
    PtDaemon *d;
    PolicyDecision *dec;
    PolicyTriple old;
    char *policy;
    gboolean restore;
} PtApplyCtx;

static void
pt_daemon_record(PtDaemon *d, PtTarget *t, const PolicyDecision *dec,
                 const PolicyTriple *old, const char *policy, const char *outcome,
                 gboolean applied)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *reason = NULL;
    PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);
    StoreDecision sd = {
        .ts_ms = g_get_real_time() / 1000,
        .target = t->name,
        .iothread = dec->iothread,
        .policy = policy,
        .old_triple = pt_store_triple(old),
        .new_triple = pt_store_triple(&dec->triple),
        .cause = policy_cause_to_string(dec->cause),
        .applied = applied,
    };

    reason = dec->evidence && *dec->evidence ?
        g_strdup_printf("%s [%s]", dec->reason, dec->evidence) : g_strdup(dec->reason);
    if (g_str_has_prefix(outcome, "failed")) {
        char *r = g_strdup_printf("%s; %s", reason, outcome);

        g_free(reason);
        reason = r;
    }
    sd.reason = reason;
    if (!store_decision_insert(d->store, &sd, &err))
        pt_warn(t->name, dec->iothread, "store: decision: %s", err->message);
    if (io) {
        policy_decision_free(io->last_decision);
        io->last_decision = pt_decision_copy(dec);
        g_free(io->last_outcome);
        io->last_outcome = g_strdup(outcome);
        g_free(io->last_policy);
        io->last_policy = g_strdup(policy);
        io->last_decision_ms = sd.ts_ms;
        io->last_old = *old;
    }
    pt_info(t->name, dec->iothread, "%s %s -> %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
            "/%" G_GUINT64_FORMAT ": %s", policy, outcome, dec->triple.poll_max_ns,
            dec->triple.poll_grow, dec->triple.poll_shrink, dec->reason);
}

static void pt_daemon_restore_io(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why);

static void
pt_daemon_applied(PtTarget *t, const GError *error, gpointer data)
{
    PtApplyCtx *ctx = data;
    PtDaemon *d = ctx->d;

    if (error) {
        g_autofree char *outcome = g_strdup_printf("failed: %s", error->message);

        d->stats.decisions_failed++;
        pt_daemon_record(d, t, ctx->dec, &ctx->old, ctx->policy, outcome, FALSE);
    } else {
        PtIothread *io = g_hash_table_lookup(t->iothreads, ctx->dec->iothread);

        d->stats.decisions_applied++;
        if (io)
            io->triple = ctx->dec->triple;
        pt_daemon_record(d, t, ctx->dec, &ctx->old, ctx->policy, "applied", TRUE);
        /* A write that was in flight when the stop restored the originals
         * (or found nothing to restore) would outlive us: undo it. */
        if (!ctx->restore && d->shutting_down && d->conf->restore_on_exit && io &&
            io->have_original && !policy_triple_equal(&io->original, &io->triple))
            pt_daemon_restore_io(d, t, io, "polltuned is stopping");
    }
    if (ctx->restore && d->pending_restores)
        d->pending_restores--;
    if (!ctx->restore && d->pending_applies)
        d->pending_applies--;
    policy_decision_free(ctx->dec);
    g_free(ctx->policy);
    g_free(ctx);
}

static void
pt_daemon_apply(PtDaemon *d, PtTarget *t, PolicyDecision *dec, const char *policy,
                gint64 bound, gboolean restore)
{
    PtApplyCtx *ctx = g_new0(PtApplyCtx, 1);
    PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);

    ctx->d = d;
    ctx->dec = dec;
    ctx->old = io ? io->triple : dec->triple;
    ctx->policy = g_strdup(policy);
    ctx->restore = restore;
    if (restore)
        d->pending_restores++;
    else
        d->pending_applies++;
    pt_target_apply(t, dec->iothread, &dec->triple, bound, pt_daemon_applied, ctx);
}

/* ---- originals --------------------------------------------------------- */

static void
pt_daemon_restore_io(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why)
{
    PolicyDecision *dec = g_new0(PolicyDecision, 1);

    dec->target = g_strdup(t->name);
    dec->iothread = g_strdup(io->id);
    dec->change = dec->apply = TRUE;
    dec->triple = io->original;
    dec->cause = POLICY_CAUSE_POLICY;
    dec->reason = g_strdup_printf("restore the original values: %s", why);
    dec->evidence = g_strdup("");
    /* Our own write: the policy must not hold it as someone else's. */
    policy_engine_note_write(d->engine, t->name, io->id, &io->original);
    /* The originals are the operator's own values: no bound of ours. */
    pt_daemon_apply(d, t, dec, "restore", G_MAXINT64, TRUE);
}

static PolicyTriple
pt_policy_triple(const StoreTriple *st)
{
    return (PolicyTriple){ (guint64)st->poll_max_ns, (guint64)st->poll_grow,
                           (guint64)st->poll_shrink };
}

/* Originals stored for @t's QEMU instance, or for an instance unknown on
 * either side (rows from before instances were recorded are adopted). */
static gboolean
pt_original_is_ours(const PtTarget *t, const char *stored)
{
    return !stored || !t->instance || g_str_equal(stored, t->instance);
}

void
pt_daemon_capture_original(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *instance = NULL;
    StoreTriple st;
    gint64 now_ms = g_get_real_time() / 1000;

    if (store_original_get(d->store, t->name, io->id, &st, &instance, &err)) {
        if (pt_original_is_ours(t, instance)) {
            io->original = pt_policy_triple(&st);
            io->have_original = TRUE;
            io->original_saved = TRUE;
            if (!instance && t->instance &&
                !store_original_save(d->store, t->name, io->id, &st, t->instance, now_ms,
                                     &err))
                pt_warn(t->name, io->id, "store: original values: %s", err->message);
            if (d->unclean_start && d->conf->on_restart == PT_RESTART_RESTORE &&
                !policy_triple_equal(&io->original, &io->triple))
                pt_daemon_restore_io(d, t, io, "the last run did not exit cleanly");
            return;
        }
        pt_info(t->name, io->id, "a new QEMU instance (%s, was %s): original values captured "
                "again as %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                ", replacing %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                t->instance, instance, io->triple.poll_max_ns, io->triple.poll_grow,
                io->triple.poll_shrink, st.poll_max_ns, st.poll_grow, st.poll_shrink);
        /* What the policy learnt, and the triple it last saw, were the old
         * process's: the new one's own values are no external write. */
        policy_engine_forget(d->engine, t->name);
    }
    g_clear_error(&err);
    io->original = io->triple;
    io->have_original = TRUE;
    io->original_saved = FALSE;
    pt_daemon_save_original(d, t, io);
}

/* Until the originals are in the store the policy does not write: after a
 * crash the next start could only take whatever it then finds for them. */
void
pt_daemon_save_original(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(GError) err = NULL;
    StoreTriple st = pt_store_triple(&io->original);

    if (store_original_save(d->store, t->name, io->id, &st, t->instance,
                            g_get_real_time() / 1000, &err)) {
        if (io->original_saved_failed)
            pt_info(t->name, io->id, "store: original values saved; tuning resumes");
        io->original_saved = TRUE;
        io->original_saved_failed = FALSE;
    } else if (!io->original_saved_failed) {
        pt_warn(t->name, io->id, "store: original values: %s; not tuning until they are "
                "saved", err->message);
        io->original_saved_failed = TRUE;
    }
}

guint
pt_daemon_restore_target(PtDaemon *d, PtTarget *t, const char *why)
{
    GHashTableIter it;
    gpointer v;
    guint n = 0;

    if (t->state != PT_TARGET_ATTACHED)
        return 0;
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtIothread *io = v;

        if (!io->have_original || !io->have_triple ||
            policy_triple_equal(&io->original, &io->triple))
            continue;
        pt_daemon_restore_io(d, t, io, why);
        n++;
    }
    return n;
}

/* ---- overrides --------------------------------------------------------- */

static gboolean
pt_override_matches(const StoreOverrideRow *row, const char *target, const char *iothread)
{
    return g_str_equal(row->ov.target, target) &&
           (!row->ov.iothread || !iothread || g_str_equal(row->ov.iothread, iothread));
}

gboolean
pt_daemon_external_hold_for(PtDaemon *d, const char *target, const char *iothread,
                            PolicyTriple *triple, gint64 *since_ms, gint64 *until_ms)
{
    return policy_engine_external_hold(d->engine, target, iothread, g_get_real_time() / 1000,
                                       triple, since_ms, until_ms);
}

const StoreOverrideRow *
pt_daemon_override_for(PtDaemon *d, const char *target, const char *iothread)
{
    gint64 now_ms = g_get_real_time() / 1000;

    /* The newest matching override wins; rows are oldest first. */
    for (guint i = d->overrides->len; i > 0; i--) {
        const StoreOverrideRow *row = d->overrides->pdata[i - 1];

        if ((row->ov.expires_ms == STORE_NULL || row->ov.expires_ms > now_ms) &&
            pt_override_matches(row, target, iothread) &&
            (!row->ov.iothread || (iothread && g_str_equal(row->ov.iothread, iothread))))
            return row;
    }
    return NULL;
}

static PolicyTriple
pt_override_triple(const StoreOverrideRow *row, const PolicyTriple *current)
{
    PolicyTriple t = *current;

    if (row->ov.triple.poll_max_ns != STORE_NULL)
        t.poll_max_ns = row->ov.triple.poll_max_ns;
    if (row->ov.triple.poll_grow != STORE_NULL)
        t.poll_grow = row->ov.triple.poll_grow;
    if (row->ov.triple.poll_shrink != STORE_NULL)
        t.poll_shrink = row->ov.triple.poll_shrink;
    return t;
}

/* Tell the engine about every active override, resolved per iothread. */
static void
pt_daemon_sync_overrides(PtDaemon *d, gint64 now_ms)
{
    for (guint i = 0; i < d->overrides->len;) {
        StoreOverrideRow *row = d->overrides->pdata[i];
        PtTarget *t = g_hash_table_lookup(d->targets, row->ov.target);
        GHashTableIter it;
        gpointer v;

        if (row->ov.expires_ms != STORE_NULL && row->ov.expires_ms <= now_ms) {
            pt_info(row->ov.target, row->ov.iothread, "override %" G_GINT64_FORMAT
                    " expired; control returns to the policy", row->ov.id);
            if (t) {
                g_hash_table_iter_init(&it, t->iothreads);
                while (g_hash_table_iter_next(&it, NULL, &v))
                    if (pt_override_matches(row, t->name, ((PtIothread *)v)->id))
                        policy_engine_clear_override(d->engine, t->name,
                                                     pt_iothread_policy_key(v));
            }
            g_ptr_array_remove_index(d->overrides, i);
            continue;
        }
        i++;
        if (!t)
            continue;
        g_hash_table_iter_init(&it, t->iothreads);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            PtIothread *io = v;
            const StoreOverrideRow *win = pt_daemon_override_for(d, t->name, io->id);
            g_autoptr(GError) err = NULL;
            PolicyTriple tr;

            if (win != row || !io->have_triple)
                continue;
            tr = pt_override_triple(row, io->have_original ? &io->original : &io->triple);
            if (row->ov.triple.poll_grow == STORE_NULL)
                tr.poll_grow = io->triple.poll_grow;
            if (row->ov.triple.poll_shrink == STORE_NULL)
                tr.poll_shrink = io->triple.poll_shrink;
            if (!policy_engine_set_override(d->engine, t->name, pt_iothread_policy_key(io), &tr,
                                            row->ov.expires_ms == STORE_NULL ? 0 :
                                            row->ov.expires_ms, &err))
                pt_warn(t->name, io->id, "%s", err->message);
        }
    }
}

/* ---- the policy step of a tick ----------------------------------------- */

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
static void
pt_daemon_handle_one(PtDaemon *d, PtTarget *t, PolicyDecision *dec, const char *policy)
{
    if (d->mode == PT_MODE_ENFORCE && dec->apply) {
        pt_daemon_apply(d, t, pt_decision_copy(dec), policy,
                        (gint64)d->conf->policy->max_poll_max_ns, FALSE);
    } else {
        PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);
        PolicyTriple old = io ? io->triple : dec->triple;

        /* A policy repeats its advice every tick while the load holds;
         * the store and the log keep changes, not repetitions. */
        if (io && io->last_decision && g_strcmp0(io->last_outcome, "recommended") == 0 &&
            g_strcmp0(io->last_policy, policy) == 0 &&
            policy_triple_equal(&io->last_decision->triple, &dec->triple) &&
            policy_triple_equal(&io->last_old, &old))
            return;
        d->stats.decisions_recommended++;
        pt_daemon_record(d, t, dec, &old, policy, "recommended", FALSE);
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
    g_autoptr(GPtrArray) decisions = NULL;

    if (d->mode == PT_MODE_OBSERVE || d->shutting_down)
        return;
    pt_daemon_sync_overrides(d, d->tick_now_ms);
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
            const PolicySpec *spec = policy_config_lookup(d->conf->policy, t->name, key);
            PolicyIothreadInput in = pt_daemon_policy_input(t, io);

            /* Never write an iothread whose originals are not known yet: a
             * QEMU just restarted on the same socket still shows its
             * predecessor's figures until it is sampled, and a write made
             * then would be captured as the new process's original. */
            if (!io->have_triple || !io->history->len || !io->have_original ||
                !io->original_saved)
                continue;
            if (spec->kind == POLICY_KIND_OBSERVE && !pt_daemon_override_for(d, t->name, key)) {
                if (!io->restored && io->have_original &&
                    !policy_triple_equal(&io->original, &io->triple))
                    pt_daemon_restore_io(d, t, io, "the policy is observe");
                io->restored = TRUE;
                continue;
            }
            io->restored = FALSE;
            if (io->group) {
                g_autoptr(GPtrArray) members = NULL;
                GArray *h;

                /* The group goes in once, under its first iothread. */
                if (!g_str_equal(io->group, io->id))
                    continue;
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
            }
            g_array_append_val(inputs, in);
            g_ptr_array_add(owners, t);
        }
    }
    if (!inputs->len)
        return;
    decisions = policy_engine_tick(d->engine, &d->host_metrics,
                                   (const PolicyIothreadInput *)inputs->data,
                                   inputs->len, d->tick_now_ms);
    for (guint i = 0; i < decisions->len; i++)
        pt_daemon_handle_decision(d, owners->pdata[i], decisions->pdata[i]);
}

/* ---- control operations ------------------------------------------------ */

char *
pt_daemon_policy_for(PtDaemon *d, const char *target, const char *iothread)
{
    return policy_spec_format(policy_config_lookup(d->conf->policy, target, iothread));
}

/*
 * A mode set with polltunectl holds across reloads and restarts, like the
 * rules it sets: stored before it takes effect.  Setting the mode the
 * configuration has ends it (the file rules again).
 */
gboolean
pt_daemon_set_runtime_mode(PtDaemon *d, PtMode mode, GError **error)
{
    PtMode keep = mode == d->conf->mode ? PT_MODE_INVALID : mode;

    if (mode < 0 || mode >= PT_MODE_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "invalid mode");
        return FALSE;
    }
    if (keep != d->runtime_mode && !store_runtime_mode_set(d->store, keep, error))
        return FALSE;
    if (!pt_daemon_set_mode(d, mode, error))
        return FALSE;
    d->runtime_mode = keep;
    return TRUE;
}

PtMode
pt_daemon_get_runtime_mode(PtDaemon *d)
{
    return d->runtime_mode;
}

gboolean
pt_daemon_set_mode(PtDaemon *d, PtMode mode, GError **error)
{
    GHashTableIter it;
    gpointer v;

    if (mode < 0 || mode >= PT_MODE_MAX) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT, "invalid mode");
        return FALSE;
    }
    if (mode == d->mode)
        return TRUE;
    pt_info(NULL, NULL, "mode %s -> %s", pt_mode_to_string(d->mode), pt_mode_to_string(mode));
    d->mode = mode;
    d->conf->policy->mode = mode == PT_MODE_ENFORCE ? POLICY_MODE_ENFORCE : POLICY_MODE_RECOMMEND;
    if (mode == PT_MODE_OBSERVE) {
        g_hash_table_iter_init(&it, d->targets);
        while (g_hash_table_iter_next(&it, NULL, &v))
            pt_daemon_restore_target(d, v, "mode observe");
    }
    return TRUE;
}

gboolean
pt_daemon_attach_qmp(PtDaemon *d, const char *path, const char *name, char **name_out,
                     GError **error)
{
    g_autofree char *base = NULL;

    if (!path || path[0] != '/') {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "path '%s' is not absolute", path ? path : "");
        return FALSE;
    }
    /* Refuse what is not a listening socket before anything is recorded:
     * "attach /etc/passwd" used to answer {"name": "passwd"}. */
    if (!qmp_socket_check(path, error))
        return FALSE;
    if (!pt_daemon_attach_path(d, path, name, error))
        return FALSE;
    g_hash_table_remove(d->detached_paths, path);
    if (name_out) {
        if (name) {
            *name_out = g_strdup(name);
        } else {
            char *dot;

            base = g_path_get_basename(path);
            if ((dot = strrchr(base, '.')) && dot != base)
                *dot = 0;
            *name_out = g_steal_pointer(&base);
        }
    }
    return TRUE;
}

gboolean
pt_daemon_detach(PtDaemon *d, const char *name, GError **error)
{
    PtTarget *t = pt_daemon_find_target(d, name);

    if (!t) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no such target", name);
        return FALSE;
    }
    /* The restore writes hold their own reference to the target and its
     * channel, so they complete after the target leaves our table. */
    pt_daemon_restore_target(d, t, "detach");
    /* A socket matched by qmp-globs stays detached until attached again. */
    if (t->kind == STORE_TARGET_QMP)
        g_hash_table_add(d->detached_paths, g_strdup(pt_target_qmp_path(t)));
    /* A domain stays detached until attached by name, not the next listing. */
    if (t->kind == STORE_TARGET_LIBVIRT)
        pt_daemon_libvirt_detached(d, t);
    t->detached = TRUE;
    policy_engine_forget(d->engine, t->name);
    pt_info(t->name, NULL, "detached by request");
    g_hash_table_remove(d->targets, name);
    return TRUE;
}

/* ---- policy rules set at run time ------------------------------------ */

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

gboolean
pt_daemon_override_set(PtDaemon *d, const char *target, const char *iothread,
                       gint64 poll_max_ns, gint64 poll_grow, gint64 poll_shrink,
                       gint64 for_ms, const char *who, const char *reason,
                       gint64 *id_out, gint64 *expires_out, GError **error)
{
    PtTarget *t = pt_daemon_find_target(d, target);
    gint64 now_ms = g_get_real_time() / 1000;
    StoreOverride ov = { 0 };
    PolicyTriple check;
    gint64 id;

    if (!t) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no such target", target);
        return FALSE;
    }
    if (iothread && !g_hash_table_contains(t->iothreads, iothread)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s/%s: no such iothread",
                    target, iothread);
        return FALSE;
    }
    if (poll_max_ns < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "poll-max-ns: %" G_GINT64_FORMAT " is negative", poll_max_ns);
        return FALSE;
    }
    check = (PolicyTriple){ poll_max_ns, poll_grow < 0 ? 0 : poll_grow,
                            poll_shrink < 0 ? 0 : poll_shrink };
    if (!policy_config_check_triple(d->conf->policy, &check, error))
        return FALSE;
    ov.created_ms = now_ms;
    ov.expires_ms = for_ms > 0 ? now_ms + for_ms : STORE_NULL;
    ov.who = who;
    ov.target = target;
    ov.iothread = iothread;
    ov.triple = (StoreTriple){ poll_max_ns, poll_grow < 0 ? STORE_NULL : poll_grow,
                               poll_shrink < 0 ? STORE_NULL : poll_shrink };
    ov.reason = reason;
    if (!store_override_set(d->store, &ov, &id, error))
        return FALSE;
    /* Read the active set back, so memory and the store cannot differ. */
    {
        g_autoptr(GPtrArray) rows = store_override_list_active(d->store, now_ms, error);

        if (!rows)
            return FALSE;
        g_ptr_array_set_size(d->overrides, 0);
        for (guint i = 0; i < rows->len; i++)
            g_ptr_array_add(d->overrides, g_steal_pointer(&rows->pdata[i]));
    }
    pt_info(target, iothread, "override %" G_GINT64_FORMAT " by %s: poll-max-ns=%"
            G_GINT64_FORMAT "%s", id, who ? who : "?", poll_max_ns,
            for_ms > 0 ? " (with expiry)" : "");
    if (id_out)
        *id_out = id;
    if (expires_out)
        *expires_out = ov.expires_ms;
    return TRUE;
}

guint
pt_daemon_override_clear(PtDaemon *d, const char *target, const char *iothread,
                         gint64 id, GError **error)
{
    gint64 now_ms = g_get_real_time() / 1000;
    guint n = 0;

    for (guint i = 0; i < d->overrides->len;) {
        StoreOverrideRow *row = d->overrides->pdata[i];
        gboolean hit = id >= 0 ? row->ov.id == id :
            g_str_equal(row->ov.target, target) && g_strcmp0(row->ov.iothread, iothread) == 0;
        PtTarget *t;

        if (!hit) {
            i++;
            continue;
        }
        if (!store_override_clear(d->store, row->ov.id, now_ms, error))
            return n;
        if ((t = g_hash_table_lookup(d->targets, row->ov.target))) {
            GHashTableIter it;
            gpointer v;

            g_hash_table_iter_init(&it, t->iothreads);
            while (g_hash_table_iter_next(&it, NULL, &v))
                if (pt_override_matches(row, t->name, ((PtIothread *)v)->id))
                    policy_engine_clear_override(d->engine, t->name,
                                                 pt_iothread_policy_key(v));
        }
        pt_info(row->ov.target, row->ov.iothread, "override %" G_GINT64_FORMAT " cleared",
                row->ov.id);
        g_ptr_array_remove_index(d->overrides, i);
        n++;
    }
    if (!n)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no active override matches");
    return n;
}

/* ---- shutdown ---------------------------------------------------------- */

typedef struct {
    PtDaemon *d;
    GCallback done;
    gpointer user_data;
    gint64 deadline_us;
} PtShutdown;

static gboolean
pt_daemon_shutdown_poll(gpointer data)
{
    PtShutdown *s = data;

    if ((s->d->pending_restores || s->d->pending_applies) &&
        g_get_monotonic_time() < s->deadline_us)
        return G_SOURCE_CONTINUE;
    if (s->d->pending_restores)
        pt_warn(NULL, NULL, "%u restores did not complete in time", s->d->pending_restores);
    /* Left behind, the marker makes the next start take this clean stop
     * for a crash, and on-restart then acts on it: say so. */
    if (s->d->run_marker && g_unlink(s->d->run_marker) != 0 && errno != ENOENT) {
        int e = errno;

        pt_warn(NULL, NULL, "%s: cannot remove the run marker: %s; the next start will take "
                "this stop for a crash (on-restart=%s) unless it is removed",
                s->d->run_marker, g_strerror(e), pt_restart_to_string(s->d->conf->on_restart));
    }
    ((void (*)(gpointer))s->done)(s->user_data);
    g_free(s);
    return G_SOURCE_REMOVE;
}

void
pt_daemon_shutdown(PtDaemon *d, guint timeout_ms, GCallback done, gpointer user_data)
{
    PtShutdown *s = g_new0(PtShutdown, 1);
    GHashTableIter it;
    gpointer v;

    s->d = d;
    s->done = done;
    s->user_data = user_data;
    s->deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    d->shutting_down = TRUE;
    g_clear_handle_id(&d->timer, g_source_remove);
    if (d->conf->restore_on_exit) {
        g_hash_table_iter_init(&it, d->targets);
        while (g_hash_table_iter_next(&it, NULL, &v))
            pt_daemon_restore_target(d, v, "polltuned is stopping");
    }
    g_timeout_add(20, pt_daemon_shutdown_poll, s);
}
