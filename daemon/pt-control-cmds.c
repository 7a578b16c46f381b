/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands of docs/CONTROL.md: argument checking, the call into
 * the daemon, and the JSON of the reply.
 */
#include "pt-config.h"
#include "pt-control-private.h"
#include "pt-log.h"
#include "common/pt-escape.h"

#include <math.h>
#include <string.h>

typedef gboolean (*PtCmdFunc)(PtConn *conn, json_object *args, json_object **ret,
                              GError **error);

typedef struct {
    const char *name;
    gboolean mutating;
    PtCmdFunc func;
} PtCmd;

static PtDaemon *
pt_conn_daemon(PtConn *conn)
{
    return conn->ctl->d;
}

/* ---- arguments --------------------------------------------------------- */

static gboolean
pt_arg_bad(GError **error, const char *key, const char *why)
{
    g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                "%s: %s", key, why);
    return FALSE;
}

/* A string argument: NULL and TRUE when absent and optional. */
gboolean
pt_arg_str(json_object *args, const char *key, gboolean required, const char **out,
           GError **error)
{
    json_object *v = NULL;

    *out = NULL;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v) {
        if (required)
            return pt_arg_bad(error, key, "missing");
        return TRUE;
    }
    if (!json_object_is_type(v, json_type_string))
        return pt_arg_bad(error, key, "not a string");
    /* JSON allows "\u0000" inside a string; C stops there, so
     * "off\u0000static:1" would be read as "off".  Refused, never cut. */
    if (!qmp_json_string(v)) {
        *out = NULL;
        return pt_arg_bad(error, key, "contains a NUL character");
    }
    *out = json_object_get_string(v);
    if (strlen(*out) > 4096) {
        *out = NULL;
        return pt_arg_bad(error, key, "too long");
    }
    /* Names, globs, paths and reasons end up in logs, replies and the
     * store: no control characters, and UTF-8. */
    if (pt_escape_needed(*out)) {
        *out = NULL;
        return pt_arg_bad(error, key, "contains a control character or is not UTF-8");
    }
    return TRUE;
}

static gboolean
pt_arg_int(json_object *args, const char *key, gint64 *out, gboolean *present,
           GError **error)
{
    json_object *v = NULL;

    *present = FALSE;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v)
        return TRUE;
    if (!json_object_is_type(v, json_type_int))
        return pt_arg_bad(error, key, "not an integer");
    *out = json_object_get_int64(v);
    *present = TRUE;
    return TRUE;
}

/* An integer argument that must be non-negative when given. */
static gboolean
pt_arg_uint(json_object *args, const char *key, gint64 *out, gboolean *present,
            GError **error)
{
    if (!pt_arg_int(args, key, out, present, error))
        return FALSE;
    if (*present && *out < 0)
        return pt_arg_bad(error, key, "must not be negative");
    return TRUE;
}

/* A boolean argument; FALSE when absent. */
gboolean
pt_arg_bool(json_object *args, const char *key, gboolean *out, GError **error)
{
    json_object *v = NULL;

    *out = FALSE;
    if (!args || !json_object_object_get_ex(args, key, &v) || !v)
        return TRUE;
    if (!json_object_is_type(v, json_type_boolean))
        return pt_arg_bad(error, key, "not a boolean");
    *out = json_object_get_boolean(v);
    return TRUE;
}

/* ---- reply objects ----------------------------------------------------- */

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

static json_object *
pt_json_decision(const PtIothread *io)
{
    const PolicyDecision *d = io->last_decision;
    g_autofree char *outcome = pt_outcome_format(io->last_outcome, io->last_failure);
    const char *policy = io->last_policy;
    json_object *o = json_object_new_object();

    json_object_object_add(o, "ts_ms", json_object_new_int64(io->last_decision_ms));
    json_object_object_add(o, "target", json_object_new_string(d->target));
    json_object_object_add(o, "iothread", json_object_new_string(d->iothread));
    if (policy)
        json_object_object_add(o, "policy", json_object_new_string(policy));
    json_object_object_add(o, "cause", json_object_new_string(policy_cause_to_string(d->cause)));
    json_object_object_add(o, "old", pt_json_triple(&io->last_old));
    json_object_object_add(o, "new", pt_json_triple(&d->triple));
    json_object_object_add(o, "applied", json_object_new_boolean(io->last_outcome == PT_OUTCOME_APPLIED));
    json_object_object_add(o, "outcome", json_object_new_string(outcome));
    json_object_object_add(o, "reason", json_object_new_string(d->reason ? d->reason : ""));
    json_object_object_add(o, "evidence", json_object_new_string(d->evidence ? d->evidence : ""));
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

/* The block devices whose figures @io carried in the last sample (a
 * group's, for a member of one); null before any sample. */
static json_object *
pt_json_devices(PtTarget *t, PtIothread *io)
{
    const ProbeIothreadSnap *ios = t->prev ? probe_target_snap_find(t->prev, io->id) : NULL;
    json_object *a;

    if (!ios)
        return NULL;
    a = json_object_new_array();
    for (guint i = 0; i < ios->devices->len; i++)
        json_object_array_add(a, json_object_new_string(
            g_array_index(ios->devices, ProbeDevice, i).name));
    return a;
}

static json_object *
pt_json_iothread(PtDaemon *d, PtTarget *t, PtIothread *io, guint history)
{
    json_object *o = json_object_new_object();
    /* A group member runs what its group does: the rule of its first
     * iothread (docs/POLICY.md). */
    g_autofree char *policy = pt_daemon_policy_for(d, t->name, io->group ? io->group : io->id);
    const PolicyOverrideInfo *ov = pt_daemon_override_for(d, t->name, io->id);

    json_object_object_add(o, "id", json_object_new_string(io->id));
    json_object_object_add(o, "tid", json_object_new_int(io->tid));
    json_object_object_add(o, "group", io->group ? json_object_new_string(io->group) : NULL);
    json_object_object_add(o, "devices", pt_json_devices(t, io));
    json_object_object_add(o, "triple", io->have_triple ? pt_json_triple(&io->triple) : NULL);
    /* While the target is not attached its QEMU may already be another
     * process on the same socket, whose originals are not known yet. */
    json_object_object_add(o, "original", io->have_original && t->state == PT_TARGET_ATTACHED ?
                           pt_json_triple(&io->original) : NULL);
    json_object_object_add(o, "policy", json_object_new_string(policy));
    json_object_object_add(o, "override", ov ? pt_json_override(ov) : NULL);
    {
        /* A group is decided, and so held, under its first iothread. */
        PolicyTriple held;
        gint64 since, until;

        if (pt_daemon_external_hold_for(d, t->name, io->group ? io->group : io->id, &held,
                                        &since, &until)) {
            json_object *h = pt_json_triple(&held);

            json_object_object_add(h, "since_ms", json_object_new_int64(since));
            json_object_object_add(h, "until_ms", json_object_new_int64(until));
            json_object_object_add(o, "external_hold", h);
        } else {
            json_object_object_add(o, "external_hold", NULL);
        }
    }
    json_object_object_add(o, "metrics", io->history->len ?
                           pt_json_metrics(&g_array_index(io->history, PolicyMetrics,
                                                          io->history->len - 1)) : NULL);
    json_object_object_add(o, "last_decision", io->last_decision ?
                           pt_json_decision(io) : NULL);
    json_object_object_add(o, "explain", pt_json_explain(d, t, io));
    if (history) {
        json_object *h = json_object_new_array();
        guint from = io->history->len > history ? io->history->len - history : 0;

        for (guint i = from; i < io->history->len; i++)
            json_object_array_add(h, pt_json_metrics(&g_array_index(io->history, PolicyMetrics, i)));
        json_object_object_add(o, "history", h);
    }
    return o;
}

static gint
pt_iothread_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(PtIothread *const *)a)->id, (*(PtIothread *const *)b)->id);
}

static GPtrArray *
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

/* The QEMU release and where the VM's exit figures come from, and why. */
static void
pt_json_target_qemu(json_object *o, PtTarget *t)
{
    g_autofree char *version = pt_target_qemu_version_string(t);
    const char *why = NULL;
    ProbeExitSource src = pt_target_exit_source(t, &why);

    json_object_object_add(o, "qemu_version", version ? json_object_new_string(version) : NULL);
    json_object_object_add(o, "exits_source",
                           json_object_new_string(probe_exit_source_to_string(src)));
    json_object_object_add(o, "exits_reason", why ? json_object_new_string(why) : NULL);
}

/* "name", the identity (a QMP target's socket path), and "display_name",
 * the name it goes by (QEMU's -name, the one given to attach, else the
 * socket's file name; null for a libvirt domain, whose name is both). */
static void
pt_json_target_names(json_object *o, const PtTarget *t)
{
    json_object_object_add(o, "name", json_object_new_string(t->name));
    json_object_object_add(o, "display_name",
                           t->display ? json_object_new_string(t->display) : NULL);
}

static json_object *
pt_json_target(PtDaemon *d, PtTarget *t, const char *only, guint history)
{
    json_object *o = json_object_new_object();
    json_object *ios = json_object_new_array();
    g_autoptr(GPtrArray) list = pt_sorted_iothreads(t);
    g_autofree char *policy = pt_daemon_policy_for(d, t->name, NULL);

    pt_json_target_names(o, t);
    json_object_object_add(o, "kind", json_object_new_string(store_target_kind_to_string(t->kind)));
    json_object_object_add(o, "state", json_object_new_string(pt_target_state_to_string(t->state)));
    if (t->state_reason)
        json_object_object_add(o, "state_reason", json_object_new_string(t->state_reason));
    json_object_object_add(o, "pid", json_object_new_int(t->pid));
    if (t->sample_ms >= 0)
        pt_json_num(o, "sample_ms", t->sample_ms);
    json_object_object_add(o, "late_ticks", json_object_new_int64(t->late_ticks));
    pt_json_target_qemu(o, t);
    json_object_object_add(o, "policy", json_object_new_string(policy));
    for (guint i = 0; i < list->len; i++) {
        PtIothread *io = list->pdata[i];

        if (!only || g_str_equal(only, io->id))
            json_object_array_add(ios, pt_json_iothread(d, t, io, history));
    }
    json_object_object_add(o, "iothreads", ios);
    return o;
}

/* ---- commands ---------------------------------------------------------- */

static gboolean
pt_cmd_version(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    *ret = json_object_new_object();
    json_object_object_add(*ret, "version", json_object_new_string(PT_VERSION));
    json_object_object_add(*ret, "protocol", json_object_new_int(1));
    return TRUE;
}

static gboolean
pt_cmd_capabilities(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    *ret = json_object_new_object();
    return TRUE;
}

static gboolean
pt_cmd_status(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    const PtConf *conf = pt_daemon_get_conf(d);
    const PolicyHost *h = pt_daemon_get_host(d);
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);
    json_object *store = json_object_new_object();
    json_object *host = json_object_new_object();
    json_object *tl = json_object_new_array();
    PtDaemonStats st;
    StoreStats ss;

    pt_daemon_get_stats(d, &st);
    store_db_get_stats(pt_daemon_get_store(d), &ss);
    *ret = json_object_new_object();
    json_object_object_add(*ret, "mode", json_object_new_string(pt_mode_to_string(pt_daemon_get_mode(d))));
    json_object_object_add(*ret, "interval_ms", json_object_new_int(conf->interval_ms));
    json_object_object_add(*ret, "uptime_s",
                           json_object_new_int64((g_get_real_time() / 1000 - st.started_ms) / 1000));
    json_object_object_add(*ret, "ticks", json_object_new_int64(st.ticks));
    json_object_object_add(*ret, "overruns", json_object_new_int64(st.overruns));
    pt_json_num(*ret, "last_tick_ms", st.last_tick_ms);
    pt_json_num(*ret, "last_wait_ms", st.last_wait_ms);
    pt_json_num(*ret, "last_work_ms", st.last_work_ms);
    pt_json_num(*ret, "tick_p50_ms", st.tick_ms_p50);
    pt_json_num(*ret, "tick_p99_ms", st.tick_ms_p99);
    json_object_object_add(store, "path", json_object_new_string(conf->database));
    json_object_object_add(store, "health", json_object_new_string(store_health_to_string(ss.health)));
    json_object_object_add(store, "pending", json_object_new_int(ss.pending_ticks));
    json_object_object_add(store, "dropped", json_object_new_int64(ss.ticks_dropped));
    json_object_object_add(store, "reopens", json_object_new_int64(ss.reopens));
    json_object_object_add(store, "corruptions", json_object_new_int64(ss.corruptions));
    {
        gint64 at_ms;
        const char *what = store_db_last_incident(pt_daemon_get_store(d), &at_ms);

        /* Health is the last write's; this stays, so that a file that
         * went or was damaged, and what was done, is seen afterwards. */
        if (what) {
            json_object *inc = json_object_new_object();

            json_object_object_add(inc, "at_ms", json_object_new_int64(at_ms));
            json_object_object_add(inc, "what", json_object_new_string(what));
            json_object_object_add(store, "incident", inc);
        }
    }
    json_object_object_add(*ret, "store", store);
    if (h->have_psi)
        pt_json_num(host, "psi_some_avg10", h->psi_some_avg10);
    /* 100 = every CPU busy, as in host-history and the report (the policy
     * counts 100 per CPU). */
    if (h->have_stat && h->n_cpus > 0) {
        pt_json_num(host, "cpu_busy_pct", h->cpu_busy_pct / h->n_cpus);
        json_object_object_add(host, "cpus", json_object_new_int((int)h->n_cpus));
    }
    pt_json_num(host, "polling_cores", pt_daemon_polling_cores(d));
    pt_json_num(host, "budget_cores", conf->policy->budget_cores);
    json_object_object_add(*ret, "host", host);
    for (guint i = 0; i < targets->len; i++)
        json_object_array_add(tl, pt_json_target(d, targets->pdata[i], NULL, 0));
    json_object_object_add(*ret, "targets", tl);
    return TRUE;
}

static gboolean
pt_cmd_list(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);
    json_object *tl = json_object_new_array();

    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        g_autoptr(GPtrArray) ios = pt_sorted_iothreads(t);
        json_object *o = json_object_new_object();
        json_object *names = json_object_new_array();

        pt_json_target_names(o, t);
        json_object_object_add(o, "kind", json_object_new_string(store_target_kind_to_string(t->kind)));
        json_object_object_add(o, "state", json_object_new_string(pt_target_state_to_string(t->state)));
        json_object_object_add(o, "pid", json_object_new_int(t->pid));
        for (guint j = 0; j < ios->len; j++)
            json_object_array_add(names, json_object_new_string(((PtIothread *)ios->pdata[j])->id));
        json_object_object_add(o, "iothreads", names);
        json_object_array_add(tl, o);
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "targets", tl);
    return TRUE;
}

/* Every command answers NotFound, which polltunectl exits 1 on, for a
 * target it cannot speak about.  Returns FALSE for the caller to return. */
static gboolean
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

/* The last 20 decisions of one iothread, from the store, oldest first;
 * "evidence" is stored inside "reason", so it is absent, and "cause" is
 * absent from rows written before the store kept it. */
static json_object *
pt_json_stored_decisions(PtDaemon *d, const char *target, const char *iothread)
{
    json_object *decisions = json_object_new_array();
    g_autoptr(GError) err = NULL;
    g_autoptr(StoreCursor) cur = NULL;
    StoreFilter f;
    const StoreDecisionRow *row;
    GQueue last = G_QUEUE_INIT;

    store_filter_init(&f);
    f.target = target;
    f.iothread = iothread;
    f.from_ms = g_get_real_time() / 1000 - 7 * G_GINT64_CONSTANT(86400000);
    cur = store_query_decisions(pt_daemon_get_store(d), &f, &err);
    while (cur && store_cursor_next_decision(cur, &row, &err) && row) {
        json_object *o = json_object_new_object();

        json_object_object_add(o, "ts_ms", json_object_new_int64(row->ts_ms));
        json_object_object_add(o, "target", json_object_new_string(row->target));
        json_object_object_add(o, "iothread", json_object_new_string(row->iothread));
        json_object_object_add(o, "policy", json_object_new_string(row->policy ? row->policy : ""));
        if (row->cause)
            json_object_object_add(o, "cause", json_object_new_string(row->cause));
        json_object_object_add(o, "old", row->old_triple.poll_max_ns == STORE_NULL ? NULL :
                               pt_json_triple(&(PolicyTriple){ row->old_triple.poll_max_ns,
                                                               row->old_triple.poll_grow,
                                                               row->old_triple.poll_shrink }));
        json_object_object_add(o, "new", pt_json_triple(&(PolicyTriple){
            row->new_triple.poll_max_ns, row->new_triple.poll_grow, row->new_triple.poll_shrink }));
        json_object_object_add(o, "applied", json_object_new_boolean(row->applied));
        json_object_object_add(o, "outcome", json_object_new_string(pt_outcome_to_string(
            row->applied ? PT_OUTCOME_APPLIED : PT_OUTCOME_RECOMMENDED)));
        json_object_object_add(o, "reason", json_object_new_string(row->reason ? row->reason : ""));
        g_queue_push_tail(&last, o);
        if (last.length > 20)
            json_object_put(g_queue_pop_head(&last));
    }
    while (!g_queue_is_empty(&last))
        json_object_array_add(decisions, g_queue_pop_head(&last));
    return decisions;
}

static gboolean
pt_cmd_show(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    const char *iothread;
    PtTarget *t = pt_find(conn, args, &iothread, error);
    gint64 ticks = 60;
    gboolean have;
    json_object *ios;

    if (!t || !pt_arg_int(args, "ticks", &ticks, &have, error))
        return FALSE;
    if (ticks < 1 || ticks > PT_HISTORY_TICKS)
        return pt_arg_bad(error, "ticks", "must be 1.." G_STRINGIFY(PT_HISTORY_TICKS)
                          " (older ticks: history)");
    *ret = pt_json_target(d, t, iothread, ticks);
    ios = json_object_object_get(*ret, "iothreads");
    for (size_t i = 0; i < json_object_array_length(ios); i++) {
        json_object *io = json_object_array_get_idx(ios, i);
        const char *id = json_object_get_string(json_object_object_get(io, "id"));

        json_object_object_add(io, "decisions", pt_json_stored_decisions(d, t->name, id));
    }
    return TRUE;
}

static gboolean
pt_parse_time_arg(json_object *args, const char *key, gint64 now_ms, gint64 *out,
                  GError **error)
{
    const char *v;

    if (!pt_arg_str(args, key, FALSE, &v, error))
        return FALSE;
    if (!v)
        return TRUE;
    if (!store_time_parse(v, now_ms, out, error)) {
        g_prefix_error(error, "%s: ", key);
        return FALSE;
    }
    return TRUE;
}

gboolean
pt_filter_from_args(json_object *args, StoreFilter *f, GError **error)
{
    gint64 now_ms = g_get_real_time() / 1000;
    const char *res;

    store_filter_init(f);
    f->from_ms = now_ms - 3600000;
    if (!pt_parse_time_arg(args, "since", now_ms, &f->from_ms, error) ||
        !pt_parse_time_arg(args, "until", now_ms, &f->to_ms, error) ||
        !pt_arg_str(args, "target", FALSE, &f->target, error) ||
        !pt_arg_str(args, "iothread", FALSE, &f->iothread, error) ||
        !pt_arg_str(args, "resolution", FALSE, &res, error))
        return FALSE;
    f->resolution = res ? store_resolution_from_string(res) : STORE_RES_RAW;
    if (f->resolution == STORE_RESOLUTION_INVALID)
        return pt_arg_bad(error, "resolution", "must be raw, 1m or 1h");
    return TRUE;
}

gboolean
pt_target_known(PtDaemon *d, const char **name, GError **error)
{
    g_autoptr(GError) err = NULL;
    PtTarget *t = pt_daemon_resolve_target(d, *name, &err);
    gboolean known;

    if (t) {
        *name = t->name;
        return TRUE;
    }
    /* A name two targets go by asks for a path. */
    if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&err));
        return FALSE;
    }
    if (!store_target_known(pt_daemon_get_store(d), *name, &known, error))
        return FALSE;
    return known || pt_not_found(error, *name);
}

static gboolean
pt_cmd_history(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    g_autoptr(StoreCursor) cur = NULL;
    StoreFilter f;
    const StoreRow *row;
    json_object *rows;
    guint n = 0;

    if (!pt_filter_from_args(args, &f, error))
        return FALSE;
    if (!f.target)
        return pt_arg_bad(error, "target", "missing");
    if (!pt_target_known(d, &f.target, error))
        return FALSE;
    cur = store_query_range(pt_daemon_get_store(d), &f, error);
    if (!cur)
        return FALSE;
    rows = json_object_new_array();
    while (n < 10000 && store_cursor_next(cur, &row, error) && row) {
        json_object_array_add(rows, store_row_to_json(row));
        n++;
    }
    if (error && *error) {
        json_object_put(rows);
        return FALSE;
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "resolution",
                           json_object_new_string(store_resolution_to_string(f.resolution)));
    json_object_object_add(*ret, "rows", rows);
    return TRUE;
}

/* The host's figures per raw tick, beside the iothreads' `history`. */
static gboolean
pt_cmd_host_history(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    g_autoptr(StoreCursor) cur = NULL;
    StoreFilter f;
    const StoreHostRow *row;
    json_object *rows;
    guint n = 0;

    if (!pt_filter_from_args(args, &f, error))
        return FALSE;
    if (!(cur = store_query_host(pt_daemon_get_store(pt_conn_daemon(conn)), &f, error)))
        return FALSE;
    rows = json_object_new_array();
    /* As `history`: at most 10,000 rows, about 90 bytes each. */
    while (n < 10000 && store_cursor_next_host(cur, &row, error) && row) {
        json_object_array_add(rows, store_host_row_to_json(row));
        n++;
    }
    if (error && *error) {
        json_object_put(rows);
        return FALSE;
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "rows", rows);
    return TRUE;
}

static gboolean
pt_cmd_policy_get(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    const PtConf *conf = pt_daemon_get_conf(d);
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);
    g_autofree char *def = policy_spec_format(&conf->policy->default_spec);
    json_object *rules = json_object_new_array();
    json_object *tl = json_object_new_array();
    const char *only, *iothread = NULL;
    PtTarget *one = NULL;

    /* A VM/IOTHREAD is checked as every command checks one (pt_find()). */
    if (!pt_arg_str(args, "target", FALSE, &only, error) ||
        (only && !(one = pt_find(conn, args, &iothread, error)))) {
        json_object_put(rules);
        json_object_put(tl);
        return FALSE;
    }
    for (guint i = 0; i < conf->policy->rules->len; i++) {
        PolicyRule *r = conf->policy->rules->pdata[i];
        g_autofree char *spec = policy_spec_format(&r->spec);
        json_object *o = json_object_new_object();

        json_object_object_add(o, "glob", json_object_new_string(r->glob));
        json_object_object_add(o, "policy", json_object_new_string(spec));
        json_object_object_add(o, "source",
                               json_object_new_string(policy_origin_to_string(r->origin)));
        if (r->who) {
            json_object_object_add(o, "set-by", json_object_new_string(r->who));
            json_object_object_add(o, "set-at", json_object_new_int64(r->set_ms));
        }
        json_object_array_add(rules, o);
    }
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        g_autofree char *spec = NULL;
        json_object *o;

        if (one && one != t)
            continue;
        spec = pt_daemon_policy_for(d, t->name, iothread && *iothread ? iothread : NULL);
        o = json_object_new_object();
        pt_json_target_names(o, t);
        if (iothread && *iothread)
            json_object_object_add(o, "iothread", json_object_new_string(iothread));
        json_object_object_add(o, "policy", json_object_new_string(spec));
        json_object_array_add(tl, o);
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "default", json_object_new_string(def));
    json_object_object_add(*ret, "rules", rules);
    json_object_object_add(*ret, "targets", tl);
    return TRUE;
}

/* Whether the policy-set rule for @glob decides the policy of any target
 * or iothread now: the lookup the engine makes, not a second matcher. */
static gboolean
pt_rule_in_use(PtDaemon *d, const char *glob)
{
    const PolicyConfig *policy = pt_daemon_get_conf(d)->policy;
    const PolicyRule *rule = policy_config_find_rule(policy, POLICY_ORIGIN_POLICY_SET, glob);
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);

    for (guint i = 0; rule && i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        g_autoptr(GPtrArray) ios = pt_sorted_iothreads(t);

        if (policy_config_lookup_named(policy, t->name, t->display, NULL) == &rule->spec)
            return TRUE;
        for (guint k = 0; k < ios->len; k++)
            if (policy_config_lookup_named(policy, t->name, t->display,
                                           ((PtIothread *)ios->pdata[k])->id) == &rule->spec)
                return TRUE;
    }
    return FALSE;
}

static gboolean
pt_cmd_policy_set(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    g_autofree char *who = g_strdup_printf("uid %u", (unsigned)conn->uid);
    const char *target, *policy;

    if (!pt_arg_str(args, "target", TRUE, &target, error) ||
        !pt_arg_str(args, "policy", TRUE, &policy, error) ||
        !pt_daemon_policy_set(pt_conn_daemon(conn), target, policy, who, error))
        return FALSE;
    *ret = json_object_new_object();
    /* A typo in a glob is accepted as a rule for VMs to come: say so. */
    if (!pt_rule_in_use(pt_conn_daemon(conn), target)) {
        g_autofree char *note = g_strdup_printf("%s matches no VM or iothread now; the rule "
                                                "is kept for those that come", target);

        pt_warn(NULL, NULL, "policy-set: %s", note);
        json_object_object_add(*ret, "note", json_object_new_string(note));
    }
    return TRUE;
}

static gboolean
pt_cmd_policy_clear(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *target;

    if (!pt_arg_str(args, "target", TRUE, &target, error) ||
        !pt_daemon_policy_clear(pt_conn_daemon(conn), target, error))
        return FALSE;
    *ret = json_object_new_object();
    return TRUE;
}

static gboolean
pt_cmd_override_set(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *iothread, *for_text, *reason;
    PtTarget *t = pt_find(conn, args, &iothread, error);
    gint64 max = 0, grow = -1, shrink = -1, for_ms = 0, id = 0, expires = STORE_NULL;
    gint64 replaced = 0;
    gboolean have_max, have_grow, have_shrink;
    g_autofree char *who = NULL;

    if (!t ||
        !pt_arg_uint(args, "poll-max-ns", &max, &have_max, error) ||
        !pt_arg_uint(args, "poll-grow", &grow, &have_grow, error) ||
        !pt_arg_uint(args, "poll-shrink", &shrink, &have_shrink, error) ||
        !pt_arg_str(args, "for", FALSE, &for_text, error) ||
        !pt_arg_str(args, "reason", FALSE, &reason, error))
        return FALSE;
    if (!have_max)
        return pt_arg_bad(error, "poll-max-ns", "missing");
    /* -1 is the daemon's "keep the live value", never a client's. */
    if (!have_grow)
        grow = -1;
    if (!have_shrink)
        shrink = -1;
    if (for_text) {
        g_autoptr(GError) err = NULL;

        if (!pt_parse_duration(for_text, &for_ms, &err) || for_ms <= 0)
            return pt_arg_bad(error, "for", err ? err->message : "must be positive");
        if (for_ms > PT_OVERRIDE_FOR_MAX_MS) {
            g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                        "for: '%s' is longer than %s, the longest an override may last "
                        "(without \"for\" it lasts until cleared)", for_text,
                        PT_OVERRIDE_FOR_MAX_TEXT);
            return FALSE;
        }
    }
    who = g_strdup_printf("uid %u", (unsigned)conn->uid);
    if (!pt_daemon_override_set(pt_conn_daemon(conn), t->name, iothread, max, grow, shrink,
                                for_ms, who, reason, &id, &expires, &replaced, error)) {
        if ((*error)->domain == POLICY_ERROR)
            (*error)->code = PT_CONTROL_ERROR_INVALID_PARAMETER, (*error)->domain = PT_CONTROL_ERROR;
        return FALSE;
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "id", json_object_new_int64(id));
    json_object_object_add(*ret, "expires_ms", expires == STORE_NULL ? NULL :
                           json_object_new_int64(expires));
    json_object_object_add(*ret, "replaced", replaced ? json_object_new_int64(replaced) : NULL);
    return TRUE;
}

static gboolean
pt_cmd_override_clear(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *target = NULL, *iothread = NULL;
    gint64 id = -1;
    gboolean have_id;
    guint n;

    if (!pt_arg_int(args, "id", &id, &have_id, error))
        return FALSE;
    /* Overrides are numbered from 1; a negative id used to be taken for
     * "by target" with no target, and crashed the daemon. */
    if (have_id && id <= 0)
        return pt_arg_bad(error, "id", "must be a positive integer");
    if (!have_id && (!pt_arg_str(args, "target", TRUE, &target, error) ||
                     !pt_arg_str(args, "iothread", FALSE, &iothread, error)))
        return FALSE;
    /* Overrides are kept under the target's identity. */
    if (target) {
        PtTarget *t = pt_daemon_find_target(pt_conn_daemon(conn), target);
        g_autoptr(GError) err = NULL;

        if (!t && (t = pt_daemon_resolve_target(pt_conn_daemon(conn), target, &err)))
            target = t->name;
        else if (!t && !g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
            g_propagate_error(error, g_steal_pointer(&err));
            return FALSE;
        }
    }
    n = pt_daemon_override_clear(pt_conn_daemon(conn), target, iothread,
                                 have_id ? id : -1, error);
    if (!n)
        return FALSE;
    g_clear_error(error);
    *ret = json_object_new_object();
    json_object_object_add(*ret, "cleared", json_object_new_int(n));
    return TRUE;
}

static gboolean
pt_cmd_mode_set(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *mode;
    PtMode m;

    if (!pt_arg_str(args, "mode", TRUE, &mode, error))
        return FALSE;
    if ((m = pt_mode_from_string(mode)) == PT_MODE_INVALID)
        return pt_arg_bad(error, "mode", "must be observe, recommend or enforce");
    if (!pt_daemon_set_runtime_mode(pt_conn_daemon(conn), m, error))
        return FALSE;
    *ret = json_object_new_object();
    json_object_object_add(*ret, "mode", json_object_new_string(mode));
    return TRUE;
}

static gboolean
pt_cmd_attach(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *path, *name, *domain;
    g_autofree char *got = NULL;

    if (!pt_arg_str(args, "path", FALSE, &path, error) ||
        !pt_arg_str(args, "name", FALSE, &name, error) ||
        !pt_arg_str(args, "domain", FALSE, &domain, error))
        return FALSE;
    /* A "path" that is not absolute names a libvirt domain too. */
    if (!domain && path && !g_path_is_absolute(path))
        domain = path;
    if (domain) {
        g_autoptr(GError) err = NULL;

        if (!pt_daemon_attach_libvirt(pt_conn_daemon(conn), domain, &got, &err)) {
            /* A name the daemon knows nothing of is no target, whatever the
             * lookup among detached domains said about it. */
            if (g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
                g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_NOT_FOUND,
                            "%s: no such target (attach takes a QMP socket's path, or a "
                            "libvirt domain that was detached by request)", domain);
                return FALSE;
            }
            g_propagate_error(error, g_steal_pointer(&err));
            return FALSE;
        }
    } else if (!path) {
        return pt_arg_bad(error, "path", "path (a QMP socket) or domain is required");
    } else {
        /* Held to at every connect, not only at this one: what lies behind
         * the path may change. */
        PtCred reach = { conn->uid, conn->gid, conn->groups, conn->n_groups };

        /* The caller's own reach first: root's answers would tell her what
         * lies where she may not look. */
        if (!pt_cred_may_connect(&reach, path, error) ||
            !pt_daemon_attach_qmp(pt_conn_daemon(conn), path, name,
                                  conn->uid == 0 ? NULL : &reach, &got, error))
            return FALSE;
    }
    *ret = json_object_new_object();
    json_object_object_add(*ret, "name", json_object_new_string(got));
    {
        PtTarget *t = pt_daemon_find_target(pt_conn_daemon(conn), got);

        json_object_object_add(*ret, "display_name", t && t->display ?
                               json_object_new_string(t->display) : NULL);
    }
    return TRUE;
}

static gboolean
pt_cmd_detach(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *name;

    if (!pt_arg_str(args, "name", TRUE, &name, error) ||
        !pt_daemon_detach(pt_conn_daemon(conn), name, error))
        return FALSE;
    *ret = json_object_new_object();
    return TRUE;
}

static gboolean
pt_cmd_metrics(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *format;
    g_autofree char *text = NULL;

    if (!pt_arg_str(args, "format", FALSE, &format, error))
        return FALSE;
    if (format && !g_str_equal(format, "openmetrics") && !g_str_equal(format, "prometheus"))
        return pt_arg_bad(error, "format", "must be openmetrics or prometheus");
    text = pt_daemon_render_metrics(pt_conn_daemon(conn),
                                    !format || g_str_equal(format, "openmetrics"));

    *ret = json_object_new_object();
    json_object_object_add(*ret, "text", json_object_new_string(text));
    return TRUE;
}

static gboolean
pt_cmd_reload(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    g_autoptr(GError) err = NULL;
    PtDaemon *d = pt_conn_daemon(conn);

    /* The same path as SIGHUP, so both behave alike. */
    if (!pt_daemon_reload_file(d, &err)) {
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_GENERIC, "%s", err->message);
        return FALSE;
    }
    /* Say which mode holds and why, so a kept runtime mode is no surprise. */
    *ret = json_object_new_object();
    json_object_object_add(*ret, "mode",
                           json_object_new_string(pt_mode_to_string(pt_daemon_get_mode(d))));
    json_object_object_add(*ret, "mode_from", json_object_new_string(
        pt_daemon_get_runtime_mode(d) != PT_MODE_INVALID ? "runtime" : "configuration"));
    return TRUE;
}

gboolean pt_cmd_export(PtConn *conn, json_object *args, json_object **ret, GError **error);

static const PtCmd pt_cmds[] = {
    { "version", FALSE, pt_cmd_version },
    { "qmp_capabilities", FALSE, pt_cmd_capabilities },
    { "status", FALSE, pt_cmd_status },
    { "list", FALSE, pt_cmd_list },
    { "show", FALSE, pt_cmd_show },
    { "explain", FALSE, pt_cmd_explain },
    { "history", FALSE, pt_cmd_history },
    { "host-history", FALSE, pt_cmd_host_history },
    { "policy-get", FALSE, pt_cmd_policy_get },
    { "export", FALSE, pt_cmd_export },
    { "metrics", FALSE, pt_cmd_metrics },
    { "memory", FALSE, pt_cmd_memory },
    { "policy-set", TRUE, pt_cmd_policy_set },
    { "policy-clear", TRUE, pt_cmd_policy_clear },
    { "override-set", TRUE, pt_cmd_override_set },
    { "override-clear", TRUE, pt_cmd_override_clear },
    { "forget", TRUE, pt_cmd_forget },
    { "mode-set", TRUE, pt_cmd_mode_set },
    { "attach", TRUE, pt_cmd_attach },
    { "detach", TRUE, pt_cmd_detach },
    { "reload", TRUE, pt_cmd_reload },
};

void
pt_control_dispatch(PtConn *conn, QmpMessage *m)
{
    const PtCmd *cmd = NULL;
    g_autoptr(GError) err = NULL;
    json_object *ret = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS(pt_cmds) && !cmd; i++)
        if (g_str_equal(pt_cmds[i].name, m->name))
            cmd = &pt_cmds[i];
    if (!cmd) {
        err = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_COMMAND_NOT_FOUND,
                          "%.64s: no such command", m->name);
        pt_conn_reply_error(conn, m->id, err);
        return;
    }
    if (!pt_conn_may(conn, cmd->mutating)) {
        err = g_error_new(PT_CONTROL_ERROR, PT_CONTROL_ERROR_PERMISSION_DENIED,
                          "%s: uid %u may not %s", cmd->name, (unsigned)conn->uid,
                          cmd->mutating ? "change settings" : "read status");
        pt_warn(NULL, NULL, "control: refused %s from uid %u (pid %d)", cmd->name,
                (unsigned)conn->uid, (int)conn->pid);
        pt_conn_reply_error(conn, m->id, err);
        return;
    }
    conn->cur_id = m->id;
    if (!cmd->func(conn, m->body, &ret, &err)) {
        conn->cur_id = NULL;
        pt_conn_reply_error(conn, m->id, err);
        return;
    }
    conn->cur_id = NULL;
    /* export answers by itself, after the data. */
    if (ret) {
        pt_conn_reply(conn, m->id, ret);
        json_object_put(ret);
    }
}
