/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-decode.h"
#include "qmp-json.h"

static gboolean
qmp_decode_fail(GError **error, const char *what, const char *why)
{
    g_set_error(error, QMP_ERROR, QMP_ERROR_UNEXPECTED,
                "reply: %s %s", what, why);
    return FALSE;
}

static gboolean
qmp_decode_is(json_object *o, json_type t)
{
    return o && json_object_is_type(o, t);
}

static gpointer
qmp_decode_null(GError **error, const char *what, const char *why)
{
    qmp_decode_fail(error, what, why);
    return NULL;
}

/* A required non-negative integer member. */
static gboolean
qmp_decode_uint(json_object *obj, const char *key, guint64 *out, GError **error)
{
    gint64 v;

    if (qmp_json_get_uint(obj, key, out))
        return TRUE;
    if (qmp_json_get_int(obj, key, &v))
        return qmp_decode_fail(error, key, "is negative");
    return qmp_decode_fail(error, key, "is missing or not an integer");
}

void
qmp_iothread_free(QmpIothread *t)
{
    if (!t)
        return;
    g_free(t->id);
    g_free(t);
}

gpointer
qmp_decode_iothreads(json_object *ret, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)qmp_iothread_free);

    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "query-iothreads", "is not an array");
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        g_autoptr(QmpIothread) t = g_new0(QmpIothread, 1);
        const char *id = qmp_json_get_string(e, "id");
        gint64 batch;

        if (!id)
            return qmp_decode_null(error, "iothread id", "is missing");
        t->id = g_strdup(id);
        if (!qmp_json_get_int(e, "thread-id", &t->thread_id) || t->thread_id <= 0)
            return qmp_decode_null(error, "thread-id", "is missing or not positive");
        if (!qmp_decode_uint(e, "poll-max-ns", &t->poll_max_ns, error) ||
            !qmp_decode_uint(e, "poll-grow", &t->poll_grow, error) ||
            !qmp_decode_uint(e, "poll-shrink", &t->poll_shrink, error))
            return NULL;
        /* aio-max-batch appeared in QEMU 6.1; older peers lack it. */
        if (qmp_json_get_int(e, "aio-max-batch", &batch) && batch > 0)
            t->aio_max_batch = (guint64)batch;
        g_ptr_array_add(out, g_steal_pointer(&t));
    }
    return g_steal_pointer(&out);
}

void
qmp_block_stats_free(QmpBlockStats *s)
{
    if (!s)
        return;
    g_free(s->device);
    g_free(s->node_name);
    g_free(s->qdev);
    g_free(s);
}

/*
 * The members of a query-blockstats entry's "stats" (QEMU's
 * BlockDeviceStats, qapi/block-core.json) that polltune keeps: one line
 * per reply key, each the metric it fills.  Every key is required: QEMU
 * has sent them all since 1.x (flushes move no data: no flush_bytes).
 */
static const struct {
    const char *key;
    MetricId id;
} blockstats_keys[] = {
    { "rd_operations",          METRIC_RD_OPS },
    { "rd_bytes",               METRIC_RD_BYTES },
    { "rd_total_time_ns",       METRIC_RD_TIME_NS },
    { "wr_operations",          METRIC_WR_OPS },
    { "wr_bytes",               METRIC_WR_BYTES },
    { "wr_total_time_ns",       METRIC_WR_TIME_NS },
    { "flush_operations",       METRIC_FLUSH_OPS },
    { "flush_total_time_ns",    METRIC_FLUSH_TIME_NS },
};

/* The counters of one "stats" object into @v. */
static gboolean
qmp_decode_block_counters(json_object *stats, MetricVec *v, GError **error)
{
    metric_vec_init(v);
    for (guint i = 0; i < G_N_ELEMENTS(blockstats_keys); i++) {
        guint64 u;

        if (!qmp_decode_uint(stats, blockstats_keys[i].key, &u, error))
            return FALSE;
        /* QEMU's counters are uint64; a real one stays below 2^63 (292
         * years of ns), so a larger reading is held at the top. */
        v->v[blockstats_keys[i].id] = (gint64)MIN(u, (guint64)G_MAXINT64);
    }
    return TRUE;
}

gpointer
qmp_decode_blockstats(json_object *ret, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)qmp_block_stats_free);

    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "query-blockstats", "is not an array");
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        json_object *stats = NULL;
        g_autoptr(QmpBlockStats) s = g_new0(QmpBlockStats, 1);

        if (!qmp_decode_is(e, json_type_object) ||
            !json_object_object_get_ex(e, "stats", &stats) ||
            !qmp_decode_is(stats, json_type_object))
            return qmp_decode_null(error, "blockstats entry", "has no stats object");
        s->device = g_strdup(qmp_json_get_string(e, "device"));
        if (!s->device)
            s->device = g_strdup("");
        s->node_name = g_strdup(qmp_json_get_string(e, "node-name"));
        s->qdev = g_strdup(qmp_json_get_string(e, "qdev"));
        if (!qmp_decode_block_counters(stats, &s->v, error))
            return NULL;
        g_ptr_array_add(out, g_steal_pointer(&s));
    }
    return g_steal_pointer(&out);
}

void
qmp_block_info_free(QmpBlockInfo *b)
{
    if (!b)
        return;
    g_free(b->device);
    g_free(b->qdev);
    g_free(b->file);
    g_free(b);
}

/* query-block: BlockInfo has "device" always, "qdev" for a backend with a
 * device, "inserted" (BlockDeviceInfo, its "file" always) with a medium. */
gpointer
qmp_decode_block(json_object *ret, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)qmp_block_info_free);

    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "query-block", "is not an array");
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        json_object *inserted = NULL;
        g_autoptr(QmpBlockInfo) b = g_new0(QmpBlockInfo, 1);
        const char *device = qmp_json_get_string(e, "device");

        if (!qmp_decode_is(e, json_type_object) || !device)
            return qmp_decode_null(error, "block entry", "has no device");
        b->device = g_strdup(device);
        b->qdev = g_strdup(qmp_json_get_string(e, "qdev"));
        if (json_object_object_get_ex(e, "inserted", &inserted)) {
            const char *file = qmp_json_get_string(inserted, "file");

            if (!file)
                return qmp_decode_null(error, "block inserted file", "is missing");
            b->file = g_strdup(file);
        }
        g_ptr_array_add(out, g_steal_pointer(&b));
    }
    return g_steal_pointer(&out);
}

static void
qmp_stats_entity_free(QmpStatsEntity *e)
{
    if (!e)
        return;
    g_free(e->provider);
    g_free(e->qom_path);
    g_hash_table_unref(e->values);
    g_free(e);
}

void
qmp_stats_free(QmpStats *s)
{
    if (!s)
        return;
    g_ptr_array_unref(s->entities);
    g_free(s);
}

gboolean
qmp_stats_sum(const QmpStats *s, const char *name, guint64 *out)
{
    gboolean found = FALSE;
    guint64 sum = 0;

    for (guint i = 0; i < s->entities->len; i++) {
        QmpStatsEntity *e = s->entities->pdata[i];
        guint64 *v = g_hash_table_lookup(e->values, name);

        /* Cumulative counters are summed modulo 2^64, as they wrap in KVM,
         * so a difference of two sums is still the increase. */
        if (v) {
            sum += *v;
            found = TRUE;
        }
    }
    if (found)
        *out = sum;
    return found;
}

gpointer
qmp_decode_stats(json_object *ret, GError **error)
{
    g_autoptr(QmpStats) out = g_new0(QmpStats, 1);

    out->entities = g_ptr_array_new_with_free_func((GDestroyNotify)qmp_stats_entity_free);
    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "query-stats", "is not an array");
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        json_object *stats = NULL;
        QmpStatsEntity *ent;

        if (!qmp_decode_is(e, json_type_object) ||
            !json_object_object_get_ex(e, "stats", &stats) ||
            !qmp_decode_is(stats, json_type_array))
            return qmp_decode_null(error, "stats result", "has no stats array");
        ent = g_new0(QmpStatsEntity, 1);
        ent->provider = g_strdup(qmp_json_get_string(e, "provider"));
        ent->qom_path = g_strdup(qmp_json_get_string(e, "qom-path"));
        ent->values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        g_ptr_array_add(out->entities, ent);
        for (size_t j = 0; j < json_object_array_length(stats); j++) {
            json_object *st = json_object_array_get_idx(stats, j);
            const char *name = qmp_json_get_string(st, "name");
            guint64 v;

            /* StatsValue scalars are uint64.  Histograms (arrays) and
             * booleans are not counters we use. */
            if (!name || !qmp_json_get_uint(st, "value", &v))
                continue;
            g_hash_table_replace(ent->values, g_strdup(name), g_memdup2(&v, sizeof(v)));
        }
    }
    return g_steal_pointer(&out);
}

void
qmp_stat_schema_free(QmpStatSchema *s)
{
    if (!s)
        return;
    g_free(s->provider);
    g_free(s->target);
    g_free(s->name);
    g_free(s->type);
    g_free(s->unit);
    g_free(s);
}

gpointer
qmp_decode_stats_schemas(json_object *ret, GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)qmp_stat_schema_free);

    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "query-stats-schemas", "is not an array");
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        json_object *stats = NULL;

        if (!qmp_decode_is(e, json_type_object) ||
            !json_object_object_get_ex(e, "stats", &stats) ||
            !qmp_decode_is(stats, json_type_array))
            return qmp_decode_null(error, "stats schema", "has no stats array");
        for (size_t j = 0; j < json_object_array_length(stats); j++) {
            json_object *st = json_object_array_get_idx(stats, j);
            const char *name = qmp_json_get_string(st, "name");
            const char *type = qmp_json_get_string(st, "type");
            QmpStatSchema *s;

            if (!name || !type)
                return qmp_decode_null(error, "stat schema", "lacks name or type");
            s = g_new0(QmpStatSchema, 1);
            s->provider = g_strdup(qmp_json_get_string(e, "provider"));
            s->target = g_strdup(qmp_json_get_string(e, "target"));
            s->name = g_strdup(name);
            s->type = g_strdup(type);
            s->unit = g_strdup(qmp_json_get_string(st, "unit"));
            qmp_json_get_int(st, "base", &s->base);
            qmp_json_get_int(st, "exponent", &s->exponent);
            g_ptr_array_add(out, s);
        }
    }
    return g_steal_pointer(&out);
}

void
qmp_status_free(QmpStatus *s)
{
    if (!s)
        return;
    g_free(s->status);
    g_free(s);
}

gpointer
qmp_decode_status(json_object *ret, GError **error)
{
    g_autoptr(QmpStatus) s = g_new0(QmpStatus, 1);
    const char *status = qmp_json_get_string(ret, "status");

    if (!status || !qmp_json_get_bool(ret, "running", &s->running))
        return qmp_decode_null(error, "query-status", "lacks status or running");
    s->status = g_strdup(status);
    return g_steal_pointer(&s);
}

gpointer
qmp_decode_name(json_object *ret, GError **error)
{
    const char *name;

    if (!qmp_decode_is(ret, json_type_object))
        return qmp_decode_null(error, "query-name", "is not an object");
    name = qmp_json_get_string(ret, "name");
    return g_strdup(name ? name : "");
}

void
qmp_version_free(QmpVersion *v)
{
    if (!v)
        return;
    qmp_version_clear(v);
    g_free(v);
}

gpointer
qmp_decode_version(json_object *ret, GError **error)
{
    g_autoptr(QmpVersion) v = g_new0(QmpVersion, 1);
    json_object *qemu = NULL;
    gint64 major, minor, micro;

    if (!qmp_decode_is(ret, json_type_object) ||
        !json_object_object_get_ex(ret, "qemu", &qemu) ||
        !qmp_json_get_int(qemu, "major", &major) ||
        !qmp_json_get_int(qemu, "minor", &minor) ||
        !qmp_json_get_int(qemu, "micro", &micro))
        return qmp_decode_null(error, "query-version", "lacks qemu.{major,minor,micro}");
    v->major = (int)CLAMP(major, 0, G_MAXINT);
    v->minor = (int)CLAMP(minor, 0, G_MAXINT);
    v->micro = (int)CLAMP(micro, 0, G_MAXINT);
    v->package = g_strdup(qmp_json_get_string(ret, "package"));
    return g_steal_pointer(&v);
}

gpointer
qmp_decode_qom_int(json_object *ret, GError **error)
{
    gint64 v;

    if (!qmp_decode_is(ret, json_type_int))
        return qmp_decode_null(error, "qom-get", "is not an integer");
    v = json_object_get_int64(ret);
    return g_memdup2(&v, sizeof(v));
}

gpointer
qmp_decode_qom_link(json_object *ret, GError **error)
{
    if (!qmp_json_string(ret))
        return qmp_decode_null(error, "qom-get", "is not a string without NUL");
    return g_strdup(qmp_json_string(ret));
}

/*
 * [{"iothread": "iot0", "vqs": [0, 2]}, {"iothread": "iot1"}] (QAPI
 * IOThreadVirtQueueMapping, QEMU 9.0+).  Which queues go where does not
 * matter to us: blockstats are per device, so only the set of iothreads is
 * kept.  An id is a plain object id, not a QOM path.  A virtqueue count is
 * at most 1024 per device, so the list is at most that long.
 */
gpointer
qmp_decode_qom_vq_mapping(json_object *ret, GError **error)
{
    g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func(g_free);
    size_t n;

    if (!qmp_decode_is(ret, json_type_array))
        return qmp_decode_null(error, "iothread-vq-mapping", "is not an array");
    n = json_object_array_length(ret);
    if (n > 1024)
        return qmp_decode_null(error, "iothread-vq-mapping", "has more than 1024 entries");
    for (size_t i = 0; i < n; i++) {
        json_object *e = json_object_array_get_idx(ret, i);
        json_object *iot;
        const char *id;
        gboolean dup = FALSE;

        if (!qmp_decode_is(e, json_type_object))
            return qmp_decode_null(error, "iothread-vq-mapping entry", "is not an object");
        if (!json_object_object_get_ex(e, "iothread", &iot) ||
            !(id = qmp_json_string(iot)) || !*id)
            return qmp_decode_null(error, "iothread-vq-mapping entry iothread",
                                   "is missing, empty or not a string");
        for (guint k = 0; k < ids->len && !dup; k++)
            dup = g_str_equal(ids->pdata[k], id);
        if (!dup)
            g_ptr_array_add(ids, g_strdup(id));
    }
    g_ptr_array_add(ids, NULL);
    return g_ptr_array_steal(ids, NULL);
}

gpointer
qmp_decode_empty(json_object *ret, GError **error)
{
    /* Any object will do: a peer may add members to an empty return. */
    if (!qmp_decode_is(ret, json_type_object))
        return qmp_decode_null(error, "return", "is not an object");
    return GINT_TO_POINTER(1);
}
