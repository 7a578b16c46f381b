/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-live: see cli-live.h.
 */
#include <signal.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cli-live.h"
#include "pt-test-fixture.h"

CliLive cli_live;

void
cli_assert_poll(const char *iothread, guint64 want, guint ms)
{
    pt_test_qmp_assert_poll_max(cli_live.vm->qmp, "vm-a", iothread, want, ms);
}

void
cli_wait_ticks_pass(guint n)
{
    gint64 now = pt_test_daemon_ticks(cli_live.d);

    g_assert_true(pt_test_wait_ticks(cli_live.d, now + n, 2000));
}

/* ---- running polltunectl ---------------------------------------------- */

/* polltunectl -s SOCKET ARGS... against @d (NULL: the shared daemon). */
void
cli_ctl(CliRun *r, PtTestDaemon *d, const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();

    g_ptr_array_add(argv, (char *)"-s");
    g_ptr_array_add(argv, (d ? d : cli_live.d)->socket_path);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    cli_run(r, (const char *const *)argv->pdata);
}

char *
cli_ctl_ok(const char *const *args)
{
    CliRun r = { 0 };
    char *out;

    cli_ctl(&r, NULL, args);
    if (r.status != 0)
        g_error("polltunectl %s: exit %d, stderr: %s", args[0], r.status, r.err);
    g_assert_cmpstr(r.err, ==, "");
    out = g_steal_pointer(&r.out);
    cli_run_clear(&r);
    return out;
}

json_object *
cli_ctl_json(const char *const *args)
{
    g_autofree char *out = cli_ctl_ok(args);
    json_object *o = json_tokener_parse(out);

    if (!o)
        g_error("polltunectl %s --json: not JSON: %s", args[0], out);
    return o;
}


void
cli_ctl_fails(PtTestDaemon *d, int status, const char *needle, const char *const *args)
{
    CliRun r = { 0 };

    cli_ctl(&r, d, args);
    g_assert_cmpint(r.status, ==, status);
    g_assert_cmpstr(r.out, ==, "");
    if (!g_str_has_prefix(r.err, "polltunectl: ") || !strstr(r.err, needle))
        g_error("polltunectl %s: stderr %s lacks %s", args[0], r.err, needle);
    /* One line. */
    g_assert_cmpint(strchr(r.err, '\n') - r.err, ==, strlen(r.err) - 1);
    cli_run_clear(&r);
}

gboolean
cli_skip_without_qemu(void)
{
    if (!cli_live.qemu_skip)
        return FALSE;
    g_test_skip(cli_live.qemu_skip);
    return TRUE;
}

/*
 * polltuned without G_DEBUG=fatal-warnings: a GLib warning or critical in
 * the daemon would otherwise abort it and fail every later test with an
 * unrelated message.  Its log is checked for them instead, after each test
 * (cli_daemon_log_check()).
 */
PtTestDaemon *
cli_daemon_up(const char *base, const char *own)
{
    g_autofree char *gdebug = g_strdup(g_getenv("G_DEBUG"));
    PtTestDaemon *d;

    g_unsetenv("G_DEBUG");
    d = pt_test_daemon_up_args(NULL, base, own);
    if (gdebug)
        g_setenv("G_DEBUG", gdebug, TRUE);
    return d;
}

/*
 * Fails the test on a GLib warning or critical, or a sanitizer's report,
 * in @d's log.
 */
void
cli_daemon_log_check(PtTestDaemon *d)
{
    g_autofree char *log = NULL;
    g_auto(GStrv) lines = NULL;

    if (!d || !g_file_get_contents(d->log_path, &log, NULL, NULL))
        return;
    lines = g_strsplit(log, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (strstr(*l, "runtime error:") || strstr(*l, "AddressSanitizer"))
            g_error("polltuned logged: %s", *l);
        if (!strstr(*l, "-CRITICAL **") && !strstr(*l, "-WARNING **"))
            continue;
        g_error("polltuned logged: %s", *l);
    }
    /* Reported once; the daemon appends, so it writes on at the start. */
    g_assert_cmpint(truncate(d->log_path, 0), ==, 0);
}

/* The shared QEMU and daemon, started by the first test that needs them. */
gboolean
cli_live_setup(void)
{
    g_autofree char *own = NULL;

    if (cli_skip_without_qemu())
        return FALSE;
    if (cli_live.d)
        return TRUE;
    cli_live.vm = pt_test_vm_start(cli_live.vm_dir, "vm-a", NULL);
    own = g_strdup_printf("[targets]\nqmp-globs = %s/*.qmp\n[policy]\ndefault = static:70000/2/2\n",
                          cli_live.vm_dir);
    cli_live.started_us = g_get_monotonic_time();
    cli_live.d = cli_daemon_up(PT_TEST_CONF_BASE, own);
    g_assert_cmpint(pt_test_wait_target(cli_live.d, "vm-a", 2, TRUE, 5000), >=, 0);
    /* A second of ticks (200 ms each), for show's history. */
    g_assert_true(pt_test_wait_ticks(cli_live.d, 6, 2000));
    cli_assert_poll("iot0", 70000, 3000);
    cli_assert_poll("iot1", 70000, 3000);
    return TRUE;
}

/* Each test, then the shared daemon's log. */
static void
cli_live_run_one(gconstpointer data)
{
    ((void (*)(void))data)();
    cli_daemon_log_check(cli_live.d);
}

void
cli_live_add(const char *path, void (*test)(void))
{
    g_test_add_data_func(path, (gconstpointer)test, cli_live_run_one);
}

int
cli_live_run(const char *const *leftovers)
{
    int rc;

    signal(SIGPIPE, SIG_IGN);
    cli_live.vm_dir = g_dir_make_tmp("pt-cli-vms-XXXXXX", NULL);
    cli_live.tmp_dir = g_dir_make_tmp("pt-cli-daemon-XXXXXX", NULL);
    if (pt_test_have_qemu(&cli_live.qemu_skip))
        g_clear_pointer(&cli_live.qemu_skip, g_free);
    rc = g_test_run();
    g_clear_pointer(&cli_live.d, pt_test_daemon_free);
    g_clear_pointer(&cli_live.vm, pt_test_vm_free);
    g_rmdir(cli_live.vm_dir);
    for (const char *const *l = leftovers; l && *l; l++) {
        g_autofree char *p = g_build_filename(cli_live.tmp_dir, *l, NULL);

        g_unlink(p);
    }
    g_rmdir(cli_live.tmp_dir);
    g_free(cli_live.vm_dir);
    g_free(cli_live.tmp_dir);
    g_free(cli_live.qemu_skip);
    return rc;
}
