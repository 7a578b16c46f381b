/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-devmap.h"

#include <string.h>

struct ProbeDevMap {
    GHashTable *devices;        /* device -> GStrv of iothread ids */
    GHashTable *sources;        /* device -> what backs it, where known */
};

ProbeDevMap *
probe_devmap_new(void)
{
    ProbeDevMap *m = g_new0(ProbeDevMap, 1);

    m->devices = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)g_strfreev);
    m->sources = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return m;
}

void
probe_devmap_free(ProbeDevMap *m)
{
    if (!m)
        return;
    g_hash_table_unref(m->devices);
    g_hash_table_unref(m->sources);
    g_free(m);
}

void
probe_devmap_clear(ProbeDevMap *m)
{
    g_hash_table_remove_all(m->devices);
    g_hash_table_remove_all(m->sources);
}

void
probe_devmap_set(ProbeDevMap *m, const char *device, const char *const *iothreads)
{
    static const char *const none[] = { NULL };

    g_hash_table_replace(m->devices, g_strdup(device),
                         g_strdupv((char **)(iothreads ? iothreads : none)));
}

void
probe_devmap_set_source(ProbeDevMap *m, const char *device, const char *source)
{
    if (source && *source)
        g_hash_table_replace(m->sources, g_strdup(device), g_strdup(source));
    else
        g_hash_table_remove(m->sources, device);
}

const char *
probe_devmap_source(const ProbeDevMap *m, const char *device)
{
    return g_hash_table_lookup(m->sources, device);
}

/* Removes from @table the keys probe_devmap_forget() names; how many. */
static guint
devmap_table_forget(GHashTable *table, const char *device, const char *path)
{
    gsize n = path ? strlen(path) : 0;
    GHashTableIter it;
    gpointer k;
    guint gone = 0;

    g_hash_table_iter_init(&it, table);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        const char *key = k;

        if ((device && *device && g_str_equal(key, device)) ||
            (n && strncmp(key, path, n) == 0 && (key[n] == 0 || key[n] == '/'))) {
            g_hash_table_iter_remove(&it);
            gone++;
        }
    }
    return gone;
}

guint
probe_devmap_forget(ProbeDevMap *m, const char *device, const char *path)
{
    devmap_table_forget(m->sources, device, path);
    return devmap_table_forget(m->devices, device, path);
}

gboolean
probe_devmap_contains(const ProbeDevMap *m, const char *device)
{
    return g_hash_table_contains(m->devices, device);
}

const char *const *
probe_devmap_lookup(const ProbeDevMap *m, const char *device)
{
    return g_hash_table_lookup(m->devices, device);
}

/* ---- grouping: union-find over the snapshot's iothreads ---------------- */

static guint
uf_find(guint *parent, guint i)
{
    while (parent[i] != i) {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    return i;
}

static void
uf_union(guint *parent, guint a, guint b)
{
    a = uf_find(parent, a);
    b = uf_find(parent, b);
    if (a != b)
        parent[MAX(a, b)] = MIN(a, b);
}

static gint
snap_index(const ProbeTargetSnap *snap, const char *id)
{
    for (guint i = 0; i < snap->iothreads->len; i++)
        if (g_str_equal(((ProbeIothreadSnap *)snap->iothreads->pdata[i])->id, id))
            return (gint)i;
    return -1;
}

/* The index in @snap of the first iothread of @device it holds, or -1. */
static gint
device_first(const ProbeDevMap *m, const ProbeTargetSnap *snap, const char *device)
{
    const char *const *ids = probe_devmap_lookup(m, device);

    for (guint k = 0; ids && ids[k]; k++) {
        gint i = snap_index(snap, ids[k]);

        if (i >= 0)
            return i;
    }
    return -1;
}

void
probe_devmap_fill(const ProbeDevMap *m, ProbeTargetSnap *snap,
                  const ProbeDevSample *devs, guint n_devs)
{
    guint n = snap->iothreads->len;
    g_autofree guint *parent = g_new(guint, MAX(n, 1));
    g_autofree guint *size = g_new0(guint, MAX(n, 1));
    g_autofree gint *leader = g_new(gint, MAX(n, 1));

    for (guint i = 0; i < n; i++) {
        parent[i] = i;
        leader[i] = -1;
    }
    for (guint d = 0; d < n_devs; d++) {
        const char *const *ids = probe_devmap_lookup(m, devs[d].device);
        gint first = device_first(m, snap, devs[d].device);

        for (guint k = 0; first >= 0 && ids[k]; k++) {
            gint i = snap_index(snap, ids[k]);

            if (i >= 0)
                uf_union(parent, (guint)first, (guint)i);
        }
    }
    /* The group's name is its smallest iothread id: stable whatever the
     * order query-iothreads or libvirt list them in. */
    for (guint i = 0; i < n; i++) {
        guint r = uf_find(parent, i);
        const ProbeIothreadSnap *io = snap->iothreads->pdata[i];

        size[r]++;
        if (leader[r] < 0 ||
            strcmp(io->id, ((ProbeIothreadSnap *)snap->iothreads->pdata[leader[r]])->id) < 0)
            leader[r] = (gint)i;
    }
    for (guint i = 0; i < n; i++) {
        ProbeIothreadSnap *io = snap->iothreads->pdata[i];
        guint r = uf_find(parent, i);

        g_clear_pointer(&io->group, g_free);
        io->group_size = size[r];
        if (size[r] > 1)
            io->group = g_strdup(((ProbeIothreadSnap *)snap->iothreads->pdata[leader[r]])->id);
    }
    for (guint d = 0; d < n_devs; d++) {
        gint first = device_first(m, snap, devs[d].device);
        guint r;

        if (first < 0)
            continue;
        r = uf_find(parent, (guint)first);
        for (guint i = 0; i < n; i++)
            if (uf_find(parent, i) == r)
                probe_iothread_snap_add_device(snap->iothreads->pdata[i], devs[d].name,
                                               probe_devmap_source(m, devs[d].device),
                                               &devs[d].v);
    }
}
