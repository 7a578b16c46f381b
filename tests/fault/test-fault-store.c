/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Faults under the database: its disk filling up and then freed, and the
 * file deleted while the daemon has it open.  Sampling must go on from
 * memory meanwhile, writes must resume, and what is on disk at the end
 * must pass PRAGMA integrity_check.
 */
#include "fault-common.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <sqlite3.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

static gint64
db_ticks(const char *path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    gint64 n = -1;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, "SELECT count(*) FROM ticks", -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return n;
}

static char *
store_health_dropped(FaultCase *fc, gint64 *pending, gint64 *dropped)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(fc->d, "status", NULL);

    *pending = pt_json_path_int(st, "store/pending");
    if (dropped)
        *dropped = pt_json_path_int(st, "store/dropped");
    return g_strdup(pt_json_path_str(st, "store/health"));
}

static char *
store_health(FaultCase *fc, gint64 *pending)
{
    return store_health_dropped(fc, pending, NULL);
}

/* The daemon's log so far. */
static char *
daemon_log(PtTestDaemon *d)
{
    char *log = NULL;

    g_assert_true(g_file_get_contents(d->log_path, &log, NULL, NULL));
    return log;
}

/* A small tmpfs only this process and its children see. */
static char *
private_tmpfs(const char *size)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *opts = g_strdup_printf("size=%s,mode=0700", size);
    char *dir;

    if (geteuid() != 0) {
        g_test_skip("mounting a small tmpfs needs root (a private mount namespace)");
        return NULL;
    }
    if (unshare(CLONE_NEWNS) < 0) {
        g_autofree char *why = g_strdup_printf("unshare(CLONE_NEWNS): %s", g_strerror(errno));

        g_test_skip(why);
        return NULL;
    }
    g_assert_cmpint(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), ==, 0);
    dir = g_dir_make_tmp("pt-fault-disk-XXXXXX", &err);
    g_assert_no_error(err);
    if (mount("pt-fault", dir, "tmpfs", 0, opts) < 0) {
        g_autofree char *why = g_strdup_printf("mount tmpfs: %s", g_strerror(errno));

        g_rmdir(dir);
        g_free(dir);
        g_test_skip(why);
        return NULL;
    }
    return dir;
}

/* Write zeroes into @path until the file system is full. */
static guint64
fill_disk(const char *path)
{
    static char chunk[64 * 1024];
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    guint64 total = 0;
    ssize_t n;

    g_assert_cmpint(fd, >=, 0);
    while ((n = write(fd, chunk, sizeof(chunk))) > 0)
        total += (guint64)n;
    /* The last few KiB, in small pieces. */
    while ((n = write(fd, chunk, 512)) > 0)
        total += (guint64)n;
    g_assert_cmpint(errno, ==, ENOSPC);
    close(fd);
    return total;
}

/* A daemon whose database lives on a small private tmpfs, filled up. */
typedef struct {
    char *mnt;
    FaultCase *fc;
    char *db;
    char *filler;
} DiskCase;

/* Starts the case with @extra in [daemon], lets it run 2 s, then fills the
 * filesystem; FALSE after g_test_skip(). */
static gboolean
disk_case_start(DiskCase *dc, const char *size, const char *extra)
{
    g_autofree char *conf = NULL;

    if (!(dc->mnt = private_tmpfs(size)) || !(dc->fc = fault_case_new()))
        return FALSE;
    dc->db = g_build_filename(dc->mnt, "history.db", NULL);
    dc->filler = g_build_filename(dc->mnt, "filler", NULL);
    /* The helper then leaves out its own database line. */
    conf = g_strdup_printf("%sdatabase = %s\n", extra ? extra : "", dc->db);
    dc->fc->db = dc->db;
    fault_daemon_start(dc->fc, conf);
    fault_assert_healthy_for(dc->fc, 2);
    fill_disk(dc->filler);
    return TRUE;
}

static void
disk_case_end(DiskCase *dc)
{
    g_clear_pointer(&dc->fc, fault_case_free);
    if (dc->mnt) {
        umount2(dc->mnt, MNT_DETACH);
        g_rmdir(dc->mnt);
    }
    g_free(dc->mnt);
    g_free(dc->db);
    g_free(dc->filler);
}

/* Ticks on, checking the daemon, until at least @n ticks are pending or
 * @timeout_s passes; returns the health, the count in @pending. */
static char *
disk_case_wait_pending(DiskCase *dc, gint64 n, guint timeout_s, gint64 *pending)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_s * G_USEC_PER_SEC;
    char *health = NULL;

    do {
        fault_assert_healthy_for(dc->fc, 1);
        g_free(health);
        health = store_health(dc->fc, pending);
    } while (*pending < n && g_get_monotonic_time() < deadline);
    return health;
}

static void
test_disk_full(void)
{
    DiskCase dc = { 0 };
    FaultCase *fc;
    g_autofree char *health = NULL;
    gint64 pending = 0, before, deadline;
    gboolean saw_trouble = FALSE;

    if (!disk_case_start(&dc, "3m", NULL))
        goto out;
    fc = dc.fc;
    for (guint i = 0; i < 8; i++) {
        fault_assert_healthy_for(fc, 1);
        g_free(health);
        health = store_health(fc, &pending);
        if (g_strcmp0(health, "ok") != 0 || pending > 0)
            saw_trouble = TRUE;
    }
    g_assert_true(saw_trouble);

    /* A policy-set that cannot be stored is refused, naming the database,
     * and takes no effect: a rule must not vanish at the next restart. */
    {
        g_autoptr(GError) err = NULL;
        g_autoptr(json_object) reply = pt_test_daemon_call(
            fc->d, "policy-set", "{\"target\": \"healthy\", \"policy\": \"off\"}", &err);
        g_autoptr(json_object) get = NULL;

        g_assert_no_error(err);
        g_assert_nonnull(pt_json_path(reply, "error"));
        g_assert_nonnull(strstr(pt_json_path_str(reply, "error/desc"), dc.db));
        get = pt_test_daemon_ok(fc->d, "policy-get", NULL);
        g_assert_cmpuint(json_object_array_length(pt_json_path(get, "rules")), ==, 0);
    }

    /* Free the space: the ticks kept in memory and the new ones go in. */
    g_assert_cmpint(g_unlink(dc.filler), ==, 0);
    deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    do {
        fault_assert_healthy_for(fc, 1);
        g_free(health);
        health = store_health(fc, &pending);
    } while ((g_strcmp0(health, "ok") != 0 || pending > 0) && g_get_monotonic_time() < deadline);
    g_assert_cmpstr(health, ==, "ok");
    g_assert_cmpint(pending, ==, 0);
    before = db_ticks(dc.db);
    fault_assert_healthy_for(fc, 3);
    g_assert_cmpint(db_ticks(dc.db), >, before);
    fault_case_finish(fc);
out:
    disk_case_end(&dc);
}

static void
test_db_deleted(void)
{
    g_autoptr(FaultCase) fc = fault_case_new();
    g_autofree char *wal = NULL;
    g_autofree char *shm = NULL;
    gint64 deadline;

    if (!fc)
        return;
    fault_daemon_start(fc, NULL);
    fault_assert_healthy_for(fc, 2);
    g_assert_cmpint(db_ticks(fc->d->db_path), >, 0);
    wal = g_strdup_printf("%s-wal", fc->d->db_path);
    shm = g_strdup_printf("%s-shm", fc->d->db_path);
    g_assert_cmpint(g_unlink(fc->d->db_path), ==, 0);
    g_unlink(wal);
    g_unlink(shm);
    fault_assert_healthy_for(fc, 3);

    /* The daemon notices and starts a new database at the same path. */
    deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    while (db_ticks(fc->d->db_path) <= 0 && g_get_monotonic_time() < deadline)
        fault_assert_healthy_for(fc, 1);
    g_assert_cmpint(db_ticks(fc->d->db_path), >, 0);
    fault_case_finish(fc);
}

/*
 * At a 100 ms interval, a full 2 MiB filesystem for long enough to queue a
 * few hundred ticks, then space freed: the WAL must not refill the space,
 * and the store must be writing again within a few ticks with the queue
 * written, nothing dropped.
 */
static void
test_disk_full_fast(void)
{
    DiskCase dc = { 0 };
    g_autofree char *health = NULL;
    gint64 pending = 0, dropped = 0, before, freed, deadline;

    if (!disk_case_start(&dc, "2m", "interval = 100ms\n"))
        goto out;
    /* 300 ticks of 2 iothreads, written one transaction each, need a WAL
     * several times the size of what the filler leaves free. */
    health = disk_case_wait_pending(&dc, 300, 120, &pending);
    g_assert_cmpstr(health, ==, "full");
    g_assert_cmpint(pending, >=, 300);
    before = db_ticks(dc.db);

    g_assert_cmpint(g_unlink(dc.filler), ==, 0);
    freed = g_get_monotonic_time();
    deadline = freed + 15 * G_USEC_PER_SEC;
    do {
        g_usleep(100000);
        g_free(health);
        health = store_health_dropped(dc.fc, &pending, &dropped);
    } while ((g_strcmp0(health, "ok") != 0 || pending > 0) && g_get_monotonic_time() < deadline);
    g_test_message("writing again %.1f s after the space was freed: health %s, %" G_GINT64_FORMAT
                   " pending, %" G_GINT64_FORMAT " dropped", (g_get_monotonic_time() - freed) / 1e6,
                   health, pending, dropped);
    g_assert_cmpstr(health, ==, "ok");
    g_assert_cmpint(pending, ==, 0);
    g_assert_cmpint(dropped, ==, 0);
    g_assert_cmpint(db_ticks(dc.db), >=, before + 300);
    fault_assert_healthy_for(dc.fc, 2);
    fault_case_finish(dc.fc);
out:
    disk_case_end(&dc);
}

/* Stopped while the disk is full: the ticks still in memory are lost, and
 * the log says how many. */
static void
test_disk_full_stop(void)
{
    DiskCase dc = { 0 };
    g_autofree char *health = NULL;
    g_autofree char *log = NULL;
    g_autofree char *want = NULL;
    gint64 pending = 0;
    const char *line;

    if (!disk_case_start(&dc, "2m", NULL))
        goto out;
    health = disk_case_wait_pending(&dc, 3, 60, &pending);
    g_assert_cmpint(pending, >=, 3);
    fault_case_finish(dc.fc);

    log = daemon_log(dc.fc->d);
    want = g_strdup_printf("could not be written to %s (full): dropped at exit", dc.db);
    line = strstr(log, want);
    if (!line)
        g_error("no line with \"%s\" in the log:\n%s", want, log);
    while (line > log && line[-1] != '\n')
        line--;
    g_test_message("%.*s", (int)strcspn(line, "\n"), line);
    /* the count: at least what status showed before the stop */
    g_assert_cmpint(g_ascii_strtoll(strstr(line, "store: ") + 7, NULL, 10), >=, pending);
out:
    disk_case_end(&dc);
}

/*
 * The database's directory turns read-only while the daemon runs (a
 * read-only bind mount over it): a clean stop cannot remove the .running
 * marker and must say so; a start there must name the path and the remedy.
 */
static void
test_read_only_dir(void)
{
    g_autofree char *mnt = private_tmpfs("4m");
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(GError) err = NULL;
    g_autofree char *db = NULL;
    g_autofree char *conf = NULL;
    g_autofree char *marker = NULL;
    g_autofree char *log = NULL;
    g_autofree char *want = NULL;
    int status;

    if (!mnt)
        return;
    db = g_build_filename(mnt, "history.db", NULL);
    marker = g_strconcat(db, ".running", NULL);
    conf = g_strdup_printf("interval = 1s\nmetrics-listen =\ndatabase = %s\n"
                           "[targets]\nlibvirt = false\n", db);
    d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
    /* An answer means the main loop runs, with its SIGTERM handler: the
     * socket exists a moment before that. */
    json_object_put(pt_test_daemon_ok(d, "status", NULL));
    g_assert_true(g_file_test(marker, G_FILE_TEST_EXISTS));
    /* The daemon's open files keep the mount writable; a new read-only
     * bind mount on top is what every path lookup now sees. */
    g_assert_cmpint(mount(mnt, mnt, NULL, MS_BIND, NULL), ==, 0);
    g_assert_cmpint(mount(NULL, mnt, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL), ==, 0);
    status = pt_test_daemon_stop(d);
    log = daemon_log(d);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        g_error("polltuned did not stop cleanly (status 0x%x); log:\n%s", status, log);
    g_assert_true(g_file_test(marker, G_FILE_TEST_EXISTS));
    want = g_strdup_printf("%s: cannot remove the run marker: Read-only file system; the next "
                           "start will take this stop for a crash", marker);
    if (!strstr(log, want))
        g_error("no line with \"%s\" in the log:\n%s", want, log);

    g_assert_false(pt_test_daemon_restart(d, &err));
    g_assert_nonnull(err);
    g_clear_pointer(&want, g_free);
    want = g_strdup_printf("%s: directory %s is on a read-only filesystem (Read-only file "
                           "system): cannot write the database and its WAL; make it writable "
                           "by polltuned or set database= to a path it can write", db, mnt);
    if (!strstr(err->message, want))
        g_error("no \"%s\" in: %s", want, err->message);
    g_assert_null(strstr(err->message, "attempt to write a readonly database"));
    umount2(mnt, MNT_DETACH);
    umount2(mnt, MNT_DETACH);
    g_rmdir(mnt);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/store/disk-full", test_disk_full);
    g_test_add_func("/fault/store/deleted", test_db_deleted);
    g_test_add_func("/fault/store/disk-full-fast", test_disk_full_fast);
    g_test_add_func("/fault/store/disk-full-stop", test_disk_full_stop);
    g_test_add_func("/fault/store/read-only-dir", test_read_only_dir);
    return g_test_run();
}
