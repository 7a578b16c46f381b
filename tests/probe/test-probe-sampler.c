/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The samplers on fixture trees: tid resolution and re-resolution, source
 * states said once, exit source selection; and perf's thread following on
 * this very process with software events.
 */
#include <linux/perf_event.h>
#include <pthread.h>
#include <unistd.h>

#include "probe-perf.h"
#include "probe-sampler.h"
#include "probe-test.h"

typedef struct {
    char *root;
} TmpTree;

static void
tmp_setup(TmpTree *t, gconstpointer data)
{
    t->root = g_dir_make_tmp("probe-tree-XXXXXX", NULL);
    g_assert_nonnull(t->root);
}

static void
tmp_teardown(TmpTree *t, gconstpointer data)
{
    probe_test_rmtree(t->root);
    g_free(t->root);
}

/* A thread exits: reads through kept descriptors fail (as /proc's do
 * with ESRCH), and its directory goes. */
static void
remove_thread(const char *root, int pid, int tid)
{
    g_autofree char *dir = g_strdup_printf("%s/%d/task/%d", root, pid, tid);
    g_autofree char *stat = g_strdup_printf("%d/task/%d/stat", pid, tid);

    probe_test_write(root, stat, "");
    probe_test_rmtree(dir);
}

/* Take the news and check it is exactly @want (NULL: none). */
static void
assert_news(GPtrArray *news, const char *want)
{
    if (!want) {
        g_assert_null(news);
        return;
    }
    g_assert_nonnull(news);
    g_assert_cmpuint(news->len, ==, 1);
    g_assert_true(g_str_has_prefix(news->pdata[0], want));
    g_ptr_array_unref(news);
}

static void
test_resolve(TmpTree *tt, gconstpointer data)
{
    ProbeRoots roots = { .proc = tt->root };
    g_autoptr(ProbeTarget) t = NULL;
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(50, 0, 0);
    g_autoptr(GError) error = NULL;
    ProbeIothreadSnap *io = probe_target_snap_iothread(snap, "iothread1");
    g_autoptr(GPtrArray) news = NULL;

    probe_test_thread(tt->root, 50, 50, "qemu-system-x86", 1, 1, 1, 1, 1, 1);
    probe_test_thread(tt->root, 50, 51, "IO iothread1", 10, 5, 100, 3, 7, 8);
    t = probe_target_new(&roots, 50);
    g_assert_cmpint(probe_target_pid(t), ==, 50);

    g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_no_error(error);
    g_assert_true(io->have_thread);
    g_assert_cmpint(io->tid, ==, 51);
    g_assert_cmpint(io->thread.v.v[METRIC_CTX_VOL], ==, 100);
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread1"), ==, 51);
    news = probe_target_take_news(t);
    g_assert_cmpuint(news->len, ==, 2);
    g_assert_cmpstr(news->pdata[0], ==, "thread: available");
    g_assert_cmpstr(news->pdata[1], ==, "schedstat: available");

    /* The iothread was recreated with a new tid. */
    remove_thread(tt->root, 50, 51);
    probe_test_thread(tt->root, 50, 61, "IO iothread1", 0, 0, 1, 0, 1, 0);
    g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_cmpint(io->tid, ==, 61);
    g_assert_cmpint(io->thread.v.v[METRIC_CTX_VOL], ==, 1);

    /* The tid now belongs to another name: found again by name. */
    probe_test_thread(tt->root, 50, 61, "worker", 0, 0, 1, 0, 1, 0);
    probe_test_thread(tt->root, 50, 62, "IO iothread1", 0, 0, 2, 0, 1, 0);
    g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_cmpint(io->tid, ==, 62);

    /* Gone entirely: an error naming it; the source itself is fine. */
    remove_thread(tt->root, 50, 62);
    g_assert_false(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_nonnull(strstr(error->message, "iothread1"));
    g_clear_error(&error);
    g_assert_false(io->have_thread);
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread1"), ==, 0);
    g_assert_cmpint(probe_target_source(t, PROBE_SOURCE_THREAD)->state, ==,
                    PROBE_SOURCE_AVAILABLE);
    assert_news(probe_target_take_news(t), NULL);
}

static void
test_tid_hint(void)
{
    ProbeRoots roots = { .proc = probe_test_fixture("proc-good") };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 100);
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, 0, 0);
    g_autoptr(GError) error = NULL;
    ProbeIothreadSnap *io = probe_target_snap_iothread(snap, "iot-direct");

    /* QMP's thread-id is trusted for the name, not for the process. */
    g_assert_true(probe_target_sample_iothread(t, io, 102, &error));
    g_assert_no_error(error);
    g_assert_cmpint(io->tid, ==, 102);
    g_assert_false(probe_target_sample_iothread(t, io, 4242, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_nonnull(strstr(error->message, "not a live thread of process 100"));
    g_assert_false(io->have_thread);
}

static void
test_schedstat_news(void)
{
    ProbeRoots roots = { .proc = probe_test_fixture("proc-old") };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 300);
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(300, 0, 0);
    ProbeIothreadSnap *io = probe_target_snap_iothread(snap, "iothread1");
    g_autoptr(GPtrArray) news = NULL;

    g_assert_true(probe_target_sample_iothread(t, io, 0, NULL));
    g_assert_false(probe_thread_counters_have_schedstat(&io->thread));
    news = probe_target_take_news(t);
    g_assert_cmpuint(news->len, ==, 2);
    g_assert_cmpstr(news->pdata[0], ==, "thread: available");
    g_assert_true(g_str_has_prefix(news->pdata[1], "schedstat: unavailable: "));
    /* Said once. */
    g_assert_true(probe_target_sample_iothread(t, io, 0, NULL));
    assert_news(probe_target_take_news(t), NULL);
}

static void
test_vcpus(void)
{
    ProbeRoots good = { .proc = probe_test_fixture("proc-good") };
    ProbeRoots old = { .proc = probe_test_fixture("proc-old") };
    g_autoptr(ProbeTarget) t = probe_target_new(&good, 100);
    g_autoptr(ProbeTarget) none = probe_target_new(&old, 300);
    g_autoptr(ProbeHostSnap) host = probe_host_snap_new(0, 0);
    const ProbeSource *src;

    g_assert_cmpuint(probe_target_sample_vcpus(t, host), ==, 2);
    g_assert_cmpuint(host->vcpus->len, ==, 2);
    g_assert_cmpuint(g_array_index(host->vcpus, ProbeVcpuWait, 0).wait_ns +
                     g_array_index(host->vcpus, ProbeVcpuWait, 1).wait_ns, ==,
                     400000000);

    g_assert_cmpuint(probe_target_sample_vcpus(none, host), ==, 0);
    g_assert_cmpuint(host->vcpus->len, ==, 2);
    src = probe_target_source(none, PROBE_SOURCE_VCPU);
    g_assert_cmpint(src->state, ==, PROBE_SOURCE_UNAVAILABLE);
    g_assert_nonnull(strstr(src->reason, "CPU <n>/KVM"));
    assert_news(probe_target_take_news(none), "vcpu: unavailable: ");
    /* Not tried again until the retry interval has passed. */
    for (int i = 0; i < PROBE_SOURCE_RETRY_TICKS * 3; i++)
        g_assert_cmpuint(probe_target_sample_vcpus(none, host), ==, 0);
    assert_news(probe_target_take_news(none), NULL);
}

static void
test_exits_auto(void)
{
    ProbeRoots roots = {
        .proc = probe_test_fixture("proc-good"),
        .debugfs = probe_test_fixture("debugfs-good"),
        .tracefs = probe_test_fixture("tracefs-partial"),
    };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 100);
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, 0, 0);

    g_assert_true(probe_target_sample_exits(t, PROBE_EXITS_AUTO, snap));
    g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_DEBUGFS);
    g_assert_cmpint(snap->exits.v.v[METRIC_KVM_EXITS], ==, 123456);
    /* Perf was never needed, so never tried. */
    g_assert_cmpint(probe_target_source(t, PROBE_SOURCE_PERF)->state, ==,
                    PROBE_SOURCE_UNKNOWN);
    g_assert_false(probe_target_sample_exits(t, PROBE_EXITS_OFF, snap));
    g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_NONE);
}

static void
test_exits_unavailable(void)
{
    ProbeRoots roots = {
        .proc = probe_test_fixture("proc-good"),
        .debugfs = "/nonexistent-debugfs",
        .tracefs = probe_test_fixture("tracefs-partial"),
    };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 100);
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, 0, 0);
    g_autoptr(GPtrArray) news = NULL;
    const ProbeSource *dbg, *perf;

    g_assert_false(probe_target_sample_exits(t, PROBE_EXITS_AUTO, snap));
    g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_NONE);
    dbg = probe_target_source(t, PROBE_SOURCE_DEBUGFS);
    perf = probe_target_source(t, PROBE_SOURCE_PERF);
    g_assert_cmpint(dbg->state, ==, PROBE_SOURCE_UNAVAILABLE);
    g_assert_cmpint(perf->state, ==, PROBE_SOURCE_UNAVAILABLE);
    g_assert_nonnull(strstr(dbg->reason, "/nonexistent-debugfs/kvm"));
    g_assert_nonnull(strstr(perf->reason, "kvm_userspace_exit"));
    news = probe_target_take_news(t);
    g_assert_cmpuint(news->len, ==, 2);
    g_assert_true(g_str_has_prefix(news->pdata[0], "debugfs: unavailable: "));
    g_assert_true(g_str_has_prefix(news->pdata[1], "perf: unavailable: "));

    /* Reported once; retried later, still failing, still quiet. */
    for (int i = 0; i < PROBE_SOURCE_RETRY_TICKS * 2 + 1; i++)
        g_assert_false(probe_target_sample_exits(t, PROBE_EXITS_AUTO, snap));
    assert_news(probe_target_take_news(t), NULL);
    g_assert_false(probe_target_sample_exits(t, PROBE_EXITS_PERF, snap));
}

/* QEMU's own figures are what probe_exit_counters_add_named() fills. */
static void
test_exits_named_source(void)
{
    ProbeExitCounters c;

    probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_NONE);
    g_assert_true(probe_exit_counters_add_named(&c, "exits", 7));
    g_assert_cmpint(c.source, ==, PROBE_EXIT_SOURCE_QUERY_STATS);
    g_assert_false(probe_exit_counters_add_named(&c, "no_such_stat", 7));
    g_assert_cmpint(c.v.v[METRIC_KVM_EXITS], ==, 7);
}

/* One tick of the choice with "exits" readings of each source (-1: none). */
static ProbeExitSource
pick(ProbeExitChoice *ch, gint64 qs, gint64 dbg, gint64 perf)
{
    const gint64 in[PROBE_EXIT_SOURCE_MAX] = { -1, qs, dbg, perf };
    ProbeExitCounters c[PROBE_EXIT_SOURCE_MAX] = { { 0 } };
    const ProbeExitCounters *readings[PROBE_EXIT_SOURCE_MAX] = { NULL };
    const char *const why_not[PROBE_EXIT_SOURCE_MAX] = {
        NULL, "not offered by QEMU", "unavailable: EPERM", "unavailable: no tracepoint",
    };

    for (int s = PROBE_EXIT_SOURCE_QUERY_STATS; s < PROBE_EXIT_SOURCE_MAX; s++) {
        if (in[s] < 0)
            continue;
        probe_exit_counters_init(&c[s], s);
        c[s].v.v[METRIC_KVM_EXITS] = in[s];
        readings[s] = &c[s];
    }
    return probe_exit_choice_pick(ch, readings, why_not);
}

/*
 * Preference first (QEMU's own, then debugfs, then perf), but a source
 * that reads no exits while another counts them is passed over until it
 * counts again; each change is one piece of news.
 */
static void
test_exits_choice(void)
{
    ProbeExitChoice ch;
    char *msg = NULL;

    probe_exit_choice_init(&ch);
    /* The host of the report: query-stats rises, perf stays at 0. */
    g_assert_cmpint(pick(&ch, 1000, -1, 0), ==, PROBE_EXIT_SOURCE_QUERY_STATS);
    g_assert_cmpint(pick(&ch, 1060, -1, 0), ==, PROBE_EXIT_SOURCE_QUERY_STATS);
    g_assert_true(probe_exit_choice_is_dead(&ch, PROBE_EXIT_SOURCE_PERF));
    g_assert_true(probe_exit_choice_take_news(&ch, &msg));
    g_assert_cmpstr(msg, ==, "exits: query-stats: QEMU's own KVM statistics");
    g_clear_pointer(&msg, g_free);

    /* Without query-stats a perf that reads 0 must not hide debugfs, nor
     * a stuck debugfs hide a counting perf. */
    probe_exit_choice_clear(&ch);
    probe_exit_choice_init(&ch);
    g_assert_cmpint(pick(&ch, -1, 500, 0), ==, PROBE_EXIT_SOURCE_DEBUGFS);
    g_assert_cmpint(pick(&ch, -1, 500, 90), ==, PROBE_EXIT_SOURCE_PERF);
    g_assert_true(probe_exit_choice_take_news(&ch, &msg));
    g_assert_cmpstr(msg, ==, "exits: perf: better sources unusable: query-stats not offered "
                    "by QEMU; debugfs counts no exits while perf counts them");
    g_clear_pointer(&msg, g_free);
    g_assert_cmpint(pick(&ch, -1, 500, 180), ==, PROBE_EXIT_SOURCE_PERF);
    g_assert_false(probe_exit_choice_take_news(&ch, &msg));
    /* debugfs counts again: preferred again. */
    g_assert_cmpint(pick(&ch, -1, 560, 240), ==, PROBE_EXIT_SOURCE_DEBUGFS);
    g_assert_true(probe_exit_choice_take_news(&ch, &msg));
    g_assert_true(g_str_has_prefix(msg, "exits: debugfs: "));
    g_clear_pointer(&msg, g_free);

    /* A quiet tick for everyone judges nobody. */
    g_assert_cmpint(pick(&ch, -1, 560, 240), ==, PROBE_EXIT_SOURCE_DEBUGFS);
    /* A single source cannot be cross-checked: it is used. */
    g_assert_cmpint(pick(&ch, -1, -1, 240), ==, PROBE_EXIT_SOURCE_PERF);
    /* Nothing reads: absent, and every source says why. */
    g_assert_cmpint(pick(&ch, -1, -1, -1), ==, PROBE_EXIT_SOURCE_NONE);
    g_assert_cmpstr(ch.why, ==, "query-stats not offered by QEMU; debugfs unavailable: EPERM; "
                    "perf unavailable: no tracepoint");
    probe_exit_choice_set_absent(&ch, "no KVM");
    g_assert_cmpint(ch.chosen, ==, PROBE_EXIT_SOURCE_NONE);
    g_assert_cmpstr(ch.why, ==, "no KVM");
    probe_exit_choice_clear(&ch);
}

/*
 * debugfs has the VM's directory but its counter cannot be read (as under
 * lockdown), perf has no tracepoint: QEMU's figures are used and the
 * others say why they are not.
 */
static void
test_exits_choose_unreadable(void)
{
    ProbeRoots roots = {
        .proc = probe_test_fixture("proc-good"),
        .debugfs = probe_test_fixture("debugfs-unreadable"),
        .tracefs = probe_test_fixture("tracefs-partial"),
    };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 100);
    g_autoptr(GPtrArray) news = NULL;
    const ProbeSource *dbg;
    const char *why = NULL;

    for (guint tick = 0; tick < 3; tick++) {
        g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, tick, 0);

        probe_exit_counters_add_named(&snap->exits, "exits", 1000 + 60 * tick);
        g_assert_cmpint(probe_target_choose_exits(t, PROBE_EXITS_AUTO, snap, NULL, NULL), ==,
                        PROBE_EXIT_SOURCE_QUERY_STATS);
        g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_QUERY_STATS);
        g_assert_cmpint(snap->exits.v.v[METRIC_KVM_EXITS], ==, 1000 + 60 * tick);
    }
    dbg = probe_target_source(t, PROBE_SOURCE_DEBUGFS);
    g_assert_cmpint(dbg->state, ==, PROBE_SOURCE_UNAVAILABLE);
    g_assert_nonnull(strstr(dbg->reason, "exits"));
    /* perf is not opened while QEMU's figures count. */
    g_assert_cmpint(probe_target_source(t, PROBE_SOURCE_PERF)->state, ==, PROBE_SOURCE_UNKNOWN);
    news = probe_target_take_news(t);
    g_assert_nonnull(news);
    g_assert_cmpuint(news->len, ==, 2);
    g_assert_true(g_str_has_prefix(news->pdata[0], "debugfs: unavailable: "));
    g_assert_cmpstr(news->pdata[1], ==, "exits: query-stats: QEMU's own KVM statistics");
    g_assert_cmpint(probe_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_QUERY_STATS);

    /* QEMU stops reporting: the next source is tried, then perf; neither
     * works, so the figures are absent, with every reason. */
    {
        g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, 9, 0);

        g_assert_cmpint(probe_target_choose_exits(t, PROBE_EXITS_AUTO, snap,
                                                  "not offered by QEMU (test)", NULL),
                        ==, PROBE_EXIT_SOURCE_NONE);
        g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_NONE);
        probe_target_exit_source(t, &why);
        g_assert_nonnull(strstr(why, "query-stats not offered by QEMU (test)"));
        g_assert_nonnull(strstr(why, "perf unavailable"));
    }
    /* A guest without KVM has no exits at all: nothing is read. */
    {
        g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(100, 10, 0);

        probe_exit_counters_add_named(&snap->exits, "exits", 5000);
        g_assert_cmpint(probe_target_choose_exits(t, PROBE_EXITS_AUTO, snap, NULL,
                                                  "TCG guest"), ==, PROBE_EXIT_SOURCE_NONE);
        g_assert_cmpint(snap->exits.source, ==, PROBE_EXIT_SOURCE_NONE);
        probe_target_exit_source(t, &why);
        g_assert_cmpstr(why, ==, "TCG guest");
    }
}

static void
test_sample_snap(void)
{
    ProbeRoots roots = {
        .proc = probe_test_fixture("proc-good"),
        .debugfs = probe_test_fixture("debugfs-good"),
    };
    g_autoptr(ProbeTarget) t = probe_target_new(&roots, 100);
    g_autoptr(ProbeTargetSnap) a = probe_target_snap_new(100, 0, 0);
    g_autoptr(ProbeTargetSnap) b = probe_target_snap_new(100, 1, 0);
    g_autoptr(GPtrArray) errors = g_ptr_array_new_with_free_func(g_free);

    probe_target_snap_iothread(a, "iothread1");
    probe_target_snap_iothread(a, "iothread2")->tid = 102;    /* from QMP */
    probe_target_snap_iothread(a, "missing");
    g_assert_cmpuint(probe_target_sample_snap(t, a, PROBE_EXITS_AUTO, errors),
                     ==, 2);
    g_assert_cmpuint(errors->len, ==, 1);
    g_assert_nonnull(strstr(errors->pdata[0], "iothread missing"));
    g_assert_cmpint(probe_target_snap_find(a, "iothread1")->tid, ==, 101);
    g_assert_true(probe_target_snap_find(a, "iothread2")->have_thread);
    g_assert_false(probe_target_snap_find(a, "missing")->have_thread);
    g_assert_cmpint(a->exits.source, ==, PROBE_EXIT_SOURCE_DEBUGFS);
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread2"), ==, 102);

    /* iothread2 was deleted: what was kept for it goes. */
    probe_target_snap_iothread(b, "iothread1");
    g_assert_cmpuint(probe_target_sample_snap(t, b, PROBE_EXITS_OFF, NULL), ==, 1);
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread2"), ==, 0);
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread1"), ==, 101);
    g_assert_cmpint(b->exits.source, ==, PROBE_EXIT_SOURCE_NONE);
    probe_target_forget_iothread(t, "iothread1");
    g_assert_cmpint(probe_target_iothread_tid(t, "iothread1"), ==, 0);
}

static void
test_host_sampler(void)
{
    ProbeRoots good = { .proc = probe_test_fixture("proc-good") };
    ProbeRoots bad = { .proc = probe_test_fixture("proc-bad") };
    g_autoptr(ProbeHostSampler) hg = probe_host_sampler_new(&good);
    g_autoptr(ProbeHostSampler) hb = probe_host_sampler_new(&bad);
    g_autoptr(ProbeHostSnap) snap = probe_host_snap_new(0, 0);
    g_autoptr(GPtrArray) news = NULL;

    g_assert_true(probe_host_sampler_sample(hg, snap));
    g_assert_true(probe_host_snap_has_psi(snap) && probe_host_snap_has_stat(snap));
    g_assert_cmpuint(snap->n_cpus, ==, 2);
    g_assert_cmpint(probe_host_sampler_source(hg, PROBE_SOURCE_PSI)->state, ==,
                    PROBE_SOURCE_AVAILABLE);

    g_assert_false(probe_host_sampler_sample(hb, snap));
    g_assert_false(probe_host_snap_has_psi(snap) || probe_host_snap_has_stat(snap));
    news = probe_host_sampler_take_news(hb);
    g_assert_cmpuint(news->len, ==, 2);
    g_assert_true(g_str_has_prefix(news->pdata[0], "psi: unavailable: "));
    g_assert_true(g_str_has_prefix(news->pdata[1], "stat: unavailable: "));
}

static void
test_source_names(void)
{
    for (int k = 0; k < PROBE_SOURCE_MAX; k++)
        g_assert_cmpint(probe_source_kind_from_string(
                            probe_source_kind_to_string(k)), ==, k);
    for (int m = 0; m < PROBE_EXITS_MODE_MAX; m++)
        g_assert_cmpint(probe_exits_mode_from_string(
                            probe_exits_mode_to_string(m)), ==, m);
    g_assert_cmpint(probe_source_kind_from_string("x"), ==, PROBE_SOURCE_INVALID);
    g_assert_cmpint(probe_exits_mode_from_string(NULL), ==,
                    PROBE_EXITS_MODE_INVALID);
}

/* A thread that sleeps in small steps once told to go. */
static gpointer
sleeper(gpointer data)
{
    GAsyncQueue *q = data;

    g_free(g_async_queue_pop(q));
    for (int i = 0; i < 50; i++)
        g_usleep(200);
    return NULL;
}

/* Two queues: one toward the thread, one back; one would let the thread
 * take its own message. */
typedef struct {
    GAsyncQueue *to_thread;
    GAsyncQueue *to_test;
} Channel;

static gpointer
named_thread(gpointer data)
{
    Channel *ch = data;

    pthread_setname_np(pthread_self(), "IO mine");
    g_async_queue_push(ch->to_test, g_strdup("named"));
    g_free(g_async_queue_pop(ch->to_thread));
    return NULL;
}

/* On the real /proc, a kept descriptor of an exited thread fails. */
static void
test_thread_exit_real(void)
{
    g_autoptr(GAsyncQueue) to_thread = g_async_queue_new();
    g_autoptr(GAsyncQueue) to_test = g_async_queue_new();
    Channel ch = { to_thread, to_test };
    g_autoptr(ProbeTarget) t = probe_target_new(NULL, getpid());
    g_autoptr(ProbeTargetSnap) snap = probe_target_snap_new(getpid(), 0, 0);
    g_autoptr(GError) error = NULL;
    ProbeIothreadSnap *io = probe_target_snap_iothread(snap, "mine");
    GThread *th = g_thread_new("named", named_thread, &ch);
    int tid;

    g_free(g_async_queue_pop(to_test));
    g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_no_error(error);
    tid = io->tid;
    g_assert_cmpint(tid, !=, getpid());
    g_assert_true(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_cmpint(io->tid, ==, tid);

    g_async_queue_push(to_thread, g_strdup("exit"));
    g_thread_join(th);
    g_assert_false(probe_target_sample_iothread(t, io, 0, &error));
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
    g_assert_cmpint(probe_target_iothread_tid(t, "mine"), ==, 0);
}

static void
test_perf_follows_threads(void)
{
    const ProbePerfEvent events[] = {
        { "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
        { "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(ProbePerf) p = NULL;
    g_autoptr(GAsyncQueue) q = g_async_queue_new();
    guint64 t0[2], t1[2], t2[2];
    GThread *th;
    guint n0;

    p = probe_perf_new("/proc", getpid(), events, 2, &error);
    if (!p) {
        g_autofree char *why = g_strdup_printf("perf unavailable: %s",
                                               error->message);
        g_test_skip(why);
        return;
    }
    n0 = probe_perf_n_threads(p);
    g_assert_cmpuint(n0, >=, 1);
    g_assert_true(probe_perf_read_totals(p, t0, &error));

    th = g_thread_new("sleeper", sleeper, q);
    g_assert_true(probe_perf_read_totals(p, t1, &error));
    g_assert_no_error(error);
    g_assert_cmpuint(probe_perf_n_threads(p), ==, n0 + 1);
    g_async_queue_push(q, g_strdup("go"));
    g_thread_join(th);

    /* The thread exited: its counts stay in the totals. */
    g_assert_true(probe_perf_read_totals(p, t2, &error));
    g_assert_cmpuint(probe_perf_n_threads(p), ==, n0);
    g_assert_cmpuint(t1[0], >=, t0[0]);
    g_assert_cmpuint(t2[0], >=, t1[0] + 50);
    g_assert_cmpuint(t2[1], >, t1[1]);
}

static void
test_perf_errors(void)
{
    const ProbePerfEvent bogus[] = {
        { "bogus", PERF_TYPE_TRACEPOINT, G_GUINT64_CONSTANT(4000009999) },
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(ProbePerf) p = NULL;

    p = probe_perf_new("/proc", getpid(), bogus, 1, &error);
    g_assert_null(p);
    g_assert_nonnull(error);
    g_assert_nonnull(strstr(error->message, "perf_event_open bogus"));
    g_clear_error(&error);
    p = probe_perf_new(probe_test_fixture("proc-good"), 4242, bogus, 1, &error);
    g_assert_error(error, PROBE_ERROR, PROBE_ERROR_MISSING);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add("/probe/sampler/resolve", TmpTree, NULL, tmp_setup, test_resolve,
               tmp_teardown);
    g_test_add_func("/probe/sampler/tid-hint", test_tid_hint);
    g_test_add_func("/probe/sampler/schedstat-news", test_schedstat_news);
    g_test_add_func("/probe/sampler/vcpus", test_vcpus);
    g_test_add_func("/probe/sampler/exits-auto", test_exits_auto);
    g_test_add_func("/probe/sampler/exits-unavailable", test_exits_unavailable);
    g_test_add_func("/probe/sampler/exits-named-source", test_exits_named_source);
    g_test_add_func("/probe/sampler/exits-choice", test_exits_choice);
    g_test_add_func("/probe/sampler/exits-choose-unreadable", test_exits_choose_unreadable);
    g_test_add_func("/probe/sampler/sample-snap", test_sample_snap);
    g_test_add_func("/probe/sampler/host", test_host_sampler);
    g_test_add_func("/probe/sampler/names", test_source_names);
    g_test_add_func("/probe/sampler/thread-exit-real", test_thread_exit_real);
    g_test_add_func("/probe/perf/follows-threads", test_perf_follows_threads);
    g_test_add_func("/probe/perf/errors", test_perf_errors);
    return g_test_run();
}
