/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-qemu.h"
#include "pt-test-child.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

#define QEMU_BINARY "qemu-system-x86_64"

guint
pt_test_qemu_generation(void)
{
    const char *want = g_getenv("PT_QEMU");
    guint64 major = 0;

    if (want && *want)
        g_ascii_string_to_unsigned(want, 10, 1, 1000, &major, NULL);
    return (guint)major;
}

const char *
pt_test_qemu10_root(void)
{
    const char *root = g_getenv("PT_QEMU10_ROOT");

    return root && *root ? root : "/var/cache/polltune/trixie";
}

guint32
pt_test_qemu_version(void)
{
    static gsize once;
    static guint32 version;

    if (g_once_init_enter(&once)) {
        const char *argv[] = { QEMU_BINARY, "--version", NULL };
        g_autofree char *out = NULL;
        const char *p;
        guint major = 0, minor = 0, micro = 0;
        int status = 0;

        if (g_spawn_sync(NULL, (char **)argv, NULL,
                         G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL,
                         &out, NULL, &status, NULL) &&
            g_spawn_check_wait_status(status, NULL) &&
            (p = strstr(out, "QEMU emulator version ")) &&
            sscanf(p + strlen("QEMU emulator version "), "%u.%u.%u",
                   &major, &minor, &micro) >= 2 && minor < 1000 && micro < 1000)
            version = major * 1000000 + minor * 1000 + micro;
        g_once_init_leave(&once, 1);
    }
    return version;
}

/* Under PT_QEMU=N: NULL when the QEMU on PATH is N.x, else why not. */
static char *
generation_mismatch(void)
{
    guint want = pt_test_qemu_generation();
    guint32 have;

    if (!want)
        return NULL;
    have = pt_test_qemu_version();
    if (have / 1000000 == want)
        return NULL;
    if (!have)
        return g_strdup_printf("PT_QEMU=%u, but " QEMU_BINARY " --version does not run or "
                               "names no version (is tests/qemu10/bin first on PATH, and "
                               "the root made by tests/qemu10/make-root.sh?)", want);
    return g_strdup_printf("PT_QEMU=%u, but " QEMU_BINARY " on PATH is QEMU %u.%u.%u",
                           want, have / 1000000, have / 1000 % 1000, have % 1000);
}

gboolean
pt_test_have_qemu(char **why)
{
    g_autofree char *path = g_find_program_in_path(QEMU_BINARY);

    if (!path) {
        *why = g_strdup(QEMU_BINARY " is not installed");
        return FALSE;
    }
    *why = generation_mismatch();
    return *why == NULL;
}

gboolean
pt_test_skip_without_qemu(void)
{
    g_autofree char *why = NULL;

    if (pt_test_have_qemu(&why))
        return FALSE;
    if (pt_test_qemu_generation()) {
        /* Asked for a generation: its absence is a broken run, not a skip. */
        g_test_message("%s", why);
        g_test_fail();
        return TRUE;
    }
    g_test_skip(why);
    return TRUE;
}

gboolean
pt_test_skip_below_qemu(guint major, guint minor)
{
    guint32 have;
    g_autofree char *why = NULL;

    if (pt_test_skip_without_qemu())
        return TRUE;
    have = pt_test_qemu_version();
    if (have >= major * 1000000 + minor * 1000)
        return FALSE;
    why = g_strdup_printf("a fact of QEMU >= %u.%u, checked on the QEMU %u run "
                          "(meson test --setup qemu%u); " QEMU_BINARY " here is %u.%u.%u",
                          major, minor, major, major, have / 1000000, have / 1000 % 1000,
                          have % 1000);
    g_test_skip(why);
    return TRUE;
}

gboolean
pt_test_have_kvm(char **why)
{
    int fd;

    if (!pt_test_have_qemu(why))
        return FALSE;
    fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        *why = g_strdup_printf("/dev/kvm: %s", g_strerror(errno));
        return FALSE;
    }
    close(fd);
    return TRUE;
}

gboolean
pt_test_kvm_is_emulated(char **why)
{
    g_autofree char *cpuinfo = NULL;
    g_auto(GStrv) lines = NULL;

    if (!g_file_test("/dev/kvm", G_FILE_TEST_EXISTS) ||
        !g_file_get_contents("/proc/cpuinfo", &cpuinfo, NULL, NULL))
        return FALSE;
    lines = g_strsplit(cpuinfo, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        g_auto(GStrv) flags = NULL;

        if (!g_str_has_prefix(lines[i], "flags"))
            continue;
        flags = g_strsplit_set(lines[i], " \t", -1);
        if (g_strv_contains((const char *const *)flags, "vmx") ||
            g_strv_contains((const char *const *)flags, "svm"))
            return FALSE;
        *why = g_strdup("/dev/kvm exists but the CPU has neither vmx nor svm: KVM is nested "
                        "without hardware virtualisation");
        return TRUE;
    }
    return FALSE;
}

/*
 * Connects to the monitor at @path and waits for its greeting, which QEMU
 * sends from its main loop: once it arrives, QEMU has finished starting.
 * A probe that only connects and hangs up while QEMU is still initialising
 * gives no such guarantee.  FALSE while nothing listens yet.
 */
static gboolean
monitor_greets(const char *path, gint64 deadline_us)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = 1 };
    char buf[4096];
    gsize got = 0;
    int fd;

    if (strlen(path) >= sizeof(sun.sun_path))
        return FALSE;
    strcpy(sun.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return FALSE;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        close(fd);
        return FALSE;
    }
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    while (!memchr(buf, '\n', got) && got < sizeof(buf) &&
           g_get_monotonic_time() < deadline_us) {
        ssize_t n = read(fd, buf + got, sizeof(buf) - got);

        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
            break;
        if (n > 0)
            got += n;
    }
    close(fd);
    return memchr(buf, '\n', got) && g_strstr_len(buf, got, "\"QMP\"");
}

PtTestQemu *
pt_test_qemu_start(const char *const *extra_args, GError **error)
{
    g_autoptr(PtTestQemu) q = g_new0(PtTestQemu, 1);
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    gboolean have_machine = FALSE;
    const char *name = "pt-test";
    gboolean died;
    gint64 deadline;
    int status = 0;

    q->dir = g_dir_make_tmp("pt-qemu-XXXXXX", error);
    if (!q->dir)
        return NULL;
    q->qmp_path = g_build_filename(q->dir, "qmp.sock", NULL);

    for (const char *const *a = extra_args; a && *a; a++) {
        if (g_str_equal(*a, "-machine") || g_str_equal(*a, "-M"))
            have_machine = TRUE;
        /* A VM named by the test is that name to the daemon (query-name). */
        if (g_str_equal(*a, "-name") && a[1])
            name = a[1];
    }

    g_ptr_array_add(argv, g_strdup(QEMU_BINARY));
    if (!have_machine) {
        g_ptr_array_add(argv, g_strdup("-machine"));
        g_ptr_array_add(argv, g_strdup("none"));
    }
    g_ptr_array_add(argv, g_strdup("-nodefaults"));
    g_ptr_array_add(argv, g_strdup("-display"));
    g_ptr_array_add(argv, g_strdup("none"));
    g_ptr_array_add(argv, g_strdup("-name"));
    g_ptr_array_add(argv, g_strdup_printf("%s,debug-threads=on", name));
    g_ptr_array_add(argv, g_strdup("-qmp"));
    g_ptr_array_add(argv, g_strdup_printf("unix:%s,server=on,wait=off", q->qmp_path));
    for (const char *const *a = extra_args; a && *a; a++) {
        if (g_str_equal(*a, "-name") && a[1]) {
            a++;
            continue;
        }
        g_ptr_array_add(argv, g_strdup(*a));
    }
    g_ptr_array_add(argv, NULL);

    /* QEMU 7.2 has been seen to die of SIGSEGV in object_get_class() while
     * starting, before anything but this helper had touched it; that is
     * QEMU's own failure, not the test's subject, so it is started again
     * (twice at most) and the crash is reported. */
    for (guint attempt = 1;; attempt++) {
        if (!g_spawn_async(NULL, (char **)argv->pdata, NULL,
                           G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                           G_SPAWN_STDOUT_TO_DEV_NULL,
                           pt_test_child_setup, PT_TEST_CHILD_DATA, &q->pid, error))
            return NULL;
        deadline = g_get_monotonic_time() + PT_TEST_START_S * G_USEC_PER_SEC;
        died = FALSE;
        while (!monitor_greets(q->qmp_path, deadline)) {
            if (waitpid(q->pid, &status, WNOHANG) == q->pid) {
                died = TRUE;
                break;
            }
            if (g_get_monotonic_time() > deadline) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                            "%s: QEMU did not greet within %d s", q->qmp_path,
                            PT_TEST_START_S);
                return NULL;
            }
            g_usleep(10 * 1000);
        }
        if (!died)
            break;
        g_spawn_close_pid(q->pid);
        q->pid = 0;
        g_unlink(q->qmp_path);
        if (!WIFSIGNALED(status) || attempt == 3) {
            g_set_error(error, G_SPAWN_ERROR, G_SPAWN_ERROR_FAILED,
                        QEMU_BINARY " exited while starting (wait status %d)", status);
            return NULL;
        }
        g_printerr("# " QEMU_BINARY " died of signal %d while starting; starting it again\n",
                   WTERMSIG(status));
    }
    return g_steal_pointer(&q);
}

PtTestQemu *
pt_test_qemu_start_iothreads(guint n_iothreads, GError **error)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);

    for (guint i = 0; i < n_iothreads; i++) {
        g_ptr_array_add(args, g_strdup("-object"));
        g_ptr_array_add(args, g_strdup_printf("iothread,id=iot%u", i));
    }
    g_ptr_array_add(args, NULL);
    return pt_test_qemu_start((const char *const *)args->pdata, error);
}

void
pt_test_qemu_signal(PtTestQemu *q, int sig)
{
    if (q && q->pid > 0)
        kill(q->pid, sig);
}

void
pt_test_qemu_free(PtTestQemu *q)
{
    if (!q)
        return;
    if (q->pid > 0) {
        kill(q->pid, SIGKILL);
        waitpid(q->pid, NULL, 0);
        g_spawn_close_pid(q->pid);
    }
    if (q->dir) {
        g_unlink(q->qmp_path);
        g_rmdir(q->dir);
    }
    g_free(q->qmp_path);
    g_free(q->dir);
    g_free(q);
}
