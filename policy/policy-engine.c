/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-engine: one tick of decisions.
 *
 * Order of precedence for each iothread:
 *   1. an unexpired override (wins over everything, dwell included): of
 *      the operator's, the newest that covers the iothread, its group or
 *      its target; else an external write held as an implicit one;
 *   2. the policy its spec names (observe, off, static, qemu-default,
 *      adaptive), with the triple clamped into the bounds;
 *   3. for adaptive, the host guards: contention, then budget;
 *   4. the minimum dwell between writes, which defers a change.
 */
#include <stdarg.h>

#include "policy-private.h"

typedef PolicyOverrideInfo PolicyOverride;

struct _PolicyEngine {
    const PolicyConfig *config;
    GHashTable *states;         /* key -> PolicyIothreadState */
    GPtrArray *overrides;       /* PolicyOverride * */
    PolicyEngineMemories memories;
};

PolicyEngineMemories *
policy_engine_memories(PolicyEngine *e)
{
    return &e->memories;
}

const PolicyEngineMemories *
policy_engine_memories_const(const PolicyEngine *e)
{
    return &e->memories;
}

void
policy_override_info_free(PolicyOverrideInfo *o)
{
    if (!o)
        return;
    g_free(o->target);
    g_free(o->iothread);
    g_free(o->who);
    g_free(o->reason);
    g_free(o);
}

static void
override_free(gpointer p)
{
    policy_override_info_free(p);
}

static PolicyOverride *
override_copy(const PolicyOverride *o)
{
    PolicyOverride *c = g_memdup2(o, sizeof(*o));

    c->target = g_strdup(o->target);
    c->iothread = g_strdup(o->iothread);
    c->who = g_strdup(o->who);
    c->reason = g_strdup(o->reason);
    return c;
}

static gboolean
override_live(const PolicyOverride *o, gint64 now_ms)
{
    return !o->expires_ms || now_ms < o->expires_ms;
}

GPtrArray *
policy_engine_list_overrides(const PolicyEngine *e, gint64 now_ms)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(override_free);

    for (guint i = 0; i < e->overrides->len; i++) {
        const PolicyOverride *o = g_ptr_array_index(e->overrides, i);

        if (override_live(o, now_ms))
            g_ptr_array_add(out, override_copy(o));
    }
    return out;
}

GPtrArray *
policy_engine_take_expired(PolicyEngine *e, PolicyOrigin origin, gint64 now_ms)
{
    GPtrArray *out = g_ptr_array_new_with_free_func(override_free);

    for (guint i = 0; i < e->overrides->len;) {
        PolicyOverride *o = g_ptr_array_index(e->overrides, i);

        if (o->origin == origin && !override_live(o, now_ms))
            g_ptr_array_add(out, g_ptr_array_steal_index(e->overrides, i));
        else
            i++;
    }
    return out;
}

static void
state_free(gpointer p)
{
    PolicyIothreadState *st = p;

    if (!st)
        return;
    g_free(st->key);
    g_free(st->mem_note);
    g_free(st);
}

void
policy_decision_free(PolicyDecision *d)
{
    if (!d)
        return;
    g_free(d->target);
    g_free(d->iothread);
    g_free(d->reason);
    g_free(d->evidence);
    g_free(d);
}

PolicyEngine *
policy_engine_new(const PolicyConfig *config, GError **error)
{
    PolicyEngine *e;

    if (!policy_config_validate(config, error))
        return NULL;
    e = g_new0(PolicyEngine, 1);
    e->config = config;
    e->states = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, state_free);
    e->overrides = g_ptr_array_new_with_free_func(override_free);
    policy_engine_memories_init(&e->memories);
    return e;
}

void
policy_engine_free(PolicyEngine *e)
{
    if (!e)
        return;
    g_hash_table_unref(e->states);
    g_ptr_array_unref(e->overrides);
    policy_engine_memories_clear(&e->memories);
    g_free(e);
}

/* The entry of @origin set for exactly @target and @iothread, by index. */
static gint
override_index(const PolicyEngine *e, PolicyOrigin origin, const char *target,
               const char *iothread)
{
    for (guint i = 0; i < e->overrides->len; i++) {
        const PolicyOverride *o = g_ptr_array_index(e->overrides, i);

        if (o->origin == origin && g_str_equal(o->target, target) &&
            g_strcmp0(o->iothread, iothread) == 0)
            return (gint)i;
    }
    return -1;
}

gboolean
policy_engine_add_override(PolicyEngine *e, const PolicyOverrideInfo *o, gint64 *replaced_id,
                           GError **error)
{
    PolicyTriple check = o->triple;
    gint old;

    if (replaced_id)
        *replaced_id = 0;
    if (!o->target || !*o->target) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "override: empty target");
        return FALSE;
    }
    if (o->origin != POLICY_ORIGIN_OVERRIDE && o->origin != POLICY_ORIGIN_EXTERNAL_WRITE) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "override %s: origin %s is not one of an override", o->target,
                    policy_origin_to_string(o->origin) ? policy_origin_to_string(o->origin) :
                    "(invalid)");
        return FALSE;
    }
    if (o->keep_grow)
        check.poll_grow = 0;
    if (o->keep_shrink)
        check.poll_shrink = 0;
    if (!policy_config_check_triple(e->config, &check, error)) {
        g_prefix_error(error, "override %s%s%s: ", o->target, o->iothread ? "/" : "",
                       o->iothread ? o->iothread : "");
        return FALSE;
    }
    /* A value set again replaces the one before, as a write to QEMU
     * would: stacked, the older would come back when the newer ended. */
    old = override_index(e, o->origin, o->target, o->iothread);
    if (old >= 0) {
        if (replaced_id)
            *replaced_id = ((PolicyOverride *)g_ptr_array_index(e->overrides, (guint)old))->id;
        g_ptr_array_remove_index(e->overrides, (guint)old);
    }
    g_ptr_array_add(e->overrides, override_copy(o));
    return TRUE;
}

gboolean
policy_engine_remove_override(PolicyEngine *e, gint64 id)
{
    for (guint i = 0; id && i < e->overrides->len; i++) {
        if (((PolicyOverride *)g_ptr_array_index(e->overrides, i))->id == id) {
            g_ptr_array_remove_index(e->overrides, i);
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
policy_engine_set_override(PolicyEngine *e, const char *target, const char *iothread,
                           const PolicyTriple *triple, gint64 expires_ms, GError **error)
{
    PolicyOverrideInfo o = {
        .target = (char *)target,
        .iothread = (char *)iothread,
        .triple = *triple,
        .expires_ms = expires_ms,
        .origin = POLICY_ORIGIN_OVERRIDE,
    };

    return policy_engine_add_override(e, &o, NULL, error);
}

gboolean
policy_engine_clear_override(PolicyEngine *e, const char *target, const char *iothread)
{
    gint i = override_index(e, POLICY_ORIGIN_OVERRIDE, target, iothread);

    if (i < 0)
        return FALSE;
    g_ptr_array_remove_index(e->overrides, (guint)i);
    return TRUE;
}

/* Does @o cover @iothread, or one of @members when it stands for a group? */
static gboolean
override_covers(const PolicyOverride *o, const char *target, const char *iothread,
                const char *const *members)
{
    if (!g_str_equal(o->target, target))
        return FALSE;
    if (!o->iothread)
        return TRUE;
    if (g_strcmp0(o->iothread, iothread) == 0)
        return TRUE;
    for (guint i = 0; members && members[i]; i++)
        if (g_strcmp0(o->iothread, members[i]) == 0)
            return TRUE;
    return FALSE;
}

/* The newest live entry of @origin covering the iothread (or group). */
static const PolicyOverride *
override_newest(const PolicyEngine *e, PolicyOrigin origin, const char *target,
                const char *iothread, const char *const *members, gint64 now_ms)
{
    for (guint i = e->overrides->len; i > 0; i--) {
        const PolicyOverride *o = g_ptr_array_index(e->overrides, i - 1);

        if (o->origin == origin && override_live(o, now_ms) &&
            override_covers(o, target, iothread, members))
            return o;
    }
    return NULL;
}

const PolicyOverrideInfo *
policy_engine_override_in_force(const PolicyEngine *e, const PolicyIothreadInput *in,
                                gint64 now_ms)
{
    return override_newest(e, POLICY_ORIGIN_OVERRIDE, in->target, in->iothread, in->members,
                           now_ms);
}

const PolicyOverrideInfo *
policy_engine_find_override(const PolicyEngine *e, PolicyOrigin origin, const char *target,
                            const char *iothread, gint64 now_ms)
{
    return override_newest(e, origin, target, iothread, NULL, now_ms);
}

void
policy_engine_forget(PolicyEngine *e, const char *target)
{
    g_autofree char *prefix = g_strdup_printf("%s/", target);
    GHashTableIter it;
    gpointer key;

    g_hash_table_iter_init(&it, e->states);
    while (g_hash_table_iter_next(&it, &key, NULL))
        if (g_str_has_prefix(key, prefix))
            g_hash_table_iter_remove(&it);
    /* An external write was seen on the target that went away; an
     * operator's override outlives it. */
    for (guint i = 0; i < e->overrides->len;) {
        const PolicyOverride *o = g_ptr_array_index(e->overrides, i);

        if (o->origin == POLICY_ORIGIN_EXTERNAL_WRITE && g_str_equal(o->target, target))
            g_ptr_array_remove_index(e->overrides, i);
        else
            i++;
    }
}

/*
 * The operator override in force on the input (the newest that covers it or
 * a member of its group); those expired are dropped and noted.
 */
static const PolicyOverride *
override_find(PolicyEngine *e, const PolicyIothreadInput *in, gint64 now_ms,
              gboolean *expired)
{
    for (guint i = 0; i < e->overrides->len;) {
        const PolicyOverride *o = g_ptr_array_index(e->overrides, i);

        if (o->origin == POLICY_ORIGIN_OVERRIDE && !override_live(o, now_ms) &&
            override_covers(o, in->target, in->iothread, in->members)) {
            *expired = TRUE;
            g_ptr_array_remove_index(e->overrides, i);
        } else {
            i++;
        }
    }
    return policy_engine_override_in_force(e, in, now_ms);
}

static PolicyIothreadState *
state_get(PolicyEngine *e, const PolicyIothreadInput *in)
{
    g_autofree char *key = g_strdup_printf("%s/%s", in->target, in->iothread);
    PolicyIothreadState *st = g_hash_table_lookup(e->states, key);

    if (!st) {
        st = g_new0(PolicyIothreadState, 1);
        st->key = g_steal_pointer(&key);
        st->last_write_ms = G_MININT64;
        st->holdoff_until_ms = G_MININT64;
        for (guint i = 0; i < G_N_ELEMENTS(st->write_log); i++)
            st->write_log[i] = G_MININT64;
        st->write_epoch_ms = G_MININT64;
        st->phase_start_ms = G_MININT64;
        g_hash_table_insert(e->states, st->key, st);
    }
    return st;
}

void
policy_proposal_set(PolicyProposal *p, const PolicyTriple *t, PolicyCause cause,
                    const char *fmt, ...)
{
    va_list ap;

    p->triple = *t;
    p->cause = cause;
    g_string_truncate(p->reason, 0);
    va_start(ap, fmt);
    g_string_append_vprintf(p->reason, fmt, ap);
    va_end(ap);
}

void
policy_engine_note_write(PolicyEngine *e, const char *target, const char *iothread,
                         const PolicyTriple *t)
{
    /* The state may not exist yet: a restore after an unclean exit is
     * written before the policy first sees the iothread, which then still
     * reads the crashed run's triple. */
    PolicyIothreadInput in = { .target = target, .iothread = iothread };
    PolicyIothreadState *st = state_get(e, &in);

    st->own_write.made = TRUE;
    st->own_write.triple = *t;
}

gboolean
policy_cause_is_own_write(PolicyCause cause)
{
    switch (cause) {
    case POLICY_CAUSE_IDLE:
    case POLICY_CAUSE_PROBE:
    case POLICY_CAUSE_ACCEPT:
    case POLICY_CAUSE_ROLLBACK:
    case POLICY_CAUSE_REMEMBERED:
        return TRUE;
    default:
        return FALSE;
    }
}

static int
ms_cmp(const void *a, const void *b)
{
    gint64 x = *(const gint64 *)a, y = *(const gint64 *)b;

    return x < y ? -1 : x > y;
}

void
policy_engine_writes_restore(PolicyEngine *e, const char *target, const char *iothread,
                             const gint64 *ts_ms, guint n)
{
    PolicyIothreadInput in = { .target = target, .iothread = iothread };
    PolicyIothreadState *st = state_get(e, &in);
    g_autofree gint64 *sorted = n ? g_memdup2(ts_ms, n * sizeof(*ts_ms)) : NULL;

    for (guint i = 0; i < G_N_ELEMENTS(st->write_log); i++)
        st->write_log[i] = G_MININT64;
    st->write_log_next = 0;
    if (!n)
        return;
    qsort(sorted, n, sizeof(*sorted), ms_cmp);
    /* The ring keeps the newest; older ones count in no window the newest do not. */
    for (guint i = n > G_N_ELEMENTS(st->write_log) ? n - G_N_ELEMENTS(st->write_log) : 0; i < n;
         i++)
        policy_writes_note(st, sorted[i]);
}

GArray *
policy_engine_writes_recent(const PolicyEngine *e, const char *target, const char *iothread)
{
    g_autofree char *key = g_strdup_printf("%s/%s", target, iothread);
    const PolicyIothreadState *st = g_hash_table_lookup(e->states, key);
    GArray *out = g_array_new(FALSE, FALSE, sizeof(gint64));

    for (guint i = 0; st && i < G_N_ELEMENTS(st->write_log); i++)
        if (st->write_log[i] != G_MININT64)
            g_array_append_val(out, st->write_log[i]);
    return out;
}

gboolean
policy_engine_external_hold(const PolicyEngine *e, const char *target, const char *iothread,
                            gint64 now_ms, PolicyTriple *triple, gint64 *since_ms,
                            gint64 *until_ms)
{
    const PolicyOverride *o = override_newest(e, POLICY_ORIGIN_EXTERNAL_WRITE, target,
                                              iothread, NULL, now_ms);

    if (!o || !o->iothread)
        return FALSE;
    if (triple)
        *triple = o->triple;
    if (since_ms)
        *since_ms = o->set_ms;
    if (until_ms)
        *until_ms = o->expires_ms;
    return TRUE;
}

/*
 * Notice writes we did not make: QEMU's window restarted, our model is
 * stale, and someone chose this triple.  The input that says so is the live
 * triple differing from both the last one seen and what we last wrote.
 * The write goes into the override list, replacing the one seen before on
 * the iothread.
 */
static void
observe_current(PolicyEngine *e, PolicyIothreadState *st, const PolicyIothreadInput *in,
                gint64 now_ms)
{
    const PolicyConfig *cfg = e->config;

    if (!st->seen)
        st->baseline = in->current;
    if (st->seen && !policy_triple_equal(&st->last_current, &in->current)) {
        gboolean ours = st->own_write.made &&
                        policy_triple_equal(&st->own_write.triple, &in->current);

        if (!ours) {
            st->baseline = in->current;
            st->last_write_ms = now_ms;
            policy_adaptive_enter(st, POLICY_ADAPTIVE_NEW);
            if (cfg->external_hold_ms > 0) {
                PolicyOverrideInfo o = {
                    .target = (char *)in->target,
                    .iothread = (char *)in->iothread,
                    .triple = in->current,
                    .expires_ms = now_ms + cfg->external_hold_ms,
                    .origin = POLICY_ORIGIN_EXTERNAL_WRITE,
                    .set_ms = now_ms,
                };
                gint old = override_index(e, POLICY_ORIGIN_EXTERNAL_WRITE, in->target,
                                          in->iothread);

                if (old >= 0)
                    g_ptr_array_remove_index(e->overrides, (guint)old);
                /* Not checked against the bounds: the write is a fact, and
                 * holding it is leaving it alone. */
                g_ptr_array_add(e->overrides, override_copy(&o));
            }
        }
    }
    st->seen = TRUE;
    st->last_current = in->current;
}

/*
 * An external write is an implicit override: whoever made it chose that
 * triple, and a probe replacing it seconds later would silently undo their
 * decision.  It holds, like an override, until it expires; then the policy
 * takes over again and says so.  Returns TRUE while it holds.
 */
static gboolean
external_holds(PolicyEngine *e, PolicyProposal *p, gint64 now_ms)
{
    gint i = override_index(e, POLICY_ORIGIN_EXTERNAL_WRITE, p->in->target, p->in->iothread);
    const PolicyOverride *o;
    g_autofree char *t = NULL;

    if (i < 0)
        return FALSE;
    o = g_ptr_array_index(e->overrides, (guint)i);
    if (!override_live(o, now_ms)) {
        g_ptr_array_remove_index(e->overrides, (guint)i);
        g_string_append(p->evidence, "external_hold=expired ");
        return FALSE;
    }
    t = policy_triple_format(&o->triple);
    p->is_override = TRUE;
    policy_proposal_set(p, &p->in->current, POLICY_CAUSE_OVERRIDE,
                        "external write: %s was set outside polltune %.0f s ago; held as an "
                        "implicit override for another %.0f s", t,
                        (now_ms - o->set_ms) / 1000.0, (o->expires_ms - now_ms) / 1000.0);
    g_string_append_printf(p->evidence, "external_write_ms=%" G_GINT64_FORMAT
                           " external_until_ms=%" G_GINT64_FORMAT, o->set_ms, o->expires_ms);
    return TRUE;
}

static void
propose(PolicyEngine *e, PolicyProposal *p, gint64 now_ms)
{
    const PolicyConfig *cfg = e->config;
    const PolicyIothreadInput *in = p->in;
    gboolean expired = FALSE;
    const PolicyOverride *o = override_find(e, in, now_ms, &expired);
    const PolicySpec *spec;
    PolicyTriple t;

    if (o) {
        t = o->triple;
        if (o->keep_grow)
            t.poll_grow = in->current.poll_grow;
        if (o->keep_shrink)
            t.poll_shrink = in->current.poll_shrink;
        p->is_override = TRUE;
        policy_proposal_set(p, &t, POLICY_CAUSE_OVERRIDE,
                            "override pins this triple%s", o->expires_ms ? " until it expires" : "");
        g_string_append_printf(p->evidence, "override_expires_ms=%" G_GINT64_FORMAT,
                               o->expires_ms);
        return;
    }
    if (expired)
        policy_adaptive_enter(p->st, POLICY_ADAPTIVE_NEW);
    if (external_holds(e, p, now_ms))
        return;
    spec = policy_config_lookup_named(cfg, in->target, in->name, in->iothread);
    switch (spec->kind) {
    case POLICY_KIND_OFF:
        t = (PolicyTriple){ 0, in->current.poll_grow, in->current.poll_shrink };
        break;
    case POLICY_KIND_QEMU_DEFAULT:
        t = POLICY_TRIPLE_QEMU_DEFAULT;
        break;
    case POLICY_KIND_STATIC:
        t = spec->triple;
        break;
    case POLICY_KIND_ADAPTIVE:
        p->adaptive = TRUE;
        p->objective = spec->objective;
        p->mem = policy_engine_memory_of(e, in->target, in->iothread);
        policy_adaptive_step(cfg, p, now_ms);
        if (p->mem_changed)
            policy_engine_memory_mark_changed(e, in->target, in->iothread);
        if (policy_config_clamp_triple(cfg, &p->triple))
            g_string_append(p->reason, " (clamped into bounds)");
        if (expired)
            g_string_append(p->reason, "; override expired");
        return;
    case POLICY_KIND_OBSERVE:
    default:
        policy_proposal_set(p, &in->current, POLICY_CAUSE_NONE,
                            "observe: this policy never writes%s",
                            expired ? "; override expired" : "");
        return;
    }
    {
        g_autofree char *spec_s = policy_spec_format(spec);
        gboolean clamped = policy_config_clamp_triple(cfg, &t);

        policy_proposal_set(p, &t, POLICY_CAUSE_POLICY, "policy %s%s%s", spec_s,
                            clamped ? " (clamped into bounds)" : "",
                            expired ? "; override expired" : "");
    }
}

static PolicyDecision *
finish(PolicyEngine *e, PolicyProposal *p, gint64 now_ms)
{
    const PolicyConfig *cfg = e->config;
    PolicyIothreadState *st = p->st;
    PolicyDecision *d = g_new0(PolicyDecision, 1);
    gboolean differs = !policy_triple_equal(&p->triple, &p->in->current);

    d->target = g_strdup(p->in->target);
    d->iothread = g_strdup(p->in->iothread);
    d->triple = p->in->current;
    d->cause = POLICY_CAUSE_NONE;
    /*
     * The dwell holds back new decisions; it does not hold back the end of
     * a probe, which is a deliberate one-tick measurement.
     */
    if (differs && !p->is_override && !p->dwell_exempt &&
        policy_guard_dwell(cfg, st, now_ms).holds) {
        g_autofree char *t = policy_triple_format(&p->triple);

        d->reason = g_strdup_printf("dwell: last write %.1f s ago, minimum %.1f s; "
                                    "deferred %s (%s: %s)",
                                    (now_ms - st->last_write_ms) / 1000.0,
                                    cfg->min_dwell_ms / 1000.0, t,
                                    policy_cause_to_string(p->cause), p->reason->str);
    } else if (differs) {
        d->change = TRUE;
        d->apply = cfg->mode == POLICY_MODE_ENFORCE;
        d->triple = p->triple;
        d->cause = p->cause;
        d->reason = g_strdup(p->reason->str);
        if (d->apply) {
            /* In recommend mode nothing changes, so the probe stays pending. */
            st->own_write.made = TRUE;
            st->own_write.triple = p->triple;
            st->last_write_ms = now_ms;
            /* The host guards' cuts are the host's, not the policy's. */
            if (p->adaptive && !p->is_override && !p->guard_cut)
                policy_writes_note(st, now_ms);
            if (p->trial_cand) {
                st->pending &= ~p->trial_cand;
                policy_adaptive_enter(st, POLICY_ADAPTIVE_PROBE);
            }
            if (p->is_override)
                policy_adaptive_enter(st, POLICY_ADAPTIVE_NEW);
        }
    } else {
        d->cause = p->cause == POLICY_CAUSE_ACCEPT ? POLICY_CAUSE_ACCEPT : POLICY_CAUSE_NONE;
        d->reason = g_strdup(p->reason->len ? p->reason->str : "no change");
    }
    d->evidence = g_strdup(p->evidence->str);
    return d;
}

GPtrArray *
policy_engine_tick(PolicyEngine *e, const PolicyHost *host,
                   const PolicyIothreadInput *inputs, guint n, gint64 now_ms)
{
    g_autofree PolicyProposal *props = g_new0(PolicyProposal, MAX(n, 1));
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)policy_decision_free);

    for (guint i = 0; i < n; i++) {
        PolicyProposal *p = &props[i];

        p->in = &inputs[i];
        p->st = state_get(e, p->in);
        p->m = p->in->n_history ? &p->in->history[p->in->n_history - 1] : NULL;
        p->triple = p->in->current;
        p->reason = g_string_new(NULL);
        p->evidence = g_string_new(NULL);
        observe_current(e, p->st, p->in, now_ms);
        propose(e, p, now_ms);
    }
    policy_guard_contention(e->config, host, props, n, now_ms);
    policy_guard_budget(e->config, props, n, now_ms);
    for (guint i = 0; i < n; i++) {
        g_ptr_array_add(out, finish(e, &props[i], now_ms));
        g_string_free(props[i].reason, TRUE);
        g_string_free(props[i].evidence, TRUE);
    }
    return out;
}

const PolicyConfig *
policy_engine_config(const PolicyEngine *e)
{
    return e->config;
}

const PolicyIothreadState *
policy_engine_state_peek(const PolicyEngine *e, const char *target, const char *iothread)
{
    g_autofree char *key = g_strdup_printf("%s/%s", target, iothread);

    return g_hash_table_lookup(e->states, key);
}
