/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands that read the store's history: history and
 * host-history (docs/CONTROL.md), and the filter export shares.
 */
#include "pt-control-private.h"

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

char *
pt_target_identity(PtDaemon *d, const char *vm, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) named = NULL;
    g_autofree char *list = NULL;
    PtTarget *t = pt_daemon_resolve_target(d, vm, &err);

    if (t)
        return g_strdup(t->name);
    /* A name two targets go by asks for a path. */
    if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
        g_propagate_error(error, g_steal_pointer(&err));
        return NULL;
    }
    /* A VM that has exited is no longer listed: the store knows the name
     * it went by, as polltunectl --db does. */
    if (!(named = store_target_lookup(pt_daemon_get_store(d), vm, error)))
        return NULL;
    if (named->len == 1)
        return g_strdup(named->pdata[0]);
    if (!named->len) {
        pt_not_found(error, vm);
        return NULL;
    }
    g_ptr_array_add(named, NULL);
    list = g_strjoinv(", ", (char **)named->pdata);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "%s: the name of %u recorded targets: %s; name one by its identity", vm,
                named->len - 1, list);
    return NULL;
}

gboolean
pt_cmd_history(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = pt_conn_daemon(conn);
    g_autoptr(StoreCursor) cur = NULL;
    g_autofree char *target = NULL;
    StoreFilter f;
    const StoreRow *row;
    json_object *rows;
    guint n = 0;

    if (!pt_filter_from_args(args, &f, error))
        return FALSE;
    if (!f.target)
        return pt_arg_bad(error, "target", "missing");
    if (!(target = pt_target_identity(d, f.target, error)))
        return FALSE;
    f.target = target;
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
gboolean
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
