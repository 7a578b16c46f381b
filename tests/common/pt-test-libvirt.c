/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-libvirt.h"
#include "pt-test-child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <gio/gunixsocketaddress.h>
#include <glib/gstdio.h>

#include "pt-test-qemu.h"

/*
 * The watchdog: wait for EOF on stdin (the test freed the handle or died),
 * then clean up even if libvirtd is stopped or dead.  $1 = URI, $2 = dir.
 */
static const char watchdog_script[] =
    "cat >/dev/null\n"
    "for p in libvirtd virtlogd; do\n"
    "  [ -f \"$2/$p.pid\" ] && kill -CONT \"$(cat \"$2/$p.pid\")\" 2>/dev/null\n"
    "done\n"
    "for n in $(timeout 10 virsh -q -c \"$1\" list --name 2>/dev/null); do\n"
    "  timeout 10 virsh -q -c \"$1\" destroy \"$n\" >/dev/null 2>&1\n"
    "done\n"
    /* QEMU left behind by a dead libvirtd: its command line names $2. */
    "for f in \"$2\"/run/qemu/*.pid; do\n"
    "  [ -f \"$f\" ] || continue\n"
    "  q=$(cat \"$f\")\n"
    "  grep -qF \"$2\" \"/proc/$q/cmdline\" 2>/dev/null && kill -9 \"$q\"\n"
    "done\n"
    "for p in libvirtd virtlogd; do\n"
    "  [ -f \"$2/$p.pid\" ] && kill \"$(cat \"$2/$p.pid\")\" 2>/dev/null\n"
    "done\n"
    "sleep 0.5\n"
    "rm -rf \"$2\"\n";

/* The Debian 13 root libvirtd runs in under PT_QEMU=10, else NULL. */
static const char *
libvirt_root(void)
{
    return pt_test_qemu_generation() == 10 ? pt_test_qemu10_root() : NULL;
}

gboolean
pt_test_have_libvirtd(char **why)
{
    static const char *const host_bins[] = {
        "libvirtd", "virtlogd", "virsh", "unshare", "nsenter",
        "qemu-system-x86_64", NULL,
    };
    /* Under PT_QEMU=10 only the client side is the host's. */
    static const char *const root_bins[] = { "virsh", "unshare", "nsenter", "chroot", NULL };
    const char *root = libvirt_root();
    const char *const *bins = root ? root_bins : host_bins;

    if (geteuid() != 0) {
        *why = g_strdup("a private libvirtd needs root");
        return FALSE;
    }
    for (guint i = 0; bins[i]; i++) {
        g_autofree char *path = g_find_program_in_path(bins[i]);

        if (!path) {
            *why = g_strdup_printf("%s is not installed", bins[i]);
            return FALSE;
        }
    }
    if (root) {
        g_autofree char *libvirtd = g_build_filename(root, "usr", "sbin", "libvirtd", NULL);

        if (!g_file_test(libvirtd, G_FILE_TEST_IS_EXECUTABLE)) {
            /* Asked for libvirt 11 and QEMU 10: their absence fails. */
            *why = g_strdup_printf("PT_QEMU=10, but %s is missing: make the root with "
                                   "tests/qemu10/make-root.sh", libvirtd);
            return FALSE;
        }
    }
    return TRUE;
}

gboolean
pt_test_skip_without_libvirtd(void)
{
    g_autofree char *why = NULL;

    if (pt_test_have_libvirtd(&why))
        return FALSE;
    if (libvirt_root() && geteuid() == 0) {
        g_test_message("%s", why);
        g_test_fail();
        return TRUE;
    }
    g_test_skip(why);
    return TRUE;
}

static gboolean
run_command(const char *const *argv, char **out, GError **error)
{
    g_autofree char *err_text = NULL;
    g_autofree char *cmd = g_strjoinv(" ", (char **)argv);
    int status;

    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                      out, &err_text, &status, error))
        return FALSE;
    if (!g_spawn_check_wait_status(status, NULL)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: failed: %s",
                    cmd, err_text ? g_strstrip(err_text) : "");
        if (out)
            g_clear_pointer(out, g_free);
        return FALSE;
    }
    return TRUE;
}

static gboolean
socket_answers(const char *path)
{
    g_autoptr(GSocketClient) client = g_socket_client_new();
    g_autoptr(GSocketAddress) addr = g_unix_socket_address_new(path);
    g_autoptr(GSocketConnection) conn =
        g_socket_client_connect(client, G_SOCKET_CONNECTABLE(addr), NULL, NULL);

    return conn != NULL;
}

static gboolean
wait_for_libvirtd(PtTestLibvirtd *lvd, GError **error)
{
    g_autofree char *sock = g_build_filename(lvd->run_dir, "libvirt-sock", NULL);
    gint64 deadline = g_get_monotonic_time() + PT_TEST_START_S * G_USEC_PER_SEC;

    while (g_get_monotonic_time() < deadline) {
        if (socket_answers(sock)) {
            /* The socket answers before the drivers are up: ask once. */
            g_autofree char *out = pt_test_libvirtd_virsh(lvd, NULL, "version", NULL);

            if (out)
                return TRUE;
        }
        g_usleep(100 * 1000);
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                "libvirtd at %s: not answering after %d s", sock, PT_TEST_START_S);
    return FALSE;
}

static GPid
read_pid(PtTestLibvirtd *lvd, const char *daemon)
{
    g_autofree char *path = g_strdup_printf("%s/%s.pid", lvd->dir, daemon);
    g_autofree char *text = NULL;
    guint64 pid = 0;

    if (!g_file_get_contents(path, &text, NULL, NULL))
        return 0;
    g_ascii_string_to_unsigned(g_strstrip(text), 10, 1, G_MAXINT32, &pid, NULL);
    return (GPid)pid;
}

/*
 * The watchdog leaves the test's process group: meson ends a test that ran
 * out of time by signalling its whole group (SIGTERM, then SIGKILL), and a
 * watchdog killed with the test would leave the daemons, which detach
 * into sessions of their own, and their QEMUs running.  In a session of
 * its own it sees the pipe close when the test dies, however it dies.
 */
static void
watchdog_setup(gpointer data)
{
    (void)data;
    setsid();
}

static gboolean
start_watchdog(PtTestLibvirtd *lvd, GError **error)
{
    const char *argv[] = { "sh", "-c", watchdog_script, "sh", lvd->uri, lvd->dir, NULL };

    return g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                    G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD,
                                    watchdog_setup, NULL, &lvd->watchdog, &lvd->watchdog_fd,
                                    NULL, NULL, error);
}

/*
 * Run in a private mount namespace: $1 = the test's directory, $2 = the
 * Debian 13 root libvirt runs in (empty: the host's libvirt), $3 =
 * tests/qemu10/bind-dirs.sh.
 *
 * /run/libvirt exists only once some libvirtd has run on the host.
 *
 * /dev/kvm: Debian's udev makes it mode 0660, group kvm, and libvirt
 * runs QEMU as libvirt-qemu, a member of kvm.  A container can hand
 * over a node that only root may open.  Then QEMU's capability probe
 * (run as root) gets KVM while libvirt's own check for the QEMU user
 * says KVM is unusable; libvirt logs "KVM was enabled when probing
 * ..., but it is not available now", deems its cache outdated on
 * every lookup and probes QEMU again, two QEMU runs of about 2 s each
 * per lookup: 48 s to start one domain on such a host instead of a
 * few.  The private libvirtd sees a node with udev's mode and group
 * instead (the group of the system libvirtd runs in), as on the hosts
 * users run; the host's node is untouched.  Where that cannot be done
 * (no mknod in a container), the host's node stays: slower, not wrong.
 *
 * In the Debian 13 root, libvirtd, virtlogd and the QEMU they start are
 * chrooted; the folders tests use are bind-mounted at their own paths,
 * so that disk, kernel and pid file paths mean the same inside and out.
 */
static const char start_script[] =
    "d=$1 r=$2\n"
    /* The root's own PATH: the caller's may lead to the QEMU 10 shim. */
    "inroot() {\n"
    "  if [ -n \"$r\" ]; then env PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot \"$r\" \"$@\"\n"
    "  else \"$@\"; fi\n"
    "}\n"
    "if [ -n \"$r\" ]; then . \"$3\" && pt_qemu10_bind \"$r\" || exit 1; fi\n"
    "mkdir -p \"$r/run/libvirt\" && mount --bind \"$d/run\" \"$r/run/libvirt\" || exit 1\n"
    "if [ -c /dev/kvm ] && inroot getent group kvm >/dev/null; then\n"
    "  (mkdir -p \"$d/dev\" &&\n"
    "   mount -t tmpfs -o mode=0755 tmpfs \"$d/dev\" &&\n"
    "   mknod -m 0660 \"$d/dev/kvm\" c \"$((0x$(stat -c %t /dev/kvm)))\" \"$((0x$(stat -c %T /dev/kvm)))\" &&\n"
    "   chgrp \"$(inroot getent group kvm | cut -d: -f3)\" \"$d/dev/kvm\" &&\n"
    "   mount --bind \"$d/dev/kvm\" \"$r/dev/kvm\") ||\n"
    "  echo 'pt-test-libvirt: /dev/kvm left as the host has it' >&2\n"
    "fi\n"
    "inroot virtlogd -d -p \"$d/virtlogd.pid\" && inroot libvirtd -d -p \"$d/libvirtd.pid\"\n";

PtTestLibvirtd *
pt_test_libvirtd_start(GError **error)
{
    g_autoptr(PtTestLibvirtd) lvd = g_new0(PtTestLibvirtd, 1);

    lvd->watchdog_fd = -1;
    lvd->dir = g_dir_make_tmp("pt-libvirtd-XXXXXX", error);
    if (!lvd->dir)
        return NULL;
    g_chmod(lvd->dir, 0755);
    lvd->run_dir = g_build_filename(lvd->dir, "run", NULL);
    lvd->pid_dir = g_build_filename(lvd->run_dir, "qemu", NULL);
    g_mkdir(lvd->run_dir, 0755);
    lvd->uri = g_strdup_printf("qemu:///system?socket=%s/libvirt-sock", lvd->run_dir);
    if (!start_watchdog(lvd, error))
        return NULL;

    /*
     * /run/libvirt exists only once some libvirtd has run on the host.
     *
     * /dev/kvm: Debian's udev makes it mode 0660, group kvm, and libvirt
     * runs QEMU as libvirt-qemu, a member of kvm.  A container can hand
     * over a node that only root may open.  Then QEMU's capability probe
     * (run as root) gets KVM while libvirt's own check for the QEMU user
     * says KVM is unusable; libvirt logs "KVM was enabled when probing
     * ..., but it is not available now", deems its cache outdated on
     * every lookup and probes QEMU again, two QEMU runs of about 2 s each
     * per lookup: 48 s to start one domain on such a host instead of a
     * few.  The private libvirtd sees a node with udev's mode and group
     * instead, as on the hosts users run; the host's node is untouched.
     * Where that cannot be done (no mknod in a container), the host's node
     * stays: slower, not wrong.
     */
    {
        const char *root = libvirt_root();
        g_autofree char *binds = g_build_filename(g_getenv("PT_SOURCE_ROOT") ?: ".", "tests",
                                                  "qemu10", "bind-dirs.sh", NULL);
        const char *argv[] = { "unshare", "--mount", "--propagation", "private",
                               "--", "sh", "-c", start_script, "sh", lvd->dir,
                               root ? root : "", binds, NULL };

        if (!run_command(argv, NULL, error))
            return NULL;
    }
    if (!wait_for_libvirtd(lvd, error))
        return NULL;
    return g_steal_pointer(&lvd);
}

gboolean
pt_test_libvirtd_kill(PtTestLibvirtd *lvd, GError **error)
{
    GPid pid = read_pid(lvd, "libvirtd");
    gint64 deadline = g_get_monotonic_time() + PT_TEST_START_S * G_USEC_PER_SEC;

    if (!pid || kill(pid, SIGKILL) < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "libvirtd pid %d: cannot kill: %s", (int)pid,
                    pid ? g_strerror(errno) : "no pid file");
        return FALSE;
    }
    while (!pt_test_process_gone(pid)) {
        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                        "libvirtd pid %d: still there %d s after SIGKILL", (int)pid,
                        PT_TEST_START_S);
            return FALSE;
        }
        g_usleep(20 * 1000);
    }
    return TRUE;
}

gboolean
pt_test_libvirtd_restart(PtTestLibvirtd *lvd, GError **error)
{
    GPid logd = read_pid(lvd, "virtlogd");
    g_autofree char *ns = g_strdup_printf("--mount=/proc/%d/ns/mnt", (int)logd);
    g_autofree char *pidfile = g_strdup_printf("%s/libvirtd.pid", lvd->dir);
    const char *root = libvirt_root();
    const char *host_argv[] = { "nsenter", ns, "--", "libvirtd", "-d", "-p", pidfile, NULL };
    const char *root_argv[] = { "nsenter", ns, "--", "env", "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
                                "chroot", root, "libvirtd", "-d", "-p", pidfile, NULL };

    if (!logd) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "%s: no virtlogd pid file: namespace lost", lvd->dir);
        return FALSE;
    }
    return run_command(root ? root_argv : host_argv, NULL, error) &&
           wait_for_libvirtd(lvd, error);
}

gboolean
pt_test_libvirtd_signal(PtTestLibvirtd *lvd, int sig, GError **error)
{
    GPid pid = read_pid(lvd, "libvirtd");

    if (!pid || kill(pid, sig) < 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED,
                    "libvirtd pid %d: signal %d: %s", (int)pid, sig,
                    pid ? g_strerror(errno) : "no pid file");
        return FALSE;
    }
    return TRUE;
}

char *
pt_test_libvirtd_virsh(PtTestLibvirtd *lvd, GError **error, ...)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    char *out = NULL;
    const char *arg;
    va_list ap;

    g_ptr_array_add(argv, (gpointer)"virsh");
    g_ptr_array_add(argv, (gpointer)"-q");
    g_ptr_array_add(argv, (gpointer)"-c");
    g_ptr_array_add(argv, lvd->uri);
    va_start(ap, error);
    while ((arg = va_arg(ap, const char *)))
        g_ptr_array_add(argv, (gpointer)arg);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    if (!run_command((const char *const *)argv->pdata, &out, error))
        return NULL;
    return out;
}

void
pt_test_libvirtd_free(PtTestLibvirtd *lvd)
{
    int status;

    if (!lvd)
        return;
    if (lvd->watchdog_fd >= 0)
        close(lvd->watchdog_fd);
    if (lvd->watchdog > 0) {
        while (waitpid(lvd->watchdog, &status, 0) < 0 && errno == EINTR)
            ;
        g_spawn_close_pid(lvd->watchdog);
    }
    g_free(lvd->dir);
    g_free(lvd->run_dir);
    g_free(lvd->pid_dir);
    g_free(lvd->uri);
    g_free(lvd);
}

PtTestDomain *
pt_test_domain_start(PtTestLibvirtd *lvd, GError **error)
{
    g_autoptr(PtTestDomain) dom = g_new0(PtTestDomain, 1);
    g_autofree char *disk = NULL;
    g_autofree char *disk2 = NULL;
    g_autofree char *xml_path = NULL;
    g_autofree char *xml = NULL;
    g_autofree char *out = NULL;
    int fd;

    dom->name = g_strdup_printf("pt-test-%d-%u", (int)getpid(), ++lvd->n_domains);
    disk = g_strdup_printf("%s/%s.raw", lvd->dir, dom->name);
    disk2 = g_strdup_printf("%s/%s-sd.raw", lvd->dir, dom->name);
    for (guint i = 0; i < 2; i++) {
        const char *path = i ? disk2 : disk;

        fd = g_open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
        if (fd < 0 || ftruncate(fd, 16 * 1024 * 1024) < 0) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: %s",
                        path, g_strerror(errno));
            if (fd >= 0)
                close(fd);
            return NULL;
        }
        close(fd);
    }
    xml = g_strdup_printf(
        "<domain type='qemu'>\n"
        "  <name>%s</name>\n"
        "  <memory unit='MiB'>128</memory>\n"
        "  <vcpu>1</vcpu>\n"
        "  <iothreads>2</iothreads>\n"
        "  <os><type arch='x86_64' machine='pc'>hvm</type></os>\n"
        "  <devices>\n"
        "    <emulator>/usr/bin/qemu-system-x86_64</emulator>\n"
        "    <disk type='file' device='disk'>\n"
        "      <driver name='qemu' type='raw' iothread='1'/>\n"
        "      <source file='%s'/>\n"
        "      <target dev='vda' bus='virtio'/>\n"
        "    </disk>\n"
        /* A scsi disk runs in its virtio-scsi controller's iothread. */
        "    <controller type='scsi' index='0' model='virtio-scsi'>\n"
        "      <driver iothread='2'/>\n"
        "    </controller>\n"
        "    <disk type='file' device='disk'>\n"
        "      <driver name='qemu' type='raw'/>\n"
        "      <source file='%s'/>\n"
        "      <target dev='sda' bus='scsi'/>\n"
        "    </disk>\n"
        "    <memballoon model='none'/>\n"
        "  </devices>\n"
        "</domain>\n", dom->name, disk, disk2);
    xml_path = g_strdup_printf("%s/%s.xml", lvd->dir, dom->name);
    if (!g_file_set_contents(xml_path, xml, -1, error))
        return NULL;
    out = pt_test_libvirtd_virsh(lvd, error, "create", xml_path, NULL);
    if (!out)
        return NULL;
    g_clear_pointer(&out, g_free);
    dom->lvd = lvd;
    out = pt_test_libvirtd_virsh(lvd, error, "domuuid", dom->name, NULL);
    if (!out)
        return NULL;
    dom->uuid = g_strdup(g_strstrip(out));
    return g_steal_pointer(&dom);
}

void
pt_test_domain_free(PtTestDomain *dom)
{
    if (!dom)
        return;
    if (dom->lvd)
        g_free(pt_test_libvirtd_virsh(dom->lvd, NULL, "destroy", dom->name, NULL));
    g_free(dom->name);
    g_free(dom->uuid);
    g_free(dom);
}
