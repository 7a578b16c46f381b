/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * restore-bench: a stop puts every original back, in time, at scale.
 *
 * Starts --vms QEMU processes (-machine none) of --iothreads iothreads
 * each, every one with a monitor for the daemon and one for the bench;
 * runs polltuned in enforce mode with static:60000/2/2, which changes all
 * three knobs of every iothread; waits until QEMU itself reports the
 * policy's triple on each; then stops the daemon (SIGTERM) and reads every
 * iothread back through the bench's own monitors.
 *
 * Prints how long the QEMUs took to start, the writes the stop had to
 * make, how long it took against the deadline the daemon gave it (logged
 * at the stop), and how many iothreads were left changed.  Fails (exit 1)
 * when any was, or when the daemon said restores did not complete.
 *
 * Usage: restore-bench [--vms 1] [--iothreads 4096] [--interval 1s]
 */
#include "pt-test-daemon.h"
#include "pt-test-qmp.h"
#include "pt-test-qmp-sync.h"
#include "qmp-commands.h"
#include "scale-vms.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <glib/gstdio.h>

#define POLICY_MAX_NS 60000

/* How many iothreads of @vm have poll-max-ns @max_ns, and how many are
 * at QEMU's defaults 32768/0/0. */
static void
vm_count(ScaleVm *vm, guint *at_policy, guint *at_default)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) ios = qmp_query_iothreads_sync(vm->qmp, &err);

    if (!ios)
        g_error("query-iothreads: %s", err->message);
    for (guint i = 0; i < ios->len; i++) {
        QmpIothread *io = ios->pdata[i];

        *at_policy += io->poll_max_ns == POLICY_MAX_NS && io->poll_grow == 2 &&
                      io->poll_shrink == 2;
        *at_default += io->poll_max_ns == 32768 && io->poll_grow == 0 && io->poll_shrink == 0;
    }
}

static void
vms_count(GArray *vms, guint *at_policy, guint *at_default)
{
    *at_policy = *at_default = 0;
    for (guint i = 0; i < vms->len; i++)
        vm_count(&g_array_index(vms, ScaleVm, i), at_policy, at_default);
}

/* The deadline the daemon gave its stop, from its log ("... in N ms"). */
static double
stop_deadline_s(PtTestDaemon *d)
{
    g_autofree char *log = NULL;
    const char *p;

    if (!g_file_get_contents(d->log_path, &log, NULL, NULL) ||
        !(p = strstr(log, "stopping: restoring original values within ")))
        return -1;
    return g_ascii_strtod(p + strlen("stopping: restoring original values within "), NULL) /
           1000.0;
}

int
main(int argc, char **argv)
{
    gint vms_opt = 1, iothreads_opt = 4096;
    const char *interval_opt = "1s";
    GOptionEntry entries[] = {
        { "vms", 0, 0, G_OPTION_ARG_INT, &vms_opt, "QEMU processes", "N" },
        { "iothreads", 0, 0, G_OPTION_ARG_INT, &iothreads_opt, "iothreads in each", "N" },
        { "interval", 0, 0, G_OPTION_ARG_STRING, &interval_opt, "the daemon's tick", "DURATION" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- restore at stop, at scale");
    g_autoptr(GError) err = NULL;
    GArray *vms;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *conf = NULL;
    guint total, at_policy = 0, at_default = 0, late;
    gint64 t0, deadline;
    double start_s, write_s, stop_s, load[3] = { 0 };
    int rc;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || vms_opt < 1 || iothreads_opt < 1) {
        g_printerr("%s\n", err ? err->message : "--vms and --iothreads are at least 1");
        return 2;
    }
    if (!scale_bench_ready("restore-bench", argv[0]))
        return 77;
    total = (guint)vms_opt * (guint)iothreads_opt;
    dir = g_dir_make_tmp("pt-restore-XXXXXX", &err);
    g_assert_no_error(err);

    t0 = g_get_monotonic_time();
    vms = scale_vms_start(dir, (guint)vms_opt, (guint)iothreads_opt);
    start_s = (g_get_monotonic_time() - t0) / 1e6;
    g_print("%d QEMU x %d iothreads started in %.1f s\n", vms_opt, iothreads_opt, start_s);

    /* A sample of thousands of iothreads on a loaded host takes seconds:
     * the tick and qmp-timeout leave it the time. */
    conf = g_strdup_printf("interval = %s\nmetrics-listen =\nmode = enforce\n"
                           "qmp-timeout = 30s\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = static:%u/2/2\nmin-dwell = 0\n",
                           interval_opt, dir, POLICY_MAX_NS);
    d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
    t0 = g_get_monotonic_time();
    deadline = t0 + (gint64)pt_test_wait_ms(600000) * 1000;
    for (;;) {
        vms_count(vms, &at_policy, &at_default);
        if (at_policy == total)
            break;
        if (g_get_monotonic_time() > deadline) {
            g_autofree char *log = NULL;

            if (g_file_get_contents(d->log_path, &log, NULL, NULL))
                g_printerr("%s", log);
            g_error("only %u of %u iothreads written after %.0f s", at_policy, total,
                    (g_get_monotonic_time() - t0) / 1e6);
        }
        g_usleep(200000);
    }
    write_s = (g_get_monotonic_time() - t0) / 1e6;
    g_print("all %u written by the policy in %.1f s\n", total, write_s);

    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    t0 = g_get_monotonic_time();
    rc = pt_test_daemon_stop(d);
    stop_s = (g_get_monotonic_time() - t0) / 1e6;
    vms_count(vms, &at_policy, &at_default);
    late = pt_test_daemon_log_count(d, "did not complete in time");
    g_print("stop: %u writes (3 knobs x %u iothreads) in %.1f s of a %.1f s deadline, "
            "exit %d, load average %.1f\n", total * 3, total, stop_s, stop_deadline_s(d), rc,
            load[0]);
    g_print("after the stop: %u of %u restored, %u left changed; %u lines of restores "
            "late\n", at_default, total, total - at_default, late);

    scale_vms_free(vms, dir);
    g_rmdir(dir);
    return at_default == total && !late && rc == 0 ? 0 : 1;
}
