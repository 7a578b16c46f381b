/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-testutil: ticks with predictable contents and temporary folders
 * for the store's tests and benchmarks.
 */
#pragma once

#include <sqlite3.h>

#include "store.h"

/* A tick of @n_iothreads samples, names "vm<i/4>" / "iothread<i%4>".
 * Iothread i is busy when i % 5 == 0: its counters scale with @seq. */
typedef struct {
    StoreTick tick;
    StoreSample *samples;
    char **names;               /* 2 per sample: target, iothread */
} TestTick;

TestTick *test_tick_new(guint n_iothreads);
void test_tick_fill(TestTick *t, gint64 ts_ms, guint64 seq);
void test_tick_free(TestTick *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(TestTick, test_tick_free)

/* A fresh temporary folder, removed with its contents by test_dir_remove. */
char *test_dir_new(void);
void test_dir_remove(const char *dir);

/* A database in a fresh temporary folder. */
typedef struct {
    char *dir;
    char *path;
    StoreDb *db;
} TestDb;

void test_db_setup(TestDb *fx, const StoreOptions *opts);
/* Close the database (when open) and open the same file with @opts. */
void test_db_reopen(TestDb *fx, const StoreOptions *opts);
/* Closes and removes everything; a fixture never set up is left alone. */
void test_db_teardown(TestDb *fx);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(TestDb, test_db_teardown)

/* Creates @path from the SQL script tests/store/data/@script (an old
 * schema's file, written by hand). */
void test_db_from_script(const char *path, const char *script);

/* Runs a query returning one integer on a separate connection to @path. */
gint64 test_sql_int(const char *path, const char *sql);
