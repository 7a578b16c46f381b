/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The /proc, PSI, debugfs and tracefs readers on fixture trees. */
#include <math.h>
#include <unistd.h>

#include "probe-exits.h"
#include "probe-host.h"
#include "probe-perf.h"
#include "probe-read.h"
#include "probe-test.h"
#include "probe-thread.h"

static void
test_parse_u64(void)
{
    const char *p;
    guint64 v;
    double d;

    p = "  18446744073709551615x";
    g_assert_true(probe_parse_u64(&p, &v));
    g_assert_cmpuint(v, ==, G_MAXUINT64);
    g_assert_cmpstr(p, ==, "x");
    p = "18446744073709551616";
    g_assert_false(probe_parse_u64(&p, &v));
    g_assert_cmpstr(p, ==, "18446744073709551616");
    p = "-1";
    g_assert_false(probe_parse_u64(&p, &v));
    p = "";
    g_assert_false(probe_parse_u64(&p, &v));
    p = "49.67 ";
    g_assert_true(probe_parse_udouble(&p, &d));
    g_assert_cmpfloat_with_epsilon(d, 49.67, 1e-9);
    p = "3.";
    g_assert_false(probe_parse_udouble(&p, &d));
}

static void
test_file_read_limits(void)
{
    g_autofree char *dir = g_dir_make_tmp("probe-read-XXXXXX", NULL);
    g_autofree char *big = g_build_filename(dir, "big", NULL);
    g_autofree char *nul = g_build_filename(dir, "nul", NULL);
    g_autofree char *text = g_strnfill(10000, '7');
    g_autoptr(GError) error = NULL;
    ProbeBuf buf = { 0 };

    g_assert_true(g_file_set_contents(big, text, -1, NULL));
    g_assert_true(probe_file_read(big, &buf, 1 << 20, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(buf.len, ==, 10000);
    g_assert_false(probe_file_read(big, &buf, 4096, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);

    g_assert_true(g_file_set_contents(nul, "12\0 34", 6, NULL));
    g_assert_true(probe_file_read(nul, &buf, 4096, &error));
    g_assert_cmpstr(buf.data, ==, "12");

    g_assert_false(probe_file_read("/nonexistent/probe", &buf, 4096, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_nonnull(strstr(error->message, "/nonexistent/probe"));
    probe_buf_clear(&buf);
    probe_buf_clear(&buf);
    probe_test_rmtree(dir);
}

/* The sampler's read of one thread (probe-sampler.c), once. */
static gboolean
thread_read(const char *proc_root, int pid, int tid, ProbeBuf *buf, ProbeThreadCounters *out,
            GError **error)
{
    ProbeThreadFiles f;
    gboolean ok;

    probe_thread_files_init(&f, proc_root, pid, tid);
    ok = probe_thread_files_read(&f, buf, out, error);
    probe_thread_files_clear(&f);
    return ok;
}

static void
test_thread_good(void)
{
    const char *proc = probe_test_fixture("proc-good");
    g_autoptr(GError) error = NULL;
    ProbeThreadCounters c;
    ProbeBuf buf = { 0 };

    g_assert_true(thread_read(proc, 100, 101, &buf, &c, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(c.comm, ==, "IO iothread1");
    g_assert_cmpint(c.v.v[METRIC_UTIME_TICKS], ==, 1234);
    g_assert_cmpint(c.v.v[METRIC_STIME_TICKS], ==, 567);
    g_assert_cmpint(c.v.v[METRIC_CTX_VOL], ==, 40000);
    g_assert_cmpint(c.v.v[METRIC_CTX_INVOL], ==, 321);
    g_assert_true(probe_thread_counters_have_schedstat(&c));
    g_assert_cmpint(c.v.v[METRIC_CPU_NS], ==, 18010000000);
    g_assert_cmpint(c.v.v[METRIC_RUNQ_WAIT_NS], ==, 25000000);

    g_assert_true(thread_read(proc, 100, 104, &buf, &c, &error));
    g_assert_false(thread_read(proc, 100, -1, &buf, &c, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_clear_error(&error);
    /* A thread of another process is not ours even if its tid exists. */
    g_assert_false(thread_read(proc, 999, 101, &buf, &c, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_clear_error(&error);

    g_assert_false(thread_read(proc, 100, 999, &buf, &c, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    probe_buf_clear(&buf);
}

static void
test_thread_old_kernel(void)
{
    g_autoptr(GError) error = NULL;
    ProbeThreadCounters c;
    ProbeBuf buf = { 0 };

    g_assert_true(thread_read(probe_test_fixture("proc-old"), 300, 301,
                                    &buf, &c, &error));
    g_assert_no_error(error);
    g_assert_false(probe_thread_counters_have_schedstat(&c));
    g_assert_cmpint(c.v.v[METRIC_UTIME_TICKS] + c.v.v[METRIC_STIME_TICKS], ==, 10);
    probe_buf_clear(&buf);
}

static void
test_thread_malformed(void)
{
    const char *proc = probe_test_fixture("proc-bad");
    static const int bad[] = { 201, 202, 203, 204, 211 };
    g_autoptr(GError) error = NULL;
    ProbeThreadCounters c;
    ProbeBuf buf = { 0 };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_autofree char *tid = g_strdup_printf("/%d/", bad[i]);

        g_assert_false(thread_read(proc, 200, bad[i], &buf, &c, &error));
        g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
        /* The message names the file. */
        g_assert_nonnull(strstr(error->message, tid));
        g_clear_error(&error);
    }

    /* Bad or all-zero schedstat: CPU time from stat, no run delay. */
    g_assert_true(thread_read(proc, 200, 205, &buf, &c, &error));
    g_assert_false(probe_thread_counters_have_schedstat(&c));
    g_assert_cmpint(c.v.v[METRIC_UTIME_TICKS], ==, 7);
    g_assert_true(thread_read(proc, 200, 206, &buf, &c, &error));
    g_assert_false(probe_thread_counters_have_schedstat(&c));

    g_assert_true(thread_read(proc, 200, 209, &buf, &c, &error));
    g_assert_no_error(error);
    g_assert_cmpstr(c.comm, ==, "IO a) (b");
    g_assert_cmpint(c.v.v[METRIC_UTIME_TICKS], ==, 11);
    g_assert_cmpint(c.v.v[METRIC_STIME_TICKS], ==, 22);

    /* G_MAXUINT64 parses (the vector clamps it); one more does not. */
    g_assert_false(thread_read(proc, 200, 210, &buf, &c, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_assert_nonnull(strstr(error->message, "nonvoluntary"));
    g_clear_error(&error);
    g_assert_true(probe_thread_parse_stat(
        "1 (x) R 1 1 1 0 -1 0 0 0 0 0 18446744073709551615 0 0", "t", &c, &error));
    g_assert_cmpint(c.v.v[METRIC_UTIME_TICKS], ==, G_MAXINT64);
    probe_buf_clear(&buf);
}

static void
test_tasks(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) good = probe_tasks_list(probe_test_fixture("proc-good"),
                                              100, &error);
    g_autoptr(GArray) bad = NULL;
    char comm[PROBE_COMM_MAX];
    guint index, n_vcpus = 0;

    g_assert_no_error(error);
    g_assert_cmpuint(good->len, ==, 7);
    g_assert_cmpint(probe_tasks_find_iothread(good, "iothread1", &error), ==, 101);
    g_assert_cmpint(probe_tasks_find_iothread(good, "iothread2", &error), ==, 102);
    /* The kernel keeps 15 bytes of a name: long ids match on those. */
    probe_iothread_comm("averyveryverylongid", comm);
    g_assert_cmpstr(comm, ==, "IO averyveryver");
    g_assert_cmpint(probe_tasks_find_iothread(good, "averyveryverylongid", &error),
                    ==, 105);
    g_assert_no_error(error);
    g_assert_cmpint(probe_tasks_find_iothread(good, "iothread9", &error), ==, 0);
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_nonnull(strstr(error->message, "iothread9"));
    g_clear_error(&error);

    for (guint i = 0; i < good->len; i++)
        if (probe_comm_is_vcpu(g_array_index(good, ProbeTask, i).comm, &index))
            n_vcpus++;
    g_assert_cmpuint(n_vcpus, ==, 2);
    g_assert_true(probe_comm_is_vcpu("CPU 12/TCG", &index));
    g_assert_cmpuint(index, ==, 12);
    g_assert_false(probe_comm_is_vcpu("CPU 1/KVMx", NULL));
    g_assert_false(probe_comm_is_vcpu("CPU /KVM", NULL));
    g_assert_false(probe_comm_is_vcpu("IO iothread1", NULL));

    /* Non-numeric entries are skipped; duplicate names are ambiguous. */
    bad = probe_tasks_list(probe_test_fixture("proc-bad"), 200, &error);
    g_assert_no_error(error);
    g_assert_cmpint(probe_tasks_find_iothread(bad, "dup", &error), ==, 0);
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);
    g_assert_null(probe_tasks_list(probe_test_fixture("proc-good"), 4242, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
}

/* The host sampler's read (probe-sampler.c) of @proc_root's pressure/cpu
 * into @psi, or of its stat into @stat. */
static gboolean
host_read(const char *proc_root, ProbeBuf *buf, ProbePsi *psi, ProbeCpuStat *stat,
          GError **error)
{
    ProbeFile f;
    gboolean ok;

    probe_file_init(&f, g_strdup_printf(psi ? "%s/pressure/cpu" : "%s/stat", proc_root));
    ok = psi ? probe_psi_reread(&f, buf, psi, error) : probe_cpu_stat_reread(&f, buf, stat, error);
    probe_file_clear(&f);
    return ok;
}

static void
test_psi(void)
{
    g_autoptr(GError) error = NULL;
    ProbePsi psi;
    ProbeBuf buf = { 0 };

    g_assert_true(host_read(probe_test_fixture("proc-good"), &buf, &psi, NULL, &error));
    g_assert_no_error(error);
    g_assert_cmpfloat_with_epsilon(psi.some_avg10, 12.5, 1e-9);
    g_assert_cmpuint(psi.some_total_us, ==, 17968768);
    g_assert_true(psi.have_full);
    g_assert_cmpuint(psi.full_total_us, ==, 0);

    g_assert_true(host_read(probe_test_fixture("proc-old"), &buf, &psi, NULL, &error));
    g_assert_false(psi.have_full);
    g_assert_cmpuint(psi.some_total_us, ==, 42);

    g_assert_false(host_read(probe_test_fixture("proc-bad"), &buf, &psi, NULL, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);
    g_assert_false(probe_psi_parse("", "p", &psi, &error));
    g_clear_error(&error);
    g_assert_false(probe_psi_parse("some avg10=1.00 avg60=1.00 avg300=1.00 total=",
                                   "p", &psi, &error));
    g_clear_error(&error);
    g_assert_false(host_read("/nonexistent", &buf, &psi, NULL, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    probe_buf_clear(&buf);
}

static void
test_cpu_stat(void)
{
    g_autoptr(GError) error = NULL;
    ProbeCpuStat st;
    ProbeBuf buf = { 0 };

    g_assert_true(host_read(probe_test_fixture("proc-good"), &buf, NULL, &st, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(st.n_cpus, ==, 2);
    g_assert_cmpuint(st.busy_ticks, ==, 7327 + 10 + 6791 + 3 + 214 + 5);
    g_assert_cmpuint(st.total_ticks, ==, st.busy_ticks + 43081 + 500);

    g_assert_true(host_read(probe_test_fixture("proc-old"), &buf, NULL, &st, &error));
    g_assert_cmpuint(st.n_cpus, ==, 1);

    g_assert_false(host_read(probe_test_fixture("proc-bad"), &buf, NULL, &st, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);
    g_assert_false(probe_cpu_stat_parse("cpu  1 2 3 4 5 6 7 8\nintr 1\n", "s",
                                        &st, &error));
    g_clear_error(&error);
    g_assert_false(probe_cpu_stat_parse(
        "cpu  18446744073709551615 1 0 0 0 0 0 0\ncpu0 1 1 1 1 1 1 1 1\n", "s",
        &st, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    probe_buf_clear(&buf);
}

static void
test_debugfs(void)
{
    g_autoptr(ProbeKvmDebugfs) d = NULL;
    g_autoptr(GError) error = NULL;
    ProbeExitCounters c;

    d = probe_kvm_debugfs_new(probe_test_fixture("debugfs-good"), 100);
    g_assert_true(probe_kvm_debugfs_read(d, &c, &error));
    g_assert_no_error(error);
    g_assert_cmpint(c.source, ==, PROBE_EXIT_SOURCE_DEBUGFS);
    /* 1000-12 belongs to pid 1000 and must not be summed in. */
    g_assert_cmpint(c.v.v[METRIC_KVM_EXITS], ==, 123456);
    g_assert_cmpint(c.v.v[METRIC_IO_EXITS], ==, 2000);
    g_assert_cmpint(c.v.v[METRIC_MMIO_EXITS], ==, 3000);
    g_assert_cmpint(c.v.v[METRIC_HALT_POLL_FAIL_NS], ==, 900000);
    g_assert_true(probe_exit_counters_has(&c, METRIC_HALT_WAIT_NS));
    g_assert_false(probe_exit_counters_has(&c, METRIC_FAST_MMIO));
    g_clear_pointer(&d, probe_kvm_debugfs_free);

    d = probe_kvm_debugfs_new(probe_test_fixture("debugfs-old"), 100);
    g_assert_true(probe_kvm_debugfs_read(d, &c, &error));
    g_assert_cmpint(c.v.v[METRIC_KVM_EXITS], ==, 10);
    g_assert_false(probe_exit_counters_has(&c, METRIC_HALT_EXITS));
    g_clear_pointer(&d, probe_kvm_debugfs_free);

    d = probe_kvm_debugfs_new(probe_test_fixture("debugfs-two"), 100);
    g_assert_true(probe_kvm_debugfs_read(d, &c, &error));
    g_assert_cmpint(c.v.v[METRIC_KVM_EXITS], ==, 2000);
    g_assert_cmpint(c.v.v[METRIC_HALT_EXITS], ==, 20);
    g_clear_pointer(&d, probe_kvm_debugfs_free);
}

static void
test_debugfs_errors(void)
{
    static const struct {
        int pid;
        ProbeErrorCode code;
    } cases[] = {
        { 100, PROBE_ERROR_PARSE },     /* garbage */
        { 101, PROBE_ERROR_MISSING },   /* no exits file */
        { 102, PROBE_ERROR_PARSE },     /* too large */
        { 103, PROBE_ERROR_PARSE },     /* two numbers */
        { 104, PROBE_ERROR_PARSE },     /* empty */
        { 105, PROBE_ERROR_MISSING },   /* no directory */
    };
    const char *root = probe_test_fixture("debugfs-bad");

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(ProbeKvmDebugfs) d = probe_kvm_debugfs_new(root, cases[i].pid);
        g_autoptr(GError) error = NULL;
        ProbeExitCounters c;

        g_assert_false(probe_kvm_debugfs_read(d, &c, &error));
        g_assert_error(error, PROBE_ERROR, (gint)cases[i].code);
    }
    {
        g_autoptr(ProbeKvmDebugfs) d = probe_kvm_debugfs_new("/nonexistent", 1);
        g_autoptr(GError) error = NULL;
        ProbeExitCounters c;

        g_assert_false(probe_kvm_debugfs_read(d, &c, &error));
        g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
        g_assert_nonnull(strstr(error->message, "debugfs not mounted"));
    }
}

static void
test_exit_names(void)
{
    ProbeExitCounters c;
    guint n = 0;

    probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_NONE);
    /* Every exit entry of the vector has KVM's name, and only those. */
    for (int k = 0; k < METRIC_VEC_MAX; k++) {
        const char *name = probe_exit_counter_to_string(k);

        g_assert_cmpint(name != NULL, ==, metric_def(k)->source == METRIC_SOURCE_EXITS);
        if (name) {
            g_assert_cmpint(probe_exit_counter_from_string(name), ==, k);
            n++;
        }
    }
    g_assert_cmpuint(n, ==, 13);
    for (int s = 0; s < PROBE_EXIT_SOURCE_MAX; s++)
        g_assert_cmpint(probe_exit_source_from_string(
                            probe_exit_source_to_string(s)), ==, s);
    g_assert_cmpint(probe_exit_counter_from_string("nope"), ==, METRIC_INVALID);
    g_assert_null(probe_exit_source_to_string(PROBE_EXIT_SOURCE_MAX));

    /* query-stats per vCPU, summed; unknown names are ignored. */
    g_assert_true(probe_exit_counters_add_named(&c, "exits", 10));
    g_assert_true(probe_exit_counters_add_named(&c, "exits", 15));
    g_assert_false(probe_exit_counters_add_named(&c, "l1d_flush", 3));
    g_assert_true(probe_exit_counters_add_named(&c, "halt_exits", G_MAXUINT64));
    g_assert_true(probe_exit_counters_add_named(&c, "halt_exits", 1));
    g_assert_cmpint(c.v.v[METRIC_KVM_EXITS], ==, 25);
    g_assert_cmpint(c.v.v[METRIC_HALT_EXITS], ==, G_MAXINT64);
    g_assert_true(probe_exit_counters_has(&c, METRIC_KVM_EXITS));
    g_assert_false(probe_exit_counters_has(&c, METRIC_IO_EXITS));
}

static void
test_tracefs_ids(void)
{
    g_autoptr(GError) error = NULL;
    guint64 id;

    g_assert_true(probe_perf_tracepoint_id(probe_test_fixture("tracefs-good"),
                                           "kvm_fast_mmio", &id, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(id, ==, 4000001502);
    g_assert_false(probe_perf_tracepoint_id(probe_test_fixture("tracefs-bad"),
                                            "kvm_exit", &id, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);
    g_assert_false(probe_perf_tracepoint_id(probe_test_fixture("tracefs-partial"),
                                            "kvm_userspace_exit", &id, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_nonnull(strstr(error->message, "kvm_userspace_exit/id"));
}

static void
test_perf_kvm_errors(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(ProbePerf) p = NULL;

    /* Missing id: unavailable before any perf_event_open. */
    p = probe_perf_new_kvm("/proc", probe_test_fixture("tracefs-partial"),
                           getpid(), &error);
    g_assert_null(p);
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_clear_error(&error);

    /* Ids that name no tracepoint here: the kernel refuses, we say why. */
    p = probe_perf_new_kvm("/proc", probe_test_fixture("tracefs-good"),
                           getpid(), &error);
    if (p) {
        g_test_skip("tracepoint ids 4000001500.. exist on this kernel");
        return;
    }
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "kvm_exit"));
    g_clear_error(&error);

    p = probe_perf_new_kvm("/proc", probe_test_fixture("tracefs-good"),
                           G_MAXINT - 1, &error);
    g_assert_null(p);
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
}

/* Mutated copies of good files: parsers must fail cleanly or parse, never
 * read out of bounds (run under ASan/valgrind to see it). */
static void
test_mutations(void)
{
    static const char *const files[] = {
        "proc-good/100/task/101/stat", "proc-good/100/task/101/status",
        "proc-good/100/task/101/schedstat", "proc-good/pressure/cpu",
        "proc-good/stat",
    };
    GRand *rand = g_rand_new_with_seed(7);

    for (guint f = 0; f < G_N_ELEMENTS(files); f++) {
        g_autofree char *good = NULL;
        gsize len;

        g_assert_true(g_file_get_contents(probe_test_fixture(files[f]), &good,
                                          &len, NULL));
        for (int i = 0; i < 3000; i++) {
            g_autofree char *text = g_strndup(good, len);
            gsize cut = g_rand_int_range(rand, 0, (gint32)len + 1);
            ProbeThreadCounters c = { 0 };
            ProbePsi psi;
            ProbeCpuStat st;

            for (int k = g_rand_int_range(rand, 0, 4); k > 0; k--)
                text[g_rand_int_range(rand, 0, (gint32)len)] =
                    (char)g_rand_int_range(rand, 1, 256);
            if (i % 3 == 0)
                text[cut] = '\0';
            switch (f) {
            case 0: probe_thread_parse_stat(text, "m", &c, NULL); break;
            case 1: probe_thread_parse_status(text, "m", &c, NULL); break;
            case 2: probe_thread_parse_schedstat(text, "m", &c, NULL); break;
            case 3: probe_psi_parse(text, "m", &psi, NULL); break;
            default: probe_cpu_stat_parse(text, "m", &st, NULL); break;
            }
            g_assert_cmpuint(strlen(c.comm), <, PROBE_COMM_MAX);
        }
    }
    g_rand_free(rand);
}

/* Field 22 of a process's stat, past a comm with spaces and parentheses
 * and negative fields; this process's own start time and the boot id. */
static void
test_process_start(void)
{
    static const char good[] =
        "4242 (qemu (x) y) S 1 4242 4242 0 -1 4194560 1 0 0 0 7 3 0 0 -2 -5 9 0 "
        "1234567 1000 100 18446744073709551615\n";
    g_autoptr(GError) error = NULL;
    g_autofree char *boot = NULL;
    guint64 start = 0, again = 0;

    g_assert_true(probe_process_parse_start(good, "stat", &start, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(start, ==, 1234567);
    /* Cut before field 22: an error naming the field, not a guess. */
    g_assert_false(probe_process_parse_start("1 (a) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0\n",
                                             "stat", &start, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_assert_nonnull(strstr(error->message, "field 22"));
    g_clear_error(&error);
    g_assert_false(probe_process_parse_start("garbage", "stat", &start, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_PARSE);
    g_clear_error(&error);

    g_assert_true(probe_process_read_start("/proc", getpid(), &start, &error));
    g_assert_true(probe_process_read_start("/proc", getpid(), &again, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(start, ==, again);
    g_assert_false(probe_process_read_start(probe_test_fixture("proc-good"), 999999, &start, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_clear_error(&error);

    boot = probe_boot_id_read("/proc", &error);
    if (!boot) {
        g_test_skip(error->message);
        return;
    }
    g_assert_cmpuint(strlen(boot), ==, 36);
    g_clear_pointer(&boot, g_free);
    g_assert_null(probe_boot_id_read(probe_test_fixture("proc-good"), &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/read/parse-u64", test_parse_u64);
    g_test_add_func("/probe/read/file-limits", test_file_read_limits);
    g_test_add_func("/probe/thread/good", test_thread_good);
    g_test_add_func("/probe/thread/old-kernel", test_thread_old_kernel);
    g_test_add_func("/probe/thread/malformed", test_thread_malformed);
    g_test_add_func("/probe/thread/tasks", test_tasks);
    g_test_add_func("/probe/process/start", test_process_start);
    g_test_add_func("/probe/parse/mutations", test_mutations);
    g_test_add_func("/probe/host/psi", test_psi);
    g_test_add_func("/probe/host/stat", test_cpu_stat);
    g_test_add_func("/probe/debugfs/good", test_debugfs);
    g_test_add_func("/probe/debugfs/errors", test_debugfs_errors);
    g_test_add_func("/probe/exits/names", test_exit_names);
    g_test_add_func("/probe/perf/tracefs-ids", test_tracefs_ids);
    g_test_add_func("/probe/perf/kvm-errors", test_perf_kvm_errors);
    return g_test_run();
}
