/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "e2e-direct.h"
#include "e2e-keep.h"
#include "pt-test-child.h"
#include "pt-test-qmp.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

static guint64
direct_poll_max(E2eVm *vm, const char *iothread)
{
    return pt_test_qmp_poll_max(((E2eDirectVm *)vm->data)->qmp, iothread);
}

static json_object *
direct_monitor(E2eVm *vm, const char *command, const char *args_json, GError **error)
{
    E2eDirectVm *dv = vm->data;

    if (!dv->qmp) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_CONNECTED,
                    "%s: the test's monitor is not connected", vm->target);
        return NULL;
    }
    return pt_test_qmp_run(dv->qmp, command, args_json, error);
}

gboolean
e2e_wait_file(const char *path, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    while (!g_file_test(path, G_FILE_TEST_EXISTS)) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(10000);
    }
    return TRUE;
}

E2eDirectVm *
e2e_direct_vm_start(const char *dir, const char *phases, const char *accel,
                    guint64 poll_max_ns, const char *const *extra)
{
    E2eDirectVm *dv = g_new0(E2eDirectVm, 1);
    const char *src = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *script = g_build_filename(src, "tests", "guest", "run-guest.sh", NULL);
    g_autofree char *poll = g_strdup_printf("%" G_GUINT64_FORMAT, poll_max_ns);
    g_autofree char *mon = NULL;
    g_autofree char *err_path = g_build_filename(dir, "qemu.err", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    int pipefd[2];
    int err_fd;

    dv->dir = g_strdup(dir);
    dv->daemon_sock = g_build_filename(dir, "pt-e2e.qmp", NULL);
    dv->test_sock = g_build_filename(dir, "test.monitor", NULL);
    mon = g_strdup_printf("unix:%s,server=on,wait=off", dv->test_sock);

    for (const char *const *a = (const char *const[]){ script, "-n", "pt-e2e", "-i", "2",
                                                       "-a", "idle", "-A", accel, "-p", phases,
                                                       "-q", dv->daemon_sock, NULL };
         *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    if (poll_max_ns) {
        g_ptr_array_add(argv, (char *)"-P");
        g_ptr_array_add(argv, poll);
    }
    g_ptr_array_add(argv, (char *)"--");
    g_ptr_array_add(argv, (char *)"-qmp");
    g_ptr_array_add(argv, mon);
    for (guint i = 0; extra && extra[i]; i++)
        g_ptr_array_add(argv, (char *)extra[i]);
    g_ptr_array_add(argv, NULL);

    g_assert_cmpint(pipe2(pipefd, O_CLOEXEC), ==, 0);
    err_fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    g_assert_cmpint(err_fd, >=, 0);
    g_assert_true(g_spawn_async_with_fds(NULL, (char **)argv->pdata, NULL,
                                         G_SPAWN_DO_NOT_REAP_CHILD, pt_test_child_setup,
                                         PT_TEST_CHILD_DATA,
                                         &dv->pid, -1, pipefd[1], err_fd, &err));
    g_assert_no_error(err);
    close(pipefd[1]);
    close(err_fd);

    e2e_reap_on_abort(dv->pid);
    dv->vm.serial = guest_serial_new_fd(pipefd[0]);
    {
        g_autofree char *serial = g_build_filename(dir, "serial.log", NULL);
        g_autofree char *trace = g_build_filename(dir, "qemu.trace", NULL);

        guest_serial_log_to(dv->vm.serial, serial);
        e2e_keep_file(serial, "serial.log");
        e2e_keep_file(err_path, "qemu.err");
        /* Where a test asks QEMU for a trace (-D DIR/qemu.trace). */
        e2e_keep_file(trace, "qemu.trace");
    }
    dv->vm.target = "pt-e2e";
    dv->vm.identity = dv->daemon_sock;
    dv->vm.busy = "iot0";
    dv->vm.idle = "iot1";
    dv->vm.readback = "QEMU's own QMP monitor";
    dv->vm.poll_max = direct_poll_max;
    dv->vm.monitor = direct_monitor;
    /* run-guest.sh names the disk vblk0. */
    dv->vm.disk_qom = "/machine/peripheral/vblk0/virtio-backend";
    dv->vm.original_ns = poll_max_ns;
    dv->vm.data = dv;
    return dv;
}

void
e2e_direct_vm_connect(E2eDirectVm *dv)
{
    g_assert_true(e2e_wait_file(dv->test_sock, 60000));
    dv->qmp = pt_test_qmp_connect(dv->test_sock, "e2e-test");
}

void
e2e_direct_vm_free(E2eDirectVm *dv)
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

char *
e2e_vm_dir_new(void)
{
    g_autoptr(GError) err = NULL;
    char *dir = g_dir_make_tmp("pt-e2e-XXXXXX", &err);

    g_assert_no_error(err);
    return dir;
}

void
e2e_vm_dir_remove(const char *dir)
{
    static const char *const files[] = { "qemu.err", "qemu.trace", "serial.log", NULL };

    for (guint i = 0; files[i]; i++) {
        g_autofree char *path = g_build_filename(dir, files[i], NULL);

        g_unlink(path);
    }
    g_rmdir(dir);
}

char *
e2e_direct_targets(const char *dir)
{
    return g_strdup_printf("libvirt = false\nqmp-globs = %s/*.qmp\n", dir);
}

PtTestDaemon *
e2e_daemon_start(const char *conf_body)
{
    g_autoptr(GError) err = NULL;
    PtTestDaemon *d = pt_test_daemon_start(conf_body, &err);

    g_assert_no_error(err);
    e2e_reap_on_abort(d->pid);
    /* Its log has every decision as a line; its database has them as rows
     * (polltunectl --db polltuned.db export --decisions). */
    e2e_keep_file(d->log_path, "polltuned.log");
    {
        g_autofree char *wal = g_strconcat(d->db_path, "-wal", NULL);

        e2e_keep_file(d->db_path, "polltuned.db");
        e2e_keep_file(wal, "polltuned.db-wal");
    }
    return d;
}
