/*
 * From two snapshots to the store's per-tick deltas.
 *
 * The store keeps what changed over the tick, as integers, and derives
 * rates on the way out; the policy gets rates from probe-derive.  Both come
 * from the same pair of snapshots, and follow the same rule: a counter that
 * went backwards, or whose source changed, gives no figure (NULL) rather than
 * a wrong one.
 */
#include "pt-history.h"

#include <unistd.h>

static gint64
pt_delta(guint64 prev, guint64 cur)
{
    return cur >= prev && cur - prev <= (guint64)G_MAXINT64 ? (gint64)(cur - prev) : STORE_NULL;
}

static void
pt_history_fill_io(const ProbeIothreadSnap *p, const ProbeIothreadSnap *c, StoreIo *io)
{
    ProbeBlockCounters a, b;

    /* Same device set on both sides, or the sums mean nothing. */
    if (!p->have_block || !c->have_block || p->devices->len != c->devices->len)
        return;
    for (guint i = 0; i < c->devices->len; i++) {
        const ProbeDevice *dc = &g_array_index(c->devices, ProbeDevice, i);
        gboolean found = FALSE;

        for (guint j = 0; j < p->devices->len && !found; j++)
            found = g_str_equal(dc->name, g_array_index(p->devices, ProbeDevice, j).name);
        if (!found)
            return;
    }
    probe_iothread_snap_block_totals(p, &a);
    probe_iothread_snap_block_totals(c, &b);
    io->rd_ops = pt_delta(a.rd_ops, b.rd_ops);
    io->rd_bytes = pt_delta(a.rd_bytes, b.rd_bytes);
    io->rd_time_ns = pt_delta(a.rd_time_ns, b.rd_time_ns);
    io->wr_ops = pt_delta(a.wr_ops, b.wr_ops);
    io->wr_bytes = pt_delta(a.wr_bytes, b.wr_bytes);
    io->wr_time_ns = pt_delta(a.wr_time_ns, b.wr_time_ns);
    io->flush_ops = pt_delta(a.flush_ops, b.flush_ops);
    io->flush_time_ns = pt_delta(a.flush_time_ns, b.flush_time_ns);
}

static void
pt_history_fill_thread(const ProbeTargetSnap *prev, const ProbeIothreadSnap *p,
                       const ProbeIothreadSnap *c, StoreSample *s)
{
    const ProbeThreadCounters *a = &p->thread, *b = &c->thread;

    if (!p->have_thread || !c->have_thread || p->tid != c->tid)
        return;
    if (a->have_schedstat && b->have_schedstat) {
        s->cpu_ns = pt_delta(a->run_ns, b->run_ns);
        s->runq_wait_ns = pt_delta(a->wait_ns, b->wait_ns);
    } else if (prev->clk_tck) {
        gint64 ticks = pt_delta(a->utime_ticks + a->stime_ticks,
                                b->utime_ticks + b->stime_ticks);

        s->cpu_ns = ticks == STORE_NULL ? STORE_NULL :
            ticks * (G_GINT64_CONSTANT(1000000000) / (gint64)prev->clk_tck);
    }
    s->ctx_vol = pt_delta(a->vcsw, b->vcsw);
    s->ctx_invol = pt_delta(a->nvcsw, b->nvcsw);
}

static gint64
pt_exit_delta(const ProbeExitCounters *a, const ProbeExitCounters *b, ProbeExitCounter k)
{
    if (!probe_exit_counters_has(a, k) || !probe_exit_counters_has(b, k))
        return STORE_NULL;
    return pt_delta(a->v[k], b->v[k]);
}

gboolean
pt_history_sample(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                  const char *id, StoreSample *s)
{
    const ProbeIothreadSnap *c = probe_target_snap_find(cur, id);
    const ProbeIothreadSnap *p = prev ? probe_target_snap_find(prev, id) : NULL;

    store_sample_init(s);
    if (!c)
        return FALSE;
    if (c->have_triple) {
        s->poll_max_ns = (gint64)MIN(c->triple.poll_max_ns, (guint64)G_MAXINT64);
        s->poll_grow = (gint64)MIN(c->triple.poll_grow, (guint64)G_MAXINT64);
        s->poll_shrink = (gint64)MIN(c->triple.poll_shrink, (guint64)G_MAXINT64);
    }
    /* The first sample of a QEMU is a baseline: no deltas. */
    if (!p || prev->pid != cur->pid || cur->mono_ns <= prev->mono_ns)
        return TRUE;
    pt_history_fill_io(p, c, &s->io);
    pt_history_fill_thread(prev, p, c, s);
    if (prev->exits.source == cur->exits.source &&
        cur->exits.source != PROBE_EXIT_SOURCE_NONE) {
        s->kvm_exits = pt_exit_delta(&prev->exits, &cur->exits, PROBE_EXIT_EXITS);
        s->io_exits = pt_exit_delta(&prev->exits, &cur->exits, PROBE_EXIT_IO_EXITS);
        s->mmio_exits = pt_exit_delta(&prev->exits, &cur->exits, PROBE_EXIT_MMIO_EXITS);
        s->halt_exits = pt_exit_delta(&prev->exits, &cur->exits, PROBE_EXIT_HALT_EXITS);
    }
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
