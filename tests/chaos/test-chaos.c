/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chaos run: see chaos.h.  PT_CHAOS_SEED replays a run (the seed is
 * printed first), PT_CHAOS_SECONDS sets its length (default 120).  The
 * argument --chaos-seed=N names the seed instead: tests/chaos/meson.build
 * runs the kept seeds, and those scripts/test.sh draws from the commit,
 * that way, each as a test of its own.
 */
#include "chaos.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef enum {
    CHAOS_PEER,
    CHAOS_CTL_CONNECT_CLOSE,
    CHAOS_CTL_FLOOD,
    CHAOS_CTL_GARBAGE,
    CHAOS_CTL_SLOW,
    CHAOS_CTL_NONROOT,
    CHAOS_METRICS_IDLE,
    CHAOS_QEMU_STOP,
    CHAOS_QEMU_KILL,
    CHAOS_DISK_FULL,
    CHAOS_RELOAD,
    CHAOS_DAEMON_KILL,
    CHAOS_ACTION_MAX,
} ChaosAction;

/* How often each action comes: a uniform gap, in seconds, between two. */
static const struct {
    const char *name;
    guint min_s, max_s;
} chaos_actions[CHAOS_ACTION_MAX] = {
    [CHAOS_PEER] = { "hostile-peer", 3, 10 },
    [CHAOS_CTL_CONNECT_CLOSE] = { "control-connect-close", 2, 6 },
    [CHAOS_CTL_FLOOD] = { "control-flood", 5, 15 },
    [CHAOS_CTL_GARBAGE] = { "control-garbage", 4, 12 },
    [CHAOS_CTL_SLOW] = { "control-one-byte-a-second", 8, 20 },
    [CHAOS_CTL_NONROOT] = { "control-non-root", 15, 35 },
    [CHAOS_METRICS_IDLE] = { "metrics-idle", 8, 20 },
    [CHAOS_QEMU_STOP] = { "qemu-sigstop", 10, 25 },
    [CHAOS_QEMU_KILL] = { "qemu-sigkill", 20, 40 },
    [CHAOS_DISK_FULL] = { "disk-full", 25, 50 },
    [CHAOS_RELOAD] = { "reload", 8, 20 },
    [CHAOS_DAEMON_KILL] = { "daemon-kill-9", 30, 50 },
};

/* Good configurations rotate through these defaults: two static triples
 * (both inside the [policy] bounds) and observe, which puts originals back. */
static const char *const chaos_policies[] = {
    "static:40000/2/2", "static:48000/4/4", "observe",
};
static const ChaosTriple chaos_policy_triples[] = { { 40000, 2, 2 }, { 48000, 4, 4 } };

/* Broken ones, each refused for its own reason. */
static const char *const chaos_broken[] = {
    "interval = banana\n",
    "[policy\n",
    "[policy]\npsi-limit = 200\n",
    /* A key the body does not set: set twice it would be refused for
     * that instead. */
    "[daemon]\non-restart = sometimes\n",
};


static char *
chaos_conf_body(Chaos *ch, const char *broken)
{
    g_autofree char *db = ch->mnt ? g_build_filename(ch->mnt, "history.db", NULL) : NULL;
    g_autofree char *db_line = db ? g_strdup_printf("database = %s\n", db) : g_strdup("");

    /* The test helper then leaves out its own database line. */
    return g_strdup_printf("%sinterval = 1s\nqmp-timeout = 500ms\nmode = enforce\n"
                           "metrics-listen = 127.0.0.1:%u\ncontrol-group = nogroup\n"
                           "[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = %s\nmin-dwell = 0\n%s",
                           db_line, ch->metrics_port, ch->dir, ch->policy, broken ? broken : "");
}

/* Rewrites the file the daemon reads, as pt_test_daemon_start() lays it out. */
static void
chaos_conf_write(Chaos *ch, const char *broken)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *body = chaos_conf_body(ch, broken);
    g_autofree char *conf = pt_test_daemon_conf_text(ch->d, body);

    g_file_set_contents(ch->d->conf_path, conf, -1, &err);
    g_assert_no_error(err);
}

static guint
chaos_free_port(void)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sin);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    g_assert_cmpint(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), ==, 0);
    g_assert_cmpint(getsockname(fd, (struct sockaddr *)&sin, &len), ==, 0);
    close(fd);
    return ntohs(sin.sin_port);
}

/* A tmpfs under the database that only this process and its children see;
 * NULL, with the reason printed, where that cannot be had. */
static char *
chaos_private_tmpfs(void)
{
    g_autoptr(GError) err = NULL;
    char *dir;

    if (geteuid() != 0) {
        g_printerr("# skipping the full disk: mounting a tmpfs needs root\n");
        return NULL;
    }
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        g_printerr("# skipping the full disk: private mount namespace: %s\n", g_strerror(errno));
        return NULL;
    }
    dir = g_dir_make_tmp("pt-chaos-disk-XXXXXX", &err);
    g_assert_no_error(err);
    /* 4 MiB: a 30-minute run writes about 0.4 MiB (4 iothreads, 45 bytes a
     * sample row, docs/BENCHMARKS.md) and the daemon checkpoints its WAL,
     * so only the filler fills it; small, so that what the WAL and the
     * queued ticks need after the disk is freed counts. */
    if (mount("pt-chaos", dir, "tmpfs", 0, "size=4m,mode=0700") < 0) {
        g_printerr("# skipping the full disk: mount tmpfs: %s\n", g_strerror(errno));
        g_rmdir(dir);
        g_free(dir);
        return NULL;
    }
    return dir;
}

static void
chaos_vm_start(Chaos *ch, ChaosVm *vm)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *sock = g_strdup_printf("%s/%s.qmp", ch->dir, vm->name);
    g_autofree char *qmp = g_strdup_printf("unix:%s,server=on,wait=off", sock);
    g_autoptr(GPtrArray) args = g_ptr_array_new_with_free_func(g_free);

    /* Every instance starts with a triple of its own, unlike any other
     * instance's and any policy's, so that a stale original shows. */
    vm->instance = ++ch->next_instance;
    vm->starts++;
    vm->original.max_ns = 10000 + 1000 * vm->instance + g_rand_int_range(ch->rng, 0, 1000);
    vm->original.grow = g_rand_int_range(ch->rng, 0, 4);
    vm->original.shrink = g_rand_int_range(ch->rng, 0, 4);
    /* The name the daemon shows it by (its identity is the socket path). */
    g_ptr_array_add(args, g_strdup("-name"));
    g_ptr_array_add(args, g_strdup(vm->name));
    for (guint i = 0; i < CHAOS_N_IOTHREADS; i++) {
        g_ptr_array_add(args, g_strdup("-object"));
        g_ptr_array_add(args, g_strdup_printf("iothread,id=iot%u,poll-max-ns=%" G_GUINT64_FORMAT
                                              ",poll-grow=%" G_GUINT64_FORMAT
                                              ",poll-shrink=%" G_GUINT64_FORMAT, i,
                                              vm->original.max_ns, vm->original.grow,
                                              vm->original.shrink));
    }
    g_ptr_array_add(args, g_strdup("-qmp"));
    g_ptr_array_add(args, g_steal_pointer(&qmp));
    g_ptr_array_add(args, NULL);
    vm->q = pt_test_qemu_start((const char *const *)args->pdata, &err);
    g_assert_no_error(err);
    vm->stopped_until = 0;
    vm->triple_check_due = TRUE;
    vm->since_what = "its start";
    chaos_vm_eligible(ch, vm);
}

static void
chaos_daemon_limit(Chaos *ch)
{
    struct rlimit rl = { CHAOS_DAEMON_NOFILE, CHAOS_DAEMON_NOFILE };

    /* A low descriptor limit makes exhaustion show within the run. */
    if (prlimit(ch->d->pid, RLIMIT_NOFILE, &rl, NULL) < 0)
        g_printerr("# prlimit(%d, NOFILE): %s\n", ch->d->pid, g_strerror(errno));
    /* uid 65534 must reach the socket; the daemon's own mode guards it. */
    chmod(ch->d->dir, 0711);
}

static void
chaos_peer_start(Chaos *ch)
{
    g_autofree char *path = NULL;
    ChaosPeer *p;
    QmpFakeHostile kind = g_rand_int_range(ch->rng, 0, QMP_FAKE_HOSTILE_MAX);

    if (ch->peers->len >= CHAOS_MAX_PEERS)
        return;
    path = g_strdup_printf("%s/hostile%u-%s.qmp", ch->dir, ch->next_peer++,
                           qmp_fake_hostile_name(kind));
    p = g_new0(ChaosPeer, 1);
    p->peer = qmp_fake_qemu_new_hostile(path, kind);
    p->until = g_get_monotonic_time() +
               (gint64)g_rand_int_range(ch->rng, 5, 26) * G_USEC_PER_SEC;
    g_ptr_array_add(ch->peers, p);
}

static void
chaos_peers_step(Chaos *ch, gboolean all)
{
    for (guint i = 0; i < ch->peers->len;) {
        ChaosPeer *p = ch->peers->pdata[i];

        if (all || g_get_monotonic_time() >= p->until) {
            qmp_fake_qemu_free(p->peer);
            g_free(p);
            g_ptr_array_remove_index_fast(ch->peers, i);
            continue;
        }
        i++;
    }
}

static void
chaos_qemu_stop(Chaos *ch)
{
    ChaosVm *vm = &ch->vms[g_rand_int_range(ch->rng, 0, CHAOS_N_VMS)];

    if (vm->stopped_until)
        return;
    pt_test_qemu_signal(vm->q, SIGSTOP);
    vm->stopped_until = g_get_monotonic_time() +
                        (gint64)g_rand_int_range(ch->rng, 2, 11) * G_USEC_PER_SEC;
    chaos_vm_ineligible(ch, vm, "SIGCONT");
}

static void
chaos_qemu_step(Chaos *ch, gboolean all)
{
    for (guint i = 0; i < CHAOS_N_VMS; i++) {
        ChaosVm *vm = &ch->vms[i];

        if (!vm->stopped_until || (!all && g_get_monotonic_time() < vm->stopped_until))
            continue;
        pt_test_qemu_signal(vm->q, SIGCONT);
        vm->stopped_until = 0;
        vm->since_what = "SIGCONT";
        if (!ch->daemon_down)
            chaos_vm_eligible(ch, vm);
    }
}

/* SIGKILL, then a new QEMU on the same socket name with a new original. */
static void
chaos_qemu_kill(Chaos *ch)
{
    ChaosVm *vm = &ch->vms[g_rand_int_range(ch->rng, 0, CHAOS_N_VMS)];

    chaos_vm_ineligible(ch, vm, "a new QEMU");
    g_clear_pointer(&vm->q, pt_test_qemu_free);
    chaos_vm_start(ch, vm);
    vm->since_what = "a new QEMU on the same name";
    if (ch->daemon_down)
        chaos_vm_ineligible(ch, vm, "the daemon's restart");
}

/* Write zeroes until the file system is full. */
static void
chaos_disk_fill(Chaos *ch)
{
    static char chunk[64 * 1024];
    int fd;

    if (!ch->mnt || ch->filler)
        return;
    ch->filler = g_build_filename(ch->mnt, "filler", NULL);
    fd = open(ch->filler, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    g_assert_cmpint(fd, >=, 0);
    while (write(fd, chunk, sizeof(chunk)) > 0)
        ;
    while (write(fd, chunk, 512) > 0)
        ;
    close(fd);
    ch->disk_full_until = g_get_monotonic_time() +
                          (gint64)g_rand_int_range(ch->rng, 10, 41) * G_USEC_PER_SEC;
    ch->disk_freed_at = 0;
}

static void
chaos_disk_step(Chaos *ch, gboolean all)
{
    if (!ch->filler || (!all && g_get_monotonic_time() < ch->disk_full_until))
        return;
    g_unlink(ch->filler);
    g_clear_pointer(&ch->filler, g_free);
    ch->disk_freed_at = g_get_monotonic_time();
}

static void
chaos_reload(Chaos *ch)
{
    gboolean broken = g_rand_boolean(ch->rng);
    gboolean by_signal = g_rand_boolean(ch->rng);
    const char *bad = chaos_broken[g_rand_int_range(ch->rng, 0, G_N_ELEMENTS(chaos_broken))];

    if (ch->daemon_down)
        return;
    if (!broken)
        ch->policy = chaos_policies[g_rand_int_range(ch->rng, 0, G_N_ELEMENTS(chaos_policies))];
    chaos_conf_write(ch, broken ? bad : NULL);
    if (by_signal) {
        kill(ch->d->pid, SIGHUP);
    } else {
        g_autoptr(GError) err = NULL;
        json_object *reply = chaos_control_call(ch, "reload", NULL, CHAOS_CONTROL_TIMEOUT_MS,
                                                &err);

        if (!reply)
            chaos_violation(ch, "control-answers-root", "reload: %s", err->message);
        else if (broken != !!pt_json_path(reply, "error"))
            chaos_violation(ch, "reload-judges-config", "reload of %s config %s: %s",
                            broken ? "a broken" : "a good", broken ? bad : ch->policy,
                            json_object_to_json_string(reply));
        json_object_put(reply);
    }
    /* A broken file must not outlive the reload: a restart reads it. */
    if (broken) {
        if (by_signal)
            g_usleep(200 * 1000);
        chaos_conf_write(ch, NULL);
    }
}

static void
chaos_daemon_kill(Chaos *ch)
{
    g_autoptr(GError) err = NULL;

    pt_test_daemon_kill(ch->d);
    ch->daemon_down = TRUE;
    for (guint i = 0; i < CHAOS_N_VMS; i++)
        chaos_vm_ineligible(ch, &ch->vms[i], "the daemon's restart");
    chaos_check_log(ch);
    if (!ch->filler)
        chaos_check_integrity(ch, "after kill -9");
    if (!pt_test_daemon_restart(ch->d, &err)) {
        /* The message ends with the whole log: its last error line says why. */
        const char *why = g_strrstr(err->message, "polltuned error: ");

        /* On a full disk the daemon must refuse to start, saying so: running
         * without its history would lose the originals the kill left to
         * restore.  Anything else is a failure to restart. */
        if (!ch->filler || !why || !strstr(why, "is full: free space there"))
            chaos_violation(ch, "daemon-restarts", "%.*s %.*s%s (log: %s)",
                            (int)strcspn(err->message, "\n"), err->message,
                            why ? (int)strcspn(why, "\n") : 0, why ? why : "",
                            ch->filler ? ", on a full disk" : "", ch->d->log_path);
        g_clear_error(&err);
        /* A full disk may keep it from starting; free it and try once more. */
        chaos_disk_step(ch, TRUE);
        if (!pt_test_daemon_restart(ch->d, &err))
            g_error("seed %u: polltuned does not start again: %s", ch->seed, err->message);
    }
    chaos_daemon_limit(ch);
    ch->daemon_down = FALSE;
    for (guint i = 0; i < CHAOS_N_VMS; i++) {
        ChaosVm *vm = &ch->vms[i];

        vm->triple_check_due = TRUE;
        if (!vm->stopped_until)
            chaos_vm_eligible(ch, vm);
    }
}

static void
chaos_act(Chaos *ch, ChaosAction a)
{
    guint n = GPOINTER_TO_UINT(g_hash_table_lookup(ch->action_counts, chaos_actions[a].name));

    g_hash_table_insert(ch->action_counts, (gpointer)chaos_actions[a].name, GUINT_TO_POINTER(n + 1));
    ch->actions++;
    if (g_test_verbose())
        g_printerr("# t=%.1f s: %s\n", (g_get_monotonic_time() - ch->start) / 1e6,
                   chaos_actions[a].name);
    switch (a) {
    case CHAOS_PEER: chaos_peer_start(ch); break;
    case CHAOS_CTL_CONNECT_CLOSE: chaos_abuse_connect_close(ch); break;
    case CHAOS_CTL_FLOOD: chaos_abuse_flood(ch); break;
    case CHAOS_CTL_GARBAGE: chaos_abuse_garbage(ch); break;
    case CHAOS_CTL_SLOW: chaos_abuse_slow(ch); break;
    case CHAOS_CTL_NONROOT: chaos_abuse_nonroot(ch); break;
    case CHAOS_METRICS_IDLE: chaos_abuse_metrics(ch); break;
    case CHAOS_QEMU_STOP: chaos_qemu_stop(ch); break;
    case CHAOS_QEMU_KILL: chaos_qemu_kill(ch); break;
    case CHAOS_DISK_FULL: chaos_disk_fill(ch); break;
    case CHAOS_RELOAD: chaos_reload(ch); break;
    case CHAOS_DAEMON_KILL: chaos_daemon_kill(ch); break;
    case CHAOS_ACTION_MAX: g_assert_not_reached();
    }
}

/* Ends whatever is due (or everything) and checks the invariants. */
static void
chaos_step(Chaos *ch, gboolean all)
{
    chaos_abuse_step(ch, all);
    chaos_peers_step(ch, all);
    chaos_qemu_step(ch, all);
    chaos_disk_step(ch, all);
    chaos_check_all(ch);
    if (!ch->daemon_down && ch->d->pid == 0)
        g_error("seed %u: polltuned died; log in %s (PT_KEEP_TEST_DIRS=1 keeps it)", ch->seed,
                ch->d->log_path);
}

static void
chaos_setup(Chaos *ch)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *body = NULL;
    const char *asan = g_getenv("ASAN_OPTIONS");
    struct rlimit rl;

    /* ASan's quarantine (256 MB by default) would hide growth under its
     * own; a small one keeps RSS a measure of the daemon. */
    if (!asan || !strstr(asan, "quarantine_size_mb")) {
        g_autofree char *opts = g_strdup_printf("%s%squarantine_size_mb=16", asan ? asan : "",
                                                asan && *asan ? ":" : "");

        g_setenv("ASAN_OPTIONS", opts, TRUE);
    }
    /* The harness holds hundreds of idle connections itself. */
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096) {
        rl.rlim_cur = MIN(rl.rlim_max, 4096);
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    ch->dir = g_dir_make_tmp("pt-chaos-XXXXXX", &err);
    g_assert_no_error(err);
    ch->mnt = chaos_private_tmpfs();
    ch->metrics_port = chaos_free_port();
    ch->policy = chaos_policies[0];
    ch->policy_triples = g_ptr_array_new();
    for (guint i = 0; i < G_N_ELEMENTS(chaos_policy_triples); i++)
        g_ptr_array_add(ch->policy_triples, (gpointer)&chaos_policy_triples[i]);
    ch->peers = g_ptr_array_new();
    ch->clients = g_ptr_array_new();
    ch->children = g_array_new(FALSE, FALSE, sizeof(ChaosChild));
    ch->log_stamps = g_array_new(FALSE, FALSE, sizeof(gint64));
    ch->action_counts = g_hash_table_new(g_str_hash, g_str_equal);
    ch->v.first = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
    ch->v.count = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < CHAOS_N_VMS; i++) {
        ch->vms[i].name = g_strdup_printf("vm%u", i);
        chaos_vm_start(ch, &ch->vms[i]);
    }
    body = chaos_conf_body(ch, NULL);
    ch->d = pt_test_daemon_start(body, &err);
    g_assert_no_error(err);
    chaos_daemon_limit(ch);
}

static void
chaos_teardown(Chaos *ch)
{
    for (guint i = 0; i < CHAOS_N_VMS; i++) {
        pt_test_qemu_free(ch->vms[i].q);
        g_free(ch->vms[i].name);
    }
    pt_test_daemon_free(ch->d);
    if (ch->mnt) {
        umount2(ch->mnt, MNT_DETACH);
        g_rmdir(ch->mnt);
    }
    if (ch->dir) {
        g_autoptr(GDir) gd = g_dir_open(ch->dir, 0, NULL);
        const char *n;

        while (gd && (n = g_dir_read_name(gd))) {
            g_autofree char *p = g_build_filename(ch->dir, n, NULL);

            g_unlink(p);
        }
        g_rmdir(ch->dir);
    }
    g_free(ch->dir);
    g_free(ch->mnt);
    g_ptr_array_unref(ch->policy_triples);
    g_ptr_array_unref(ch->peers);
    g_ptr_array_unref(ch->clients);
    g_array_unref(ch->children);
    g_array_unref(ch->log_stamps);
    g_hash_table_unref(ch->action_counts);
    g_hash_table_unref(ch->v.first);
    g_hash_table_unref(ch->v.count);
    g_rand_free(ch->rng);
}

/* The end: everything stops, the daemon catches up, and a clean stop
 * puts every QEMU back to its own original. */
static void
chaos_finish(Chaos *ch)
{
    gint64 settle = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    int status;

    chaos_step(ch, TRUE);
    while (g_get_monotonic_time() < settle) {
        chaos_step(ch, FALSE);
        g_usleep(250 * 1000);
    }
    status = pt_test_daemon_stop(ch->d);
    chaos_check_log(ch);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        chaos_violation(ch, "clean-stop", "SIGTERM: wait status 0x%x (log: %s)", status,
                        ch->d->log_path);
    for (guint i = 0; i < CHAOS_N_VMS; i++)
        chaos_check_triples(ch, &ch->vms[i], TRUE, "a clean stop");
    chaos_check_integrity(ch, "after a clean stop");
}

static void
chaos_report(Chaos *ch)
{
    GHashTableIter it;
    gpointer k, v;

    g_printerr("# seed %u, %.0f s, %u actions, RSS %" G_GUINT64_FORMAT " -> max %" G_GUINT64_FORMAT
               " KiB, max %u descriptors, max %u log lines a minute\n", ch->seed,
               (g_get_monotonic_time() - ch->start) / 1e6, ch->actions, ch->rss_base_kb,
               ch->rss_max_kb, ch->fd_max, ch->log_max_per_min);
    for (guint i = 0; i < CHAOS_N_VMS; i++)
        g_printerr("#   %s: sampled every tick over %" G_GINT64_FORMAT " ticks checked, %u instances\n",
                   ch->vms[i].name, ch->vms[i].followed_ticks, ch->vms[i].starts);
    g_hash_table_iter_init(&it, ch->action_counts);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_printerr("#   %-28s %u\n", (const char *)k, GPOINTER_TO_UINT(v));
    g_hash_table_iter_init(&it, ch->v.first);
    while (g_hash_table_iter_next(&it, &k, &v))
        g_printerr("# FAILED %s (%u times), first at %s\n", (const char *)k,
                   GPOINTER_TO_UINT(g_hash_table_lookup(ch->v.count, k)), (const char *)v);
}

/* From --chaos-seed=N; NULL: PT_CHAOS_SEED, else a random one. */
static const char *chaos_seed_arg;

static void
test_chaos_run(void)
{
    const char *seed_env = chaos_seed_arg ? chaos_seed_arg : g_getenv("PT_CHAOS_SEED");
    const char *secs_env = g_getenv("PT_CHAOS_SECONDS");
    guint seconds = secs_env ? (guint)g_ascii_strtoull(secs_env, NULL, 10) : 120;
    gint64 next[CHAOS_ACTION_MAX];
    GRand *rngs[CHAOS_ACTION_MAX];
    Chaos ch = { 0 };

    if (pt_test_skip_without_qemu())
        return;
    if (seconds < 10) {
        g_test_message("PT_CHAOS_SECONDS=%s: at least 10", secs_env);
        g_test_fail();
        return;
    }
    ch.seed = seed_env ? (guint32)g_ascii_strtoull(seed_env, NULL, 10) : g_random_int();
    g_printerr("# chaos: PT_CHAOS_SEED=%u PT_CHAOS_SECONDS=%u replays this run\n", ch.seed,
               seconds);
    /* One generator per action: a replay draws the same gaps and choices
     * for each even when a loaded machine interleaves them differently. */
    for (guint a = 0; a < CHAOS_ACTION_MAX; a++)
        rngs[a] = g_rand_new_with_seed(ch.seed + a);
    ch.rng = g_rand_new_with_seed(ch.seed + CHAOS_ACTION_MAX);
    chaos_setup(&ch);
    ch.start = g_get_monotonic_time();
    ch.end = ch.start + (gint64)seconds * G_USEC_PER_SEC;
    for (guint a = 0; a < CHAOS_ACTION_MAX; a++)
        next[a] = ch.start + (gint64)g_rand_int_range(rngs[a], 3, chaos_actions[a].max_s + 4) *
                             G_USEC_PER_SEC;
    while (g_get_monotonic_time() < ch.end) {
        for (guint a = 0; a < CHAOS_ACTION_MAX; a++) {
            if (g_get_monotonic_time() < next[a])
                continue;
            GRand *own = ch.rng;

            ch.rng = rngs[a];
            chaos_act(&ch, a);
            ch.rng = own;
            next[a] = g_get_monotonic_time() +
                      (gint64)g_rand_int_range(rngs[a], chaos_actions[a].min_s,
                                               chaos_actions[a].max_s + 1) * G_USEC_PER_SEC;
        }
        chaos_step(&ch, FALSE);
        g_usleep(200 * 1000);
    }
    chaos_finish(&ch);
    chaos_report(&ch);
    if (g_hash_table_size(ch.v.first) > 0) {
        g_test_message("seed %u: %u invariants failed (see above)", ch.seed,
                       g_hash_table_size(ch.v.first));
        g_test_fail();
    }
    chaos_teardown(&ch);
    for (guint a = 0; a < CHAOS_ACTION_MAX; a++)
        g_rand_free(rngs[a]);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    for (int i = 1; i < argc; i++)
        if (g_str_has_prefix(argv[i], "--chaos-seed="))
            chaos_seed_arg = argv[i] + strlen("--chaos-seed=");
    g_test_add_func("/chaos/run", test_chaos_run);
    return g_test_run();
}
