/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * End to end over direct QMP: the test guest booted by run-guest.sh with a
 * QMP socket the daemon finds through its glob and a second monitor for the
 * test, which reads back what QEMU really has.  The scenario itself is in
 * e2e-scenario.c.
 */
#include "e2e-scenario.h"
#include "pt-test-qemu.h"
#include "qmp-commands.h"

#include <fcntl.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef struct {
    E2eVm vm;
    GPid pid;
    char *dir;
    char *daemon_sock;
    char *test_sock;
    QmpClient *qmp;
} DirectVm;

static guint64
direct_poll_max(E2eVm *vm, const char *iothread)
{
    DirectVm *dv = vm->data;
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) iots = qmp_query_iothreads_sync(dv->qmp, &err);

    g_assert_no_error(err);
    for (guint i = 0; i < iots->len; i++) {
        QmpIothread *it = iots->pdata[i];

        if (g_str_equal(it->id, iothread))
            return it->poll_max_ns;
    }
    g_error("QEMU has no iothread %s", iothread);
}

/* QEMU dies with the test process, even when an assertion aborts it. */
static void
die_with_parent(gpointer data)
{
    (void)data;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
}

static gboolean
wait_file(const char *path, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    while (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(10000);
    }
    return TRUE;
}

/* Boot the guest with @phases; the serial console is followed from the
 * pipe on QEMU's stdout. */
static DirectVm *
direct_vm_start(const char *dir, const char *phases, const char *accel)
{
    DirectVm *dv = g_new0(DirectVm, 1);
    const char *src = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *script = g_build_filename(src, "tests", "guest", "run-guest.sh", NULL);
    g_autofree char *poll = g_strdup_printf("%d", E2E_ORIGINAL_NS);
    g_autofree char *mon = NULL;
    g_autofree char *err_path = g_build_filename(dir, "qemu.err", NULL);
    g_autoptr(GError) err = NULL;
    int pipefd[2];
    int err_fd;

    dv->dir = g_strdup(dir);
    dv->daemon_sock = g_build_filename(dir, "pt-e2e.qmp", NULL);
    dv->test_sock = g_build_filename(dir, "test.monitor", NULL);
    mon = g_strdup_printf("unix:%s,server=on,wait=off", dv->test_sock);
    {
        const char *argv[] = { script, "-n", "pt-e2e", "-i", "2", "-P", poll, "-a", "idle",
                               "-A", accel, "-p", phases, "-q", dv->daemon_sock,
                               "--", "-qmp", mon, NULL };

        g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
        err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        g_assert_cmpint(err_fd, >=, 0);
        g_assert_true(g_spawn_async_with_fds(NULL, (char **)argv, NULL,
                                             G_SPAWN_DO_NOT_REAP_CHILD, die_with_parent, NULL,
                                             &dv->pid, -1, pipefd[1], err_fd, &err));
        g_assert_no_error(err);
        close(pipefd[1]);
        close(err_fd);
    }
    e2e_reap_on_abort(dv->pid);
    dv->vm.serial = guest_serial_new_fd(pipefd[0]);
    dv->vm.target = "pt-e2e";
    dv->vm.busy = "iot0";
    dv->vm.idle = "iot1";
    dv->vm.readback = "QEMU's own QMP monitor";
    dv->vm.poll_max = direct_poll_max;
    dv->vm.original_ns = E2E_ORIGINAL_NS;
    dv->vm.data = dv;
    return dv;
}

static void
direct_vm_connect(DirectVm *dv)
{
    g_autoptr(GError) err = NULL;

    g_assert_true(wait_file(dv->test_sock, 60000));
    dv->qmp = qmp_client_new(NULL, &(QmpClientOptions){ .name = "e2e-test" });
    g_assert_true(qmp_client_connect_path(dv->qmp, dv->test_sock, &err));
    g_assert_no_error(err);
    g_assert_true(qmp_client_wait_ready_sync(dv->qmp, &err));
    g_assert_no_error(err);
}

static void
direct_vm_free(DirectVm *dv)
{
    if (!dv)
        return;
    g_clear_object(&dv->qmp);
    if (dv->pid > 0) {
        kill(dv->pid, SIGKILL);
        waitpid(dv->pid, NULL, 0);
        g_spawn_close_pid(dv->pid);
        e2e_reap_forget(dv->pid);
    }
    guest_serial_free(dv->vm.serial);
    g_unlink(dv->daemon_sock);
    g_unlink(dv->test_sock);
    g_free(dv->daemon_sock);
    g_free(dv->test_sock);
    g_free(dv->dir);
    g_free(dv);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(DirectVm, direct_vm_free)

static char *
make_vm_dir(void)
{
    g_autoptr(GError) err = NULL;
    char *dir = g_dir_make_tmp("pt-e2e-XXXXXX", &err);

    g_assert_no_error(err);
    return dir;
}

static void
remove_vm_dir(const char *dir)
{
    g_autofree char *err_path = g_build_filename(dir, "qemu.err", NULL);

    g_unlink(err_path);
    g_rmdir(dir);
}

/* polltuned finding VMs by their sockets, DIR/NAME.qmp. */
static PtTestDaemon *
daemon_for(const char *dir)
{
    g_autofree char *targets = g_strdup_printf("libvirt = false\nqmp-globs = %s/*.qmp\n", dir);
    g_autofree char *conf = e2e_daemon_conf(targets);
    g_autoptr(GError) err = NULL;
    PtTestDaemon *d = pt_test_daemon_start(conf, &err);

    g_assert_no_error(err);
    e2e_reap_on_abort(d->pid);
    return d;
}

static void
test_direct(void)
{
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(DirectVm) dv = NULL;
    E2eFigures fig = { 0 };
    gint64 took, t_sock;

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    dir = make_vm_dir();
    d = daemon_for(dir);

    /* The daemon runs first; the VM's socket appears later, as when a VM
     * starts on a running host. */
    dv = direct_vm_start(dir, E2E_PHASES, "tcg");
    g_assert_true(wait_file(dv->daemon_sock, 60000));
    t_sock = g_get_monotonic_time();
    /* QEMU creates its sockets early in its start-up and greets only once
     * its main loop runs, which under TCG on a busy host can take most of
     * a second more: discovery is timed from when QEMU answers. */
    direct_vm_connect(dv);
    took = e2e_wait_discovered(d, "pt-e2e", 5000);
    g_test_message("discovered %" G_GINT64_FORMAT " ms after QEMU answered QMP, %"
                   G_GINT64_FORMAT " ms after its socket appeared", took,
                   (g_get_monotonic_time() - t_sock) / 1000);
    g_assert_cmpint(took, >=, 0);
    g_assert_cmpint(took, <=, 2000);
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 3000), >=, 0);

    e2e_scenario_run(&dv->vm, d, &fig);
    g_clear_pointer(&dv, direct_vm_free);
    remove_vm_dir(dir);
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
    g_autoptr(DirectVm) dv = NULL;
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
    dir = make_vm_dir();
    d = daemon_for(dir);
    dv = direct_vm_start(dir, "idle:2,qd1:8,idle:2", "kvm");
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
        g_clear_pointer(&dv, direct_vm_free);
        remove_vm_dir(dir);
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
    g_clear_pointer(&dv, direct_vm_free);
    remove_vm_dir(dir);
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
