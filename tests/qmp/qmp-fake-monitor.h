/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The scripted QEMU under the names it had before its replies were
 * checked against QEMU's schema; new tests use qmp-fake-qemu.h.
 * qmp_fake_send() sends bytes unchecked, as it always did.
 */
#pragma once

#include "qmp-fake-qemu.h"

typedef QmpFakeQemu QmpFakeMonitor;
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpFakeMonitor, qmp_fake_qemu_free)

#define qmp_fake_monitor_new qmp_fake_qemu_new
#define qmp_fake_monitor_new_fd qmp_fake_qemu_new_fd
#define qmp_fake_monitor_new_listen qmp_fake_qemu_new_listen
#define qmp_fake_monitor_free qmp_fake_qemu_free
#define qmp_fake_monitor_set_responder qmp_fake_qemu_set_responder
#define qmp_fake_monitor_n_received qmp_fake_qemu_n_received
#define qmp_fake_monitor_done qmp_fake_qemu_done
#define qmp_fake_monitor_finish qmp_fake_qemu_finish
#define qmp_fake_send qmp_fake_send_raw
