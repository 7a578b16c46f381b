/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "e2e-scenario.h"
#include "e2e-stall.h"

#include <math.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#define E2E_INTERVAL_MS 1000
/* Boot under TCG on a busy host took up to 15 s; phases add a minute. */
#define E2E_PHASE_WAIT_MS 180000

char *
e2e_daemon_conf(const char *targets)
{
    return g_strdup_printf("interval = 1s\nmetrics-listen =\n"
                           "[targets]\n%s"
                           "[policy]\ndefault = static:%d/0/0\nmin-dwell = 0\n"
                           "max-poll-max-ns = %d\n",
                           targets, E2E_POLICY_NS, 2 * E2E_POLL_ON_NS);
}

/* The status object of @iothread of @target, a new reference, or NULL. */
static json_object *
status_iothread(PtTestDaemon *d, const char *target, const char *iothread)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);
    json_object *io = pt_test_status_iothread(st, target, iothread);

    return io ? json_object_get(io) : NULL;
}

gint64
e2e_wait_discovered(PtTestDaemon *d, const char *target, guint ms)
{
    return pt_test_wait_target(d, target, 0, TRUE, ms);
}

gint64
e2e_wait_attached(PtTestDaemon *d, const char *target, guint ms)
{
    return pt_test_wait_target(d, target, 2, TRUE, ms);
}

static gboolean
wait_poll(E2eVm *vm, const char *iothread, guint64 want, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    do {
        if (vm->poll_max(vm, iothread) == want)
            return TRUE;
        g_usleep(100000);
    } while (g_get_monotonic_time() < deadline);
    return FALSE;
}

static void
assert_poll(E2eVm *vm, const char *iothread, guint64 want, guint ms, const char *when)
{
    if (!wait_poll(vm, iothread, want, ms))
        g_error("%s: %s reports poll-max-ns %" G_GUINT64_FORMAT " on %s/%s, expected %"
                G_GUINT64_FORMAT, when, vm->readback, vm->poll_max(vm, iothread),
                vm->target, iothread, want);
}

/* The daemon's log lines that record a write, for a failure message:
 * whether polltuned wrote near the moment things went wrong. */
static char *
daemon_writes(PtTestDaemon *d)
{
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    GString *out = g_string_new(NULL);

    if (!g_file_get_contents(d->log_path, &log, NULL, NULL))
        return g_string_free(out, FALSE);
    lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i]; i++)
        if (strstr(lines[i], " applied ") || strstr(lines[i], " failed"))
            g_string_append_printf(out, "  %s\n", lines[i]);
    return g_string_free(out, FALSE);
}

/*
 * Wait for the guest's line @prefix.  A guest that fails, ends or stalls
 * first fails the test at once, with what QEMU holds (e2e-stall.h), the
 * daemon's writes and the console, and everything is left in the daemon's
 * directory: the process aborts, so nothing removes it.
 */
static void
wait_guest(E2eVm *vm, PtTestDaemon *d, const char *prefix, const char *what)
{
    g_autofree char *why = NULL;
    g_autofree char *state = NULL;
    g_autofree char *writes = NULL;
    g_autofree char *dump = NULL;
    g_autofree char *serial_path = g_build_filename(d->dir, "serial.log", NULL);
    g_autofree char *state_path = g_build_filename(d->dir, "vm-state.txt", NULL);
    gint64 at;

    if (guest_serial_wait_for(vm->serial, prefix, E2E_PHASE_WAIT_MS, &at, &why) ==
        GUEST_WAIT_SEEN)
        return;
    /* Asked while the guest still waits for its requests. */
    state = e2e_vm_state(vm);
    writes = daemon_writes(d);
    dump = guest_serial_dump(vm->serial);
    g_file_set_contents(serial_path, dump, -1, NULL);
    g_file_set_contents(state_path, state, -1, NULL);
    g_error("%s: %s\n"
            "QEMU of %s: %s"
            "polltuned's writes:\n%s"
            "kept for inspection: %s (polltuned.conf, polltuned.log, history.db, "
            "serial.log, vm-state.txt)\n"
            "serial so far:\n%s",
            what, why, vm->target, state, *writes ? writes : "  none\n", d->dir, dump);
}

static void
wait_phase_begin(E2eVm *vm, PtTestDaemon *d, guint idx)
{
    g_autofree char *prefix = g_strdup_printf("PT-PHASE-BEGIN idx=%u ", idx);
    g_autofree char *what = g_strdup_printf("guest never began phase %u", idx);

    wait_guest(vm, d, prefix, what);
}

static void
override_via_cli(PtTestDaemon *d, E2eVm *vm, guint64 ns)
{
    g_autofree char *who = g_strdup_printf("%s/%s", vm->target, vm->busy);
    g_autofree char *val = g_strdup_printf("poll-max-ns=%" G_GUINT64_FORMAT, ns);
    g_autofree char *out = e2e_ctl("--socket", d->socket_path, "override", "set", who, val,
                                   "--reason", "end-to-end test", NULL);
    g_autoptr(json_object) io = NULL;

    g_assert_nonnull(strstr(out, vm->busy));

    assert_poll(vm, vm->busy, ns, 3000, "override set");
    io = status_iothread(d, vm->target, vm->busy);
    g_assert_cmpint(pt_json_path_int(io, "override/poll-max-ns"), ==, (gint64)ns);
    /* Only the named iothread is overridden. */
    g_assert_cmpuint(vm->poll_max(vm, vm->idle), ==, E2E_POLICY_NS);
}

/* Every tick stored: consecutive raw rows one interval apart. */
static void
check_every_tick(json_object *rows, const char *what)
{
    gsize n = json_object_array_length(rows);
    gint64 first, last, max_gap = 0;
    double expected;

    g_assert_cmpuint(n, >=, 40);
    first = pt_json_path_int(json_object_array_get_idx(rows, 0), "ts_ms");
    last = pt_json_path_int(json_object_array_get_idx(rows, n - 1), "ts_ms");
    for (gsize i = 1; i < n; i++) {
        gint64 gap = pt_json_path_int(json_object_array_get_idx(rows, i), "ts_ms") -
                     pt_json_path_int(json_object_array_get_idx(rows, i - 1), "ts_ms");

        max_gap = MAX(max_gap, gap);
    }
    expected = (double)(last - first) / E2E_INTERVAL_MS + 1;
    g_test_message("%s: %zu rows over %.1f s, largest gap %" G_GINT64_FORMAT " ms",
                   what, n, (last - first) / 1000.0, max_gap);
    /* The daemon's ticks slip only when the host is too busy to run it;
     * the guest takes one of the two cores, so allow one late tick. */
    g_assert_cmpfloat((double)n, >=, expected * 0.95);
    g_assert_cmpint(max_gap, <, 2 * E2E_INTERVAL_MS + 500);
}

static gint64
iso_to_ms(const char *iso)
{
    g_autoptr(GDateTime) t = g_date_time_new_from_iso8601(iso, NULL);

    g_assert_nonnull(t);
    return g_date_time_to_unix(t) * 1000 + g_date_time_get_microsecond(t) / 1000;
}

/* The export holds rows of the busy iothread inside every phase. */
static void
check_export(const char *path, E2eVm *vm, GArray *phases, const char *what)
{
    g_autofree char *text = NULL;
    g_auto(GStrv) lines = NULL;
    guint per_phase[E2E_N_PHASES] = { 0 };

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        g_autoptr(json_object) row = NULL;
        gint64 ts;

        if (!*lines[i])
            continue;
        row = json_tokener_parse(lines[i]);
        g_assert_nonnull(row);
        if (g_strcmp0(pt_json_path_str(row, "target"),
                      vm->identity ? vm->identity : vm->target) ||
            g_strcmp0(pt_json_path_str(row, "iothread"), vm->busy))
            continue;
        ts = iso_to_ms(pt_json_path_str(row, "time"));
        for (guint p = 0; p < phases->len; p++) {
            GuestPhase *ph = &g_array_index(phases, GuestPhase, p);

            if (ts > ph->begin_host_ms && ts <= ph->end_host_ms)
                per_phase[p]++;
        }
    }
    for (guint p = 0; p < phases->len; p++) {
        GuestPhase *ph = &g_array_index(phases, GuestPhase, p);
        /* Whole ticks in the phase, less one for the edges. */
        guint want = (ph->end_host_ms - ph->begin_host_ms) / E2E_INTERVAL_MS - 1;

        g_test_message("%s: phase %u %s: %u rows", what, p, ph->name, per_phase[p]);
        g_assert_cmpuint(per_phase[p], >=, MIN(want, 3));
        g_assert_cmpuint(per_phase[p], >=, want * 8 / 10);
    }
}

static void
check_phases(E2eVm *vm, PtTestDaemon *d, GArray *phases, E2eFigures *fig)
{
    g_autoptr(json_object) busy = e2e_history(d, vm->target, vm->busy);
    g_autoptr(json_object) idle = e2e_history(d, vm->target, vm->idle);
    guint n;

    check_every_tick(busy, vm->busy);
    check_every_tick(idle, vm->idle);

    for (guint p = 0; p < E2E_N_PHASES; p++) {
        GuestPhase *ph = &g_array_index(phases, GuestPhase, p);
        gboolean is_idle = g_str_equal(ph->name, "idle");
        gint64 from, to;
        double idle_iops;
        guint n_iops;

        /*
         * IOPS: every whole tick inside the phase but the first, against
         * the guest's own counts (PT-TICK) over exactly those ticks.  Under
         * TCG on a shared host the rate swings 2-3x from one second to the
         * next, so the phase's printed mean is matched only by the same
         * span.  CPU and blocks/op: two ticks in, since the override of
         * the polling phases lands within one tick, and not the last.
         */
        fig->guest_iops[p] = ph->iops;
        fig->daemon_iops[p] = e2e_phase_mean(busy, ph, "iops", E2E_INTERVAL_MS, 1, 0, &n_iops);
        e2e_phase_window(busy, ph, E2E_INTERVAL_MS, 1, 0, &from, &to);
        fig->window_iops[p] = guest_phase_rate(ph, from, to);
        fig->cpu_pct[p] = e2e_phase_mean(busy, ph, "cpu_pct", E2E_INTERVAL_MS, 2, 1, &n);
        fig->blocks_per_op[p] = e2e_phase_mean(busy, ph, "blocks_per_op", E2E_INTERVAL_MS,
                                               2, 1, &n);
        g_test_message("phase %u %s: guest %.0f IOPS (%" G_GINT64_FORMAT " ops, %"
                       G_GINT64_FORMAT " ms guest, %" G_GINT64_FORMAT " ms host); "
                       "over %u ticks guest %.0f, daemon %.0f; cpu %.1f%%, blocks/op %.3f",
                       p, ph->name, ph->iops, ph->ops, ph->dur_ms,
                       ph->end_host_ms - ph->begin_host_ms, n_iops, fig->window_iops[p],
                       fig->daemon_iops[p], fig->cpu_pct[p], fig->blocks_per_op[p]);
        /*
         * A phase of L ms holds at least floor(L / interval) - 1 whole
         * ticks, one fewer after the first is left out: 10 for the 12 s
         * busy phases, but only 1 for the last idle phase, which the host
         * sees as a few ms under 4 s.
         */
        g_assert_cmpuint(n_iops, >=, is_idle ? 1 : 8);
        idle_iops = e2e_phase_mean(idle, ph, "iops", E2E_INTERVAL_MS, 0, 0, &n);
        g_assert_cmpfloat(idle_iops, ==, 0);

        if (is_idle) {
            g_assert_cmpint(ph->ops, ==, 0);
            g_assert_cmpfloat(fig->daemon_iops[p], <, 5);
            continue;
        }
        g_assert_cmpfloat(ph->iops, >, 100);
        g_assert_cmpfloat(fig->window_iops[p], >, 0);
        g_assert_cmpfloat(fabs(fig->daemon_iops[p] - fig->window_iops[p]), <=,
                          0.10 * fig->window_iops[p]);
        /* Every kind of target has thread figures for its iothreads. */
        g_assert_cmpfloat(fig->cpu_pct[p], >=, 0);
        g_assert_cmpfloat(fig->blocks_per_op[p], >=, 0);
        /* One iothread is at most one core; a loaded one does some work. */
        g_assert_cmpfloat(fig->cpu_pct[p], >, 1);
        g_assert_cmpfloat(fig->cpu_pct[p], <=, 105);
        g_assert_cmpfloat(fig->blocks_per_op[p], >=, 0);
    }
    /* A busy iothread spends more than an idle one. */
    g_assert_cmpfloat(fig->cpu_pct[E2E_PHASE_QD16], >, fig->cpu_pct[E2E_PHASE_IDLE]);
    /* With polling off every completion needs a wakeup.  With a 1 ms
     * window most QD1 requests are caught while polling: under TCG one
     * arrives every 150 us (quiet host) to 1 ms (busy host). */
    g_assert_cmpfloat(fig->blocks_per_op[E2E_PHASE_POLL_OFF], >,
                      fig->blocks_per_op[E2E_PHASE_POLL_ON]);
}

void
e2e_scenario_run(E2eVm *vm, PtTestDaemon *d, E2eFigures *fig)
{
    g_autoptr(json_object) io = NULL;
    g_autoptr(GArray) phases = NULL;
    g_autofree char *who = g_strdup_printf("%s/%s", vm->target, vm->busy);
    g_autofree char *export_path = g_build_filename(d->dir, "export.jsonl", NULL);
    g_autofree char *offline_path = g_build_filename(d->dir, "offline.jsonl", NULL);
    guint64 after_restart;

    /* The policy's decision reaches the VM, as the VM itself reports. */
    assert_poll(vm, vm->busy, E2E_POLICY_NS, 5000, "policy");
    assert_poll(vm, vm->idle, E2E_POLICY_NS, 5000, "policy");
    io = status_iothread(d, vm->target, vm->busy);
    g_assert_nonnull(io);
    g_assert_cmpint(pt_json_path_int(io, "original/poll-max-ns"), ==, vm->original_ns);
    g_assert_cmpstr(pt_json_path_str(io, "last_decision/outcome"), ==, "applied");
    g_assert_cmpint(pt_json_path_int(io, "last_decision/new/poll-max-ns"), ==, E2E_POLICY_NS);

    /* Polling off for one QD1 phase, a wide window for the next: both
     * through polltunectl, then cleared so the policy takes over again. */
    wait_phase_begin(vm, d, E2E_PHASE_POLL_OFF);
    override_via_cli(d, vm, 0);
    wait_phase_begin(vm, d, E2E_PHASE_POLL_ON);
    override_via_cli(d, vm, E2E_POLL_ON_NS);
    wait_phase_begin(vm, d, E2E_PHASE_END);
    g_free(e2e_ctl("--socket", d->socket_path, "override", "clear", who, NULL));
    assert_poll(vm, vm->busy, E2E_POLICY_NS, 3000, "override clear");
    g_clear_pointer(&io, json_object_put);
    io = status_iothread(d, vm->target, vm->busy);
    g_assert_true(json_object_is_type(pt_json_path(io, "override"), json_type_null));

    wait_guest(vm, d, "PT-DONE ", "guest did not finish its schedule");
    phases = guest_serial_phases(vm->serial);
    {
        /* Kept with the daemon's files (PT_KEEP_TEST_DIRS=1) for a look
         * at a failed run. */
        g_autofree char *dump = guest_serial_dump(vm->serial);
        g_autofree char *path = g_build_filename(d->dir, "serial.log", NULL);

        g_file_set_contents(path, dump, -1, NULL);
    }
    g_assert_cmpuint(phases->len, ==, E2E_N_PHASES);
    /*
     * Every tick of the last phase must be in the store: wait for a row
     * of each iothread that ends after the phase, with nothing pending.
     * A fixed wait of two ticks was not enough on a loaded host, where
     * the last idle phase (4 s) then had one tick instead of two.
     */
    {
        const GuestPhase *last = &g_array_index(phases, GuestPhase, phases->len - 1);

        g_assert_true(pt_test_wait_stored(d, vm->target, vm->busy, last->end_host_ms, 20000));
        g_assert_true(pt_test_wait_stored(d, vm->target, vm->idle, last->end_host_ms, 20000));
    }
    check_phases(vm, d, phases, fig);

    /* The export has the run: read from the live database (polltunectl
     * takes a consistent snapshot while the daemon writes) ... */
    g_free(e2e_ctl("--db", d->db_path, "export", "--since", "1h", "--format", "jsonl",
                   "-o", export_path, NULL));
    check_export(export_path, vm, phases, "export --db, daemon running");

    /* kill -9: nothing restores; the VM keeps the policy's triple.  The
     * restarted daemon resumes, leaving it at the policy's choice or, had
     * it restored first, at the original until the policy applies again. */
    e2e_reap_forget(d->pid);
    pt_test_daemon_kill(d);
    g_assert_cmpuint(vm->poll_max(vm, vm->busy), ==, E2E_POLICY_NS);
    {
        g_autoptr(GError) err = NULL;

        g_assert_true(pt_test_daemon_restart(d, &err));
        g_assert_no_error(err);
        e2e_reap_on_abort(d->pid);
    }
    g_assert_cmpint(e2e_wait_attached(d, vm->target, 5000), >=, 0);
    after_restart = vm->poll_max(vm, vm->busy);
    g_assert_true(after_restart == E2E_POLICY_NS || after_restart == vm->original_ns);
    assert_poll(vm, vm->busy, E2E_POLICY_NS, 5000, "after restart");

    /* A clean stop puts the originals back. */
    e2e_reap_forget(d->pid);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_assert_cmpuint(vm->poll_max(vm, vm->busy), ==, vm->original_ns);
    g_assert_cmpuint(vm->poll_max(vm, vm->idle), ==, vm->original_ns);

    /* ... and with the daemon gone, after its kill and restart. */
    g_free(e2e_ctl("--db", d->db_path, "export", "--since", "1h", "--format", "jsonl",
                   "-o", offline_path, NULL));
    check_export(offline_path, vm, phases, "export --db, daemon stopped");
}
