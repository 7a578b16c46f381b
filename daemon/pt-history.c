/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From one tick's delta and the host's snapshots to the store's rows.
 *
 * The store keeps what changed over the tick, as integers, and derives
 * rates on the way out; the policy's rates come from the same delta
 * (probe_derive_delta), and the host's rows and rates from the host's
 * delta (probe_derive_host_delta): a counter that went backwards, or whose
 * source changed, gives no figure (NULL) rather than a wrong one.
 */
#include "pt-history.h"
#include "probe-derive.h"

#include <unistd.h>

void
pt_history_sample(const PolicyDelta *d, StoreSample *s)
{
    store_sample_init(s);
    /* Without a pair (the first sample of a QEMU is a baseline) only the
     * gauges are there; every metric of the table is copied either way. */
    s->m = d->v;
}

void
pt_history_psi(const PolicyHostDelta *d, StorePsi *psi)
{
    store_psi_init(psi);
    psi->cpu_some_us = d->v.v[METRIC_HOST_PSI_SOME_US];
}

void
pt_history_host_cpu(const PolicyHostDelta *d, StoreHostCpu *cpu)
{
    long hz = sysconf(_SC_CLK_TCK);
    gint64 busy = d->v.v[METRIC_HOST_CPU_BUSY], total = d->v.v[METRIC_HOST_CPU_TOTAL];

    store_host_cpu_init(cpu);
    /* A tick of /proc/stat is 1/hz s; years of CPU time fit in 63 bits. */
    if (hz <= 0 || busy == METRIC_ABSENT || total == METRIC_ABSENT || busy > total ||
        total > G_MAXINT64 / 1000000)
        return;
    cpu->busy_us = busy * 1000000 / hz;
    cpu->total_us = total * 1000000 / hz;
}
