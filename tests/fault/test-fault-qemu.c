/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Faults on the QMP side: a QEMU killed while the daemon talks to it, a
 * QEMU stopped for 10 s and continued, and hostile fake QEMUs that send garbage,
 * a 100 MB line, a one-byte-per-second drip or valid JSON of the wrong
 * shape, and those peers backing off together.  Throughout, the healthy QEMU
 * next to them is sampled every tick.
 */
#include "fault-common.h"
#include "qmp-fake-hostile.h"

#include <signal.h>
#include <unistd.h>

static void
test_sigkill_mid_command(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();

    if (!fc)
        return;
    fault_daemon_start(fc, NULL);
    /* Kill at different points of the tick, so some kills land while the
     * daemon's queries (or its first-attach writes) are in flight. */
    for (guint round = 0; round < 3; round++) {
        PtTestQemu *victim = fault_qemu_start(fc, "victim");

        g_assert_true(fault_wait_attached(fc, "victim", 2, 10000));
        g_usleep(300000 + round * 330000);
        pt_test_qemu_signal(victim, SIGKILL);
        pt_test_qemu_free(victim);
        fault_assert_healthy_for(fc, 3);
    }
    {
        g_autofree char *state = fault_target_state(fc, "victim", NULL);

        g_assert_cmpstr(state, !=, "attached");
    }
    fault_case_finish(fc);
}

static void
test_sigstop_10s(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(PtTestQemu) victim = NULL;

    if (!fc)
        return;
    victim = fault_qemu_start(fc, "victim");
    fault_daemon_start(fc, NULL);
    g_assert_true(fault_wait_attached(fc, "victim", 2, 10000));
    pt_test_qemu_signal(victim, SIGSTOP);
    /* The stopped monitor hangs; the other target must not notice. */
    fault_assert_healthy_for(fc, 10);
    pt_test_qemu_signal(victim, SIGCONT);
    g_assert_true(fault_wait_attached(fc, "victim", 2, 10000));
    fault_assert_healthy_for(fc, 2);
    g_assert_true(fault_wait_attached(fc, "victim", 2, 1000));
    fault_case_finish(fc);
}

static void
run_peer(QmpFakeHostile kind, guint seconds)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(QmpFakeQemu) peer = NULL;
    g_autofree char *path = NULL;
    g_autofree char *state = NULL;
    gint n_iothreads;

    if (!fc)
        return;
    path = g_strdup_printf("%s/bad.qmp", fc->dir);
    peer = qmp_fake_qemu_new_hostile(path, kind);
    fault_daemon_start(fc, NULL);
    fault_assert_healthy_for(fc, seconds);
    g_assert_cmpuint(qmp_fake_qemu_n_connections(peer), >=, 1);
    state = fault_target_state(fc, "bad", &n_iothreads);
    if (kind == QMP_FAKE_HOSTILE_WRONG_SHAPE) {
        g_autofree char *log = NULL;

        /* Nothing it answered may be taken for an iothread, and a monitor
         * that never answers usefully is declared lost with the reason
         * (then reconnected from scratch, so its state cycles). */
        g_assert_cmpint(n_iothreads, <=, 0);
        g_assert_true(g_file_get_contents(fc->d->log_path, &log, NULL, NULL));
        g_assert_nonnull(strstr(log, "bad.qmp: lost: "));
    } else {
        g_assert_cmpstr(state, !=, "attached");
    }
    /* Stop the peer first: a clean stop must not wait on it either. */
    g_clear_pointer(&peer, qmp_fake_qemu_free);
    fault_case_finish(fc);
}

static void
test_peer_garbage(void)
{
    run_peer(QMP_FAKE_HOSTILE_GARBAGE, 5);
}

static void
test_peer_huge_line(void)
{
    run_peer(QMP_FAKE_HOSTILE_HUGE_LINE, 8);
}

static void
test_peer_drip(void)
{
    run_peer(QMP_FAKE_HOSTILE_DRIP, 6);
}

static void
test_peer_wrong_shape(void)
{
    run_peer(QMP_FAKE_HOSTILE_WRONG_SHAPE, 5);
}

/* Lines the daemon logged about target @name ("... polltuned LEVEL: NAME: ..."). */
static guint
log_lines_about(const char *log_path, const char *name)
{
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;
    g_autofree char *prefix = g_strdup_printf("%s:", name);
    g_autofree char *prefix_io = g_strdup_printf("%s/", name);
    guint n = 0;

    g_assert_true(g_file_get_contents(log_path, &log, NULL, NULL));
    lines = g_strsplit(log, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *p = strstr(lines[i], "polltuned ");

        if (!p || !(p = strstr(p, ": ")))
            continue;
        p += 2;
        n += g_str_has_prefix(p, prefix) || g_str_has_prefix(p, prefix_io);
    }
    return n;
}

#define BROKEN_PEERS 3

typedef struct {
    const char *names[BROKEN_PEERS];
    gboolean seen_broken[BROKEN_PEERS];
    guint polls_broken[BROKEN_PEERS];
} ReasonWatch;

/* Once a peer has shown a reason, every later status must show one: it
 * never becomes healthy. */
static void
watch_reasons(json_object *st, gpointer data)
{
    ReasonWatch *w = data;

    for (guint i = 0; i < BROKEN_PEERS; i++) {
        json_object *t = pt_test_status_target(st, w->names[i]);
        const char *reason = t ? pt_json_path_str(t, "state_reason") : NULL;

        if (!t)
            continue;
        if (reason && *reason)
            w->seen_broken[i] = TRUE;
        else if (w->seen_broken[i])
            g_error("%s: status shows state %s with no state_reason while it is broken",
                    w->names[i], pt_json_path_str(t, "state"));
        if (w->seen_broken[i])
            w->polls_broken[i]++;
    }
}

/* Peers that never work are retried with backoff (1 s doubling): over
 * half a minute a handful of attempts and a couple of log lines each, not
 * one of each per tick, and status always says why; the healthy QEMU next
 * to them is sampled every tick throughout. */
static void
test_peer_backoff(void)
{
    static const QmpFakeHostile kinds[BROKEN_PEERS] = {
        QMP_FAKE_HOSTILE_GARBAGE, QMP_FAKE_HOSTILE_BAD_GREETING, QMP_FAKE_HOSTILE_WRONG_SHAPE,
    };
    g_autoptr(FaultCase) fc = fault_case_new();
    QmpFakeQemu *peers[BROKEN_PEERS] = { NULL };
    ReasonWatch w = { { "garbage", "greeting", "shape" } };

    if (!fc)
        return;
    for (guint i = 0; i < BROKEN_PEERS; i++) {
        g_autofree char *path = g_strdup_printf("%s/%s.qmp", fc->dir, w.names[i]);

        peers[i] = qmp_fake_qemu_new_hostile(path, kinds[i]);
    }
    fault_daemon_start(fc, NULL);
    fault_assert_healthy_watch(fc, 30, watch_reasons, &w);
    for (guint i = 0; i < BROKEN_PEERS; i++) {
        guint conns = qmp_fake_qemu_n_connections(peers[i]);
        guint lines = log_lines_about(fc->d->log_path, w.names[i]);

        g_test_message("%s: %u connections, %u log lines, %u polls with a reason",
                       w.names[i], conns, lines, w.polls_broken[i]);
        /* Attempts at about 0, 1, 3, 7, 15 and 31 s of the daemon's start
         * (the start takes a few seconds more); a retry every tick or two
         * would be 15 to 30. */
        g_assert_cmpuint(conns, >=, 2);
        g_assert_cmpuint(conns, <=, 8);
        /* "attached (qmp)" and "lost: ...", maybe a "connecting" between. */
        g_assert_cmpuint(lines, <=, 3);
        g_assert_cmpuint(w.polls_broken[i], >=, 80);
    }
    for (guint i = 0; i < BROKEN_PEERS; i++)
        qmp_fake_qemu_free(peers[i]);
    fault_case_finish(fc);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/qemu/sigkill-mid-command", test_sigkill_mid_command);
    g_test_add_func("/fault/qemu/sigstop-10s", test_sigstop_10s);
    g_test_add_func("/fault/peer/garbage", test_peer_garbage);
    g_test_add_func("/fault/peer/huge-line", test_peer_huge_line);
    g_test_add_func("/fault/peer/drip", test_peer_drip);
    g_test_add_func("/fault/peer/wrong-shape", test_peer_wrong_shape);
    g_test_add_func("/fault/peer/backoff", test_peer_backoff);
    return g_test_run();
}
