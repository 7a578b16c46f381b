/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store: polltune's history, an embedded sqlite database.
 *
 * The daemon writes one tick at a time: what every iothread did
 * during the tick, as deltas of monotonic counters plus the tick's length,
 * from which every rate is derived exactly.  Decisions, operator overrides
 * and the polling values seen at first attach are kept next to the samples.
 * Maintenance (rollups to 1-minute and 1-hour rows, retention, the size cap)
 * runs in small steps the caller schedules; queries and exports stream.
 *
 * Contract
 * - store/ depends on sqlite3, GLib, json-c and the metric table
 *   (metric-table.h), whose order is the samples table's column order; its
 *   structs are its own.
 * - Time is passed in (`now_ms`, UTC milliseconds since the epoch).  Inside,
 *   only the monotonic clock is read: to bound a maintenance step and to
 *   measure writes for StoreStats.  (store_db_open() reads the wall clock
 *   only if StoreOptions.now_ms is 0.)
 * - Functions that can fail take `GError **error` last and return FALSE or
 *   NULL on failure, with the error set in STORE_ERROR or G_IO_ERROR.  They
 *   never log; conditions an operator should see once (disk full, database
 *   moved aside, file replaced) are queued as notices, see
 *   store_db_take_notice().
 * - store_tick_write() never loses a tick for a transient cause: when the
 *   database is locked, full, or briefly unwritable the tick is kept in a
 *   bounded in-memory queue and written before the next one.  Only when that
 *   queue is full is the oldest tick dropped, and counted.
 * - A StoreDb is not thread-safe; use it from one thread.
 *
 * Values: every counter in the structs below is a delta over the tick, or
 * METRIC_ABSENT when its source was unavailable (stored as SQL NULL).  Call
 * store_sample_init() and friends before filling a struct.
 */
#pragma once

#include <gio/gio.h>
#include <glib.h>
#include <json-c/json.h>

#include "metric-vec.h"

G_BEGIN_DECLS

#define STORE_ERROR (store_error_quark())
GQuark store_error_quark(void);

typedef enum {
    STORE_ERROR_FAILED,     /* sqlite error not covered below */
    STORE_ERROR_INVALID,    /* bad argument or unparseable input */
    STORE_ERROR_BUSY,       /* locked by another process past the timeout */
    STORE_ERROR_FULL,       /* SQLITE_FULL: the disk or the quota is full */
    STORE_ERROR_CORRUPT,    /* the file is not a usable database */
    STORE_ERROR_SCHEMA,     /* made by a newer polltune */
    STORE_ERROR_NOT_FOUND,
} StoreError;

typedef enum {
    STORE_TARGET_LIBVIRT,
    STORE_TARGET_QMP,
    STORE_TARGET_KIND_MAX,
    STORE_TARGET_KIND_INVALID = -1,
} StoreTargetKind;

typedef enum {
    STORE_RES_RAW,
    STORE_RES_1M,
    STORE_RES_1H,
    STORE_RESOLUTION_MAX,
    STORE_RESOLUTION_INVALID = -1,
} StoreResolution;

typedef enum {
    STORE_FORMAT_CSV,
    STORE_FORMAT_JSONL,
    STORE_FORMAT_MAX,
    STORE_FORMAT_INVALID = -1,
} StoreFormat;

const char *store_target_kind_to_string(StoreTargetKind kind);
StoreTargetKind store_target_kind_from_string(const char *s);
const char *store_resolution_to_string(StoreResolution res);
StoreResolution store_resolution_from_string(const char *s);
const char *store_format_to_string(StoreFormat format);
StoreFormat store_format_from_string(const char *s);

/* ---- opening ---------------------------------------------------------- */

typedef struct {
    gint64 now_ms;              /* names a corrupt file moved aside */
    guint busy_timeout_ms;      /* default 100 */
    guint max_pending_ticks;    /* default 600 */
    gint64 raw_retention_ms;    /* default 48 h */
    gint64 rollup_1m_retention_ms;  /* default 30 d */
    gint64 rollup_1h_retention_ms;  /* default 2 y (730 d) */
    gint64 size_cap_bytes;      /* default 2 GiB */
    gboolean verify_at_open;    /* run PRAGMA quick_check (slow on big files) */
} StoreOptions;

/* Fills @opts with the defaults above. */
void store_options_init(StoreOptions *opts);

typedef struct StoreDb StoreDb;

/*
 * Opens or creates the database at @path (":memory:" works), runs forward
 * migrations, and enables WAL.  A file that is not a database, or fails the
 * check, is renamed to "<path>.corrupt-<UTC timestamp>" and a fresh one is
 * created; a notice says so.  @opts may be NULL for defaults.
 * Fails with STORE_ERROR_SCHEMA for a file from a newer schema.
 */
StoreDb *store_db_open(const char *path, const StoreOptions *opts, GError **error);
/*
 * Opens the database at @path for reading only (SQLITE_OPEN_READONLY): no
 * migration, no pragma that writes, no copy, and nothing created beside
 * the file.  A file without a -wal (closed cleanly) is read as immutable,
 * so no -shm is made either; with one, polltuned (or a crashed one) has it
 * open and sqlite reads through the existing -wal and -shm.
 * Writes through the handle fail with STORE_ERROR_INVALID.
 * Fails naming @path and the cause: a missing or non-regular file
 * (STORE_ERROR_NOT_FOUND / STORE_ERROR_INVALID), not a database or no
 * polltune schema (STORE_ERROR_CORRUPT), a schema newer or older than this
 * build reads (STORE_ERROR_SCHEMA; an older one is migrated by the next
 * start of polltuned).
 */
StoreDb *store_db_open_readonly(const char *path, GError **error);
void store_db_close(StoreDb *db);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StoreDb, store_db_close)

/* The schema version this library writes (PRAGMA user_version). */
int store_schema_version(void);

typedef enum {
    STORE_HEALTH_OK,
    STORE_HEALTH_BUSY,      /* last write found the database locked */
    STORE_HEALTH_FULL,      /* last write hit SQLITE_FULL */
    STORE_HEALTH_FAILED,    /* last write failed otherwise */
} StoreHealth;

typedef struct {
    StoreHealth health;
    guint pending_ticks;        /* kept in memory, not yet written */
    guint64 ticks_written;
    guint64 ticks_dropped;      /* pending queue overflowed */
    /* A new file opened at the path: the database or its WAL was deleted
     * or replaced, or the file was corrupt and moved aside.  Rows written
     * before may be in the old file only: a caller that must keep some
     * (the originals) writes them again when this changes. */
    guint64 reopens;
    guint64 corruptions;        /* corrupt file moved aside or header rewritten */
    gint64 last_write_us;       /* wall time of the last tick write */
    gint64 max_write_us;
    gint64 max_maintain_unit_us; /* longest single maintenance unit */
} StoreStats;

void store_db_get_stats(StoreDb *db, StoreStats *stats);
/* "ok", "busy", "full", "failed"; NULL for a value out of range. */
const char *store_health_to_string(StoreHealth health);

/*
 * Returns the oldest queued notice (a complete sentence naming the file and
 * the cause) or NULL.  Each condition is reported once when it starts and
 * once when it ends, however many ticks it lasts.  Free with g_free().
 */
char *store_db_take_notice(StoreDb *db);

/*
 * Checks that the file at the path is still the one open, that so is its
 * WAL ("<path>-wal"), and that its header is intact, as every write does
 * first; for a caller to run it between writes (once a tick).  A deleted
 * or replaced file or WAL is reopened (a WAL that went is first copied
 * into the database), a damaged header is rewritten from the connection
 * or, failing that, the file moved aside; a notice says which, and
 * StoreStats.reopens counts the reopens.  Fails only when no file could
 * be opened again.
 */
gboolean store_db_check(StoreDb *db, gint64 now_ms, GError **error);
/*
 * The last thing that happened to the file (deleted, replaced, its WAL
 * gone, corrupt), as the notice said it, and when (@at_ms, may be NULL);
 * NULL when nothing has since the open.  Valid until the next call on @db.
 */
const char *store_db_last_incident(StoreDb *db, gint64 *at_ms);

/* Bytes the database occupies (pages in use, WAL excluded). */
gint64 store_db_used_bytes(StoreDb *db);

/* ---- writing ticks ---------------------------------------------------- */

/*
 * One iothread's tick: the tick's delta (metric-vec.h), a value per
 * MetricId, a counter's increase or the value in force for a gauge; its
 * columns are written, read and exported in the table's order, so a metric
 * added to the table needs nothing here.
 */
typedef struct {
    const char *target;         /* target name; registered on first use */
    const char *iothread;       /* QOM id, e.g. "iothread0" */
    MetricVec m;
    /* The name the target goes by (libvirt domain, QEMU -name); NULL:
     * unknown.  Written to targets.display_name when it changes. */
    const char *target_name;
} StoreSample;

/* Host pressure stall information: stall time accumulated over the tick. */
typedef struct {
    gint64 cpu_some_us;
    gint64 io_some_us, io_full_us;
    gint64 mem_some_us, mem_full_us;
} StorePsi;

/* The host's CPU time over the tick, summed over its CPUs: busy (user,
 * nice, system, irq, softirq, steal) and in all (busy, idle, iowait).
 * busy / total is how busy the host was; total / the tick's length is the
 * number of CPUs online. */
typedef struct {
    gint64 busy_us, total_us;
} StoreHostCpu;

typedef struct {
    gint64 ts_ms;               /* end of the tick */
    gint64 len_ns;              /* length of the tick */
    StorePsi psi;
    StoreHostCpu cpu;
    const StoreSample *samples;
    guint n_samples;
} StoreTick;

void store_sample_init(StoreSample *s);
void store_psi_init(StorePsi *psi);
void store_host_cpu_init(StoreHostCpu *cpu);
void store_tick_init(StoreTick *tick);

/*
 * Records a target (libvirt domain or direct QMP) with its kind and UUID
 * (may be NULL).  Targets first met in a tick are recorded with kind QMP
 * and no UUID until this is called.
 */
gboolean store_target_register(StoreDb *db, StoreTargetKind kind, const char *name,
                               const char *uuid, gint64 now_ms, GError **error);

/*
 * Sets *@known to whether the store has ever recorded a target named @name
 * (registered, or met in a tick or a decision).
 */
gboolean store_target_known(StoreDb *db, const char *name, gboolean *known, GError **error);

/* A recorded target: its identity and the name it goes by (NULL: not
 * known, e.g. a QMP target last seen before schema 11). */
typedef struct {
    char *target;
    char *name;
} StoreTargetName;

/*
 * Every target the store has recorded, by identity, as StoreTargetName
 * (the array frees them).  NULL on error.
 */
GPtrArray *store_target_names(StoreDb *db, GError **error);

/*
 * The identities @vm names among the recorded targets, as strings the
 * array frees: @vm alone when a target has that identity, else each
 * target that went by the name @vm (none, one, or several, in identity
 * order).  A reader asked for a VM by name refuses none as unknown and
 * several as ambiguous.  NULL on error.
 */
GPtrArray *store_target_lookup(StoreDb *db, const char *vm, GError **error);

/*
 * Writes @tick in one transaction, after any ticks still pending.  Returns
 * TRUE when the tick was written or queued (see the contract above); FALSE
 * only for an invalid tick, which is not kept.  Takes no ownership.
 */
gboolean store_tick_write(StoreDb *db, const StoreTick *tick, GError **error);

/* Retries the pending queue without a new tick (e.g. on a slow timer). */
gboolean store_flush(StoreDb *db, GError **error);

/* ---- decisions, overrides, originals ---------------------------------- */

typedef struct {
    gint64 poll_max_ns, poll_grow, poll_shrink;     /* METRIC_ABSENT: unknown */
} StoreTriple;

typedef struct {
    gint64 ts_ms;
    const char *target;
    const char *iothread;
    const char *policy;
    StoreTriple old_triple, new_triple;
    const char *reason;
    const char *cause;          /* policy_cause_to_string(); NULL: unknown */
    gboolean applied;           /* FALSE: only recommended */
} StoreDecision;

gboolean store_decision_insert(StoreDb *db, const StoreDecision *decision, GError **error);

typedef struct {
    gint64 id;                  /* set by store_override_set */
    gint64 created_ms;
    gint64 expires_ms;          /* METRIC_ABSENT: until cleared */
    const char *who;            /* e.g. "uid 1000" */
    const char *target;
    const char *iothread;       /* NULL: the whole target */
    const char *policy;         /* NULL or a policy name, e.g. "off" */
    StoreTriple triple;         /* fields METRIC_ABSENT are not overridden */
    const char *reason;
} StoreOverride;

/* Stores @ov and returns its id in @id_out; ignores ov->id.  @ov replaces
 * the override active for the same target and iothread (the whole target
 * when NULL): that one ends (cleared) at ov->created_ms, in the same
 * transaction. */
gboolean store_override_set(StoreDb *db, const StoreOverride *ov, gint64 *id_out,
                            GError **error);
/* Writes active override @ov again under its id (ov->id), into a database
 * file opened anew (StoreStats.reopens) that may lack it, with its target
 * and iothread; a row with that id already there is kept as it is.  Ends
 * nothing. */
gboolean store_override_rewrite(StoreDb *db, const StoreOverride *ov, GError **error);
/* Ends override @id at @now_ms; STORE_ERROR_NOT_FOUND if none is active. */
gboolean store_override_clear(StoreDb *db, gint64 id, gint64 now_ms, GError **error);

/* An override as read back: owns its strings. */
typedef struct {
    StoreOverride ov;
    char *strings;
} StoreOverrideRow;
void store_override_row_free(StoreOverrideRow *row);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StoreOverrideRow, store_override_row_free)

/* Overrides neither cleared, expired at @now_ms nor replaced by a newer
 * one of the same target and iothread, oldest first. */
GPtrArray *store_override_list_active(StoreDb *db, gint64 now_ms, GError **error);

/* A policy rule added at run time: a target name glob and a policy spec. */
typedef struct {
    char *glob;
    char *policy;
    gint64 set_ms;
    char *who;                  /* e.g. "uid 0" */
} StorePolicyRule;
void store_policy_rule_free(StorePolicyRule *rule);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StorePolicyRule, store_policy_rule_free)

/* Stores the rule for @glob, replacing an earlier one for the same glob. */
gboolean store_policy_rule_set(StoreDb *db, const char *glob, const char *policy,
                               const char *who, gint64 now_ms, GError **error);
/* Removes the rule for @glob; STORE_ERROR_NOT_FOUND if there is none. */
gboolean store_policy_rule_clear(StoreDb *db, const char *glob, GError **error);
/* Every stored rule, oldest first. */
GPtrArray *store_policy_rule_list(StoreDb *db, GError **error);

/* The daemon's mode set at run time, kept like the rules: an enum value of
 * the caller's, or -1 for none (the configuration's mode applies). */
gboolean store_runtime_mode_set(StoreDb *db, int mode, GError **error);
int store_runtime_mode_get(StoreDb *db);

/*
 * Saves the triple seen at the first attach of QEMU instance @instance (an
 * opaque id; NULL: unknown).  A triple saved for the same instance is never
 * replaced; one saved for another instance is, since a new QEMU on the same
 * name starts from its own command line.
 */
gboolean store_original_save(StoreDb *db, const char *target, const char *iothread,
                             const StoreTriple *triple, const char *instance,
                             gint64 now_ms, GError **error);
/* The same, replacing a triple saved for the same instance too: a write
 * made outside polltune is the instance's original from then on. */
gboolean store_original_replace(StoreDb *db, const char *target, const char *iothread,
                                const StoreTriple *triple, const char *instance, gint64 now_ms,
                                GError **error);
/* Forgets every original saved for @target's iothreads (its QEMU exited:
 * there is nothing left to restore); @dropped (optional) gets how many. */
gboolean store_original_drop(StoreDb *db, const char *target, guint *dropped, GError **error);
/* STORE_ERROR_NOT_FOUND when nothing was saved for the iothread.  @instance
 * (optional) gets the instance it was saved for, NULL if none was known. */
gboolean store_original_get(StoreDb *db, const char *target, const char *iothread,
                            StoreTriple *triple, char **instance, GError **error);

/* ---- maintenance ------------------------------------------------------ */

/*
 * Does maintenance work for about @budget_ms, in units that each hold the
 * database for well under 50 ms: a WAL checkpoint once the WAL has grown,
 * 1-minute rollups of complete minutes, 1-hour rollups of complete hours,
 * the size cap (oldest raw first, then the oldest 1-minute, then 1-hour
 * rollups), retention, and returning free pages while the file exceeds the
 * cap.  Sets @more to TRUE when work remains, so the caller can schedule the
 * next step soon.  Call it every tick or few: it also keeps checkpoints
 * (and their fsync) out of store_tick_write().
 */
gboolean store_maintain_step(StoreDb *db, gint64 now_ms, guint budget_ms,
                             gboolean *more, GError **error);

/* ---- queries ---------------------------------------------------------- */

typedef struct {
    gint64 from_ms, to_ms;      /* [from, to); METRIC_ABSENT: unbounded */
    const char *target;         /* NULL: all */
    const char *iothread;       /* NULL: all */
    StoreResolution resolution;
} StoreFilter;

void store_filter_init(StoreFilter *filter);

typedef struct {
    gint64 min, mean, max, p95;     /* METRIC_ABSENT when no data */
} StoreStat;

/* One row from a query.  Strings belong to the cursor. */
typedef struct {
    StoreResolution resolution;
    gint64 ts_ms;               /* raw: end of tick; rollups: bucket start */
    const char *target;
    const char *iothread;
    /* raw; for rollups only the gauges the metric table rolls up (the
     * triple in force for most of the bucket), the rest METRIC_ABSENT */
    gint64 len_ns;
    StoreSample sample;
    /* rollups: IOPS in milli-ops/s, latency in ns per op, CPU in ppm of
     * one core (p95 of CPU is not kept: METRIC_ABSENT) */
    gint64 count, span_ms;
    StoreStat iops, lat, cpu;
} StoreRow;

typedef struct {
    gint64 ts_ms;
    const char *target, *iothread, *policy, *reason;
    const char *cause;          /* NULL: not recorded (before schema 5) */
    StoreTriple old_triple, new_triple;
    gboolean applied;
} StoreDecisionRow;

/* One raw tick's host figures. */
typedef struct {
    gint64 ts_ms, len_ns;
    StorePsi psi;               /* only cpu_some_us is read back */
    StoreHostCpu cpu;
} StoreHostRow;

typedef struct StoreCursor StoreCursor;
void store_cursor_free(StoreCursor *cur);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(StoreCursor, store_cursor_free)

/* Rows in time order at the filter's resolution. */
StoreCursor *store_query_range(StoreDb *db, const StoreFilter *filter, GError **error);
/* Decisions in time order (resolution ignored). */
StoreCursor *store_query_decisions(StoreDb *db, const StoreFilter *filter, GError **error);

/* Sets *row to the next row, or NULL at the end.  Rows stay valid until the
 * next call. */
gboolean store_cursor_next(StoreCursor *cur, const StoreRow **row, GError **error);
gboolean store_cursor_next_decision(StoreCursor *cur, const StoreDecisionRow **row,
                                    GError **error);

/* The host figures of the raw ticks in the filter's range, in time order
 * (names and resolution ignored: a tick is the host's). */
StoreCursor *store_query_host(StoreDb *db, const StoreFilter *filter, GError **error);
gboolean store_cursor_next_host(StoreCursor *cur, const StoreHostRow **row, GError **error);

/*
 * A row as the `history` reply's row of docs/CONTROL.md (a new object):
 * ts_ms, target, iothread, then for raw rows every rate of the metric
 * table (metric_rate_value) and every metric with a JSON key (null when
 * unknown), for rollups the count and each rolled-up rate's
 * {min, mean, max, p95} in the rate's unit.  Absent figures are left out.
 */
json_object *store_row_to_json(const StoreRow *row);
/*
 * A host row as the `host-history` reply's row (docs/CONTROL.md, a new
 * object): ts_ms, then what is known of cpu_busy_pct (of all the host's
 * CPUs), cpus (online, from the CPU time over the tick's length) and
 * psi_cpu_some_pct (of the tick some task waited for a CPU).
 */
json_object *store_host_row_to_json(const StoreHostRow *row);
/* The rollup statistics of @rate in @row, or NULL if it is not rolled up. */
const StoreStat *store_row_stat(const StoreRow *row, MetricRate rate);

/* ---- export ----------------------------------------------------------- */

/*
 * The one duration grammar of polltune (configuration, control commands,
 * command line, time bounds): digits, optional spaces, and a unit among ms,
 * s, m, h, d, w (any case); no unit means milliseconds.  STORE_ERROR_INVALID
 * naming the text otherwise.
 */
gboolean store_duration_parse(const char *text, gint64 *ms, GError **error);

/*
 * Parses a time bound: ISO 8601 ("2026-12-01T10:00:00Z"; no zone means UTC)
 * or a span back from @now_ms in store_duration_parse's grammar with a unit
 * ("7d", "12h", "30m", "45s", "500ms", "2w").
 */
gboolean store_time_parse(const char *text, gint64 now_ms, gint64 *ms_out, GError **error);

/* Writes @ms as "2026-12-01T10:00:00.000Z" and a NUL into @buf; returns
 * the length (24 for years 0-9999). */
gsize store_time_format(gint64 ms, char buf[32]);

typedef enum {
    STORE_EXPORT_SAMPLES,
    STORE_EXPORT_DECISIONS,
} StoreExportWhat;

/*
 * Streams the rows selected by @filter to @out, as CSV (RFC 4180, CRLF,
 * header row) or JSON Lines, in constant memory.  Timestamps are written as
 * ISO 8601 UTC with milliseconds.  Does not close @out.
 */
gboolean store_export(StoreDb *db, const StoreFilter *filter, StoreExportWhat what,
                      StoreFormat format, GOutputStream *out, GCancellable *cancellable,
                      GError **error);

G_END_DECLS
