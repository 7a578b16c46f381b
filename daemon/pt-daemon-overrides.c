/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Overrides set with polltunectl: a triple that holds an iothread in place
 * of its policy until cleared or expired.
 */
#include "pt-daemon-private.h"
#include "pt-log.h"

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
void
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
