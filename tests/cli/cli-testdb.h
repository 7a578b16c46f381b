/*
 * cli-testdb: history databases with a recognisable shape for polltunectl's
 * tests, written through store/ as the daemon writes them.
 *
 * Three iothreads: db-1/iothread0 (busy, with a daily-ish wave and
 * decisions that raise and lower poll-max-ns), db-1/iothread1 (moderate)
 * and web-1/iothread0 (light, with an unavailable exit counter).
 */
#pragma once

#include "store.h"

typedef struct {
    gint64 start_ms;            /* first tick ends at start_ms + tick_ms */
    guint n_ticks;
    gint64 tick_ms;
    guint decision_every;       /* ticks between decisions on db-1/iothread0 */
    gboolean rollups;           /* run maintenance so 1m/1h rollups exist */
} CliTestDbSpec;

/* Creates @path and fills it; asserts on failure. */
void cli_testdb_create(const char *path, const CliTestDbSpec *spec);

/* Runs a program and collects its output and exit status (0..255, or -1
 * when it died of a signal). */
typedef struct {
    char *out;
    char *err;
    int status;
} CliRun;

void cli_run_clear(CliRun *r);
/* Runs polltunectl (PT_POLLTUNECTL, else the build tree's) with @argv. */
void cli_run(CliRun *r, const char *const *argv);
