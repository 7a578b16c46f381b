#include "pt-target.h"

static const char *const pt_target_state_table[PT_TARGET_STATE_MAX] = {
    [PT_TARGET_CONNECTING] = "connecting",
    [PT_TARGET_ATTACHED] = "attached",
    [PT_TARGET_LOST] = "lost",
};

const char *
pt_target_state_to_string(PtTargetState s)
{
    return s < PT_TARGET_STATE_MAX ? pt_target_state_table[s] : NULL;
}

static void
pt_iothread_free(PtIothread *io)
{
    g_free(io->id);
    g_array_unref(io->history);
    policy_decision_free(io->last_decision);
    g_free(io->last_outcome);
    g_free(io->last_policy);
    g_free(io);
}

PtTarget *
pt_target_alloc(gsize size, const PtTargetOps *ops, const char *name,
                StoreTargetKind kind)
{
    PtTarget *t = g_malloc0(size);

    t->ref = 1;
    t->ops = ops;
    t->name = g_strdup(name);
    t->kind = kind;
    t->state = PT_TARGET_CONNECTING;
    t->exits_mode = PROBE_EXITS_AUTO;
    t->sample_ms = -1;
    t->iothreads = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                         (GDestroyNotify)pt_iothread_free);
    t->news = g_ptr_array_new_with_free_func(g_free);
    return t;
}

PtTarget *
pt_target_ref(PtTarget *t)
{
    g_atomic_int_inc(&t->ref);
    return t;
}

void
pt_target_unref(PtTarget *t)
{
    if (!t || !g_atomic_int_dec_and_test(&t->ref))
        return;
    if (t->ops->free)
        t->ops->free(t);
    probe_target_free(t->probe);
    probe_target_snap_free(t->prev);
    g_hash_table_unref(t->iothreads);
    g_ptr_array_unref(t->news);
    g_free(t->state_reason);
    g_free(t->uuid);
    g_free(t->name);
    g_free(t);
}

void
pt_target_set_state(PtTarget *t, PtTargetState state, const char *reason)
{
    if (t->state == state && !g_strcmp0(t->state_reason, reason))
        return;
    t->state = state;
    g_free(t->state_reason);
    t->state_reason = g_strdup(reason);
    g_ptr_array_add(t->news, reason ?
                    g_strdup_printf("%s: %s", pt_target_state_to_string(state), reason) :
                    g_strdup(pt_target_state_to_string(state)));
}

void
pt_target_set_pid(PtTarget *t, int pid, const ProbeRoots *roots)
{
    if (t->pid == pid && t->probe)
        return;
    t->pid = pid;
    g_clear_pointer(&t->probe, probe_target_free);
    if (pid > 0)
        t->probe = probe_target_new(roots, pid);
}

PtIothread *
pt_target_iothread(PtTarget *t, const char *id)
{
    PtIothread *io = g_hash_table_lookup(t->iothreads, id);

    if (!io) {
        io = g_new0(PtIothread, 1);
        io->id = g_strdup(id);
        io->history = g_array_new(FALSE, TRUE, sizeof(PolicyMetrics));
        g_hash_table_insert(t->iothreads, io->id, io);
    }
    return io;
}

void
pt_iothread_push_metrics(PtIothread *io, const PolicyMetrics *m)
{
    /* Drop the oldest tenth at once rather than one per tick, so the
     * memmove is rare. */
    if (io->history->len >= PT_HISTORY_TICKS)
        g_array_remove_range(io->history, 0, PT_HISTORY_TICKS / 10);
    g_array_append_val(io->history, *m);
}

void
pt_iothread_totals_add(PtIothreadTotals *tot, const StoreSample *s)
{
    const StoreIo *io = &s->io;

    if (io->rd_ops != STORE_NULL) {
        tot->have_io = TRUE;
        tot->rd_ops += io->rd_ops;
        tot->wr_ops += io->wr_ops;
        tot->flush_ops += io->flush_ops;
        tot->rd_bytes += io->rd_bytes;
        tot->wr_bytes += io->wr_bytes;
        tot->io_time_ns += io->rd_time_ns + io->wr_time_ns + io->flush_time_ns;
    }
    if (s->cpu_ns != STORE_NULL) {
        tot->have_cpu = TRUE;
        tot->cpu_ns[s->poll_max_ns != STORE_NULL && s->poll_max_ns > 0] += s->cpu_ns;
        if (s->ctx_vol != STORE_NULL)
            tot->ctx_vol += s->ctx_vol;
        if (s->runq_wait_ns != STORE_NULL)
            tot->runq_wait_ns += s->runq_wait_ns;
    }
    /* Deltas are never negative (probe-derive and pt-history drop a pair
     * whose counter went back); a negative total is a corrupted row. */
    g_assert(tot->rd_ops >= 0 && tot->cpu_ns[0] >= 0 && tot->cpu_ns[1] >= 0);
}

void
pt_target_sample(PtTarget *t, gint64 mono_ns, gint64 when_ms, PtSampleDone done,
                 gpointer user_data)
{
    ProbeTargetSnap *snap;

    g_return_if_fail(!t->sampling);
    t->sampling = TRUE;
    t->sample_start_us = g_get_monotonic_time();
    t->sample_done = done;
    t->sample_data = user_data;
    snap = probe_target_snap_new(t->pid, mono_ns, when_ms);
    pt_target_ref(t);
    t->ops->sample(t, snap);
}

void
pt_target_sample_finish(PtTarget *t, ProbeTargetSnap *snap, GError *error)
{
    PtSampleDone done = t->sample_done;
    gpointer data = t->sample_data;

    t->sampling = FALSE;
    t->sample_done = NULL;
    t->sample_ms = (g_get_monotonic_time() - t->sample_start_us) / 1000.0;
    if (error) {
        probe_target_snap_free(snap);
        snap = NULL;
    } else {
        /* The pid may have been learnt during the sample. */
        snap->pid = t->pid;
    }
    done(t, snap, error, data);
    g_clear_error(&error);
    pt_target_unref(t);
}

void
pt_target_sample_host_side(PtTarget *t, ProbeTargetSnap *snap)
{
    g_autoptr(GPtrArray) news = NULL;

    if (!t->probe)
        return;
    for (guint i = 0; i < snap->iothreads->len; i++) {
        ProbeIothreadSnap *io = snap->iothreads->pdata[i];
        PtIothread *pio = pt_target_iothread(t, io->id);

        /* A failed thread read leaves have_thread FALSE: the derivation
         * then reports no CPU figures, and the source says why. */
        probe_target_sample_iothread(t->probe, io, io->tid, NULL);
        pio->tid = io->tid;
    }
    if (snap->exits.source == PROBE_EXIT_SOURCE_NONE && t->exits_mode != PROBE_EXITS_OFF)
        probe_target_sample_exits(t->probe, t->exits_mode, snap);
    if ((news = probe_target_take_news(t->probe)))
        for (guint i = 0; i < news->len; i++)
            g_ptr_array_add(t->news, g_strdup(news->pdata[i]));
}

typedef struct {
    PtTarget *t;
    PtApplyDone done;
    gpointer user_data;
} PtApplyJob;

void
pt_target_apply(PtTarget *t, const char *iothread, const PolicyTriple *to,
                gint64 bound, PtApplyDone done, gpointer user_data)
{
    PtApplyJob *job = g_new0(PtApplyJob, 1);
    PtIothread *io = g_hash_table_lookup(t->iothreads, iothread);
    PolicyTriple from = io && io->have_triple ? io->triple :
        (PolicyTriple){ G_MAXUINT64, G_MAXUINT64, G_MAXUINT64 };

    job->t = pt_target_ref(t);
    job->done = done;
    job->user_data = user_data;
    if (t->state != PT_TARGET_ATTACHED) {
        g_autoptr(GError) err = g_error_new(G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                                            "%s/%s: target is %s", t->name, iothread,
                                            pt_target_state_to_string(t->state));

        pt_target_apply_finish(job, g_steal_pointer(&err));
        return;
    }
    t->ops->apply(t, iothread, &from, to, bound, job);
}

void
pt_target_apply_finish(gpointer data, GError *error)
{
    PtApplyJob *job = data;

    job->done(job->t, error, job->user_data);
    g_clear_error(&error);
    pt_target_unref(job->t);
    g_free(job);
}
