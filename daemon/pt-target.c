/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-target.h"
#include "probe-host.h"
#include "probe-thread.h"

PT_ENUM_IMPL(pt_target_state, PtTargetState, PT_TARGET_STATE_MAX,
             [PT_TARGET_CONNECTING] = "connecting",
             [PT_TARGET_ATTACHED] = "attached",
             [PT_TARGET_LOST] = "lost",
             [PT_TARGET_GONE] = "gone")

PT_ENUM_IMPL(pt_outcome, PtOutcome, PT_OUTCOME_MAX,
             [PT_OUTCOME_APPLIED] = "applied",
             [PT_OUTCOME_RECOMMENDED] = "recommended",
             [PT_OUTCOME_FAILED] = "failed",
             [PT_OUTCOME_NOT_TAKEN] = "not taken")

char *
pt_outcome_format(PtOutcome outcome, const char *failure)
{
    if (outcome == PT_OUTCOME_FAILED || outcome == PT_OUTCOME_NOT_TAKEN)
        return g_strdup_printf("%s: %s", pt_outcome_to_string(outcome),
                               failure ? failure : "unknown");
    return g_strdup(pt_outcome_to_string(outcome));
}

static void
pt_iothread_free(PtIothread *io)
{
    g_free(io->id);
    g_free(io->group);
    g_array_unref(io->history);
    policy_gain_free(io->gain);
    policy_decision_free(io->last_decision);
    g_free(io->last_failure);
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
    t->admitted = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
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
    g_hash_table_unref(t->admitted);
    g_ptr_array_unref(t->news);
    g_free(t->state_reason);
    g_free(t->exits_no_kvm);
    g_free(t->exits_unreported);
    g_free(t->health.last_failure);
    g_free(t->instance);
    g_free(t->process);
    g_free(t->refused);
    g_free(t->uuid);
    g_free(t->display);
    g_free(t->name_clash);
    g_free(t->former_name);
    g_free(t->name);
    g_free(t);
}

static void
pt_target_note_failure(PtTarget *t, const char *reason, gint64 now_us)
{
    PtTargetHealth *h = &t->health;

    h->failures++;
    h->backoff_ms = h->backoff_ms ? MIN(h->backoff_ms * 2, PT_BACKOFF_MAX_MS) :
                                    PT_BACKOFF_FIRST_MS;
    h->retry_at_us = now_us + (gint64)h->backoff_ms * 1000;
    h->healthy_since_us = 0;
    if (!h->broken_since_us) {
        h->broken_since_us = now_us;
        h->reminded_us = now_us;
    }
    g_free(h->last_failure);
    h->last_failure = g_strdup(reason ? reason : "unknown");
}

void
pt_target_set_state_at(PtTarget *t, PtTargetState state, const char *reason, gint64 now_us)
{
    PtTargetHealth *h = &t->health;
    gboolean was_broken = h->broken_since_us != 0;
    g_autofree char *why = NULL;

    if (state == PT_TARGET_LOST) {
        /* One failure per attempt: the hang-up that follows a loss we
         * declared ourselves is not another. */
        if (t->state == PT_TARGET_LOST)
            return;
        pt_target_note_failure(t, reason, now_us);
        /* Targets without a retry of their own come back with their
         * channel's reconnect (libvirt's): no attempts to count. */
        why = t->ops->retry ?
            g_strdup_printf("%s; attempt %u failed, the next in %u s", h->last_failure,
                            h->failures, h->backoff_ms / 1000) :
            g_strdup(h->last_failure);
    } else if (state == PT_TARGET_GONE) {
        /* Not a failure: the QEMU is gone, and one that comes on its
         * socket later starts afresh.  The daemon says so itself. */
        if (t->state == state)
            return;
        g_free(h->last_failure);
        *h = (PtTargetHealth){ 0 };
        t->state = state;
        g_free(t->state_reason);
        t->state_reason = g_strdup(reason);
        t->gone_pending = TRUE;
        return;
    } else if (state == PT_TARGET_ATTACHED && t->state == state && !reason) {
        /* Attached again by a relist: a failing sample keeps its reason. */
        return;
    } else if (!reason && was_broken) {
        why = g_strdup_printf("%s after %u failed attempts; the last: %s",
                              state == PT_TARGET_CONNECTING ? "trying again" :
                                                             "attached again, no good sample yet",
                              h->failures, h->last_failure);
    } else {
        why = g_strdup(reason);
    }
    if (t->state == state && !g_strcmp0(t->state_reason, why))
        return;
    if (state == PT_TARGET_ATTACHED && t->state != state)
        t->failed_samples = 0;
    t->state = state;
    g_free(t->state_reason);
    t->state_reason = g_steal_pointer(&why);
    /* While broken, attempts come and go without a line each. */
    if (was_broken)
        return;
    if (state == PT_TARGET_LOST && t->ops->retry)
        g_ptr_array_add(t->news, g_strdup_printf("lost: %s; retrying after %u s, then "
                                                 "backing off up to %u s while it fails",
                                                 h->last_failure, h->backoff_ms / 1000,
                                                 PT_BACKOFF_MAX_MS / 1000));
    else
        g_ptr_array_add(t->news, t->state_reason ?
                        g_strdup_printf("%s: %s", pt_target_state_to_string(state),
                                        t->state_reason) :
                        g_strdup(pt_target_state_to_string(state)));
}

void
pt_target_retry(PtTarget *t)
{
    if (t->ops->retry)
        t->ops->retry(t);
}

gboolean
pt_target_reach_now(PtTarget *t)
{
    return t->ops->reach_now && t->ops->reach_now(t);
}

void
pt_target_set_state(PtTarget *t, PtTargetState state, const char *reason)
{
    pt_target_set_state_at(t, state, reason, g_get_monotonic_time());
}

/* Up to three failed samples in a row are weathered by a healthy target
 * (a slow tick); a broken one has shown nothing good since its last
 * failure, so its first failed sample ends the attempt. */
#define PT_FAILED_SAMPLES_MAX 3

void
pt_target_sample_result(PtTarget *t, const GError *error, gint64 now_us)
{
    PtTargetHealth *h = &t->health;

    if (error) {
        t->failed_samples++;
        if (t->state != PT_TARGET_ATTACHED)
            return;
        if (t->failed_samples >= PT_FAILED_SAMPLES_MAX || h->broken_since_us) {
            pt_target_set_state_at(t, PT_TARGET_LOST, error->message, now_us);
            return;
        }
        g_free(t->state_reason);
        t->state_reason = g_strdup_printf("%u samples in a row failed: %s",
                                          t->failed_samples, error->message);
        return;
    }
    t->failed_samples = 0;
    g_clear_pointer(&t->state_reason, g_free);
    if (h->broken_since_us) {
        g_ptr_array_add(t->news, g_strdup_printf("healthy again after %u failed attempts "
                                                 "over %" G_GINT64_FORMAT " s", h->failures,
                                                 (now_us - h->broken_since_us) / G_USEC_PER_SEC));
        h->broken_since_us = 0;
    }
    if (!h->healthy_since_us)
        h->healthy_since_us = now_us;
    else if (h->failures && now_us - h->healthy_since_us >= PT_BACKOFF_RESET_MS * 1000LL) {
        h->failures = 0;
        h->backoff_ms = 0;
    }
}

gboolean
pt_target_retry_due(const PtTarget *t, gint64 now_us)
{
    return now_us >= t->health.retry_at_us;
}

void
pt_target_health_tick(PtTarget *t, gint64 now_us)
{
    PtTargetHealth *h = &t->health;

    if (!h->broken_since_us || now_us - h->reminded_us < PT_BROKEN_REMIND_MS * 1000LL)
        return;
    h->reminded_us = now_us;
    g_ptr_array_add(t->news, g_strdup_printf("still failing after %u attempts over %"
                                             G_GINT64_FORMAT " min: %s", h->failures,
                                             (now_us - h->broken_since_us) / 60000000,
                                             h->last_failure));
}

void
pt_target_set_pid(PtTarget *t, int pid, const ProbeRoots *roots)
{
    g_free(t->process);
    /* Read again even for the same pid: a pid can be another process's. */
    t->process = pt_instance_for_pid(roots, pid);
    if (t->pid == pid && t->probe)
        return;
    t->pid = pid;
    g_clear_pointer(&t->probe, probe_target_free);
    if (pid > 0)
        t->probe = probe_target_new(roots, pid);
}

gboolean
pt_target_admit(PtTarget *t)
{
    g_autoptr(GError) err = NULL;

    g_clear_pointer(&t->refused, g_free);
    if (!t->admit || t->admit(t, t->admit_data, &err))
        return TRUE;
    t->refused = g_strdup(err->message);
    return FALSE;
}

void
pt_target_set_exits_facts(PtTarget *t, const char *no_kvm, const char *unreported)
{
    if (g_strcmp0(t->exits_no_kvm, no_kvm) != 0) {
        g_free(t->exits_no_kvm);
        t->exits_no_kvm = g_strdup(no_kvm);
    }
    if (g_strcmp0(t->exits_unreported, unreported) != 0) {
        g_free(t->exits_unreported);
        t->exits_unreported = g_strdup(unreported);
    }
}

ProbeExitSource
pt_target_exit_source(const PtTarget *t, const char **why)
{
    if (!t->probe) {
        if (why)
            *why = NULL;
        return PROBE_EXIT_SOURCE_NONE;
    }
    return probe_target_exit_source(t->probe, why);
}

char *
pt_target_qemu_version_string(const PtTarget *t)
{
    if (!t->qemu_version)
        return NULL;
    return g_strdup_printf("%u.%u.%u", t->qemu_version / 1000000,
                           t->qemu_version / 1000 % 1000, t->qemu_version % 1000);
}

void
pt_target_set_instance(PtTarget *t, char *instance)
{
    GHashTableIter it;
    gpointer v;

    if (!g_strcmp0(t->instance, instance)) {
        g_free(instance);
        return;
    }
    g_free(t->instance);
    t->instance = instance;
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtIothread *io = v;

        io->have_original = FALSE;
        io->restored = FALSE;
        /* Writes to the old process say nothing of the new one's. */
        io->write_verify = FALSE;
        io->write_failures = 0;
        io->write_retry_at_us = 0;
    }
    g_hash_table_remove_all(t->admitted);
    t->admitted_peak = 0;
    t->admit_full_said = FALSE;
}

gboolean
pt_target_admit_iothread(PtTarget *t, const char *id, guint reported)
{
    guint room;

    if (g_hash_table_contains(t->admitted, id))
        return TRUE;
    t->admitted_peak = MAX(t->admitted_peak, reported);
    room = MIN((guint64)PT_IOTHREADS_MAX,
               2 * (guint64)t->admitted_peak + PT_IOTHREAD_IDS_SPARE);
    if (g_hash_table_size(t->admitted) < room) {
        g_hash_table_add(t->admitted, g_strdup(id));
        return TRUE;
    }
    if (!t->admit_full_said) {
        t->admit_full_said = TRUE;
        g_ptr_array_add(t->news, g_strdup_printf(
            "iothread %.64s and any other new id are left out: this QEMU process brought %u "
            "iothread ids already, the most one may (twice the %u it reported at once, plus "
            "%u, at most %u)", id, g_hash_table_size(t->admitted), t->admitted_peak,
            PT_IOTHREAD_IDS_SPARE, PT_IOTHREADS_MAX));
    }
    return FALSE;
}

/* "BOOT/" or "" when the boot id is unreadable (a fixture tree): the pid
 * and start time alone still tell instances of one boot apart. */
static char *
pt_boot_prefix(const ProbeRoots *roots)
{
    g_autofree char *boot = probe_boot_id_read(roots && roots->proc ? roots->proc : "/proc",
                                               NULL);

    return boot ? g_strconcat(boot, "/", NULL) : g_strdup("");
}

char *
pt_instance_for_pid(const ProbeRoots *roots, int pid)
{
    g_autofree char *boot = NULL;
    guint64 start;

    if (pid <= 0 || !probe_process_read_start(roots && roots->proc ? roots->proc : "/proc",
                                              pid, &start, NULL))
        return NULL;
    boot = pt_boot_prefix(roots);
    return g_strdup_printf("%s%d/%" G_GUINT64_FORMAT, boot, pid, start);
}

char *
pt_instance_for_domain(const ProbeRoots *roots, const char *uuid, int id)
{
    g_autofree char *boot = NULL;

    if (!uuid || id <= 0)
        return NULL;
    boot = pt_boot_prefix(roots);
    return g_strdup_printf("%slibvirt/%s/%d", boot, uuid, id);
}

const char *
pt_target_display(const PtTarget *t)
{
    return t->display ? t->display : t->name;
}

void
pt_target_set_display(PtTarget *t, const char *display)
{
    t->display_changed = TRUE;
    if (!g_strcmp0(t->display, display))
        return;
    g_free(t->display);
    t->display = g_strdup(display);
}

PtIothread *
pt_target_iothread(PtTarget *t, const char *id)
{
    PtIothread *io = g_hash_table_lookup(t->iothreads, id);

    if (!io) {
        io = g_new0(PtIothread, 1);
        io->id = g_strdup(id);
        io->history = g_array_new(FALSE, TRUE, sizeof(PolicyMetrics));
        io->gain = policy_gain_new();
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
    int polling = s->m.v[METRIC_POLL_MAX_NS] != METRIC_ABSENT && s->m.v[METRIC_POLL_MAX_NS] > 0;

    for (int i = 0; i < METRIC_MAX; i++) {
        const MetricDef *def = metric_def(i);

        if (s->m.v[i] == METRIC_ABSENT)
            continue;
        tot->have[def->source] = TRUE;
        if (def->reset == METRIC_RESET_GAUGE) {
            tot->have_gauge[i] = TRUE;
            tot->v[i][0] = s->m.v[i];
            continue;
        }
        /* Deltas are never negative (probe-derive and pt-history drop a
         * pair whose counter went back); a negative total is a corrupted
         * row. */
        g_assert(s->m.v[i] >= 0);
        tot->v[i][polling] += s->m.v[i];
    }
}

gboolean
pt_iothread_metric(const PtIothread *io, MetricId id, int polling, gint64 *v)
{
    const MetricDef *def = metric_def(id);

    g_return_val_if_fail(def, FALSE);
    /* The triple in force is the one last read or written, fresher than
     * the last stored sample's. */
    if (def->source == METRIC_SOURCE_IOTHREAD && id <= METRIC_POLL_SHRINK) {
        static const PolicyKnob knob[] = { POLICY_KNOB_POLL_MAX_NS, POLICY_KNOB_POLL_GROW,
                                           POLICY_KNOB_POLL_SHRINK };

        if (!io->have_triple)
            return FALSE;
        *v = (gint64)MIN(policy_triple_get(&io->triple, knob[id - METRIC_POLL_MAX_NS]),
                         (guint64)G_MAXINT64);
        return TRUE;
    }
    /* A gauge one source does not give (aio-max-batch from libvirt) is
     * absent, not 0; a counter is there with its group. */
    if (def->reset == METRIC_RESET_GAUGE ? !io->totals.have_gauge[id] : !io->totals.have[def->source])
        return FALSE;
    if (def->reset == METRIC_RESET_GAUGE)
        *v = io->totals.v[id][0];
    else
        *v = polling < 0 ? io->totals.v[id][0] + io->totals.v[id][1] : io->totals.v[id][polling];
    return TRUE;
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
    /* QEMU's own figures, when it gave any, are a candidate like the
     * host's; the choice keeps a source that reads zero from hiding one
     * that counts. */
    probe_target_choose_exits(t->probe, t->exits_mode, snap, t->exits_unreported,
                              t->exits_no_kvm);
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
