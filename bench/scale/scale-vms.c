/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "scale-vms.h"
#include "pt-test-qmp.h"

#include <glib/gstdio.h>

gboolean
scale_bench_ready(const char *name, const char *argv0)
{
    g_autofree char *why = NULL;

    if (!pt_test_have_qemu(&why)) {
        g_printerr("%s: %s\n", name, why);
        return FALSE;
    }
    if (!g_getenv("PT_BUILD_ROOT")) {
        g_autofree char *self_dir = g_path_get_dirname(argv0);
        g_autofree char *root = g_build_filename(self_dir, "..", "..", NULL);

        g_setenv("PT_BUILD_ROOT", root, TRUE);
    }
    return TRUE;
}

static PtTestQemu *
scale_vm_start(const char *dir, guint index, guint n_iothreads, GError **error)
{
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *sock = g_strdup_printf("%s/vm-%03u.qmp", dir, index);

    g_ptr_array_add(args, g_strdup("-name"));
    g_ptr_array_add(args, g_strdup_printf("vm-%03u", index));
    for (guint i = 0; i < n_iothreads; i++) {
        g_ptr_array_add(args, g_strdup("-object"));
        g_ptr_array_add(args, g_strdup_printf("iothread,id=iot%u", i));
    }
    g_ptr_array_add(args, g_strdup("-qmp"));
    g_ptr_array_add(args, g_strdup_printf("unix:%s,server=on,wait=off", sock));
    g_ptr_array_add(args, NULL);
    return pt_test_qemu_start((const char *const *)args->pdata, error);
}

GArray *
scale_vms_start(const char *dir, guint n, guint n_iothreads)
{
    GArray *vms = g_array_new(FALSE, TRUE, sizeof(ScaleVm));

    for (guint i = 0; i < n; i++) {
        g_autoptr(GError) err = NULL;
        ScaleVm vm = { 0 };

        if (!(vm.qemu = scale_vm_start(dir, i, n_iothreads, &err)))
            g_error("QEMU %u: %s", i, err->message);
        vm.qmp = pt_test_qmp_connect(vm.qemu->qmp_path, "bench");
        g_array_append_val(vms, vm);
    }
    return vms;
}

void
scale_vms_free(GArray *vms, const char *dir)
{
    for (guint i = 0; i < vms->len; i++) {
        ScaleVm *vm = &g_array_index(vms, ScaleVm, i);
        g_autofree char *sock = g_strdup_printf("%s/vm-%03u.qmp", dir, i);

        g_clear_object(&vm->qmp);
        pt_test_qemu_free(vm->qemu);
        g_unlink(sock);
    }
    g_array_unref(vms);
}
