/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-libvirt: a private libvirtd and throwaway TCG domains for tests.
 *
 * The test's libvirtd must not disturb a libvirtd that already runs on the
 * host, and the reconnect test kills and restarts it.  So each
 * PtTestLibvirtd starts its own virtlogd and libvirtd, as root, in a private
 * mount namespace where a temporary directory is bind-mounted over
 * /run/libvirt.  Clients reach it with
 * "qemu:///system?socket=<dir>/run/libvirt-sock", and QEMU pid files appear
 * in <dir>/run/qemu.
 *
 * A watchdog process, fed by a pipe, destroys the domains, stops both
 * daemons and removes the directory when the handle is freed or when the
 * test process dies on a failed assertion, so that no QEMU outlives a test.
 *
 * Under PT_QEMU=10 the two daemons run chrooted in the Debian 13 root of
 * the QEMU 10 run (tests/qemu10/make-root.sh): libvirt 11, starting QEMU 10
 * as its own libvirt-qemu user.  Clients stay the host's (libvirt 9's
 * library and virsh) and reach it through the same socket path.
 *
 * pt_test_have_libvirtd() says why when this cannot run (not root, a binary
 * missing), so that the test can g_test_skip() with the reason.
 */
#pragma once

#include <glib.h>

typedef struct {
    char *dir;          /* private directory, mode 0755 (QEMU must reach it) */
    char *run_dir;      /* dir/run: /run/libvirt inside the namespace */
    char *pid_dir;      /* run_dir/qemu: QEMU pid files */
    char *uri;
    GPid watchdog;
    int watchdog_fd;    /* write end of the watchdog's stdin */
    guint n_domains;
} PtTestLibvirtd;

typedef struct {
    PtTestLibvirtd *lvd;
    char *name;
    char *uuid;
} PtTestDomain;

gboolean pt_test_have_libvirtd(char **why);

/* TRUE, with the test skipped and the reason given, when no private
 * libvirtd can run; under PT_QEMU=10 a missing root fails the test. */
gboolean pt_test_skip_without_libvirtd(void);

/* Start virtlogd and libvirtd; returns once libvirtd answers (PT_TEST_START_S
 * at most). */
PtTestLibvirtd *pt_test_libvirtd_start(GError **error);

/* SIGKILL libvirtd (QEMU keeps running) and wait until it is gone. */
gboolean pt_test_libvirtd_kill(PtTestLibvirtd *lvd, GError **error);

/* Start libvirtd again in the same namespace and wait until it answers. */
gboolean pt_test_libvirtd_restart(PtTestLibvirtd *lvd, GError **error);

/* Send @sig (SIGSTOP, SIGCONT) to libvirtd. */
gboolean pt_test_libvirtd_signal(PtTestLibvirtd *lvd, int sig, GError **error);

/*
 * Run "virsh -q -c URI ARGS..." (NULL-terminated); returns its stdout, or
 * NULL with @error naming the command and its stderr.
 */
char *pt_test_libvirtd_virsh(PtTestLibvirtd *lvd, GError **error, ...) G_GNUC_NULL_TERMINATED;

/* Destroy leftover domains, stop both daemons, remove the directory. */
void pt_test_libvirtd_free(PtTestLibvirtd *lvd);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestLibvirtd, pt_test_libvirtd_free)

/*
 * Create a transient TCG domain with a unique name: 128 MiB, 1 vCPU,
 * <iothreads>2</iothreads>, and a virtio-blk disk vda on a 16 MiB raw file
 * served by iothread 1.  There is no bootable disk: SeaBIOS probes vda and
 * idles, which is enough for stats.
 */
PtTestDomain *pt_test_domain_start(PtTestLibvirtd *lvd, GError **error);

/* Destroy the domain (ignoring errors: it may be gone already).  Accepts NULL. */
void pt_test_domain_free(PtTestDomain *dom);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestDomain, pt_test_domain_free)
