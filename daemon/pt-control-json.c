/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pieces of JSON that several families of control commands answer
 * with, and how a command finds the target and iothread it names.
 */
#include "pt-control-private.h"

#include <math.h>

json_object *
pt_json_triple(const PolicyTriple *t)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "poll-max-ns", json_object_new_int64((gint64)t->poll_max_ns));
    json_object_object_add(o, "poll-grow", json_object_new_int64((gint64)t->poll_grow));
    json_object_object_add(o, "poll-shrink", json_object_new_int64((gint64)t->poll_shrink));
    return o;
}

void
pt_json_num(json_object *o, const char *key, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    /* Three decimals are more than any of these figures can claim, and
     * json-c would otherwise print binary noise ("4.4779999999999998"). */
    if (!isfinite(v))
        v = 0;
    g_ascii_formatd(buf, sizeof(buf), "%.3f", v);
    json_object_object_add(o, key, json_object_new_double_s(v, buf));
}

/* Whether every term of @r is read from the block counters: the rates
 * that are a shared group's figures when io_shared_by > 1. */
static gboolean
pt_rate_is_block(const MetricRateDef *r)
{
    for (int i = 0; i < METRIC_RATE_TERMS && r->terms[i] != METRIC_INVALID; i++)
        if (metric_def(r->terms[i])->source != METRIC_SOURCE_BLOCK)
            return FALSE;
    return TRUE;
}

/* The metric table's rates under their JSON keys, in the table's order, so
 * that a rate the policy carries appears here without naming it. */
json_object *
pt_json_metrics(const PolicyMetrics *m)
{
    json_object *o = json_object_new_object();
    int last_block = METRIC_RATE_INVALID;

    for (int r = 0; r < METRIC_RATE_MAX; r++)
        if (pt_rate_is_block(metric_rate_def(r)))
            last_block = r;
    json_object_object_add(o, "ts_ms", json_object_new_int64(m->when_ms));
    for (int r = 0; r < METRIC_RATE_MAX; r++) {
        double v;

        if (policy_metrics_rate(m, r, &v))
            pt_json_num(o, metric_rate_def(r)->json_key, v);
        /* The block figures are a group's, the same on each member. */
        if (r == last_block && m->have_io && m->io_shared_by > 1)
            json_object_object_add(o, "io_shared_by", json_object_new_int(m->io_shared_by));
    }
    return o;
}

json_object *
pt_json_override(const PolicyOverrideInfo *ov)
{
    json_object *o = json_object_new_object();

    json_object_object_add(o, "id", json_object_new_int64(ov->id));
    json_object_object_add(o, "who", json_object_new_string(ov->who ? ov->who : ""));
    json_object_object_add(o, "set_ms", ov->set_ms ? json_object_new_int64(ov->set_ms) : NULL);
    json_object_object_add(o, "reason", ov->reason ? json_object_new_string(ov->reason) : NULL);
    json_object_object_add(o, "expires_ms", ov->expires_ms ?
                           json_object_new_int64(ov->expires_ms) : NULL);
    json_object_object_add(o, "poll-max-ns", json_object_new_int64((gint64)ov->triple.poll_max_ns));
    if (!ov->keep_grow)
        json_object_object_add(o, "poll-grow", json_object_new_int64((gint64)ov->triple.poll_grow));
    if (!ov->keep_shrink)
        json_object_object_add(o, "poll-shrink",
                               json_object_new_int64((gint64)ov->triple.poll_shrink));
    return o;
}

static gint
pt_iothread_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(PtIothread *const *)a)->id, (*(PtIothread *const *)b)->id);
}

GPtrArray *
pt_sorted_iothreads(PtTarget *t)
{
    GPtrArray *out = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_ptr_array_add(out, v);
    g_ptr_array_sort(out, pt_iothread_cmp);
    return out;
}

/* "name", the identity (a QMP target's socket path), and "display_name",
 * the name it goes by (QEMU's -name, the one given to attach, else the
 * socket's file name; null for a libvirt domain, whose name is both). */
void
pt_json_target_names(json_object *o, const PtTarget *t)
{
    json_object_object_add(o, "name", json_object_new_string(t->name));
    json_object_object_add(o, "display_name",
                           t->display ? json_object_new_string(t->display) : NULL);
}

/* Every command answers NotFound, which polltunectl exits 1 on, for a
 * target it cannot speak about.  Returns FALSE for the caller to return. */
gboolean
pt_not_found(GError **error, const char *target)
{
    g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_NOT_FOUND,
                "%s: no such target", target);
    return FALSE;
}

PtTarget *
pt_find(PtConn *conn, json_object *args, const char **iothread, GError **error)
{
    const char *name;
    PtTarget *t;

    if (!pt_arg_str(args, "target", TRUE, &name, error) ||
        !pt_arg_str(args, "iothread", FALSE, iothread, error))
        return NULL;
    /* Its identity, or the name it goes by when that is one target's. */
    t = pt_daemon_resolve_target(pt_conn_daemon(conn), name, error);
    if (!t)
        return NULL;
    /* virsh numbers iothreads (iothreadset vm 1): N is QEMU's iothreadN,
     * the id libvirt gives it.  The id itself goes on from here. */
    if (*iothread && !g_hash_table_contains(t->iothreads, *iothread) && **iothread &&
        strspn(*iothread, "0123456789") == strlen(*iothread)) {
        g_autofree char *id = g_strconcat("iothread", *iothread, NULL);
        gpointer key;

        if (g_hash_table_lookup_extended(t->iothreads, id, &key, NULL))
            *iothread = key;
    }
    if (*iothread && !g_hash_table_contains(t->iothreads, *iothread)) {
        g_autoptr(GPtrArray) ios = pt_sorted_iothreads(t);
        g_autoptr(GString) have = g_string_new(NULL);

        /* What the operator may type instead, rather than a second try. */
        for (guint i = 0; i < ios->len; i++)
            g_string_append_printf(have, "%s%s", i ? ", " : "",
                                   ((PtIothread *)ios->pdata[i])->id);
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_NOT_FOUND,
                    "%s/%s: no such iothread; %s has %s", name, *iothread, name,
                    ios->len ? have->str : "none");
        return NULL;
    }
    return t;
}
