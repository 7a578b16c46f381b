/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metric-vec: a value per metric and the delta of two.  See the header.
 */
#include "metric-vec.h"

void
metric_vec_init(MetricVec *v)
{
    for (int i = 0; i < METRIC_VEC_MAX; i++)
        v->v[i] = METRIC_ABSENT;
}

void
metric_vec_delta(const MetricVec *prev, const MetricVec *cur, guint paired, MetricVec *d)
{
    gboolean group_back[METRIC_SOURCE_MAX] = { FALSE };

    for (int i = 0; i < METRIC_VEC_MAX; i++) {
        const MetricDef *def = metric_def(i);
        gint64 a = prev->v[i], b = cur->v[i];

        if (def->reset == METRIC_RESET_GAUGE) {
            d->v[i] = b;
            continue;
        }
        if (!(paired & METRIC_SOURCE_BIT(def->source))) {
            d->v[i] = METRIC_ABSENT;
            continue;
        }
        if (a == METRIC_ABSENT || b == METRIC_ABSENT || b < a || a < 0) {
            d->v[i] = METRIC_ABSENT;
            if (def->reset == METRIC_RESET_GROUP)
                group_back[def->source] = TRUE;
            continue;
        }
        /* b >= a >= 0: the difference fits. */
        d->v[i] = b - a;
    }
    for (int i = 0; i < METRIC_VEC_MAX; i++)
        if (metric_def(i)->reset == METRIC_RESET_GROUP && group_back[metric_def(i)->source])
            d->v[i] = METRIC_ABSENT;
}

void
metric_vec_zero_source(MetricVec *v, MetricSource source)
{
    for (int i = 0; i < METRIC_VEC_MAX; i++)
        if (metric_def(i)->source == source)
            v->v[i] = 0;
}

void
metric_vec_add(MetricVec *sum, const MetricVec *d)
{
    for (int i = 0; i < METRIC_VEC_MAX; i++) {
        if (sum->v[i] == METRIC_ABSENT || d->v[i] == METRIC_ABSENT)
            sum->v[i] = METRIC_ABSENT;
        else
            sum->v[i] = d->v[i] > G_MAXINT64 - sum->v[i] ? G_MAXINT64 : sum->v[i] + d->v[i];
    }
}
