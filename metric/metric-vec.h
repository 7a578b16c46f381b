/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metric-vec: one value per metric of the table, the shape a sample keeps
 * from the reader to the store row and the policy's decision.
 *
 * A MetricVec holds, by MetricId, either a cumulative reading (a reader's
 * snapshot), one tick's increase (a delta), or, for a gauge, the value in
 * force.  METRIC_ABSENT is the one marker of a value that is not there: not
 * read, or a delta its pair cannot give.  It is the store's NULL too.
 *
 * metric_vec_delta() is the one subtraction of counters: the probe calls it
 * once per iothread per tick, and everything downstream (the store's row,
 * the policy's rates) reads that delta.
 *
 * Pure; GLib only.
 */
#pragma once

#include <glib.h>

#include "metric-table.h"

G_BEGIN_DECLS

/* Absent: no value.  Never a real reading: counters are below 2^63. */
#define METRIC_ABSENT G_MININT64

typedef struct {
    gint64 v[METRIC_VEC_MAX];
} MetricVec;

/* A cumulative reading as the vector holds it: a counter never reaches
 * 2^63, so a larger reading is clamped rather than wrapped. */
static inline gint64
metric_reading(guint64 v)
{
    return (gint64)MIN(v, (guint64)G_MAXINT64);
}

/* Every value absent. */
void metric_vec_init(MetricVec *v);

static inline gboolean
metric_vec_has(const MetricVec *v, MetricId id)
{
    return v->v[id] != METRIC_ABSENT;
}

/* Bit @source of a mask of MetricSource. */
#define METRIC_SOURCE_BIT(source) (1u << (source))
#define METRIC_SOURCES_ALL ((1u << METRIC_SOURCE_MAX) - 1)

/*
 * One tick's increase @cur - @prev into @d, by each metric's reset rule
 * (metric-table.h): a gauge is @cur's value; a counter is absent when
 * either reading lacks it, when its source is not in @paired (a mask of
 * METRIC_SOURCE_BIT: the caller decides which groups belong together), or
 * when it went backwards; a METRIC_RESET_GROUP counter going backwards or
 * missing from either reading makes its whole source group absent.  @d may not alias @prev or @cur.
 */
void metric_vec_delta(const MetricVec *prev, const MetricVec *cur, guint paired,
                      MetricVec *d);

/* Every value of @source 0: the start of a sum. */
void metric_vec_zero_source(MetricVec *v, MetricSource source);

/*
 * Add the deltas of @d to @sum, saturating at G_MAXINT64; an absent value
 * of either makes the sum's value absent.  For the readings of several
 * devices of one iothread.
 */
void metric_vec_add(MetricVec *sum, const MetricVec *d);

/* The operation count of one tick's delta (rd + wr + flush), or FALSE when
 * any is absent. */
gboolean metric_values_ops(const MetricVec *m, gint64 *ops);

/*
 * Rate @rate of one tick's delta @m over @len_ns, by the table's formula
 * (metric-table.h); FALSE when a term is absent, the tick has no length,
 * or the rate is undefined.  The rate formulas live here alone: the
 * policy's rates, the store's history rows and exports and the CLI call it.
 */
gboolean metric_rate_value(MetricRate rate, const MetricVec *m, gint64 len_ns, double *out);

G_END_DECLS
