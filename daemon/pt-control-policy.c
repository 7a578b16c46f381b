/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands that change what the policy does: policy-get,
 * policy-set, policy-clear, override-set, override-clear and mode-set
 * (docs/CONTROL.md).
 */
#include "pt-control-private.h"
#include "pt-log.h"

gboolean
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

gboolean
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

gboolean
pt_cmd_policy_clear(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *target;

    if (!pt_arg_str(args, "target", TRUE, &target, error) ||
        !pt_daemon_policy_clear(pt_conn_daemon(conn), target, error))
        return FALSE;
    *ret = json_object_new_object();
    return TRUE;
}

gboolean
pt_cmd_override_set(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    const char *iothread, *for_text, *reason;
    PtTarget *t = pt_find(conn, args, &iothread, error);
    gint64 max = 0, grow = -1, shrink = -1, for_ms = 0, id = 0, expires = METRIC_ABSENT;
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
    json_object_object_add(*ret, "expires_ms", expires == METRIC_ABSENT ? NULL :
                           json_object_new_int64(expires));
    json_object_object_add(*ret, "replaced", replaced ? json_object_new_int64(replaced) : NULL);
    return TRUE;
}

gboolean
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

gboolean
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
