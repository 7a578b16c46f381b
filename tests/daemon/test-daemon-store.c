/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The history database taken from under a running polltuned, with real
 * QEMUs: its WAL deleted, the whole file deleted, its header overwritten.
 * Whatever happens to the file, the originals of every VM it tuned must
 * outlive a kill -9: the next start, then a stop, puts them back, which
 * the test reads from QEMU itself (query-iothreads on its own monitor).
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "pt-test-qmp-sync.h"
#include "qmp-json.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>
#include <glib/gstdio.h>

/* What the static policy writes; none of the originals below. */
#define TUNED 40000

static char *vm_dir;

/* A daemon tuning the QEMUs of vm_dir with the static policy. */
static PtTestDaemon *
daemon_up(void)
{
    return pt_test_daemon_up(PT_TEST_CONF_BASE, "[targets]\nqmp-globs = %s/*.qmp\n"
                             "[policy]\ndefault = static:%d/0/0\n", vm_dir, TUNED);
}

static gboolean
wait_poll(PtTestVm *vm, const char *iothread, guint64 want)
{
    return pt_test_qmp_wait_poll_max(vm->qmp, iothread, want, 10000);
}

/* iot1's poll-grow, as QEMU has it. */
static guint64
vm_poll_grow(PtTestVm *vm)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) all = qmp_query_iothreads_sync(vm->qmp, &err);

    g_assert_no_error(err);
    for (guint i = 0; i < all->len; i++)
        if (g_str_equal(((QmpIothread *)all->pdata[i])->id, "iot1"))
            return ((QmpIothread *)all->pdata[i])->poll_grow;
    g_assert_not_reached();
}

/* Both of @vm's iothreads carry the policy's value. */
static void
wait_tuned(PtTestVm *vm)
{
    g_assert_true(wait_poll(vm, "iot0", TUNED));
    g_assert_true(wait_poll(vm, "iot1", TUNED));
}

/*
 * kill -9, start again, stop: every VM must be back at its originals
 * (iot0 at QEMU's default 32768, iot1 at @iot1[i] with poll-grow 3).
 */
static void
kill_restart_stop(PtTestDaemon *d, PtTestVm **vms, const guint64 *iot1, guint n)
{
    pt_test_daemon_kill(d);
    for (guint i = 0; i < n; i++)
        g_assert_cmpuint(pt_test_qmp_poll_max(vms[i]->qmp, "iot1"), ==, TUNED);
    pt_test_daemon_up_again(d);
    /* The restart restores every iothread (nothing was restored before),
     * then the policy writes again: wait for both, so that the stop below
     * has something to put back, and finds the daemon running. */
    g_assert_true(pt_test_wait_log(d, "restore applied", 2 * n, 10000));
    for (guint i = 0; i < n; i++)
        wait_tuned(vms[i]);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    for (guint i = 0; i < n; i++) {
        g_test_message("vm %u: iot0 %" G_GUINT64_FORMAT ", iot1 %" G_GUINT64_FORMAT, i,
                       pt_test_qmp_poll_max(vms[i]->qmp, "iot0"),
                       pt_test_qmp_poll_max(vms[i]->qmp, "iot1"));
        g_assert_cmpuint(pt_test_qmp_poll_max(vms[i]->qmp, "iot0"), ==, 32768);
        g_assert_cmpuint(pt_test_qmp_poll_max(vms[i]->qmp, "iot1"), ==, iot1[i]);
        g_assert_cmpuint(vm_poll_grow(vms[i]), ==, 3);
    }
    g_assert_cmpuint(pt_test_daemon_log_count(d, "was corrupt"), ==, 0);
}

static PtTestVm *
vm_start(const char *name, guint64 iot1)
{
    g_autofree char *opts = g_strdup_printf(",poll-max-ns=%" G_GUINT64_FORMAT ",poll-grow=3",
                                            iot1);

    return pt_test_vm_start(vm_dir, name, opts);
}

/* The status reply's store.incident.what, and the line under "store" in
 * polltunectl status, which must both hold @needle. */
static void
assert_incident(PtTestDaemon *d, const char *needle)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);
    const char *what = pt_json_path_str(st, "store/incident/what");
    const char *build = g_getenv("PT_BUILD_ROOT");
    g_autofree char *ctl = g_build_filename(build ? build : ".", "cli", "polltunectl", NULL);
    const char *argv[] = { ctl, "-s", d->socket_path, "status", NULL };
    g_autofree char *out = NULL, *err_out = NULL, *line = NULL;
    g_autoptr(GError) err = NULL;
    const char *store, *next, *end;
    int status = -1;

    g_assert_nonnull(what);
    g_assert_nonnull(strstr(what, needle));
    g_assert_cmpint(pt_json_path_int(st, "store/incident/at_ms"), >, 0);

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err_out, &status, &err));
    g_assert_no_error(err);
    g_assert_cmpint(status, ==, 0);
    /* The line after the store's: "        12s ago: history database ..." */
    store = strstr(out, "\nstore   ");
    g_assert_nonnull(store);
    next = strchr(store + 1, '\n');
    g_assert_nonnull(next);
    end = strchr(next + 1, '\n');
    g_assert_nonnull(end);
    line = g_strndup(next + 1, end - next - 1);
    g_test_message("status: %s", line);
    g_assert_true(g_str_has_prefix(line, "        "));
    g_assert_nonnull(strstr(line, " ago: "));
    g_assert_nonnull(strstr(line, needle));
}

/*
 * Two QEMUs tuned, then (@whole FALSE) "<db>-wal" removed, or (@whole
 * TRUE) "<db>*" (the database, its WAL and shm, the run marker), then a
 * third QEMU attached, kill -9, a start and a stop.
 */
static void
file_removed(gboolean whole)
{
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *wal = NULL;
    const guint64 iot1[3] = { 1000, 2000, 3000 };
    PtTestVm *vms[3] = { NULL, NULL, NULL };

    if (pt_test_skip_without_qemu())
        return;
    vms[0] = vm_start("vm-a", iot1[0]);
    vms[1] = vm_start("vm-b", iot1[1]);
    d = daemon_up();
    wait_tuned(vms[0]);
    wait_tuned(vms[1]);

    wal = g_strconcat(d->db_path, "-wal", NULL);
    if (whole) {
        g_autofree char *shm = g_strconcat(d->db_path, "-shm", NULL);
        g_autofree char *marker = g_strconcat(d->db_path, ".running", NULL);

        /* The marker first: the daemon may see the file gone (and write
         * the marker again) before the last unlink below; for the same
         * reason the WAL and shm may already be new ones, or gone. */
        g_assert_cmpint(g_unlink(marker), ==, 0);
        g_assert_cmpint(g_unlink(d->db_path), ==, 0);
        g_unlink(shm);
        g_unlink(wal);
        g_assert_true(pt_test_wait_log(d, "was deleted while open; reopened it", 1, 10000));
    } else {
        g_assert_cmpint(g_unlink(wal), ==, 0);
        g_assert_true(pt_test_wait_log(d, "-wal was deleted while open", 1, 10000));
    }
    g_assert_true(pt_test_wait_log(d, "original values of 4 iothreads written into it again",
                                   1, 10000));
    assert_incident(d, whole ? "was deleted while open" : "-wal was deleted while open");

    vms[2] = vm_start("vm-c", iot1[2]);
    wait_tuned(vms[2]);
    kill_restart_stop(d, vms, iot1, 3);
    for (guint i = 0; i < 3; i++)
        pt_test_vm_free(vms[i]);
}

static void
test_wal_removed(void)
{
    file_removed(FALSE);
}

static void
test_database_removed(void)
{
    file_removed(TRUE);
}

/* The policy-get rule for @glob: its policy, set with policy-set. */
static const char *
rule_policy(json_object *pg, const char *glob)
{
    json_object *rules = pt_json_path(pg, "rules");

    for (size_t i = 0; rules && i < json_object_array_length(rules); i++) {
        json_object *r = json_object_array_get_idx(rules, i);

        if (g_strcmp0(pt_json_path_str(r, "glob"), glob) == 0 &&
            g_strcmp0(pt_json_path_str(r, "source"), "policy-set") == 0)
            return pt_json_path_str(r, "policy");
    }
    return NULL;
}

/*
 * What polltunectl set at run time is kept in the store like the
 * originals: an override with an expiry, a policy-set rule and the mode.
 * The database deleted under the daemon (rm "<db>*"), then a kill -9: the
 * next start has them all, the override under the id it was given.
 */
static void
test_database_removed_settings(void)
{
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(json_object) set = NULL;
    g_autoptr(json_object) st = NULL;
    g_autoptr(json_object) pg = NULL;
    g_autofree char *shm = NULL, *wal = NULL, *marker = NULL;
    json_object *io;
    gint64 id, expires;

    if (pt_test_skip_without_qemu())
        return;
    vm = vm_start("vm-s", 1000);
    d = daemon_up();
    wait_tuned(vm);
    set = pt_test_daemon_ok(d, "override-set", "{\"target\": \"vm-s\", \"iothread\": "
                            "\"iot0\", \"poll-max-ns\": 7000, \"for\": \"1h\"}");
    id = pt_json_path_int(set, "id");
    expires = pt_json_path_int(set, "expires_ms");
    g_assert_cmpint(id, >, 0);
    g_assert_cmpint(expires, >, 0);
    g_assert_true(wait_poll(vm, "iot0", 7000));
    json_object_put(pt_test_daemon_ok(d, "policy-set", "{\"target\": \"vm-z*\", "
                                      "\"policy\": \"static:9000/2/2\"}"));
    json_object_put(pt_test_daemon_ok(d, "mode-set", "{\"mode\": \"recommend\"}"));

    shm = g_strconcat(d->db_path, "-shm", NULL);
    wal = g_strconcat(d->db_path, "-wal", NULL);
    marker = g_strconcat(d->db_path, ".running", NULL);
    g_assert_cmpint(g_unlink(marker), ==, 0);
    g_assert_cmpint(g_unlink(d->db_path), ==, 0);
    g_unlink(shm);
    g_unlink(wal);
    g_assert_true(pt_test_wait_log(d, "was deleted while open; reopened it", 1, 10000));
    g_assert_true(pt_test_wait_log(d, "original values of 2 iothreads written into it again",
                                   1, 10000));

    pt_test_daemon_kill(d);
    pt_test_daemon_up_again(d);
    g_assert_cmpint(pt_test_wait_target(d, "vm-s", 2, TRUE, 10000), >=, 0);
    st = pt_test_daemon_ok(d, "status", NULL);
    g_assert_cmpstr(pt_json_path_str(st, "mode"), ==, "recommend");
    io = pt_test_status_iothread(st, "vm-s", "iot0");
    g_assert_nonnull(io);
    g_assert_nonnull(pt_json_path(io, "override"));
    g_assert_cmpint(pt_json_path_int(io, "override/id"), ==, id);
    g_assert_cmpint(pt_json_path_int(io, "override/expires_ms"), ==, expires);
    g_assert_cmpint(pt_json_path_int(io, "override/poll-max-ns"), ==, 7000);
    pg = pt_test_daemon_ok(d, "policy-get", NULL);
    g_assert_cmpstr(rule_policy(pg, "vm-z*"), ==, "static:9000/2/2");
    /* The override is cleared by its id, in the store too. */
    json_object_put(pt_test_daemon_ok(d, "override-clear", "{\"target\": \"vm-s\", "
                                      "\"iothread\": \"iot0\"}"));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
}

/* The header overwritten while the daemon runs: said in the log and in
 * status, rewritten, and the next start finds the whole history. */
static void
test_header_corrupted(void)
{
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(json_object) st = NULL;
    g_autofree char *junk = g_strnfill(100, 'x');
    const guint64 iot1[1] = { 1500 };
    PtTestVm *vms[1] = { NULL };
    int fd;

    if (pt_test_skip_without_qemu())
        return;
    vms[0] = vm_start("vm-h", iot1[0]);
    d = daemon_up();
    wait_tuned(vms[0]);

    fd = open(d->db_path, O_WRONLY | O_CLOEXEC);
    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpint(pwrite(fd, junk, 100, 0), ==, 100);
    close(fd);
    g_assert_true(pt_test_wait_log(d, "had a corrupt header; rewrote it", 1, 10000));
    assert_incident(d, "corrupt header");
    st = pt_test_daemon_ok(d, "status", NULL);
    g_assert_cmpint(pt_json_path_int(st, "store/corruptions"), ==, 1);
    g_assert_cmpstr(pt_json_path_str(st, "store/health"), ==, "ok");

    kill_restart_stop(d, vms, iot1, 1);
    pt_test_vm_free(vms[0]);
}

int
main(int argc, char **argv)
{
    int rc;

    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    vm_dir = g_dir_make_tmp("pt-vms-XXXXXX", NULL);
    g_test_add_func("/daemon/store/wal-removed", test_wal_removed);
    g_test_add_func("/daemon/store/database-removed", test_database_removed);
    g_test_add_func("/daemon/store/database-removed-settings",
                    test_database_removed_settings);
    g_test_add_func("/daemon/store/header-corrupted", test_header_corrupted);
    rc = g_test_run();
    g_rmdir(vm_dir);
    return rc;
}
