/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-prometheus: the capacity report for a fleet, from a Prometheus
 * server's HTTP API.
 *
 * One host keeps its own sqlite history; many hosts are aggregated by
 * Prometheus scraping each polltuned's /metrics (docs/METRICS.md).  This
 * reads the iothread families back with /api/v1/query_range, as rates over
 * a window, and feeds them to the same report as points whose VM is
 * "HOST/DOMAIN", HOST being the value of the host label: `instance`
 * unless the caller names another.
 *
 * Contract
 * - Only http:// URLs.  The whole exchange (every query) ends within the
 *   timeout however the server paces its bytes; each reply is read up to
 *   CLI_PROM_MAX_REPLY bytes and a longer one is an error naming the
 *   query, not a truncation.
 * - A reply is data only with HTTP 200 and "status": "success"; anything
 *   else is an error with the server's own words.
 * - Every sample's time must lie in the range asked and every value be a
 *   finite figure of its family's range (NaN is a gap), checked before any
 *   arithmetic on it.
 * - Two series with the same host, domain and iothread from different
 *   scrape targets (job and instance) are never summed: that is an error
 *   naming both, since the host label does not tell the hosts apart.
 * - Memory follows what the server sent, within CLI_PROM_MAX_SERIES series
 *   and CLI_PROM_MAX_SAMPLES samples per reply; a reply beyond them is
 *   refused before it is parsed.
 * - Errors name the URL or the query and the cause (HTTP status, the
 *   server's own "error" text, or what was malformed).
 */
#pragma once

#include "cli-report.h"

G_BEGIN_DECLS

/*
 * The largest reply we read.  A report has about 240 buckets, so asking
 * for more than CLI_PROM_MAX_POINTS points per series buys nothing; one
 * point is at most about 40 bytes of JSON ([1733270400.123,"12345.678"],),
 * a series' labels about 200.  A fleet of 2,000 iothreads (200 hosts of 10)
 * then replies 2,000 x (256 x 40 + 200) = 20.9 MB to the largest query;
 * 32 MiB leaves half again for longer label values.  A larger fleet is
 * reported in parts with --selector (per data centre, per rack).
 */
#define CLI_PROM_MAX_POINTS 256
#define CLI_PROM_MAX_REPLY (32u * 1024 * 1024)

/*
 * What one reply may hold, counted before it is parsed (a parsed sample
 * costs about 300 bytes): the samples of the fleet the reply size is made
 * for, 2,048 iothreads of CLI_PROM_MAX_POINTS points (150 MB parsed), and
 * ten times its series, for a fleet whose history is short (20,000
 * iothreads of 26 points).  Each series costs about 1 KB once read.
 */
#define CLI_PROM_MAX_SAMPLES (2048u * CLI_PROM_MAX_POINTS)
#define CLI_PROM_MAX_SERIES 20000u

typedef struct {
    const char *url;            /* http://HOST:PORT[/PREFIX] */
    const char *selector;       /* label matchers without braces, or NULL */
    const char *host_label;     /* the label naming a host; NULL: instance */
    gint64 scrape_ms;           /* the servers' scrape interval */
    gint64 timeout_ms;          /* the whole exchange */
} CliPromOptions;

/* Reads the fleet's iothreads over @rep's range into @rep; the range is
 * fitted to the data where @rep was asked to.  Returns the number of
 * series read. */
gboolean cli_prometheus_read(const CliPromOptions *o, CliReport *rep, gint64 from_ms,
                             gint64 to_ms, guint *n_series, GError **error);

G_END_DECLS
