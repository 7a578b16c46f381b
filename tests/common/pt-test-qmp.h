/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-qmp: the test's own QMP monitor on a real QEMU, to read back
 * what QEMU itself has, independently of the daemon under test.
 *
 * The client is the project's QmpClient on the thread-default main
 * context, used synchronously.  Every helper that cannot fail in a working
 * setup asserts; pt_test_qmp_run() returns errors, for tests that expect
 * some.
 *
 * PtTestVm is the QEMU most daemon tests attach to: "-machine none -name
 * NAME" with iothreads iot0 and iot1 and a null-co block node, a monitor
 * for the daemon at DIR/NAME.qmp (where a "qmp-globs = DIR/\*.qmp" finds
 * it) and one for the test.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "pt-test-qemu.h"
#include "qmp-client.h"

/* Connect to the monitor at @path and negotiate; asserts. */
QmpClient *pt_test_qmp_connect(const char *path, const char *name);

/* Run @command with @args_json (a JSON object as text, or NULL); returns
 * a new reference to the "return" value, or NULL with @error. */
json_object *pt_test_qmp_run(QmpClient *c, const char *command, const char *args_json,
                             GError **error);

/* poll-max-ns of iothread @id as QEMU reports it; asserts it exists. */
guint64 pt_test_qmp_poll_max(QmpClient *c, const char *id);

/* Wait up to pt_test_wait_ms(@ms) for poll-max-ns of @id to be @want. */
gboolean pt_test_qmp_wait_poll_max(QmpClient *c, const char *id, guint64 want, guint ms);
/* The same, failing the test with what QEMU has instead; @what names the
 * QEMU in the message. */
void pt_test_qmp_assert_poll_max(QmpClient *c, const char *what, const char *id,
                                 guint64 want, guint ms);

typedef struct {
    PtTestQemu *qemu;
    QmpClient *qmp;             /* the test's own monitor */
    char *daemon_sock;          /* DIR/NAME.qmp */
} PtTestVm;

/* Start it; @iot1_opts (",poll-max-ns=..." or NULL) is appended to iot1's
 * options. */
PtTestVm *pt_test_vm_start(const char *dir, const char *name, const char *iot1_opts);
void pt_test_vm_free(PtTestVm *vm);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestVm, pt_test_vm_free)
