/*
 * Faults on the QMP side: a QEMU killed while the daemon talks to it, a
 * QEMU stopped for 10 s and continued, and fake monitors that send garbage,
 * a 100 MB line, a one-byte-per-second drip or valid JSON of the wrong
 * shape.  Throughout, the healthy QEMU next to them is sampled every tick.
 */
#include "fault-common.h"
#include "fault-peer.h"

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
run_peer(FaultPeerKind kind, guint seconds)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autoptr(FaultPeer) peer = NULL;
    g_autofree char *path = NULL;
    g_autofree char *state = NULL;
    gint n_iothreads;

    if (!fc)
        return;
    path = g_strdup_printf("%s/bad.qmp", fc->dir);
    peer = fault_peer_start(path, kind);
    fault_daemon_start(fc, NULL);
    fault_assert_healthy_for(fc, seconds);
    g_assert_cmpuint(fault_peer_connections(peer), >=, 1);
    state = fault_target_state(fc, "bad", &n_iothreads);
    if (kind == FAULT_PEER_WRONG_SHAPE) {
        g_autofree char *log = NULL;

        /* Nothing it answered may be taken for an iothread, and a monitor
         * that never answers usefully is declared lost with the reason
         * (then reconnected from scratch, so its state cycles). */
        g_assert_cmpint(n_iothreads, <=, 0);
        g_assert_true(g_file_get_contents(fc->d->log_path, &log, NULL, NULL));
        g_assert_nonnull(strstr(log, "bad: lost: bad: "));
    } else {
        g_assert_cmpstr(state, !=, "attached");
    }
    /* Stop the peer first: a clean stop must not wait on it either. */
    g_clear_pointer(&peer, fault_peer_free);
    fault_case_finish(fc);
}

static void
test_peer_garbage(void)
{
    run_peer(FAULT_PEER_GARBAGE, 5);
}

static void
test_peer_huge_line(void)
{
    run_peer(FAULT_PEER_HUGE_LINE, 8);
}

static void
test_peer_drip(void)
{
    run_peer(FAULT_PEER_DRIP, 6);
}

static void
test_peer_wrong_shape(void)
{
    run_peer(FAULT_PEER_WRONG_SHAPE, 5);
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
    return g_test_run();
}
