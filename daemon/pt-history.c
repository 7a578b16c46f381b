/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From one tick's delta and the host's snapshots to the store's rows.
 *
 * The store keeps what changed over the tick, as integers, and derives
 * rates on the way out; the policy's rates come from the same delta
 * (probe_derive_delta): a counter that went backwards, or whose source
 * changed, gives no figure (NULL) rather than a wrong one.
 */
#include "pt-history.h"
#include "probe-derive.h"

#include <unistd.h>

static gint64
pt_delta(guint64 prev, guint64 cur)
{
    return cur >= prev && cur - prev <= (guint64)G_MAXINT64 ? (gint64)(cur - prev) : METRIC_ABSENT;
}

void
pt_history_sample(const PolicyDelta *d, StoreSample *s)
{
    store_sample_init(s);
    /* Without a pair (the first sample of a QEMU is a baseline) only the
     * gauges are there; every metric of the table is copied either way. */
    s->m = d->v;
}

void
pt_history_psi(const ProbeHostSnap *prev, const ProbeHostSnap *cur, StorePsi *psi)
{
    store_psi_init(psi);
    if (!prev || !prev->have_psi || !cur->have_psi)
        return;
    psi->cpu_some_us = pt_delta(prev->psi.some_total_us, cur->psi.some_total_us);
}

void
pt_history_host_cpu(const ProbeHostSnap *prev, const ProbeHostSnap *cur, StoreHostCpu *cpu)
{
    long hz = sysconf(_SC_CLK_TCK);
    gint64 busy, total;

    store_host_cpu_init(cpu);
    if (!prev || !prev->have_stat || !cur->have_stat || hz <= 0)
        return;
    busy = pt_delta(prev->stat.busy_ticks, cur->stat.busy_ticks);
    total = pt_delta(prev->stat.total_ticks, cur->stat.total_ticks);
    /* A tick of /proc/stat is 1/hz s; years of CPU time fit in 63 bits. */
    if (busy == METRIC_ABSENT || total == METRIC_ABSENT || busy > total || total > G_MAXINT64 / 1000000)
        return;
    cpu->busy_us = busy * 1000000 / hz;
    cpu->total_us = total * 1000000 / hz;
}
