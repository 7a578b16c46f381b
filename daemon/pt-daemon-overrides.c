/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Overrides set with polltunectl: a triple that holds an iothread in place
 * of its policy until cleared or expired.  The policy engine owns the list
 * (policy_engine_add_override()); the store keeps it across restarts: every
 * change is written through, and the list is read back at start.
 */
#include "pt-daemon-overrides.h"
#include "pt-daemon-private.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-targets.h"
#include "pt-log.h"

gboolean
pt_daemon_external_hold_for(PtDaemon *d, const char *target, const char *iothread,
                            PolicyTriple *triple, gint64 *since_ms, gint64 *until_ms)
{
    return policy_engine_external_hold(d->engine, target, iothread, g_get_real_time() / 1000,
                                       triple, since_ms, until_ms);
}

const PolicyOverrideInfo *
pt_daemon_override_for(PtDaemon *d, const char *target, const char *iothread)
{
    return policy_engine_find_override(d->engine, POLICY_ORIGIN_OVERRIDE, target, iothread,
                                       g_get_real_time() / 1000);
}

/* A stored override as the engine holds it: a member the store has as
 * NULL keeps the iothread's live value.  It replaces the engine's entry
 * for the same target and iothread, whose id goes to @replaced_id. */
static gboolean
pt_override_from_row(PolicyEngine *engine, const StoreOverrideRow *row, gint64 *replaced_id,
                     GError **error)
{
    const StoreOverride *ov = &row->ov;
    PolicyOverrideInfo o = {
        .target = (char *)ov->target,
        .iothread = (char *)ov->iothread,
        .expires_ms = ov->expires_ms == METRIC_ABSENT ? 0 : ov->expires_ms,
        .origin = POLICY_ORIGIN_OVERRIDE,
        .id = ov->id,
        .who = (char *)ov->who,
        .reason = (char *)ov->reason,
        .set_ms = ov->created_ms,
        .keep_grow = ov->triple.poll_grow == METRIC_ABSENT,
        .keep_shrink = ov->triple.poll_shrink == METRIC_ABSENT,
    };

    if (ov->triple.poll_max_ns == METRIC_ABSENT || ov->triple.poll_max_ns < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "override %" G_GINT64_FORMAT ": no poll-max-ns", ov->id);
        return FALSE;
    }
    o.triple.poll_max_ns = (guint64)ov->triple.poll_max_ns;
    o.triple.poll_grow = o.keep_grow ? 0 : (guint64)MAX(ov->triple.poll_grow, 0);
    o.triple.poll_shrink = o.keep_shrink ? 0 : (guint64)MAX(ov->triple.poll_shrink, 0);
    return policy_engine_add_override(engine, &o, replaced_id, error);
}

gboolean
pt_daemon_overrides_load(PtDaemon *d, gint64 now_ms, GError **error)
{
    g_autoptr(GPtrArray) rows = store_override_list_active(d->store, now_ms, error);

    if (!rows)
        return FALSE;
    /* Oldest first, as they were set; the store lists none that a newer
     * one replaced. */
    for (guint i = 0; i < rows->len; i++) {
        const StoreOverrideRow *row = rows->pdata[i];
        g_autoptr(GError) err = NULL;

        /* One the bounds now refuse stays in the store, and applies again
         * after a restart with bounds that admit it. */
        if (!pt_override_from_row(d->engine, row, NULL, &err))
            pt_warn(row->ov.target, row->ov.iothread, "override %" G_GINT64_FORMAT
                    " not applied: %s", row->ov.id, err->message);
    }
    return TRUE;
}

void
pt_daemon_overrides_carry(PtDaemon *d, PolicyEngine *to, gint64 now_ms)
{
    g_autoptr(GPtrArray) list = policy_engine_list_overrides(d->engine, now_ms);

    for (guint i = 0; i < list->len; i++) {
        const PolicyOverrideInfo *o = list->pdata[i];
        g_autoptr(GError) err = NULL;

        if (o->origin == POLICY_ORIGIN_OVERRIDE && !policy_engine_add_override(to, o, NULL, &err))
            pt_warn(o->target, o->iothread, "override %" G_GINT64_FORMAT
                    " not applied under the new bounds: %s", o->id, err->message);
    }
}

gboolean
pt_daemon_overrides_rewrite(PtDaemon *d, gint64 now_ms, gboolean say, guint *n)
{
    g_autoptr(GPtrArray) list = policy_engine_list_overrides(d->engine, now_ms);
    gboolean ok = TRUE;

    for (guint i = 0; i < list->len; i++) {
        const PolicyOverrideInfo *o = list->pdata[i];
        g_autoptr(GError) err = NULL;
        /* What override-set stored for it: a member kept live is NULL. */
        StoreOverride ov = {
            .id = o->id,
            .created_ms = o->set_ms,
            .expires_ms = o->expires_ms ? o->expires_ms : METRIC_ABSENT,
            .who = o->who ? o->who : "?",
            .target = o->target,
            .iothread = o->iothread,
            .triple = { (gint64)o->triple.poll_max_ns,
                        o->keep_grow ? METRIC_ABSENT : (gint64)o->triple.poll_grow,
                        o->keep_shrink ? METRIC_ABSENT : (gint64)o->triple.poll_shrink },
            .reason = o->reason,
        };

        if (o->origin != POLICY_ORIGIN_OVERRIDE)
            continue;
        if (!store_override_rewrite(d->store, &ov, &err)) {
            if (say)
                pt_warn(o->target, o->iothread, "store: override %" G_GINT64_FORMAT ": %s",
                        o->id, err->message);
            ok = FALSE;
            continue;
        }
        (*n)++;
    }
    return ok;
}

void
pt_daemon_overrides_expire(PtDaemon *d, gint64 now_ms)
{
    g_autoptr(GPtrArray) gone = policy_engine_take_expired(d->engine, POLICY_ORIGIN_OVERRIDE,
                                                           now_ms);

    /* The store needs no write: a row past its expiry is not active. */
    for (guint i = 0; i < gone->len; i++) {
        const PolicyOverrideInfo *o = gone->pdata[i];

        pt_info(o->target, o->iothread, "override %" G_GINT64_FORMAT
                " expired; control returns to the policy", o->id);
    }
}

gboolean
pt_daemon_override_set(PtDaemon *d, const char *target, const char *iothread,
                       gint64 poll_max_ns, gint64 poll_grow, gint64 poll_shrink,
                       gint64 for_ms, const char *who, const char *reason,
                       gint64 *id_out, gint64 *expires_out, gint64 *replaced_out,
                       GError **error)
{
    PtTarget *t = pt_daemon_find_target(d, target);
    gint64 now_ms = g_get_real_time() / 1000;
    StoreOverride ov = { 0 };
    StoreOverrideRow row = { 0 };
    PolicyTriple check;
    gint64 id, replaced = 0;
    g_autofree char *replaces = NULL;

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
    if (for_ms < 0 || for_ms > PT_OVERRIDE_FOR_MAX_MS) {
        g_autofree char *span = pt_format_duration(for_ms);

        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "for: %s is outside 1ms.." PT_OVERRIDE_FOR_MAX_TEXT, span);
        return FALSE;
    }
    check = (PolicyTriple){ poll_max_ns, poll_grow < 0 ? 0 : poll_grow,
                            poll_shrink < 0 ? 0 : poll_shrink };
    if (!policy_config_check_triple(d->conf->policy, &check, error))
        return FALSE;
    ov.created_ms = now_ms;
    ov.expires_ms = for_ms > 0 ? now_ms + for_ms : METRIC_ABSENT;
    ov.who = who;
    ov.target = target;
    ov.iothread = iothread;
    ov.triple = (StoreTriple){ poll_max_ns, poll_grow < 0 ? METRIC_ABSENT : poll_grow,
                               poll_shrink < 0 ? METRIC_ABSENT : poll_shrink };
    ov.reason = reason;
    /* Into a new file only once the others are in again: its ids would
     * otherwise be theirs. */
    pt_daemon_originals_on_disk(d);
    if (!store_override_set(d->store, &ov, &id, error))
        return FALSE;
    ov.id = id;
    row.ov = ov;
    /* The store has ended the override this one replaces; so does the
     * engine. */
    if (!pt_override_from_row(d->engine, &row, &replaced, error)) {
        /* Not in force, so not kept either, and the replaced one has
         * ended in the store: end it here too, so both agree. */
        store_override_clear(d->store, id, now_ms, NULL);
        policy_engine_clear_override(d->engine, target, iothread);
        return FALSE;
    }
    replaces = replaced ? g_strdup_printf("; replaces override %" G_GINT64_FORMAT, replaced)
                        : g_strdup("");
    pt_info(target, iothread, "override %" G_GINT64_FORMAT " by %s: poll-max-ns=%"
            G_GINT64_FORMAT "%s%s", id, who ? who : "?", poll_max_ns,
            for_ms > 0 ? " (with expiry)" : "", replaces);
    if (id_out)
        *id_out = id;
    if (expires_out)
        *expires_out = ov.expires_ms;
    if (replaced_out)
        *replaced_out = replaced;
    return TRUE;
}

guint
pt_daemon_override_clear(PtDaemon *d, const char *target, const char *iothread,
                         gint64 id, GError **error)
{
    gint64 now_ms = g_get_real_time() / 1000;
    g_autoptr(GPtrArray) list = NULL;
    guint n = 0;

    if (id <= 0 && !target) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "override-clear: neither an id nor a target");
        return 0;
    }
    pt_daemon_originals_on_disk(d);
    list = policy_engine_list_overrides(d->engine, now_ms);
    for (guint i = 0; i < list->len; i++) {
        const PolicyOverrideInfo *o = list->pdata[i];
        gboolean hit = o->origin == POLICY_ORIGIN_OVERRIDE &&
            (id > 0 ? o->id == id :
             g_str_equal(o->target, target) && g_strcmp0(o->iothread, iothread) == 0);

        if (!hit)
            continue;
        /* The store first: an override it still holds would come back at
         * the next start. */
        if (!store_override_clear(d->store, o->id, now_ms, error))
            return n;
        policy_engine_remove_override(d->engine, o->id);
        pt_info(o->target, o->iothread, "override %" G_GINT64_FORMAT " cleared", o->id);
        n++;
    }
    if (!n)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "no active override matches");
    return n;
}
