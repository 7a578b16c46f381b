/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-qmp-sync: see pt-test-qmp-sync.h.  A command the daemon sends
 * goes through its asynchronous form here, so that a test exercises the
 * daemon's path, checks and all; one only tests send is run with the
 * client's own synchronous call and its decoder.
 */
#include "pt-test-qmp-sync.h"
#include "qmp-decode.h"

static void
got_result(GObject *source, GAsyncResult *res, gpointer data)
{
    *(GAsyncResult **)data = g_object_ref(res);
}

/* Iterates the thread-default context, where the command's callback runs,
 * until *@res is set by got_result(). */
static GAsyncResult *
wait_result(GAsyncResult **res)
{
    g_autoptr(GMainContext) context = g_main_context_ref_thread_default();

    while (!*res)
        g_main_context_iteration(context, TRUE);
    return *res;
}

GPtrArray *
qmp_query_iothreads_sync(QmpClient *c, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_query_iothreads_async(c, got_result, &res);
    return qmp_query_iothreads_finish(c, wait_result(&res), error);
}

gboolean
qmp_iothread_set_sync(QmpClient *c, const char *iothread_id, QmpIothreadProp prop,
                      gint64 value, gint64 max, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_iothread_set_async(c, iothread_id, prop, value, max, got_result, &res);
    return qmp_iothread_set_finish(c, wait_result(&res), error);
}

gboolean
qmp_iothread_get_sync(QmpClient *c, const char *iothread_id, QmpIothreadProp prop,
                      gint64 *value, GError **error)
{
    g_autofree char *path = g_strdup_printf("/objects/%s", iothread_id);
    json_object *args = json_object_new_object();
    g_autofree gint64 *v = NULL;

    json_object_object_add(args, "path", json_object_new_string(path));
    json_object_object_add(args, "property",
                           json_object_new_string(qmp_iothread_prop_to_string(prop)));
    v = qmp_client_call_sync(c, "qom-get", args, qmp_decode_qom_int, g_free, error);
    if (!v)
        return FALSE;
    *value = *v;
    return TRUE;
}

GPtrArray *
qmp_query_blockstats_sync(QmpClient *c, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_query_blockstats_async(c, got_result, &res);
    return qmp_query_blockstats_finish(c, wait_result(&res), error);
}

GPtrArray *
qmp_query_block_sync(QmpClient *c, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_query_block_async(c, got_result, &res);
    return qmp_query_block_finish(c, wait_result(&res), error);
}

gboolean
qmp_device_iothreads_sync(QmpClient *c, const char *qdev, char ***iothreads, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_device_iothreads_async(c, qdev, got_result, &res);
    return qmp_device_iothreads_finish(c, wait_result(&res), iothreads, error);
}

QmpStats *
qmp_query_stats_sync(QmpClient *c, QmpStatsTarget target, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_query_stats_async(c, target, got_result, &res);
    return qmp_query_stats_finish(c, wait_result(&res), error);
}

GPtrArray *
qmp_query_stats_schemas_sync(QmpClient *c, GError **error)
{
    json_object *args = json_object_new_object();

    json_object_object_add(args, "provider", json_object_new_string("kvm"));
    return qmp_client_call_sync(c, "query-stats-schemas", args, qmp_decode_stats_schemas,
                                (GDestroyNotify)g_ptr_array_unref, error);
}

QmpStatus *
qmp_query_status_sync(QmpClient *c, GError **error)
{
    return qmp_client_call_sync(c, "query-status", NULL, qmp_decode_status,
                                (GDestroyNotify)qmp_status_free, error);
}

char *
qmp_query_name_sync(QmpClient *c, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    qmp_query_name_async(c, got_result, &res);
    return qmp_query_name_finish(c, wait_result(&res), error);
}

QmpVersion *
qmp_query_version_sync(QmpClient *c, GError **error)
{
    return qmp_client_call_sync(c, "query-version", NULL, qmp_decode_version,
                                (GDestroyNotify)qmp_version_free, error);
}
