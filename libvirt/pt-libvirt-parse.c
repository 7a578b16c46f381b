/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-libvirt-parse.h"

#include <stdlib.h>
#include <string.h>

static void
disk_clear(gpointer p)
{
    PtLibvirtDisk *disk = p;

    g_clear_pointer(&disk->dev, g_free);
    g_clear_pointer(&disk->source, g_free);
    g_clear_pointer(&disk->iothreads, g_array_unref);
}

static void
disk_stats_clear(gpointer p)
{
    PtLibvirtDiskStats *disk = p;

    g_clear_pointer(&disk->name, g_free);
}

PtLibvirtDomain *
pt_libvirt_domain_new(const char *name, const char *uuid)
{
    PtLibvirtDomain *d = g_new0(PtLibvirtDomain, 1);

    d->name = g_strdup(name);
    d->uuid = g_strdup(uuid);
    d->iothread_ids = g_array_new(FALSE, FALSE, sizeof(guint));
    d->disks = g_array_new(FALSE, TRUE, sizeof(PtLibvirtDisk));
    g_array_set_clear_func(d->disks, disk_clear);
    return d;
}

void
pt_libvirt_domain_free(PtLibvirtDomain *d)
{
    if (!d)
        return;
    g_free(d->name);
    g_free(d->uuid);
    g_clear_pointer(&d->iothread_ids, g_array_unref);
    g_clear_pointer(&d->disks, g_array_unref);
    g_free(d->virt_type);
    g_free(d->qemu_version_error);
    g_free(d->policy_xml);
    g_free(d->policy_xml_error);
    g_free(d);
}

void
pt_libvirt_domain_stats_free(PtLibvirtDomainStats *s)
{
    if (!s)
        return;
    g_free(s->name);
    g_free(s->uuid);
    g_clear_pointer(&s->iothreads, g_array_unref);
    g_clear_pointer(&s->disks, g_array_unref);
    g_clear_pointer(&s->vm, g_hash_table_unref);
    g_free(s);
}

/* ---- domain XML ------------------------------------------------------- */

typedef struct {
    PtLibvirtDomain *d;
    guint n_iothreads;          /* from <iothreads>N</iothreads> */
    gboolean in_disk;
    PtLibvirtDisk disk;         /* the <disk> being read */
    gboolean disk_scsi;         /* its target bus is 'scsi' */
    guint disk_controller;      /* its <address controller='N'/> */
    GArray *disk_controllers;   /* guint, per disk: the controller of a scsi
                                 * disk without iothreads, G_MAXUINT if none */
    gboolean in_scsi_controller;
    guint controller_index;
    GHashTable *controllers;    /* index -> GArray of guint: scsi controllers' */
} XmlState;

static void
iothreads_add(GArray *a, guint id)
{
    for (guint i = 0; i < a->len; i++)
        if (g_array_index(a, guint, i) == id)
            return;
    g_array_append_val(a, id);
}

static GArray *
controller_iothreads(XmlState *st)
{
    GArray *a = g_hash_table_lookup(st->controllers, GUINT_TO_POINTER(st->controller_index));

    if (!a) {
        a = g_array_new(FALSE, FALSE, sizeof(guint));
        g_hash_table_insert(st->controllers, GUINT_TO_POINTER(st->controller_index), a);
    }
    return a;
}

/* TRUE if the open elements are exactly @path, innermost first. */
static gboolean
at_path(GMarkupParseContext *pc, const char *const *path)
{
    const GSList *stack = g_markup_parse_context_get_element_stack(pc);

    for (; *path; path++, stack = stack->next)
        if (!stack || !g_str_equal(stack->data, *path))
            return FALSE;
    return stack == NULL;
}

static const char *
attr_get(const char **names, const char **values, const char *want)
{
    for (guint i = 0; names[i]; i++)
        if (g_str_equal(names[i], want))
            return values[i];
    return NULL;
}

static gboolean
parse_uint(const char *s, guint *out)
{
    guint64 v;

    if (!s || !g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT, &v, NULL))
        return FALSE;
    *out = (guint)v;
    return TRUE;
}

/*
 * What a disk's <source> says backs it: file=, dev= (block), dir=, a
 * storage pool's volume, or a network disk's protocol and name
 * ("rbd:pool/image"); NULL for none of these (an nvme disk's PCI address,
 * vhost-user), as for a disk without <source> (an empty cdrom).
 */
static char *
disk_source_identity(const char **names, const char **values)
{
    static const char *const paths[] = { "file", "dev", "dir", NULL };
    const char *protocol = attr_get(names, values, "protocol");
    const char *pool = attr_get(names, values, "pool");
    const char *volume = attr_get(names, values, "volume");

    for (guint i = 0; paths[i]; i++) {
        const char *path = attr_get(names, values, paths[i]);

        if (path && *path)
            return g_strdup(path);
    }
    if (protocol && *protocol)
        return g_strconcat(protocol, ":", attr_get(names, values, "name"), NULL);
    if (pool && volume)
        return g_strconcat("volume:", pool, "/", volume, NULL);
    return NULL;
}

static void
xml_start(GMarkupParseContext *pc, const char *element, const char **names,
          const char **values, gpointer user_data, GError **error)
{
    static const char *const iothread_path[] = { "iothread", "iothreadids", "domain", NULL };
    static const char *const disk_path[] = { "disk", "devices", "domain", NULL };
    static const char *const driver_path[] = { "driver", "disk", "devices", "domain", NULL };
    static const char *const target_path[] = { "target", "disk", "devices", "domain", NULL };
    static const char *const address_path[] = { "address", "disk", "devices", "domain", NULL };
    static const char *const source_path[] = { "source", "disk", "devices", "domain", NULL };
    static const char *const disk_iot_path[] = { "iothread", "iothreads", "driver", "disk",
                                                 "devices", "domain", NULL };
    static const char *const ctl_path[] = { "controller", "devices", "domain", NULL };
    static const char *const ctl_driver_path[] = { "driver", "controller", "devices", "domain",
                                                   NULL };
    static const char *const ctl_iot_path[] = { "iothread", "iothreads", "driver", "controller",
                                                "devices", "domain", NULL };
    XmlState *st = user_data;
    guint id;

    if (g_str_equal(element, "domain") && !g_markup_parse_context_get_element_stack(pc)->next) {
        g_free(st->d->virt_type);
        st->d->virt_type = g_strdup(attr_get(names, values, "type"));
    } else if (at_path(pc, iothread_path)) {
        if (!parse_uint(attr_get(names, values, "id"), &id)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "<iothread> without a valid id");
            return;
        }
        g_array_append_val(st->d->iothread_ids, id);
    } else if (at_path(pc, disk_path)) {
        st->in_disk = TRUE;
        memset(&st->disk, 0, sizeof(st->disk));
        st->disk.iothreads = g_array_new(FALSE, FALSE, sizeof(guint));
        st->disk_scsi = FALSE;
        st->disk_controller = 0;
    } else if (st->in_disk && at_path(pc, driver_path)) {
        const char *iot = attr_get(names, values, "iothread");

        if (iot && !parse_uint(iot, &id)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "disk driver iothread='%s' is not a number", iot);
            return;
        }
        if (iot)
            iothreads_add(st->disk.iothreads, id);
    } else if (st->in_disk && at_path(pc, disk_iot_path)) {
        if (!parse_uint(attr_get(names, values, "id"), &id)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "disk driver <iothreads><iothread> without a valid id");
            return;
        }
        iothreads_add(st->disk.iothreads, id);
    } else if (st->in_disk && at_path(pc, target_path)) {
        g_free(st->disk.dev);
        st->disk.dev = g_strdup(attr_get(names, values, "dev"));
        st->disk_scsi = g_strcmp0(attr_get(names, values, "bus"), "scsi") == 0;
    } else if (st->in_disk && at_path(pc, source_path)) {
        g_free(st->disk.source);
        st->disk.source = disk_source_identity(names, values);
    } else if (st->in_disk && at_path(pc, address_path)) {
        const char *ctl = attr_get(names, values, "controller");

        if (ctl && !parse_uint(ctl, &st->disk_controller)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "disk address controller='%s' is not a number", ctl);
            return;
        }
    } else if (at_path(pc, ctl_path)) {
        const char *index = attr_get(names, values, "index");

        st->in_scsi_controller = g_strcmp0(attr_get(names, values, "type"), "scsi") == 0;
        st->controller_index = 0;
        if (st->in_scsi_controller && index && !parse_uint(index, &st->controller_index)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "scsi controller index='%s' is not a number", index);
            return;
        }
    } else if (st->in_scsi_controller && at_path(pc, ctl_driver_path)) {
        const char *iot = attr_get(names, values, "iothread");

        if (iot && !parse_uint(iot, &id)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "scsi controller driver iothread='%s' is not a number", iot);
            return;
        }
        if (iot)
            iothreads_add(controller_iothreads(st), id);
    } else if (st->in_scsi_controller && at_path(pc, ctl_iot_path)) {
        if (!parse_uint(attr_get(names, values, "id"), &id)) {
            g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                        "scsi controller driver <iothreads><iothread> without a valid id");
            return;
        }
        iothreads_add(controller_iothreads(st), id);
    }
}

static void
xml_end(GMarkupParseContext *pc, const char *element, gpointer user_data,
        GError **error)
{
    static const char *const disk_path[] = { "disk", "devices", "domain", NULL };
    static const char *const ctl_path[] = { "controller", "devices", "domain", NULL };
    XmlState *st = user_data;

    if (st->in_disk && at_path(pc, disk_path)) {
        guint ctl = st->disk_scsi && !st->disk.iothreads->len ? st->disk_controller : G_MAXUINT;

        st->in_disk = FALSE;
        if (st->disk.dev) {
            g_array_append_val(st->d->disks, st->disk);
            g_array_append_val(st->disk_controllers, ctl);
        } else {
            disk_clear(&st->disk);
        }
        memset(&st->disk, 0, sizeof(st->disk));
    } else if (at_path(pc, ctl_path)) {
        st->in_scsi_controller = FALSE;
    }
}

static void
xml_text(GMarkupParseContext *pc, const char *text, gsize len,
         gpointer user_data, GError **error)
{
    static const char *const iothreads_path[] = { "iothreads", "domain", NULL };
    XmlState *st = user_data;
    g_autofree char *s = NULL;

    if (!at_path(pc, iothreads_path))
        return;
    s = g_strstrip(g_strndup(text, len));
    if (!parse_uint(s, &st->n_iothreads))
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                    "<iothreads>%s</iothreads> is not a number", s);
}

static gint
uint_cmp(gconstpointer a, gconstpointer b)
{
    guint x = *(const guint *)a, y = *(const guint *)b;

    return x < y ? -1 : x > y;
}

gboolean
pt_libvirt_domain_xml_parse(PtLibvirtDomain *d, const char *xml, GError **error)
{
    static const GMarkupParser parser = {
        .start_element = xml_start,
        .end_element = xml_end,
        .text = xml_text,
    };
    XmlState st = { .d = d };
    g_autoptr(GMarkupParseContext) pc =
        g_markup_parse_context_new(&parser, 0, &st, NULL);
    g_autoptr(GArray) disk_controllers = g_array_new(FALSE, FALSE, sizeof(guint));
    g_autoptr(GHashTable) controllers =
        g_hash_table_new_full(NULL, NULL, NULL, (GDestroyNotify)g_array_unref);
    guint base = d->disks->len;
    gboolean ok;

    st.disk_controllers = disk_controllers;
    st.controllers = controllers;
    ok = g_markup_parse_context_parse(pc, xml, -1, error) &&
         g_markup_parse_context_end_parse(pc, error);
    disk_clear(&st.disk);
    /* Controllers may come after their disks: resolve once all is read. */
    for (guint i = 0; ok && i < disk_controllers->len; i++) {
        guint ctl = g_array_index(disk_controllers, guint, i);
        GArray *from = ctl == G_MAXUINT ? NULL :
                       g_hash_table_lookup(controllers, GUINT_TO_POINTER(ctl));
        PtLibvirtDisk *disk = &g_array_index(d->disks, PtLibvirtDisk, base + i);

        for (guint k = 0; from && k < from->len; k++)
            iothreads_add(disk->iothreads, g_array_index(from, guint, k));
    }
    if (!ok) {
        g_prefix_error(error, "domain %s: XML: ", d->name ? d->name : "?");
        return FALSE;
    }
    /* Without <iothreadids>, libvirt numbers iothreads 1..N. */
    if (d->iothread_ids->len == 0)
        for (guint id = 1; id <= st.n_iothreads; id++)
            g_array_append_val(d->iothread_ids, id);
    g_array_sort(d->iothread_ids, uint_cmp);
    return TRUE;
}

/* ---- stats records ---------------------------------------------------- */

static gboolean
param_u64(const virTypedParameter *p, guint64 *out)
{
    switch (p->type) {
    case VIR_TYPED_PARAM_INT:     *out = p->value.i < 0 ? 0 : (guint64)p->value.i; return TRUE;
    case VIR_TYPED_PARAM_UINT:    *out = p->value.ui; return TRUE;
    case VIR_TYPED_PARAM_LLONG:   *out = p->value.l < 0 ? 0 : (guint64)p->value.l; return TRUE;
    case VIR_TYPED_PARAM_ULLONG:  *out = p->value.ul; return TRUE;
    case VIR_TYPED_PARAM_BOOLEAN: *out = p->value.b != 0; return TRUE;
    case VIR_TYPED_PARAM_DOUBLE:  *out = p->value.d < 0 ? 0 : (guint64)p->value.d; return TRUE;
    default:                      return FALSE;
    }
}

static PtLibvirtIothreadStats *
iothread_get(GArray *a, guint id)
{
    PtLibvirtIothreadStats fresh = { .id = id };

    for (guint i = 0; i < a->len; i++)
        if (g_array_index(a, PtLibvirtIothreadStats, i).id == id)
            return &g_array_index(a, PtLibvirtIothreadStats, i);
    g_array_append_val(a, fresh);
    return &g_array_index(a, PtLibvirtIothreadStats, a->len - 1);
}

/* "iothread.<id>.<field>" */
static void
iothread_param(GArray *iothreads, const char *rest, const virTypedParameter *p)
{
    char *end;
    guint64 id = g_ascii_strtoull(rest, &end, 10), v;
    PtLibvirtIothreadStats *t;

    if (end == rest || *end != '.' || id > G_MAXUINT || !param_u64(p, &v))
        return;
    t = iothread_get(iothreads, (guint)id);
    if (g_str_equal(end + 1, "poll-max-ns"))
        t->poll_max_ns = v;
    else if (g_str_equal(end + 1, "poll-grow"))
        t->poll_grow = v;
    else if (g_str_equal(end + 1, "poll-shrink"))
        t->poll_shrink = v;
}

/* libvirt's "block.<i>.<field>" counters, one line per field, each the
 * metric it fills (times in ns). */
static const struct {
    const char *field;
    MetricId id;
} disk_fields[] = {
    { "rd.reqs",  METRIC_RD_OPS },
    { "rd.bytes", METRIC_RD_BYTES },
    { "rd.times", METRIC_RD_TIME_NS },
    { "wr.reqs",  METRIC_WR_OPS },
    { "wr.bytes", METRIC_WR_BYTES },
    { "wr.times", METRIC_WR_TIME_NS },
    { "fl.reqs",  METRIC_FLUSH_OPS },
    { "fl.times", METRIC_FLUSH_TIME_NS },
};

/* "block.<index>.<field>"; block.count tells how many indexes follow. */
static void
block_param(GArray *disks, const char *rest, const virTypedParameter *p)
{
    char *end;
    guint64 idx = g_ascii_strtoull(rest, &end, 10), v;
    PtLibvirtDiskStats *disk;

    if (end == rest || *end != '.' || idx >= 4096)
        return;
    if (idx >= disks->len)
        g_array_set_size(disks, (guint)idx + 1);
    disk = &g_array_index(disks, PtLibvirtDiskStats, idx);
    if (g_str_equal(end + 1, "name")) {
        if (p->type == VIR_TYPED_PARAM_STRING) {
            g_free(disk->name);
            disk->name = g_strdup(p->value.s);
        }
        return;
    }
    if (!param_u64(p, &v))
        return;
    for (guint i = 0; i < G_N_ELEMENTS(disk_fields); i++)
        if (g_str_equal(end + 1, disk_fields[i].field))
            disk->v.v[disk_fields[i].id] = (gint64)MIN(v, (guint64)G_MAXINT64);
}

static gint
iothread_cmp(gconstpointer a, gconstpointer b)
{
    guint x = ((const PtLibvirtIothreadStats *)a)->id;
    guint y = ((const PtLibvirtIothreadStats *)b)->id;

    return x < y ? -1 : x > y;
}

PtLibvirtDomainStats *
pt_libvirt_stats_from_params(const char *name, const char *uuid,
                             const virTypedParameter *params, int nparams)
{
    PtLibvirtDomainStats *s = g_new0(PtLibvirtDomainStats, 1);

    s->name = g_strdup(name);
    s->uuid = g_strdup(uuid);
    s->iothreads = g_array_new(FALSE, TRUE, sizeof(PtLibvirtIothreadStats));
    s->disks = g_array_new(FALSE, TRUE, sizeof(PtLibvirtDiskStats));
    g_array_set_clear_func(s->disks, disk_stats_clear);
    s->vm = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);

    for (int i = 0; i < nparams; i++) {
        const virTypedParameter *p = &params[i];
        guint64 v;

        if (g_str_has_prefix(p->field, "iothread."))
            iothread_param(s->iothreads, p->field + strlen("iothread."), p);
        else if (g_str_has_prefix(p->field, "block."))
            block_param(s->disks, p->field + strlen("block."), p);
        else if (g_str_has_prefix(p->field, "vm.") && param_u64(p, &v))
            g_hash_table_replace(s->vm, g_strdup(p->field + strlen("vm.")),
                                 g_memdup2(&v, sizeof(v)));
    }
    g_array_sort(s->iothreads, iothread_cmp);
    return s;
}

GPid
pt_libvirt_pid_read(const char *dir, const char *name)
{
    g_autofree char *path = NULL;
    g_autofree char *text = NULL;
    guint64 pid;

    if (!dir || !name || strchr(name, '/'))
        return 0;
    path = g_strdup_printf("%s/%s.pid", dir, name);
    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    g_strstrip(text);
    if (!g_ascii_string_to_unsigned(text, 10, 1, G_MAXINT32, &pid, NULL))
        return 0;
    return (GPid)pid;
}
