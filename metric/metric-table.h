/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metric-table: every per-iothread figure polltune keeps, declared once.
 *
 * A counter or gauge read per iothread per tick (MetricId) is declared by
 * one MetricDef: its name (also its store column and export column, and
 * the name of its field wherever a struct names it), unit, source group,
 * reset rule, and how the metrics endpoint exports it.  A figure derived
 * from them for people (MetricRate: IOPS, latency, CPU percent, ...) is
 * declared by one MetricRateDef: its JSON key, unit, formula, its rollup
 * column and decoding, and its CLI column.
 *
 * The probe's pairing, the store's schema, writes, queries and exports,
 * the control replies, the metrics endpoint and the CLI read these tables
 * instead of naming each field, so that a new figure is one entry here,
 * one reader that fills it, and one store migration that adds its column.
 * The model is QEMU's query-stats schema and libvirt's typed parameters.
 *
 * A sample carries one value per metric as a MetricVec (metric-vec.h),
 * indexed by MetricId, from the reader's snapshot to the store's row and
 * the policy's delta.  The order is the store's column order: never
 * reorder, only append (an iothread's figures before METRIC_MAX).
 *
 * Pure data and lookups; GLib only.
 */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

typedef enum {
    /* query-iothreads (or libvirt's iothread stats): the triple in force */
    METRIC_POLL_MAX_NS,
    METRIC_POLL_GROW,
    METRIC_POLL_SHRINK,
    /* /proc/PID/task/TID/{stat,status,schedstat}: the iothread's thread */
    METRIC_CPU_NS,
    METRIC_CTX_VOL,
    METRIC_CTX_INVOL,
    METRIC_RUNQ_WAIT_NS,
    /* query-blockstats: the devices the iothread serves */
    METRIC_RD_OPS,
    METRIC_RD_BYTES,
    METRIC_RD_TIME_NS,
    METRIC_WR_OPS,
    METRIC_WR_BYTES,
    METRIC_WR_TIME_NS,
    METRIC_FLUSH_OPS,
    METRIC_FLUSH_TIME_NS,
    /* KVM exits of the whole VM */
    METRIC_KVM_EXITS,
    METRIC_IO_EXITS,
    METRIC_MMIO_EXITS,
    METRIC_HALT_EXITS,
    /* query-iothreads, QEMU 6.1 and later (schema 6) */
    METRIC_AIO_MAX_BATCH,
    /* The figures of an iothread, each a column of its sample, end here. */
    METRIC_MAX,
    /*
     * The host's counters (policy-counters.h's PolicyHostCounters): entries
     * of the host's vector, never of an iothread's, so not sample columns;
     * the store keeps their deltas in its host rows.
     */
    METRIC_HOST_PSI_SOME_US = METRIC_MAX,
    METRIC_HOST_CPU_BUSY,
    METRIC_HOST_CPU_TOTAL,
    METRIC_HOST_VCPU_WAIT_NS,
    /*
     * The iothread thread's utime and stime in clock ticks, as /proc's stat
     * reads them: the probe's fallback for METRIC_CPU_NS without schedstat
     * (probe-derive.c), not a figure of the delta or a column.
     */
    METRIC_UTIME_TICKS,
    METRIC_STIME_TICKS,
    /*
     * KVM's other exit and halt-polling counters of the whole VM, read with
     * the exits above (probe-exits.h); the last two exist only as
     * tracepoints.  Not figures of the delta or columns.
     */
    METRIC_HALT_SUCCESSFUL_POLL,
    METRIC_HALT_ATTEMPTED_POLL,
    METRIC_HALT_POLL_INVALID,
    METRIC_HALT_WAKEUP,
    METRIC_HALT_POLL_SUCCESS_NS,
    METRIC_HALT_POLL_FAIL_NS,
    METRIC_HALT_WAIT_NS,
    METRIC_USERSPACE_EXITS,
    METRIC_FAST_MMIO,
    METRIC_VEC_MAX,
    METRIC_INVALID = -1,
} MetricId;

/* Where a figure is read; each group is paired as a whole (probe-derive.h):
 * same device set, same thread, same exit source. */
typedef enum {
    METRIC_SOURCE_IOTHREAD,     /* query-iothreads */
    METRIC_SOURCE_THREAD,       /* /proc of the iothread's thread */
    METRIC_SOURCE_BLOCK,        /* query-blockstats, summed over devices */
    METRIC_SOURCE_EXITS,        /* query-stats, debugfs or perf */
    METRIC_SOURCE_HOST_PSI,     /* /proc/pressure/cpu */
    METRIC_SOURCE_HOST_STAT,    /* /proc/stat, all CPUs */
    METRIC_SOURCE_HOST_VCPU,    /* schedstat of the VMs' vCPU threads, summed */
    METRIC_SOURCE_MAX,
    METRIC_SOURCE_INVALID = -1,
} MetricSource;

/* What a reading means from one tick to the next. */
typedef enum {
    /* A setting in force: stored as read, never subtracted. */
    METRIC_RESET_GAUGE,
    /* A cumulative counter whose going backwards drops its whole source
     * group for the tick (the block counters: one device's reset must not
     * hide in another's growth). */
    METRIC_RESET_GROUP,
    /* A cumulative counter whose going backwards drops only itself. */
    METRIC_RESET_SELF,
    METRIC_RESET_MAX,
    METRIC_RESET_INVALID = -1,
} MetricReset;

typedef struct {
    const char *name;           /* field, store column, CSV/JSONL column */
    const char *unit;           /* of one tick's value: "ns", "ops", ... */
    MetricSource source;
    MetricReset reset;
    const char *help;           /* one sentence, for docs and the endpoint */
    /* OpenMetrics: entries that share a family are one family; with a
     * label each is one sample of it, without they are summed into one.
     * NULL: not exported per iothread. */
    const char *om_family;
    const char *om_label, *om_label_value;
    double om_scale;            /* to the family's base unit */
    const char *om_unit;        /* OpenMetrics UNIT, or NULL */
    const char *om_help;
    /* The key of the raw value in a history row (JSON), or NULL. */
    const char *json_key;
    /* A gauge kept in rollups: a column of its name holding the value in
     * force for most of the bucket's time (all rolled gauges together, as
     * one setting: the triple in effect). */
    gboolean rollup;
} MetricDef;

/* Figures derived for people from one tick's values (or from a rollup). */
typedef enum {
    METRIC_RATE_IOPS,
    METRIC_RATE_RD_IOPS,
    METRIC_RATE_WR_IOPS,
    METRIC_RATE_FLUSH_IOPS,
    METRIC_RATE_MBPS,
    METRIC_RATE_LAT_US,
    METRIC_RATE_QUEUE_DEPTH,
    METRIC_RATE_CPU_PCT,
    METRIC_RATE_BLOCKS_PER_S,
    METRIC_RATE_BLOCKS_PER_OP,
    METRIC_RATE_RUN_DELAY_PCT,
    METRIC_RATE_EXITS_PER_S,
    METRIC_RATE_EXITS_PER_OP,
    METRIC_RATE_MAX,
    METRIC_RATE_INVALID = -1,
} MetricRate;

/* What a rate's numerator is divided by. */
typedef enum {
    METRIC_PER_SECOND,          /* the tick's length in seconds */
    METRIC_PER_TICK_NS,         /* the tick's length in ns: a share */
    /* The tick's operations; absent when none: a tick without I/O has no
     * latency, blocks or exits per operation, which 0 would claim. */
    METRIC_PER_OP_SKIP_IDLE,
} MetricPer;

#define METRIC_RATE_TERMS 3

typedef struct {
    const char *json_key;       /* history rows, status metrics */
    const char *unit;
    /* numerator: the sum of up to METRIC_RATE_TERMS metrics (METRIC_INVALID
     * ends the list), all present, times @scale, divided as @per says */
    MetricId terms[METRIC_RATE_TERMS];
    double scale;
    MetricPer per;
    /* needs the operation count present even if not divided by it */
    gboolean needs_ops;
    /* Rollups: column prefix ("iops": iops_min, iops_mean, ...), the
     * stored integer's unit and the factor that makes it @unit, the
     * export's column suffix and decimals; NULL prefix: not rolled up. */
    const char *rollup_prefix;
    const char *rollup_unit;
    double rollup_scale;
    const char *export_suffix;
    int export_decimals;
    /* The `polltunectl status` column: header and decimals (-1: integer
     * with thousands), NULL header: not shown. */
    const char *cli_header;
    int cli_decimals;
    /* Also a column of raw exports, named @json_key, with
     * @export_decimals places (IOPS beside the per-tick deltas). */
    gboolean raw_export;
} MetricRateDef;

const MetricDef *metric_def(MetricId id);
const MetricRateDef *metric_rate_def(MetricRate rate);

const char *metric_source_to_string(MetricSource s);
const char *metric_reset_to_string(MetricReset r);


G_END_DECLS
