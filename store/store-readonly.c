/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The read-only open: polltunectl --db and the daemon's export thread read
 * a database that polltuned owns (and may be writing), so they must not
 * migrate it, set pragmas that write, move it aside or leave files beside
 * it.
 */
#include <errno.h>
#include <sys/stat.h>

#include "store-private.h"

static gboolean
readonly_connect(StoreDb *db, GError **error)
{
    g_autofree char *wal = g_strconcat(db->path, "-wal", NULL);
    g_autofree char *escaped = g_uri_escape_string(db->path, "/", FALSE);
    /* Without a -wal the file was closed cleanly: immutable=1 reads it
     * without the -shm a WAL database otherwise needs, which sqlite would
     * create beside it. */
    g_autofree char *uri = g_strdup_printf("file:%s?mode=ro%s", escaped,
                                           g_file_test(wal, G_FILE_TEST_EXISTS) ? "" :
                                           "&immutable=1");
    int rc = sqlite3_open_v2(uri, &db->sql,
                             SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                             NULL);

    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "open read-only");
        return FALSE;
    }
    sqlite3_busy_timeout(db->sql, (int)db->opts.busy_timeout_ms);
    return TRUE;
}

static gboolean
readonly_check_schema(StoreDb *db, GError **error)
{
    sqlite3_stmt *st = NULL;
    int version = -1;
    int rc = sqlite3_prepare_v2(db->sql, "PRAGMA user_version", -1, &st, NULL);

    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK) {
        store_set_error(db, error, rc, "cannot read it as a database");
        return FALSE;
    }
    if (version == 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_CORRUPT,
                    "%s: not a polltune history database (no schema)", db->path);
        return FALSE;
    }
    if (version > store_schema_version()) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SCHEMA, "%s: written by a newer polltune "
                    "(schema %d; this build reads up to %d)", db->path, version,
                    store_schema_version());
        return FALSE;
    }
    if (version < store_schema_version()) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SCHEMA, "%s: schema %d is older than "
                    "this build's %d and a read-only open does not migrate; the next "
                    "start of polltuned on it does", db->path, version,
                    store_schema_version());
        return FALSE;
    }
    return TRUE;
}

StoreDb *
store_db_open_readonly(const char *path, GError **error)
{
    g_autoptr(StoreDb) db = store_db_alloc(path, NULL, error);
    struct stat sb;

    if (!db)
        return NULL;
    db->readonly = TRUE;
    if (db->is_memory) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID,
                    "%s: an in-memory database cannot be opened read-only", path);
        return NULL;
    }
    /* sqlite would report a missing file as "unable to open": say which. */
    if (stat(path, &sb) != 0) {
        int e = errno;

        g_set_error(error, STORE_ERROR, e == ENOENT ? STORE_ERROR_NOT_FOUND :
                    STORE_ERROR_FAILED, "%s: %s", path, g_strerror(e));
        return NULL;
    }
    if (!S_ISREG(sb.st_mode)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_INVALID, "%s: not a regular file", path);
        return NULL;
    }
    if (!readonly_connect(db, error) || !readonly_check_schema(db, error))
        return NULL;
    return g_steal_pointer(&db);
}
