/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt against a real, private libvirtd with real TCG domains:
 * discovery, lifecycle events, stats, setting iothread parameters, errors,
 * a stuck libvirtd and a restarted one.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "pt-libvirt.h"
#include "pt-test-child.h"
#include "pt-test-daemon.h"
#include "pt-test-libvirt.h"
#include "pt-test-qemu.h"

static PtTestLibvirtd *lvd;
static char *skip_reason;

typedef struct {
    PtLibvirt *lv;
    guint connected;
    guint disconnected;
    char *disconnect_why;
    GPtrArray *started;     /* uuids */
    GPtrArray *stopped;     /* "uuid reason" */
} Fixture;

static void
on_connected(PtLibvirt *lv, gpointer data)
{
    Fixture *f = data;

    f->connected++;
}

static void
on_disconnected(PtLibvirt *lv, const GError *why, gpointer data)
{
    Fixture *f = data;

    f->disconnected++;
    g_free(f->disconnect_why);
    f->disconnect_why = g_strdup(why->message);
}

static void
on_started(PtLibvirt *lv, const char *name, const char *uuid, gpointer data)
{
    Fixture *f = data;

    g_ptr_array_add(f->started, g_strdup(uuid));
}

static void
on_stopped(PtLibvirt *lv, const char *name, const char *uuid,
           const char *reason, gpointer data)
{
    Fixture *f = data;

    g_ptr_array_add(f->stopped, g_strdup_printf("%s %s", uuid, reason));
}

static const PtLibvirtCallbacks callbacks = {
    .connected = on_connected,
    .disconnected = on_disconnected,
    .domain_started = on_started,
    .domain_stopped = on_stopped,
};

/* Iterate the default context until *@counter exceeds @floor or @ms pass. */
static gboolean
wait_count(const guint *counter, guint floor, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    while (*counter <= floor && g_get_monotonic_time() < deadline)
        if (!g_main_context_iteration(NULL, FALSE))
            g_usleep(10 * 1000);
    return *counter > floor;
}

static gboolean
wait_string(GPtrArray *list, const char *want, guint ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)ms * 1000;

    for (;;) {
        for (guint i = 0; i < list->len; i++)
            if (g_str_equal(g_ptr_array_index(list, i), want))
                return TRUE;
        if (g_get_monotonic_time() >= deadline)
            return FALSE;
        if (!g_main_context_iteration(NULL, FALSE))
            g_usleep(10 * 1000);
    }
}

static void
got_result(GObject *source, GAsyncResult *res, gpointer data)
{
    *(GAsyncResult **)data = g_object_ref(res);
}

/* The job deadline bounds this wait. */
static GAsyncResult *
wait_result(GAsyncResult **slot)
{
    while (!*slot)
        g_main_context_iteration(NULL, TRUE);
    return *slot;
}

static GPtrArray *
do_list(Fixture *f, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    pt_libvirt_list_async(f->lv, NULL, got_result, &res);
    return pt_libvirt_list_finish(f->lv, wait_result(&res), error);
}

static GPtrArray *
do_stats(Fixture *f, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    pt_libvirt_stats_async(f->lv, NULL, got_result, &res);
    return pt_libvirt_stats_finish(f->lv, wait_result(&res), error);
}

static gboolean
do_set(Fixture *f, const char *uuid, guint iothread, guint64 max_ns,
       guint grow, guint shrink, GError **error)
{
    g_autoptr(GAsyncResult) res = NULL;

    pt_libvirt_set_iothread_async(f->lv, uuid, iothread, max_ns, grow, shrink,
                                  NULL, got_result, &res);
    return pt_libvirt_set_iothread_finish(f->lv, wait_result(&res), error);
}

static void
fixture_setup(Fixture *f, gconstpointer data)
{
    f->started = g_ptr_array_new_with_free_func(g_free);
    f->stopped = g_ptr_array_new_with_free_func(g_free);
    if (!lvd)
        return;
    f->lv = pt_libvirt_new(lvd->uri, NULL, &callbacks, f);
    pt_libvirt_set_pid_dir(f->lv, lvd->pid_dir);
    pt_libvirt_start(f->lv);
    g_assert_true(wait_count(&f->connected, 0, 10000));
    g_assert_true(pt_libvirt_is_connected(f->lv));
}

static void
fixture_teardown(Fixture *f, gconstpointer data)
{
    g_clear_pointer(&f->lv, pt_libvirt_free);
    /* Deliveries after free must not happen: nothing is left to dispatch. */
    while (g_main_context_iteration(NULL, FALSE))
        ;
    g_ptr_array_unref(f->started);
    g_ptr_array_unref(f->stopped);
    g_free(f->disconnect_why);
}

static gboolean
need_libvirtd(void)
{
    if (lvd)
        return TRUE;
    if (pt_test_qemu_generation()) {
        /* Asked for libvirt 11 with QEMU 10: its absence is a failure. */
        g_test_message("%s", skip_reason);
        g_test_fail();
    } else {
        g_test_skip(skip_reason);
    }
    return FALSE;
}

static void
test_discovery(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestDomain) dom = NULL;
    g_autoptr(GPtrArray) list = NULL;
    g_autofree char *stopped = NULL;
    g_autofree char *cmdline_path = NULL;
    g_autofree char *cmdline = NULL;
    g_autofree char *want_name = NULL;
    const PtLibvirtDomain *d;
    const PtLibvirtDisk *disk;
    gsize len;

    if (!need_libvirtd())
        return;
    dom = pt_test_domain_start(lvd, &error);
    g_assert_no_error(error);
    g_assert_true(wait_string(f->started, dom->uuid, 2000));

    list = do_list(f, &error);
    g_assert_no_error(error);
    d = pt_libvirt_domains_find(list, dom->uuid);
    g_assert_nonnull(d);
    g_assert_cmpstr(d->name, ==, dom->name);
    g_assert_cmpint(d->id, >, 0);
    g_assert_cmpint(d->pid, >, 0);
    /* The pid is QEMU's, running this very guest. */
    cmdline_path = g_strdup_printf("/proc/%d/cmdline", (int)d->pid);
    g_assert_true(g_file_get_contents(cmdline_path, &cmdline, &len, NULL));
    for (gsize i = 0; i + 1 < len; i++)
        if (cmdline[i] == '\0')
            cmdline[i] = ' ';
    want_name = g_strdup_printf("guest=%s,", dom->name);
    g_assert_nonnull(strstr(cmdline, want_name));
    g_assert_cmpuint(d->iothread_ids->len, ==, 2);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 0), ==, 1);
    g_assert_cmpuint(g_array_index(d->iothread_ids, guint, 1), ==, 2);
    g_assert_cmpuint(d->disks->len, ==, 2);
    disk = &g_array_index(d->disks, PtLibvirtDisk, 0);
    g_assert_cmpstr(disk->dev, ==, "vda");
    g_assert_cmpuint(disk->iothreads->len, ==, 1);
    g_assert_cmpuint(g_array_index(disk->iothreads, guint, 0), ==, 1);
    /* libvirt's live XML gives the scsi disk an address on controller 0,
     * whose iothread it runs in. */
    disk = &g_array_index(d->disks, PtLibvirtDisk, 1);
    g_assert_cmpstr(disk->dev, ==, "sda");
    g_assert_cmpuint(disk->iothreads->len, ==, 1);
    g_assert_cmpuint(g_array_index(disk->iothreads, guint, 0), ==, 2);

    /* A second connection made while the domain runs finds it on start. */
    {
        Fixture f2 = { 0 };
        g_autoptr(GPtrArray) list2 = NULL;

        fixture_setup(&f2, NULL);
        list2 = do_list(&f2, &error);
        g_assert_no_error(error);
        g_assert_nonnull(pt_libvirt_domains_find(list2, dom->uuid));
        g_assert_cmpuint(f2.started->len, ==, 0);
        fixture_teardown(&f2, NULL);
    }

    stopped = g_strdup_printf("%s destroyed", dom->uuid);
    g_assert_cmpuint(f->stopped->len, ==, 0);
    {
        g_autofree char *uuid = g_strdup(dom->uuid);

        g_clear_pointer(&dom, pt_test_domain_free);
        g_assert_true(wait_string(f->stopped, stopped, 2000));
        g_clear_pointer(&list, g_ptr_array_unref);
        list = do_list(f, &error);
        g_assert_no_error(error);
        g_assert_null(pt_libvirt_domains_find(list, uuid));
    }
}

static const PtLibvirtIothreadStats *
iothread_find(const PtLibvirtDomainStats *s, guint id)
{
    for (guint i = 0; i < s->iothreads->len; i++)
        if (g_array_index(s->iothreads, PtLibvirtIothreadStats, i).id == id)
            return &g_array_index(s->iothreads, PtLibvirtIothreadStats, i);
    return NULL;
}

static void
test_stats_and_set(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestDomain) dom = NULL;
    g_autofree char *virsh = NULL;
    const PtLibvirtIothreadStats *t;
    const PtLibvirtDiskStats *disk = NULL;
    gint64 deadline;
    guint64 default_max;

    if (!need_libvirtd())
        return;
    dom = pt_test_domain_start(lvd, &error);
    g_assert_no_error(error);

    /* SeaBIOS probes vda soon after start: wait for its reads to count. */
    deadline = g_get_monotonic_time() + 15 * G_USEC_PER_SEC;
    for (;;) {
        g_autoptr(GPtrArray) stats = do_stats(f, &error);
        const PtLibvirtDomainStats *s;

        g_assert_no_error(error);
        s = pt_libvirt_stats_find(stats, dom->uuid);
        g_assert_nonnull(s);
        g_assert_cmpstr(s->name, ==, dom->name);
        g_assert_cmpuint(s->iothreads->len, ==, 2);
        t = iothread_find(s, 1);
        g_assert_nonnull(t);
        g_assert_cmpuint(t->poll_max_ns, >, 0);
        default_max = t->poll_max_ns;
        g_assert_cmpuint(s->disks->len, ==, 2);
        g_assert_cmpstr(g_array_index(s->disks, PtLibvirtDiskStats, 1).name, ==, "sda");
        disk = &g_array_index(s->disks, PtLibvirtDiskStats, 0);
        g_assert_cmpstr(disk->name, ==, "vda");
        if (disk->v.v[METRIC_RD_OPS] > 0) {
            g_assert_cmpint(disk->v.v[METRIC_RD_BYTES], >=, 512 * disk->v.v[METRIC_RD_OPS]);
            g_assert_cmpint(disk->v.v[METRIC_RD_TIME_NS], >, 0);
            break;
        }
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(200 * 1000);
    }

    g_assert_true(do_set(f, dom->uuid, 1, 50000, 2, 4, &error));
    g_assert_no_error(error);
    {
        g_autoptr(GPtrArray) stats = do_stats(f, &error);
        const PtLibvirtDomainStats *s;

        g_assert_no_error(error);
        s = pt_libvirt_stats_find(stats, dom->uuid);
        g_assert_nonnull(s);
        t = iothread_find(s, 1);
        g_assert_cmpuint(t->poll_max_ns, ==, 50000);
        g_assert_cmpuint(t->poll_grow, ==, 2);
        g_assert_cmpuint(t->poll_shrink, ==, 4);
        t = iothread_find(s, 2);
        g_assert_cmpuint(t->poll_max_ns, ==, default_max);
    }
    virsh = pt_test_libvirtd_virsh(lvd, &error, "domstats", "--iothread", dom->name, NULL);
    g_assert_no_error(error);
    g_assert_nonnull(strstr(virsh, "iothread.1.poll-max-ns=50000\n"));
    g_assert_nonnull(strstr(virsh, "iothread.1.poll-grow=2\n"));
    g_assert_nonnull(strstr(virsh, "iothread.1.poll-shrink=4\n"));

    /* An iothread the domain lacks: the error names domain and iothread. */
    g_assert_false(do_set(f, dom->uuid, 99, 1000, 0, 0, &error));
    g_assert_error(error, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_FAILED);
    g_assert_nonnull(strstr(error->message, dom->name));
    g_assert_nonnull(strstr(error->message, "iothread99"));
    g_assert_null(strstr(error->message, "unknown libvirt error"));
    g_test_message("%s", error->message);
}

static void
test_unknown_uuid(Fixture *f, gconstpointer data)
{
    static const char uuid[] = "8d7c1f55-2b1e-4c1f-9d3a-00000000beef";
    g_autoptr(GError) error = NULL;

    if (!need_libvirtd())
        return;
    g_assert_false(do_set(f, uuid, 1, 1000, 0, 0, &error));
    g_assert_error(error, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_FOUND);
    g_assert_nonnull(strstr(error->message, uuid));
    g_test_message("%s", error->message);
}

static void
test_stuck_libvirtd(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) stats = NULL;
    gint64 t0, elapsed;

    if (!need_libvirtd())
        return;
    pt_libvirt_set_timeout(f->lv, 500);
    g_assert_true(pt_test_libvirtd_signal(lvd, SIGSTOP, &error));
    t0 = g_get_monotonic_time();
    stats = do_stats(f, &error);
    elapsed = g_get_monotonic_time() - t0;
    g_assert_true(pt_test_libvirtd_signal(lvd, SIGCONT, NULL));
    g_assert_null(stats);
    g_assert_error(error, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_TIMEOUT);
    g_test_message("%s", error->message);
    g_assert_cmpint(elapsed, >=, 450 * 1000);
    g_assert_cmpint(elapsed, <, 2 * G_USEC_PER_SEC);
    g_clear_error(&error);

    /* Once libvirtd runs again, the worker catches up and answers. */
    pt_libvirt_set_timeout(f->lv, PT_LIBVIRT_DEFAULT_TIMEOUT_MS);
    stats = do_stats(f, &error);
    g_assert_no_error(error);
    g_assert_nonnull(stats);
}

static void
test_reconnect(Fixture *f, gconstpointer data)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestDomain) dom = NULL;
    g_autoptr(GPtrArray) stats = NULL;

    if (!need_libvirtd())
        return;
    dom = pt_test_domain_start(lvd, &error);
    g_assert_no_error(error);

    g_assert_true(pt_test_libvirtd_kill(lvd, &error));
    g_assert_true(wait_count(&f->disconnected, 0, 5000));
    g_assert_nonnull(strstr(f->disconnect_why, "connection lost"));
    g_test_message("%s", f->disconnect_why);
    g_assert_false(pt_libvirt_is_connected(f->lv));

    stats = do_stats(f, &error);
    g_assert_error(error, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED);
    g_clear_error(&error);

    g_assert_true(pt_test_libvirtd_restart(lvd, &error));
    g_assert_true(wait_count(&f->connected, 1, 15000));
    g_assert_cmpuint(f->disconnected, ==, 1);

    /* The guest ran on without libvirtd, and is sampled again. */
    stats = do_stats(f, &error);
    g_assert_no_error(error);
    g_assert_nonnull(pt_libvirt_stats_find(stats, dom->uuid));
    /* A libvirtd restart is no domain stop. */
    g_assert_cmpuint(f->stopped->len, ==, 0);
}

static void
test_no_libvirtd(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GAsyncResult) res = NULL;
    g_autoptr(GPtrArray) list = NULL;
    g_autoptr(PtLibvirt) lv = NULL;
    Fixture f = { 0 };
    gint64 t0;

    lv = pt_libvirt_new("qemu:///system?socket=/nonexistent/pt/libvirt-sock",
                        NULL, &callbacks, &f);
    pt_libvirt_start(lv);
    g_assert_false(wait_count(&f.connected, 0, 1200));
    /* The first failure is reported once, with its cause; retries are not. */
    g_assert_cmpuint(f.disconnected, ==, 1);
    g_assert_nonnull(strstr(f.disconnect_why, "/nonexistent/pt/libvirt-sock"));
    pt_libvirt_list_async(lv, NULL, got_result, &res);
    list = pt_libvirt_list_finish(lv, wait_result(&res), &error);
    g_assert_null(list);
    g_assert_error(error, PT_LIBVIRT_ERROR, PT_LIBVIRT_ERROR_NOT_CONNECTED);
    g_assert_nonnull(strstr(error->message, "/nonexistent/pt/libvirt-sock"));
    /* Freeing during the backoff wait is prompt. */
    t0 = g_get_monotonic_time();
    g_clear_pointer(&lv, pt_libvirt_free);
    g_assert_cmpint(g_get_monotonic_time() - t0, <, G_USEC_PER_SEC);
    g_free(f.disconnect_why);
}

/* The pid in @dir/@name, or 0. */
static GPid
pid_in(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    g_autofree char *text = NULL;

    return g_file_get_contents(path, &text, NULL, NULL) ? atoi(text) : 0;
}

static gboolean
dir_gone(gpointer data)
{
    return !g_file_test(data, G_FILE_TEST_EXISTS);
}

/* Whether every pid in @data (0-terminated) has exited. */
static gboolean
all_gone(gpointer data)
{
    for (const GPid *p = data; *p; p++)
        if (!pt_test_process_gone(*p))
            return FALSE;
    return TRUE;
}

/*
 * A test that runs out of time is killed by meson with its whole process
 * group (SIGTERM, then SIGKILL): its private virtlogd and libvirtd, which
 * detach from it, and the QEMU of its domain go too.  The child here is
 * such a test, in a group of its own as meson runs it.
 */
static void
test_dies_with_killed_test(void)
{
    int report[2];
    GPid pids[4] = { 0, 0, 0, 0 };      /* virtlogd, libvirtd, QEMU, 0 */
    char dir[256] = "";
    pid_t child;
    gboolean gone;

    if (skip_reason) {
        g_test_skip(skip_reason);
        return;
    }
    child = pt_test_child_fork(report);
    if (child == 0) {
        g_autoptr(GError) err = NULL;
        PtTestLibvirtd *mine;
        PtTestDomain *dom;
        g_autofree char *qemu_pid = NULL;

        setpgid(0, 0);
        mine = pt_test_libvirtd_start(&err);
        dom = mine ? pt_test_domain_start(mine, &err) : NULL;
        if (!dom)
            _exit(2);
        qemu_pid = g_strdup_printf("%s.pid", dom->name);
        pids[0] = pid_in(mine->dir, "virtlogd.pid");
        pids[1] = pid_in(mine->dir, "libvirtd.pid");
        pids[2] = pid_in(mine->pid_dir, qemu_pid);
        g_strlcpy(dir, mine->dir, sizeof(dir));
        pt_test_child_report(report[1], pids, sizeof(pids), dir, sizeof(dir));
    }
    close(report[1]);
    pt_test_child_read_report(report[0], pids, sizeof(pids), dir, sizeof(dir));
    for (guint i = 0; i < 3; i++)
        g_assert_cmpint(pids[i], >, 0);
    /* As meson's timeout does it. */
    g_assert_cmpint(kill(-child, SIGTERM), ==, 0);
    g_assert_cmpint(waitpid(child, NULL, 0), ==, child);
    kill(-child, SIGKILL);
    gone = pt_test_wait(all_gone, pids, 30000);
    if (!gone) {
        for (guint i = 0; i < 3; i++)
            kill(pids[i], SIGKILL);
    }
    g_assert_true(gone);
    /* The watchdog removes the directory last. */
    g_assert_true(pt_test_wait(dir_gone, dir, 30000));
}

int
main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    int rc;

    g_test_init(&argc, &argv, NULL);
    if (pt_test_have_libvirtd(&skip_reason)) {
        lvd = pt_test_libvirtd_start(&error);
        if (!lvd)
            skip_reason = g_strdup_printf("private libvirtd: %s", error->message);
    }

    g_test_add_func("/daemon/libvirt/no-libvirtd", test_no_libvirtd);
    g_test_add("/daemon/libvirt/discovery", Fixture, NULL,
               fixture_setup, test_discovery, fixture_teardown);
    g_test_add("/daemon/libvirt/stats-and-set", Fixture, NULL,
               fixture_setup, test_stats_and_set, fixture_teardown);
    g_test_add("/daemon/libvirt/unknown-uuid", Fixture, NULL,
               fixture_setup, test_unknown_uuid, fixture_teardown);
    g_test_add("/daemon/libvirt/stuck-libvirtd", Fixture, NULL,
               fixture_setup, test_stuck_libvirtd, fixture_teardown);
    g_test_add("/daemon/libvirt/reconnect", Fixture, NULL,
               fixture_setup, test_reconnect, fixture_teardown);
    g_test_add_func("/daemon/libvirt/dies-with-killed-test", test_dies_with_killed_test);
    rc = g_test_run();
    pt_test_libvirtd_free(lvd);
    g_free(skip_reason);
    return rc;
}
