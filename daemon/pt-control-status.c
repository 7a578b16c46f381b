/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands that show what the daemon tunes (status, list,
 * show; docs/CONTROL.md), and the JSON of targets, iothreads and
 * decisions they answer with (the pieces other commands answer with too
 * are in pt-control-json.c).
 */
#include "pt-config.h"
#include "pt-control-private.h"

#include <math.h>
#include <string.h>

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
    {
        g_autofree char *key = pt_daemon_device_key(t, io);

        json_object_object_add(o, "device_key", key ? json_object_new_string(key) : NULL);
    }
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

gboolean
pt_cmd_version(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    *ret = json_object_new_object();
    json_object_object_add(*ret, "version", json_object_new_string(PT_VERSION));
    json_object_object_add(*ret, "protocol", json_object_new_int(1));
    return TRUE;
}

gboolean
pt_cmd_capabilities(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    *ret = json_object_new_object();
    return TRUE;
}

gboolean
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

gboolean
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
        json_object_object_add(o, "old", row->old_triple.poll_max_ns == METRIC_ABSENT ? NULL :
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

gboolean
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
