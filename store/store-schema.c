/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-schema: the tables and their forward migrations.
 *
 * PRAGMA user_version holds the schema version.  Each migration takes the
 * database from version N-1 to N inside one transaction, so an interrupted
 * upgrade leaves the previous version intact.  Migrations are never edited
 * once released; a change to the schema is a new entry at the end.
 *
 * Sizes matter because samples are written every tick for every iothread.
 * A sample's key packs (tick id << 20 | iothread id) into the rowid: sqlite
 * appends to a rowid table by filling the last page and starting a new one,
 * while a WITHOUT ROWID table keyed by the pair rebalances three pages on
 * every split; the packed key saves a quarter of the WAL written per tick
 * and a tenth of the row size.  The view samples_v unpacks it for humans.
 * A tick's time, length, host PSI and host CPU are stored once in `ticks`, not in
 * every sample.  Counters are integers; SQL NULL means
 * "source unavailable".  docs/STORE.md describes every column.
 */
#include "store-private.h"

/* Both rollup levels share one layout.  Part of migration 1: never edit. */
#define ROLLUP_COLUMNS                                                          \
    "  bucket INTEGER NOT NULL, iothread_id INTEGER NOT NULL,"                  \
    "  n INTEGER NOT NULL, span_ms INTEGER NOT NULL,"                           \
    "  iops_min INTEGER, iops_mean INTEGER, iops_max INTEGER, iops_p95 INTEGER," \
    "  lat_min INTEGER, lat_mean INTEGER, lat_max INTEGER, lat_p95 INTEGER,"    \
    "  cpu_min INTEGER, cpu_mean INTEGER, cpu_max INTEGER,"                     \
    "  PRIMARY KEY (bucket, iothread_id)"

static const char *const migrations[] = {
    /* 1: the first schema */
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value) WITHOUT ROWID;"
    "CREATE TABLE targets ("
    "  id INTEGER PRIMARY KEY, kind INTEGER NOT NULL, name TEXT NOT NULL UNIQUE,"
    "  uuid TEXT, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL);"
    "CREATE TABLE iothreads ("
    "  id INTEGER PRIMARY KEY, target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  name TEXT NOT NULL, first_seen INTEGER NOT NULL, last_seen INTEGER NOT NULL,"
    "  UNIQUE (target_id, name));"
    "CREATE TABLE devices ("
    "  id INTEGER PRIMARY KEY, target_id INTEGER NOT NULL REFERENCES targets(id),"
    "  name TEXT NOT NULL, iothread_id INTEGER REFERENCES iothreads(id),"
    "  UNIQUE (target_id, name));"
    "CREATE TABLE ticks ("
    "  id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, len_ns INTEGER NOT NULL,"
    "  psi_cpu_some_us INTEGER, psi_io_some_us INTEGER, psi_io_full_us INTEGER,"
    "  psi_mem_some_us INTEGER, psi_mem_full_us INTEGER);"
    "CREATE INDEX ticks_ts ON ticks (ts);"
    "CREATE TABLE samples ("
    "  key INTEGER PRIMARY KEY,"
    "  poll_max_ns INTEGER, poll_grow INTEGER, poll_shrink INTEGER,"
    "  cpu_ns INTEGER, ctx_vol INTEGER, ctx_invol INTEGER, runq_wait_ns INTEGER,"
    "  rd_ops INTEGER, rd_bytes INTEGER, rd_time_ns INTEGER,"
    "  wr_ops INTEGER, wr_bytes INTEGER, wr_time_ns INTEGER,"
    "  flush_ops INTEGER, flush_time_ns INTEGER,"
    "  kvm_exits INTEGER, io_exits INTEGER, mmio_exits INTEGER, halt_exits INTEGER);"
    "CREATE VIEW samples_v AS SELECT key >> " STORE_KEY_SHIFT_SQL " AS tick_id,"
    "  key & " STORE_KEY_MASK_SQL " AS iothread_id, * FROM samples;"
    "CREATE TABLE device_samples ("
    "  tick_id INTEGER NOT NULL, device_id INTEGER NOT NULL,"
    "  rd_ops INTEGER, rd_bytes INTEGER, rd_time_ns INTEGER,"
    "  wr_ops INTEGER, wr_bytes INTEGER, wr_time_ns INTEGER,"
    "  flush_ops INTEGER, flush_time_ns INTEGER,"
    "  PRIMARY KEY (tick_id, device_id)) WITHOUT ROWID;"
    "CREATE TABLE rollup_1m (" ROLLUP_COLUMNS ") WITHOUT ROWID;"
    "CREATE TABLE rollup_1h (" ROLLUP_COLUMNS ") WITHOUT ROWID;"
    "CREATE TABLE decisions ("
    "  id INTEGER PRIMARY KEY, ts INTEGER NOT NULL, iothread_id INTEGER NOT NULL,"
    "  policy TEXT NOT NULL,"
    "  old_max_ns INTEGER, old_grow INTEGER, old_shrink INTEGER,"
    "  new_max_ns INTEGER, new_grow INTEGER, new_shrink INTEGER,"
    "  reason TEXT, applied INTEGER NOT NULL);"
    "CREATE INDEX decisions_ts ON decisions (ts);"
    "CREATE TABLE overrides ("
    "  id INTEGER PRIMARY KEY, created INTEGER NOT NULL, expires INTEGER,"
    "  cleared INTEGER, who TEXT NOT NULL, target_id INTEGER NOT NULL,"
    "  iothread_id INTEGER, poll_max_ns INTEGER, poll_grow INTEGER,"
    "  poll_shrink INTEGER, reason TEXT);"
    "CREATE TABLE originals ("
    "  iothread_id INTEGER PRIMARY KEY, saved INTEGER NOT NULL,"
    "  poll_max_ns INTEGER, poll_grow INTEGER, poll_shrink INTEGER);",

    /* 2: an override may name a policy (e.g. "off") instead of values;
     * active overrides are looked up without scanning the history */
    "ALTER TABLE overrides ADD COLUMN policy TEXT;"
    "CREATE INDEX overrides_active ON overrides (cleared, expires);",

    /* 3: policy rules added at run time (policy-set) outlive a restart */
    "CREATE TABLE policy_rules ("
    "  glob TEXT PRIMARY KEY, policy TEXT NOT NULL, set_at INTEGER NOT NULL,"
    "  who TEXT NOT NULL) WITHOUT ROWID;",

    /* 4: originals belong to one QEMU instance (pid and start time, or
     * libvirt's domain id); rows saved before have none (NULL) */
    "ALTER TABLE originals ADD COLUMN instance TEXT;",

    /* 5: a decision keeps the policy's cause (policy_cause_to_string), so
     * that a stored decision says what the in-memory one said; rows
     * written before have none (NULL) */
    "ALTER TABLE decisions ADD COLUMN cause TEXT;",

    /* 6: the iothread's aio-max-batch (metric-table.h); rows written
     * before have none (NULL) */
    "ALTER TABLE samples ADD COLUMN aio_max_batch INTEGER;",

    /* 7: rollups keep the triple in force for most of the bucket (the
     * gauges metric-table.h rolls up); rows written before have none */
    "ALTER TABLE rollup_1m ADD COLUMN poll_max_ns INTEGER;"
    "ALTER TABLE rollup_1m ADD COLUMN poll_grow INTEGER;"
    "ALTER TABLE rollup_1m ADD COLUMN poll_shrink INTEGER;"
    "ALTER TABLE rollup_1h ADD COLUMN poll_max_ns INTEGER;"
    "ALTER TABLE rollup_1h ADD COLUMN poll_grow INTEGER;"
    "ALTER TABLE rollup_1h ADD COLUMN poll_shrink INTEGER;",

    /* 8: the host's CPU time over the tick, busy and in all, summed over
     * its CPUs (/proc/stat), so that a report can say how busy the host
     * was beside the iothreads' headroom; rows written before have none */
    "ALTER TABLE ticks ADD COLUMN cpu_busy_us INTEGER;"
    "ALTER TABLE ticks ADD COLUMN cpu_total_us INTEGER;",

    /* 9: the adaptive policy's workload memory (policy/policy-memory.h,
     * store/store-memory.c), one row per VM name, iothread and workload
     * signature, so that what explorations found outlives a restart.
     * Keyed by names, not targets' ids: a VM started again under the same
     * name on another socket is the same VM to learn about. */
    "CREATE TABLE policy_memory ("
    "  vm TEXT NOT NULL, iothread TEXT NOT NULL, signature TEXT NOT NULL,"
    "  have_winner INTEGER NOT NULL,"
    "  winner_max_ns INTEGER, winner_grow INTEGER, winner_shrink INTEGER,"
    "  winner_score REAL, winner_ticks INTEGER,"
    "  anchor_max_ns INTEGER, anchor_grow INTEGER, anchor_shrink INTEGER,"
    "  anchor_score REAL, noise REAL, last_probe_ticks INTEGER, last_probe_loss REAL,"
    "  learned INTEGER, confirmed INTEGER, seen INTEGER,"
    "  n_confirmed INTEGER, n_explorations INTEGER, n_default_wins INTEGER,"
    "  gain_sum REAL, probe_ticks INTEGER, probe_loss_sum REAL,"
    "  n_phases INTEGER, phase_ln_sum REAL, phase_ln_sumsq REAL,"
    "  PRIMARY KEY (vm, iothread, signature)) WITHOUT ROWID;",

    /* 10: no per-device rows.  The daemon never wrote device_samples nor
     * devices: an iothread's row already sums its devices, the policy
     * reads per-device rates live (PolicyMetrics), and the status reply
     * names an iothread's devices; a per-device history would have cost
     * a row per device per tick for no report or export that reads it.
     * IF EXISTS: a file made at a later schema and set back to an earlier
     * version to test a migration (test-store-memory.c) has neither. */
    "DROP TABLE IF EXISTS device_samples;"
    "DROP TABLE IF EXISTS devices;",

    /* 11: the name a target goes by (a libvirt domain's name, a QEMU's
     * -name or its socket's file name), beside its identity, so that
     * the history can be asked for by the name status shows.  A libvirt
     * target's identity is its domain's name; a QMP target's is filled
     * by the daemon at its next tick. */
    "ALTER TABLE targets ADD COLUMN display_name TEXT;"
    "UPDATE targets SET display_name = name WHERE kind = 0;",

    /* 12: whether a workload's winner was measured on a contended host,
     * where the contention guard let the exploration measure polling
     * against off: such a winner is kept on its return under contention
     * (policy/policy-guard.c).  NULL, an older row: it was not. */
    "ALTER TABLE policy_memory ADD COLUMN contended INTEGER;",

    /* 13: an iothread's decisions by time.  A starting daemon reads back
     * each iothread's own writes of the last hour (its write budget,
     * daemon/pt-daemon-memory.c); through decisions_ts alone each read
     * scanned every iothread's decisions of that hour, and a host of
     * 4,096 iothreads read them 4,096 times in its first tick. */
    "CREATE INDEX IF NOT EXISTS decisions_iothread ON decisions (iothread_id, ts);",
};

int
store_schema_version(void)
{
    return (int)G_N_ELEMENTS(migrations);
}

static int
schema_user_version(sqlite3 *sql, int *version)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(sql, "PRAGMA user_version", -1, &st, NULL);

    if (rc == SQLITE_OK) {
        rc = sqlite3_step(st);
        if (rc == SQLITE_ROW) {
            *version = sqlite3_column_int(st, 0);
            rc = SQLITE_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

gboolean
store_schema_migrate(sqlite3 *sql, const char *path, GError **error)
{
    int version = 0;
    int rc = schema_user_version(sql, &version);

    if (rc != SQLITE_OK) {
        store_set_error_sql(sql, path, error, rc, "read schema version");
        return FALSE;
    }
    if (version > store_schema_version()) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SCHEMA,
                    "%s: schema version %d is newer than this polltune's %d",
                    path, version, store_schema_version());
        return FALSE;
    }
    for (int v = version; v < store_schema_version(); v++) {
        g_autofree char *script = g_strdup_printf(
            "BEGIN IMMEDIATE; %s PRAGMA user_version = %d; COMMIT;", migrations[v], v + 1);

        rc = sqlite3_exec(sql, script, NULL, NULL, NULL);
        if (rc != SQLITE_OK) {
            g_autofree char *what = g_strdup_printf("migrate schema %d to %d", v, v + 1);

            store_set_error_sql(sql, path, error, rc, what);
            sqlite3_exec(sql, "ROLLBACK", NULL, NULL, NULL);
            return FALSE;
        }
    }
    return TRUE;
}
