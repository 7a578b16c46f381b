/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * End to end through libvirt: a private libvirtd (pt-test-libvirt.h) runs
 * the test guest as a type='qemu' domain with two iothreads and the disk on
 * iothread 1 (tests/guest/libvirt-guest.sh renders its XML).  polltuned is pointed at that
 * libvirtd with [targets] libvirt-uri, and everything the test checks on
 * the VM it reads back with virsh domstats --iothread.
 *
 * A daemon that does not discover the domain within a few seconds has no
 * libvirt target support to test: the test then skips and says so.
 */
#include "e2e-direct.h"
#include "e2e-keep.h"
#include "e2e-scenario.h"
#include "pt-test-libvirt.h"

#include <signal.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

/* QEMU's default, which libvirt leaves alone when the XML sets none. */
#define E2E_QEMU_DEFAULT_NS 32768

typedef struct {
    E2eVm vm;
    PtTestLibvirtd *lvd;
    char *rundir;
    char *serial_path;
    char *disk_path;
    char *name;
    gboolean started;
} LibvirtVm;

static guint64
libvirt_poll_max(E2eVm *vm, const char *iothread)
{
    LibvirtVm *lv = vm->data;
    g_autoptr(GError) err = NULL;
    g_autofree char *out = pt_test_libvirtd_virsh(lv->lvd, &err, "domstats", "--iothread",
                                                  vm->target, NULL);
    /* The daemon's "iothread1" is libvirt's iothread 1. */
    const char *num = iothread + strcspn(iothread, "0123456789");
    g_autofree char *key = g_strdup_printf("iothread.%s.poll-max-ns=", num);
    const char *at;

    g_assert_no_error(err);
    at = strstr(out, key);
    if (!at)
        g_error("virsh domstats --iothread has no %s in:\n%s", key, out);
    return g_ascii_strtoull(at + strlen(key), NULL, 10);
}

/* QMP through libvirt.  It taints the domain (custom-monitor), which is
 * why only a failing test uses it, to say what QEMU holds. */
static json_object *
libvirt_monitor(E2eVm *vm, const char *command, const char *args_json, GError **error)
{
    LibvirtVm *lv = vm->data;
    g_autofree char *cmd = g_strdup_printf("{\"execute\": \"%s\"%s%s}", command,
                                           args_json ? ", \"arguments\": " : "",
                                           args_json ? args_json : "");
    g_autofree char *out = pt_test_libvirtd_virsh(lv->lvd, error, "qemu-monitor-command",
                                                  vm->target, cmd, NULL);
    g_autoptr(json_object) reply = out ? json_tokener_parse(out) : NULL;
    json_object *ret = NULL;

    if (!out)
        return NULL;
    if (!reply || !json_object_object_get_ex(reply, "return", &ret)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s: %s", vm->target, command,
                    g_strstrip(out));
        return NULL;
    }
    return json_object_get(ret);
}

/* The domain is transient (virsh create, not define): when the private
 * libvirtd's watchdog destroys it after a failed assertion, nothing of it
 * stays in /etc/libvirt, which every libvirtd on the host shares. */
static gboolean
libvirt_vm_create(LibvirtVm *lv, GError **error)
{
    const char *src = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *script = g_build_filename(src, "tests", "guest", "libvirt-guest.sh", NULL);
    g_autofree char *xml_path = g_build_filename(lv->rundir, "domain.xml", NULL);
    const char *argv[] = { script, "xml", "-n", lv->vm.target, "-a", "idle", "-p", E2E_PHASES,
                           "-d", lv->disk_path, "-s", lv->serial_path, NULL };
    g_autofree char *xml = NULL;
    g_autofree char *err_text = NULL;
    g_autofree char *out = NULL;
    int status = 0;

    if (!g_file_set_contents(lv->disk_path, "", 0, error) || truncate(lv->disk_path, 1 << 30) < 0)
        return FALSE;
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &xml, &err_text,
                      &status, error))
        return FALSE;
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                    "libvirt-guest.sh xml failed: %s", err_text);
        return FALSE;
    }
    if (!g_file_set_contents(xml_path, xml, -1, error))
        return FALSE;
    out = pt_test_libvirtd_virsh(lv->lvd, error, "create", xml_path, NULL);
    g_unlink(xml_path);
    return out != NULL;
}

static void
libvirt_vm_free(LibvirtVm *lv)
{
    if (!lv)
        return;
    if (lv->started)
        g_free(pt_test_libvirtd_virsh(lv->lvd, NULL, "destroy", lv->vm.target, NULL));
    /* Stopped, so the file no longer grows and its follower can end. */
    guest_serial_free(lv->vm.serial);
    g_unlink(lv->serial_path);
    g_unlink(lv->disk_path);
    g_rmdir(lv->rundir);
    g_free(lv->serial_path);
    g_free(lv->disk_path);
    g_free(lv->name);
    g_free(lv->rundir);
    g_free(lv);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(LibvirtVm, libvirt_vm_free)

/* The daemon's ids of the disk's iothread (libvirt's 1) and the other. */
static gboolean
find_iothreads(PtTestDaemon *d, LibvirtVm *lv)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);
    json_object *tl = pt_json_path(st, "targets");
    static char busy[64], idle[64];

    for (size_t i = 0; i < json_object_array_length(tl); i++) {
        json_object *t = json_object_array_get_idx(tl, i);
        json_object *iots = pt_json_path(t, "iothreads");

        if (g_strcmp0(pt_json_path_str(t, "name"), lv->name))
            continue;
        for (size_t j = 0; j < json_object_array_length(iots); j++) {
            const char *id = pt_json_path_str(json_object_array_get_idx(iots, j), "id");
            const char *num = id + strcspn(id, "0123456789");

            g_strlcpy(g_str_equal(num, "1") ? busy : idle, id, sizeof(busy));
        }
    }
    lv->vm.busy = busy;
    lv->vm.idle = idle;
    return *busy && *idle;
}

static void
test_libvirt(void)
{
    g_autofree char *why = NULL;
    g_autoptr(PtTestLibvirtd) lvd = NULL;
    g_autoptr(LibvirtVm) lv = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *targets = NULL;
    g_autofree char *conf = NULL;
    E2eFigures fig = { 0 };
    gint64 took;

    if (pt_test_skip_without_libvirtd())
        return;
    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    lvd = pt_test_libvirtd_start(&err);
    g_assert_no_error(err);

    lv = g_new0(LibvirtVm, 1);
    lv->lvd = lvd;
    /* Not under /tmp: libvirt may give QEMU a private one. */
    lv->rundir = g_strdup("/var/tmp/pt-e2e-XXXXXX");
    g_assert_nonnull(g_mkdtemp_full(lv->rundir, 0755));
    /* Unique: other tests may run libvirt domains on this host. */
    lv->name = g_strdup_printf("pt-e2e-%d", (int)getpid());
    lv->serial_path = g_build_filename(lv->rundir, "serial.log", NULL);
    lv->disk_path = g_build_filename(lv->rundir, "disk.img", NULL);
    lv->vm.target = lv->name;
    lv->vm.readback = "virsh domstats --iothread";
    lv->vm.poll_max = libvirt_poll_max;
    lv->vm.monitor = libvirt_monitor;
    /* libvirt names the first virtio disk virtio-disk0. */
    lv->vm.disk_qom = "/machine/peripheral/virtio-disk0/virtio-backend";
    lv->vm.original_ns = E2E_QEMU_DEFAULT_NS;
    lv->vm.data = lv;

    targets = g_strdup_printf("libvirt = true\nlibvirt-uri = %s\nlibvirt-pid-dir = %s\n",
                              lvd->uri, lvd->pid_dir);
    conf = e2e_daemon_conf(targets);
    e2e_keep_begin("libvirt");
    d = e2e_daemon_start(conf);
    e2e_keep_file(lv->serial_path, "serial.log");
    {
        /* libvirt's log of the domain's QEMU: its command line and stderr. */
        g_autofree char *qemu_log = g_strdup_printf("/var/log/libvirt/qemu/%s.log", lv->name);

        e2e_keep_file(qemu_log, "qemu.log");
    }

    lv->started = TRUE;
    libvirt_vm_create(lv, &err);
    g_assert_no_error(err);
    lv->vm.serial = guest_serial_new_file(lv->serial_path);

    /* Discovery is asserted within 2 s of virsh create returning; waiting
     * 5 s tells a slow daemon (the figure) from one that never finds it
     * (the status, then the failure). */
    took = e2e_wait_discovered(d, lv->name, 5000);
    if (took < 0) {
        g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

        g_test_message("polltuned did not discover libvirt domain %s within 5 s; status: %s",
                       lv->name, json_object_to_json_string(st));
    }
    g_assert_cmpint(took, >=, 0);
    g_test_message("discovered %" G_GINT64_FORMAT " ms after virsh create returned", took);
    g_assert_cmpint(took, <=, 2000);
    g_assert_cmpint(e2e_wait_attached(d, lv->name, 3000), >=, 0);
    g_assert_true(find_iothreads(d, lv));

    e2e_scenario_run(&lv->vm, d, &fig);
    e2e_keep_end();
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/e2e/libvirt/domain", test_libvirt);
    return g_test_run();
}
