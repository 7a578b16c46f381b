/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e-direct: the test guest booted by tests/guest/run-guest.sh as a plain
 * QEMU (no libvirt), for the end-to-end tests over direct QMP.
 *
 * QEMU gets two monitors: DIR/NAME.qmp, which polltuned finds through its
 * qmp-globs, and DIR/test.monitor, on which the test reads back what QEMU
 * really has.  The serial console is followed from a pipe on QEMU's
 * stdout.  QEMU dies with the test process, even on a failed assertion.
 */
#pragma once

#include "e2e-scenario.h"
#include "qmp-client.h"

typedef struct {
    E2eVm vm;
    GPid pid;
    char *dir;
    char *daemon_sock;
    char *test_sock;
    QmpClient *qmp;
} E2eDirectVm;

/* Boot the guest in @dir with @phases under @accel ("tcg", "kvm"), its
 * two iothreads at poll-max-ns @poll_max_ns (0: QEMU's default); @extra
 * (NULL-terminated, or NULL) is added to QEMU's command line. */
E2eDirectVm *e2e_direct_vm_start(const char *dir, const char *phases, const char *accel,
                                 guint64 poll_max_ns, const char *const *extra);
/* Connect the test's own monitor (waits up to 60 s for its socket). */
void e2e_direct_vm_connect(E2eDirectVm *dv);
void e2e_direct_vm_free(E2eDirectVm *dv);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(E2eDirectVm, e2e_direct_vm_free)

/* TRUE once @path exists, FALSE after @ms. */
gboolean e2e_wait_file(const char *path, guint ms);

/* A private directory for the VM's sockets and logs, and its removal
 * (with the files these helpers put there). */
char *e2e_vm_dir_new(void);
void e2e_vm_dir_remove(const char *dir);

/* polltuned with @conf_body (see e2e_daemon_conf()), reaped if the test
 * aborts. */
PtTestDaemon *e2e_daemon_start(const char *conf_body);
/* The [targets] lines that make polltuned find VMs by DIR/NAME.qmp. */
char *e2e_direct_targets(const char *dir);
