/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-file: the file under the open connection.  Deleted, replaced, its
 * WAL gone, its header overwritten, or found corrupt: each is noticed
 * before the next write, said once (a notice, and the last incident kept
 * for status), and the path opened again or the file moved aside.
 */
#include <errno.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store-private.h"

/* Keeps the sentence as the last thing that happened to the file
 * (store_db_last_incident()) and queues it as a notice. */
static void G_GNUC_PRINTF(3, 4)
file_incident(StoreDb *db, gint64 now_ms, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    g_free(db->incident);
    db->incident = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    db->incident_ms = now_ms;
    store_notice(db, "%s", db->incident);
}

/*
 * Whether "<path>-wal" is still the WAL sqlite holds open.  An unlinked WAL
 * takes every later commit with it when the process dies, and sqlite does
 * not notice (it opens the WAL without locks of its own, so even
 * SQLITE_FCNTL_HAS_MOVED does not look).  While a connection is open
 * sqlite never deletes the WAL, so the file there at open is ours for as
 * long as the same inode is at the path.  Sets @what to "deleted" or
 * "replaced" when it is not.
 */
static gboolean
wal_has_moved(StoreDb *db, const char **what)
{
    struct stat st;

    if (g_stat(db->wal_path, &st) != 0) {
        if (!db->wal_known)
            return FALSE;
        *what = "deleted";
        return TRUE;
    }
    if (!db->wal_known) {
        /* Not there at open: learnt at its first sight instead. */
        db->wal_dev = st.st_dev;
        db->wal_ino = st.st_ino;
        db->wal_known = TRUE;
        return FALSE;
    }
    if (st.st_dev == db->wal_dev && st.st_ino == db->wal_ino)
        return FALSE;
    *what = "replaced";
    return TRUE;
}

void
store_file_remember(StoreDb *db)
{
    struct stat st;

    if (g_stat(db->path, &st) == 0) {
        db->dev = st.st_dev;
        db->ino = st.st_ino;
    }
    /* The schema check at open read the file, which opened the WAL. */
    db->wal_known = FALSE;
    wal_has_moved(db, NULL);
}

static char *
aside_name(const char *path, gint64 now_ms)
{
    g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(now_ms / 1000);
    g_autofree char *stamp = g_date_time_format(t, "%Y%m%dT%H%M%SZ");
    char *name = g_strdup_printf("%s.corrupt-%s", path, stamp);

    /* Two corruptions within a second must not overwrite each other. */
    for (int i = 1; g_file_test(name, G_FILE_TEST_EXISTS); i++) {
        g_free(name);
        name = g_strdup_printf("%s.corrupt-%s.%d", path, stamp, i);
    }
    return name;
}

gboolean
store_db_recover_corrupt(StoreDb *db, gint64 now_ms, const char *cause, GError **error)
{
    g_autofree char *aside = aside_name(db->path, now_ms);
    g_autofree char *wal = g_strconcat(db->path, "-wal", NULL);
    g_autofree char *wal_aside = g_strconcat(aside, "-wal", NULL);
    g_autofree char *shm = g_strconcat(db->path, "-shm", NULL);

    store_connection_close(db);
    if (g_rename(db->path, aside) != 0 && errno != ENOENT) {
        int e = errno;

        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "%s: corrupt (%s) and cannot be moved aside to %s: %s", db->path,
                    cause, aside, g_strerror(e));
        return FALSE;
    }
    g_rename(wal, wal_aside);
    g_unlink(shm);
    db->stats.corruptions++;
    file_incident(db, now_ms, "history database %s was corrupt (%s); moved it aside to %s "
                  "and started a fresh one", db->path, cause, aside);
    db->stats.reopens++;
    return store_connection_open(db, error);
}

/*
 * Whether the first bytes of the file still say what sqlite needs to open
 * it again: the magic string and the page size.  In WAL mode sqlite reads
 * them only when it opens the file, so an overwritten header goes unseen
 * until the next start, which must then move the whole history aside.  A
 * file shorter than the header has had no checkpoint yet (its pages are
 * all in the WAL).  Read through sqlite's own handle: a descriptor of ours
 * on the file, once closed, would drop the POSIX locks sqlite holds on it
 * for the whole process.
 */
static gboolean
header_is_intact(StoreDb *db)
{
    static const char magic[16] = "SQLite format 3";
    sqlite3_file *file = NULL;
    guint8 head[18];
    guint page_size;
    int rc;

    if (sqlite3_file_control(db->sql, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
        !file || !file->pMethods)
        return TRUE;
    rc = file->pMethods->xRead(file, head, sizeof(head), 0);
    if (rc == SQLITE_IOERR_SHORT_READ)
        /* sqlite zero-fills what is missing: an empty file reads as zeros. */
        return head[0] == 0;
    if (rc != SQLITE_OK)
        return TRUE;
    page_size = (guint)head[16] << 8 | head[17];
    if (page_size == 1)
        page_size = 65536;
    return memcmp(head, magic, sizeof(magic)) == 0 && page_size == db->page_size;
}

/*
 * The connection still holds page 1 as it was: a write that touches it
 * (user_version, set to what it is) puts the page in the WAL, and the
 * checkpoint copies it over the damaged header.  FALSE when that did not
 * make the header whole.
 */
static gboolean
header_rewrite(StoreDb *db)
{
    g_autofree char *sql = g_strdup_printf("BEGIN IMMEDIATE; PRAGMA user_version = %d; COMMIT",
                                           store_schema_version());

    if (sqlite3_exec(db->sql, sql, NULL, NULL, NULL) != SQLITE_OK) {
        sqlite3_exec(db->sql, "ROLLBACK", NULL, NULL, NULL);
        return FALSE;
    }
    return sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL)
           == SQLITE_OK && header_is_intact(db);
}

/* Checks the header (see header_is_intact()); a damaged one is rewritten
 * from the connection, or the file moved aside when that fails. */
static gboolean
check_header(StoreDb *db, gint64 now_ms, GError **error)
{
    if (header_is_intact(db))
        return TRUE;
    db->stats.corruptions++;
    if (header_rewrite(db)) {
        file_incident(db, now_ms, "history database %s had a corrupt header; rewrote it from "
                      "the copy the open connection holds", db->path);
        return TRUE;
    }
    return store_db_recover_corrupt(db, now_ms, "corrupt header", error);
}

/*
 * Someone deleted or replaced the file under us (logrotate-style scripts,
 * an operator restoring a backup), or only its WAL.  Writing on would go
 * to an unlinked inode and vanish, so reopen the path.
 */
gboolean
store_db_check_file(StoreDb *db, gint64 now_ms, GError **error)
{
    struct stat st;
    const char *what;
    gboolean wal = FALSE;

    /* Every write asks here first: a read-only handle neither writes nor
     * reopens the path read-write. */
    if (db->readonly) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: opened read-only",
                    db->path);
        return FALSE;
    }
    if (db->is_memory || !db->sql)
        return db->sql ? TRUE : store_connection_open(db, error);
    if (g_stat(db->path, &st) != 0) {
        what = "deleted";
    } else if (st.st_dev != db->dev || st.st_ino != db->ino) {
        what = "replaced";
    } else if (wal_has_moved(db, &what)) {
        wal = TRUE;
    } else {
        return check_header(db, now_ms, error);
    }
    /* sqlite keeps the WAL of a file that is no longer at its path; an
     * emptied WAL cannot be replayed into whatever is there now.  When
     * only the WAL went, the file at the path is still ours: the
     * checkpoint copies the commits the unlinked WAL holds into it. */
    sqlite3_wal_checkpoint_v2(db->sql, NULL, SQLITE_CHECKPOINT_TRUNCATE, NULL, NULL);
    store_connection_close(db);
    db->stats.reopens++;
    if (!store_connection_open(db, error))
        return FALSE;
    if (wal)
        file_incident(db, now_ms, "history database %s: its WAL %s-wal was %s while open; "
                      "copied the commits it held into the database and reopened it",
                      db->path, db->path, what);
    else
        file_incident(db, now_ms, "history database %s was %s while open; reopened it",
                      db->path, what);
    return TRUE;
}

gboolean
store_db_check(StoreDb *db, gint64 now_ms, GError **error)
{
    g_autoptr(GError) local = NULL;
    g_autofree char *cause = NULL;

    if (store_db_check_file(db, now_ms, &local))
        return TRUE;
    if (!g_error_matches(local, STORE_ERROR, STORE_ERROR_CORRUPT)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    cause = g_strdup(local->message);
    return store_db_recover_corrupt(db, now_ms, cause, error);
}

const char *
store_db_last_incident(StoreDb *db, gint64 *at_ms)
{
    if (at_ms)
        *at_ms = db->incident_ms;
    return db->incident;
}
