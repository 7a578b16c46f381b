/*
 * The three exit sources against a real KVM guest: QEMU's query-stats,
 * KVM's debugfs and the perf tracepoints must all be available, increasing,
 * and agree where they count the same thing (all exits).
 *
 * The guest is q35 with SeaBIOS and no disk: the firmware finds nothing to
 * boot and waits, taking timer and halt exits at a steady low rate.  The
 * three sources are read one after the other, not at one instant, so they
 * are compared within a tolerance (EXIT_TOLERANCE_PCT of the larger
 * delta, plus EXIT_TOLERANCE_ABS exits for the reads' skew); see
 * docs/SAMPLING.md.
 *
 * Needs /dev/kvm, root (debugfs, perf tracepoints) and debugfs/tracefs
 * mounted; mounts them when root and they are not.  Without any of these it
 * skips and says why.
 */
#include <errno.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe-perf.h"
#include "probe-sampler.h"
#include "probe-test-qmp.h"
#include "pt-test-qemu.h"

#define EXIT_TOLERANCE_PCT 5.0
#define EXIT_TOLERANCE_ABS 200

/* Mount @type on @dir unless something answers there already. */
static gboolean
ensure_mounted(const char *type, const char *dir, const char *probe_rel,
               char **why)
{
    g_autofree char *probe = g_build_filename(dir, probe_rel, NULL);

    if (g_file_test(probe, G_FILE_TEST_EXISTS))
        return TRUE;
    if (mount(type, dir, type, 0, NULL) < 0 && errno != EBUSY) {
        *why = g_strdup_printf("%s is not mounted on %s and mounting it "
                               "failed: %s", type, dir, g_strerror(errno));
        return FALSE;
    }
    if (!g_file_test(probe, G_FILE_TEST_EXISTS)) {
        *why = g_strdup_printf("%s: missing after mounting %s", probe, type);
        return FALSE;
    }
    return TRUE;
}

static gboolean
need_kvm_sources(void)
{
    g_autofree char *why = NULL;

    if (!pt_test_have_kvm(&why) ||
        !ensure_mounted("debugfs", "/sys/kernel/debug", "kvm", &why) ||
        !ensure_mounted("tracefs", "/sys/kernel/tracing", "events/kvm", &why)) {
        g_test_skip(why);
        return FALSE;
    }
    return TRUE;
}

/* Sum "exits" over every vCPU from query-stats (provider kvm). */
static guint64
query_stats_exits(ProbeTestQmp *m)
{
    g_autoptr(GError) error = NULL;
    ProbeExitCounters c = { .source = PROBE_EXIT_SOURCE_QUERY_STATS };
    json_object *ret = probe_test_qmp_run(m,
        "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\","
        "\"providers\":[{\"provider\":\"kvm\",\"names\":[\"exits\"]}]}}",
        &error);

    g_assert_no_error(error);
    for (size_t i = 0; i < json_object_array_length(ret); i++) {
        json_object *vcpu = json_object_array_get_idx(ret, i), *stats;

        g_assert_true(json_object_object_get_ex(vcpu, "stats", &stats));
        for (size_t j = 0; j < json_object_array_length(stats); j++) {
            json_object *st = json_object_array_get_idx(stats, j), *name, *value;

            g_assert_true(json_object_object_get_ex(st, "name", &name));
            g_assert_true(json_object_object_get_ex(st, "value", &value));
            probe_exit_counters_add_named(&c, json_object_get_string(name),
                                          (guint64)json_object_get_int64(value));
        }
    }
    json_object_put(ret);
    g_assert_true(probe_exit_counters_has(&c, PROBE_EXIT_EXITS));
    return c.v[PROBE_EXIT_EXITS];
}

typedef struct {
    guint64 qs, dbg, perf;
} ExitReading;

static void
read_all(ProbeTestQmp *m, ProbeTarget *t, ExitReading *r)
{
    g_autoptr(ProbeTargetSnap) s = probe_target_snap_new(0, 0, 0);

    r->qs = query_stats_exits(m);
    g_assert_true(probe_target_sample_exits(t, PROBE_EXITS_DEBUGFS, s));
    g_assert_cmpint(s->exits.source, ==, PROBE_EXIT_SOURCE_DEBUGFS);
    r->dbg = s->exits.v[PROBE_EXIT_EXITS];
    g_assert_true(probe_target_sample_exits(t, PROBE_EXITS_PERF, s));
    g_assert_cmpint(s->exits.source, ==, PROBE_EXIT_SOURCE_PERF);
    r->perf = s->exits.v[PROBE_EXIT_EXITS];
}

static void
assert_agree(const char *what_a, double a, const char *what_b, double b)
{
    double tol = MAX(a, b) * EXIT_TOLERANCE_PCT / 100.0 + EXIT_TOLERANCE_ABS;

    g_test_message("exits over the interval: %s %.0f, %s %.0f (tolerance %.0f)",
                   what_a, a, what_b, b, tol);
    g_assert_cmpfloat(ABS(a - b), <=, tol);
}

/* A q35 KVM guest with two vCPUs and its monitor, ready for commands. */
static PtTestQemu *
start_guest(ProbeTestQmp *m)
{
    static const char *const args[] = {
        "-enable-kvm", "-machine", "q35", "-smp", "2", "-m", "128", NULL,
    };
    g_autoptr(GError) error = NULL;
    PtTestQemu *q = pt_test_qemu_start(args, &error);

    g_assert_no_error(error);
    g_assert_true(probe_test_qmp_open(m, q->qmp_path, &error));
    g_assert_no_error(error);
    return q;
}

static void
test_exit_sources_agree(void)
{
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    ProbeTestQmp m = { 0 };
    ExitReading r0, r1;

    if (!need_kvm_sources())
        return;
    q = start_guest(&m);
    t = probe_target_new(NULL, q->pid);

    /* perf counts from when it is opened: open it, then take the baseline. */
    read_all(&m, t, &r0);
    g_usleep(2 * G_USEC_PER_SEC);
    read_all(&m, t, &r1);

    g_assert_cmpuint(r1.qs, >, r0.qs);
    g_assert_cmpuint(r1.dbg, >, r0.dbg);
    g_assert_cmpuint(r1.perf, >, r0.perf);
    assert_agree("query-stats", r1.qs - r0.qs, "debugfs", r1.dbg - r0.dbg);
    assert_agree("query-stats", r1.qs - r0.qs, "perf", r1.perf - r0.perf);
    assert_agree("debugfs", r1.dbg - r0.dbg, "perf", r1.perf - r0.perf);

    /* Auto picks debugfs and says so. */
    {
        g_autoptr(ProbeTargetSnap) s = probe_target_snap_new(0, 0, 0);

        g_assert_true(probe_target_sample_exits(t, PROBE_EXITS_AUTO, s));
        g_assert_cmpint(s->exits.source, ==, PROBE_EXIT_SOURCE_DEBUGFS);
    }
    probe_test_qmp_close(&m);
}

/* Perf follows vCPU threads: one group per thread of the process. */
static void
test_perf_threads(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbePerf) p = NULL;
    g_autoptr(GArray) tasks = NULL;
    ProbeTestQmp m = { 0 };

    if (!need_kvm_sources())
        return;
    q = start_guest(&m);
    p = probe_perf_new_kvm("/proc", NULL, q->pid, &error);
    g_assert_no_error(error);
    tasks = probe_tasks_list("/proc", q->pid, &error);
    g_assert_no_error(error);
    /* Worker threads come and go; main and both vCPUs are always there. */
    g_assert_cmpuint(tasks->len, >=, 3);
    g_assert_cmpuint(probe_perf_n_threads(p), >=, 3);
    {
        ProbeExitCounters c;

        g_assert_true(probe_perf_read(p, &c, &error));
        g_assert_cmpint(c.source, ==, PROBE_EXIT_SOURCE_PERF);
        g_assert_true(probe_exit_counters_has(&c, PROBE_EXIT_FAST_MMIO));
    }
    probe_test_qmp_close(&m);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/kvm/exit-sources-agree", test_exit_sources_agree);
    g_test_add_func("/probe/kvm/perf-threads", test_perf_threads);
    return g_test_run();
}
