/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon-targets: the table of attached targets, which every kind of
 * target fills and empties, and what the rest of the daemon asks of it.
 */
#include "pt-daemon-targets.h"
#include "pt-daemon-targets.h"
#include "pt-daemon-private.h"
#include "pt-log.h"

ProbeExitsMode
pt_daemon_exits_mode(const PtConf *conf)
{
    ProbeExitsMode m = probe_exits_mode_from_string(conf->exits_source);

    return m == PROBE_EXITS_MODE_INVALID ? PROBE_EXITS_AUTO : m;
}

void
pt_daemon_add_target(PtDaemon *d, PtTarget *t)
{
    g_autoptr(GError) err = NULL;

    if (!store_target_register(d->store, t->kind, t->name, t->uuid,
                               g_get_real_time() / 1000, &err))
        pt_warn(t->name, NULL, "store: %s", err->message);
    g_hash_table_replace(d->targets.by_name, g_strdup(t->name), t);
    if (t->display_given)
        pt_info(t->name, NULL, "attached (%s), named %s", store_target_kind_to_string(t->kind),
                t->display);
    else
        pt_info(t->name, NULL, "attached (%s)", store_target_kind_to_string(t->kind));
    pt_daemon_check_name(d, t);
}

/*
 * @t's display name is settled (given to attach, or QEMU answered for its
 * own): another target of the same name makes the name ambiguous, so
 * commands refuse it and ask for the path.  Said once per name and pair,
 * as an error naming both paths, however often either reconnects; both
 * targets are tuned as before, each under its own identity.
 */
void
pt_daemon_check_name(PtDaemon *d, PtTarget *t)
{
    GHashTableIter it;
    gpointer v;

    if (!t->display_changed)
        return;
    t->display_changed = FALSE;
    g_hash_table_iter_init(&it, d->targets.by_name);
    while (t->display && g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        if (o == t || (g_strcmp0(o->display, t->display) && !g_str_equal(o->name, t->display)))
            continue;
        if (!g_strcmp0(t->name_clash, t->display))
            return;
        pt_err(t->name, NULL, "its name %s is also the name of %s: commands must name "
               "either by its path", t->display, o->name);
        g_free(t->name_clash);
        t->name_clash = g_strdup(t->display);
        g_free(o->name_clash);
        o->name_clash = g_strdup(t->display);
        return;
    }
    g_clear_pointer(&t->name_clash, g_free);
}

void
pt_daemon_remove_target(PtDaemon *d, PtTarget *t, const char *why)
{
    pt_info(t->name, NULL, "detached: %s", why);
    pt_daemon_drop_target(d, t, NULL);
}

void
pt_daemon_drop_target(PtDaemon *d, PtTarget *t, const char *why)
{
    if (why)
        pt_info(t->name, NULL, "%s", why);
    t->detached = TRUE;
    if (t->ops->close)
        t->ops->close(t);
    policy_engine_forget(d->engine, t->name);
    g_hash_table_remove(d->targets.by_name, t->name);
}

static gint
pt_target_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(PtTarget *const *)a)->name, (*(PtTarget *const *)b)->name);
}

GPtrArray *
pt_daemon_list_targets(PtDaemon *d)
{
    GPtrArray *out = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_ptr_array_add(out, v);

    g_ptr_array_sort(out, pt_target_cmp);
    return out;
}

PtTarget *
pt_daemon_find_target(PtDaemon *d, const char *name)
{
    return name ? g_hash_table_lookup(d->targets.by_name, name) : NULL;
}

PtTarget *
pt_daemon_resolve_target(PtDaemon *d, const char *name, GError **error)
{
    PtTarget *t = pt_daemon_find_target(d, name);
    g_autoptr(GPtrArray) all = NULL;
    g_autoptr(GPtrArray) named = g_ptr_array_new();

    if (t)
        return t;
    all = pt_daemon_list_targets(d);
    for (guint i = 0; name && i < all->len; i++)
        if (!g_strcmp0(((PtTarget *)all->pdata[i])->display, name))
            g_ptr_array_add(named, all->pdata[i]);
    if (named->len == 1)
        return named->pdata[0];
    if (!named->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no such target",
                    name ? name : "");
        return NULL;
    }
    {
        g_autoptr(GString) paths = g_string_new(NULL);

        for (guint i = 0; i < named->len; i++)
            g_string_append_printf(paths, "%s%s", i ? ", " : "",
                                   ((PtTarget *)named->pdata[i])->name);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "%s names %u targets (%s): name one by its path", name, named->len,
                    paths->str);
    }
    return NULL;
}

PtTarget *
pt_daemon_find_process(PtDaemon *d, const PtTarget *except, const char *process)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets.by_name);
    while (process && g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        if (o != except && !o->detached && !g_strcmp0(o->process, process))
            return o;
    }
    return NULL;
}

/*
 * One QEMU is one target: a second path to a QEMU already attached (a
 * symbolic link to its socket, a path spelt another way, a second monitor
 * of the same process, the monitor of a libvirt domain) is refused, naming
 * both.  Two targets on one QEMU took turns on its single monitor, and the
 * one that came second took the first one's writes for the originals.
 */
gboolean
pt_daemon_admit(PtTarget *t, gpointer data, GError **error)
{
    PtDaemon *d = data;
    PtTarget *o = pt_daemon_find_process(d, t, t->process);

    if (!o)
        return TRUE;
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                "%s leads to the QEMU (pid %d) already attached as %s: one QEMU is one "
                "target", t->name, t->pid, o->name);
    return FALSE;
}

double
pt_daemon_polling_cores(PtDaemon *d)
{
    GHashTableIter it;
    gpointer v;
    double cores = 0;

    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        GHashTableIter jt;
        gpointer w;

        g_hash_table_iter_init(&jt, ((PtTarget *)v)->iothreads);
        while (g_hash_table_iter_next(&jt, NULL, &w)) {
            PtIothread *io = w;
            const PolicyMetrics *m;

            if (!io->history->len || !io->have_triple || io->triple.poll_max_ns == 0)
                continue;
            m = &g_array_index(io->history, PolicyMetrics, io->history->len - 1);
            if (m->have_cpu)
                cores += m->cpu_pct / 100.0;
        }
    }
    return cores;
}
