/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy's workload memory across restarts, with a real QEMU: rows put
 * into the history database before polltuned starts are read into the
 * engine under the VM's name, listed by the memory command, kept through
 * a kill -9 and a restart, and cleared by forget, in the reply and in the
 * database.
 */
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "store-memory.h"

#include <glib/gstdio.h>
#include <string.h>

#define VM "memvm"
#define SIG_QD1 "qd1/4k/r100/iops16k-64k/qemu7.2/dev=virtio-disk0"
#define SIG_QD16 "qd16/4k/r100/iops64k-256k/qemu7.2/dev=virtio-disk0"

static char *vm_dir;

static PtMemoryRow *
row_new(const char *signature, gint64 winner_max_ns, gint64 now_ms)
{
    PtMemoryRow *r = g_new0(PtMemoryRow, 1);

    r->signature = g_strdup(signature);
    r->have_winner = 1;
    r->winner_max_ns = winner_max_ns;
    r->winner_grow = 2;
    r->winner_shrink = 2;
    r->winner_score = 9.5;
    r->winner_ticks = 5;
    r->anchor_max_ns = 32768;
    r->anchor_score = 9.25;
    r->noise = 0.1;
    r->learned_ms = now_ms - 3600000;
    r->confirmed_ms = now_ms - 60000;
    r->seen_ms = now_ms - 60000;
    r->n_confirmed = 3;
    r->n_explorations = 2;
    r->n_default_wins = 0;
    return r;
}

/* @n rows for @vm/@iothread in the database at @path, as the store has them. */
static guint
stored_rows(const char *path, const char *vm, const char *iothread)
{
    g_autoptr(GError) err = NULL;
    StoreDb *db;
    GPtrArray *rows;
    guint n;

    db = store_db_open_readonly(path, &err);
    g_assert_no_error(err);
    rows = store_memory_load(db, vm, iothread, &err);
    g_assert_no_error(err);
    n = rows->len;
    g_ptr_array_unref(rows);
    store_db_close(db);
    return n;
}

static void
inject_rows(const char *path)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) rows = g_ptr_array_new_with_free_func(
        (GDestroyNotify)pt_memory_row_free);
    gint64 now_ms = g_get_real_time() / 1000;
    StoreOptions opts;
    StoreDb *db;

    store_options_init(&opts);
    opts.now_ms = now_ms;
    db = store_db_open(path, &opts, &err);
    g_assert_no_error(err);
    g_ptr_array_add(rows, row_new(SIG_QD1, 0, now_ms));
    g_ptr_array_add(rows, row_new(SIG_QD16, 65536, now_ms));
    g_assert_true(store_memory_save(db, VM, "iot1", (PtMemoryRow *const *)rows->pdata,
                                    rows->len, now_ms, &err));
    g_assert_no_error(err);
    g_ptr_array_set_size(rows, 1);
    g_assert_true(store_memory_save(db, VM, "iot0", (PtMemoryRow *const *)rows->pdata,
                                    rows->len, now_ms, &err));
    g_assert_no_error(err);
    store_db_close(db);
}

static char *
conf_body(const char *db)
{
    return g_strdup_printf("interval = 200ms\nmetrics-listen =\nmode = recommend\n"
                           "database = %s\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = adaptive:balanced\nmemory-ttl = 2d\n",
                           db, vm_dir);
}

static void
test_memory_restart(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *db = NULL, *body = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;

    if (pt_test_skip_without_qemu())
        return;
    vm_dir = g_dir_make_tmp("pt-memory-XXXXXX", &err);
    g_assert_no_error(err);
    db = g_build_filename(vm_dir, "history.db", NULL);
    inject_rows(db);
    vm = pt_test_vm_start(vm_dir, VM, NULL);
    body = conf_body(db);
    d = pt_test_daemon_start(body, &err);
    g_assert_no_error(err);
    g_assert_cmpint(pt_test_wait_target(d, VM, 2, TRUE, 10000), >=, 0);
    /* Both iothreads' rows are read under the VM's name at their first step. */
    g_assert_true(pt_test_wait_log(d, "workload memory: 2 entries of " VM " read", 1, 10000));
    g_assert_true(pt_test_wait_log(d, "workload memory: 1 entry of " VM " read", 1, 10000));

    pt_test_daemon_kill(d);
    g_assert_cmpuint(stored_rows(db, VM, "iot1"), ==, 2);
    g_assert_cmpuint(stored_rows(db, VM, "iot0"), ==, 1);
    g_assert_true(pt_test_daemon_restart(d, &err));
    g_assert_no_error(err);
    g_assert_true(pt_test_wait_log(d, "workload memory: 2 entries of " VM " read", 2, 10000));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_assert_cmpuint(stored_rows(db, VM, "iot1"), ==, 2);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/memory/restart", test_memory_restart);
    return g_test_run();
}
