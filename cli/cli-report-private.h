/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-private: the report's data, shared by the part that collects
 * it (cli-report.c), the part that estimates from it (cli-report-model.c)
 * and the part that writes HTML (cli-report-html.c).
 */
#pragma once

#include "cli-report.h"

/* Decisions kept per iothread for the markers and the table. */
#define REPORT_MAX_DECISIONS 2000

/* QEMU's own poll-max-ns when nobody sets one (DESIGN.md). */
#define REPORT_QEMU_DEFAULT_MAX_NS 32768

/* One point as kept until the page is written: 24 bytes, so even a month
 * of 1 s ticks of one iothread (2.6 M points, only with an explicit
 * --resolution raw) stays near 60 MB. */
typedef struct {
    gint64 ts_ms;
    float iops, lat_us, cpu_pct;        /* NAN when unknown */
    gint32 max_ns;                      /* poll-max-ns, -1 when unknown */
} ReportPoint;

typedef struct {
    double iops_sum, lat_wsum, lat_w, lat_sum, cpu_sum;
    guint32 iops_n, lat_n, cpu_n;
    /* Ticks whose poll-max-ns is known, those of them polling, and the
     * iothread's CPU split by that. */
    guint32 known_n, on_n;
    double cpu_on_sum, cpu_off_sum;
    guint32 cpu_on_n, cpu_off_n;
} ReportBucket;

typedef struct {
    gint64 ts_ms;
    gboolean applied;
    gint64 old_max_ns, new_max_ns;
    char *policy, *reason;
} ReportDecision;

/* A run of ticks at one poll-max-ns, its first tick left out (a write
 * resets QEMU's window, so that tick describes neither setting). */
typedef struct {
    gint64 from_ms, to_ms;
    gint32 max_ns;
    guint n;
    double cpu, cpu_var, iops, lat;     /* means; lat weighted by IOPS */
} ReportSegment;

/* Two adjacent segments at different settings: a measured comparison. */
typedef struct {
    gint64 ts_ms;                       /* end of the later segment */
    ReportSegment a, b;
} ReportPair;

/* What one setting measured against another (polling on against off, or
 * a setting against QEMU's default), averaged over the pairs. */
typedef struct {
    guint n_pairs, n_ticks_a, n_ticks_b;
    gint64 newest_ms;                   /* end of the newest pair */
    double d_cpu_pct, d_cpu_se;         /* b minus a, percent of one core */
    double iops_a, iops_b, lat_a, lat_b;
} ReportCompare;

typedef enum {
    REPORT_CONFIDENCE_NONE,             /* no pair */
    REPORT_CONFIDENCE_LOW,
    REPORT_CONFIDENCE_MEDIUM,
    REPORT_CONFIDENCE_HIGH,
    REPORT_CONFIDENCE_MAX,
    REPORT_CONFIDENCE_INVALID = -1,
} ReportConfidence;

/* The iothread's CPU as a line in its IOPS: cpu_pct = a + b * iops. */
typedef struct {
    gboolean ok;
    double a, b;
    guint n;
} ReportFit;

typedef struct {
    char *target, *iothread;
    GArray *points;             /* ReportPoint, sorted by time once the page is made */
    /* Per-tick rows fed beside rollups, for what needs the setting of each
     * tick (pairs, time polling); NULL when the points are those rows. */
    GArray *ticks;
    gboolean ticks_cut;         /* older rows than the newest CLI_REPORT_MAX_TICKS dropped */
    ReportBucket *b;            /* nb buckets */
    GArray *decisions;          /* ReportDecision, in arrival order */
    guint decisions_total;
    guint64 n_points;

    /* Estimated by cli-report-model.c. */
    double *poll_cpu;           /* nb: estimated CPU on polling, % of one core */
    GArray *pairs;              /* ReportPair */
    ReportCompare onoff;        /* a: polling off, b: polling on */
    ReportConfidence onoff_confidence;
    double on_share;            /* of the ticks with a known setting, polling on */
    double mean_poll_cores;     /* over the range, NAN without a pair */
    /* Against QEMU's default: per-setting deltas applied to the time spent
     * at each setting. */
    guint vs_default_pairs;
    gint64 vs_default_newest_ms;
    double saved_cores, gained_iops;    /* mean over the range; NAN when unmeasured */
    double default_share, measured_share, unmeasured_share;
    ReportFit fit_all, fit_off, fit_on;
    double mean_iops, p95_iops, mean_cpu_pct;
} ReportSeries;

/* One VM, summed over its iothreads, per bucket. */
typedef struct {
    const char *name;
    GPtrArray *series;          /* ReportSeries, borrowed */
    double *iops, *cores, *lat, *poll_cores; /* nb each; NAN where no iothread had data */
    double mean_iops, mean_cores;
    double iops_p50, iops_p95, lat_p50, lat_p95, cores_p50, cores_p95;
    guint decisions;
} ReportVm;

struct CliReport {
    gint64 from_ms, to_ms;      /* as asked */
    gboolean fit_range;         /* shrink to the data when it is shorter */
    char *source;
    StoreResolution resolution;
    /* Settled when the page is made. */
    gint64 step_ms;             /* one bucket */
    guint nb;                   /* time buckets per chart */
    gint64 interval_ms;         /* median gap between a series' points */
    gint64 tick_ms;             /* the same for per-tick rows */
    gboolean range_fitted;
    GHashTable *by_key;         /* "target\x1fiothread" -> ReportSeries */
    GPtrArray *series;          /* ReportSeries, owned, in first-seen order */
    GPtrArray *notes;
    guint64 n_points, n_decisions;
};

/* Per-bucket figures of one iothread; NAN when the bucket is empty. */
double report_bucket_iops(const ReportBucket *b);
double report_bucket_lat(const ReportBucket *b);
double report_bucket_cpu(const ReportBucket *b);
double report_bucket_cpu_on(const ReportBucket *b);
double report_bucket_cpu_off(const ReportBucket *b);

/* The @p-th percentile (0..100) of the non-NAN values, NAN if none. */
double report_percentile(const double *values, guint n, double p);
double report_mean(const double *values, guint n);

/* Sorts the points, settles the range and the buckets, fills them. */
void report_settle(CliReport *r);
/* The estimates of each series (cli-report-model.c). */
void report_model_series(CliReport *r, ReportSeries *s);
/* cpu_pct at @iops by @fit, NAN when it has none. */
double report_fit_at(const ReportFit *fit, double iops);
const char *report_confidence_to_string(ReportConfidence c);

/* VMs with their per-bucket sums, sorted by name; free with the array. */
GPtrArray *report_vms_build(CliReport *r);
