/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The control commands `memory` and `forget` (docs/CONTROL.md): the
 * policy's workload memory of a VM, listed or cleared.  A VM is named as
 * for every other command (its identity or the name it goes by); one the
 * daemon does not reach now is still named by the name its memory is
 * kept under, as long as the store has some.
 */
#include "pt-control-private.h"
#include "store-memory.h"

#include <string.h>

/* Where a request's memory is: the VM's name, its target when attached,
 * and the iothread (NULL: all). */
typedef struct {
    PtTarget *t;
    const char *vm;
    const char *iothread;
    char *iothread_buf;
} PtMemoryWhere;

static void
pt_memory_where_clear(PtMemoryWhere *w)
{
    g_free(w->iothread_buf);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(PtMemoryWhere, pt_memory_where_clear)

/* @name/@iothread of a VM the daemon does not reach: known by its rows. */
static gboolean
pt_memory_where_stored(PtDaemon *d, const char *name, const char *iothread, PtMemoryWhere *w,
                       GError **error)
{
    g_autoptr(GPtrArray) ids = store_memory_iothreads(pt_daemon_get_store(d), name, error);
    g_autofree char *numbered = NULL;

    if (!ids)
        return FALSE;
    if (!ids->len) {
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_NOT_FOUND,
                    "%s: no such target, and no workload memory kept under that name", name);
        return FALSE;
    }
    w->vm = name;
    if (!iothread)
        return TRUE;
    /* virsh's numbers, as for an attached target: N is iothreadN. */
    if (*iothread && strspn(iothread, "0123456789") == strlen(iothread))
        numbered = g_strconcat("iothread", iothread, NULL);
    for (guint i = 0; i < ids->len; i++)
        if (g_str_equal(ids->pdata[i], iothread) ||
            (numbered && g_str_equal(ids->pdata[i], numbered))) {
            w->iothread = w->iothread_buf = g_strdup(ids->pdata[i]);
            return TRUE;
        }
    g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_NOT_FOUND,
                "%s/%s: no workload memory kept for that iothread", name, iothread);
    return FALSE;
}

static gboolean
pt_memory_where(PtConn *conn, json_object *args, PtMemoryWhere *w, GError **error)
{
    PtDaemon *d = conn->ctl->d;
    g_autoptr(GError) err = NULL;
    const char *name, *iothread;

    if (!pt_arg_str(args, "target", TRUE, &name, error) ||
        !pt_arg_str(args, "iothread", FALSE, &iothread, error))
        return FALSE;
    if (iothread && (!*iothread || strchr(iothread, '/'))) {
        g_set_error(error, PT_CONTROL_ERROR, PT_CONTROL_ERROR_INVALID_PARAMETER,
                    "iothread: '%s' is no iothread id", iothread);
        return FALSE;
    }
    w->t = pt_find(conn, args, &w->iothread, &err);
    if (!w->t) {
        /* Only a name no target goes by may be a VM known by its rows. */
        if (!g_error_matches(err, G_IO_ERROR, G_IO_ERROR_NOT_FOUND)) {
            g_propagate_error(error, g_steal_pointer(&err));
            return FALSE;
        }
        return pt_memory_where_stored(d, name, iothread, w, error);
    }
    w->vm = pt_daemon_vm_name(w->t);
    if (w->iothread) {
        /* A group learns as one, under its first iothread. */
        PtIothread *io = g_hash_table_lookup(w->t->iothreads, w->iothread);

        if (io && io->group)
            w->iothread = io->group;
    }
    return TRUE;
}

static void
pt_memory_reply_head(json_object *ret, const PtMemoryWhere *w)
{
    json_object_object_add(ret, "target", w->t ? json_object_new_string(w->t->name) : NULL);
    json_object_object_add(ret, "vm", json_object_new_string(w->vm));
    json_object_object_add(ret, "iothread", w->iothread ? json_object_new_string(w->iothread)
                                                        : NULL);
}

gboolean
pt_cmd_memory(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    PtDaemon *d = conn->ctl->d;
    g_auto(PtMemoryWhere) w = { 0 };
    g_autoptr(GPtrArray) list = NULL;
    gint64 ttl_ms = pt_daemon_get_conf(d)->policy->memory_ttl_ms;
    gint64 now_ms = g_get_real_time() / 1000;
    json_object *arr;

    if (!pt_memory_where(conn, args, &w, error) ||
        !(list = pt_daemon_memory_list(d, w.t, w.vm, w.iothread, error)))
        return FALSE;
    *ret = json_object_new_object();
    pt_memory_reply_head(*ret, &w);
    json_object_object_add(*ret, "ttl_ms", json_object_new_int64(ttl_ms));
    arr = json_object_new_array();
    for (guint i = 0; i < list->len; i++) {
        const PtMemoryListing *l = list->pdata[i];
        json_object *io = json_object_new_object();
        json_object *entries = json_object_new_array();

        for (guint k = 0; k < l->rows->len; k++)
            json_object_array_add(entries, store_memory_row_to_json(l->rows->pdata[k], ttl_ms,
                                                                    now_ms));
        json_object_object_add(io, "iothread", json_object_new_string(l->iothread));
        json_object_object_add(io, "entries", entries);
        json_object_array_add(arr, io);
    }
    json_object_object_add(*ret, "iothreads", arr);
    return TRUE;
}

gboolean
pt_cmd_forget(PtConn *conn, json_object *args, json_object **ret, GError **error)
{
    g_auto(PtMemoryWhere) w = { 0 };
    guint n = 0;

    if (!pt_memory_where(conn, args, &w, error) ||
        !pt_daemon_memory_forget(conn->ctl->d, w.t, w.vm, w.iothread, &n, error))
        return FALSE;
    *ret = json_object_new_object();
    pt_memory_reply_head(*ret, &w);
    json_object_object_add(*ret, "forgotten", json_object_new_int(n));
    return TRUE;
}
