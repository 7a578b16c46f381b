/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "common/pt-enum-table.h"
#include "qmp-commands.h"
#include "qmp-decode.h"
#include "qmp-json.h"

/* ---- string tables ----------------------------------------------------- */

PT_ENUM_IMPL(qmp_iothread_prop, QmpIothreadProp, QMP_IOTHREAD_PROP_MAX,
             [QMP_IOTHREAD_POLL_MAX_NS] = "poll-max-ns",
             [QMP_IOTHREAD_POLL_GROW] = "poll-grow",
             [QMP_IOTHREAD_POLL_SHRINK] = "poll-shrink",
             [QMP_IOTHREAD_AIO_MAX_BATCH] = "aio-max-batch")

PT_ENUM_IMPL_TO_STRING(qmp_stats_target, QmpStatsTarget, QMP_STATS_TARGET_MAX,
                       [QMP_STATS_TARGET_VM] = "vm",
                       [QMP_STATS_TARGET_VCPU] = "vcpu")

/* ---- query-iothreads --------------------------------------------------- */

void
qmp_query_iothreads_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud)
{
    qmp_client_call_async(c, "query-iothreads", NULL, 0, qmp_decode_iothreads,
                          (GDestroyNotify)g_ptr_array_unref, cb, ud);
}

GPtrArray *
qmp_query_iothreads_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error);
}

/* ---- qom-set / qom-get on iothreads ------------------------------------ */

/* QOM ids are letters, digits, '-', '.', '_' and must start with a letter;
 * refusing anything else keeps a hostile name from reaching other paths. */
static gboolean
qmp_qom_id_valid(const char *id)
{
    if (!id || !g_ascii_isalpha(*id))
        return FALSE;
    for (const char *p = id; *p; p++)
        if (!g_ascii_isalnum(*p) && *p != '-' && *p != '.' && *p != '_')
            return FALSE;
    return TRUE;
}

static json_object *
qmp_iothread_args(const char *iothread_id, QmpIothreadProp prop)
{
    json_object *args = json_object_new_object();
    g_autofree char *path = g_strdup_printf("/objects/%s", iothread_id);

    json_object_object_add(args, "path", json_object_new_string(path));
    json_object_object_add(args, "property",
                           json_object_new_string(qmp_iothread_prop_to_string(prop)));
    return args;
}

/* NULL if the write may go out, else why not. */
static GError *
qmp_iothread_set_check(QmpClient *c, const char *iothread_id,
                       QmpIothreadProp prop, gint64 value, gint64 max)
{
    const char *name = qmp_iothread_prop_to_string(prop);

    if (!name)
        return g_error_new(QMP_ERROR, QMP_ERROR_INVALID,
                           "%s: unknown iothread property %d",
                           qmp_client_get_name(c), prop);
    if (!qmp_qom_id_valid(iothread_id))
        return g_error_new(QMP_ERROR, QMP_ERROR_INVALID,
                           "%s: invalid iothread id '%s'",
                           qmp_client_get_name(c), iothread_id ? iothread_id : "");
    if (value < 0)
        return g_error_new(QMP_ERROR, QMP_ERROR_INVALID,
                           "%s/%s: %s=%" G_GINT64_FORMAT ": negative values are refused",
                           qmp_client_get_name(c), iothread_id, name, value);
    if (value > max)
        return g_error_new(QMP_ERROR, QMP_ERROR_INVALID,
                           "%s/%s: %s=%" G_GINT64_FORMAT ": above the bound of %"
                           G_GINT64_FORMAT, qmp_client_get_name(c), iothread_id,
                           name, value, max);
    return NULL;
}

void
qmp_iothread_set_async(QmpClient *c, const char *iothread_id,
                       QmpIothreadProp prop, gint64 value, gint64 max,
                       GAsyncReadyCallback cb, gpointer ud)
{
    GError *bad = qmp_iothread_set_check(c, iothread_id, prop, value, max);
    json_object *args;

    if (bad) {
        GTask *task = g_task_new(c, NULL, cb, ud);

        g_task_set_source_tag(task, qmp_client_call_async);
        g_task_return_error(task, bad);
        g_object_unref(task);
        return;
    }
    args = qmp_iothread_args(iothread_id, prop);
    json_object_object_add(args, "value", json_object_new_int64(value));
    qmp_client_call_async(c, "qom-set", args, 0, qmp_decode_empty, NULL, cb, ud);
}

gboolean
qmp_iothread_set_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error) != NULL;
}

/* ---- query-blockstats and device -> iothread --------------------------- */

void
qmp_query_blockstats_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud)
{
    qmp_client_call_async(c, "query-blockstats", NULL, 0, qmp_decode_blockstats,
                          (GDestroyNotify)g_ptr_array_unref, cb, ud);
}

GPtrArray *
qmp_query_blockstats_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error);
}

void
qmp_query_block_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud)
{
    qmp_client_call_async(c, "query-block", NULL, 0, qmp_decode_block,
                          (GDestroyNotify)g_ptr_array_unref, cb, ud);
}

GPtrArray *
qmp_query_block_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error);
}

/* ---- device -> iothreads ---------------------------------------------- */

typedef enum {
    QMP_DEVMAP_MAPPING,
    QMP_DEVMAP_LINK,
    QMP_DEVMAP_BUS,
} QmpDevMapStep;

static const struct {
    const char *property;
    QmpDecodeFunc decode;
    GDestroyNotify free;
} qmp_devmap_steps[] = {
    [QMP_DEVMAP_MAPPING] = { "iothread-vq-mapping", qmp_decode_qom_vq_mapping,
                             (GDestroyNotify)g_strfreev },
    [QMP_DEVMAP_LINK] = { "iothread", qmp_decode_qom_link, g_free },
    [QMP_DEVMAP_BUS] = { "parent_bus", qmp_decode_qom_link, g_free },
};

/* Where the walk stands: the object asked and the property next asked. */
typedef struct {
    char *path;
    QmpDevMapStep step;
    gboolean at_controller;     /* walked up from a disk once already */
    char **result;              /* set once the walk is over */
} QmpDevMapWalk;

static void
qmp_devmap_walk_free(QmpDevMapWalk *w)
{
    g_free(w->path);
    g_strfreev(w->result);
    g_free(w);
}

static QmpDevMapWalk *
qmp_devmap_walk_new(const char *qdev)
{
    QmpDevMapWalk *w = g_new0(QmpDevMapWalk, 1);

    w->path = qdev[0] == '/' ? g_strdup(qdev) : g_strdup_printf("/machine/peripheral/%s", qdev);
    return w;
}

static json_object *
qmp_devmap_args(const QmpDevMapWalk *w)
{
    json_object *args = json_object_new_object();

    json_object_object_add(args, "path", json_object_new_string(w->path));
    json_object_object_add(args, "property",
                           json_object_new_string(qmp_devmap_steps[w->step].property));
    return args;
}

static char **
qmp_strv_of(char *id)
{
    char **v = g_new0(char *, 2);

    v[0] = id;
    return v;
}

/*
 * Take one step's answer: the decoded value, or NULL when the peer
 * answered with an error (the property or the object is not there).
 * Returns TRUE when the walk is over and w->result is set.
 */
static gboolean
qmp_devmap_advance(QmpDevMapWalk *w, gpointer value)
{
    char *link = value;
    char *slash;

    switch (w->step) {
    case QMP_DEVMAP_MAPPING:
        if (value && ((char **)value)[0]) {
            w->result = value;
            return TRUE;
        }
        g_strfreev(value);      /* [] : the single link decides */
        w->step = QMP_DEVMAP_LINK;
        return FALSE;
    case QMP_DEVMAP_LINK:
        if (link) {
            /* "/objects/iot0" -> "iot0"; "" is the main loop. */
            slash = strrchr(link, '/');
            w->result = *link ? qmp_strv_of(g_strdup(slash ? slash + 1 : link))
                              : g_new0(char *, 1);
            g_free(link);
            return TRUE;
        }
        if (w->at_controller) {
            w->result = g_new0(char *, 1);
            return TRUE;
        }
        w->step = QMP_DEVMAP_BUS;
        return FALSE;
    case QMP_DEVMAP_BUS:
    default:
        /* The bus is a child of its controller: drop the last component. */
        if (!link || !(slash = strrchr(link, '/')) || slash == link) {
            g_free(link);
            w->result = g_new0(char *, 1);
            return TRUE;
        }
        *slash = 0;
        g_free(w->path);
        w->path = link;
        w->at_controller = TRUE;
        w->step = QMP_DEVMAP_MAPPING;
        return FALSE;
    }
}

static void qmp_devmap_ask(QmpClient *c, GTask *task);

static void
qmp_devmap_got(GObject *obj, GAsyncResult *res, gpointer data)
{
    GTask *task = data;
    QmpDevMapWalk *w = g_task_get_task_data(task);
    GError *err = NULL;
    gpointer v = qmp_client_call_finish(QMP_CLIENT(obj), res, &err);

    if (!v && !g_error_matches(err, QMP_ERROR, QMP_ERROR_COMMAND)) {
        g_task_return_error(task, err);
        g_object_unref(task);
        return;
    }
    g_clear_error(&err);
    if (qmp_devmap_advance(w, v)) {
        g_task_return_boolean(task, TRUE);
        g_object_unref(task);
        return;
    }
    qmp_devmap_ask(QMP_CLIENT(obj), task);
}

static void
qmp_devmap_ask(QmpClient *c, GTask *task)
{
    QmpDevMapWalk *w = g_task_get_task_data(task);

    qmp_client_call_async(c, "qom-get", qmp_devmap_args(w), 0,
                          qmp_devmap_steps[w->step].decode,
                          qmp_devmap_steps[w->step].free, qmp_devmap_got, task);
}

void
qmp_device_iothreads_async(QmpClient *c, const char *qdev, GAsyncReadyCallback cb,
                           gpointer ud)
{
    GTask *task = g_task_new(c, NULL, cb, ud);

    g_task_set_source_tag(task, qmp_device_iothreads_async);
    g_task_set_task_data(task, qmp_devmap_walk_new(qdev),
                         (GDestroyNotify)qmp_devmap_walk_free);
    qmp_devmap_ask(c, task);
}

gboolean
qmp_device_iothreads_finish(QmpClient *c, GAsyncResult *res, char ***iothreads,
                            GError **error)
{
    QmpDevMapWalk *w = g_task_get_task_data(G_TASK(res));

    if (!g_task_propagate_boolean(G_TASK(res), error))
        return FALSE;
    *iothreads = g_steal_pointer(&w->result);
    return TRUE;
}

/* ---- query-stats ------------------------------------------------------- */

/*
 * The statistics asked for, per target.  All of KVM's vCPU statistics come
 * to about 2.9 KB per vCPU, which grows past any fixed message limit with
 * the vCPU count; these few take about 200 bytes per vCPU.  The vm target
 * has one entity whatever the size of the VM, so it gets everything.
 */
static const char *const qmp_stats_vcpu_names[] = {
    "exits", "io_exits", "mmio_exits", "halt_exits", NULL,
};

static const char *const *const qmp_stats_names_table[QMP_STATS_TARGET_MAX] = {
    [QMP_STATS_TARGET_VM] = NULL,
    [QMP_STATS_TARGET_VCPU] = qmp_stats_vcpu_names,
};

const char *const *
qmp_stats_target_names(QmpStatsTarget t)
{
    return t >= 0 && t < QMP_STATS_TARGET_MAX ? qmp_stats_names_table[t] : NULL;
}

static json_object *
qmp_stats_args(QmpStatsTarget target)
{
    json_object *args = json_object_new_object();
    json_object *providers = json_object_new_array();
    json_object *kvm = json_object_new_object();
    const char *const *names = qmp_stats_target_names(target);

    json_object_object_add(kvm, "provider", json_object_new_string("kvm"));
    if (names) {
        /* StatsRequest's names member, as old as query-stats (QEMU 7.1). */
        json_object *list = json_object_new_array();

        for (gsize i = 0; names[i]; i++)
            json_object_array_add(list, json_object_new_string(names[i]));
        json_object_object_add(kvm, "names", list);
    }
    json_object_array_add(providers, kvm);
    json_object_object_add(args, "target",
                           json_object_new_string(qmp_stats_target_to_string(target)));
    json_object_object_add(args, "providers", providers);
    return args;
}

void
qmp_query_stats_async(QmpClient *c, QmpStatsTarget target,
                      GAsyncReadyCallback cb, gpointer ud)
{
    GTask *task;

    if (!qmp_stats_target_to_string(target)) {
        task = g_task_new(c, NULL, cb, ud);
        g_task_set_source_tag(task, qmp_client_call_async);
        g_task_return_new_error(task, QMP_ERROR, QMP_ERROR_INVALID,
                                "%s: invalid stats target %d",
                                qmp_client_get_name(c), target);
        g_object_unref(task);
        return;
    }
    qmp_client_call_async(c, "query-stats", qmp_stats_args(target), 0,
                          qmp_decode_stats, (GDestroyNotify)qmp_stats_free, cb, ud);
}

QmpStats *
qmp_query_stats_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error);
}

/* ---- query-name ------------------------------------------------------- */

void
qmp_query_name_async(QmpClient *c, GAsyncReadyCallback cb, gpointer ud)
{
    qmp_client_call_async(c, "query-name", NULL, 0, qmp_decode_name, g_free, cb, ud);
}

char *
qmp_query_name_finish(QmpClient *c, GAsyncResult *res, GError **error)
{
    return qmp_client_call_finish(c, res, error);
}
