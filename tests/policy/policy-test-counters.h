/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Two cumulative readings of an iothread's counters, as the tests of the
 * policy's rates write them, and their delta by metric_vec_delta() (the
 * probe's subtraction) into policy_metrics_from_delta().
 */
#pragma once

#include "policy-counters.h"
#include "policy.h"

typedef struct {
    gint64 when_ms;             /* UTC ms of the reading */
    gint64 mono_ns;             /* monotonic ns of the reading */
    PolicyTriple triple;

    gboolean have_io;
    guint64 rd_ops, wr_ops, flush_ops;
    guint64 rd_bytes, wr_bytes;
    guint64 rd_time_ns, wr_time_ns, flush_time_ns;
    guint n_devices;
    guint64 dev_ops[POLICY_MAX_DEVICES];

    gboolean have_cpu;
    guint64 cpu_ns;
    guint64 ctx_vol, ctx_invol;
    guint64 runq_wait_ns;

    gboolean have_exits;
    guint64 exits;
} TestCounters;

/* One reading as the table's vector. */
static inline void
counters_vec(const TestCounters *c, MetricVec *v)
{
    metric_vec_init(v);
    v->v[METRIC_POLL_MAX_NS] = (gint64)c->triple.poll_max_ns;
    v->v[METRIC_POLL_GROW] = (gint64)c->triple.poll_grow;
    v->v[METRIC_POLL_SHRINK] = (gint64)c->triple.poll_shrink;
    if (c->have_io) {
        /* a block counter not named here reads 0 */
        metric_vec_zero_source(v, METRIC_SOURCE_BLOCK);
        v->v[METRIC_RD_OPS] = (gint64)c->rd_ops;
        v->v[METRIC_WR_OPS] = (gint64)c->wr_ops;
        v->v[METRIC_FLUSH_OPS] = (gint64)c->flush_ops;
        v->v[METRIC_RD_BYTES] = (gint64)c->rd_bytes;
        v->v[METRIC_WR_BYTES] = (gint64)c->wr_bytes;
        v->v[METRIC_RD_TIME_NS] = (gint64)c->rd_time_ns;
        v->v[METRIC_WR_TIME_NS] = (gint64)c->wr_time_ns;
        v->v[METRIC_FLUSH_TIME_NS] = (gint64)c->flush_time_ns;
    }
    if (c->have_cpu) {
        v->v[METRIC_CPU_NS] = (gint64)c->cpu_ns;
        v->v[METRIC_CTX_VOL] = (gint64)c->ctx_vol;
        v->v[METRIC_CTX_INVOL] = (gint64)c->ctx_invol;
        v->v[METRIC_RUNQ_WAIT_NS] = (gint64)c->runq_wait_ns;
    }
    if (c->have_exits)
        v->v[METRIC_KVM_EXITS] = (gint64)c->exits;
}

static inline gboolean
test_metrics_from_counters(const TestCounters *prev, const TestCounters *cur,
                           PolicyMetrics *out, GError **error)
{
    MetricVec a, b;
    PolicyDelta d;

    if (cur->mono_ns <= prev->mono_ns) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "counters: interval of %" G_GINT64_FORMAT " ns is not positive",
                    cur->mono_ns - prev->mono_ns);
        return FALSE;
    }
    policy_delta_init(&d);
    d.when_ms = cur->when_ms;
    d.len_ns = cur->mono_ns - prev->mono_ns;
    counters_vec(prev, &a);
    counters_vec(cur, &b);
    metric_vec_delta(&a, &b, METRIC_SOURCES_ALL, &d.v);
    /* the cpu group goes as a whole */
    if (!metric_vec_has(&d.v, METRIC_RUNQ_WAIT_NS))
        d.v.v[METRIC_CPU_NS] = METRIC_ABSENT;
    if (cur->n_devices > 0 && cur->n_devices == prev->n_devices &&
        cur->n_devices <= POLICY_MAX_DEVICES) {
        for (guint i = 0; i < cur->n_devices; i++) {
            if (cur->dev_ops[i] < prev->dev_ops[i])
                break;
            d.dev_ops[i] = (gint64)(cur->dev_ops[i] - prev->dev_ops[i]);
            d.n_devices = i + 1;
        }
        if (d.n_devices != cur->n_devices)
            d.n_devices = 0;
    }
    return policy_metrics_from_delta(&d, out);
}
