/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * End to end over direct QMP: the test guest booted by run-guest.sh with a
 * QMP socket the daemon finds through its glob and a second monitor for the
 * test, which reads back what QEMU really has.  The scenario itself is in
 * e2e-scenario.c.
 */
#include "e2e-direct.h"
#include "e2e-keep.h"
#include "pt-test-qemu.h"

#include <string.h>
#include <signal.h>

/* polltuned finding VMs by their sockets, DIR/NAME.qmp. */
static PtTestDaemon *
daemon_for(const char *dir)
{
    g_autofree char *targets = e2e_direct_targets(dir);
    g_autofree char *conf = e2e_daemon_conf(targets);

    return e2e_daemon_start(conf);
}

static void
test_direct(void)
{
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autofree char *trace = NULL;
    E2eFigures fig = { 0 };
    gint64 took, t_sock;

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    dir = e2e_vm_dir_new();
    e2e_keep_begin("qmp-direct");
    d = daemon_for(dir);

    /* The daemon runs first; the VM's socket appears later, as when a VM
     * starts on a running host.  QEMU traces every qom-set, a few lines a
     * second at most, for a run that fails to explain. */
    trace = g_build_filename(dir, "qemu.trace", NULL);
    {
        const char *const extra[] = { "-trace", "qmp_enter_qom_set", "-D", trace,
                                      "-msg", "timestamp=on", NULL };

        dv = e2e_direct_vm_start(dir, E2E_PHASES, "tcg", E2E_ORIGINAL_NS, extra);
    }
    g_assert_true(e2e_wait_file(dv->daemon_sock, 60000));
    t_sock = g_get_monotonic_time();
    /* QEMU creates its sockets early in its start-up and greets only once
     * its main loop runs, which under TCG on a busy host can take most of
     * a second more: discovery is timed from when QEMU answers. */
    e2e_direct_vm_connect(dv);
    took = e2e_wait_discovered(d, "pt-e2e", 5000);
    g_test_message("discovered %" G_GINT64_FORMAT " ms after QEMU answered QMP, %"
                   G_GINT64_FORMAT " ms after its socket appeared", took,
                   (g_get_monotonic_time() - t_sock) / 1000);
    g_assert_cmpint(took, >=, 0);
    g_assert_cmpint(took, <=, 2000);
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 3000), >=, 0);

    e2e_scenario_run(&dv->vm, d, &fig);
    e2e_keep_end();
    g_clear_pointer(&dv, e2e_direct_vm_free);
    e2e_vm_dir_remove(dir);
}

/*
 * VM exits per I/O need KVM: under TCG there are no exits to count.  Where
 * KVM works, a short QD1 phase must show exits; elsewhere the check is
 * skipped with the reason.  The guest boots in about 6 s under TCG; a KVM
 * that cannot run it is given KVM_GUEST_START_MS to show its load
 * generator's first line, five times that, before the test says so.
 */
#define KVM_GUEST_START_MS 30000

static void
test_kvm_exits(void)
{
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autoptr(json_object) rows = NULL;
    g_autoptr(GArray) phases = NULL;
    guint n;
    double exits;

    if (!pt_test_have_kvm(&why)) {
        g_autofree char *msg = g_strdup_printf("VM exit counters need KVM: %s", why);

        g_test_skip(msg);
        return;
    }
    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    dir = e2e_vm_dir_new();
    e2e_keep_begin("qmp-kvm-exits");
    d = daemon_for(dir);
    dv = e2e_direct_vm_start(dir, "idle:2,qd1:8,idle:2", "kvm", E2E_ORIGINAL_NS, NULL);
    /* Not every KVM runs a stock guest (nested without hardware
     * virtualisation runs firmware only): find out from the console
     * before waiting for anything that needs the guest. */
    if (guest_serial_wait(dv->vm.serial, "PT-START ", KVM_GUEST_START_MS, NULL) < 0) {
        g_autofree char *emulated = NULL;
        g_autofree char *dump = guest_serial_dump(dv->vm.serial);
        g_autofree char *tail = g_strdup(strlen(dump) > 400 ? dump + strlen(dump) - 400 : dump);
        g_autofree char *msg = NULL;

        pt_test_kvm_is_emulated(&emulated);
        msg = g_strdup_printf("the guest did not reach its load generator within %d s under "
                              "this KVM%s%s; console ends with: %s", KVM_GUEST_START_MS / 1000,
                              emulated ? ": " : "", emulated ? emulated : "",
                              *tail ? tail : "(nothing)");
        g_test_skip(msg);
        e2e_keep_end();
        g_clear_pointer(&dv, e2e_direct_vm_free);
        e2e_vm_dir_remove(dir);
        return;
    }
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 10000), >=, 0);
    g_assert_cmpint(guest_serial_wait(dv->vm.serial, "PT-DONE ", 120000, NULL), >=, 0);
    g_usleep(2 * G_USEC_PER_SEC);
    phases = guest_serial_phases(dv->vm.serial);
    g_assert_cmpuint(phases->len, ==, 3);
    rows = e2e_history(d, "pt-e2e", "iot0");
    exits = e2e_phase_mean(rows, &g_array_index(phases, GuestPhase, 1), "exits_per_op", 1000,
                           1, 1, &n);
    g_test_message("KVM: %.2f exits per I/O at QD1 over %u ticks", exits, n);
    g_assert_cmpuint(n, >=, 3);
    g_assert_cmpfloat(exits, >, 0);
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

        g_test_message("exit figures from %s (%s)",
                       pt_json_path_str(st, "targets/0/exits_source"),
                       pt_json_path_str(st, "targets/0/exits_reason"));
        g_assert_cmpstr(pt_json_path_str(st, "targets/0/exits_source"), ==, "query-stats");
    }
    e2e_keep_end();
    g_clear_pointer(&dv, e2e_direct_vm_free);
    e2e_vm_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/e2e/qmp/direct", test_direct);
    g_test_add_func("/e2e/qmp/kvm-exits", test_kvm_exits);
    return g_test_run();
}
