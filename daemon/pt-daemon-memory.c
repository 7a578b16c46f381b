/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy's workload memory (policy/policy-memory.h) kept across
 * restarts.  The engine holds each iothread's memory, keyed as its other
 * state is, by target identity and iothread; the store keeps it under the
 * name the VM goes by (pt_target_display()), so that a VM started again on
 * another socket, or under another libvirt id, finds what it learnt.
 *
 * An iothread's rows are read from the store before its first policy step,
 * and again whenever its VM's name changes (another QEMU on the same
 * socket).  After each step the iothreads the engine names as changed are
 * written back; a write the store refuses (locked, full, the file gone) is
 * tried again on the next tick, and a new database file gets every memory
 * held written into it, as the originals are.
 */
#include "pt-daemon-memory.h"
#include "pt-daemon-private.h"
#include "pt-log.h"
#include "policy-memory.h"
#include "store-memory.h"

/* One iothread's memory as the daemon tracks it. */
typedef struct {
    char *target;
    char *iothread;
    char *vm;                   /* the name its rows are stored under */
    gboolean unsaved;           /* changed since its rows were last written */
} PtMemoryHeld;

static void
pt_memory_held_free(PtMemoryHeld *h)
{
    if (!h)
        return;
    g_free(h->target);
    g_free(h->iothread);
    g_free(h->vm);
    g_free(h);
}

/* The engine's key: iothread ids (QOM ids) have no '/'. */
static char *
pt_memory_key(const char *target, const char *iothread)
{
    return g_strdup_printf("%s/%s", target, iothread);
}

/* The daemon's side of the memories: this file's alone. */
struct PtDaemonMemory {
    GHashTable *held;           /* "target/iothread" -> PtMemoryHeld */
    gboolean save_failed;       /* said once in the log */
    gboolean load_failed;       /* said once in the log */
};

static PtDaemonMemory *
pt_memory_state(PtDaemon *d)
{
    if (!d->memory) {
        d->memory = g_new0(PtDaemonMemory, 1);
        d->memory->held = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                                (GDestroyNotify)pt_memory_held_free);
    }
    return d->memory;
}

static GHashTable *
pt_memory_table(PtDaemon *d)
{
    return pt_memory_state(d)->held;
}

void
pt_daemon_memory_free(PtDaemon *d)
{
    if (!d->memory)
        return;
    g_hash_table_unref(d->memory->held);
    g_clear_pointer(&d->memory, g_free);
}

const char *
pt_daemon_vm_name(const PtTarget *t)
{
    return pt_target_display(t);
}

char *
pt_daemon_device_key(PtTarget *t, PtIothread *io)
{
    const ProbeIothreadSnap *ios = t->prev ? probe_target_snap_find(t->prev, io->id) : NULL;
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autoptr(GPtrArray) sources = g_ptr_array_new();

    if (!ios || !ios->devices->len)
        return NULL;
    for (guint i = 0; i < ios->devices->len; i++) {
        const ProbeDevice *dev = &g_array_index(ios->devices, ProbeDevice, i);

        g_ptr_array_add(names, dev->name);
        g_ptr_array_add(sources, dev->source);
    }
    g_ptr_array_add(names, NULL);
    return policy_signature_device_key((const char *const *)names->pdata,
                                       (const char *const *)sources->pdata);
}

/*
 * The times of the policy's own writes to @iothread in the last hour, read
 * back from the decisions the store keeps, for the engine's write budget
 * (policy_engine_writes_restore()): a restart must not reopen it.  The
 * budget's longest window is 10 minutes; an hour covers a clock that
 * stepped back a little.  An unreadable store leaves the budget empty,
 * as it was before a restart kept it.
 */
static void
pt_daemon_writes_restore(PtDaemon *d, PtTarget *t, const char *iothread)
{
    g_autoptr(GArray) ts = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(StoreCursor) cur = NULL;
    g_autoptr(GError) err = NULL;
    const StoreDecisionRow *row;
    StoreFilter f;

    store_filter_init(&f);
    f.target = t->name;
    f.iothread = iothread;
    f.from_ms = g_get_real_time() / 1000 - 3600 * 1000;
    cur = store_query_decisions(d->store, &f, &err);
    while (cur && store_cursor_next_decision(cur, &row, &err) && row)
        if (row->applied && row->cause &&
            policy_cause_is_own_write(policy_cause_from_string(row->cause)))
            g_array_append_val(ts, row->ts_ms);
    if (err)
        pt_warn(t->name, iothread, "store: the policy's recent writes: %s; the write budget "
                "starts empty", err->message);
    policy_engine_writes_restore(d->engine, t->name, iothread, (const gint64 *)ts->data, ts->len);
}

void
pt_daemon_memory_prepare(PtDaemon *d, PtTarget *t, const char *iothread)
{
    g_autofree char *key = pt_memory_key(t->name, iothread);
    const char *vm = pt_daemon_vm_name(t);
    PtMemoryHeld *h = g_hash_table_lookup(pt_memory_table(d), key);
    g_autoptr(GPtrArray) rows = NULL;
    g_autoptr(GError) err = NULL;

    if (h && g_str_equal(h->vm, vm))
        return;
    /* What is not in the store yet stays the old name's: written first. */
    if (h && h->unsaved)
        pt_daemon_memory_save(d);
    rows = store_memory_load(d->store, vm, iothread, &err);
    if (!rows) {
        /* A locked or gone file: read again at the next step, and
         * nothing written over the rows meanwhile. */
        if (!pt_memory_state(d)->load_failed)
            pt_warn(t->name, iothread, "store: workload memory of %s: %s; read again at each "
                    "step until it can be", vm, err->message);
        pt_memory_state(d)->load_failed = TRUE;
        return;
    }
    pt_memory_state(d)->load_failed = FALSE;
    if (!policy_engine_memory_load(d->engine, t->name, iothread,
                                   (PtMemoryRow *const *)rows->pdata, rows->len, &err)) {
        /* Rows no engine can read: what is learnt from now on replaces them. */
        pt_warn(t->name, iothread, "store: workload memory of %s: %s; learning afresh", vm,
                err->message);
        policy_engine_memory_forget(d->engine, t->name, iothread);
    } else if (rows->len) {
        pt_info(t->name, iothread, "workload memory: %u entr%s of %s read from the store",
                rows->len, rows->len == 1 ? "y" : "ies", vm);
    }
    pt_daemon_writes_restore(d, t, iothread);
    h = g_new0(PtMemoryHeld, 1);
    h->target = g_strdup(t->name);
    h->iothread = g_strdup(iothread);
    h->vm = g_strdup(vm);
    g_hash_table_replace(pt_memory_table(d), g_steal_pointer(&key), h);
}

/* The memories the engine changed since it was last asked. */
static void
pt_daemon_memory_take_changed(PtDaemon *d)
{
    g_autoptr(GPtrArray) changed = policy_engine_memory_take_changed(d->engine);

    for (guint i = 0; i < changed->len; i++) {
        const PolicyIothreadKey *k = changed->pdata[i];
        g_autofree char *key = pt_memory_key(k->target, k->iothread);
        PtMemoryHeld *h = g_hash_table_lookup(pt_memory_table(d), key);

        /* Only memories read from the store change: those of the
         * iothreads stepped, and those an operator made forget. */
        if (h)
            h->unsaved = TRUE;
    }
}

/*
 * Writes what changed.  A memory changes when an exploration ends or a
 * winner is confirmed, minutes apart per iothread, and each write is one
 * short transaction of at most POLICY_MEMORY_MAX_ENTRIES rows; the first
 * the store refuses ends the round, and the rest wait for the next tick.
 */
void
pt_daemon_memory_save(PtDaemon *d)
{
    GHashTableIter it;
    gpointer v;

    pt_daemon_memory_take_changed(d);
    g_hash_table_iter_init(&it, pt_memory_table(d));
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtMemoryHeld *h = v;
        g_autoptr(GPtrArray) rows = NULL;
        g_autoptr(GError) err = NULL;

        if (!h->unsaved)
            continue;
        rows = policy_engine_memory_rows(d->engine, h->target, h->iothread);
        if (!store_memory_save(d->store, h->vm, h->iothread, (PtMemoryRow *const *)rows->pdata,
                               rows->len, g_get_real_time() / 1000, &err)) {
            if (!pt_memory_state(d)->save_failed)
                pt_warn(h->target, h->iothread, "store: workload memory of %s: %s; "
                        "tried again each tick", h->vm, err->message);
            pt_memory_state(d)->save_failed = TRUE;
            return;
        }
        h->unsaved = FALSE;
    }
    if (pt_memory_state(d)->save_failed)
        pt_info(NULL, NULL, "store: workload memory saved again");
    pt_memory_state(d)->save_failed = FALSE;
}

void
pt_daemon_memory_resave(PtDaemon *d)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, pt_memory_table(d));
    while (g_hash_table_iter_next(&it, NULL, &v))
        ((PtMemoryHeld *)v)->unsaved = TRUE;
}

void
pt_daemon_memory_carry(PtDaemon *d, PolicyEngine *to)
{
    GHashTableIter it;
    gpointer v;

    /* Marks the old engine left stay the daemon's. */
    pt_daemon_memory_take_changed(d);
    g_hash_table_iter_init(&it, pt_memory_table(d));
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtMemoryHeld *h = v;
        g_autoptr(GPtrArray) rows = policy_engine_memory_rows(d->engine, h->target,
                                                              h->iothread);
        g_autoptr(GError) err = NULL;

        /* The rows came out of an engine: a new one reads them back. */
        if (!policy_engine_memory_load(to, h->target, h->iothread,
                                       (PtMemoryRow *const *)rows->pdata, rows->len, &err))
            pt_warn(h->target, h->iothread, "workload memory not carried over: %s",
                    err->message);
    }
}

static gint
pt_str_ptr_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0(*(const char *const *)a, *(const char *const *)b);
}

/* The iothread ids of @vm's memory: those held for @t, and those in the store. */
static GPtrArray *
pt_memory_iothreads(PtDaemon *d, PtTarget *t, const char *vm, GError **error)
{
    g_autoptr(GPtrArray) ids = store_memory_iothreads(d->store, vm, error);
    GHashTableIter it;
    gpointer v;

    if (!ids)
        return NULL;
    g_hash_table_iter_init(&it, pt_memory_table(d));
    while (t && g_hash_table_iter_next(&it, NULL, &v)) {
        PtMemoryHeld *h = v;

        if (g_str_equal(h->target, t->name) && g_str_equal(h->vm, vm) &&
            !g_ptr_array_find_with_equal_func(ids, h->iothread, g_str_equal, NULL))
            g_ptr_array_add(ids, g_strdup(h->iothread));
    }
    g_ptr_array_sort(ids, pt_str_ptr_cmp);
    return g_steal_pointer(&ids);
}

GPtrArray *
pt_daemon_memory_list(PtDaemon *d, PtTarget *t, const char *vm, const char *iothread,
                      GError **error)
{
    g_autoptr(GPtrArray) out = g_ptr_array_new_with_free_func(
        (GDestroyNotify)pt_memory_listing_free);
    g_autoptr(GPtrArray) ids = NULL;

    if (iothread) {
        ids = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(ids, g_strdup(iothread));
    } else if (!(ids = pt_memory_iothreads(d, t, vm, error))) {
        return NULL;
    }
    for (guint i = 0; i < ids->len; i++) {
        const char *id = ids->pdata[i];
        g_autofree char *key = t ? pt_memory_key(t->name, id) : NULL;
        PtMemoryHeld *h = key ? g_hash_table_lookup(pt_memory_table(d), key) : NULL;
        PtMemoryListing *l = g_new0(PtMemoryListing, 1);

        l->iothread = g_strdup(id);
        /* The engine's copy is the newer while it is held. */
        if (h && g_str_equal(h->vm, vm))
            l->rows = policy_engine_memory_rows(d->engine, t->name, id);
        else
            l->rows = store_memory_load(d->store, vm, id, error);
        if (!l->rows) {
            pt_memory_listing_free(l);
            return NULL;
        }
        /* Without @iothread, those with entries: one held may have none. */
        if (!iothread && !l->rows->len)
            pt_memory_listing_free(l);
        else
            g_ptr_array_add(out, l);
    }
    return g_steal_pointer(&out);
}

gboolean
pt_daemon_memory_forget(PtDaemon *d, PtTarget *t, const char *vm, const char *iothread,
                        guint *dropped, GError **error)
{
    g_autoptr(GPtrArray) before = pt_daemon_memory_list(d, t, vm, iothread, error);
    guint n = 0;

    if (!before)
        return FALSE;
    for (guint i = 0; i < before->len; i++)
        n += ((PtMemoryListing *)before->pdata[i])->rows->len;
    if (!store_memory_forget(d->store, vm, iothread, g_get_real_time() / 1000, NULL, error))
        return FALSE;
    if (t) {
        /* Marked changed: the next save writes the empty memory, which
         * the store already has. */
        policy_engine_memory_forget(d->engine, t->name, iothread);
        pt_daemon_memory_take_changed(d);
    }
    pt_info(t ? t->name : vm, iothread, "workload memory forgotten: %u entr%s", n,
            n == 1 ? "y" : "ies");
    *dropped = n;
    return TRUE;
}

void
pt_memory_listing_free(PtMemoryListing *l)
{
    if (!l)
        return;
    g_free(l->iothread);
    if (l->rows)
        g_ptr_array_unref(l->rows);
    g_free(l);
}
