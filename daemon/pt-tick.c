/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-tick: the tick's state, made and freed with the daemon, and its
 * clock and host metrics as the rest of the daemon reads them.
 */
#include "pt-tick.h"
#include "pt-tick-private.h"
#include "pt-daemon-private.h"

/* From 5 ms (a few VMs on an idle host) to 10 s (ten default intervals),
 * finer around 100 ms, the bound a tick over 100 VMs should stay under. */
const double pt_tick_bucket_le[PT_TICK_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10,
};

PtTick *
pt_tick_new(const ProbeRoots *roots)
{
    PtTick *tick = g_new0(PtTick, 1);

    tick->host = probe_host_sampler_new(roots);
    tick->durations_ms = g_array_new(FALSE, TRUE, sizeof(double));
    return tick;
}

void
pt_tick_halt(PtTick *tick)
{
    if (!tick)
        return;
    g_clear_handle_id(&tick->timer, g_source_remove);
    g_clear_handle_id(&tick->deadline, g_source_remove);
}

void
pt_tick_free(PtTick *tick)
{
    if (!tick)
        return;
    pt_tick_halt(tick);
    g_clear_pointer(&tick->results, g_ptr_array_unref);
    probe_host_snap_free(tick->host_prev);
    probe_host_snap_free(tick->host_now);
    probe_host_sampler_free(tick->host);
    g_array_unref(tick->durations_ms);
    g_free(tick);
}

gint64
pt_daemon_tick_now_ms(PtDaemon *d)
{
    return d->tick->now_ms;
}

const PolicyHost *
pt_daemon_get_host(PtDaemon *d)
{
    return &d->tick->host_metrics;
}
