/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A failed end-to-end run keeps what it had (e2e-keep.h): a run forced to
 * fail, in a subprocess, with the real daemon tuning a real QEMU that
 * traces its qom-sets and a serial console fed by the test, must leave the
 * daemon's log and database, QEMU's stderr and trace and the console in
 * its folder.  No guest is booted: this runs in seconds.
 */
#include "e2e-direct.h"
#include "e2e-keep.h"
#include "pt-test-qemu.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

/* The line the forced run's console shows. */
#define KEEP_SERIAL_LINE "PT-START forced-failure"

/* The subprocess: tune a QEMU until it traced a qom-set, then fail. */
static void
keep_forced_run(void)
{
    g_autofree char *dir = e2e_vm_dir_new();
    g_autofree char *sock = g_build_filename(dir, "vm-keep.qmp", NULL);
    g_autofree char *qmp = g_strdup_printf("unix:%s,server=on,wait=off", sock);
    g_autofree char *trace = g_build_filename(dir, "qemu.trace", NULL);
    g_autofree char *serial_log = g_build_filename(dir, "serial.log", NULL);
    g_autofree char *conf = NULL;
    g_autofree char *targets = e2e_direct_targets(dir);
    g_autoptr(GError) err = NULL;
    const char *args[] = { "-name", "vm-keep", "-object", "iothread,id=iot0",
                           "-trace", "qmp_enter_qom_set", "-D", trace, "-msg", "timestamp=on",
                           "-qmp", qmp, NULL };
    PtTestDaemon *d;
    PtTestQemu *q;
    GuestSerial *serial;
    gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    int pipefd[2];

    e2e_keep_begin("forced");
    conf = g_strdup_printf("interval = 200ms\nmetrics-listen =\n[targets]\n%s"
                           "[policy]\ndefault = static:55000/2/2\nmin-dwell = 0\n", targets);
    d = e2e_daemon_start(conf);
    q = pt_test_qemu_start(args, &err);
    g_assert_no_error(err);
    e2e_reap_on_abort(q->pid);
    e2e_keep_file(trace, "qemu.trace");
    g_assert_cmpint(pipe(pipefd), ==, 0);
    serial = guest_serial_new_fd(pipefd[0]);
    guest_serial_log_to(serial, serial_log);
    e2e_keep_file(serial_log, "serial.log");
    g_assert_cmpint(write(pipefd[1], KEEP_SERIAL_LINE "\r\n", strlen(KEEP_SERIAL_LINE) + 2), >, 0);
    g_assert_cmpint(guest_serial_wait(serial, "PT-START ", 5000, NULL), >=, 0);
    for (;;) {
        g_autofree char *text = NULL;

        if (g_file_get_contents(trace, &text, NULL, NULL) && strstr(text, "qmp_enter_qom_set"))
            break;
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_usleep(50000);
    }
    /* The daemon's line for the write is out before QEMU traced it. */
    g_assert_true(pt_test_wait_log(d, "static:55000/2/2 applied", 1, 5000));
    /* As a failed assertion ends a test run in its own process: in a
     * subprocess GLib exits instead, so abort as it would. */
    g_printerr("forced failure, to see what is kept\n");
    abort();
}

static char *
keep_read(const char *dir, const char *name)
{
    g_autofree char *path = g_build_filename(dir, name, NULL);
    char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, NULL))
        g_error("%s was not kept", path);
    return text;
}

static void
test_forced_failure(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *keep = NULL;
    g_autofree char *tmp = NULL;
    g_autofree char *run = NULL;
    g_autoptr(GDir) gd = NULL;
    const char *name;
    g_autofree char *log = NULL, *db = NULL, *trace = NULL, *serial = NULL, *what = NULL;

    if (g_test_subprocess()) {
        keep_forced_run();
        return;
    }
    if (pt_test_skip_without_qemu())
        return;
    keep = g_dir_make_tmp("pt-e2e-keep-XXXXXX", &err);
    g_assert_no_error(err);
    /* Everything the run makes goes under one folder removed at the end. */
    tmp = g_dir_make_tmp("pt-e2e-tmp-XXXXXX", &err);
    g_assert_no_error(err);
    g_setenv("PT_E2E_KEEP_DIR", keep, TRUE);
    g_setenv("TMPDIR", tmp, TRUE);
    g_test_trap_subprocess(NULL, 120 * G_USEC_PER_SEC, G_TEST_SUBPROCESS_DEFAULT);
    g_unsetenv("PT_E2E_KEEP_DIR");
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*forced failure*");
    g_test_trap_assert_stderr("*what the failed run had is kept in*");

    gd = g_dir_open(keep, 0, &err);
    g_assert_no_error(err);
    while ((name = g_dir_read_name(gd)))
        if (g_str_has_prefix(name, "e2e-failed-forced-"))
            run = g_build_filename(keep, name, NULL);
    g_assert_nonnull(run);
    log = keep_read(run, "polltuned.log");
    g_assert_nonnull(strstr(log, "static:55000/2/2 applied"));
    db = keep_read(run, "polltuned.db");
    g_assert_true(g_str_has_prefix(db, "SQLite format 3"));
    trace = keep_read(run, "qemu.trace");
    g_assert_nonnull(strstr(trace, "qmp_enter_qom_set"));
    serial = keep_read(run, "serial.log");
    g_assert_nonnull(strstr(serial, KEEP_SERIAL_LINE));
    what = keep_read(run, "what.txt");
    g_assert_nonnull(strstr(what, "polltuned.log: "));
    g_assert_nonnull(strstr(what, "serial.log: "));
    {
        const char *argv[] = { "rm", "-rf", keep, tmp, NULL };

        g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL,
                                   NULL, NULL, NULL, &err));
        g_assert_no_error(err);
    }
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/e2e/keep/forced-failure", test_forced_failure);
    return g_test_run();
}
