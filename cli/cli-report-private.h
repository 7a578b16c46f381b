/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-private: the report's data, shared by the part that collects
 * it (cli-report.c), the part that estimates from it (cli-report-model.c)
 * and the part that writes HTML (cli-report-html.c).
 */
#pragma once

#include "cli-report.h"
#include "policy-gain.h"
#include "policy-metrics.h"

/* Decisions kept per iothread for the markers and the table. */
#define REPORT_MAX_DECISIONS 2000

/*
 * An exploration of the adaptive policy writes its probes (decisions of
 * cause "probe") one after another, each measured for at most a few ticks
 * (SEG_MAX, policy-adaptive-explore.c) plus the dwell between writes: under a
 * minute at the longest sensible interval of 10 s.  A probe starts an
 * exploration unless the iothread's decision just before it was a probe
 * made less than this long before; the gap stays under revalidate's
 * default of 5 minutes, the soonest a settled iothread explores again, so
 * two explorations are not taken for one even when the first ended
 * without a write of its own (its last probe won).
 */
#define REPORT_EXPLORATION_GAP_MS (2 * 60 * 1000)

/* QEMU's own poll-max-ns when nobody sets one (DESIGN.md). */
#define REPORT_QEMU_DEFAULT_MAX_NS ((gint32)POLICY_TRIPLE_QEMU_DEFAULT.poll_max_ns)

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

/*
 * What makes two runs the same workload, so that their difference is the
 * setting's: a run below REPORT_LOAD_MIN_IOPS is idle; two idle runs are
 * alike, an idle run and a loaded one never are; two loaded runs are alike
 * when their IOPS and their queue depths (IOPS x latency, Little's law)
 * are each within a factor of REPORT_PAIR_BAND.  The band is wide enough
 * for what a setting itself does (polling off costs a busy iothread 15 to
 * 25 % of its IOPS at the same queue depth) and narrow enough to tell the
 * phases of a workload apart (a burst against the quiet before it).
 */
#define REPORT_LOAD_MIN_IOPS POLICY_GAIN_LOAD_MIN_IOPS
#define REPORT_PAIR_BAND POLICY_GAIN_BAND

/*
 * A straight line through (IOPS, CPU) points is credible when it rests on
 * REPORT_FIT_MIN_POINTS ticks or more whose IOPS spread (standard
 * deviation over mean) is REPORT_FIT_MIN_SPREAD or more, and it rises:
 * twenty 1 s ticks is the least a load phase of the demo holds at one
 * setting, and IOPS within 10 % of each other are one load, whose slope
 * is noise.  A
 * line that falls says more load costs less CPU, which no iothread does:
 * it mixes workloads, and is no evidence.
 */
#define REPORT_FIT_MIN_POINTS 20
#define REPORT_FIT_MIN_SPREAD 0.10

/* A run of ticks at one poll-max-ns, its first tick left out (a write
 * resets QEMU's window, so that tick describes neither setting). */
typedef struct {
    gint64 from_ms, to_ms;
    gint32 max_ns;
    guint n;
    double cpu, cpu_var, iops, lat;     /* means; lat weighted by IOPS */
    double qd;                          /* IOPS x lat: requests in flight */
} ReportSegment;

/* Two adjacent segments at different settings: a comparison, measured
 * when the two are the same workload. */
typedef struct {
    gint64 ts_ms;                       /* end of the later segment */
    ReportSegment a, b;
    gboolean comparable;                /* the same phase (see above) */
    gboolean loaded;                    /* and both sides had load */
} ReportPair;

/* What one setting measured against another (polling on against off, or
 * a setting against QEMU's default), averaged over the pairs. */
typedef struct {
    guint n_pairs, n_ticks_a, n_ticks_b;
    guint n_unlike;                     /* adjacent runs left out: not the same workload */
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

/* The iothread's CPU as a line in its IOPS: cpu_pct = a + b * iops, over
 * the ticks with load at one polling state. */
typedef struct {
    gboolean ok;                        /* credible (REPORT_FIT_MIN_POINTS) */
    double a, b;
    guint n;
    double x_max;                       /* the highest IOPS among its points */
} ReportFit;

typedef struct {
    char *target, *iothread;
    /* The name the VM goes by (cli_report_set_name()), or the target's
     * identity where it has none or shares it with another; settled with
     * the page, borrowed. */
    const char *name;
    GArray *points;             /* ReportPoint, sorted by time once the page is made */
    /* Per-tick rows fed beside rollups, for what needs the setting of each
     * tick (pairs, time polling); NULL when the points are those rows. */
    GArray *ticks;
    gboolean ticks_cut;         /* older rows than the newest CLI_REPORT_MAX_TICKS dropped */
    ReportBucket *b;            /* nb buckets */
    GArray *decisions;          /* ReportDecision, in arrival order */
    guint decisions_total;
    guint explorations;         /* REPORT_EXPLORATION_GAP_MS */
    gint64 last_probe_ms;       /* the last decision's time if a probe, else G_MININT64 */
    guint64 n_points;

    /* Estimated by cli-report-model.c. */
    double *poll_cpu;           /* nb: estimated CPU on polling, % of one core */
    GArray *pairs;              /* ReportPair */
    ReportCompare onoff;        /* a: polling off, b: polling on */
    ReportConfidence onoff_confidence;
    double on_share;            /* of the ticks with a known setting, polling on */
    double mean_poll_cores;     /* over the range, NAN without a pair */
    /* Polling's CPU while on, % of one core: the charges over the time
     * charged (policy_gain_figures()), NAN where none was. */
    double poll_on_pct;
    /* Against QEMU's default: the pairs found in the points, for the
     * table; the figures are policy_gain_figures() of the totals. */
    guint vs_default_pairs, vs_default_unlike;
    gint64 vs_default_newest_ms;
    /* The gain totals over the range: the ticks replayed through
     * policy-gain, or a fleet's counter increases (cli_report_set_gain()). */
    PolicyGainTotals gain;
    gboolean gain_given;
    /* The replay, fed the ticks before the range (cli_report_add_warmup());
     * NULL until one came. */
    PolicyGain *gain_warm;
    double saved_cores, gained_iops;    /* mean over the range; NAN when unmeasured */
    double default_share, measured_share, unmeasured_share;
    /* Per polling state; fit is the state the loaded ticks spent most
     * time in, the one the projection follows. */
    ReportFit fit_off, fit_on, fit;
    double mean_iops, p95_iops, mean_cpu_pct;
    guint busy_buckets;
    /* Over the points with load (at least REPORT_LOAD_MIN_IOPS), never the
     * buckets, so that the bucket size does not move them: the 95th
     * percentile of IOPS and of CPU; the peak is the highest IOPS of any
     * point or tick. */
    double busy_p95_iops, peak_iops, busy_p95_cpu_pct;
} ReportSeries;

/* One tick of the host, as kept until the page is written. */
typedef struct {
    gint64 ts_ms;
    float busy_pct, cpus, psi_pct;      /* NAN when unknown */
} ReportHost;

/*
 * A host tick is saturated when its CPUs were REPORT_HOST_BUSY_FULL busy
 * or more, or tasks waited for a CPU (PSI cpu "some") for
 * REPORT_HOST_PSI_FULL of it or more: an iothread's headroom on one core
 * is then no promise, since no core has time to give.  The page warns when
 * REPORT_HOST_SATURATED_WARN of the ticks were.
 */
#define REPORT_HOST_BUSY_FULL 95.0
#define REPORT_HOST_PSI_FULL 50.0
#define REPORT_HOST_SATURATED_WARN 0.10

typedef struct {
    guint n;                            /* ticks with any host figure */
    gint64 first_ms, last_ms;
    double cpus;                        /* median */
    double busy_mean, busy_p95, busy_max;
    double psi_mean, psi_p95;
    double saturated_share;             /* of the ticks with a figure */
    double *busy, *psi;                 /* per bucket; NAN when empty */
} ReportHostSummary;

/* One VM, summed over its iothreads, per bucket. */
typedef struct {
    const char *name;
    GPtrArray *series;          /* ReportSeries, borrowed */
    double *iops, *cores, *lat, *poll_cores; /* nb each; NAN where no iothread had data */
    double mean_iops, mean_cores;
    double iops_p50, iops_p95, lat_p50, lat_p95, cores_p50, cores_p95;
    guint decisions;
    guint explorations;
    double explorations_per_h;  /* over the report's range */
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
    GArray *host;               /* ReportHost, sorted by time once the page is made */
    gboolean host_cut;          /* older host ticks than the newest CLI_REPORT_MAX_TICKS dropped */
    ReportHostSummary hs;       /* settled with the page */
    GHashTable *names;          /* target -> the name it goes by */
    gboolean fleet;             /* VMs are HOST/DOMAIN, from Prometheus */
    char *host_name;            /* a single host's, or NULL */
};

/* @n events over the report's range, per hour; NAN for an empty range. */
double report_per_hour(const CliReport *r, guint n);

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
/* The bucket of @ts_ms; FALSE outside the range. */
gboolean report_bucket_index(const CliReport *r, gint64 ts_ms, guint *bi);
/* The estimates of each series (cli-report-model.c). */
void report_model_series(CliReport *r, ReportSeries *s);
/*
 * The iothread's CPU (% of one core) at @iops: today's busy CPU
 * (busy_p95_cpu_pct at busy_p95_iops) followed along the credible line's
 * slope, so that it never falls as load rises.  NAN below today's load,
 * without a credible line ("not enough evidence") and past the highest
 * load the line was measured at (report_project_beyond()).
 */
double report_project_cpu(const ReportSeries *s, double iops);
/* Whether @iops lies past the highest IOPS the line was measured at. */
gboolean report_project_beyond(const ReportSeries *s, double iops);
const char *report_confidence_to_string(ReportConfidence c);

/* The page's pieces shared between its files (cli-report-html.c). */
/* A figure, "-" when unknown; its unit is in the column's header. */
void report_cell_num(GString *out, double v, gboolean si, int decimals);
/* A table row's start and its first cell, the iothread's name. */
void report_row_start(GString *h, const ReportSeries *s);
/* The headroom and projection section (cli-report-projection.c). */
void report_html_projection(GString *h, CliReport *r);

/* VMs with their per-bucket sums, sorted by name; free with the array. */
GPtrArray *report_vms_build(CliReport *r);
