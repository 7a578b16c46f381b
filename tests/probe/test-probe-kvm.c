/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The three exit sources against a real KVM guest: QEMU's query-stats,
 * KVM's debugfs and the perf tracepoints must be increasing and agree
 * where they count the same thing (all exits).  A host source that cannot
 * work on this host (EPERM on debugfs counters under lockdown; perf
 * counting nothing under KVM emulated by an outer hypervisor) is skipped
 * with the reason, each in its own case.
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
#include "pt-test-qmp.h"
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
query_stats_exits(QmpClient *m)
{
    g_autoptr(GError) error = NULL;
    ProbeExitCounters c;
    json_object *ret = pt_test_qmp_run(m, "query-stats",
        "{\"target\":\"vcpu\",\"providers\":[{\"provider\":\"kvm\",\"names\":[\"exits\"]}]}",
        &error);

    probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_QUERY_STATS);
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
    g_assert_true(probe_exit_counters_has(&c, METRIC_KVM_EXITS));
    return (guint64)c.v.v[METRIC_KVM_EXITS];
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
start_guest(QmpClient **m)
{
    static const char *const args[] = {
        "-enable-kvm", "-machine", "q35", "-smp", "2", "-m", "128", NULL,
    };
    g_autoptr(GError) error = NULL;
    PtTestQemu *q = pt_test_qemu_start(args, &error);

    g_assert_no_error(error);
    *m = pt_test_qmp_connect(q->qmp_path, "probe-test");
    return q;
}

/*
 * Whether host source @mode can work here at all.  Only a refusal of the
 * host (permission: lockdown, a sandbox, perf_event_paranoid) makes it
 * unusable, with *why; any other error is a failure of the reader.
 */
static gboolean
host_source_usable(ProbeExitsMode mode, int pid, char **why)
{
    g_autoptr(GError) error = NULL;
    gboolean ok;

    if (mode == PROBE_EXITS_DEBUGFS) {
        g_autoptr(ProbeKvmDebugfs) dfs = probe_kvm_debugfs_new("/sys/kernel/debug", pid);
        ProbeExitCounters c;

        ok = probe_kvm_debugfs_read(dfs, &c, &error);
    } else {
        g_autoptr(ProbePerf) p = probe_perf_new_kvm("/proc", NULL, pid, &error);

        ok = p != NULL;
    }
    if (!ok && g_error_matches(error, PROBE_ERROR, PROBE_ERROR_ACCESS)) {
        *why = g_strdup_printf("%s cannot be read on this host: %s",
                               probe_exits_mode_to_string(mode), error->message);
        return FALSE;
    }
    g_assert_no_error(error);
    return TRUE;
}

/*
 * "exits" over EXIT_INTERVAL_S from QEMU's query-stats and from host
 * source @mode (DEBUGFS or PERF), read one after the other.
 */
#define EXIT_INTERVAL_S 2

typedef struct {
    guint64 qs, host;
} ExitDelta;

static void
measure(QmpClient *m, ProbeTarget *t, ProbeExitsMode mode, ExitDelta *d)
{
    guint64 qs0 = 0, host0 = 0;

    for (guint i = 0; i < 2; i++) {
        g_autoptr(ProbeTargetSnap) s = probe_target_snap_new(0, 0, 0);
        guint64 qs = query_stats_exits(m);

        g_assert_true(probe_target_sample_exits(t, mode, s));
        g_assert_cmpint(s->exits.source, ==, mode == PROBE_EXITS_DEBUGFS
                        ? PROBE_EXIT_SOURCE_DEBUGFS : PROBE_EXIT_SOURCE_PERF);
        if (i == 0) {
            /* perf counts from when it is opened: the baseline follows. */
            qs0 = qs;
            host0 = s->exits.v.v[METRIC_KVM_EXITS];
            g_usleep(EXIT_INTERVAL_S * G_USEC_PER_SEC);
        } else {
            d->qs = qs - qs0;
            d->host = s->exits.v.v[METRIC_KVM_EXITS] - host0;
        }
    }
}

/* QEMU's own statistics count the guest's exits. */
static void
test_query_stats_counts(void)
{
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(QmpClient) m = NULL;
    guint64 a, b;

    if (!need_kvm_sources())
        return;
    q = start_guest(&m);
    a = query_stats_exits(m);
    g_usleep(EXIT_INTERVAL_S * G_USEC_PER_SEC);
    b = query_stats_exits(m);
    g_test_message("query-stats: %" G_GUINT64_FORMAT " exits in %d s", b - a, EXIT_INTERVAL_S);
    g_assert_cmpuint(b, >, a);
}

/*
 * A host source (@data: PROBE_EXITS_DEBUGFS or PROBE_EXITS_PERF) agrees
 * with query-stats where it works.  Two ways it cannot work are
 * properties of the host and skipped with the reason: a refusal (debugfs
 * counters answer EPERM under lockdown or in a sandbox; perf_event_paranoid),
 * and counting nothing under KVM emulated by an outer hypervisor, where
 * the exits are handled out of the tracepoint's sight.  Anywhere else a
 * source that counts 0 while QEMU counts is a failure.
 */
static void
test_host_source_agrees(gconstpointer data)
{
    ProbeExitsMode mode = GPOINTER_TO_INT(data);
    const char *name = probe_exits_mode_to_string(mode);
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    g_autofree char *why = NULL;
    g_autofree char *emulated = NULL;
    g_autoptr(QmpClient) m = NULL;
    ExitDelta d;

    if (!need_kvm_sources())
        return;
    q = start_guest(&m);
    if (!host_source_usable(mode, q->pid, &why)) {
        g_test_skip(why);
        return;
    }
    t = probe_target_new(NULL, q->pid);
    measure(m, t, mode, &d);
    if (d.host == 0 && d.qs > EXIT_TOLERANCE_ABS && pt_test_kvm_is_emulated(&emulated)) {
        g_autofree char *msg = g_strdup_printf(
            "%s counted 0 exits while query-stats counted %" G_GUINT64_FORMAT ": %s, and "
            "the exits are handled where it cannot see them", name, d.qs, emulated);

        g_test_skip(msg);
        return;
    }
    g_assert_cmpuint(d.host, >, 0);
    assert_agree("query-stats", d.qs, name, d.host);
}

/*
 * What the daemon does with a real guest: QEMU's figures are chosen, they
 * rise, and perf is not opened while they count.
 */
static void
test_choice(void)
{
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbeTarget) t = NULL;
    g_autoptr(QmpClient) m = NULL;
    guint64 first = 0;

    if (!need_kvm_sources())
        return;
    q = start_guest(&m);
    t = probe_target_new(NULL, q->pid);
    for (guint i = 0; i < 3; i++) {
        g_autoptr(ProbeTargetSnap) s = probe_target_snap_new(0, 0, 0);
        const char *why = NULL;

        probe_exit_counters_add_named(&s->exits, "exits", query_stats_exits(m));
        g_assert_cmpint(probe_target_choose_exits(t, PROBE_EXITS_AUTO, s, NULL, NULL), ==,
                        PROBE_EXIT_SOURCE_QUERY_STATS);
        probe_target_exit_source(t, &why);
        g_test_message("tick %u: %s (%s), debugfs %s", i,
                       probe_exit_source_to_string(s->exits.source), why,
                       probe_target_source(t, PROBE_SOURCE_DEBUGFS)->reason
                       ? probe_target_source(t, PROBE_SOURCE_DEBUGFS)->reason : "readable");
        if (i == 0)
            first = s->exits.v.v[METRIC_KVM_EXITS];
        else
            g_assert_cmpuint(s->exits.v.v[METRIC_KVM_EXITS], >, first);
        g_usleep(G_USEC_PER_SEC);
    }
    g_assert_cmpint(probe_target_source(t, PROBE_SOURCE_PERF)->state, ==, PROBE_SOURCE_UNKNOWN);
}

/* Perf follows vCPU threads: one group per thread of the process. */
static void
test_perf_threads(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(PtTestQemu) q = NULL;
    g_autoptr(ProbePerf) p = NULL;
    g_autoptr(GArray) tasks = NULL;
    g_autoptr(QmpClient) m = NULL;

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
        g_assert_true(probe_exit_counters_has(&c, METRIC_FAST_MMIO));
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/probe/kvm/query-stats-counts", test_query_stats_counts);
    g_test_add_data_func("/probe/kvm/debugfs-agrees", GINT_TO_POINTER(PROBE_EXITS_DEBUGFS),
                         test_host_source_agrees);
    g_test_add_data_func("/probe/kvm/perf-agrees", GINT_TO_POINTER(PROBE_EXITS_PERF),
                         test_host_source_agrees);
    g_test_add_func("/probe/kvm/choice", test_choice);
    g_test_add_func("/probe/kvm/perf-threads", test_perf_threads);
    return g_test_run();
}
