/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Decisions leave the daemon here: a write through the target's channel,
 * then one row per decision with its outcome, and the iothread's memory of
 * its last decision.
 */
#include "pt-daemon-record.h"
#include "pt-daemon-private.h"
#include "pt-log.h"

StoreTriple
pt_store_triple(const PolicyTriple *t)
{
    return (StoreTriple){ (gint64)MIN(t->poll_max_ns, (guint64)G_MAXINT64),
                          (gint64)MIN(t->poll_grow, (guint64)G_MAXINT64),
                          (gint64)MIN(t->poll_shrink, (guint64)G_MAXINT64) };
}

PolicyDecision *
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
const char *
pt_iothread_policy_key(const PtIothread *io)
{
    return io->group ? io->group : io->id;
}


typedef struct {
    PtDaemon *d;
    PolicyDecision *dec;
    PolicyTriple old;
    char *policy;
    gboolean restore;
} PtApplyCtx;

void
pt_daemon_record(PtDaemon *d, PtTarget *t, const PolicyDecision *dec,
                 const PolicyTriple *old, const char *policy, PtOutcome outcome,
                 const char *failure)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *reason = NULL;
    g_autofree char *outcome_text = pt_outcome_format(outcome, failure);
    PtIothread *io = g_hash_table_lookup(t->iothreads, dec->iothread);
    StoreDecision sd = {
        .ts_ms = g_get_real_time() / 1000,
        .target = t->name,
        .iothread = dec->iothread,
        .policy = policy,
        .old_triple = pt_store_triple(old),
        .new_triple = pt_store_triple(&dec->triple),
        .cause = policy_cause_to_string(dec->cause),
        .applied = outcome == PT_OUTCOME_APPLIED,
    };

    reason = dec->evidence && *dec->evidence ?
        g_strdup_printf("%s [%s]", dec->reason, dec->evidence) : g_strdup(dec->reason);
    if (outcome == PT_OUTCOME_FAILED) {
        char *r = g_strdup_printf("%s; %s", reason, outcome_text);

        g_free(reason);
        reason = r;
    }
    sd.reason = reason;
    if (!store_decision_insert(d->store, &sd, &err))
        pt_warn(t->name, dec->iothread, "store: decision: %s", err->message);
    if (io) {
        policy_decision_free(io->last_decision);
        io->last_decision = pt_decision_copy(dec);
        io->last_outcome = outcome;
        g_free(io->last_failure);
        io->last_failure = g_strdup(failure);
        g_free(io->last_policy);
        io->last_policy = g_strdup(policy);
        io->last_decision_ms = sd.ts_ms;
        io->last_old = *old;
    }
    /* While writes fail, their state says so once (pt_write_failed()). */
    if (!io || !io->write_failures || outcome == PT_OUTCOME_RECOMMENDED)
        pt_info(t->name, dec->iothread, "%s %s -> %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                "/%" G_GUINT64_FORMAT ": %s", policy, outcome_text, dec->triple.poll_max_ns,
                dec->triple.poll_grow, dec->triple.poll_shrink, dec->reason);
}

/* A write to @io failed (@why), or did not take: back off (pt-target.h). */
static void
pt_write_failed(PtTarget *t, PtIothread *io, const char *why)
{
    guint backoff;

    io->write_failures++;
    backoff = MIN((guint64)PT_WRITE_BACKOFF_FIRST_MS << MIN(io->write_failures - 1, 20u),
                  (guint64)PT_WRITE_BACKOFF_MAX_MS);
    io->write_retry_at_us = g_get_monotonic_time() + (gint64)backoff * 1000;
    if (io->write_failures == 1)
        pt_warn(t->name, io->id, "writes fail: %s; not written again for %u s, then backing "
                "off up to %u min while they fail", why, backoff / 1000,
                PT_WRITE_BACKOFF_MAX_MS / 60000);
}

gboolean
pt_daemon_write_held(const PtIothread *io, gint64 now_us)
{
    return io->write_verify || now_us < io->write_retry_at_us;
}

void
pt_daemon_verify_write(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    io->write_verify = FALSE;
    if (policy_triple_equal(&io->triple, &io->write_expect)) {
        if (io->write_failures)
            pt_info(t->name, io->id, "writes take again after %u that failed or had no "
                    "effect", io->write_failures);
        io->write_failures = 0;
        io->write_retry_at_us = 0;
    } else if (policy_triple_equal(&io->triple, &io->write_from)) {
        g_autofree char *want = policy_triple_format(&io->write_expect);
        g_autofree char *have = policy_triple_format(&io->triple);
        g_autofree char *why = g_strdup_printf("QEMU answered the write of %s but still "
                                               "reports %s", want, have);

        pt_write_failed(t, io, why);
        /* The decision shown as the last one is this write: it did not
         * take, whatever the answer said (the store's row keeps what the
         * write's answer was). */
        if (io->last_decision && io->last_outcome == PT_OUTCOME_APPLIED &&
            policy_triple_equal(&io->last_decision->triple, &io->write_expect)) {
            io->last_outcome = PT_OUTCOME_NOT_TAKEN;
            g_free(io->last_failure);
            io->last_failure = g_strdup(why);
        }
    }
    /* Anything else is a write of someone else's since: the policy holds
     * it as an external write, which is no failure of ours. */
}


static void
pt_daemon_applied(PtTarget *t, const GError *error, gpointer data)
{
    PtApplyCtx *ctx = data;
    PtDaemon *d = ctx->d;

    {
        PtIothread *io = g_hash_table_lookup(t->iothreads, ctx->dec->iothread);

        if (io && ctx->restore)
            io->restoring = FALSE;
        if (io && io->writes_in_flight) {
            io->writes_in_flight--;
            io->write_done_us = g_get_monotonic_time();
            /* Some knobs may have taken and others not. */
            if (error)
                io->have_read = FALSE;
        }
    }
    if (error) {
        PtIothread *io = g_hash_table_lookup(t->iothreads, ctx->dec->iothread);

        d->stats.decisions_failed++;
        if (io)
            pt_write_failed(t, io, error->message);
        pt_daemon_record(d, t, ctx->dec, &ctx->old, ctx->policy, PT_OUTCOME_FAILED,
                         error->message);
    } else {
        PtIothread *io = g_hash_table_lookup(t->iothreads, ctx->dec->iothread);

        d->stats.decisions_applied++;
        if (io) {
            io->triple = ctx->dec->triple;
            /* Read back: the next sample says whether it took. */
            io->write_verify = TRUE;
            io->write_expect = ctx->dec->triple;
            io->write_from = ctx->old;
            io->write_done_us = g_get_monotonic_time();
        }
        pt_daemon_record(d, t, ctx->dec, &ctx->old, ctx->policy, PT_OUTCOME_APPLIED, NULL);
    }
    if (ctx->restore && d->pending_restores)
        d->pending_restores--;
    if (!ctx->restore && d->pending_applies)
        d->pending_applies--;
    policy_decision_free(ctx->dec);
    g_free(ctx->policy);
    g_free(ctx);
}

void
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
    if (io) {
        io->writes_in_flight++;
        io->written = dec->triple;
        io->have_written = TRUE;
    }
    pt_target_apply(t, dec->iothread, &dec->triple, bound, pt_daemon_applied, ctx);
}
