/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report: the self-contained HTML capacity-planning report.
 *
 * Points and decisions are fed in any order and from any source (the
 * daemon or a database file); each iothread's points are folded into a
 * fixed number of time buckets as they arrive, so memory depends on the
 * number of iothreads, not on the length of the range.  The report then
 * shows, for the host, the cores spent polling over time, the top
 * consumers, the IOPS each VM gets per polling core and a p50/p95 sizing
 * table; and per VM and iothread, IOPS, latency and polling CPU over time
 * with the decisions marked.  The HTML has no scripts and fetches nothing.
 */
#pragma once

#include <gio/gio.h>

#include "cli-data.h"

G_BEGIN_DECLS

/* At most this many time buckets per chart (one per hour over 30 days);
 * fewer when the resolution is coarser than range / 720, so that every
 * bucket holds a row and the lines have no holes. */
#define CLI_REPORT_MAX_BUCKETS 720

typedef struct CliReport CliReport;

/* @source is shown in the header ("polltuned at ...", "database ..."). */
CliReport *cli_report_new(gint64 from_ms, gint64 to_ms, const char *source,
                          StoreResolution resolution);
void cli_report_free(CliReport *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CliReport, cli_report_free)

/* Points outside [from, to) are ignored.  Strings are copied. */
void cli_report_add_point(CliReport *r, const CliPoint *p);
void cli_report_add_decision(CliReport *r, const CliDecision *d);
/* Shown as a warning (e.g. "vm-3/iothread1: the daemon's 10,000-row limit
 * cut the history short"). */
void cli_report_add_note(CliReport *r, const char *note);

guint64 cli_report_n_points(const CliReport *r);

gboolean cli_report_write(CliReport *r, GOutputStream *out, gint64 now_ms,
                          GError **error);

G_END_DECLS
