/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The triples an iothread had before the daemon first wrote it: captured at
 * first sight, kept in the store before any write, put back on observe,
 * detach, stop and after a crash.
 */
#include "pt-daemon-originals.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-private.h"
#include "pt-daemon-record.h"
#include "pt-tick.h"
#include "pt-daemon-record.h"
#include "pt-log.h"
#include "pt-tick.h"

/* What the originals know of the store's file: this file's alone. */
struct PtDaemonFile {
    /* StoreStats.reopens when every original held was last written: the
     * file they are in (pt_daemon_originals_on_disk()). */
    guint64 reopens;
    gboolean check_failed;          /* said once in the log */
    /* Writing the overrides, rules or mode into a new file failed: said
     * once, tried again at every check until it works. */
    gboolean settings_rewrite_failed;
    const PtDaemonFileResave *resave;
};

PtDaemonFile *
pt_daemon_file_new(StoreDb *store, const PtDaemonFileResave *resave)
{
    PtDaemonFile *f = g_new0(PtDaemonFile, 1);
    StoreStats st;

    f->resave = resave;
    /* A file moved aside at open held nothing of this run. */
    store_db_get_stats(store, &st);
    f->reopens = st.reopens;
    return f;
}

void
pt_daemon_file_free(PtDaemonFile *f)
{
    g_free(f);
}

void
pt_daemon_store_notices(PtDaemon *d)
{
    char *notice;

    while ((notice = store_db_take_notice(d->store))) {
        pt_warn(NULL, NULL, "store: %s", notice);
        g_free(notice);
    }
}

void
pt_daemon_restore_io(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why)
{
    PolicyDecision *dec = g_new0(PolicyDecision, 1);

    dec->target = g_strdup(t->name);
    dec->iothread = g_strdup(io->id);
    dec->change = dec->apply = TRUE;
    dec->triple = io->original;
    dec->cause = POLICY_CAUSE_POLICY;
    dec->reason = g_strdup_printf("restore the original values: %s", why);
    dec->evidence = g_strdup("");
    io->restoring = TRUE;
    /* Our own write: the policy must not hold it as someone else's. */
    policy_engine_note_write(d->engine, t->name, io->id, &io->original);
    /* The originals are the operator's own values: no bound of ours. */
    pt_daemon_apply(d, t, dec, "restore", G_MAXINT64, TRUE);
}

static PolicyTriple
pt_policy_triple(const StoreTriple *st)
{
    return (PolicyTriple){ (guint64)st->poll_max_ns, (guint64)st->poll_grow,
                           (guint64)st->poll_shrink };
}

/* Originals stored for @t's QEMU instance, or for an instance unknown on
 * either side (rows from before instances were recorded are adopted). */
static gboolean
pt_original_is_ours(const PtTarget *t, const char *stored)
{
    return !stored || !t->instance || g_str_equal(stored, t->instance);
}

/* What the store holds for an iothread. */
typedef enum {
    ORIGINAL_NONE,  /* nothing, or the store could not be read (logged) */
    ORIGINAL_OURS,  /* originals of this QEMU instance: adopted */
    ORIGINAL_OTHER, /* originals of an earlier QEMU instance */
} OriginalLookup;

/*
 * Originals saved under @t's former name (pt-target.h) by a run that
 * crashed before the upgrade to socket paths: this QEMU's only when they
 * were saved for this very process, the same pid started at the same
 * moment, which no other socket's QEMU can be.  Adopted, and saved again
 * under the identity.
 */
static gboolean
pt_original_get_former(PtDaemon *d, PtTarget *t, PtIothread *io, StoreTriple *st)
{
    g_autofree char *instance = NULL;

    if (!t->former_name || !t->instance || g_str_equal(t->former_name, t->name) ||
        !store_original_get(d->store, t->former_name, io->id, st, &instance, NULL) ||
        g_strcmp0(instance, t->instance))
        return FALSE;
    pt_info(t->name, io->id, "original values %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%"
            G_GINT64_FORMAT " taken from the rows of %s, the name this QEMU went by before",
            st->poll_max_ns, st->poll_grow, st->poll_shrink, t->former_name);
    io->original = pt_policy_triple(st);
    io->have_original = TRUE;
    io->original_saved = FALSE;
    return TRUE;
}

/* Look up @io's stored originals into @st and @instance, and adopt them
 * when they belong to @t's QEMU instance. */
static OriginalLookup
pt_original_lookup(PtDaemon *d, PtTarget *t, PtIothread *io, StoreTriple *st, char **instance)
{
    g_autoptr(GError) err = NULL;

    if (!store_original_get(d->store, t->name, io->id, st, instance, &err)) {
        if (!g_error_matches(err, STORE_ERROR, STORE_ERROR_NOT_FOUND))
            pt_warn(t->name, io->id, "store: original values: %s", err->message);
        else if (pt_original_get_former(d, t, io, st))
            return ORIGINAL_OURS;
        return ORIGINAL_NONE;
    }
    if (!pt_original_is_ours(t, *instance))
        return ORIGINAL_OTHER;
    io->original = pt_policy_triple(st);
    io->have_original = TRUE;
    io->original_saved = TRUE;
    return ORIGINAL_OURS;
}

void
pt_daemon_capture_original(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *instance = NULL;
    StoreTriple st;

    switch (pt_original_lookup(d, t, io, &st, &instance)) {
    case ORIGINAL_OURS:
        /* Rows from before instances were recorded get this one's. */
        if (!instance && t->instance &&
            !store_original_save(d->store, t->name, io->id, &st, t->instance,
                                 g_get_real_time() / 1000, &err))
            pt_warn(t->name, io->id, "store: original values: %s", err->message);
        if (d->unclean_start && d->conf->on_restart == PT_RESTART_RESTORE &&
            !policy_triple_equal(&io->original, &io->triple))
            pt_daemon_restore_io(d, t, io, "the last run did not exit cleanly");
        return;
    case ORIGINAL_OTHER:
        pt_info(t->name, io->id, "a new QEMU instance (%s, was %s): original values captured "
                "again as %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                ", replacing %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%" G_GINT64_FORMAT,
                t->instance, instance, io->triple.poll_max_ns, io->triple.poll_grow,
                io->triple.poll_shrink, st.poll_max_ns, st.poll_grow, st.poll_shrink);
        /* What the policy learnt, and the triple it last saw, were the old
         * process's: the new one's own values are no external write. */
        policy_engine_forget(d->engine, t->name);
        break;
    case ORIGINAL_NONE:
        break;
    }
    io->original = io->triple;
    io->have_original = TRUE;
    io->original_saved = FALSE;
    pt_daemon_save_original(d, t, io);
}

/* Until the originals are in the store the policy does not write: after a
 * crash the next start could only take whatever it then finds for them.
 * What is in memory is the truth (captured, adopted, or an operator's
 * write since), so it replaces what the store has for the instance. */
void
pt_daemon_save_original(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autoptr(GError) err = NULL;
    StoreTriple st = pt_store_triple(&io->original);

    if (store_original_replace(d->store, t->name, io->id, &st, t->instance,
                            g_get_real_time() / 1000, &err)) {
        if (io->original_saved_failed)
            pt_info(t->name, io->id, "store: original values saved; tuning resumes");
        io->original_saved = TRUE;
        io->original_saved_failed = FALSE;
    } else if (!io->original_saved_failed) {
        pt_warn(t->name, io->id, "store: original values: %s; not tuning until they are "
                "saved", err->message);
        io->original_saved_failed = TRUE;
    }
}

/*
 * A triple that changed without our writing it is someone else's choice:
 * an operator's qom-set or virsh iothreadset, another tool.  It is what
 * they want the iothread left with, so it replaces the original, in memory
 * and in the store: observe, a detach, a stop and the start after a crash
 * put it back, never the values it replaced.  This holds in every mode; in
 * recommend and enforce the policy also holds it for a while
 * (external-hold, policy_engine_tick()).
 *
 * A write of ours in flight, or one that ended after the sample began,
 * makes the reading say nothing (it may be from before the write): it is
 * not taken as the last one read either, so the next sample is judged
 * against what was read before.  A failed write may have set some knobs
 * and not others: the next reading is taken as it is.
 */
void
pt_daemon_note_read(PtDaemon *d, PtTarget *t, PtIothread *io, const PolicyTriple *read,
                    gint64 start_us)
{
    if (io->writes_in_flight || start_us <= io->write_done_us)
        return;
    if (io->have_read && io->have_original && !policy_triple_equal(read, &io->read) &&
        !(io->have_written && policy_triple_equal(read, &io->written)) &&
        !policy_triple_equal(read, &io->original)) {
        g_autofree char *now = policy_triple_format(read);
        g_autofree char *was = policy_triple_format(&io->original);

        pt_info(t->name, io->id, "%s was written outside polltune: it is the original now "
                "(was %s), which a stop or observe leaves in place", now, was);
        io->original = *read;
        io->original_saved = FALSE;
        pt_daemon_save_original(d, t, io);
    }
    io->read = *read;
    io->have_read = TRUE;
}

gboolean
pt_daemon_restore_changed(PtDaemon *d, PtTarget *t, PtIothread *io, const char *why)
{
    if (!io->have_original || !io->have_triple || io->restoring ||
        policy_triple_equal(&io->original, &io->triple))
        return FALSE;
    pt_daemon_restore_io(d, t, io, why);
    return TRUE;
}

gboolean
pt_daemon_adopt_original(PtDaemon *d, PtTarget *t, PtIothread *io)
{
    g_autofree char *instance = NULL;
    StoreTriple st;

    return io->have_original || pt_original_lookup(d, t, io, &st, &instance) == ORIGINAL_OURS;
}

guint
pt_daemon_restore_target(PtDaemon *d, PtTarget *t, const char *why)
{
    GHashTableIter it;
    gpointer v;
    guint n = 0;

    if (t->state != PT_TARGET_ATTACHED)
        return 0;
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        n += pt_daemon_restore_changed(d, t, v, why);
    return n;
}

/* The settings that the files above keep in the store, into a new file
 * (after the originals, which put their targets in it).  Every one of
 * these writes can be made twice: one that fails is tried again, with the
 * rest, at every check until they all are in, said once. */
static void
pt_daemon_settings_rewrite(PtDaemon *d)
{
    gboolean say = !d->file->settings_rewrite_failed;

    d->file->settings_rewrite_failed = !d->file->resave->settings(d, say);
}

/*
 * The store opened a new file (StoreStats.reopens): the database or its
 * WAL was deleted or replaced, or the file was corrupt.  The originals
 * saved before may be in the old file only, where the next start would
 * not find them: every one held is written again, and each iothread's
 * writes wait until its own is in (original_saved).  So are the settings
 * the next start reads back from the store: the operators' overrides,
 * the rules set with policy-set and the mode set with polltunectl
 * (pt_daemon_settings_rewrite()).  The run marker went too when
 * "history.db*" was removed, and a crash must still be seen.
 */
static void
pt_daemon_originals_resave(PtDaemon *d, guint64 reopens)
{
    GHashTableIter it;
    gpointer v;
    guint n = 0, failed = 0;
    StoreStats st;

    if (d->run_marker && !g_file_test(d->run_marker, G_FILE_TEST_EXISTS))
        g_file_set_contents(d->run_marker, "", 0, NULL);
    g_hash_table_iter_init(&it, d->targets.by_name);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *t = v;
        GHashTableIter jt;
        gpointer w;

        /* A gone QEMU's originals were dropped on purpose. */
        if (t->state == PT_TARGET_GONE)
            continue;
        g_hash_table_iter_init(&jt, t->iothreads);
        while (g_hash_table_iter_next(&jt, NULL, &w)) {
            PtIothread *io = w;

            if (!io->have_original)
                continue;
            io->original_saved = FALSE;
            pt_daemon_save_original(d, t, io);
            n++;
            failed += !io->original_saved;
        }
    }
    pt_daemon_settings_rewrite(d);
    /* The workload memory goes in too, at the next policy step. */
    d->file->resave->memory(d);
    /* A write above that found the file gone again leaves the count
     * behind: the next check writes them all once more. */
    store_db_get_stats(d->store, &st);
    if (st.reopens == reopens)
        d->file->reopens = reopens;
    if (n)
        pt_info(NULL, NULL, "store: a new history database file: original values of %u "
                "iothreads written into it again%s", n - failed,
                failed ? "; the others are not tuned until theirs are saved" : "");
}

gboolean
pt_daemon_originals_on_disk(PtDaemon *d)
{
    g_autoptr(GError) err = NULL;
    StoreStats st;

    if (!store_db_check(d->store, pt_daemon_tick_now_ms(d), &err)) {
        if (!d->file->check_failed)
            pt_warn(NULL, NULL, "store: %s; no writes to VMs until the history database "
                    "is open again", err->message);
        d->file->check_failed = TRUE;
        return FALSE;
    }
    d->file->check_failed = FALSE;
    pt_daemon_store_notices(d);
    store_db_get_stats(d->store, &st);
    if (st.reopens == d->file->reopens) {
        if (d->file->settings_rewrite_failed)
            pt_daemon_settings_rewrite(d);
        return TRUE;
    }
    pt_daemon_originals_resave(d, st.reopens);
    return FALSE;
}
