/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report: the self-contained HTML capacity-planning report.
 *
 * Points and decisions are fed in any order and from any source (the
 * daemon, a database file, a Prometheus server); each iothread's points are
 * kept (24 bytes each) until the page is written, so that the range can be
 * fitted to the data and the buckets sized from it.  The report then shows,
 * for the host and per VM and iothread: the CPU spent on polling as
 * measured by the policy's own off/on runs (never the iothread's whole
 * CPU), what polling buys in IOPS and latency, what polltune saved or cost
 * against QEMU's default, headroom and a projection at 1.5x and 2x the
 * observed load, a p50/p95 sizing table, and per iothread IOPS, latency and
 * CPU over time with the decisions marked (docs/CLI.md, "Report").  The
 * HTML has no scripts and fetches nothing.
 */
#pragma once

#include <gio/gio.h>

#include "cli-data.h"
#include "policy-gain.h"

G_BEGIN_DECLS

/* At most this many time buckets per chart; the bucket size is chosen from
 * the range and the data's interval (about 240 buckets), this only bounds
 * a range with an interval finer than the range allows. */
#define CLI_REPORT_MAX_BUCKETS 720

typedef struct CliReport CliReport;

/* @source is shown in the header ("polltuned at ...", "database ..."). */
CliReport *cli_report_new(gint64 from_ms, gint64 to_ms, const char *source,
                          StoreResolution resolution);
void cli_report_free(CliReport *r);
/* With @fit, the page's range shrinks to the data's first and last sample
 * when the history is shorter than the range asked (the default range). */
void cli_report_fit_range(CliReport *r, gboolean fit);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliReport, cli_report_free)

/* @target (the store's and the daemon's identity, a QMP target's socket
 * path) goes by @name on the page (QEMU's -name, the libvirt domain); a
 * name two targets share is not used, their identities are. */
void cli_report_set_name(CliReport *r, const char *target, const char *name);
/* cli_report_set_name() for each entry of @names (identity -> name). */
void cli_report_set_names(CliReport *r, GHashTable *names);
/* A fleet's report: each VM is HOST/DOMAIN, grouped by host.  Otherwise
 * the page is of one host, @host_name (the machine's name) when known. */
void cli_report_set_fleet(CliReport *r, gboolean fleet);
void cli_report_set_host(CliReport *r, const char *host_name);

/* A fleet's gain totals of @target/@iothread over the range: the
 * increases of the daemon's gain counters (policy-gain.h), used instead
 * of replaying the points, which are rates over scrapes, not ticks. */
void cli_report_set_gain(CliReport *r, const char *target, const char *iothread,
                         const PolicyGainTotals *increase);

/*
 * A per-tick row from the POLICY_GAIN_PAIR_MAX_AGE_MS before the range,
 * oldest first: the pairs it closes charge the range's first ticks, as
 * the daemon's counters had them charged, so that a fleet report of the
 * same range gives the same figures.  Not charted, not charged itself;
 * fed after the range's rows, and ignored for an iothread without any.
 */
void cli_report_add_warmup(CliReport *r, const CliPoint *p);

/* Points outside [from, to) are ignored.  Strings are copied. */
void cli_report_add_point(CliReport *r, const CliPoint *p);
void cli_report_add_decision(CliReport *r, const CliDecision *d);
/* A per-tick row fed beside rollups: not charted, but it tells which
 * ticks polled, and the policy's off/on runs are found in such rows only. */
void cli_report_add_tick(CliReport *r, const CliPoint *p);
/* Per-tick rows kept beside rollups, per iothread: the newest 12 h of 1 s
 * ticks.  The policy probes every few minutes, so that holds dozens of its
 * off/on runs; at 24 bytes a row it is about 1 MB per iothread (100 MB
 * for 100 iothreads), where the 48 h of raw rows kept by default would be
 * four times that. */
#define CLI_REPORT_MAX_TICKS (12 * 3600)
/* One tick's host figures (CPU busy, CPU pressure), shown beside the
 * iothreads' headroom; the newest CLI_REPORT_MAX_TICKS are kept. */
void cli_report_add_host(CliReport *r, const CliHostPoint *p);
/* Shown as a warning (e.g. "vm-3/iothread1: the daemon's 10,000-row limit
 * cut the history short"). */
void cli_report_add_note(CliReport *r, const char *note);

guint64 cli_report_n_points(const CliReport *r);
/* The first and last point's time; FALSE when there is none. */
gboolean cli_report_data_span(const CliReport *r, gint64 *first_ms, gint64 *last_ms);

gboolean cli_report_write(CliReport *r, GOutputStream *out, gint64 now_ms,
                          GError **error);

/* After cli_report_write: per iothread, its figures over the page's range
 * ({"target", "name", "iothread", "points", "iops_mean", "cpu_pct_mean",
 * "polling_share", "poll_max_ns_last", "onoff_pairs", "polling_cpu_pct"}),
 * for scripts and tests that compare two reports. */
json_object *cli_report_summary(CliReport *r);
/* After cli_report_write: the page's range (fitted to the data or not). */
void cli_report_range(const CliReport *r, gint64 *from_ms, gint64 *to_ms);

G_END_DECLS
