/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-private: the report's aggregated data, shared by the part
 * that collects it (cli-report.c) and the part that writes HTML
 * (cli-report-html.c).
 */
#pragma once

#include "cli-report.h"

/* Decisions kept per iothread for the markers and the table. */
#define REPORT_MAX_DECISIONS 2000

typedef struct {
    double iops_sum, lat_wsum, lat_w, lat_sum, cpu_sum;
    guint32 iops_n, lat_n, cpu_n;
} ReportBucket;

typedef struct {
    gint64 ts_ms;
    gboolean applied;
    gint64 old_max_ns, new_max_ns;
    char *policy, *reason;
} ReportDecision;

typedef struct {
    char *target, *iothread;
    ReportBucket *b;            /* nb buckets */
    GArray *decisions;          /* ReportDecision, in arrival order */
    guint decisions_total;
    guint64 n_points;
} ReportSeries;

/* One VM, summed over its iothreads, per bucket. */
typedef struct {
    const char *name;
    GPtrArray *series;          /* ReportSeries, borrowed */
    double *iops, *cores, *lat; /* nb each; NAN where no iothread had data */
    double mean_iops, mean_cores;
    double iops_p50, iops_p95, lat_p50, lat_p95, cores_p50, cores_p95;
    guint decisions;
} ReportVm;

struct CliReport {
    gint64 from_ms, to_ms;
    char *source;
    StoreResolution resolution;
    guint nb;                   /* time buckets per chart */
    GHashTable *by_key;         /* "target\x1fiothread" -> ReportSeries */
    GPtrArray *series;          /* ReportSeries, owned, in first-seen order */
    GPtrArray *notes;
    guint64 n_points, n_decisions;
};

/* Per-bucket figures of one iothread; NAN when the bucket is empty. */
double report_bucket_iops(const ReportBucket *b);
double report_bucket_lat(const ReportBucket *b);
double report_bucket_cpu(const ReportBucket *b);

/* The @p-th percentile (0..100) of the non-NAN values, NAN if none. */
double report_percentile(const double *values, guint n, double p);
double report_mean(const double *values, guint n);

/* VMs with their per-bucket sums, sorted by name; free with the array. */
GPtrArray *report_vms_build(CliReport *r);
