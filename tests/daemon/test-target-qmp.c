/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The direct QMP backend against a scripted monitor that answers as a KVM
 * QEMU 10.x does, on a host whose debugfs counters cannot be read and
 * whose perf has no tracepoint: the exit figures must be QEMU's own
 * query-stats, rising; the release must be the greeting's.
 *
 * The iothread's aio-max-batch, as query-iothreads reports it, is the
 * snapshot's gauge and the store sample's aio_max_batch.
 *
 * The monitor is reached by path, as the daemon reaches QEMU: the test
 * listens on a socket, lets the target connect and serves the accepted
 * end with the fake.  Its peer is this process, so the host-side roots
 * point at fixtures for this pid.
 */
#include "pt-history.h"
#include "probe-derive.h"
#include "pt-target.h"
#include "qmp-fake-qemu.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "../probe/probe-test.h"

static int
listen_on(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(fd, >=, 0);
    g_assert_cmpuint(strlen(path), <, sizeof(sun.sun_path));
    strcpy(sun.sun_path, path);
    g_assert_cmpint(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), ==, 0);
    g_assert_cmpint(listen(fd, 1), ==, 0);
    return fd;
}

static gboolean
target_attached(PtTarget *t)
{
    return t->state == PT_TARGET_ATTACHED;
}

typedef struct {
    gboolean done;
    guint64 exits;
    ProbeExitSource source;
    gint64 aio_max_batch;       /* as the store gets it */
    char *error;
} SampleResult;

static void
sample_done(PtTarget *t, ProbeTargetSnap *snap, const GError *error, gpointer data)
{
    SampleResult *r = data;

    r->done = TRUE;
    if (error) {
        r->error = g_strdup(error->message);
        return;
    }
    r->source = snap->exits.source;
    r->exits = probe_exit_counters_has(&snap->exits, METRIC_KVM_EXITS)
               ? (guint64)snap->exits.v.v[METRIC_KVM_EXITS] : 0;
    {
        PolicyDelta d;
        StoreSample s;

        g_assert_nonnull(probe_target_snap_find(snap, "iot0"));
        probe_derive_delta(NULL, snap, "iot0", &d);
        pt_history_sample(&d, &s);
        r->aio_max_batch = s.m.v[METRIC_AIO_MAX_BATCH];
    }
    probe_target_snap_free(snap);
}

/* Run the main loop until @t is attached, or fail after a generous 10 s. */
static void
wait_attached(PtTarget *t)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    while (!target_attached(t)) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
}

/* One tick's replies: one iothread on this thread with @batch as its
 * aio-max-batch, no devices, two vCPUs whose exits sum to @exits. */
static void
script_tick(QmpFakeQemu *fake, guint64 exits, guint batch)
{
    g_autofree char *iothreads = g_strdup_printf(
        "{\"return\": [{\"id\": \"iot0\", \"thread-id\": %d, \"poll-max-ns\": 32768,"
        " \"poll-grow\": 0, \"poll-shrink\": 0, \"aio-max-batch\": %u,"
        " \"poll-weight\": 3, \"attached\": true}]}", (int)gettid(), batch);
    g_autofree char *stats = g_strdup_printf(
        "{\"return\": ["
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[0]\","
        "  \"stats\": [{\"name\": \"exits\", \"value\": %" G_GUINT64_FORMAT "}]},"
        " {\"provider\": \"kvm\", \"qom-path\": \"/machine/unattached/device[1]\","
        "  \"stats\": [{\"name\": \"exits\", \"value\": 40}]}]}", exits - 40);

    /* Members a later QEMU may add, which the daemon must ignore. */
    qmp_fake_expect_unchecked(fake, "query-iothreads", NULL, iothreads);
    qmp_fake_expect(fake, "query-blockstats", NULL, "{\"return\": []}");
    qmp_fake_expect(fake, "query-stats", NULL, stats);
}

static void
sample(PtTarget *t, SampleResult *r)
{
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;

    *r = (SampleResult){ 0 };
    pt_target_sample(t, g_get_monotonic_time() * 1000, g_get_real_time() / 1000,
                     sample_done, r);
    while (!r->done) {
        g_assert_cmpint(g_get_monotonic_time(), <, deadline);
        g_main_context_iteration(NULL, TRUE);
    }
    g_assert_null(r->error);
}

static void
test_exits_from_query_stats(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *dir = g_dir_make_tmp("pt-target-qmp-XXXXXX", &err);
    g_autofree char *sock = g_build_filename(dir, "vm.qmp", NULL);
    g_autofree char *debugfs = g_build_filename(dir, "debugfs", NULL);
    g_autofree char *exits_dir = g_strdup_printf("kvm/%d-7/exits/x", (int)getpid());
    ProbeRoots roots = {
        .debugfs = debugfs,
        .tracefs = g_test_get_filename(G_TEST_DIST, "probe", "fixtures", "tracefs-partial", NULL),
    };
    g_autoptr(QmpFakeQemu) fake = NULL;
    g_autoptr(PtTarget) t = NULL;
    g_autofree char *version = NULL;
    const char *why = NULL;
    static const gint64 batch[] = { 0, 8, 32 };
    SampleResult r;
    int lfd, cfd;

    g_assert_no_error(err);
    /* The VM's debugfs directory exists, its "exits" can't be read
     * (a directory: EISDIR, as EPERM under lockdown). */
    probe_test_write(debugfs, exits_dir, "");
    lfd = listen_on(sock);
    t = pt_target_qmp_new("vm", sock, &(PtQmpTargetOptions){ .timeout_ms = 5000,
                                                             .roots = &roots,
                                                             .exits = PROBE_EXITS_AUTO });
    cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    g_assert_cmpint(cfd, >=, 0);
    fake = qmp_fake_qemu_new_fd(cfd);
    qmp_fake_handshake_version(fake, 10, 1, 1);
    qmp_fake_expect(fake, "query-name", NULL, "{\"return\": {\"name\": \"vm-q\"}}");
    qmp_fake_expect(fake, "query-kvm", NULL, "{\"return\": {\"enabled\": true, \"present\": true}}");
    for (guint i = 0; i < G_N_ELEMENTS(batch); i++)
        script_tick(fake, 1000 + 60 * i, (guint)batch[i]);
    wait_attached(t);

    /* QEMU's -name is the name it goes by. */
    g_assert_cmpstr(t->display, ==, "vm-q");
    version = pt_target_qemu_version_string(t);
    g_assert_cmpstr(version, ==, "10.1.1");
    g_assert_cmpint(policy_poll_model_for_version(t->qemu_version), ==, POLICY_POLL_MODEL_10);
    for (guint i = 0; i < G_N_ELEMENTS(batch); i++) {
        sample(t, &r);
        g_assert_cmpint(r.source, ==, PROBE_EXIT_SOURCE_QUERY_STATS);
        g_assert_cmpuint(r.exits, ==, 1000 + 60 * i);
        g_assert_cmpint(r.aio_max_batch, ==, batch[i]);
    }
    g_assert_cmpint(pt_target_exit_source(t, &why), ==, PROBE_EXIT_SOURCE_QUERY_STATS);
    g_assert_cmpstr(why, ==, "QEMU's own KVM statistics");
    /* debugfs was tried and said why it can't serve. */
    g_assert_cmpint(probe_target_source(t->probe, PROBE_SOURCE_DEBUGFS)->state, ==,
                    PROBE_SOURCE_UNAVAILABLE);
    g_assert_true(qmp_fake_qemu_finish(fake, &err));
    g_assert_no_error(err);

    pt_target_set_state(t, PT_TARGET_LOST, "test over");
    t->ops->close(t);
    close(lfd);
    g_unlink(sock);
    probe_test_rmtree(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/target-qmp/exits-from-query-stats", test_exits_from_query_stats);
    return g_test_run();
}
