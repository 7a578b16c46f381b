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
store_health(FaultCase *fc, gint64 *pending)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(fc->d, "status", NULL);

    *pending = pt_json_path_int(st, "store/pending");
    return g_strdup(pt_json_path_str(st, "store/health"));
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

static void
test_disk_full(void)
{
    g_autofree char *mnt = private_tmpfs("3m");
    g_autoptr(FaultCase) fc = NULL;
    g_autofree char *db = NULL;
    g_autofree char *filler = NULL;
    g_autofree char *extra = NULL;
    g_autofree char *health = NULL;
    gint64 pending = 0, before, deadline;
    gboolean saw_trouble = FALSE;

    if (!mnt)
        return;
    fc = fault_case_new();
    if (!fc)
        goto out;
    db = g_build_filename(mnt, "history.db", NULL);
    filler = g_build_filename(mnt, "filler", NULL);
    /* The helper writes its own database line first; the later one wins. */
    extra = g_strdup_printf("database = %s\n", db);
    fc->db = db;
    fault_daemon_start(fc, extra);
    fault_assert_healthy_for(fc, 2);

    fill_disk(filler);
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
        g_assert_nonnull(strstr(pt_json_path_str(reply, "error/desc"), db));
        get = pt_test_daemon_ok(fc->d, "policy-get", NULL);
        g_assert_cmpuint(json_object_array_length(pt_json_path(get, "rules")), ==, 0);
    }

    /* Free the space: the ticks kept in memory and the new ones go in. */
    g_assert_cmpint(g_unlink(filler), ==, 0);
    deadline = g_get_monotonic_time() + 20 * G_USEC_PER_SEC;
    do {
        fault_assert_healthy_for(fc, 1);
        g_free(health);
        health = store_health(fc, &pending);
    } while ((g_strcmp0(health, "ok") != 0 || pending > 0) && g_get_monotonic_time() < deadline);
    g_assert_cmpstr(health, ==, "ok");
    g_assert_cmpint(pending, ==, 0);
    before = db_ticks(db);
    fault_assert_healthy_for(fc, 3);
    g_assert_cmpint(db_ticks(db), >, before);
    fault_case_finish(fc);
out:
    g_clear_pointer(&fc, fault_case_free);
    umount2(mnt, MNT_DETACH);
    g_rmdir(mnt);
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

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/fault/store/disk-full", test_disk_full);
    g_test_add_func("/fault/store/deleted", test_db_deleted);
    return g_test_run();
}
