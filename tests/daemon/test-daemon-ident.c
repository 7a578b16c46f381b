/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One QEMU is one target, against real QEMUs: a second path to a QEMU
 * already attached is refused (a symbolic link in the glob's folder, a
 * path spelt another way, another monitor of the same process); every
 * reconnect is held to what the path led to and to the reach of the user
 * who attached it; a QEMU killed, whose socket file stays, is gone rather
 * than lost for ever.
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "pt-test-qmp-sync.h"
#include "qmp-json.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define NOBODY 65534

/* The number of targets the daemon lists. */
static guint
targets_listed(PtTestDaemon *d)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

    return json_object_array_length(pt_json_path(st, "targets"));
}

static void
wait_state(PtTestDaemon *d, const char *target, const char *state)
{
    PtDaemonWait w = { .d = d, .target = target, .iothread = state,
                       .check = pt_test_target_in_state };

    if (!pt_test_daemon_wait(&w, 20000))
        g_error("%s never became %s", target, state);
}

/* The daemon's log holds @line @n times; says what it holds instead. */
static void
assert_log(PtTestDaemon *d, const char *line, guint n)
{
    g_autofree char *log = NULL;

    if (pt_test_daemon_log_count(d, line) == n)
        return;
    g_file_get_contents(d->log_path, &log, NULL, NULL);
    g_error("the log does not hold \"%s\" %u times:\n%s", line, n, log);
}

/* The error description of a reply, asserting it is an error. */
static const char *
error_desc(json_object *reply)
{
    g_assert_null(pt_json_path(reply, "return"));
    return pt_json_path_str(reply, "error/desc");
}

/*
 * A symbolic link to a QEMU's socket in the glob's folder, a path spelt
 * another way, and another monitor of the same QEMU: each was a target of
 * its own.  Two targets took turns on the QEMU's single monitor as it
 * was stopped and continued; the one that came second took the policy's
 * 40000 for the original, and after SIGTERM the QEMU kept 40000/0/0 with
 * no restore line.  Now the second path is refused with a line naming
 * both, the originals are kept once, and the stop puts them back.
 */
static void
test_two_paths(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *link = NULL;
    g_autofree char *sub = NULL;
    g_autofree char *spelt = NULL;
    g_autofree char *args = NULL;
    g_autofree char *line = NULL;
    g_autoptr(json_object) r = NULL;

    if (pt_test_skip_without_qemu())
        return;
    dir = g_dir_make_tmp("pt-ident-XXXXXX", &err);
    g_assert_no_error(err);
    vm = pt_test_vm_start(dir, "vm-a", NULL);
    link = g_build_filename(dir, "vm-b.qmp", NULL);
    g_assert_cmpint(symlink("vm-a.qmp", link), ==, 0);
    d = pt_test_daemon_up(PT_TEST_CONF_BASE, "qmp-timeout = 300ms\n"
                          "[targets]\nqmp-globs = %s/*.qmp\n"
                          "[policy]\ndefault = static:40000/0/0\n", dir);
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-a", "iot0", 40000, 5000);
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-a", "iot1", 40000, 5000);

    /* The link: said once, however many ticks find it. */
    line = g_strdup_printf("%s: not attached: %s leads to %s, the socket of %s already "
                           "attached", link, link, vm->daemon_sock, vm->daemon_sock);
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 10, 10000));
    assert_log(d, line, 1);
    g_assert_cmpuint(targets_listed(d), ==, 1);

    /* Another spelling, by request. */
    sub = g_build_filename(dir, "q", NULL);
    g_assert_cmpint(g_mkdir(sub, 0700), ==, 0);
    spelt = g_strdup_printf("%s/q/../vm-a.qmp", dir);
    args = g_strdup_printf("{\"path\": \"%s\"}", spelt);
    r = pt_test_daemon_call(d, "attach", args, &err);
    g_assert_no_error(err);
    g_assert_nonnull(strstr(error_desc(r), spelt));
    g_assert_nonnull(strstr(error_desc(r), vm->daemon_sock));
    g_clear_pointer(&r, json_object_put);

    /* Another monitor of the same process: the test's own, which it holds,
     * so the connect waits in QEMU's backlog; the pid refuses it. */
    g_free(args);
    args = g_strdup_printf("{\"path\": \"%s\"}", vm->qemu->qmp_path);
    r = pt_test_daemon_call(d, "attach", args, &err);
    g_assert_no_error(err);
    g_free(line);
    line = g_strdup_printf("%s leads to the QEMU (pid %d) already attached as %s",
                           vm->qemu->qmp_path, (int)vm->qemu->pid, vm->daemon_sock);
    g_assert_nonnull(strstr(error_desc(r), line));
    g_clear_pointer(&r, json_object_put);

    /* Stopped long enough for the monitor to be given up, twice: the
     * second target used to be handed the monitor at the first. */
    for (int i = 0; i < 2; i++) {
        pt_test_qemu_signal(vm->qemu, SIGSTOP);
        wait_state(d, vm->daemon_sock, "lost");
        pt_test_qemu_signal(vm->qemu, SIGCONT);
        g_assert_cmpint(pt_test_wait_target(d, vm->daemon_sock, 2, TRUE, 20000), >=, 0);
    }
    g_assert_cmpuint(targets_listed(d), ==, 1);
    g_assert_cmpint(pt_test_daemon_stored_originals(d, vm->daemon_sock), ==, 2);
    g_assert_cmpint(pt_test_daemon_stored_originals(d, link), <=, 0);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    assert_log(d, "restore applied -> 32768/0/0", 2);
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot0"), ==, 32768);
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot1"), ==, 32768);
    g_unlink(link);
    g_rmdir(sub);
    g_clear_pointer(&vm, pt_test_vm_free);
    g_rmdir(dir);
}

/* @path for nobody: a folder or socket of hers. */
static void
give_nobody(const char *path, mode_t mode)
{
    g_assert_cmpint(chown(path, NOBODY, NOBODY), ==, 0);
    g_assert_cmpint(chmod(path, mode), ==, 0);
}

/*
 * The access check of attach, made once, at the attach: a member of the
 * admin group attached her QEMU's socket, then, its QEMU killed, put a
 * symbolic link to a root-only QEMU's socket in its place.  The daemon
 * reconnected as root through the link, and her override was written into
 * the root-only VM.  Then the same with the path unchanged but no longer
 * hers to reach: her folder taken from her, a root-only QEMU started on
 * the same path.  Each reconnect is now held to her reach and to where the
 * path led: the target is dropped with a line, and nothing is written.
 */
static void
test_reconnect_reach(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestVm) mine = NULL;
    g_autoptr(PtTestVm) root_vm = NULL;
    g_autoptr(PtTestVm) later = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *base = NULL;
    g_autofree char *pub = NULL;
    g_autofree char *priv = NULL;
    g_autofree char *args = NULL;
    g_autofree char *ovr = NULL;
    g_autofree char *got = NULL;
    g_autofree char *line = NULL;

    if (pt_test_skip_without_qemu() || pt_test_skip_without_nobody())
        return;
    base = g_dir_make_tmp("pt-reach-XXXXXX", &err);
    g_assert_no_error(err);
    g_assert_cmpint(chmod(base, 0755), ==, 0);
    pub = g_build_filename(base, "pub", NULL);
    priv = g_build_filename(base, "priv", NULL);
    g_assert_cmpint(g_mkdir(pub, 0755), ==, 0);
    g_assert_cmpint(g_mkdir(priv, 0700), ==, 0);
    give_nobody(pub, 0755);
    root_vm = pt_test_vm_start(priv, "p", NULL);
    mine = pt_test_vm_start(pub, "n", NULL);
    give_nobody(mine->daemon_sock, 0700);

    d = pt_test_daemon_up(PT_TEST_CONF_BASE, "control-group = nogroup\nadmin-group = nogroup\n"
                          "qmp-timeout = 300ms\n[policy]\ndefault = static:50000/0/0\n");
    /* The private directory must let nobody reach the control socket. */
    g_assert_cmpint(chmod(d->dir, 0755), ==, 0);

    /* Hers to reach, and attached; root's is not. */
    args = g_strdup_printf("{\"path\": \"%s\"}", root_vm->daemon_sock);
    got = pt_test_daemon_class_as(d, NOBODY, NOBODY, "attach", args);
    g_assert_cmpstr(got, ==, "PermissionDenied");
    g_free(args);
    g_free(got);
    args = g_strdup_printf("{\"path\": \"%s\"}", mine->daemon_sock);
    got = pt_test_daemon_class_as(d, NOBODY, NOBODY, "attach", args);
    g_assert_cmpstr(got, ==, "ok");
    pt_test_qmp_assert_poll_max(mine->qmp, "n", "iot0", 50000, 5000);

    /* Killed; a link to root's socket in its place. */
    pt_test_qemu_signal(mine->qemu, SIGSTOP);
    wait_state(d, mine->daemon_sock, "lost");
    g_assert_cmpint(g_unlink(mine->daemon_sock), ==, 0);
    g_assert_cmpint(symlink(root_vm->daemon_sock, mine->daemon_sock), ==, 0);
    pt_test_qemu_signal(mine->qemu, SIGKILL);
    line = g_strdup_printf("%s: dropped: %s: uid %d may not reach this path", mine->daemon_sock,
                           mine->daemon_sock, NOBODY);
    if (!pt_test_wait_log(d, line, 1, 20000))
        assert_log(d, line, 1);
    ovr = g_strdup_printf("{\"target\": \"%s\", \"poll-max-ns\": 123}", mine->daemon_sock);
    g_free(got);
    got = pt_test_daemon_class_as(d, NOBODY, NOBODY, "override-set", ovr);
    g_assert_cmpstr(got, !=, "ok");
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 5, 5000));
    g_assert_cmpuint(pt_test_qmp_poll_max(root_vm->qmp, "iot0"), ==, 32768);
    g_assert_cmpuint(targets_listed(d), ==, 0);

    /* The same path, no longer hers: a root-only QEMU started on it. */
    g_unlink(mine->daemon_sock);
    g_clear_pointer(&mine, pt_test_vm_free);
    mine = pt_test_vm_start(pub, "n", NULL);
    give_nobody(mine->daemon_sock, 0700);
    g_free(got);
    got = pt_test_daemon_class_as(d, NOBODY, NOBODY, "attach", args);
    g_assert_cmpstr(got, ==, "ok");
    pt_test_qmp_assert_poll_max(mine->qmp, "n", "iot0", 50000, 5000);
    pt_test_qemu_signal(mine->qemu, SIGSTOP);
    wait_state(d, mine->daemon_sock, "lost");
    g_assert_cmpint(chown(pub, 0, 0), ==, 0);
    g_assert_cmpint(chmod(pub, 0700), ==, 0);
    later = pt_test_vm_start(pub, "n", NULL);
    pt_test_qemu_signal(mine->qemu, SIGKILL);
    if (!pt_test_wait_log(d, line, 2, 20000))
        assert_log(d, line, 2);
    g_free(got);
    got = pt_test_daemon_class_as(d, NOBODY, NOBODY, "override-set", ovr);
    g_assert_cmpstr(got, !=, "ok");
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 5, 5000));
    g_assert_cmpuint(pt_test_qmp_poll_max(later->qmp, "iot0"), ==, 32768);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);

    g_clear_pointer(&later, pt_test_vm_free);
    g_clear_pointer(&mine, pt_test_vm_free);
    g_clear_pointer(&root_vm, pt_test_vm_free);
    g_rmdir(pub);
    g_rmdir(priv);
    g_rmdir(base);
}

/*
 * kill -9 leaves a QEMU's socket file behind: its target stayed lost,
 * retried for ever, and the lost-target alert fired for a QEMU that no
 * longer ran.  It is gone now, found by a glob or not, and the file left
 * behind is not attached again; a daemon started after the kill, which
 * never reached that QEMU, lets the file go too once nothing listens on it
 * twice.  A QEMU started again on the path is attached.
 */
static void
test_killed_gone(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestVm) again = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *line = NULL;
    g_autofree char *attached = NULL;

    if (pt_test_skip_without_qemu())
        return;
    dir = g_dir_make_tmp("pt-killed-XXXXXX", &err);
    g_assert_no_error(err);
    vm = pt_test_vm_start(dir, "vm-k", NULL);
    d = pt_test_daemon_up(PT_TEST_CONF_BASE, "[targets]\nqmp-globs = %s/*.qmp\n"
                          "[policy]\ndefault = static:60000/0/0\n", dir);
    pt_test_qmp_assert_poll_max(vm->qmp, "vm-k", "iot0", 60000, 5000);

    pt_test_qemu_signal(vm->qemu, SIGKILL);
    g_assert_true(g_file_test(vm->daemon_sock, G_FILE_TEST_EXISTS));
    line = g_strdup_printf("%s: gone: its QEMU (pid %d) has exited, leaving its socket behind; "
                           "2 stored original values dropped", vm->daemon_sock,
                           (int)vm->qemu->pid);
    g_assert_true(pt_test_wait_log(d, line, 1, 20000));
    g_assert_cmpint(pt_test_wait_target(d, vm->daemon_sock, 0, FALSE, 5000), >=, 0);
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 15, 10000));
    attached = g_strdup_printf("%s: attached (qmp)", vm->daemon_sock);
    assert_log(d, attached, 1);
    g_assert_cmpint(pt_test_daemon_targets_in_state(d, "lost"), ==, 0);
    g_assert_cmpuint(targets_listed(d), ==, 0);

    /* A daemon that never reached it. */
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    pt_test_daemon_up_again(d);
    g_assert_true(pt_test_wait_log(d, "nothing listens on its socket (2 attempts) and no QEMU "
                                   "was reached on it", 1, 20000));
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 15, 10000));
    g_assert_cmpuint(targets_listed(d), ==, 0);
    g_assert_cmpint(pt_test_daemon_targets_in_state(d, "lost"), ==, 0);
    assert_log(d, "nothing listens on its socket", 1);

    /* A QEMU started again on the path. */
    again = pt_test_vm_start(dir, "vm-k", NULL);
    pt_test_qmp_assert_poll_max(again->qmp, "vm-k", "iot0", 60000, 5000);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_assert_cmpuint(pt_test_qmp_poll_max(again->qmp, "iot0"), ==, 32768);
    g_clear_pointer(&again, pt_test_vm_free);
    g_clear_pointer(&vm, pt_test_vm_free);
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/ident/two-paths", test_two_paths);
    g_test_add_func("/daemon/ident/reconnect-reach", test_reconnect_reach);
    g_test_add_func("/daemon/ident/killed-gone", test_killed_gone);
    return g_test_run();
}
