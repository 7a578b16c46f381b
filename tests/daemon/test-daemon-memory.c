/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The policy's workload memory across restarts, with a real QEMU: rows put
 * into the history database before polltuned starts are read into the
 * engine under the VM's name, listed by the memory command, kept through
 * a kill -9 and a restart, and cleared by forget, in the reply and in the
 * database.
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "qmp-json.h"
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

/* polltunectl @args... against @d (or offline, when @args says --db);
 * asserts it exits with @want and returns its stdout, its stderr in
 * @err_out. */
static char *
ctl_run_status(PtTestDaemon *d, const char *const *args, int want, char **err_out)
{
    const char *build = g_getenv("PT_BUILD_ROOT");
    g_autofree char *ctl = g_build_filename(build ? build : ".", "cli", "polltunectl", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autofree char *errs = NULL;
    g_autoptr(GError) err = NULL;
    char *out = NULL;
    int status = -1;

    g_ptr_array_add(argv, ctl);
    g_ptr_array_add(argv, "-s");
    g_ptr_array_add(argv, d->socket_path);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &errs, &status, &err));
    g_assert_no_error(err);
    g_test_message("polltunectl %s:\n%s%s", args[0], out, errs);
    g_assert_true(WIFEXITED(status));
    g_assert_cmpint(WEXITSTATUS(status), ==, want);
    /* A leak report keeps an error's exit status: read it from stderr. */
    g_assert_null(strstr(errs, "Sanitizer"));
    if (err_out)
        *err_out = g_steal_pointer(&errs);
    return out;
}

static char *
ctl_run(PtTestDaemon *d, const char *const *args)
{
    return ctl_run_status(d, args, 0, NULL);
}

/* The memory reply of @d for @vm's whole memory, checked as injected. */
static void
assert_memory_listed(PtTestDaemon *d)
{
    g_autoptr(json_object) m = pt_test_daemon_ok(d, "memory", "{\"target\": \"" VM "\"}");
    json_object *e;

    g_assert_cmpstr(pt_json_path_str(m, "vm"), ==, VM);
    g_assert_cmpint(pt_json_path_int(m, "ttl_ms"), ==, 2 * 86400000LL);
    g_assert_cmpint(json_object_array_length(pt_json_path(m, "iothreads")), ==, 2);
    g_assert_cmpstr(pt_json_path_str(m, "iothreads/0/iothread"), ==, "iot0");
    g_assert_cmpstr(pt_json_path_str(m, "iothreads/1/iothread"), ==, "iot1");
    g_assert_cmpint(json_object_array_length(pt_json_path(m, "iothreads/1/entries")), ==, 2);
    e = pt_json_path(m, "iothreads/1/entries/1");
    g_assert_cmpstr(pt_json_path_str(e, "signature"), ==, SIG_QD16);
    g_assert_cmpint(pt_json_path_int(e, "winner/poll-max-ns"), ==, 65536);
    g_assert_cmpint(pt_json_path_int(e, "anchor/poll-max-ns"), ==, 32768);
    g_assert_cmpfloat(json_object_get_double(pt_json_path(e, "score")), ==, 9.5);
    g_assert_cmpint(pt_json_path_int(e, "n_confirmed"), ==, 3);
    g_assert_cmpint(pt_json_path_int(e, "n_explorations"), ==, 2);
    g_assert_false(json_object_get_boolean(pt_json_path(e, "expired")));
}

static void
test_memory_restart(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *db = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;

    if (pt_test_skip_without_qemu())
        return;
    vm_dir = g_dir_make_tmp("pt-memory-XXXXXX", &err);
    g_assert_no_error(err);
    db = g_build_filename(vm_dir, "history.db", NULL);
    inject_rows(db);
    vm = pt_test_vm_start(vm_dir, VM, NULL);
    d = pt_test_daemon_up(NULL, "interval = 200ms\nmetrics-listen =\nmode = recommend\n"
                          "database = %s\n[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                          "[policy]\ndefault = adaptive:balanced\nmemory-ttl = 2d\n", db, vm_dir);
    g_assert_cmpint(pt_test_wait_target(d, VM, 2, TRUE, 10000), >=, 0);
    /* Both iothreads' rows are read under the VM's name at their first step. */
    g_assert_true(pt_test_wait_log(d, "workload memory: 2 entries of " VM " read", 1, 10000));
    g_assert_true(pt_test_wait_log(d, "workload memory: 1 entry of " VM " read", 1, 10000));
    assert_memory_listed(d);
    {
        /* The table, one row per entry, and --json the reply itself;
         * VM/N is iothreadN as for every command, here iot1 by its id. */
        g_autofree char *text = ctl_run(d, (const char *const[]){ "memory", VM, NULL });
        g_autofree char *json = ctl_run(d, (const char *const[]){ "memory", "--json",
                                                                 VM "/iot1", NULL });
        g_autofree char *offline = NULL;
        g_autoptr(json_object) j = json_tokener_parse(json);

        g_assert_nonnull(strstr(text, VM ": 3 entries; a winner not confirmed for 2d0h is "
                                "explored again\n"));
        g_assert_nonnull(strstr(text, "IOTHREAD"));
        g_assert_true(g_regex_match_simple("\niot1 +" SIG_QD16 " +65536/2/2 +9\\.500 "
                                              "+32768/0/0 +9\\.250 ", text, 0, 0));
        g_assert_nonnull(j);
        g_assert_cmpstr(pt_json_path_str(j, "iothread"), ==, "iot1");
        g_assert_cmpint(json_object_array_length(pt_json_path(j, "iothreads/0/entries")), ==,
                        2);
        /* The database read offline gives the same entries. */
        offline = ctl_run(d, (const char *const[]){ "memory", "--db", db, VM "/iot1", NULL });
        g_assert_nonnull(strstr(offline, VM ": 2 entries; a winner not confirmed for 7d0h"));
    }
    {
        g_autofree char *errs = NULL;
        g_autofree char *out = ctl_run_status(d, (const char *const[]){ "memory", "--db", db,
                                                                        "no-such-vm", NULL },
                                              1, &errs);

        /* Named, with its cause, on stderr alone; and nothing leaked on
         * the way out. */
        g_assert_cmpstr(out, ==, "");
        g_assert_nonnull(strstr(errs, "no-such-vm: no workload memory kept under that name"));
    }

    pt_test_daemon_kill(d);
    g_assert_cmpuint(stored_rows(db, VM, "iot1"), ==, 2);
    g_assert_cmpuint(stored_rows(db, VM, "iot0"), ==, 1);
    pt_test_daemon_up_again(d);
    g_assert_true(pt_test_wait_log(d, "workload memory: 2 entries of " VM " read", 2, 10000));
    assert_memory_listed(d);

    /* forget clears iot1 in the reply and in the store, and iot0 stays. */
    {
        g_autoptr(json_object) f = pt_test_daemon_ok(d, "forget", "{\"target\": \"" VM "\", "
                                                     "\"iothread\": \"iot1\"}");
        g_autoptr(json_object) m = NULL;
        g_autofree char *text = NULL;

        g_assert_cmpint(pt_json_path_int(f, "forgotten"), ==, 2);
        g_assert_cmpuint(stored_rows(db, VM, "iot1"), ==, 0);
        g_assert_cmpuint(stored_rows(db, VM, "iot0"), ==, 1);
        m = pt_test_daemon_ok(d, "memory", "{\"target\": \"" VM "\", \"iothread\": \"iot1\"}");
        g_assert_cmpint(json_object_array_length(pt_json_path(m, "iothreads/0/entries")), ==,
                        0);
        text = ctl_run(d, (const char *const[]){ "memory", VM "/iot1", NULL });
        g_assert_cmpstr(text, ==, VM "/iot1: no workload memory\n");
        g_free(text);
        text = ctl_run(d, (const char *const[]){ "forget", VM, NULL });
        g_assert_cmpstr(text, ==, VM ": 1 workload memory entry forgotten\n");
        g_assert_cmpuint(stored_rows(db, VM, "iot0"), ==, 0);
    }
    /* Ticks later the engine's empty memory has not brought rows back. */
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 5, 10000));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_assert_cmpuint(stored_rows(db, VM, "iot1"), ==, 0);
    g_assert_cmpuint(stored_rows(db, VM, "iot0"), ==, 0);
}

/* @n applied probes of @iothread of @target in the store at @path, one a
 * minute from @first_ms back, as a daemon that stopped would have left them. */
static void
inject_writes(const char *path, const char *target, const char *iothread, guint n,
              gint64 first_ms)
{
    g_autoptr(GError) err = NULL;
    StoreOptions opts;
    StoreDb *db;

    store_options_init(&opts);
    opts.now_ms = first_ms;
    db = store_db_open(path, &opts, &err);
    g_assert_no_error(err);
    for (guint i = 0; i < n; i++) {
        StoreDecision dec = {
            .ts_ms = first_ms - 60000 * (gint64)i, .target = target, .iothread = iothread,
            .policy = "adaptive:balanced", .old_triple = { 32768, 0, 0 },
            .new_triple = { 262144, 0, 0 }, .reason = "adaptive: measuring a wide poll window",
            .cause = "probe", .applied = TRUE,
        };

        g_assert_true(store_decision_insert(db, &dec, &err));
        g_assert_no_error(err);
    }
    store_db_close(db);
}

/*
 * The write budget outlives a restart: the store says the policy wrote to
 * iot0 eight times in the last ten minutes (its most), so the idle rule's
 * write of off to iot0 waits for room, while iot1, idle as well and with
 * no such writes, goes off at its first tick.  A budget that forgot them
 * wrote both at once.
 */
static void
test_write_budget_restart(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *db = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(PtTestDaemon) d = NULL;

    if (pt_test_skip_without_qemu())
        return;
    dir = g_dir_make_tmp("pt-budget-XXXXXX", &err);
    g_assert_no_error(err);
    db = g_build_filename(dir, "history.db", NULL);
    vm = pt_test_vm_start(dir, "budgetvm", NULL);
    /* Seven minutes of room at least: the oldest leaves the window then. */
    inject_writes(db, vm->daemon_sock, "iot0", 8, g_get_real_time() / 1000 - 1000);
    /* The host guards off: their cuts are the host's, never held by the
     * budget, and a loaded test host would cut iot0 to off on its own. */
    d = pt_test_daemon_up(NULL, "interval = 200ms\nmetrics-listen =\nmode = enforce\n"
                          "database = %s\n[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                          "[policy]\ndefault = adaptive:balanced\npsi-limit = 0\n"
                          "vcpu-delay-limit = 0\niothread-delay-limit = 0\n", db, dir);
    g_assert_true(pt_test_qmp_wait_poll_max(vm->qmp, "iot1", 0, 20000));
    g_assert_true(pt_test_wait_ticks(d, pt_test_daemon_ticks(d) + 5, 10000));
    g_assert_cmpuint(pt_test_qmp_poll_max(vm->qmp, "iot0"), ==, 32768);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    g_clear_pointer(&d, pt_test_daemon_free);
    g_clear_pointer(&vm, pt_test_vm_free);
    for (guint i = 0; i < 3; i++) {
        g_autofree char *f = g_strconcat(db, (const char *[]){ "", "-wal", "-shm" }[i], NULL);

        g_unlink(f);
    }
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/memory/restart", test_memory_restart);
    g_test_add_func("/daemon/memory/restart-write-budget", test_write_budget_restart);
    return g_test_run();
}
