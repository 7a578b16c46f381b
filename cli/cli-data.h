/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-data: history as polltunectl sees it, from the daemon or a file.
 *
 * The daemon answers `history` with JSON rows (docs/CONTROL.md); offline,
 * polltunectl reads the same history from the database file through store/.
 * Both end up here: offline rows are turned into exactly the JSON the
 * daemon would send, so `--json` output and the tables do not depend on
 * where the data came from, and both kinds of rows reduce to a CliPoint for
 * sparklines and the report.
 *
 * Contract
 * - cli_db_open() never writes to, creates, migrates or moves the file:
 *   it is store_db_open_readonly(), which reads the file in place (no copy)
 *   and refuses a schema other than this build's with a clear error.
 * - Rates are derived from the stored deltas exactly as CONTROL.md defines
 *   them; a member whose source was unavailable is left out, as the
 *   daemon does.
 */
#pragma once

#include <json-c/json.h>

#include "store.h"

G_BEGIN_DECLS

/* One iothread at one time: the figures charts and sparklines use. */
typedef struct {
    gint64 ts_ms;
    const char *target;         /* borrowed from the row it came from */
    const char *iothread;
    double iops;                /* NAN when unknown */
    double lat_us;
    double cpu_pct;             /* percent of one core */
    gint64 poll_max_ns;         /* -1 when unknown; rollups: in force for most of the bucket */
} CliPoint;

/* The host at one tick (a `host-history` row); NAN where unknown. */
typedef struct {
    gint64 ts_ms;
    double cpu_busy_pct;        /* of all its CPUs */
    double cpus;                /* online */
    double psi_cpu_some_pct;    /* of the tick, some task waited for a CPU */
} CliHostPoint;

/* Fills @p from a `host-history` row; FALSE when it lacks ts_ms. */
gboolean cli_host_point_from_json(json_object *row, CliHostPoint *p);

/* One decision, from a store cursor or an export line. */
typedef struct {
    gint64 ts_ms;
    const char *target, *iothread, *policy, *reason;
    const char *cause;                  /* policy_cause_to_string(); NULL: not recorded */
    gint64 old_max_ns, new_max_ns;      /* -1 when unknown */
    gboolean applied;
} CliDecision;

typedef struct CliDb CliDb;

/* Opens @path read-only for history, export and report. */
CliDb *cli_db_open(const char *path, GError **error);
StoreDb *cli_db_store(CliDb *db);
void cli_db_close(CliDb *db);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliDb, cli_db_close)

/*
 * Resolves @vm to the identity @db keys its target by: the identity itself,
 * else the name one target goes by (libvirt domain, QEMU -name).  A name
 * no target has is "no such target"; a name several targets go by is an
 * error that lists their identities.  @db_path names the file in errors.
 */
char *cli_db_target_resolve(CliDb *db, const char *db_path, const char *vm, GError **error);

/*
 * Each recorded target's name for people (identity -> name, both owned):
 * the name it goes by, or its identity when that is unknown or another
 * target goes by the same name, as `status` does.
 */
GHashTable *cli_db_target_names(CliDb *db, GError **error);

/* A store row as the daemon's `history` row (a new object). */
json_object *cli_row_to_json(const StoreRow *row);

/* Fills @p from a store row or a `history` row (raw or rollup).  FALSE when
 * @row lacks ts_ms, target or iothread. */
void cli_point_from_row(const StoreRow *row, CliPoint *p);
gboolean cli_point_from_json(json_object *row, CliPoint *p);

/* Fills @d from a store decision row or one JSON Lines export line. */
void cli_decision_from_row(const StoreDecisionRow *row, CliDecision *d);
gboolean cli_decision_from_json(json_object *line, CliDecision *d);

/* Parses "raw", "1m", "1h"; @what names the option in the error. */
gboolean cli_resolution_parse(const char *text, StoreResolution *out, GError **error);

/* The resolution the report and history pick for a span when none is given:
 * raw up to 1 h, 1-minute rollups up to 6 d, then 1-hour rollups.  The
 * bounds keep one iothread's rows under the daemon's 10,000-row limit. */
StoreResolution cli_resolution_for_span(gint64 span_ms);

G_END_DECLS
