/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-qemu: start and stop a real QEMU for tests.
 *
 * Tests that need a live QMP peer start qemu-system-x86_64 through this
 * module.  It puts the monitor socket in a private temporary directory,
 * waits until QEMU listens, and kills QEMU and removes the directory when the
 * handle is freed.  When QEMU (or KVM, for the KVM variant) is missing, the
 * availability checks say why, so that the test can g_test_skip() with the
 * reason instead of passing silently.
 *
 * Two QEMU generations: by default the qemu-system-x86_64 on PATH (QEMU 7.2
 * on Debian 12); with PT_QEMU=10 (meson test --setup qemu10, which also
 * puts tests/qemu10/bin first on PATH) QEMU 10 of the Debian 13 root that
 * tests/qemu10/make-root.sh makes.  A run that asks for QEMU 10 and finds
 * another fails rather than skips, so that its results are never
 * labelled with the wrong QEMU.
 */
#pragma once

#include <glib.h>

typedef struct {
    GPid pid;
    char *dir;          /* private temporary directory */
    char *qmp_path;     /* dir/qmp.sock */
} PtTestQemu;

/* TRUE if qemu-system-x86_64 can be run (and, under PT_QEMU, is the
 * generation asked for); else FALSE and *why says why. */
gboolean pt_test_have_qemu(char **why);

/* TRUE, with the test skipped and the reason given, when QEMU cannot run:
 * "if (pt_test_skip_without_qemu()) return;".  Under PT_QEMU a QEMU of
 * another generation fails the test instead. */
gboolean pt_test_skip_without_qemu(void);

/* The QEMU major version PT_QEMU asks for (10), or 0 when it is unset. */
guint pt_test_qemu_generation(void);

/* The Debian 13 root of the QEMU 10 run: $PT_QEMU10_ROOT, by default
 * /var/cache/polltune/trixie (tests/qemu10/make-root.sh). */
const char *pt_test_qemu10_root(void);

/* The version of the qemu-system-x86_64 on PATH, as major * 1000000 +
 * minor * 1000 + micro (asked once per process), or 0 when it cannot say. */
guint32 pt_test_qemu_version(void);

/*
 * TRUE, with the test skipped and the reason given, unless the QEMU on PATH
 * is at least @major.@minor: "if (pt_test_skip_below_qemu(10, 0)) return;".
 * For facts of a newer QEMU, checked on the QEMU 10 run only.
 */
gboolean pt_test_skip_below_qemu(guint major, guint minor);

/* TRUE if /dev/kvm opens read-write and QEMU accepts -enable-kvm. */
gboolean pt_test_have_kvm(char **why);

/*
 * TRUE if /dev/kvm is there although the CPU shows no hardware
 * virtualisation (neither vmx nor svm in /proc/cpuinfo): KVM nested and
 * emulated by an outer hypervisor.  Such a KVM runs firmware but not a
 * stock Linux guest, and its exits are not seen by the kvm:kvm_exit
 * tracepoint.  *why describes it.
 */
gboolean pt_test_kvm_is_emulated(char **why);

/*
 * Start QEMU with a QMP monitor and the given extra arguments (NULL
 * terminated).  Without "-machine" in @extra_args it runs "-machine none";
 * without "-name NAME" there it is named pt-test (with debug-threads=on
 * either way, so that its threads carry their names).
 * Returns once the monitor socket accepts connections, or NULL with @error
 * set after PT_TEST_START_S (pt-test-child.h).
 */
PtTestQemu *pt_test_qemu_start(const char *const *extra_args, GError **error);

/* Convenience: "-machine none" with @n_iothreads iothreads iot0..iotN-1. */
PtTestQemu *pt_test_qemu_start_iothreads(guint n_iothreads, GError **error);

/* Send @sig to QEMU (SIGSTOP, SIGCONT, ...). */
void pt_test_qemu_signal(PtTestQemu *q, int sig);

/* Kill QEMU, reap it and remove its directory.  Accepts NULL. */
void pt_test_qemu_free(PtTestQemu *q);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestQemu, pt_test_qemu_free)
