/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status-bench: `polltunectl status` on a host with more iothreads than
 * the control socket's reply limit is sized for (QMP_CONTROL_MAX_REPLY,
 * qmp/qmp-stream.h: 4096 at their largest, 8192 at their usual size).
 *
 * Starts --vms QEMU processes (-machine none) of --iothreads iothreads
 * each and polltuned over them in recommend mode with the adaptive
 * policy, so that every iothread's status entry carries what a tuned
 * host's does (its decision, metrics and explanation) without a write to
 * QEMU; waits until the last iothread of the last QEMU has its decision
 * and metrics; then runs `polltunectl status` and `polltunectl --json
 * status` and asks status once more itself, for the reply's size.
 *
 * Prints each one's time, size and exit status.  Fails (exit 1) when
 * either client fails, unless the daemon refused the reply as too large
 * and polltunectl said so, naming the limit: then it says so and exits 3.
 *
 * Usage: status-bench [--vms 2] [--iothreads 4096] [--interval 10s]
 */
#include "pt-test-daemon.h"
#include "qmp-json.h"
#include "qmp-stream.h"
#include "scale-vms.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <glib/gstdio.h>

typedef struct {
    double s;
    gsize out_bytes;
    int status;
    char *err;
} CtlRun;

static void
ctl_run(PtTestDaemon *d, gboolean json, CtlRun *r)
{
    g_autofree char *ctl = g_build_filename(g_getenv("PT_BUILD_ROOT"), "cli", "polltunectl",
                                            NULL);
    const char *argv[] = { ctl, "-s", d->socket_path, json ? "--json" : "status",
                           json ? "status" : NULL, NULL };
    g_autofree char *out = NULL;
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();

    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &r->err,
                      &r->status, &err))
        g_error("%s: %s", ctl, err->message);
    r->s = (g_get_monotonic_time() - t0) / 1e6;
    r->out_bytes = out ? strlen(out) : 0;
    g_print("polltunectl %sstatus: %.1f s, %" G_GSIZE_FORMAT " bytes out, exit %d%s%s",
            json ? "--json " : "", r->s, r->out_bytes, WEXITSTATUS(r->status),
            *r->err ? ", stderr: " : "\n", r->err);
}

static gboolean
decided(json_object *reply, const PtDaemonWait *w)
{
    return pt_json_path(reply, "iothreads/0/last_decision") &&
           pt_json_path(reply, "iothreads/0/metrics");
}

int
main(int argc, char **argv)
{
    gint vms_opt = 2, iothreads_opt = 4096;
    const char *interval_opt = "10s";
    GOptionEntry entries[] = {
        { "vms", 0, 0, G_OPTION_ARG_INT, &vms_opt, "QEMU processes", "N" },
        { "iothreads", 0, 0, G_OPTION_ARG_INT, &iothreads_opt, "iothreads in each", "N" },
        { "interval", 0, 0, G_OPTION_ARG_STRING, &interval_opt, "the daemon's tick", "DURATION" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- polltunectl status, at scale");
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(json_object) st = NULL;
    g_autofree char *dir = NULL, *conf = NULL, *show = NULL;
    CtlRun text = { 0 }, json = { 0 };
    GArray *vms;
    guint total;
    gsize reply = 0, largest = 0, listed = 0;
    gint64 t0, deadline;
    double load[3] = { 0 };
    int rc;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err) || vms_opt < 1 || iothreads_opt < 1) {
        g_printerr("%s\n", err ? err->message : "--vms and --iothreads are at least 1");
        return 2;
    }
    if (!scale_bench_ready("status-bench", argv[0]))
        return 77;
    total = (guint)vms_opt * (guint)iothreads_opt;
    dir = g_dir_make_tmp("pt-status-XXXXXX", &err);
    g_assert_no_error(err);

    t0 = g_get_monotonic_time();
    vms = scale_vms_start(dir, (guint)vms_opt, (guint)iothreads_opt);
    g_print("%d QEMU x %d iothreads started in %.1f s\n", vms_opt, iothreads_opt,
            (g_get_monotonic_time() - t0) / 1e6);

    conf = g_strdup_printf("interval = %s\nmetrics-listen =\nmode = recommend\n"
                           "qmp-timeout = 30s\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = adaptive\nmin-dwell = 0\n",
                           interval_opt, dir);
    d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
    t0 = g_get_monotonic_time();
    deadline = t0 + (gint64)pt_test_wait_ms(600000) * 1000;
    show = g_strdup_printf("{\"target\": \"vm-%03d\", \"iothread\": \"iot%d\", \"ticks\": 1}",
                           vms_opt - 1, iothreads_opt - 1);
    for (;;) {
        g_autoptr(json_object) r = pt_test_daemon_call(d, "show", show, NULL);

        if (r && decided(pt_json_path(r, "return"), NULL))
            break;
        if (g_get_monotonic_time() > deadline)
            g_error("vm-%03d/iot%d has no decision after %.0f s", vms_opt - 1,
                    iothreads_opt - 1, (g_get_monotonic_time() - t0) / 1e6);
        g_usleep(500000);
    }
    g_print("all %u attached and decided in %.1f s\n", total,
            (g_get_monotonic_time() - t0) / 1e6);

    if (getloadavg(load, 3) < 0)
        load[0] = -1;
    ctl_run(d, FALSE, &text);
    ctl_run(d, TRUE, &json);
    st = pt_test_daemon_call(d, "status", NULL, &err);
    g_assert_no_error(err);
    reply = strlen(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN));
    for (guint v = 0; pt_json_path(st, "return") && v < (guint)vms_opt; v++) {
        g_autofree char *path = g_strdup_printf("return/targets/%u/iothreads", v);
        json_object *ios = pt_json_path(st, path);

        for (size_t i = 0; ios && i < json_object_array_length(ios); i++, listed++)
            largest = MAX(largest, strlen(json_object_to_json_string_ext(
                                              json_object_array_get_idx(ios, i),
                                              JSON_C_TO_STRING_PLAIN)));
    }
    g_print("status reply: %" G_GSIZE_FORMAT " bytes (%.1f MiB of the %d MiB limit) for %"
            G_GSIZE_FORMAT " of %u iothreads, %" G_GSIZE_FORMAT " bytes each at most, "
            "load average %.1f\n", reply, reply / 1048576.0, QMP_CONTROL_MAX_REPLY >> 20,
            listed, total, largest, load[0]);

    rc = text.status == 0 && json.status == 0 && listed == total ? 0 : 1;
    /* Refused as too large: the client must say so, naming the limit. */
    if (rc && pt_json_path(st, "error") && strstr(json.err, "MiB a reply may be"))
        rc = 3;
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    scale_vms_free(vms, dir);
    g_rmdir(dir);
    g_free(text.err);
    g_free(json.err);
    return rc;
}
