/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-sampler.h"
#include "common/pt-enum-table.h"

#include "probe-perf.h"
#include "probe-thread.h"

PT_ENUM_IMPL(probe_exits_mode, ProbeExitsMode, PROBE_EXITS_MODE_MAX,
             [PROBE_EXITS_OFF] = "off",
             [PROBE_EXITS_AUTO] = "auto",
             [PROBE_EXITS_DEBUGFS] = "debugfs",
             [PROBE_EXITS_PERF] = "perf")

struct ProbeTarget {
    char *proc;
    char *debugfs;
    char *tracefs;
    int pid;
    ProbeBuf buf;
    GHashTable *iothreads;          /* id -> ProbeThreadFiles */
    GArray *vcpus;                  /* ProbeThreadFiles; NULL until listed */
    ProbeKvmDebugfs *kvm_debugfs;
    ProbePerf *perf;
    ProbeSource src[PROBE_SOURCE_MAX];
    ProbeExitChoice exit_choice;
};

static void
thread_files_free(gpointer p)
{
    probe_thread_files_clear(p);
    g_free(p);
}

static void
thread_files_clear(gpointer p)
{
    probe_thread_files_clear(p);
}

ProbeTarget *
probe_target_new(const ProbeRoots *roots, int pid)
{
    ProbeTarget *t = g_new0(ProbeTarget, 1);

    t->proc = g_strdup(roots && roots->proc ? roots->proc : "/proc");
    t->debugfs = g_strdup(roots && roots->debugfs ? roots->debugfs
                                                  : "/sys/kernel/debug");
    t->tracefs = g_strdup(roots ? roots->tracefs : NULL);
    t->pid = pid;
    t->iothreads = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                         thread_files_free);
    for (int k = 0; k < PROBE_SOURCE_MAX; k++)
        probe_source_init(&t->src[k], k);
    probe_exit_choice_init(&t->exit_choice);
    return t;
}

void
probe_target_free(ProbeTarget *t)
{
    if (!t)
        return;
    for (int k = 0; k < PROBE_SOURCE_MAX; k++)
        probe_source_clear(&t->src[k]);
    probe_exit_choice_clear(&t->exit_choice);
    probe_perf_free(t->perf);
    probe_kvm_debugfs_free(t->kvm_debugfs);
    if (t->vcpus)
        g_array_unref(t->vcpus);
    g_hash_table_unref(t->iothreads);
    probe_buf_clear(&t->buf);
    g_free(t->proc);
    g_free(t->debugfs);
    g_free(t->tracefs);
    g_free(t);
}

int
probe_target_pid(const ProbeTarget *t)
{
    return t->pid;
}

int
probe_target_iothread_tid(const ProbeTarget *t, const char *id)
{
    const ProbeThreadFiles *f = g_hash_table_lookup(t->iothreads, id);

    return f ? f->tid : 0;
}

/* The kept files of iothread @id, (re)opened on @tid. */
static ProbeThreadFiles *
iothread_files(ProbeTarget *t, const char *id, int tid)
{
    ProbeThreadFiles *f = g_hash_table_lookup(t->iothreads, id);

    if (f && f->tid == tid)
        return f;
    f = g_new0(ProbeThreadFiles, 1);
    probe_thread_files_init(f, t->proc, t->pid, tid);
    g_hash_table_insert(t->iothreads, g_strdup(id), f);
    return f;
}

/* Thread counters from @f, but only if it still carries name @want. */
static gboolean
read_named(ProbeTarget *t, ProbeThreadFiles *f, const char *want,
           ProbeThreadCounters *c, GError **error)
{
    if (!probe_thread_files_read(f, &t->buf, c, error))
        return FALSE;
    if (want && strcmp(c->comm, want) != 0) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "thread %d of process %d is now named '%s', not '%s'",
                    f->tid, t->pid, c->comm, want);
        return FALSE;
    }
    return TRUE;
}

static int
resolve_iothread(ProbeTarget *t, const char *id, GError **error)
{
    g_autoptr(GArray) tasks = probe_tasks_list(t->proc, t->pid, error);

    return tasks ? probe_tasks_find_iothread(tasks, id, error) : 0;
}

static void
note_thread_result(ProbeTarget *t, const ProbeThreadCounters *c,
                   const GError *err)
{
    if (!err) {
        probe_source_set_available(&t->src[PROBE_SOURCE_THREAD]);
        if (probe_thread_counters_have_schedstat(c))
            probe_source_set_available(&t->src[PROBE_SOURCE_SCHEDSTAT]);
        else
            probe_source_set_unavailable(&t->src[PROBE_SOURCE_SCHEDSTAT],
                g_strdup_printf("%s/%d/task/*/schedstat missing or all zero "
                                "(kernel without scheduler statistics?)",
                                t->proc, t->pid));
        return;
    }
    /* A missing iothread is that iothread's problem; these are the source's. */
    if (g_error_matches(err, PROBE_ERROR, PROBE_ERROR_ACCESS) ||
        g_error_matches(err, PROBE_ERROR, PROBE_ERROR_IO))
        probe_source_set_unavailable(&t->src[PROBE_SOURCE_THREAD],
                                     g_strdup(err->message));
}

gboolean
probe_target_sample_iothread(ProbeTarget *t, ProbeIothreadSnap *io,
                             int tid_hint, GError **error)
{
    ProbeThreadCounters c;
    g_autoptr(GError) local = NULL;
    char want[PROBE_COMM_MAX];
    ProbeThreadFiles *f;
    int tid;

    io->have_thread = FALSE;
    probe_iothread_comm(io->id, want);
    if (tid_hint > 0) {
        /* QEMU said so; without debug-threads the name is not "IO <id>". */
        f = iothread_files(t, io->id, tid_hint);
        if (!read_named(t, f, NULL, &c, &local)) {
            if (g_error_matches(local, PROBE_ERROR, PROBE_ERROR_MISSING))
                g_prefix_error(&local, "thread %d is not a live thread of "
                               "process %d: ", tid_hint, t->pid);
            goto fail;
        }
    } else {
        tid = probe_target_iothread_tid(t, io->id);
        f = tid ? iothread_files(t, io->id, tid) : NULL;
        if (!f || !read_named(t, f, want, &c, NULL)) {
            /* Unknown yet, gone or renamed: look the name up again. */
            tid = resolve_iothread(t, io->id, &local);
            if (tid == 0)
                goto fail;
            f = iothread_files(t, io->id, tid);
            if (!read_named(t, f, want, &c, &local))
                goto fail;
        }
    }
    probe_iothread_snap_set_thread(io, f->tid, &c);
    note_thread_result(t, &c, NULL);
    return TRUE;

fail:
    g_hash_table_remove(t->iothreads, io->id);
    note_thread_result(t, NULL, local);
    g_prefix_error(&local, "iothread %s: ", io->id);
    g_propagate_error(error, g_steal_pointer(&local));
    return FALSE;
}

void
probe_target_forget_iothread(ProbeTarget *t, const char *id)
{
    g_hash_table_remove(t->iothreads, id);
}

guint
probe_target_sample_snap(ProbeTarget *t, ProbeTargetSnap *snap,
                         ProbeExitsMode mode, GPtrArray *errors)
{
    GHashTableIter iter;
    gpointer key;
    guint n = 0;

    g_hash_table_iter_init(&iter, t->iothreads);
    while (g_hash_table_iter_next(&iter, &key, NULL))
        if (!probe_target_snap_find(snap, key))
            g_hash_table_iter_remove(&iter);
    for (guint i = 0; i < snap->iothreads->len; i++) {
        ProbeIothreadSnap *io = snap->iothreads->pdata[i];
        g_autoptr(GError) error = NULL;

        if (probe_target_sample_iothread(t, io, io->tid, &error))
            n++;
        else if (errors)
            g_ptr_array_add(errors, g_strdup(error->message));
    }
    probe_target_sample_exits(t, mode, snap);
    return n;
}

static gboolean
list_vcpus(ProbeTarget *t, GError **error)
{
    g_autoptr(GArray) tasks = probe_tasks_list(t->proc, t->pid, error);

    if (!tasks)
        return FALSE;
    if (t->vcpus)
        g_array_set_size(t->vcpus, 0);
    else {
        t->vcpus = g_array_new(FALSE, TRUE, sizeof(ProbeThreadFiles));
        g_array_set_clear_func(t->vcpus, thread_files_clear);
    }
    for (guint i = 0; i < tasks->len; i++) {
        const ProbeTask *task = &g_array_index(tasks, ProbeTask, i);
        ProbeThreadFiles f;

        if (!probe_comm_is_vcpu(task->comm, NULL))
            continue;
        probe_thread_files_init(&f, t->proc, t->pid, task->tid);
        g_array_append_val(t->vcpus, f);
    }
    if (t->vcpus->len == 0) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "process %d has no thread named 'CPU <n>/KVM' or "
                    "'CPU <n>/TCG' (no vCPUs, or debug-threads off)", t->pid);
        return FALSE;
    }
    return TRUE;
}

/* Read every known vCPU's schedstat; FALSE (nothing added) if one failed. */
static gboolean
read_vcpus(ProbeTarget *t, ProbeHostSnap *host, GError **error)
{
    guint first = host->vcpus->len;

    for (guint i = 0; i < t->vcpus->len; i++) {
        ProbeThreadFiles *f = &g_array_index(t->vcpus, ProbeThreadFiles, i);
        ProbeThreadCounters c;

        probe_thread_counters_init(&c);
        if (!probe_thread_files_read_schedstat(f, &t->buf, &c, error))
            goto undo;
        if (!probe_thread_counters_have_schedstat(&c)) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                        "%s is all zero (kernel without scheduler "
                        "statistics?)", f->schedstat.path);
            goto undo;
        }
        probe_host_snap_add_vcpu(host, t->pid, f->tid, (guint64)c.v.v[METRIC_RUNQ_WAIT_NS]);
    }
    return TRUE;
undo:
    g_array_set_size(host->vcpus, first);
    return FALSE;
}

guint
probe_target_sample_vcpus(ProbeTarget *t, ProbeHostSnap *host)
{
    ProbeSource *src = &t->src[PROBE_SOURCE_VCPU];
    g_autoptr(GError) error = NULL;

    if (!probe_source_should_try(src))
        return 0;
    if (!t->vcpus && !list_vcpus(t, &error))
        goto fail;
    if (!read_vcpus(t, host, NULL)) {
        /* A vCPU went away or came: list them again, once. */
        if (!list_vcpus(t, &error) || !read_vcpus(t, host, &error))
            goto fail;
    }
    probe_source_set_available(src);
    return t->vcpus->len;

fail:
    if (t->vcpus)
        g_clear_pointer(&t->vcpus, g_array_unref);
    probe_source_set_unavailable(src, g_strdup(error->message));
    return 0;
}

static gboolean
exits_from_debugfs(ProbeTarget *t, ProbeExitCounters *out)
{
    ProbeSource *src = &t->src[PROBE_SOURCE_DEBUGFS];
    g_autoptr(GError) error = NULL;

    if (!probe_source_should_try(src))
        return FALSE;
    if (!t->kvm_debugfs)
        t->kvm_debugfs = probe_kvm_debugfs_new(t->debugfs, t->pid);
    if (!probe_kvm_debugfs_read(t->kvm_debugfs, out, &error)) {
        probe_source_set_unavailable(src, g_strdup(error->message));
        return FALSE;
    }
    probe_source_set_available(src);
    return TRUE;
}

static gboolean
exits_from_perf(ProbeTarget *t, ProbeExitCounters *out)
{
    ProbeSource *src = &t->src[PROBE_SOURCE_PERF];
    g_autoptr(GError) error = NULL;

    if (!probe_source_should_try(src))
        return FALSE;
    if (!t->perf)
        t->perf = probe_perf_new_kvm(t->proc, t->tracefs, t->pid, &error);
    if (!t->perf || !probe_perf_read(t->perf, out, &error)) {
        g_clear_pointer(&t->perf, probe_perf_free);
        probe_source_set_unavailable(src, g_strdup(error->message));
        return FALSE;
    }
    probe_source_set_available(src);
    return TRUE;
}

gboolean
probe_target_sample_exits(ProbeTarget *t, ProbeExitsMode mode,
                          ProbeTargetSnap *snap)
{
    ProbeExitCounters c;
    gboolean ok = FALSE;

    probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_NONE);
    switch (mode) {
    case PROBE_EXITS_AUTO:
        ok = exits_from_debugfs(t, &c);
        if (ok)
            /* One source is enough; do not hold a descriptor per thread. */
            g_clear_pointer(&t->perf, probe_perf_free);
        else
            ok = exits_from_perf(t, &c);
        break;
    case PROBE_EXITS_DEBUGFS:
        ok = exits_from_debugfs(t, &c);
        break;
    case PROBE_EXITS_PERF:
        ok = exits_from_perf(t, &c);
        break;
    default:
        break;
    }
    if (ok)
        snap->exits = c;
    else
        probe_exit_counters_init(&snap->exits, PROBE_EXIT_SOURCE_NONE);
    return ok;
}

/* Why host source @k gave nothing this tick, for the choice's reason. */
static char *
exit_why_not(ProbeTarget *t, ProbeSourceKind k, gboolean allowed)
{
    const ProbeSource *src = &t->src[k];

    if (!allowed)
        return g_strdup("not allowed by exits-source");
    if (src->state == PROBE_SOURCE_UNAVAILABLE)
        return g_strdup_printf("unavailable: %s", src->reason);
    return g_strdup("not needed");
}

ProbeExitSource
probe_target_choose_exits(ProbeTarget *t, ProbeExitsMode mode,
                          ProbeTargetSnap *snap, const char *reported_why,
                          const char *no_kvm)
{
    ProbeExitCounters dbg, perf;
    const ProbeExitCounters *readings[PROBE_EXIT_SOURCE_MAX] = { NULL };
    const char *why_not[PROBE_EXIT_SOURCE_MAX] = { NULL };
    g_autofree char *dbg_why = NULL, *perf_why = NULL;
    ProbeExitChoice *ch = &t->exit_choice;
    gboolean use_dbg = mode == PROBE_EXITS_AUTO || mode == PROBE_EXITS_DEBUGFS;
    gboolean use_perf = mode == PROBE_EXITS_AUTO || mode == PROBE_EXITS_PERF;
    gboolean better_live;
    ProbeExitSource chosen;

    if (no_kvm || mode == PROBE_EXITS_OFF) {
        g_clear_pointer(&t->perf, probe_perf_free);
        probe_exit_choice_set_absent(ch, no_kvm ? no_kvm : "exits-source is off");
        probe_exit_counters_init(&snap->exits, PROBE_EXIT_SOURCE_NONE);
        return PROBE_EXIT_SOURCE_NONE;
    }
    if (snap->exits.source == PROBE_EXIT_SOURCE_QUERY_STATS)
        readings[PROBE_EXIT_SOURCE_QUERY_STATS] = &snap->exits;
    else
        why_not[PROBE_EXIT_SOURCE_QUERY_STATS] = reported_why ? reported_why
                                                              : "not offered by QEMU";
    if (use_dbg && exits_from_debugfs(t, &dbg))
        readings[PROBE_EXIT_SOURCE_DEBUGFS] = &dbg;
    dbg_why = exit_why_not(t, PROBE_SOURCE_DEBUGFS, use_dbg);
    why_not[PROBE_EXIT_SOURCE_DEBUGFS] = dbg_why;

    /* perf is the last resort: worth its descriptors only while nothing
     * better reads, or what reads is dead and needs a second opinion. */
    better_live = FALSE;
    for (int s = PROBE_EXIT_SOURCE_QUERY_STATS; s < PROBE_EXIT_SOURCE_PERF; s++)
        if (readings[s] && !probe_exit_choice_is_dead(ch, s))
            better_live = TRUE;
    if (use_perf && (!better_live || (t->perf && ch->chosen == PROBE_EXIT_SOURCE_PERF))) {
        if (exits_from_perf(t, &perf))
            readings[PROBE_EXIT_SOURCE_PERF] = &perf;
    } else {
        g_clear_pointer(&t->perf, probe_perf_free);
    }
    perf_why = exit_why_not(t, PROBE_SOURCE_PERF, use_perf);
    why_not[PROBE_EXIT_SOURCE_PERF] = perf_why;

    chosen = probe_exit_choice_pick(ch, readings, why_not);
    if (chosen == PROBE_EXIT_SOURCE_NONE)
        probe_exit_counters_init(&snap->exits, PROBE_EXIT_SOURCE_NONE);
    else
        snap->exits = *readings[chosen];
    return chosen;
}

ProbeExitSource
probe_target_exit_source(const ProbeTarget *t, const char **why)
{
    if (why)
        *why = t->exit_choice.why;
    return t->exit_choice.chosen;
}

const ProbeSource *
probe_target_source(const ProbeTarget *t, ProbeSourceKind k)
{
    g_return_val_if_fail(k >= 0 && k < PROBE_SOURCE_MAX, NULL);
    return &t->src[k];
}

static GPtrArray *
take_news(ProbeSource *src, guint n)
{
    GPtrArray *news = NULL;

    for (guint k = 0; k < n; k++) {
        char *msg;

        if (!probe_source_take_news(&src[k], &msg))
            continue;
        if (!news)
            news = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(news, msg);
    }
    return news;
}

GPtrArray *
probe_target_take_news(ProbeTarget *t)
{
    GPtrArray *news = take_news(t->src, PROBE_SOURCE_MAX);
    char *msg;

    if (probe_exit_choice_take_news(&t->exit_choice, &msg)) {
        if (!news)
            news = g_ptr_array_new_with_free_func(g_free);
        g_ptr_array_add(news, msg);
    }
    return news;
}

struct ProbeHostSampler {
    ProbeFile psi_file;
    ProbeFile stat_file;
    ProbeBuf buf;
    ProbeSource src[PROBE_SOURCE_MAX];
};

ProbeHostSampler *
probe_host_sampler_new(const ProbeRoots *roots)
{
    ProbeHostSampler *h = g_new0(ProbeHostSampler, 1);
    const char *proc = roots && roots->proc ? roots->proc : "/proc";

    probe_file_init(&h->psi_file, g_strdup_printf("%s/pressure/cpu", proc));
    probe_file_init(&h->stat_file, g_strdup_printf("%s/stat", proc));
    for (int k = 0; k < PROBE_SOURCE_MAX; k++)
        probe_source_init(&h->src[k], k);
    return h;
}

void
probe_host_sampler_free(ProbeHostSampler *h)
{
    if (!h)
        return;
    for (int k = 0; k < PROBE_SOURCE_MAX; k++)
        probe_source_clear(&h->src[k]);
    probe_buf_clear(&h->buf);
    probe_file_clear(&h->psi_file);
    probe_file_clear(&h->stat_file);
    g_free(h);
}

gboolean
probe_host_sampler_sample(ProbeHostSampler *h, ProbeHostSnap *snap)
{
    ProbeSource *psi = &h->src[PROBE_SOURCE_PSI];
    ProbeSource *stat = &h->src[PROBE_SOURCE_STAT];
    g_autoptr(GError) error = NULL;
    ProbePsi p;
    ProbeCpuStat st;

    /* what this tick does not read is absent, not the last tick's */
    for (int i = 0; i < METRIC_VEC_MAX; i++)
        if (metric_def(i)->source == METRIC_SOURCE_HOST_PSI ||
            metric_def(i)->source == METRIC_SOURCE_HOST_STAT)
            snap->v.v[i] = METRIC_ABSENT;
    snap->psi_some_avg10 = snap->psi_full_avg10 = 0;
    snap->n_cpus = 0;
    if (probe_source_should_try(psi)) {
        if (probe_psi_reread(&h->psi_file, &h->buf, &p, &error)) {
            probe_host_snap_set_psi(snap, &p);
            probe_source_set_available(psi);
        } else {
            probe_source_set_unavailable(psi, g_strdup(error->message));
        }
        g_clear_error(&error);
    }
    if (probe_source_should_try(stat)) {
        if (probe_cpu_stat_reread(&h->stat_file, &h->buf, &st, &error)) {
            probe_host_snap_set_cpu_stat(snap, &st);
            probe_source_set_available(stat);
        } else {
            probe_source_set_unavailable(stat, g_strdup(error->message));
        }
    }
    return probe_host_snap_has_psi(snap) || probe_host_snap_has_stat(snap);
}

const ProbeSource *
probe_host_sampler_source(const ProbeHostSampler *h, ProbeSourceKind k)
{
    g_return_val_if_fail(k >= 0 && k < PROBE_SOURCE_MAX, NULL);
    return &h->src[k];
}

GPtrArray *
probe_host_sampler_take_news(ProbeHostSampler *h)
{
    return take_news(h->src, PROBE_SOURCE_MAX);
}
