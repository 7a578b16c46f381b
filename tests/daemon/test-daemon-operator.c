/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An operator's write is the operator's intent: a triple polltuned did not
 * write becomes the original, which a stop, observe and the start after a
 * kill -9 leave in place, in every mode.
 *
 * The operator is the test, writing through its own monitor on a real
 * QEMU; the daemon has the other one (PtTestVm).
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-qmp.h"
#include "pt-test-qmp-sync.h"
#include "qmp-json.h"

#include <signal.h>
#include <string.h>
#include <glib/gstdio.h>

static char *vm_dir;

/* The operator's triple, as `virsh iothreadset DOM N --poll-max-ns 5000
 * --poll-grow 4 --poll-shrink 4` writes it. */
#define OP_MAX_NS 5000
#define OP_FACTOR 4

/* A daemon in @mode tuning the QEMUs of vm_dir, with @policy_extra in
 * [policy]. */
static PtTestDaemon *
daemon_up(const char *mode, const char *policy_extra)
{
    return pt_test_daemon_up(PT_TEST_CONF_BASE, "mode = %s\n[targets]\nqmp-globs = %s/*.qmp\n"
                             "[policy]\ndefault = static:60000/0/0\n%s", mode, vm_dir,
                             policy_extra ? policy_extra : "");
}

static void
operator_write(PtTestVm *vm, const char *iothread)
{
    static const struct { QmpIothreadProp prop; gint64 v; } knobs[] = {
        { QMP_IOTHREAD_POLL_GROW, OP_FACTOR },
        { QMP_IOTHREAD_POLL_SHRINK, OP_FACTOR },
        { QMP_IOTHREAD_POLL_MAX_NS, OP_MAX_NS },
    };

    for (guint k = 0; k < G_N_ELEMENTS(knobs); k++) {
        g_autoptr(GError) err = NULL;

        g_assert_true(qmp_iothread_set_sync(vm->qmp, iothread, knobs[k].prop, knobs[k].v,
                                            G_MAXINT64, &err));
        g_assert_no_error(err);
    }
}

/* QEMU itself has the operator's whole triple on @iothread. */
static void
assert_operator_triple(PtTestVm *vm, const char *iothread)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) ios = qmp_query_iothreads_sync(vm->qmp, &err);
    gboolean found = FALSE;

    g_assert_no_error(err);
    for (guint i = 0; i < ios->len; i++) {
        QmpIothread *io = ios->pdata[i];

        if (!g_str_equal(io->id, iothread))
            continue;
        found = TRUE;
        g_assert_cmpint(io->poll_max_ns, ==, OP_MAX_NS);
        g_assert_cmpint(io->poll_grow, ==, OP_FACTOR);
        g_assert_cmpint(io->poll_shrink, ==, OP_FACTOR);
    }
    g_assert_true(found);
}

/* status shows @iothread's original as the operator's triple. */
static gboolean
original_is_operators(json_object *reply, const PtDaemonWait *w)
{
    json_object *io = pt_test_status_iothread(reply, w->target, w->iothread);

    return io && pt_json_path(io, "original") &&
           pt_json_path_int(io, "original/poll-max-ns") == OP_MAX_NS &&
           pt_json_path_int(io, "original/poll-grow") == OP_FACTOR &&
           pt_json_path_int(io, "original/poll-shrink") == OP_FACTOR;
}

static void
wait_original_is_operators(PtTestDaemon *d, const char *target, const char *iothread)
{
    PtDaemonWait w = { .d = d, .target = target, .iothread = iothread,
                       .check = original_is_operators };

    if (!pt_test_daemon_wait(&w, 10000))
        g_error("%s/%s: the original never became the operator's triple", target, iothread);
}

/* In @mode: the operator writes iot0 while the daemon runs, and a clean
 * stop leaves that write in place. */
static void
stop_keeps_operator_write(const char *mode, const char *name)
{
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    gboolean enforce = g_str_equal(mode, "enforce");

    if (pt_test_skip_without_qemu())
        return;
    vm = pt_test_vm_start(vm_dir, name, NULL);
    d = daemon_up(mode, NULL);
    g_assert_cmpint(pt_test_wait_target(d, name, 2, TRUE, 10000), >=, 0);
    /* Enforcing, the policy has written both before the operator comes. */
    if (enforce) {
        pt_test_qmp_assert_poll_max(vm->qmp, name, "iot0", 60000, 10000);
        pt_test_qmp_assert_poll_max(vm->qmp, name, "iot1", 60000, 10000);
    } else {
        g_assert_true(pt_test_wait_ticks(d, 3, 10000));
    }
    operator_write(vm, "iot0");
    wait_original_is_operators(d, name, "iot0");
    g_assert_cmpuint(pt_test_daemon_log_count(d, "was written outside polltune"), ==, 1);

    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    assert_operator_triple(vm, "iot0");
    /* What only the policy changed still goes back. */
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot1"), ==, 32768);
}

static void
test_stop_observe(void)
{
    stop_keeps_operator_write("observe", "vm-o");
}

static void
test_stop_recommend(void)
{
    stop_keeps_operator_write("recommend", "vm-r");
}

static void
test_stop_enforce(void)
{
    stop_keeps_operator_write("enforce", "vm-e");
}

/* Where @needle first is in the daemon's log; -1: nowhere. */
static gssize
log_offset(PtTestDaemon *d, const char *needle)
{
    g_autofree char *text = NULL;
    const char *at;

    g_assert_true(g_file_get_contents(d->log_path, &text, NULL, NULL));
    at = strstr(text, needle);
    return at ? at - text : -1;
}

/* The operator writes iot0 after the daemon's last tick and the SIGTERM
 * follows at once, before another tick could see the write: the stop reads
 * the triples again before it restores, takes the operator's as the
 * original and leaves it in QEMU.  A stop that restored from what the last
 * tick read put the policy's originals back over it. */
static void
test_stop_right_after_operator_write(void)
{
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    gssize stopping, seen;

    if (pt_test_skip_without_qemu())
        return;
    vm = pt_test_vm_start(vm_dir, "vm-s", NULL);
    d = daemon_up("enforce", NULL);
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-s", "iot0", 60000, 10000);
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-s", "iot1", 60000, 10000);
    /* No tick comes again before the stop: the interval becomes an hour,
     * and the reload's reply comes after any tick already in flight. */
    pt_test_daemon_reconf(d, PT_TEST_CONF_BASE, "interval = 1h\nmode = enforce\n[targets]\n"
                          "qmp-globs = %s/*.qmp\n[policy]\ndefault = static:60000/0/0\n",
                          vm_dir);
    json_object_put(pt_test_daemon_ok(d, "reload", NULL));

    operator_write(vm, "iot0");
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    assert_operator_triple(vm, "iot0");
    /* What only the policy changed still goes back. */
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot1"), ==, 32768);
    /* The stop's own reading found the write, not a tick before it. */
    stopping = log_offset(d, "stopping: restoring original values");
    seen = log_offset(d, "was written outside polltune");
    g_assert_cmpint(stopping, >=, 0);
    g_assert_cmpint(seen, >, stopping);
}

/* The operator's write is stored as the original: after the policy took
 * over again (its hold over) and a kill -9, the next start puts the
 * operator's triple back, not the one from before it. */
static void
test_kill_restores_operator_write(void)
{
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *restored = g_strdup_printf("restore applied -> %u/%u/%u", OP_MAX_NS,
                                                OP_FACTOR, OP_FACTOR);

    if (pt_test_skip_without_qemu())
        return;
    vm = pt_test_vm_start(vm_dir, "vm-k", NULL);
    d = daemon_up("enforce", "external-hold = 1s\n");
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-k", "iot0", 60000, 10000);
    operator_write(vm, "iot0");
    wait_original_is_operators(d, "vm-k", "iot0");
    /* The hold ends and the policy writes its own again. */
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-k", "iot0", 60000, 20000);

    pt_test_daemon_kill(d);
    pt_test_daemon_up_again(d);
    g_assert_true(pt_test_wait_log(d, restored, 1, 20000));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    assert_operator_triple(vm, "iot0");
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot1"), ==, 32768);
}

int
main(int argc, char **argv)
{
    int rc;

    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    vm_dir = g_dir_make_tmp("pt-op-XXXXXX", NULL);
    g_test_add_func("/daemon/operator/stop-observe", test_stop_observe);
    g_test_add_func("/daemon/operator/stop-recommend", test_stop_recommend);
    g_test_add_func("/daemon/operator/stop-enforce", test_stop_enforce);
    g_test_add_func("/daemon/operator/stop-right-after-write",
                    test_stop_right_after_operator_write);
    g_test_add_func("/daemon/operator/kill-restores-operator-write",
                    test_kill_restores_operator_write);
    rc = g_test_run();
    g_rmdir(vm_dir);
    return rc;
}
