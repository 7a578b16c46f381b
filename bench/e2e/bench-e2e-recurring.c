/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A recurring workload on the real test guest: does the workload memory
 * (docs/POLICY.md, "Memory") spare the explorations once a workload has
 * been seen, across a restart of the daemon?
 *
 * The test guest (docs/GUEST.md) boots under TCG and runs three cycles of
 * a QD1 and a QD16 phase of random 4 KiB reads, after an idle start:
 *   idle, qd1, qd16, idle (the restart), qd1, qd16, qd1, qd16, idle
 * under polltuned in enforce mode with adaptive:balanced and the
 * contention guards' limits at 0, so that only the policy decides.  When
 * the first cycle's QD16 phase ends, the daemon is stopped (SIGTERM) and
 * started again on the same database, and the second cycle begins while
 * the new daemon runs.
 *
 * Per phase and iothread it counts, from the daemon's decision log in the
 * store (each applied decision is one write: one qom-set per changed
 * property in one tick), the writes, the probes (decisions of cause
 * `probe`: an exploration writes one per candidate) and the writes taken
 * from memory (cause `remembered`), and from the `memory` command at each
 * phase's end the confirmations and explorations the memory counted.  The
 * goal, from the workload memory's design: in cycles 2 and 3 every phase
 * has at most one write and no probe on every iothread, the cycle right
 * after the restart included.  It prints the table, every decision with
 * its reason and evidence, the memory, and
 *   recurring: N of M later phases kept the goal
 * and fails (exit status 1) on a miss; a missing QEMU or guest build is a
 * skip.  docs/BENCHMARKS.md has the runs and the command:
 *   meson test -C build --benchmark e2e-recurring --print-errorlogs -v
 * PT_RECURRING_PHASE_S: each load phase (default 60); PT_RECURRING_GAP_S:
 * the idle phase the restart falls in (default 20; 0: none, the daemon
 * restarts as the second cycle's QD1 begins).
 */
#include "e2e-direct.h"

#include <signal.h>
#include <string.h>

#define RC_IDLE_S 10
#define RC_TAIL_IDLE_S 5
/* An exploration is up to 16 ticks, 20 s with slow ticks on a loaded
 * host (docs/BENCHMARKS.md, e2e-writes); this guest's first cycle wrote
 * its last probe 3-8 s into the phase.  60 s leaves room for that, a
 * second exploration, and the settled ticks that confirm a remembered
 * winner. */
#define RC_DEFAULT_PHASE_S 60
#define RC_DEFAULT_GAP_S 20
#define RC_CYCLES 3
/* The daemon restarts after this cycle. */
#define RC_RESTART_AFTER 1
/* Boot under TCG on a busy host took up to 15 s (docs/GUEST.md); a guest
 * second may take two of the host's when the host is loaded. */
#define RC_BOOT_WAIT_MS 120000
#define RC_SLOWDOWN 2
#define RC_N_IOTHREADS 2
#define RC_MAX_SLOTS (2 + 2 * RC_CYCLES + 1)

static const char *const rc_iothreads[RC_N_IOTHREADS] = { "iot0", "iot1" };

typedef struct {
    guint writes, probes, remembered;
    gint64 confirmed, explored;         /* the memory's counts over the phase */
    GString *decisions;                 /* " +4.1s probe 262144/0/0" ... */
} RcCount;

typedef struct {
    const char *kind;                   /* idle, qd1, qd16 */
    guint secs;
    guint cycle;                        /* 0: an idle phase */
    RcCount count[RC_N_IOTHREADS];
} RcSlot;

typedef struct {
    RcSlot slot[RC_MAX_SLOTS];
    guint n;
    guint restart_after;                /* the slot whose end restarts the daemon */
} RcSchedule;

static void
schedule_add(RcSchedule *s, const char *kind, guint secs, guint cycle)
{
    g_assert_cmpuint(s->n, <, RC_MAX_SLOTS);
    s->slot[s->n] = (RcSlot){ .kind = kind, .secs = secs, .cycle = cycle };
    for (guint it = 0; it < RC_N_IOTHREADS; it++)
        s->slot[s->n].count[it].decisions = g_string_new(NULL);
    s->n++;
}

static void
schedule_init(RcSchedule *s, guint phase_s, guint gap_s)
{
    schedule_add(s, "idle", RC_IDLE_S, 0);
    for (guint c = 1; c <= RC_CYCLES; c++) {
        schedule_add(s, "qd1", phase_s, c);
        schedule_add(s, "qd16", phase_s, c);
        if (c == RC_RESTART_AFTER) {
            s->restart_after = s->n - 1;
            if (gap_s)
                schedule_add(s, "idle", gap_s, 0);
        }
    }
    schedule_add(s, "idle", RC_TAIL_IDLE_S, 0);
}

static void
schedule_clear(RcSchedule *s)
{
    for (guint i = 0; i < s->n; i++)
        for (guint it = 0; it < RC_N_IOTHREADS; it++)
            g_string_free(s->slot[i].count[it].decisions, TRUE);
}

static char *
schedule_phases(const RcSchedule *s)
{
    GString *out = g_string_new(NULL);

    for (guint i = 0; i < s->n; i++)
        g_string_append_printf(out, "%s%s:%u", i ? "," : "", s->slot[i].kind, s->slot[i].secs);
    return g_string_free(out, FALSE);
}

/* What the memory has counted so far on @iothread: confirmations and
 * explorations summed over its entries (0 when it holds none). */
static void
memory_counts(PtTestDaemon *d, const char *iothread, gint64 *confirmed, gint64 *explored)
{
    g_autofree char *args = g_strdup_printf("{\"target\": \"pt-e2e\", \"iothread\": \"%s\"}",
                                            iothread);
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) reply = pt_test_daemon_call(d, "memory", args, &err);
    json_object *entries;

    g_assert_no_error(err);
    *confirmed = *explored = 0;
    /* NotFound: nothing learnt yet. */
    entries = pt_json_path(reply, "return/iothreads/0/entries");
    for (size_t i = 0; entries && i < json_object_array_length(entries); i++) {
        json_object *e = json_object_array_get_idx(entries, i);

        *confirmed += pt_json_path_int(e, "n_confirmed");
        *explored += pt_json_path_int(e, "n_explorations");
    }
}

/* Wait for phase @i's end and take the memory's counts over it from
 * @prev (the counts at the previous phase's end). */
static void
phase_end(RcSchedule *s, guint i, E2eDirectVm *dv, PtTestDaemon *d, gint64 start_ms,
          gint64 prev[RC_N_IOTHREADS][2])
{
    g_autofree char *prefix = g_strdup_printf("PT-PHASE idx=%u ", i);
    gint64 deadline = start_ms + RC_BOOT_WAIT_MS;

    for (guint k = 0; k <= i; k++)
        deadline += (gint64)s->slot[k].secs * 1000 * RC_SLOWDOWN;
    if (guest_serial_wait(dv->vm.serial, prefix,
                          (guint)MAX(deadline - g_get_real_time() / 1000, 1000), NULL) < 0) {
        g_autofree char *dump = guest_serial_dump(dv->vm.serial);

        g_error("the guest did not end phase %u in time; serial so far:\n%s", i, dump);
    }
    for (guint it = 0; it < RC_N_IOTHREADS; it++) {
        gint64 c, e;

        memory_counts(d, rc_iothreads[it], &c, &e);
        s->slot[i].count[it].confirmed = c - prev[it][0];
        s->slot[i].count[it].explored = e - prev[it][1];
        prev[it][0] = c;
        prev[it][1] = e;
    }
}

static void
daemon_restart(PtTestDaemon *d)
{
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_real_time() / 1000;

    e2e_reap_forget(d->pid);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_assert_true(pt_test_daemon_restart(d, &err));
    g_assert_no_error(err);
    e2e_reap_on_abort(d->pid);
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 60000), >=, 0);
    g_test_message("daemon stopped and started again on %s, attached %.1f s after the stop",
                   d->db_path, (g_get_real_time() / 1000 - t0) / 1000.0);
}

/* The slot decision time @ms falls in: the last phase begun by then
 * (phases begin when their PT-PHASE-BEGIN line arrives), -1 before. */
static int
slot_of(GArray *phases, gint64 ms)
{
    int b = -1;

    for (guint p = 0; p < phases->len; p++)
        if (ms >= g_array_index(phases, GuestPhase, p).begin_host_ms)
            b = (int)p;
    return b;
}

static gint64
iso_ms(const char *iso)
{
    g_autoptr(GDateTime) t = iso ? g_date_time_new_from_iso8601(iso, NULL) : NULL;

    if (!t)
        g_error("export: bad time %s", iso ? iso : "(none)");
    return g_date_time_to_unix(t) * 1000 + g_date_time_get_microsecond(t) / 1000;
}

/* Count the decision log of the stopped daemon's store into @s's phases;
 * every decision goes to the log with its reason and evidence. */
static void
count_decisions(RcSchedule *s, PtTestDaemon *d, GArray *phases)
{
    g_autofree char *out = e2e_ctl("--db", d->db_path, "export", "--decisions", "--format",
                                   "jsonl", "--since", "1h", NULL);
    g_auto(GStrv) lines = g_strsplit(out, "\n", -1);

    g_test_message("decisions (phase, seconds into it, iothread, cause, old -> new, reason):");
    for (guint i = 0; lines[i]; i++) {
        g_autoptr(json_object) row = NULL;
        const char *cause, *iothread;
        gint64 ms;
        int b;
        guint it;

        if (!*lines[i])
            continue;
        row = json_tokener_parse(lines[i]);
        if (!row)
            g_error("export: not JSON: %s", lines[i]);
        ms = iso_ms(pt_json_path_str(row, "time"));
        iothread = pt_json_path_str(row, "iothread");
        cause = pt_json_path_str(row, "cause") ? pt_json_path_str(row, "cause") : "-";
        b = slot_of(phases, ms);
        g_test_message("  %2d %+7.1f %s %-10s %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%"
                       G_GINT64_FORMAT " -> %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT "/%"
                       G_GINT64_FORMAT "%s %s", b,
                       b < 0 ? 0 : (ms - g_array_index(phases, GuestPhase, b).begin_host_ms) / 1000.0,
                       iothread, cause, pt_json_path_int(row, "old_poll_max_ns"),
                       pt_json_path_int(row, "old_poll_grow"),
                       pt_json_path_int(row, "old_poll_shrink"),
                       pt_json_path_int(row, "new_poll_max_ns"),
                       pt_json_path_int(row, "new_poll_grow"),
                       pt_json_path_int(row, "new_poll_shrink"),
                       pt_json_path_int(row, "applied") ? "" : " (not applied)",
                       pt_json_path_str(row, "reason"));
        for (it = 0; it < RC_N_IOTHREADS; it++)
            if (g_strcmp0(iothread, rc_iothreads[it]) == 0)
                break;
        if (b < 0 || it == RC_N_IOTHREADS || !pt_json_path_int(row, "applied"))
            continue;
        {
            RcCount *c = &s->slot[b].count[it];

            c->writes++;
            c->probes += g_str_equal(cause, "probe");
            c->remembered += g_str_equal(cause, "remembered");
            g_string_append_printf(c->decisions, " %s@%+.1f:%s", rc_iothreads[it],
                                   (ms - g_array_index(phases, GuestPhase, b).begin_host_ms) / 1000.0,
                                   cause);
        }
    }
}

static void
test_recurring(void)
{
    g_autofree char *why = NULL;
    guint phase_s = e2e_env_seconds("PT_RECURRING_PHASE_S", RC_DEFAULT_PHASE_S, 10, 3600);
    guint gap_s = e2e_env_seconds("PT_RECURRING_GAP_S", RC_DEFAULT_GAP_S, 0, 600);
    RcSchedule s = { 0 };
    g_autofree char *sched = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *targets = NULL;
    g_autofree char *conf = NULL;
    g_autofree char *memory = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autoptr(GArray) phases = NULL;
    g_autoptr(GString) table = g_string_new(NULL);
    g_autoptr(GString) miss = g_string_new(NULL);
    gint64 prev[RC_N_IOTHREADS][2] = { { 0 } };
    gint64 start_ms;
    guint later = 0, kept = 0;

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    schedule_init(&s, phase_s, gap_s);
    sched = schedule_phases(&s);
    g_test_message("schedule %s, the daemon restarting after phase %u", sched, s.restart_after);
    dir = e2e_vm_dir_new();
    targets = e2e_direct_targets(dir);
    conf = g_strdup_printf("interval = 1s\nmetrics-listen =\nmode = enforce\n"
                           "[targets]\n%s[policy]\ndefault = adaptive:balanced\n"
                           "psi-limit = 0\nvcpu-delay-limit = 0\niothread-delay-limit = 0\n",
                           targets);
    d = e2e_daemon_start(conf);
    start_ms = g_get_real_time() / 1000;
    /* At QEMU's own defaults, as libvirt starts a domain. */
    dv = e2e_direct_vm_start(dir, sched, "tcg", 0, NULL);
    e2e_direct_vm_connect(dv);
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 60000), >=, 0);
    for (guint i = 0; i < s.n; i++) {
        phase_end(&s, i, dv, d, start_ms, prev);
        if (i == s.restart_after)
            daemon_restart(d);
    }
    phases = guest_serial_phases(dv->vm.serial);
    g_assert_cmpuint(phases->len, ==, s.n);
    g_assert_true(pt_test_wait_stored(d, "pt-e2e", "iot0",
                                      g_array_index(phases, GuestPhase, s.n - 1).end_host_ms,
                                      10000));
    /* QEMU goes first, so that the daemon's stop restores nothing: a
     * restore is a write, logged with cause `policy`, and not the
     * adaptive policy's.  The restart's restore falls in the idle phase
     * between the cycles, outside the goal. */
    g_clear_pointer(&dv, e2e_direct_vm_free);
    e2e_reap_forget(d->pid);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);

    count_decisions(&s, d, phases);
    memory = e2e_ctl("--db", d->db_path, "memory", "pt-e2e", NULL);
    g_test_message("the memory at the end:\n%s", memory);

    g_string_append(table, "per phase and iothread: writes/probes/remembered (from the decision "
                           "log), the memory's confirmations/explorations\n"
                           "  phase     cycle  dur_s  guest_iops   iot0 w/p/r  c/e    "
                           "iot1 w/p/r  c/e    writes (iothread@s into the phase:cause)\n");
    for (guint i = 0; i < s.n; i++) {
        const RcSlot *sl = &s.slot[i];
        const GuestPhase *p = &g_array_index(phases, GuestPhase, i);
        g_autofree char *name = g_strdup_printf("%u:%s", i, sl->kind);
        g_autofree char *cycle = sl->cycle ? g_strdup_printf("%u", sl->cycle) : g_strdup("-");
        gboolean ok = TRUE;

        g_string_append_printf(table, "  %-9s %5s %6.1f %11.0f", name, cycle, p->dur_ms / 1000.0,
                               p->iops);
        for (guint it = 0; it < RC_N_IOTHREADS; it++) {
            const RcCount *c = &sl->count[it];

            g_string_append_printf(table, "   %2u/%u/%u  %2" G_GINT64_FORMAT "/%-2" G_GINT64_FORMAT,
                                   c->writes, c->probes, c->remembered, c->confirmed, c->explored);
            if (sl->cycle >= 2 && (c->writes > 1 || c->probes > 0)) {
                ok = FALSE;
                g_string_append_printf(miss, " %s/%s: %u writes, %u probes;", name,
                                       rc_iothreads[it], c->writes, c->probes);
            }
        }
        for (guint it = 0; it < RC_N_IOTHREADS; it++)
            g_string_append(table, sl->count[it].decisions->str);
        g_string_append_c(table, '\n');
        if (sl->cycle >= 2) {
            later++;
            kept += ok;
        }
    }
    g_test_message("%s", table->str);
    g_test_message("recurring: %u of %u phases of cycles 2-%u kept at most one write and no "
                   "probe per iothread", kept, later, RC_CYCLES);
    if (miss->len) {
        g_test_message("verdict: FAIL:%s", miss->str);
        g_test_fail();
    } else {
        g_test_message("verdict: PASS");
    }
    schedule_clear(&s);
    e2e_vm_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/e2e/recurring", test_recurring);
    return g_test_run();
}
