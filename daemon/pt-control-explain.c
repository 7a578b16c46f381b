/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control command `explain` (docs/CONTROL.md): the policy's current
 * view of each iothread of a target, and the same object inside `show`.
 */
#include "pt-control-private.h"

static json_object *
pt_json_ms(gint64 ms)
{
    return ms == G_MININT64 ? NULL : json_object_new_int64(ms);
}

static json_object *
pt_json_guard(PolicyGuard which, const PolicyGuardView *g)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "guard", json_object_new_string(policy_guard_to_string(which)));
    json_object_object_add(o, "holds", json_object_new_boolean(g->holds));
    if (g->available)
        pt_json_num(o, "value", g->value);
    else
        json_object_object_add(o, "value", NULL);
    if (g->limit >= 0)
        pt_json_num(o, "limit", g->limit);
    else
        json_object_object_add(o, "limit", NULL);
    json_object_object_add(o, "unit", json_object_new_string(g->unit ? g->unit : ""));
    json_object_object_add(o, "until_ms", pt_json_ms(g->until_ms));
    json_object_object_add(o, "detail", json_object_new_string(g->detail ? g->detail : ""));
    return o;
}

static json_object *
pt_json_candidate(const PolicyCandidateView *c, gint64 now_ms)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "triple", pt_json_triple(&c->triple));
    json_object_object_add(o, "role", json_object_new_string(c->role));
    json_object_object_add(o, "chosen", json_object_new_boolean(c->chosen));
    json_object_object_add(o, "ticks", json_object_new_int((int)c->n));
    if (c->n) {
        pt_json_num(o, "score", c->score);
        pt_json_num(o, "iops", c->iops);
        pt_json_num(o, "cpu_pct", c->cpu_pct);
        json_object_object_add(o, "measured_ms", pt_json_ms(c->measured_ms));
        pt_json_num(o, "age_s", MAX(now_ms - c->measured_ms, 0) / 1000.0);
    }
    return o;
}

json_object *
pt_json_explain(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(PolicyExplain) x = pt_daemon_explain(d, t, io);
    gint64 now_ms = g_get_real_time() / 1000;
    g_autofree char *spec = policy_spec_format(&x->spec);
    g_autofree char *detail = NULL;
    const char *source = pt_daemon_policy_source(d, t->name, x->iothread, &detail);
    json_object *o = json_object_new_object();
    json_object *src = json_object_new_object();
    json_object *cands = json_object_new_array();
    json_object *guards = json_object_new_array();
    json_object *holding = json_object_new_array();

    json_object_object_add(o, "target", json_object_new_string(t->name));
    json_object_object_add(o, "display_name", t->display ? json_object_new_string(t->display) :
                           NULL);
    json_object_object_add(o, "iothread", json_object_new_string(io->id));
    json_object_object_add(o, "policy", json_object_new_string(spec));
    json_object_object_add(src, "kind", json_object_new_string(source));
    json_object_object_add(src, "detail", json_object_new_string(detail));
    json_object_object_add(o, "policy_source", src);
    {
        /* The override guard below says that one holds; this says whose,
         * since when and why. */
        const PolicyOverrideInfo *ov = pt_daemon_override_for(d, t->name, io->id);

        json_object_object_add(o, "override", ov ? pt_json_override(ov) : NULL);
    }
    json_object_object_add(o, "mode", json_object_new_string(policy_mode_to_string(x->mode)));
    json_object_object_add(o, "phase", json_object_new_string(x->phase));
    json_object_object_add(o, "triple", io->have_triple ? pt_json_triple(&x->current) : NULL);
    json_object_object_add(o, "last_write_ms", pt_json_ms(x->last_write_ms));
    json_object_object_add(o, "metrics", x->have_metrics ? pt_json_metrics(&x->last) : NULL);
    if (x->have_metrics)
        pt_json_num(o, "metrics_age_s", MAX(now_ms - x->last.when_ms, 0) / 1000.0);
    for (guint i = 0; i < x->n_candidates; i++)
        json_object_array_add(cands, pt_json_candidate(&x->candidates[i], now_ms));
    json_object_object_add(o, "candidates", cands);
    if (x->have_benefit) {
        json_object *b = json_object_new_object();

        pt_json_num(b, "gain", x->gain);
        pt_json_num(b, "poll_cores", x->poll_cores);
        json_object_object_add(o, "benefit", b);
    } else {
        json_object_object_add(o, "benefit", NULL);
    }
    /* The workload memory's sentence (adaptive only) and the workloads it holds. */
    json_object_object_add(o, "memory", x->memory ? json_object_new_string(x->memory) : NULL);
    json_object_object_add(o, "memory_entries", json_object_new_int64(x->memory_entries));
    for (int g = 0; g < POLICY_GUARD_MAX; g++) {
        json_object_array_add(guards, pt_json_guard(g, &x->guards[g]));
        if (x->guards[g].holds)
            json_object_array_add(holding,
                                  json_object_new_string(policy_guard_to_string(g)));
    }
    json_object_object_add(o, "guards", guards);
    json_object_object_add(o, "holding", holding);
    json_object_object_add(o, "next_look_ms", pt_json_ms(x->next_look_ms));
    if (x->next_look_ms != G_MININT64)
        pt_json_num(o, "next_look_in_s", MAX(x->next_look_ms - now_ms, 0) / 1000.0);
    json_object_object_add(o, "next_look", json_object_new_string(x->next_look));
    return o;
}

static gint
pt_io_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(PtIothread *const *)a)->id, (*(PtIothread *const *)b)->id);
}

gboolean
pt_cmd_explain(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = conn->ctl->d;
    const char *iothread;
    PtTarget *t = pt_find(conn, args, &iothread, error);
    g_autoptr(GPtrArray) ios = g_ptr_array_new();
    json_object *arr;
    GHashTableIter it;
    gpointer v;

    if (!t)
        return FALSE;
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (!iothread || g_str_equal(iothread, ((PtIothread *)v)->id))
            g_ptr_array_add(ios, v);
    g_ptr_array_sort(ios, pt_io_cmp);
    *ret = json_object_new_object();
    json_object_object_add(*ret, "target", json_object_new_string(t->name));
    json_object_object_add(*ret, "display_name", t->display ?
                           json_object_new_string(t->display) : NULL);
    json_object_object_add(*ret, "state",
                           json_object_new_string(pt_target_state_to_string(t->state)));
    arr = json_object_new_array();
    for (guint i = 0; i < ios->len; i++)
        json_object_array_add(arr, pt_json_explain(d, t, ios->pdata[i]));
    json_object_object_add(*ret, "iothreads", arr);
    return TRUE;
}
