/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-engine-memory: the workload memory the engine holds for each
 * iothread, and its exchange with the caller, which keeps it in the store.
 *
 * The engine only holds the memories; what is learnt and when is the
 * adaptive policy's (policy-adaptive-memory.c).  Memories are keyed as the
 * engine's states are, "target/iothread", but outlive those states:
 * policy_engine_forget() drops a target's state when it goes away, and a
 * target that comes back must find what it had learnt.
 */
#include <string.h>

#include "policy-memory.h"
#include "policy-private.h"

/* A configuration made without policy_config_defaults() has no ttl. */
static gint64
memory_ttl(PolicyEngine *e)
{
    gint64 ttl = policy_engine_config(e)->memory_ttl_ms;

    return ttl > 0 ? ttl : POLICY_MEMORY_TTL_MS;
}

static char *
memory_key(const char *target, const char *iothread)
{
    return g_strdup_printf("%s/%s", target, iothread);
}

void
policy_engine_memories_init(PolicyEngineMemories *m)
{
    m->by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                      (GDestroyNotify)policy_memory_free);
    m->changed = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

void
policy_engine_memories_clear(PolicyEngineMemories *m)
{
    g_clear_pointer(&m->by_key, g_hash_table_unref);
    g_clear_pointer(&m->changed, g_hash_table_unref);
}

PolicyMemory *
policy_engine_memory_of(PolicyEngine *e, const char *target, const char *iothread)
{
    PolicyEngineMemories *m = policy_engine_memories(e);
    g_autofree char *key = memory_key(target, iothread);
    PolicyMemory *mem = g_hash_table_lookup(m->by_key, key);

    if (!mem) {
        mem = policy_memory_new(memory_ttl(e));
        g_hash_table_insert(m->by_key, g_steal_pointer(&key), mem);
    }
    return mem;
}

void
policy_engine_memory_mark_changed(PolicyEngine *e, const char *target, const char *iothread)
{
    g_hash_table_add(policy_engine_memories(e)->changed, memory_key(target, iothread));
}

gboolean
policy_engine_memory_load(PolicyEngine *e, const char *target, const char *iothread,
                          PtMemoryRow *const *rows, guint n, GError **error)
{
    g_autoptr(PolicyMemory) mem = policy_memory_new(memory_ttl(e));

    if (!policy_memory_load_rows(mem, rows, n, error))
        return FALSE;
    g_hash_table_replace(policy_engine_memories(e)->by_key, memory_key(target, iothread),
                         g_steal_pointer(&mem));
    return TRUE;
}

GPtrArray *
policy_engine_memory_rows(const PolicyEngine *e, const char *target, const char *iothread)
{
    g_autofree char *key = memory_key(target, iothread);
    const PolicyMemory *mem = g_hash_table_lookup(policy_engine_memories_const(e)->by_key, key);

    if (!mem)
        return g_ptr_array_new_with_free_func((GDestroyNotify)pt_memory_row_free);
    return policy_memory_to_rows(mem);
}

void
policy_iothread_key_free(PolicyIothreadKey *k)
{
    if (!k)
        return;
    g_free(k->target);
    g_free(k->iothread);
    g_free(k);
}

GPtrArray *
policy_engine_memory_take_changed(PolicyEngine *e)
{
    PolicyEngineMemories *m = policy_engine_memories(e);
    GPtrArray *out = g_ptr_array_new_with_free_func((GDestroyNotify)policy_iothread_key_free);
    GHashTableIter it;
    gpointer key;

    g_hash_table_iter_init(&it, m->changed);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        /* Targets are socket paths or domain names, iothreads QOM ids:
         * the iothread id, the part after the last '/', has none. */
        const char *slash = strrchr(key, '/');
        PolicyIothreadKey *k = g_new0(PolicyIothreadKey, 1);

        k->target = g_strndup(key, slash - (const char *)key);
        k->iothread = g_strdup(slash + 1);
        g_ptr_array_add(out, k);
    }
    g_hash_table_remove_all(m->changed);
    return out;
}

void
policy_engine_memory_forget(PolicyEngine *e, const char *target, const char *iothread)
{
    PolicyEngineMemories *m = policy_engine_memories(e);
    g_autofree char *prefix = g_strdup_printf("%s/", target);
    GHashTableIter it;
    gpointer key;

    g_hash_table_iter_init(&it, m->by_key);
    while (g_hash_table_iter_next(&it, &key, NULL)) {
        const char *id = (const char *)key + strlen(prefix);

        if (!g_str_has_prefix(key, prefix) || (iothread && !g_str_equal(id, iothread)) ||
            (!iothread && strchr(id, '/')))
            continue;
        g_hash_table_add(m->changed, g_strdup(key));
        g_hash_table_iter_remove(&it);
    }
}
