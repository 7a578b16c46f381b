/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-control-private: shared by the control server and its commands.
 */
#pragma once

#include <sys/types.h>

#include "pt-control-limits.h"
#include "pt-daemon.h"
#include "pt-control-error.h"
#include "qmp-error.h"
#include "qmp-json.h"
#include "qmp-stream.h"

typedef struct PtExportJob PtExportJob;

struct PtControl {
    PtDaemon *d;
    char *path;
    int fd;
    guint watch;
    guint pause_timer;              /* accepting again after EMFILE */
    guint64 out_of_fds;             /* accept4() failures for lack of them */
    PtControlLimits lim;
    gboolean have_read_gid, have_admin_gid;
    gid_t read_gid, admin_gid;
    GList *conns;
    guint n_conns;
    dev_t sock_dev;                 /* the socket file we bound */
    ino_t sock_ino;
};

typedef struct PtConn PtConn;

/* What a connection hands its work to: the table of commands and the
 * export, which stand above the connections that call them. */
typedef struct {
    void (*dispatch)(PtConn *conn, QmpMessage *m);
    void (*export_start)(PtConn *conn);
} PtConnOps;

struct PtConn {
    PtControl *ctl;                 /* NULL once closed */
    const PtConnOps *ops;
    int fd;
    guint in_watch, out_watch, idle_timer;
    uid_t uid;
    gid_t gid;
    pid_t pid;
    gid_t *groups;
    int n_groups;
    QmpStream *stream;
    GString *out;
    gsize out_pos;
    double tokens;
    gint64 refill_us;
    gboolean close_after_flush;
    json_object *cur_id;            /* id of the request being handled */
    PtExportJob *pending_export;    /* waits for the output to drain */
    gboolean exporting;             /* a worker thread owns the socket */
    gboolean orphaned;              /* closed during an export */
};

/* pt-control-conn.c */
void pt_conn_send(PtConn *conn, const char *line);
void pt_conn_reply(PtConn *conn, json_object *id, json_object *ret);
void pt_conn_reply_error(PtConn *conn, json_object *id, const GError *err);
gboolean pt_conn_may(PtConn *conn, gboolean mutating);
void pt_conn_resume(PtConn *conn);
/* Restart the idle timeout. */
void pt_conn_touch(PtConn *conn);
/* The socket is closed at once; the connection is freed when nothing uses
 * it any more. */
void pt_conn_close(PtConn *conn);
void pt_conn_free(PtConn *conn);
/* QmpStream's handler of one request line. */
gboolean pt_conn_on_message(const char *text, gsize len, gpointer data, GError **error);

/* The daemon @conn's control socket belongs to. */
static inline PtDaemon *
pt_conn_daemon(PtConn *conn)
{
    return conn->ctl->d;
}

/* Every control command: fills *@ret with the reply (or answers by itself,
 * leaving it NULL), or fails with a PT_CONTROL_ERROR for the client. */
typedef gboolean (*PtCmdFunc)(PtConn *conn, json_object *args, json_object **ret,
                              GError **error);

/* pt-control-cmds.c: the table of commands */
void pt_control_dispatch(PtConn *conn, QmpMessage *m);

/* pt-control-args.c: the checks of their arguments */
/* FALSE with InvalidParameter naming @key and @why. */
gboolean pt_arg_bad(GError **error, const char *key, const char *why);
/* A string argument (NULL when absent and optional): UTF-8 without NUL or
 * other control characters, at most 4096 bytes; InvalidParameter naming
 * @key else. */
gboolean pt_arg_str(json_object *args, const char *key, gboolean required,
                    const char **out, GError **error);
/* An integer argument; *@present says whether it was given. */
gboolean pt_arg_int(json_object *args, const char *key, gint64 *out, gboolean *present,
                    GError **error);
/* The same, refusing a negative one. */
gboolean pt_arg_uint(json_object *args, const char *key, gint64 *out, gboolean *present,
                     GError **error);
/* A boolean argument, FALSE when absent; InvalidParameter for another type. */
gboolean pt_arg_bool(json_object *args, const char *key, gboolean *out, GError **error);

/* pt-control-json.c: the JSON several families answer with */
json_object *pt_json_triple(const PolicyTriple *t);
json_object *pt_json_metrics(const PolicyMetrics *m);
/* An operator's override: id, who, when, why, the values and the expiry. */
json_object *pt_json_override(const PolicyOverrideInfo *ov);
void pt_json_num(json_object *o, const char *key, double v);
/* The target named by "target", and "iothread" when given; NotFound else. */
PtTarget *pt_find(PtConn *conn, json_object *args, const char **iothread, GError **error);
/* FALSE with NotFound for @target, which the command cannot speak about. */
gboolean pt_not_found(GError **error, const char *target);
/* @t's iothreads (PtIothread *, borrowed) in the order of their ids. */
GPtrArray *pt_sorted_iothreads(PtTarget *t);
/* The names @t goes by, added to @o. */
void pt_json_target_names(json_object *o, const PtTarget *t);

/* pt-control-status.c: status, list, show */
gboolean pt_cmd_version(PtConn *conn, json_object *args, json_object **ret, GError **error);
gboolean pt_cmd_capabilities(PtConn *conn, json_object *args, json_object **ret,
                             GError **error);
gboolean pt_cmd_status(PtConn *conn, json_object *args, json_object **ret, GError **error);
gboolean pt_cmd_list(PtConn *conn, json_object *args, json_object **ret, GError **error);
gboolean pt_cmd_show(PtConn *conn, json_object *args, json_object **ret, GError **error);

/* pt-control-history.c */
/* since/until/target/iothread/resolution of history and export. */
gboolean pt_filter_from_args(json_object *args, StoreFilter *f, GError **error);
/* The identity the store keeps the VM @vm names under (a new string): a
 * target tuned now by its identity or the name it goes by, else one the
 * store recorded by its identity or the name it went by.  NULL with
 * NotFound when none is: what the history commands say of a target they
 * know nothing of; with InvalidParameter, listing them, when the name is
 * several recorded targets'. */
char *pt_target_identity(PtDaemon *d, const char *vm, GError **error);
gboolean pt_cmd_history(PtConn *conn, json_object *args, json_object **ret, GError **error);
gboolean pt_cmd_host_history(PtConn *conn, json_object *args, json_object **ret,
                             GError **error);

/* pt-control-policy.c */
gboolean pt_cmd_policy_get(PtConn *conn, json_object *args, json_object **ret,
                           GError **error);
gboolean pt_cmd_policy_set(PtConn *conn, json_object *args, json_object **ret,
                           GError **error);
gboolean pt_cmd_policy_clear(PtConn *conn, json_object *args, json_object **ret,
                             GError **error);
gboolean pt_cmd_override_set(PtConn *conn, json_object *args, json_object **ret,
                             GError **error);
gboolean pt_cmd_override_clear(PtConn *conn, json_object *args, json_object **ret,
                               GError **error);
gboolean pt_cmd_mode_set(PtConn *conn, json_object *args, json_object **ret, GError **error);

/* pt-control-explain.c */
json_object *pt_json_explain(PtDaemon *d, PtTarget *t, PtIothread *io);
gboolean pt_cmd_explain(PtConn *conn, json_object *args, json_object **ret, GError **error);

/* pt-control-memory.c */
gboolean pt_cmd_memory(PtConn *conn, json_object *args, json_object **ret, GError **error);
gboolean pt_cmd_forget(PtConn *conn, json_object *args, json_object **ret, GError **error);

/* pt-control-export.c */
void pt_control_export_start(PtConn *conn);
gboolean pt_cmd_export(PtConn *conn, json_object *args, json_object **ret, GError **error);
