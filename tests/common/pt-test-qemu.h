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
 */
#pragma once

#include <glib.h>

typedef struct {
    GPid pid;
    char *dir;          /* private temporary directory */
    char *qmp_path;     /* dir/qmp.sock */
} PtTestQemu;

/* TRUE if qemu-system-x86_64 can be run; else FALSE and *why says why. */
gboolean pt_test_have_qemu(char **why);

/* TRUE, with the test skipped and the reason given, when QEMU cannot run:
 * "if (pt_test_skip_without_qemu()) return;". */
gboolean pt_test_skip_without_qemu(void);

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
 * terminated).  Without "-machine" in @extra_args it runs "-machine none".
 * Returns once the monitor socket accepts connections, or NULL with @error
 * set after 20 s.
 */
PtTestQemu *pt_test_qemu_start(const char *const *extra_args, GError **error);

/* Convenience: "-machine none" with @n_iothreads iothreads iot0..iotN-1. */
PtTestQemu *pt_test_qemu_start_iothreads(guint n_iothreads, GError **error);

/* Send @sig to QEMU (SIGSTOP, SIGCONT, ...). */
void pt_test_qemu_signal(PtTestQemu *q, int sig);

/* Kill QEMU, reap it and remove its directory.  Accepts NULL. */
void pt_test_qemu_free(PtTestQemu *q);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestQemu, pt_test_qemu_free)
