/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-snap.h"

#include <unistd.h>

static void
device_clear(gpointer p)
{
    g_free(((ProbeDevice *)p)->name);
    g_free(((ProbeDevice *)p)->source);
}

static void
iothread_snap_free(gpointer p)
{
    ProbeIothreadSnap *io = p;

    g_free(io->id);
    g_free(io->group);
    g_array_unref(io->devices);
    g_free(io);
}

ProbeTargetSnap *
probe_target_snap_new(int pid, gint64 mono_ns, gint64 when_ms)
{
    ProbeTargetSnap *s = g_new0(ProbeTargetSnap, 1);
    long clk_tck;

    s->pid = pid;
    s->mono_ns = mono_ns;
    s->when_ms = when_ms;
    clk_tck = sysconf(_SC_CLK_TCK);
    s->clk_tck = clk_tck > 0 ? (guint64)clk_tck : 100;
    s->iothreads = g_ptr_array_new_with_free_func(iothread_snap_free);
    probe_exit_counters_init(&s->exits, PROBE_EXIT_SOURCE_NONE);
    return s;
}

void
probe_target_snap_free(ProbeTargetSnap *s)
{
    if (!s)
        return;
    g_ptr_array_unref(s->iothreads);
    g_free(s);
}

const ProbeIothreadSnap *
probe_target_snap_find(const ProbeTargetSnap *s, const char *id)
{
    for (guint i = 0; i < s->iothreads->len; i++) {
        const ProbeIothreadSnap *io = s->iothreads->pdata[i];

        if (strcmp(io->id, id) == 0)
            return io;
    }
    return NULL;
}

ProbeIothreadSnap *
probe_target_snap_iothread(ProbeTargetSnap *s, const char *id)
{
    ProbeIothreadSnap *io = (ProbeIothreadSnap *)probe_target_snap_find(s, id);

    if (io)
        return io;
    io = g_new0(ProbeIothreadSnap, 1);
    io->id = g_strdup(id);
    io->group_size = 1;
    metric_vec_init(&io->gauges);
    io->devices = g_array_new(FALSE, TRUE, sizeof(ProbeDevice));
    g_array_set_clear_func(io->devices, device_clear);
    g_ptr_array_add(s->iothreads, io);
    return io;
}

void
probe_iothread_snap_set_triple(ProbeIothreadSnap *io, const PolicyTriple *triple)
{
    io->triple = *triple;
    io->have_triple = TRUE;
    probe_iothread_snap_set_gauge(io, METRIC_POLL_MAX_NS, triple->poll_max_ns);
    probe_iothread_snap_set_gauge(io, METRIC_POLL_GROW, triple->poll_grow);
    probe_iothread_snap_set_gauge(io, METRIC_POLL_SHRINK, triple->poll_shrink);
}

void
probe_iothread_snap_set_gauge(ProbeIothreadSnap *io, MetricId id, guint64 value)
{
    g_return_if_fail(metric_def(id) && metric_def(id)->reset == METRIC_RESET_GAUGE);
    io->gauges.v[id] = metric_reading(value);
}

void
probe_iothread_snap_add_device(ProbeIothreadSnap *io, const char *name, const char *source,
                               const MetricVec *v)
{
    ProbeDevice d;

    io->have_block = TRUE;
    for (guint i = 0; i < io->devices->len; i++) {
        ProbeDevice *e = &g_array_index(io->devices, ProbeDevice, i);

        if (strcmp(e->name, name) == 0) {
            e->v = *v;
            g_free(e->source);
            e->source = g_strdup(source);
            return;
        }
    }
    d.name = g_strdup(name);
    d.source = g_strdup(source);
    d.v = *v;
    g_array_append_val(io->devices, d);
}

void
probe_iothread_snap_set_block_read(ProbeIothreadSnap *io)
{
    io->have_block = TRUE;
}

void
probe_iothread_snap_set_thread(ProbeIothreadSnap *io, int tid,
                               const ProbeThreadCounters *c)
{
    io->tid = tid;
    io->thread = *c;
    io->have_thread = TRUE;
}

ProbeHostSnap *
probe_host_snap_new(gint64 mono_ns, gint64 when_ms)
{
    ProbeHostSnap *s = g_new0(ProbeHostSnap, 1);

    s->mono_ns = mono_ns;
    s->when_ms = when_ms;
    metric_vec_init(&s->v);
    s->vcpus = g_array_new(FALSE, TRUE, sizeof(ProbeVcpuWait));
    return s;
}

void
probe_host_snap_free(ProbeHostSnap *s)
{
    if (!s)
        return;
    g_array_unref(s->vcpus);
    g_free(s);
}

void
probe_host_snap_add_vcpu(ProbeHostSnap *s, int pid, int tid, guint64 wait_ns)
{
    ProbeVcpuWait w = { pid, tid, wait_ns };

    g_array_append_val(s->vcpus, w);
}

void
probe_host_snap_set_psi(ProbeHostSnap *s, const ProbePsi *psi)
{
    s->psi_some_avg10 = psi->some_avg10;
    s->psi_full_avg10 = psi->have_full ? psi->full_avg10 : 0;
    s->v.v[METRIC_HOST_PSI_SOME_US] = metric_reading(psi->some_total_us);
}

void
probe_host_snap_set_cpu_stat(ProbeHostSnap *s, const ProbeCpuStat *stat)
{
    s->n_cpus = stat->n_cpus;
    s->v.v[METRIC_HOST_CPU_BUSY] = metric_reading(stat->busy_ticks);
    s->v.v[METRIC_HOST_CPU_TOTAL] = metric_reading(stat->total_ticks);
}
