/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-names: the names the recorded targets go by (targets.display_name,
 * since schema 11), for readers that are asked for a VM by its name.
 */
#include "store-private.h"

static void
store_target_name_free(gpointer p)
{
    StoreTargetName *n = p;

    g_free(n->target);
    g_free(n->name);
    g_free(n);
}

GPtrArray *
store_target_names(StoreDb *db, GError **error)
{
    g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(store_target_name_free);
    sqlite3_stmt *st;
    int rc;

    if (!(st = store_prepare(db, "SELECT name, display_name FROM targets ORDER BY name", error)))
        return NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        StoreTargetName *n = g_new0(StoreTargetName, 1);
        const char *name = (const char *)sqlite3_column_text(st, 1);

        n->target = g_strdup((const char *)sqlite3_column_text(st, 0));
        n->name = name && *name ? g_strdup(name) : NULL;
        g_ptr_array_add(all, n);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        store_set_error(db, error, rc, "targets");
        return NULL;
    }
    return g_steal_pointer(&all);
}

GPtrArray *
store_target_lookup(StoreDb *db, const char *vm, GError **error)
{
    g_autoptr(GPtrArray) all = store_target_names(db, error);
    g_autoptr(GPtrArray) named = g_ptr_array_new_with_free_func(g_free);

    if (!all)
        return NULL;
    for (guint i = 0; i < all->len; i++) {
        const StoreTargetName *n = all->pdata[i];

        /* An identity is one target's, whatever names others went by. */
        if (g_str_equal(n->target, vm)) {
            g_ptr_array_set_size(named, 0);
            g_ptr_array_add(named, g_strdup(n->target));
            break;
        }
        if (!g_strcmp0(n->name, vm))
            g_ptr_array_add(named, g_strdup(n->target));
    }
    return g_steal_pointer(&named);
}
