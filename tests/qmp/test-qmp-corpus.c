/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The regression corpus of real QMP replies (tests/qmp/corpus/, sources in
 * its SOURCES.md), each through the path the daemon uses: a QmpClient over
 * a socket reads it with its stream splitter and parser at the default
 * limits, and the typed wrapper decodes it.  A greeting file is sent as the
 * peer's greeting; any other file answers the command its name starts with.
 *
 * Every file must have its checks in the table below, and every entry its
 * file, so the corpus cannot grow without assertions.
 */
#include "pt-test-qmp-sync.h"
#include "qmp-decode.h"
#include "qmp-fake-qemu.h"

#include <json-c/json.h>
#include <signal.h>

typedef struct {
    QmpFakeQemu *fake;
    QmpClient *client;
    gboolean unchecked;
} Corpus;

typedef void (*CorpusCheck)(Corpus *c, const char *text);

/* Each reply is checked against the captured schema (qmp-schema.h) of the
 * QEMU it came from, so a capture also proves the check is not stricter
 * than QEMU: 7.2 for what QEMU 7.2 sends, 10.0 for what came with 8.1 and
 * later; 0 for a member no release has (SOURCES.md), sent unchecked. */
typedef struct {
    const char *file;
    CorpusCheck check;
    int major, minor;
} CorpusCase;

static void
corpus_open(Corpus *c)
{
    QmpClientOptions opts = { .name = "corpus" };
    int fd;

    c->fake = qmp_fake_qemu_new(&fd);
    c->client = qmp_client_new(NULL, &opts);
    g_assert_true(qmp_client_adopt_fd(c->client, fd, NULL));
}

static void
corpus_close(Corpus *c)
{
    g_autoptr(GError) err = NULL;

    g_clear_object(&c->client);
    while (g_main_context_iteration(NULL, FALSE))
        ;
    qmp_fake_qemu_finish(c->fake, &err);
    g_assert_no_error(err);
    qmp_fake_qemu_free(c->fake);
}

/* ---- greetings --------------------------------------------------------- */

static void
greeting_expect(Corpus *c, const char *text, int major, int minor, int micro,
                const char *package)
{
    g_autoptr(GError) err = NULL;
    const QmpVersion *v;

    qmp_fake_send_raw(c->fake, text);
    qmp_fake_expect(c->fake, "qmp_capabilities", NULL, "{\"return\": {}}");
    g_assert_true(qmp_client_wait_ready_sync(c->client, &err));
    g_assert_no_error(err);
    v = qmp_client_get_version(c->client);
    g_assert_nonnull(v);
    g_assert_cmpint(v->major, ==, major);
    g_assert_cmpint(v->minor, ==, minor);
    g_assert_cmpint(v->micro, ==, micro);
    g_assert_cmpstr(v->package, ==, package);
}

/* ---- replies ----------------------------------------------------------- */

static void
corpus_expect(Corpus *c, const char *command, const char *args, const char *text)
{
    if (c->unchecked)
        qmp_fake_expect_unchecked(c->fake, command, args, text);
    else
        qmp_fake_expect(c->fake, command, args, text);
}

static void
reply_expect(Corpus *c, const char *command, const char *text)
{
    qmp_fake_handshake(c->fake);
    corpus_expect(c, command, NULL, text);
}

static void
version_expect(Corpus *c, const char *text, int major, int minor, const char *package)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpVersion) v = NULL;

    reply_expect(c, "query-version", text);
    v = qmp_query_version_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_cmpint(v->major, ==, major);
    g_assert_cmpint(v->minor, ==, minor);
    g_assert_cmpint(v->micro, ==, 0);
    g_assert_cmpstr(v->package, ==, package);
}

static void
check_version_7_2_0(Corpus *c, const char *text)
{
    version_expect(c, text, 7, 2, "v7.2.0");
}

static void
check_version_8_2_0(Corpus *c, const char *text)
{
    version_expect(c, text, 8, 2, "v8.2.0");
}

/* With "singlestep" (up to 8.x) and without it (9.0 dropped it): the same. */
static void
check_status_running(Corpus *c, const char *text)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStatus) s = NULL;

    reply_expect(c, "query-status", text);
    s = qmp_query_status_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_true(s->running);
    g_assert_cmpstr(s->status, ==, "running");
}

static void
check_name_unnamed(Corpus *c, const char *text)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *name = NULL;

    reply_expect(c, "query-name", text);
    name = qmp_query_name_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(name, ==, "");
}

static GPtrArray *
blockstats_expect(Corpus *c, const char *text, guint n)
{
    g_autoptr(GError) err = NULL;
    GPtrArray *stats;

    reply_expect(c, "query-blockstats", text);
    stats = qmp_query_blockstats_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(stats->len, ==, n);
    return stats;
}

static void
block_expect_idle(const QmpBlockStats *s, const char *device, const char *node,
                  const char *qdev)
{
    g_assert_cmpstr(s->device, ==, device);
    g_assert_cmpstr(s->node_name, ==, node);
    g_assert_cmpstr(s->qdev, ==, qdev);
    g_assert_cmpint(s->v.v[METRIC_RD_OPS] + s->v.v[METRIC_WR_OPS] + s->v.v[METRIC_FLUSH_OPS], ==, 0);
    g_assert_cmpint(s->v.v[METRIC_RD_BYTES] + s->v.v[METRIC_WR_BYTES], ==, 0);
}

static void
check_blockstats_drive_virtio(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) stats = blockstats_expect(c, text, 1);

    block_expect_idle(stats->pdata[0], "virtio0", "NODE_NAME",
                      "/machine/peripheral-anon/device[0]/virtio-backend");
}

static void
check_blockstats_drive_none(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) stats = blockstats_expect(c, text, 1);

    block_expect_idle(stats->pdata[0], "none0", "NODE_NAME", NULL);
}

static void
check_blockstats_blockdev(Corpus *c, const char *text)
{
    /* -blockdev alone: nodes without a device, none of them listed. */
    g_ptr_array_unref(blockstats_expect(c, text, 0));
}

static void
check_blockstats_blockdev_device(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) stats = blockstats_expect(c, text, 1);

    block_expect_idle(stats->pdata[0], "", "null",
                      "/machine/peripheral/virtio0/virtio-backend");
}

/*
 * What backs each device: the top image's filename for a qcow2 and a raw
 * disk under -blockdev (qdev the virtio-blk's backend, by id or
 * anonymous, as query-blockstats names it), nothing for an empty cdrom.
 */
static void
check_block_7_2(Corpus *c, const char *text)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GPtrArray) blocks = NULL;
    const QmpBlockInfo *b;

    reply_expect(c, "query-block", text);
    blocks = qmp_query_block_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(blocks->len, ==, 3);
    b = blocks->pdata[0];
    g_assert_cmpstr(b->device, ==, "");
    g_assert_cmpstr(b->qdev, ==, "/machine/peripheral/virtio-disk0/virtio-backend");
    g_assert_cmpstr(b->file, ==, "/tmp/devkey-cap/disk-a.qcow2");
    b = blocks->pdata[1];
    g_assert_cmpstr(b->qdev, ==, "/machine/peripheral-anon/device[0]/virtio-backend");
    g_assert_cmpstr(b->file, ==, "/tmp/devkey-cap/raw-b.img");
    b = blocks->pdata[2];
    g_assert_cmpstr(b->qdev, ==, "sata0-0-0");
    g_assert_null(b->file);
}

/* The top image's own counters, not its file node's or a backing image's. */
static void
check_blockstats_backing_chain(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) stats = blockstats_expect(c, text, 1);
    QmpBlockStats *s = stats->pdata[0];

    g_assert_cmpstr(s->device, ==, "");
    g_assert_cmpstr(s->node_name, ==, "libvirt-1-format");
    g_assert_cmpstr(s->qdev, ==, "/machine/peripheral/virtio-disk0/virtio-backend");
    g_assert_cmpint(s->v.v[METRIC_RD_OPS], ==, 11025);
    g_assert_cmpint(s->v.v[METRIC_RD_BYTES], ==, 180355072);
    g_assert_cmpint(s->v.v[METRIC_RD_TIME_NS], ==, 11025 * G_GINT64_CONSTANT(91000));
    g_assert_cmpint(s->v.v[METRIC_WR_OPS], ==, 1502);
    g_assert_cmpint(s->v.v[METRIC_WR_BYTES], ==, 90288128);
    g_assert_cmpint(s->v.v[METRIC_FLUSH_OPS], ==, 37);
    g_assert_cmpint(s->v.v[METRIC_FLUSH_TIME_NS], ==, 37 * 800000);
}

static GPtrArray *
iothreads_expect(Corpus *c, const char *text, guint n)
{
    g_autoptr(GError) err = NULL;
    GPtrArray *threads;

    reply_expect(c, "query-iothreads", text);
    threads = qmp_query_iothreads_sync(c->client, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(threads->len, ==, n);
    return threads;
}

static void
check_iothreads_7_2(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) threads = iothreads_expect(c, text, 2);
    QmpIothread *t0 = threads->pdata[0], *t1 = threads->pdata[1];

    g_assert_cmpstr(t0->id, ==, "iothread1");
    g_assert_cmpint(t0->thread_id, ==, 187442);
    g_assert_cmpuint(t0->poll_max_ns, ==, 32768);
    g_assert_cmpuint(t0->aio_max_batch, ==, 0);
    g_assert_cmpstr(t1->id, ==, "iothread2");
    g_assert_cmpuint(t1->poll_max_ns, ==, 0);
}

/* A member we do not know ("attached") is ignored, as QMP asks. */
static void
check_iothreads_attached(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) threads = iothreads_expect(c, text, 2);
    QmpIothread *t1 = threads->pdata[1];

    g_assert_cmpstr(t1->id, ==, "iothread1");
    g_assert_cmpint(t1->thread_id, ==, 3135);
    g_assert_cmpuint(t1->poll_max_ns, ==, 32768);
    g_assert_cmpuint(t1->poll_grow, ==, 2);
    g_assert_cmpuint(t1->poll_shrink, ==, 4);
    g_assert_cmpuint(t1->aio_max_batch, ==, 32);
}

/* Histograms and booleans are skipped; the counters of both vCPUs add up. */
static void
check_stats_histograms(Corpus *c, const char *text)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpStats) s = NULL;
    const char *const *names = qmp_stats_target_names(QMP_STATS_TARGET_VCPU);
    g_autofree char *args = NULL;
    g_autoptr(GString) list = g_string_new(NULL);
    guint64 v = 0;

    for (gsize i = 0; names[i]; i++)
        g_string_append_printf(list, "%s\"%s\"", i ? ", " : "", names[i]);
    args = g_strdup_printf("{\"target\": \"vcpu\", \"providers\": "
                           "[{\"provider\": \"kvm\", \"names\": [%s]}]}", list->str);
    qmp_fake_handshake(c->fake);
    corpus_expect(c, "query-stats", args, text);
    s = qmp_query_stats_sync(c->client, QMP_STATS_TARGET_VCPU, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(s->entities->len, ==, 2);
    g_assert_true(qmp_stats_sum(s, "exits", &v));
    g_assert_cmpuint(v, ==, 1843301 + 1204412);
    g_assert_true(qmp_stats_sum(s, "halt_exits", &v));
    g_assert_cmpuint(v, ==, 73412 + 61003);
    g_assert_true(qmp_stats_sum(s, "halt_wait_ns", &v));
    g_assert_cmpuint(v, ==, 2 * G_GUINT64_CONSTANT(9876543210));
    g_assert_false(qmp_stats_sum(s, "halt_wait_hist", &v));
    g_assert_false(qmp_stats_sum(s, "guest_mode", &v));
}

/* QEMU 10.0.13, captured (SOURCES.md): iothreads are listed in no
 * particular order (iot0, iot2, iot1 here), each with the triple its
 * -object gave it or QEMU's default (32768, 0, 0). */
static void
check_iothreads_10_0(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) threads = iothreads_expect(c, text, 3);
    QmpIothread *t0 = threads->pdata[0], *t2 = threads->pdata[1];

    g_assert_cmpstr(t0->id, ==, "iot0");
    g_assert_cmpuint(t0->poll_max_ns, ==, 65536);
    g_assert_cmpuint(t0->poll_grow, ==, 4);
    g_assert_cmpuint(t0->poll_shrink, ==, 2);
    g_assert_cmpuint(t0->aio_max_batch, ==, 0);
    g_assert_cmpint(t0->thread_id, >, 0);
    g_assert_cmpstr(t2->id, ==, "iot2");
    g_assert_cmpuint(t2->poll_max_ns, ==, 32768);
    g_assert_cmpuint(t2->poll_grow, ==, 0);
    g_assert_cmpuint(t2->poll_shrink, ==, 0);
}

/* QEMU 10.0.13, captured: a qcow2 two backing images deep under a vq-mapped
 * virtio-blk, and a scsi-hd whose qdev is its id, not a QOM path. */
static void
check_blockstats_10_0_chain(Corpus *c, const char *text)
{
    g_autoptr(GPtrArray) stats = blockstats_expect(c, text, 2);

    block_expect_idle(stats->pdata[0], "", "top", "/machine/peripheral/vdc/virtio-backend");
    block_expect_idle(stats->pdata[1], "", "sdnull", "sd0");
}

/* qom-get iothread-vq-mapping as QEMU 10.0.13 answers it, through the
 * daemon's decoder: the iothreads in order, no "vqs" when the queues were
 * spread round-robin. */
static void
vq_mapping_expect(const char *text, const char *const *want)
{
    g_autoptr(GError) err = NULL;
    json_object *msg = json_tokener_parse(text);
    json_object *ret = NULL;
    g_auto(GStrv) ids = NULL;

    g_assert_nonnull(msg);
    g_assert_true(json_object_object_get_ex(msg, "return", &ret));
    ids = qmp_decode_qom_vq_mapping(ret, &err);
    g_assert_no_error(err);
    g_assert_cmpstrv(ids, want);
    json_object_put(msg);
}

static void
check_vq_mapping_blk(Corpus *c, const char *text)
{
    static const char *const want[] = { "iot0", "iot1", NULL };

    vq_mapping_expect(text, want);
}

static void
check_vq_mapping_scsi(Corpus *c, const char *text)
{
    static const char *const want[] = { "iot2", NULL };

    vq_mapping_expect(text, want);
}

typedef struct {
    const char *file;
    int major, minor, micro;
    const char *package;
} GreetingCase;

static const GreetingCase greeting_cases[] = {
    /* No "oob" capability: Proxmox turns it off. */
    { "greeting-7.2.0-proxmox.json", 7, 2, 0, "pve-qemu-kvm_7.2.0-8" },
    { "greeting-7.2.18-debian.json", 7, 2, 18, "Debian 1:7.2+dfsg-7+deb12u15" },
    { "greeting-8.2.2-ubuntu.json", 8, 2, 2, "Debian 1:8.2.2+ds-0ubuntu1" },
    { "greeting-9.2.50-git.json", 9, 2, 50, "v9.2.0-987-gfd4129a8b9" },
    { "greeting-10.0.11-debian.json", 10, 0, 11, "Debian 1:10.0.11+ds-0+deb13u1" },
    { "greeting-10.0.13-debian.json", 10, 0, 13, "Debian 1:10.0.13+ds-0+deb13u1" },
    { "greeting-10.1.50-git.json", 10, 1, 50, "v10.1.0-1513-g94586867df" },
};

static const CorpusCase corpus_cases[] = {
    { "query-version-7.2.0.json", check_version_7_2_0, 7, 2 },
    { "query-version-8.2.0.json", check_version_8_2_0, 10, 0 },
    { "query-status-7.2.18-singlestep.json", check_status_running, 7, 2 },
    { "query-status-8.2.2-singlestep.json", check_status_running, 7, 2 },
    { "query-status-10.0.11.json", check_status_running, 10, 0 },
    { "query-name-unnamed.json", check_name_unnamed, 7, 2 },
    { "query-blockstats-227-drive-virtio-7.2.json", check_blockstats_drive_virtio, 7, 2 },
    { "query-blockstats-227-drive-virtio.json", check_blockstats_drive_virtio, 10, 0 },
    { "query-blockstats-227-drive-none.json", check_blockstats_drive_none, 10, 0 },
    { "query-blockstats-227-blockdev.json", check_blockstats_blockdev, 10, 0 },
    { "query-blockstats-227-blockdev-device.json", check_blockstats_blockdev_device, 10, 0 },
    { "query-blockstats-backing-chain.json", check_blockstats_backing_chain, 10, 0 },
    { "query-block-7.2.22-debian.json", check_block_7_2, 7, 2 },
    { "query-iothreads-7.2.json", check_iothreads_7_2, 7, 2 },
    { "query-iothreads-attached.json", check_iothreads_attached, 0, 0 },
    { "query-stats-vcpu-histograms.json", check_stats_histograms, 7, 2 },
    { "query-iothreads-10.0.13.json", check_iothreads_10_0, 10, 0 },
    { "query-blockstats-10.0.13-chain.json", check_blockstats_10_0_chain, 10, 0 },
    { "qom-get-vq-mapping-10.0.13-virtio-blk.json", check_vq_mapping_blk, 10, 0 },
    { "qom-get-vq-mapping-10.0.13-virtio-scsi.json", check_vq_mapping_scsi, 10, 0 },
};

static char *
corpus_path(const char *file)
{
    return g_test_build_filename(G_TEST_DIST, "qmp", "corpus", file, NULL);
}

static char *
corpus_read(const char *file)
{
    g_autofree char *path = corpus_path(file);
    g_autoptr(GError) err = NULL;
    char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, &err));
    g_assert_no_error(err);
    return text;
}

static void
test_corpus_greeting(gconstpointer data)
{
    const GreetingCase *gc = data;
    g_autofree char *text = corpus_read(gc->file);
    Corpus c = { 0 };

    corpus_open(&c);
    greeting_expect(&c, text, gc->major, gc->minor, gc->micro, gc->package);
    corpus_close(&c);
}

static void
test_corpus_file(gconstpointer data)
{
    const CorpusCase *cc = data;
    g_autofree char *text = corpus_read(cc->file);
    Corpus c = { 0 };

    corpus_open(&c);
    c.unchecked = cc->major == 0;
    if (cc->major)
        qmp_fake_qemu_set_version(c.fake, cc->major, cc->minor, 0);
    cc->check(&c, text);
    corpus_close(&c);
}

/* Every .json file in the corpus has its entry above, and no entry is stale. */
static void
test_corpus_complete(void)
{
    g_autofree char *dir = corpus_path("");
    g_autoptr(GError) err = NULL;
    g_autoptr(GDir) d = g_dir_open(dir, 0, &err);
    const char *name;
    guint n = 0;

    g_assert_no_error(err);
    while ((name = g_dir_read_name(d))) {
        gboolean known = FALSE;

        if (!g_str_has_suffix(name, ".json"))
            continue;
        for (gsize i = 0; i < G_N_ELEMENTS(corpus_cases); i++)
            known |= g_str_equal(name, corpus_cases[i].file);
        for (gsize i = 0; i < G_N_ELEMENTS(greeting_cases); i++)
            known |= g_str_equal(name, greeting_cases[i].file);
        if (!known)
            g_error("tests/qmp/corpus/%s has no checks in test-qmp-corpus.c", name);
        n++;
    }
    g_assert_cmpuint(n, ==, G_N_ELEMENTS(corpus_cases) + G_N_ELEMENTS(greeting_cases));
}

/* The QMP names of the iothread properties and stats targets: every value
 * has one, and the properties come back from theirs. */
static void
test_qmp_enum_names(void)
{
    for (int i = 0; i < QMP_IOTHREAD_PROP_MAX; i++) {
        const char *name = qmp_iothread_prop_to_string(i);

        g_assert_nonnull(name);
        g_assert_cmpint(qmp_iothread_prop_from_string(name), ==, i);
    }
    g_assert_cmpstr(qmp_iothread_prop_to_string(QMP_IOTHREAD_POLL_MAX_NS), ==, "poll-max-ns");
    g_assert_cmpstr(qmp_iothread_prop_to_string(QMP_IOTHREAD_AIO_MAX_BATCH), ==,
                    "aio-max-batch");
    g_assert_null(qmp_iothread_prop_to_string(QMP_IOTHREAD_PROP_MAX));
    g_assert_cmpint(qmp_iothread_prop_from_string("poll-max"), ==, QMP_IOTHREAD_PROP_INVALID);
    g_assert_cmpint(qmp_iothread_prop_from_string(NULL), ==, QMP_IOTHREAD_PROP_INVALID);
    g_assert_cmpstr(qmp_stats_target_to_string(QMP_STATS_TARGET_VM), ==, "vm");
    g_assert_cmpstr(qmp_stats_target_to_string(QMP_STATS_TARGET_VCPU), ==, "vcpu");
    g_assert_null(qmp_stats_target_to_string(QMP_STATS_TARGET_INVALID));
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/corpus/complete", test_corpus_complete);
    g_test_add_func("/qmp/enum-names", test_qmp_enum_names);
    for (gsize i = 0; i < G_N_ELEMENTS(greeting_cases); i++) {
        g_autofree char *p = g_strdup_printf("/qmp/corpus/%s", greeting_cases[i].file);

        g_test_add_data_func(p, &greeting_cases[i], test_corpus_greeting);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(corpus_cases); i++) {
        g_autofree char *p = g_strdup_printf("/qmp/corpus/%s", corpus_cases[i].file);

        g_test_add_data_func(p, &corpus_cases[i], test_corpus_file);
    }
    return g_test_run();
}
