/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * bench-probe: the CPU the daemon spends to sample one iothread from every
 * host source in one tick, against reading the same files with cat.
 *
 * One tick is what the daemon does per iothread besides talking to QEMU:
 *   thread   stat, status, schedstat of the iothread (name checked);
 *   host     /proc/pressure/cpu and /proc/stat;
 *   debugfs  the VM's exit counters (a copy of a debugfs kvm/<pid>-N
 *            directory in a temporary directory when debugfs has none);
 *   perf     one group read per thread of the QEMU process, after listing
 *            its threads (software events stand in for the kvm tracepoints
 *            where those do not exist: same syscalls);
 *   derive   building both snapshots' records and deriving PolicyMetrics
 *            and PolicyHost.
 * The target is a real QEMU (-machine none, one iothread) when
 * qemu-system-x86_64 is installed, else a thread of this process named
 * like an iothread.
 *
 * The reference runs `cat` on the same files (thread, host, debugfs) once
 * per tick from a shell loop: the cheapest way a script would sample.
 *
 * Usage: bench-probe [ticks]   (default 5000; cat runs ticks/20 times)
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "probe-derive.h"
#include "probe-perf.h"
#include "probe-sampler.h"

static double
cpu_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double
wall_now_us(void)
{
    return g_get_monotonic_time();
}

static double
children_cpu_us(void)
{
    struct rusage ru;

    getrusage(RUSAGE_CHILDREN, &ru);
    return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e6 +
           ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
}

static double
syscall_cost_us(void)
{
    double t0 = cpu_now_us();

    for (int i = 0; i < 100000; i++)
        getppid();
    return (cpu_now_us() - t0) / 100000;
}

/* --- the target: a real QEMU iothread, or one of ours ------------------ */

static GPid qemu_pid;
static gboolean stop_own;

static gpointer
own_iothread(gpointer data)
{
    pthread_setname_np(pthread_self(), "IO iot0");
    while (!g_atomic_int_get(&stop_own))
        g_usleep(10000);
    return NULL;
}

static int
start_target(const char **what)
{
    const char *argv[] = {
        "qemu-system-x86_64", "-machine", "none", "-nodefaults", "-display",
        "none", "-name", "bench,debug-threads=on", "-object",
        "iothread,id=iot0", "-monitor", "none", "-serial", "none", NULL,
    };
    g_autofree char *qemu = g_find_program_in_path(argv[0]);

    if (qemu && g_spawn_async(NULL, (char **)argv, NULL,
                              G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD |
                              G_SPAWN_STDOUT_TO_DEV_NULL |
                              G_SPAWN_STDERR_TO_DEV_NULL,
                              NULL, NULL, &qemu_pid, NULL)) {
        for (int i = 0; i < 500; i++) {
            g_autoptr(GArray) tasks = probe_tasks_list("/proc", qemu_pid, NULL);

            if (tasks && probe_tasks_find_iothread(tasks, "iot0", NULL) > 0) {
                *what = "QEMU -machine none, iothread iot0";
                return qemu_pid;
            }
            g_usleep(10000);
        }
        kill(qemu_pid, SIGKILL);
        waitpid(qemu_pid, NULL, 0);
        qemu_pid = 0;
    }
    g_thread_unref(g_thread_new("own", own_iothread, NULL));
    g_usleep(50000);
    *what = "a thread of this process named 'IO iot0' (no QEMU)";
    return getpid();
}

static void
stop_target(void)
{
    if (qemu_pid > 0) {
        kill(qemu_pid, SIGKILL);
        waitpid(qemu_pid, NULL, 0);
    }
    g_atomic_int_set(&stop_own, TRUE);
}

/* --- debugfs: the real one if it has this VM, else a copy -------------- */

static const char *const kvm_stats[] = {
    "exits", "io_exits", "mmio_exits", "halt_exits", "halt_successful_poll",
    "halt_attempted_poll", "halt_poll_invalid", "halt_wakeup",
    "halt_poll_success_ns", "halt_poll_fail_ns", "halt_wait_ns",
};

static char *
make_debugfs(int pid, char **tmp_dir)
{
    ProbeKvmDebugfs *real = probe_kvm_debugfs_new("/sys/kernel/debug", pid);
    ProbeExitCounters c;
    gboolean ok = probe_kvm_debugfs_read(real, &c, NULL);

    probe_kvm_debugfs_free(real);
    if (ok)
        return g_strdup("/sys/kernel/debug");
    *tmp_dir = g_dir_make_tmp("bench-probe-XXXXXX", NULL);
    for (guint i = 0; i < G_N_ELEMENTS(kvm_stats); i++) {
        g_autofree char *dir = g_strdup_printf("%s/kvm/%d-12", *tmp_dir, pid);
        g_autofree char *file = g_build_filename(dir, kvm_stats[i], NULL);

        g_mkdir_with_parents(dir, 0755);
        g_file_set_contents(file, "1234567\n", -1, NULL);
    }
    return g_strdup(*tmp_dir);
}

static void
remove_debugfs(const char *tmp_dir, int pid)
{
    g_autofree char *dir = NULL;

    if (!tmp_dir)
        return;
    dir = g_strdup_printf("%s/kvm/%d-12", tmp_dir, pid);
    for (guint i = 0; i < G_N_ELEMENTS(kvm_stats); i++) {
        g_autofree char *file = g_build_filename(dir, kvm_stats[i], NULL);

        g_unlink(file);
    }
    g_rmdir(dir);
    dir[strlen(dir) - strlen("/xxxx-12") + 1] = '\0';
    g_free(dir);
    dir = g_build_filename(tmp_dir, "kvm", NULL);
    g_rmdir(dir);
    g_rmdir(tmp_dir);
}

/* --- one tick, timed by part ------------------------------------------- */

typedef struct {
    ProbeTarget *target;
    ProbeHostSampler *host;
    ProbeKvmDebugfs *debugfs;
    ProbePerf *perf;
    ProbeTargetSnap *prev;
    ProbeHostSnap *prev_host;
    int pid;
} Sampler;

static void
part_thread(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host)
{
    if (!probe_target_sample_iothread(s->target,
                                      probe_target_snap_iothread(cur, "iot0"),
                                      0, NULL))
        g_error("sampling the iothread failed");
}

static void
part_host(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host)
{
    probe_host_sampler_sample(s->host, host);
}

static void
part_debugfs(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host)
{
    if (!probe_kvm_debugfs_read(s->debugfs, &cur->exits, NULL))
        g_error("reading debugfs failed");
}

static void
part_perf(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host)
{
    guint64 totals[PROBE_PERF_MAX_EVENTS];

    if (s->perf && !probe_perf_read_totals(s->perf, totals, NULL))
        g_error("reading perf failed");
}

static void
part_derive(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host)
{
    MetricVec block;
    PolicyMetrics m;
    PolicyHost h;

    metric_vec_init(&block);
    block.v[METRIC_RD_OPS] = cur->when_ms * 100;
    probe_iothread_snap_add_device(probe_target_snap_iothread(cur, "iot0"),
                                   "disk0", NULL, &block);
    probe_derive_iothread(s->prev, cur, "iot0", &m);
    probe_derive_host(s->prev_host, host, &h);
}

typedef void (*PartFn)(Sampler *s, ProbeTargetSnap *cur, ProbeHostSnap *host);

enum { PART_THREAD, PART_HOST, PART_DEBUGFS, PART_PERF, PART_DERIVE, N_PARTS };
static const struct {
    const char *name;
    const char *scope;
    PartFn fn;
} parts[N_PARTS] = {
    { "thread", "per iothread", part_thread },
    { "host", "per host", part_host },
    { "debugfs", "per VM", part_debugfs },
    { "perf", "per VM", part_perf },
    { "derive", "per iothread", part_derive },
};

/* Run @n ticks of the parts in @mask; CPU us per tick.  The clock is read
 * twice per run only: here a clock read is a syscall of about 1.5 us. */
static double
run_ticks(Sampler *s, gint64 n, guint mask)
{
    double t0 = cpu_now_us();

    for (gint64 i = 1; i <= n; i++) {
        ProbeTargetSnap *cur = probe_target_snap_new(s->pid, i * 1000000000, i);
        ProbeHostSnap *host = probe_host_snap_new(i * 1000000000, i);

        for (int p = 0; p < N_PARTS; p++)
            if (mask & (1u << p))
                parts[p].fn(s, cur, host);
        probe_target_snap_free(s->prev);
        probe_host_snap_free(s->prev_host);
        s->prev = cur;
        s->prev_host = host;
    }
    return (cpu_now_us() - t0) / n;
}

static char *
cat_files(int pid, int tid, const char *debugfs_root)
{
    GString *s = g_string_new(NULL);

    g_string_append_printf(s, "/proc/%d/task/%d/stat /proc/%d/task/%d/status "
                           "/proc/%d/task/%d/schedstat /proc/pressure/cpu "
                           "/proc/stat", pid, tid, pid, tid, pid, tid);
    for (guint i = 0; i < G_N_ELEMENTS(kvm_stats); i++)
        g_string_append_printf(s, " %s/kvm/%d-12/%s", debugfs_root, pid,
                               kvm_stats[i]);
    return g_string_free(s, FALSE);
}

int
main(int argc, char **argv)
{
    const ProbePerfEvent sw[] = {
        { "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
        { "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS },
    };
    gint64 ticks = argc > 1 ? g_ascii_strtoll(argv[1], NULL, 10) : 5000;
    gint64 cat_runs = MAX(ticks / 20, 10);
    double part_us[N_PARTS] = { 0 };
    g_autofree char *tmp_dir = NULL, *debugfs_root = NULL, *files = NULL;
    g_autofree char *script = NULL;
    g_autoptr(GError) error = NULL;
    const char *what, *perf_what = "kvm tracepoints";
    Sampler s = { 0 };
    ProbeRoots roots = { 0 };
    double c0, w0, probe_cpu, probe_wall, cat_cpu, cat_wall, syscall_us;
    double per_iothread = 0;
    int status;

    s.pid = start_target(&what);
    debugfs_root = make_debugfs(s.pid, &tmp_dir);
    roots.debugfs = debugfs_root;
    s.target = probe_target_new(&roots, s.pid);
    s.host = probe_host_sampler_new(&roots);
    s.debugfs = probe_kvm_debugfs_new(debugfs_root, s.pid);
    s.perf = probe_perf_new_kvm("/proc", NULL, s.pid, NULL);
    if (!s.perf) {
        perf_what = "software events standing in for kvm tracepoints";
        s.perf = probe_perf_new("/proc", s.pid, sw, G_N_ELEMENTS(sw), &error);
        if (!s.perf)
            perf_what = error->message;
    }

    run_ticks(&s, 10, ~0u);         /* warm: resolve the tid, fill caches */
    w0 = wall_now_us();
    probe_cpu = run_ticks(&s, ticks, ~0u);
    probe_wall = (wall_now_us() - w0) / ticks;
    for (int p = 0; p < N_PARTS; p++)
        part_us[p] = run_ticks(&s, ticks, 1u << p);
    syscall_us = syscall_cost_us();

    files = cat_files(s.pid, probe_target_iothread_tid(s.target, "iot0"),
                      debugfs_root);
    script = g_strdup_printf("i=0; while [ $i -lt %" G_GINT64_FORMAT " ]; do "
                             "cat %s >/dev/null; i=$((i+1)); done",
                             cat_runs, files);
    c0 = children_cpu_us();
    w0 = wall_now_us();
    if (!g_spawn_sync(NULL, (char *[]){ "/bin/sh", "-c", script, NULL }, NULL,
                      0, NULL, NULL, NULL, NULL, &status, &error))
        g_error("cat loop: %s", error->message);
    cat_cpu = (children_cpu_us() - c0) / cat_runs;
    cat_wall = (wall_now_us() - w0) / cat_runs;

    printf("target: %s (pid %d)\n", what, s.pid);
    printf("debugfs: %s; perf: %s, %u threads\n",
           tmp_dir ? "temporary copy (no KVM here)" : debugfs_root, perf_what,
           s.perf ? probe_perf_n_threads(s.perf) : 0);
    printf("syscall cost here: %.2f us (getppid)\n", syscall_us);
    printf("probe: %" G_GINT64_FORMAT " ticks of a VM with one iothread, "
           "%.1f us CPU per tick (wall %.1f us); goal <= 100 us\n", ticks,
           probe_cpu, probe_wall);
    for (int p = 0; p < N_PARTS; p++) {
        printf("  %-8s %6.1f us  (%s)\n", parts[p].name, part_us[p],
               parts[p].scope);
        if (g_str_equal(parts[p].scope, "per iothread"))
            per_iothread += part_us[p];
    }
    printf("  each further iothread of the VM: %.1f us\n", per_iothread);
    printf("cat: %" G_GINT64_FORMAT " runs over the same %u files, %.1f us CPU "
           "per tick (wall %.1f us)\n", cat_runs,
           5 + (guint)G_N_ELEMENTS(kvm_stats), cat_cpu, cat_wall);
    printf("ratio cat/probe: CPU %.1fx, wall %.1fx\n", cat_cpu / probe_cpu,
           cat_wall / probe_wall);

    probe_perf_free(s.perf);
    probe_kvm_debugfs_free(s.debugfs);
    probe_host_sampler_free(s.host);
    probe_target_free(s.target);
    probe_target_snap_free(s.prev);
    probe_host_snap_free(s.prev_host);
    stop_target();
    remove_debugfs(tmp_dir, s.pid);
    return 0;
}
