/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * scale-bench: what polltuned costs the host as the number of VMs grows.
 *
 * Starts the largest N of QEMU processes (-machine none, 2 iothreads and a
 * null-co drive each, each with a QMP socket for the daemon), then for each
 * N runs one polltuned at a 1 s tick in enforce mode with a static policy
 * over the first N, waits until all are attached, and measures over the
 * window: daemon CPU (utime+stime from /proc/PID/stat), RSS (VmRSS, VmHWM)
 * and the ticks of the window only, from the difference of the daemon's
 * tick histogram at its two ends: the share of ticks under 100 ms (exact:
 * a bucket ends there), p50/p99 interpolated within buckets as Prometheus'
 * histogram_quantile does, and the share of tick time spent waiting for
 * the VMs' answers.
 *
 * In the same run, raw-qmp-poller polls the same N monitors with the same
 * queries and /proc reads for as long, twice: one VM after the other
 * (the minimal client; the CPU ratio daemon/raw is against it), then all
 * VMs at once (the least a tick that asks every VM concurrently can take
 * on this host; the tick ratio daemon/raw is against it).
 *
 * Usage: scale-bench [--counts 10,50,100] [--seconds 60] [--warmup 5]
 */
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"
#include "qmp-json.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef struct {
    double cpu_pct, rss_mb, hwm_mb;
    double rss_growth;      /* MB per minute over the window */
} ProcUse;

/* utime+stime of @pid in seconds. */
static double
proc_cpu_s(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", pid);
    g_autofree char *text = NULL;
    g_auto(GStrv) f = NULL;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strrchr(text, ')')))
        g_error("%s: cannot read", path);
    /* Fields after the command: state is field 3, utime 14, stime 15. */
    f = g_strsplit(p + 2, " ", 0);
    return (g_ascii_strtod(f[11], NULL) + g_ascii_strtod(f[12], NULL)) /
           sysconf(_SC_CLK_TCK);
}

static double
proc_status_mb(GPid pid, const char *key)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/status", pid);
    g_autofree char *text = NULL;
    const char *p;

    if (!g_file_get_contents(path, &text, NULL, NULL) || !(p = strstr(text, key)))
        return -1;
    return g_ascii_strtod(p + strlen(key) + 1, NULL) / 1024.0;
}

/* Watch @pid for @seconds and report its CPU share of one core. */
static void
proc_measure(GPid pid, guint seconds, ProcUse *use)
{
    gint64 t0 = g_get_monotonic_time();
    double c0 = proc_cpu_s(pid);
    double rss0 = proc_status_mb(pid, "VmRSS:");
    double c1;

    g_usleep((gulong)seconds * G_USEC_PER_SEC);
    c1 = proc_cpu_s(pid);
    use->cpu_pct = 100.0 * (c1 - c0) / ((g_get_monotonic_time() - t0) / 1e6);
    use->rss_mb = proc_status_mb(pid, "VmRSS:");
    use->hwm_mb = proc_status_mb(pid, "VmHWM:");
    use->rss_growth = (use->rss_mb - rss0) * 60.0 / seconds;
}

typedef struct {
    PtTestDaemon *d;
    guint n;
} AttachWait;

static gboolean
all_attached(gpointer data)
{
    AttachWait *w = data;
    g_autoptr(json_object) st = pt_test_daemon_ok(w->d, "status", NULL);
    json_object *tl = pt_json_path(st, "targets");
    guint ok = 0;

    for (size_t i = 0; i < json_object_array_length(tl); i++) {
        json_object *t = json_object_array_get_idx(tl, i);

        if (g_strcmp0(pt_json_path_str(t, "state"), "attached") == 0 &&
            json_object_array_length(pt_json_path(t, "iothreads")) == 2)
            ok++;
    }
    return ok == w->n;
}

/* One value from the daemon's OpenMetrics text, or -1. */
static double
metric_value(const char *text, const char *series)
{
    g_autofree char *needle = g_strdup_printf("\n%s ", series);
    const char *p = strstr(text, needle);

    return p ? g_ascii_strtod(p + strlen(needle), NULL) : -1;
}

/* The daemon's tick histogram and wait/work counters at one instant. */
typedef struct {
    double le[32];
    double cum[32];
    guint n;                /* buckets, +Inf last */
    double wait_s, work_s;
} TickHist;

static void
tick_hist_read(PtTestDaemon *d, TickHist *h)
{
    g_autoptr(json_object) m = pt_test_daemon_ok(d, "metrics", NULL);
    const char *text = pt_json_path_str(m, "text");
    static const char prefix[] = "\npolltune_tick_duration_seconds_bucket{le=\"";
    const char *p;

    if (!text)
        g_error("metrics: unexpected reply %s", json_object_to_json_string(m));
    memset(h, 0, sizeof(*h));
    for (p = strstr(text, prefix); p && h->n < G_N_ELEMENTS(h->le);
         p = strstr(p + 1, prefix)) {
        const char *v = p + strlen(prefix);

        h->le[h->n] = g_str_has_prefix(v, "+Inf") ? INFINITY : g_ascii_strtod(v, NULL);
        h->cum[h->n++] = g_ascii_strtod(strstr(v, "} ") + 2, NULL);
    }
    if (h->n == 0 || !isinf(h->le[h->n - 1]))
        g_error("metrics: no tick histogram");
    h->wait_s = metric_value(text, "polltune_tick_wait_seconds_total");
    h->work_s = metric_value(text, "polltune_tick_work_seconds_total");
}

/* Quantile @q of the ticks between @a and @b, linear within a bucket. */
static double
tick_hist_quantile(const TickHist *a, const TickHist *b, double q)
{
    double total = b->cum[b->n - 1] - a->cum[a->n - 1];
    double rank = q * total, below = 0, lo = 0;

    for (guint i = 0; i < b->n; i++) {
        double c = b->cum[i] - a->cum[i];

        if (c >= rank && c > below) {
            if (isinf(b->le[i]))
                return lo;      /* past the last bound: say the bound */
            return lo + (b->le[i] - lo) * (rank - below) / (c - below);
        }
        below = c;
        lo = b->le[i];
    }
    return lo;
}

/* Share of the ticks between @a and @b at most @le seconds long. */
static double
tick_hist_share(const TickHist *a, const TickHist *b, double le)
{
    double total = b->cum[b->n - 1] - a->cum[a->n - 1];

    for (guint i = 0; i < b->n; i++)
        if (fabs(b->le[i] - le) < 1e-9)
            return total > 0 ? (b->cum[i] - a->cum[i]) / total : 0;
    g_error("tick histogram has no bucket at %g s", le);
}

typedef struct {
    ProcUse use;
    double p50_ms, p99_ms, under_pct, wait_pct, ticks;
    double overruns;
    double attach_s;
} DaemonRun;

static void
run_daemon(const char *glob_dir, guint n, guint warmup, guint seconds, DaemonRun *out)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *conf = g_strdup_printf(
        "interval = 1s\nmode = enforce\nmetrics-listen =\n"
        "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
        "[policy]\ndefault = static:50000/2/2\n", glob_dir);
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(json_object) m = NULL;
    TickHist h0, h1;
    AttachWait w;
    gint64 t0 = g_get_monotonic_time();
    const char *text;

    d = pt_test_daemon_start(conf, &err);
    if (!d)
        g_error("polltuned: %s", err->message);
    w = (AttachWait){ d, n };
    if (!pt_test_wait(all_attached, &w, 120000)) {
        g_autoptr(json_object) late = pt_test_daemon_ok(d, "status", NULL);
        json_object *tl = pt_json_path(late, "targets");

        for (size_t i = 0; i < json_object_array_length(tl); i++) {
            json_object *t = json_object_array_get_idx(tl, i);

            if (g_strcmp0(pt_json_path_str(t, "state"), "attached") != 0)
                g_printerr("%s: %s (%s)\n", pt_json_path_str(t, "name"),
                           pt_json_path_str(t, "state"), pt_json_path_str(t, "state_reason"));
        }
        g_error("polltuned did not attach %u targets within 120 s", n);
    }
    out->attach_s = (g_get_monotonic_time() - t0) / 1e6;
    g_usleep((gulong)warmup * G_USEC_PER_SEC);
    tick_hist_read(d, &h0);
    proc_measure(d->pid, seconds, &out->use);
    tick_hist_read(d, &h1);
    m = pt_test_daemon_ok(d, "metrics", NULL);
    text = pt_json_path_str(m, "text");
    out->ticks = h1.cum[h1.n - 1] - h0.cum[h0.n - 1];
    out->p50_ms = 1000 * tick_hist_quantile(&h0, &h1, 0.50);
    out->p99_ms = 1000 * tick_hist_quantile(&h0, &h1, 0.99);
    out->under_pct = 100 * tick_hist_share(&h0, &h1, 0.1);
    out->wait_pct = 100 * (h1.wait_s - h0.wait_s) /
                    MAX(h1.wait_s - h0.wait_s + h1.work_s - h0.work_s, 1e-9);
    out->overruns = metric_value(text, "polltune_tick_overruns_total");
    if (pt_test_daemon_stop(d) != 0)
        g_printerr("polltuned did not exit cleanly; log in %s\n", d->log_path);
}

typedef struct {
    ProcUse use;
    double p50_ms, p99_ms, under_pct;
} RawRun;

static void
run_raw(const char *poller, gboolean concurrent, GPtrArray *qemus, GPtrArray *socks,
        guint n, guint seconds, RawRun *out)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    g_autoptr(GIOChannel) ch = NULL;
    g_autofree char *line = NULL;
    GPid pid;
    int out_fd, status;

    g_ptr_array_add(argv, g_strdup(poller));
    if (concurrent)
        g_ptr_array_add(argv, g_strdup("--concurrent"));
    g_ptr_array_add(argv, g_strdup_printf("%u", seconds + 2));
    for (guint i = 0; i < n; i++)
        g_ptr_array_add(argv, g_strdup_printf("%d:%s", ((PtTestQemu *)qemus->pdata[i])->pid,
                                              (char *)socks->pdata[i]));
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_async_with_pipes(NULL, (char **)argv->pdata, NULL, G_SPAWN_DO_NOT_REAP_CHILD,
                                  NULL, NULL, &pid, NULL, &out_fd, NULL, &err))
        g_error("%s: %s", poller, err->message);
    ch = g_io_channel_unix_new(out_fd);
    g_io_channel_set_close_on_unref(ch, TRUE);
    if (g_io_channel_read_line(ch, &line, NULL, NULL, NULL) != G_IO_STATUS_NORMAL ||
        !g_str_has_prefix(line, "ready"))
        g_error("raw-qmp-poller did not connect");
    proc_measure(pid, seconds, &out->use);
    g_clear_pointer(&line, g_free);
    if (g_io_channel_read_line(ch, &line, NULL, NULL, NULL) != G_IO_STATUS_NORMAL ||
        sscanf(line, "ok %*d %*d %lf %lf %lf", &out->p50_ms, &out->p99_ms,
               &out->under_pct) != 3)
        g_error("raw-qmp-poller: unexpected result %s", line ? line : "(none)");
    waitpid(pid, &status, 0);
    g_spawn_close_pid(pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        g_error("raw-qmp-poller failed (status %d)", status);
}

int
main(int argc, char **argv)
{
    g_autofree char *counts_opt = g_strdup("10,50,100");
    gint seconds = 60, warmup = 5;
    GOptionEntry entries[] = {
        { "counts", 0, 0, G_OPTION_ARG_STRING, &counts_opt, "VM counts to measure", "N,N,..." },
        { "seconds", 0, 0, G_OPTION_ARG_INT, &seconds, "measurement window per run", "S" },
        { "warmup", 0, 0, G_OPTION_ARG_INT, &warmup, "seconds after attach before measuring", "S" },
        { NULL }
    };
    g_autoptr(GOptionContext) ctx = g_option_context_new("- polltuned cost against VM count");
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) qemus = g_ptr_array_new_with_free_func((GDestroyNotify)pt_test_qemu_free);
    g_autoptr(GPtrArray) socks = g_ptr_array_new_with_free_func(g_free);
    g_autofree char *self_dir = g_path_get_dirname(argv[0]);
    g_autofree char *poller = g_build_filename(self_dir, "raw-qmp-poller", NULL);
    g_autofree char *dir = NULL;
    g_autofree char *why = NULL;
    g_auto(GStrv) counts = NULL;
    guint max_n = 0;
    double qemu_rss = 0;

    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        g_printerr("%s\n", err->message);
        return 2;
    }
    if (!pt_test_have_qemu(&why)) {
        g_printerr("scale-bench: %s\n", why);
        return 77;
    }
    if (!g_getenv("PT_BUILD_ROOT")) {
        g_autofree char *root = g_build_filename(self_dir, "..", "..", NULL);

        g_setenv("PT_BUILD_ROOT", root, TRUE);
    }
    counts = g_strsplit(counts_opt, ",", 0);
    for (guint i = 0; counts[i]; i++)
        max_n = MAX(max_n, (guint)g_ascii_strtoull(counts[i], NULL, 10));
    dir = g_dir_make_tmp("pt-scale-XXXXXX", &err);
    g_assert_no_error(err);

    g_print("starting %u QEMU processes (-machine none, 2 iothreads, 1 null-co drive)\n", max_n);
    for (guint i = 0; i < max_n; i++) {
        g_autofree char *sock = g_strdup_printf("%s/vm-%03u.qmp", dir, i);
        g_autofree char *qmp = g_strdup_printf("unix:%s,server=on,wait=off", sock);
        g_autofree char *name = g_strdup_printf("vm-%03u", i);
        const char *args[] = { "-name", name,
                               "-object", "iothread,id=iot0", "-object", "iothread,id=iot1",
                               "-drive", "driver=null-co,if=none,id=drive0",
                               "-qmp", qmp, NULL };
        PtTestQemu *q = pt_test_qemu_start(args, &err);

        if (!q)
            g_error("QEMU %u: %s", i, err->message);
        g_ptr_array_add(qemus, q);
        if (kill(q->pid, 0) < 0)
            g_error("QEMU %u exited right after start", i);
        g_ptr_array_add(socks, g_steal_pointer(&sock));
        qemu_rss += proc_status_mb(q->pid, "VmRSS:");
    }
    g_print("QEMU RSS: %.1f MB each on average\n\n", qemu_rss / max_n);
    g_print("interval 1 s, mode enforce, policy static:50000/2/2, window %d s after %d s warm-up\n"
            "tick figures are of the window's ticks only (p50/p99 interpolated in the daemon's\n"
            "histogram buckets); <=100 ms is the share of ticks or rounds of at most 100 ms;\n"
            "waiting is the share of tick time spent waiting for the VMs' answers\n\n",
            seconds, warmup);
    for (guint c = 0; counts[c]; c++) {
        guint n = (guint)g_ascii_strtoull(counts[c], NULL, 10);
        g_autofree char *glob_dir = g_strdup_printf("%s/n%u", dir, n);
        DaemonRun dr = { 0 };
        RawRun seq = { 0 }, conc = { 0 };

        /* The daemon's glob sees only the first N monitors. */
        g_mkdir(glob_dir, 0700);
        for (guint i = 0; i < n; i++) {
            g_autofree char *link = g_strdup_printf("%s/vm-%03u.qmp", glob_dir, i);

            if (symlink(socks->pdata[i], link) < 0)
                g_error("%s: %s", link, g_strerror(errno));
        }
        run_daemon(glob_dir, n, (guint)warmup, (guint)seconds, &dr);
        run_raw(poller, FALSE, qemus, socks, n, (guint)seconds, &seq);
        run_raw(poller, TRUE, qemus, socks, n, (guint)seconds, &conc);
        g_print("N=%u (all attached after %.1f s)\n", n, dr.attach_s);
        g_print("  polltuned  cpu %5.2f %%  rss %.1f MB (hwm %.1f, %+.2f MB/min)  %.0f ticks: "
                "p50 %.1f ms  p99 %.1f ms  <=100 ms %.1f %%  waiting %.0f %%  overruns %.0f\n",
                dr.use.cpu_pct, dr.use.rss_mb, dr.use.hwm_mb, dr.use.rss_growth, dr.ticks,
                dr.p50_ms, dr.p99_ms, dr.under_pct, dr.wait_pct, dr.overruns);
        g_print("  raw seq    cpu %5.2f %%  round p50 %.1f ms  p99 %.1f ms  <=100 ms %.1f %%\n",
                seq.use.cpu_pct, seq.p50_ms, seq.p99_ms, seq.under_pct);
        g_print("  raw conc   cpu %5.2f %%  round p50 %.1f ms  p99 %.1f ms  <=100 ms %.1f %%\n",
                conc.use.cpu_pct, conc.p50_ms, conc.p99_ms, conc.under_pct);
        g_print("  ratios     cpu daemon/raw seq %.2f  tick daemon/raw conc p50 %.2f  p99 %.2f\n\n",
                seq.use.cpu_pct > 0 ? dr.use.cpu_pct / seq.use.cpu_pct : 0,
                conc.p50_ms > 0 ? dr.p50_ms / conc.p50_ms : 0,
                conc.p99_ms > 0 ? dr.p99_ms / conc.p99_ms : 0);
        for (guint i = 0; i < n; i++) {
            g_autofree char *link = g_strdup_printf("%s/vm-%03u.qmp", glob_dir, i);

            g_unlink(link);
        }
        g_rmdir(glob_dir);
    }
    g_print("\ngoals at N=100: cpu <= 2%% of one core, RSS <= 30 MB, p99 tick <= 100 ms "
            "(<=100 at least 99%%)\n");
    g_ptr_array_set_size(qemus, 0);
    for (guint i = 0; i < socks->len; i++)
        g_unlink(socks->pdata[i]);
    g_rmdir(dir);
    return 0;
}
