/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * From two snapshots to the store's per-tick deltas.
 *
 * The store keeps what changed over the tick, as integers, and derives
 * rates on the way out; the policy gets rates from probe-derive.  Both read
 * the same pairing, probe_derive_deltas: a counter that went backwards, or
 * whose source changed, gives no figure (NULL) rather than a wrong one.
 */
#include "pt-history.h"
#include "probe-derive.h"

#include <unistd.h>

static gint64
pt_delta(guint64 prev, guint64 cur)
{
    return cur >= prev && cur - prev <= (guint64)G_MAXINT64 ? (gint64)(cur - prev) : STORE_NULL;
}

/* probe-derive's absent marker as the store's NULL. */
static gint64
pt_history_value(gint64 v)
{
    return v == PROBE_DELTA_ABSENT ? STORE_NULL : v;
}

gboolean
pt_history_sample(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                  const char *id, StoreSample *s)
{
    const ProbeIothreadSnap *c = probe_target_snap_find(cur, id);
    ProbeIothreadDeltas d;

    store_sample_init(s);
    if (!c)
        return FALSE;
    if (c->have_triple) {
        s->poll_max_ns = (gint64)MIN(c->triple.poll_max_ns, (guint64)G_MAXINT64);
        s->poll_grow = (gint64)MIN(c->triple.poll_grow, (guint64)G_MAXINT64);
        s->poll_shrink = (gint64)MIN(c->triple.poll_shrink, (guint64)G_MAXINT64);
    }
    /* The first sample of a QEMU is a baseline: no deltas. */
    if (!probe_derive_deltas(prev, cur, id, &d))
        return TRUE;
    if (d.have_io) {
        s->io.rd_ops = d.rd_ops;
        s->io.rd_bytes = d.rd_bytes;
        s->io.rd_time_ns = d.rd_time_ns;
        s->io.wr_ops = d.wr_ops;
        s->io.wr_bytes = d.wr_bytes;
        s->io.wr_time_ns = d.wr_time_ns;
        s->io.flush_ops = d.flush_ops;
        s->io.flush_time_ns = d.flush_time_ns;
    }
    s->cpu_ns = pt_history_value(d.cpu_ns);
    s->runq_wait_ns = pt_history_value(d.run_delay_ns);
    s->ctx_vol = pt_history_value(d.vol_ctxsw);
    s->ctx_invol = pt_history_value(d.nonvol_ctxsw);
    s->kvm_exits = pt_history_value(d.exits[PROBE_EXIT_EXITS]);
    s->io_exits = pt_history_value(d.exits[PROBE_EXIT_IO_EXITS]);
    s->mmio_exits = pt_history_value(d.exits[PROBE_EXIT_MMIO_EXITS]);
    s->halt_exits = pt_history_value(d.exits[PROBE_EXIT_HALT_EXITS]);
    return TRUE;
}

void
pt_history_psi(const ProbeHostSnap *prev, const ProbeHostSnap *cur, StorePsi *psi)
{
    store_psi_init(psi);
    if (!prev || !prev->have_psi || !cur->have_psi)
        return;
    psi->cpu_some_us = pt_delta(prev->psi.some_total_us, cur->psi.some_total_us);
}
