/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands of docs/CONTROL.md: their table, the checks of
 * their arguments, and the commands that attach, detach, render the
 * metrics and reload.  The other families have files of their own
 * (pt-control-status.c, -history.c, -policy.c, -explain.c, -memory.c,
 * -export.c).
 */
#include "pt-control-private.h"
#include "pt-log.h"
#include "pt-metrics.h"
#include "common/pt-escape.h"

#include <string.h>

typedef struct {
    const char *name;
    gboolean mutating;
    PtCmdFunc func;
} PtCmd;

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
