/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A stop: the originals are put back and in-flight writes are waited for,
 * within a deadline.
 */
#include "pt-config.h"
#include "pt-daemon-shutdown.h"
#include "pt-daemon-private.h"
#include "pt-daemon-attach.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-tick.h"
#include "pt-log.h"

#include <errno.h>
#include <glib/gstdio.h>

typedef struct {
    PtDaemon *d;
    GCallback done;
    gpointer user_data;
    gint64 deadline_us;
    gint64 cap_us;              /* PT_STOP_MAX_S after the start */
    guint last_pending;         /* restores pending when last polled */
    gint64 progress_us;         /* when that count last went down */
} PtShutdown;

/*
 * The iothreads of a target read at the stop: those whose originals are in
 * the store for this QEMU instance, and that differ from them, get them
 * back.  The reading goes through pt_daemon_note_read() first, so a triple
 * someone else wrote since the last tick (an operator's virsh iothreadset
 * just before the stop) is taken as the original and stays.  A read that
 * failed leaves what the run last knew of each iothread to restore: a
 * write lost to an operator's then is better than a VM left as the
 * policy set it.
 */
static void
pt_daemon_on_stop_read(PtTarget *t, ProbeTargetSnap *snap, const GError *error, gpointer data)
{
    PtDaemon *d = data;

    /* A detached target's daemon may be gone: look at it first. */
    if (t->detached) {
        probe_target_snap_free(snap);
        return;
    }
    if (error) {
        pt_warn(t->name, NULL, "cannot read its iothreads at the stop: %s; the values it "
                "was last seen with are restored, any this run has not seen are not",
                error->message);
        pt_daemon_restore_target(d, t, "polltuned is stopping");
    } else {
        for (guint i = 0; i < snap->iothreads->len; i++) {
            ProbeIothreadSnap *ios = snap->iothreads->pdata[i];
            PtIothread *io;

            if (!ios->have_triple)
                continue;
            io = pt_target_iothread(t, ios->id);
            pt_daemon_note_read(d, t, io, &ios->triple, snap->mono_ns / 1000);
            io->triple = ios->triple;
            io->have_triple = TRUE;
            if (pt_daemon_adopt_original(d, t, io))
                pt_daemon_restore_changed(d, t, io, "polltuned is stopping");
        }
    }
    probe_target_snap_free(snap);
}

/* Something of @t's may be left changed: an iothread whose triple, as
 * last read or written, is not its original; or one of our writes still
 * in flight. */
static gboolean
pt_target_changed(PtTarget *t)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        const PtIothread *io = v;

        if (io->writes_in_flight || !io->have_original || !io->have_triple ||
            !policy_triple_equal(&io->original, &io->triple))
            return TRUE;
    }
    return FALSE;
}

static gboolean
pt_target_writing(PtTarget *t)
{
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (((const PtIothread *)v)->writes_in_flight)
            return TRUE;
    return FALSE;
}

/*
 * A stop restores nothing from memory alone: what the last tick read may
 * be stale by the time the stop comes (an operator's write just before
 * the SIGTERM, docs/SERVICE.md), so every attached target that may hold
 * a value of ours is read once, and restored from that reading
 * (pt_daemon_on_stop_read()).  One read per target, all in flight at
 * once: for QMP one query-iothreads answers for every iothread of a QEMU.
 * The read waits for the tick's own sample if one is in flight (it may
 * have read QEMU before the operator wrote) and for our writes in flight
 * to the target (a reading taken while one is may be from before it, and
 * says nothing of whose a value is).
 *
 * So is read a target attached but not yet sampled (a stop right after a
 * start, or after a restart that followed a crash), whose values this run
 * has not read: a policy write of an earlier run may still be in QEMU.  So
 * is a target that was lost when the stop began and that the stop reached
 * again (its QEMU was stopped for a while and its reconnect waited out a
 * backoff): what it holds now is not known.  Returns how many of these
 * reads, or samples and writes they wait for, are still running, and how
 * many of the targets reached again are still connecting.
 */
static guint
pt_daemon_stop_reads(PtDaemon *d, gboolean start)
{
    GHashTableIter it;
    gpointer v;
    guint busy = 0;

    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *t = v;

        if (t->state != PT_TARGET_ATTACHED) {
            busy += t->stop_reconnect && start && pt_target_reach_now(t);
            continue;
        }
        if (t->stop_read) {
            busy += t->sampling;
            continue;
        }
        if (t->prev && !t->stop_reconnect && !pt_target_changed(t))
            continue;
        if (t->sampling || pt_target_writing(t)) {
            busy++;
            continue;
        }
        if (!start)
            continue;
        t->stop_read = TRUE;
        busy++;
        pt_target_sample(t, g_get_monotonic_time() * 1000, g_get_real_time() / 1000,
                         pt_daemon_on_stop_read, d);
    }
    return busy;
}

/*
 * How long a stop may take.  Each knob that differs from its original is
 * one qom-set, or one parameter of virDomainSetIOThreadParams, and QEMU
 * runs a monitor's commands one at a time, whatever we send at once.  On
 * a two-core host shared with other builds QEMU 7.2 answered 12,288
 * qom-sets sent together in 38 s at a load average of 14 (3.1 ms each),
 * and the daemon's stop made 3,072 writes in 7.0 s at a load of 28
 * (2.3 ms each; docs/BENCHMARKS.md, "Restore at stop").  So a stop gets
 * PT_STOP_BASE_MS (reads of targets not sampled yet, a libvirtd busy for a
 * few seconds, the run's last store writes) plus PT_STOP_WRITE_US, three
 * times the slowest measured, for each knob to write (an iothread not
 * read yet counts its three), up to PT_STOP_MAX_S.  The largest host
 * tuned, 4096 iothreads (PT_IOTHREADS_MAX in one QEMU, or many VMs), needs
 * at most 12,288 writes: 5 s + 12,288 x 10 ms = 127.9 s, within the 130 s
 * of PT_STOP_MAX_S, which the unit's TimeoutStopSec exceeds (meson.build).
 *
 * The load of a host varies more than that: one stop on the same host
 * made 1,716 writes in 20.4 s (11.9 ms each).  So past its deadline a stop
 * goes on while restores still complete, until none has for
 * PT_STOP_STALL_MS (a QEMU or libvirtd that stopped answering), or until
 * PT_STOP_MAX_S.
 */
#define PT_STOP_BASE_MS 5000
#define PT_STOP_WRITE_US 10000
#define PT_STOP_STALL_MS 2000

G_STATIC_ASSERT(PT_STOP_BASE_MS + (guint64)PT_IOTHREADS_MAX * POLICY_KNOB_MAX *
                PT_STOP_WRITE_US / 1000 <= PT_STOP_MAX_S * 1000);

guint
pt_daemon_stop_timeout_ms(PtDaemon *d)
{
    GHashTableIter it, iit;
    gpointer v, iv;
    guint64 writes = 0;

    if (!d->conf->restore_on_exit)
        return PT_STOP_BASE_MS;
    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        g_hash_table_iter_init(&iit, ((PtTarget *)v)->iothreads);
        while (g_hash_table_iter_next(&iit, NULL, &iv)) {
            const PtIothread *io = iv;

            for (PolicyKnob k = 0; k < POLICY_KNOB_MAX; k++)
                writes += !io->have_original || !io->have_triple ||
                          policy_triple_get(&io->original, k) !=
                          policy_triple_get(&io->triple, k);
        }
    }
    return (guint)MIN(PT_STOP_BASE_MS + writes * PT_STOP_WRITE_US / 1000,
                      (guint64)PT_STOP_MAX_S * 1000);
}

static gboolean
pt_daemon_shutdown_poll(gpointer data)
{
    PtShutdown *s = data;
    gint64 now = g_get_monotonic_time();
    gboolean late;
    guint reading;

    if (s->d->pending_restores != s->last_pending) {
        s->last_pending = s->d->pending_restores;
        s->progress_us = now;
    }
    late = now >= s->deadline_us &&
           (now >= s->cap_us || now - s->progress_us >= PT_STOP_STALL_MS * 1000);
    reading = s->d->conf->restore_on_exit ? pt_daemon_stop_reads(s->d, !late) : 0;

    if ((reading || s->d->pending_restores || s->d->pending_applies) && !late)
        return G_SOURCE_CONTINUE;
    if (s->d->pending_restores)
        pt_warn(NULL, NULL, "%u restores did not complete in time", s->d->pending_restores);
    if (reading)
        pt_warn(NULL, NULL, "%u targets could not be read in time (a sample or a write "
                "still running, or lost and not answering); what was written to them stays",
                reading);
    /* Left behind, the marker makes the next start take this clean stop
     * for a crash, and on-restart then acts on it: say so. */
    if (s->d->run_marker && g_unlink(s->d->run_marker) != 0 && errno != ENOENT) {
        int e = errno;

        pt_warn(NULL, NULL, "%s: cannot remove the run marker: %s; the next start will take "
                "this stop for a crash (on-restart=%s) unless it is removed",
                s->d->run_marker, g_strerror(e), pt_restart_to_string(s->d->conf->on_restart));
    }
    ((void (*)(gpointer))s->done)(s->user_data);
    g_free(s);
    return G_SOURCE_REMOVE;
}

void
pt_daemon_shutdown(PtDaemon *d, guint timeout_ms, GCallback done, gpointer user_data)
{
    PtShutdown *s = g_new0(PtShutdown, 1);
    GHashTableIter it;
    gpointer v;

    s->d = d;
    s->done = done;
    s->user_data = user_data;
    s->deadline_us = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    s->cap_us = g_get_monotonic_time() + (gint64)MAX(timeout_ms, PT_STOP_MAX_S * 1000) * 1000;
    s->progress_us = g_get_monotonic_time();
    d->shutting_down = TRUE;
    pt_daemon_tick_stop(d);
    /*
     * The restores are the last thing this run does for the VMs: each may
     * take the whole stop, not only qmp-timeout.  A libvirtd busy for a few
     * seconds (libvirt 9.0 probing QEMU's capabilities takes 8-16 s on a
     * host whose /dev/kvm cannot run guests) otherwise failed them and
     * left the VMs changed.
     */
    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        if (pt_target_kinds[k]->stopping)
            pt_target_kinds[k]->stopping(d, timeout_ms);
    if (d->conf->restore_on_exit) {
        pt_info(NULL, NULL, "stopping: restoring original values within %u ms", timeout_ms);
        g_hash_table_iter_init(&it, d->targets.by_name);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            PtTarget *t = v;

            /* Read first (pt_daemon_stop_reads()). */
            if (t->state == PT_TARGET_ATTACHED)
                continue;
            /* A lost target waits out its reconnect backoff, which grows
             * to a minute while its QEMU does not answer (SIGSTOPped, or
             * a host too busy to run it): its QEMU may answer again long
             * before the next attempt and still hold our values.  The
             * stop does not wait for that attempt; it tries now, and
             * again while that QEMU runs (pt_daemon_stop_reads()). */
            t->stop_reconnect = TRUE;
        }
    }
    if (d->conf->restore_on_exit)
        pt_daemon_stop_reads(d, TRUE);
    g_timeout_add(20, pt_daemon_shutdown_poll, s);
}
