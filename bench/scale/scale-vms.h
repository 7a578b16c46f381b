/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * scale-vms: the benchmarks' QEMUs at scale: -machine none processes with
 * many iothreads, each with a monitor for the daemon (DIR/vm-NNN.qmp,
 * found by qmp-globs) and one of the bench's own.
 */
#pragma once

#include "pt-test-qemu.h"
#include "qmp-client.h"

typedef struct {
    PtTestQemu *qemu;
    QmpClient *qmp;             /* the bench's own monitor */
} ScaleVm;

/* PT_BUILD_ROOT from @argv0 (the bench's path in the build) unless set;
 * FALSE, saying why as @name, without a QEMU: the bench then exits 77. */
gboolean scale_bench_ready(const char *name, const char *argv0);
/* Start @n QEMUs "vm-000".. of @n_iothreads iothreads "iot0".. each, with
 * their daemon's sockets in @dir; exits the bench when one fails. */
GArray *scale_vms_start(const char *dir, guint n, guint n_iothreads);
/* Stop them and remove their sockets from @dir. */
void scale_vms_free(GArray *vms, const char *dir);
