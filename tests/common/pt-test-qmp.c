/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-qmp.h"
#include "pt-test-daemon.h"     /* pt_test_wait_ms() */
#include "pt-test-qmp-sync.h"

#include <glib/gstdio.h>

QmpClient *
pt_test_qmp_connect(const char *path, const char *name)
{
    g_autoptr(GError) err = NULL;
    QmpClient *c = qmp_client_new(NULL, &(QmpClientOptions){ .name = name });

    g_assert_true(qmp_client_connect_path(c, path, &err));
    g_assert_no_error(err);
    g_assert_true(qmp_client_wait_ready_sync(c, &err));
    g_assert_no_error(err);
    return c;
}

json_object *
pt_test_qmp_run(QmpClient *c, const char *command, const char *args_json, GError **error)
{
    json_object *args = NULL;

    if (args_json) {
        args = json_tokener_parse(args_json);
        g_assert_nonnull(args);
    }
    /* Without a decoder the result is the "return" value itself. */
    return qmp_client_call_sync(c, command, args, NULL, NULL, error);
}

guint64
pt_test_qmp_poll_max(QmpClient *c, const char *id)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) iots = qmp_query_iothreads_sync(c, &err);

    g_assert_no_error(err);
    for (guint i = 0; i < iots->len; i++) {
        QmpIothread *it = iots->pdata[i];

        if (g_str_equal(it->id, id))
            return it->poll_max_ns;
    }
    g_error("QEMU has no iothread %s", id);
}

gboolean
pt_test_qmp_wait_poll_max(QmpClient *c, const char *id, guint64 want, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)pt_test_wait_ms(ms) * 1000;

    while (pt_test_qmp_poll_max(c, id) != want) {
        if (g_get_monotonic_time() > deadline)
            return FALSE;
        g_usleep(50000);
    }
    return TRUE;
}

void
pt_test_qmp_assert_poll_max(QmpClient *c, const char *what, const char *id, guint64 want,
                            guint ms)
{
    if (!pt_test_qmp_wait_poll_max(c, id, want, ms))
        g_error("%s/%s: poll-max-ns is %" G_GUINT64_FORMAT ", not %" G_GUINT64_FORMAT
                " after %u ms", what, id, pt_test_qmp_poll_max(c, id), want,
                pt_test_wait_ms(ms));
}

PtTestVm *
pt_test_vm_start(const char *dir, const char *name, const char *iot1_opts)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *qmp_arg = NULL;
    g_autofree char *io1 = g_strdup_printf("iothread,id=iot1%s", iot1_opts ? iot1_opts : "");
    PtTestVm *vm = g_new0(PtTestVm, 1);

    vm->daemon_sock = g_strdup_printf("%s/%s.qmp", dir, name);
    qmp_arg = g_strdup_printf("unix:%s,server=on,wait=off", vm->daemon_sock);
    {
        const char *args[] = { "-name", name, "-object", "iothread,id=iot0", "-object", io1,
                               "-blockdev", "null-co,node-name=null0",
                               "-qmp", qmp_arg, NULL };

        vm->qemu = pt_test_qemu_start(args, &err);
    }
    g_assert_no_error(err);
    vm->qmp = pt_test_qmp_connect(vm->qemu->qmp_path, name);
    return vm;
}

void
pt_test_vm_free(PtTestVm *vm)
{
    if (!vm)
        return;
    g_clear_object(&vm->qmp);
    pt_test_qemu_free(vm->qemu);
    g_unlink(vm->daemon_sock);
    g_free(vm->daemon_sock);
    g_free(vm);
}
