/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Faults: a database locked by another process, a full disk (a real
 * small tmpfs), a corrupt file at open, SIGKILL in the middle of writing,
 * the file or its WAL deleted or replaced while open, and its header
 * overwritten while open.
 */
#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "store-testutil.h"

#define T0 G_GINT64_CONSTANT(1764590400000)   /* 2025-12-01T12:00:00Z */

/* Takes every queued notice; returns how many contained @needle. */
static guint
notices_matching(StoreDb *db, const char *needle, guint *total)
{
    guint n = 0;
    char *msg;

    *total = 0;
    while ((msg = store_db_take_notice(db))) {
        g_test_message("notice: %s", msg);
        if (strstr(msg, needle))
            n++;
        (*total)++;
        g_free(msg);
    }
    return n;
}

static void
write_tick(StoreDb *db, TestTick *t, gint64 ts)
{
    g_autoptr(GError) error = NULL;

    test_tick_fill(t, ts, (guint64)ts / 1000);
    g_assert_true(store_tick_write(db, &t->tick, &error));
    g_assert_no_error(error);
}

/* ---- locked by another process -------------------------------------- */

static void
test_locked(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(4);
    int locked[2], release[2], status;
    StoreStats stats;
    gint64 start, took;
    guint total;
    pid_t pid;
    char c;

    test_db_setup(&fx, NULL);
    g_assert_cmpint(pipe(locked), ==, 0);
    g_assert_cmpint(pipe(release), ==, 0);
    pid = fork();
    g_assert_cmpint(pid, >=, 0);
    if (pid == 0) {
        sqlite3 *other = NULL;

        if (sqlite3_open(fx.path, &other) != SQLITE_OK ||
            sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            _exit(1);
        if (write(locked[1], "L", 1) != 1 || read(release[0], &c, 1) != 1)
            _exit(2);
        if (sqlite3_exec(other, "COMMIT", NULL, NULL, NULL) == SQLITE_OK &&
            sqlite3_close(other) == SQLITE_OK && write(locked[1], "D", 1) != 1)
            _exit(3);
        _exit(0);
    }
    g_assert_cmpint(read(locked[0], &c, 1), ==, 1);

    start = g_get_monotonic_time();
    write_tick(fx.db, t, T0);
    took = g_get_monotonic_time() - start;
    write_tick(fx.db, t, T0 + 1000);
    store_db_get_stats(fx.db, &stats);
    g_assert_cmpint(stats.health, ==, STORE_HEALTH_BUSY);
    g_assert_cmpuint(stats.pending_ticks, ==, 2);
    /* waited for the busy timeout (100 ms), not much longer */
    g_assert_cmpint(took, >=, 90000);
    g_assert_cmpint(took, <, 2000000);
    /* one notice for the whole episode */
    g_assert_cmpuint(notices_matching(fx.db, "locked by another process", &total), ==, 1);
    g_assert_cmpuint(total, ==, 1);

    g_assert_cmpint(write(release[1], "U", 1), ==, 1);
    /* The child reports its own success: under valgrind its exit status
     * also carries leak reports about memory it inherited. */
    g_assert_cmpint(read(locked[0], &c, 1), ==, 1);
    g_assert_cmpint(c, ==, 'D');
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    write_tick(fx.db, t, T0 + 2000);
    store_db_get_stats(fx.db, &stats);
    g_assert_cmpint(stats.health, ==, STORE_HEALTH_OK);
    g_assert_cmpuint(stats.pending_ticks, ==, 0);
    g_assert_cmpuint(notices_matching(fx.db, "writing again", &total), ==, 1);
    /* all three, in order */
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 3);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks a JOIN ticks b"
                                       " ON b.id = a.id + 1 WHERE b.ts <= a.ts"), ==, 0);
    for (int i = 0; i < 2; i++) {
        close(locked[i]);
        close(release[i]);
    }
}

/* ---- disk full -------------------------------------------------------- */

/* Fills the filesystem of @path until ENOSPC. */
static void
fill_up(const char *path)
{
    static char block[4096];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

    g_assert_cmpint(fd, >=, 0);
    while (write(fd, block, sizeof(block)) > 0)
        ;
    g_assert_cmpint(errno, ==, ENOSPC);
    close(fd);
}

/*
 * Writes 10 ticks @step_ms apart from @ts, fills the filesystem through
 * @filler, and keeps ticking, as the daemon would, until the store notices.
 * Returns the time of the next tick.
 */
static gint64
tick_until_full(StoreDb *db, TestTick *t, const char *filler, gint64 ts, gint64 step_ms)
{
    StoreStats stats;

    for (int i = 0; i < 10; i++, ts += step_ms)
        write_tick(db, t, ts);
    fill_up(filler);
    for (int i = 0; i < 5000; i++) {
        write_tick(db, t, ts);
        ts += step_ms;
        store_db_get_stats(db, &stats);
        if (stats.health == STORE_HEALTH_FULL)
            break;
    }
    g_assert_cmpint(stats.health, ==, STORE_HEALTH_FULL);
    return ts;
}

/*
 * After a full disk: the store writes again, said so once, holds @n ticks
 * from @since_ms on, and the file is sound.  Closes *@db.
 */
static void
assert_recovered(StoreDb **db, const char *path, gint64 since_ms, gint64 n)
{
    g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM ticks WHERE ts >= %"
                                           G_GINT64_FORMAT, since_ms);
    StoreStats stats;
    guint total;

    store_db_get_stats(*db, &stats);
    g_assert_cmpint(stats.health, ==, STORE_HEALTH_OK);
    g_assert_cmpuint(stats.pending_ticks, ==, 0);
    g_assert_cmpuint(notices_matching(*db, "writing again", &total), ==, 1);
    g_assert_cmpint(test_sql_int(path, sql), ==, n);
    g_assert_cmpint(test_sql_int(path, "SELECT integrity_check = 'ok' FROM pragma_integrity_check"),
                    ==, 1);
    g_clear_pointer(db, store_db_close);
}

/*
 * Mounts a real small filesystem (2 MiB tmpfs) on @dir, in a mount namespace
 * of our own so nothing outlives the test.  FALSE after g_test_skip().
 */
static gboolean
private_tmpfs(const char *dir)
{
    if (unshare(CLONE_NEWNS) != 0) {
        g_autofree char *why = g_strdup_printf("cannot create a mount namespace: %s",
                                               g_strerror(errno));
        g_test_skip(why);
        return FALSE;
    }
    if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) != 0 ||
        mount("tmpfs", dir, "tmpfs", 0, "size=2m") != 0) {
        g_autofree char *why = g_strdup_printf("cannot mount a 2 MiB tmpfs: %s",
                                               g_strerror(errno));
        g_test_skip(why);
        return FALSE;
    }
    return TRUE;
}

static void
test_disk_full(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    g_autofree char *filler = g_build_filename(dir, "filler", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(TestTick) t = test_tick_new(8);
    StoreOptions opts;
    StoreStats stats;
    gint64 ts = T0, slowest = 0;
    guint total;

    if (!private_tmpfs(dir)) {
        test_dir_remove(dir);
        return;
    }
    store_options_init(&opts);
    opts.max_pending_ticks = 20;
    db = store_db_open(path, &opts, &error);
    g_assert_no_error(error);
    ts = tick_until_full(db, t, filler, ts, 1000);
    for (int i = 0; i < 50; i++, ts += 1000) {
        gint64 start = g_get_monotonic_time();

        write_tick(db, t, ts);
        slowest = MAX(slowest, g_get_monotonic_time() - start);
    }
    store_db_get_stats(db, &stats);
    g_test_message("slowest tick while full: %" G_GINT64_FORMAT " us", slowest);
    /* A full disk must not stall a tick on retries: bounded, not fast. */
    g_assert_cmpint(slowest, <, 2000000);
    g_assert_cmpuint(stats.pending_ticks, ==, 20);
    g_assert_cmpuint(stats.ticks_dropped, >=, 30);
    /* logged once: one notice that the disk is full, one that ticks drop */
    g_assert_cmpuint(notices_matching(db, "disk full", &total), ==, 1);
    g_assert_cmpuint(total, ==, 2);

    /* Space returns: the pending ticks and the new one are written. */
    g_assert_cmpint(g_unlink(filler), ==, 0);
    write_tick(db, t, ts);
    store_db_get_stats(db, &stats);
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM ticks"), ==,
                    (gint64)stats.ticks_written);
    /* the newest 21 ticks are all there */
    assert_recovered(&db, path, ts - 20000, 21);
    umount(dir);
    test_dir_remove(dir);
}

/*
 * The daemon's worst case: a 100 ms interval, a full disk for long enough
 * to fill the whole queue (600 ticks) and drop some, then space freed.
 * Written one transaction each, 600 ticks need a WAL several times the size
 * of this 2 MiB filesystem; the store must checkpoint and truncate it as it
 * goes, and be writing again within a few ticks with every queued tick kept.
 */
static void
test_disk_full_fast(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    g_autofree char *filler = g_build_filename(dir, "filler", NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(TestTick) t = test_tick_new(2);
    StoreStats stats;
    gint64 ts = T0, first_pending, slowest = 0;
    guint64 dropped;
    guint total, ticks_to_recover = 0;

    if (!private_tmpfs(dir)) {
        test_dir_remove(dir);
        return;
    }
    db = store_db_open(path, NULL, &error);
    g_assert_no_error(error);
    ts = tick_until_full(db, t, filler, ts, 100);
    /* 75 s at 100 ms: the queue fills and the oldest ticks drop. */
    for (int i = 0; i < 750; i++, ts += 100)
        write_tick(db, t, ts);
    store_db_get_stats(db, &stats);
    g_assert_cmpuint(stats.pending_ticks, ==, 600);
    g_assert_cmpuint(stats.ticks_dropped, >, 100);
    dropped = stats.ticks_dropped;
    first_pending = ts - 600 * 100;
    notices_matching(db, "", &total);

    g_assert_cmpint(g_unlink(filler), ==, 0);
    while (ticks_to_recover < 20) {
        gint64 start = g_get_monotonic_time();

        write_tick(db, t, ts);
        slowest = MAX(slowest, g_get_monotonic_time() - start);
        ts += 100;
        ticks_to_recover++;
        store_db_get_stats(db, &stats);
        if (stats.health == STORE_HEALTH_OK && stats.pending_ticks == 0)
            break;
    }
    g_test_message("writing again after %u ticks; %u pending; that tick took %" G_GINT64_FORMAT
                   " us", ticks_to_recover, stats.pending_ticks, slowest);
    g_assert_cmpuint(ticks_to_recover, <=, 3);
    /* nothing lost that was queued, and nothing dropped after the space came back */
    g_assert_cmpuint(stats.ticks_dropped, ==, dropped);
    assert_recovered(&db, path, first_pending, 600 + ticks_to_recover);
    umount(dir);
    test_dir_remove(dir);
}

/*
 * A database on a read-only filesystem (an existing one, and one still to
 * create): sqlite alone says "attempt to write a readonly database" or
 * "unable to open database file"; the error must name the path and why.
 */
static void
test_read_only_dir(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    g_autofree char *fresh = g_build_filename(dir, "new.db", NULL);
    g_autofree char *want = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(TestTick) t = test_tick_new(2);

    if (!private_tmpfs(dir)) {
        test_dir_remove(dir);
        return;
    }
    db = store_db_open(path, NULL, &error);
    g_assert_no_error(error);
    write_tick(db, t, T0);
    g_clear_pointer(&db, store_db_close);
    g_assert_cmpint(mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL), ==, 0);

    want = g_strdup_printf("%s: directory %s is on a read-only filesystem", path, dir);
    db = store_db_open(path, NULL, &error);
    g_assert_null(db);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_READ_ONLY);
    g_test_message("%s", error->message);
    g_assert_true(g_str_has_prefix(error->message, want));
    g_assert_nonnull(strstr(error->message, "WAL"));
    g_clear_error(&error);

    g_clear_pointer(&want, g_free);
    want = g_strdup_printf("%s: directory %s is on a read-only filesystem", fresh, dir);
    db = store_db_open(fresh, NULL, &error);
    g_assert_null(db);
    g_assert_error(error, G_IO_ERROR, G_IO_ERROR_READ_ONLY);
    g_assert_true(g_str_has_prefix(error->message, want));
    umount(dir);
    test_dir_remove(dir);
}

/* ---- corrupt file at open -------------------------------------------- */

static void
test_corrupt_header(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    g_autofree char *aside = g_strconcat(path, ".corrupt-20251201T120000Z", NULL);
    g_autofree char *garbage = g_strnfill(8192, 'x');
    g_autofree char *kept = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(StoreDb) db = NULL;
    g_autoptr(TestTick) t = test_tick_new(2);
    StoreOptions opts;
    StoreStats stats;
    guint total;

    g_assert_true(g_file_set_contents(path, garbage, -1, &error));
    store_options_init(&opts);
    opts.now_ms = T0;
    db = store_db_open(path, &opts, &error);
    g_assert_no_error(error);
    g_assert_nonnull(db);
    g_assert_cmpuint(notices_matching(db, aside, &total), ==, 1);
    g_assert_true(g_file_get_contents(aside, &kept, NULL, &error));
    g_assert_cmpstr(kept, ==, garbage);
    store_db_get_stats(db, &stats);
    g_assert_cmpuint(stats.reopens, ==, 1);
    write_tick(db, t, T0);
    g_assert_cmpint(test_sql_int(path, "PRAGMA user_version"), ==, store_schema_version());
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM samples"), ==, 2);
    g_clear_pointer(&db, store_db_close);
    test_dir_remove(dir);
}

static void
test_corrupt_page(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(20);
    StoreOptions opts;
    guint total;
    char junk[4096];
    int fd;

    test_db_setup(&fx, NULL);
    for (int i = 0; i < 200; i++)
        write_tick(fx.db, t, T0 + i * 1000);
    g_clear_pointer(&fx.db, store_db_close);
    /* scribble over a b-tree page in the middle of the file */
    memset(junk, 0xa5, sizeof(junk));
    fd = open(fx.path, O_WRONLY | O_CLOEXEC);
    g_assert_cmpint(pwrite(fd, junk, sizeof(junk), 20 * 4096), ==, sizeof(junk));
    close(fd);

    store_options_init(&opts);
    opts.now_ms = T0;
    opts.verify_at_open = TRUE;
    test_db_reopen(&fx, &opts);
    g_assert_cmpuint(notices_matching(fx.db, "was corrupt", &total), ==, 1);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM samples"), ==, 0);
}

/* ---- SIGKILL while writing ------------------------------------------- */

static G_GNUC_NORETURN void
writer_child(const char *path, gint64 first_ts, int ack_fd)
{
    StoreDb *db = store_db_open(path, NULL, NULL);
    TestTick *t = test_tick_new(16);
    StoreStats stats;

    if (!db)
        _exit(3);
    for (gint64 ts = first_ts;; ts += 1000) {
        test_tick_fill(t, ts, (guint64)ts / 1000);
        if (!store_tick_write(db, &t->tick, NULL))
            _exit(4);
        store_db_get_stats(db, &stats);
        if (stats.pending_ticks == 0 && write(ack_fd, &ts, sizeof(ts)) != sizeof(ts))
            _exit(5);
    }
}

static void
test_sigkill(void)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    gint64 next_ts = T0;

    for (int iter = 0; iter < 8; iter++) {
        gint64 start = g_get_monotonic_time();
        gint64 deadline = start + g_test_rand_int_range(20, 200) * 1000;
        gint64 first = next_ts, acked = G_MININT64, ts;
        g_autofree char *sql = NULL;
        int fds[2], status;
        guint acks = 0;
        pid_t pid;

        g_assert_cmpint(pipe(fds), ==, 0);
        pid = fork();
        g_assert_cmpint(pid, >=, 0);
        if (pid == 0) {
            close(fds[0]);
            writer_child(path, first, fds[1]);
        }
        close(fds[1]);
        /* The first acknowledgement (slow under sanitizers) starts the clock. */
        g_assert_cmpint(read(fds[0], &ts, sizeof(ts)), ==, sizeof(ts));
        acked = ts;
        acks++;
        deadline += g_get_monotonic_time() - start;
        /* Read acknowledgements until the deadline, then kill mid-write. */
        while (g_get_monotonic_time() < deadline) {
            struct pollfd p = { fds[0], POLLIN, 0 };

            if (poll(&p, 1, 5) > 0 && read(fds[0], &ts, sizeof(ts)) == sizeof(ts)) {
                acked = ts;
                acks++;
            }
        }
        kill(pid, SIGKILL);
        g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
        g_assert_true(WIFSIGNALED(status));
        while (read(fds[0], &ts, sizeof(ts)) == sizeof(ts)) {
            acked = ts;
            acks++;
        }
        close(fds[0]);
        g_assert_cmpuint(acks, >, 0);

        g_assert_cmpint(test_sql_int(path, "SELECT integrity_check = 'ok'"
                                           " FROM pragma_integrity_check"), ==, 1);
        /* Every acknowledged tick is there; at most the one in flight
         * (written but not yet acknowledged) beyond it. */
        sql = g_strdup_printf("SELECT count(*) FROM ticks WHERE ts BETWEEN %" G_GINT64_FORMAT
                              " AND %" G_GINT64_FORMAT, first, acked);
        g_assert_cmpint(test_sql_int(path, sql), ==, (acked - first) / 1000 + 1);
        g_clear_pointer(&sql, g_free);
        sql = g_strdup_printf("SELECT count(*) FROM ticks WHERE ts > %" G_GINT64_FORMAT, acked);
        g_assert_cmpint(test_sql_int(path, sql), <=, 1);
        g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM ticks t WHERE NOT EXISTS"
                                           " (SELECT 1 FROM samples s WHERE s.key >> 20 = t.id"
                                           " AND s.key BETWEEN t.id << 20 AND (t.id + 1) << 20)"),
                        ==, 0);
        next_ts = test_sql_int(path, "SELECT max(ts) FROM ticks") + 1000;
    }
    test_dir_remove(dir);
}

/* ---- deleted or replaced while open ---------------------------------- */

static void
test_deleted_replaced(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autofree char *other_path = NULL;
    g_autoptr(GError) error = NULL;
    g_autoptr(TestTick) t = test_tick_new(2);
    StoreDb *other;
    StoreStats stats;
    guint total;

    test_db_setup(&fx, NULL);
    other_path = g_build_filename(fx.dir, "other.db", NULL);
    write_tick(fx.db, t, T0);
    g_assert_cmpint(g_unlink(fx.path), ==, 0);
    write_tick(fx.db, t, T0 + 1000);
    g_assert_cmpuint(notices_matching(fx.db, "was deleted while open", &total), ==, 1);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 1);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT ts FROM ticks"), ==, T0 + 1000);

    /* someone restores another database over ours */
    other = store_db_open(other_path, NULL, &error);
    g_assert_no_error(error);
    write_tick(other, t, T0 - 60000);
    store_db_close(other);
    g_assert_cmpint(g_rename(other_path, fx.path), ==, 0);
    write_tick(fx.db, t, T0 + 2000);
    g_assert_cmpuint(notices_matching(fx.db, "was replaced while open", &total), ==, 1);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 2);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT min(ts) FROM ticks"), ==, T0 - 60000);
    store_db_get_stats(fx.db, &stats);
    g_assert_cmpuint(stats.reopens, ==, 2);
    g_assert_cmpuint(stats.pending_ticks, ==, 0);
}

/* ---- the WAL deleted or replaced while open --------------------------- */

static gboolean
save_original(StoreDb *db, const char *iothread, gint64 poll_max_ns)
{
    StoreTriple tr = { poll_max_ns, 2, 0 };

    return store_original_save(db, "vm0", iothread, &tr, "instance-1", T0, NULL);
}

/*
 * In a child, which then dies without closing (as kill -9 leaves it): an
 * original saved, the WAL that holds it deleted (or replaced, with
 * @recreate) before the next write of the same tick, a second original
 * and a tick.  Exits 0 when the store said so once and reopened once.
 */
static G_GNUC_NORETURN void
wal_gone_child(const char *path, gboolean recreate)
{
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    StoreDb *db = store_db_open(path, NULL, NULL);
    TestTick *t = test_tick_new(2);
    StoreStats stats;
    guint total;

    if (!db)
        _exit(2);
    test_tick_fill(t, T0, 1);
    if (!store_tick_write(db, &t->tick, NULL) || !save_original(db, "iothread0", 1000))
        _exit(3);
    if (g_unlink(wal) != 0 || (recreate && !g_file_set_contents(wal, "", 0, NULL)))
        _exit(4);
    test_tick_fill(t, T0 + 1000, 2);
    if (!save_original(db, "iothread1", 2000) || !store_tick_write(db, &t->tick, NULL))
        _exit(5);
    store_db_get_stats(db, &stats);
    if (stats.reopens != 1 || stats.pending_ticks != 0)
        _exit(6);
    if (notices_matching(db, recreate ? "-wal was replaced while open" :
                         "-wal was deleted while open", &total) != 1 || total != 1)
        _exit(7);
    if (!store_db_last_incident(db, NULL) || !strstr(store_db_last_incident(db, NULL), "WAL"))
        _exit(8);
    _exit(0);
}

static void
wal_gone(gboolean recreate)
{
    g_autofree char *dir = test_dir_new();
    g_autofree char *path = g_build_filename(dir, "h.db", NULL);
    int status;
    pid_t pid = fork();

    g_assert_cmpint(pid, >=, 0);
    if (pid == 0)
        wal_gone_child(path, recreate);
    g_assert_cmpint(waitpid(pid, &status, 0), ==, pid);
    g_assert_true(WIFEXITED(status));
    /* 2 to 5: a write failed; from 6 on, all were made but the store
     * did not say what happened (checked after what was kept). */
    g_assert_true(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) >= 6);
    /* Both originals and both ticks outlived the process: the first from
     * the deleted WAL, copied into the database when the loss was seen. */
    g_assert_cmpint(test_sql_int(path, "SELECT integrity_check = 'ok'"
                                       " FROM pragma_integrity_check"), ==, 1);
    g_assert_cmpint(test_sql_int(path, "SELECT poll_max_ns FROM originals o JOIN iothreads i"
                                       " ON i.id = o.iothread_id WHERE i.name = 'iothread0'"),
                    ==, 1000);
    g_assert_cmpint(test_sql_int(path, "SELECT poll_max_ns FROM originals o JOIN iothreads i"
                                       " ON i.id = o.iothread_id WHERE i.name = 'iothread1'"),
                    ==, 2000);
    g_assert_cmpint(test_sql_int(path, "SELECT count(*) FROM ticks"), ==, 2);
    g_assert_cmpint(WEXITSTATUS(status), ==, 0);
    test_dir_remove(dir);
}

static void
test_wal_deleted_between_writes(void)
{
    wal_gone(FALSE);
}

static void
test_wal_replaced_between_writes(void)
{
    wal_gone(TRUE);
}

/* ---- the header overwritten while open -------------------------------- */

static void
test_header_overwritten(void)
{
    g_auto(TestDb) fx = { 0 };
    g_autoptr(TestTick) t = test_tick_new(2);
    g_autofree char *junk = g_strnfill(100, 'x');
    char head[16];
    StoreStats stats;
    guint total;
    gint64 at = 0;
    int fd;

    test_db_setup(&fx, NULL);
    write_tick(fx.db, t, T0);
    /* A closed file has its pages, header included, in the file itself. */
    test_db_reopen(&fx, NULL);
    write_tick(fx.db, t, T0 + 1000);
    fd = open(fx.path, O_WRONLY | O_CLOEXEC);
    g_assert_cmpint(pwrite(fd, junk, 100, 0), ==, 100);
    close(fd);

    g_assert_true(store_db_check(fx.db, T0 + 1500, NULL));
    write_tick(fx.db, t, T0 + 2000);
    g_assert_cmpuint(notices_matching(fx.db, "had a corrupt header; rewrote it", &total), ==, 1);
    g_assert_cmpuint(total, ==, 1);
    g_assert_nonnull(strstr(store_db_last_incident(fx.db, &at), "corrupt header"));
    g_assert_cmpint(at, ==, T0 + 1500);
    store_db_get_stats(fx.db, &stats);
    g_assert_cmpuint(stats.corruptions, ==, 1);
    g_assert_cmpuint(stats.reopens, ==, 0);
    fd = open(fx.path, O_RDONLY | O_CLOEXEC);
    g_assert_cmpint(pread(fd, head, sizeof(head), 0), ==, sizeof(head));
    close(fd);
    g_assert_cmpmem(head, sizeof(head), "SQLite format 3", 16);
    /* The history is whole: the next open reads it all, moving nothing aside. */
    test_db_reopen(&fx, NULL);
    g_assert_cmpuint(notices_matching(fx.db, "corrupt", &total), ==, 0);
    g_assert_cmpint(test_sql_int(fx.path, "SELECT count(*) FROM ticks"), ==, 3);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/store/faults/locked", test_locked);
    g_test_add_func("/store/faults/corrupt-header", test_corrupt_header);
    g_test_add_func("/store/faults/corrupt-page", test_corrupt_page);
    g_test_add_func("/store/faults/sigkill", test_sigkill);
    g_test_add_func("/store/faults/deleted-replaced", test_deleted_replaced);
    g_test_add_func("/store/faults/wal-deleted-between-writes", test_wal_deleted_between_writes);
    g_test_add_func("/store/faults/wal-replaced-between-writes", test_wal_replaced_between_writes);
    g_test_add_func("/store/faults/header-overwritten", test_header_overwritten);
    /* last: it leaves this process in a mount namespace of its own */
    g_test_add_func("/store/faults/disk-full", test_disk_full);
    g_test_add_func("/store/faults/disk-full-fast", test_disk_full_fast);
    g_test_add_func("/store/faults/read-only-dir", test_read_only_dir);
    return g_test_run();
}
