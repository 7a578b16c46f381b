/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-core: the event queue, the PRNG and the host CPU.
 *
 * The CPU is processor sharing: with n runnable threads on C cores each
 * progresses at rate min(1, C/n).  A virtual clock V advances at that rate,
 * so a chunk of work w started at V0 ends when V reaches V0 + w, whatever
 * happens to n meanwhile.  A thread's CPU time is the V it saw while
 * runnable, and its run-queue wait the wall time minus that.
 */
#include <math.h>

#include "sim-private.h"

static guint64
rotl(guint64 x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** */
static guint64
rng_next(guint64 *s)
{
    guint64 r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

double
sim_rand01(Sim *sim)
{
    return (rng_next(sim->rng) >> 11) * (1.0 / 9007199254740992.0);
}

double
sim_rand_exp(Sim *sim, double mean)
{
    return -mean * log(1.0 - sim_rand01(sim));
}

double
sim_rand_dist(Sim *sim, const SimDist *d)
{
    if (d->kind == SIM_DIST_UNIFORM)
        return d->a + (d->b - d->a) * sim_rand01(sim);
    {
        double u1 = sim_rand01(sim), u2 = sim_rand01(sim);
        double z = sqrt(-2.0 * log(1.0 - u1)) * cos(2 * G_PI * u2);

        return MAX(d->a + d->b * z, d->a / 4);
    }
}

static gboolean
ev_less(const SimEvent *a, const SimEvent *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

void
sim_event_push(Sim *sim, double t, SimEventKind kind, guint vm, guint32 arg)
{
    guint i;

    if (sim->n_heap == sim->cap_heap) {
        sim->cap_heap = MAX(64, sim->cap_heap * 2);
        sim->heap = g_renew(SimEvent, sim->heap, sim->cap_heap);
    }
    i = sim->n_heap++;
    sim->heap[i] = (SimEvent){ t, sim->seq++, kind, vm, arg };
    while (i > 0) {
        guint p = (i - 1) / 2;
        SimEvent tmp;

        if (!ev_less(&sim->heap[i], &sim->heap[p]))
            break;
        tmp = sim->heap[i];
        sim->heap[i] = sim->heap[p];
        sim->heap[p] = tmp;
        i = p;
    }
}

static SimEvent
event_pop(Sim *sim)
{
    SimEvent top = sim->heap[0];
    guint i = 0;

    sim->heap[0] = sim->heap[--sim->n_heap];
    for (;;) {
        guint l = 2 * i + 1, r = l + 1, m = i;
        SimEvent tmp;

        if (l < sim->n_heap && ev_less(&sim->heap[l], &sim->heap[m]))
            m = l;
        if (r < sim->n_heap && ev_less(&sim->heap[r], &sim->heap[m]))
            m = r;
        if (m == i)
            break;
        tmp = sim->heap[i];
        sim->heap[i] = sim->heap[m];
        sim->heap[m] = tmp;
        i = m;
    }
    return top;
}

static double
rate(const Sim *sim)
{
    return sim->n_run > sim->n_cores ? (double)sim->n_cores / sim->n_run : 1.0;
}

void
sim_thread_flush(Sim *sim, SimThread *th)
{
    if (!th->runnable)
        return;
    th->cpu_ns += sim->v - th->v_mark;
    th->delay_ns += (sim->now - th->t_mark) - (sim->v - th->v_mark);
    th->v_mark = sim->v;
    th->t_mark = sim->now;
}

static void
make_runnable(Sim *sim, SimThread *th)
{
    if (th->runnable)
        return;
    if (sim->n_run == sim->cap_run) {
        sim->cap_run = MAX(16, sim->cap_run * 2);
        sim->runlist = g_renew(SimThread *, sim->runlist, sim->cap_run);
    }
    th->rq = sim->n_run;
    sim->runlist[sim->n_run++] = th;
    th->runnable = TRUE;
    th->v_mark = sim->v;
    th->t_mark = sim->now;
}

void
sim_thread_run(Sim *sim, SimThread *th, double work_ns)
{
    make_runnable(sim, th);
    th->has_chunk = TRUE;
    th->vf = sim->v + MAX(work_ns, 1.0);
}

void
sim_thread_spin(Sim *sim, SimThread *th)
{
    make_runnable(sim, th);
    th->has_chunk = FALSE;
}

void
sim_thread_stop(Sim *sim, SimThread *th)
{
    SimThread *last;

    if (!th->runnable)
        return;
    sim_thread_flush(sim, th);
    last = sim->runlist[--sim->n_run];
    sim->runlist[th->rq] = last;
    last->rq = th->rq;
    th->rq = -1;
    th->runnable = FALSE;
    th->has_chunk = FALSE;
}

static void
advance(Sim *sim, double t)
{
    double dt = t - sim->now;

    if (dt <= 0)
        return;
    sim->v += rate(sim) * dt;
    if (sim->n_run > sim->n_cores)
        sim->psi_some_ns += dt;
    sim->busy_ns += MIN(sim->n_run, sim->n_cores) * dt;
    sim->now = t;
}

void
sim_run_until(Sim *sim, double t_end)
{
    for (;;) {
        double tw = sim->n_heap ? sim->heap[0].t : INFINITY;
        double r = rate(sim), tc = INFINITY;
        SimThread *next = NULL;

        for (guint i = 0; i < sim->n_run; i++) {
            SimThread *th = sim->runlist[i];

            if (th->has_chunk) {
                double t = sim->now + MAX(th->vf - sim->v, 0.0) / r;

                if (t < tc) {
                    tc = t;
                    next = th;
                }
            }
        }
        if (MIN(tw, tc) > t_end) {
            advance(sim, t_end);
            return;
        }
        if (next && tc <= tw) {
            advance(sim, tc);
            next->has_chunk = FALSE;
            sim_vm_chunk_done(sim, next);
        } else {
            SimEvent ev = event_pop(sim);

            advance(sim, ev.t);
            sim_vm_handle_event(sim, &ev);
        }
    }
}

double
sim_now(const Sim *sim)
{
    return sim->now;
}

Sim *
sim_new(guint n_cores, const SimCosts *costs, guint64 seed)
{
    Sim *sim = g_new0(Sim, 1);
    guint64 z = seed;

    sim->costs = *costs;
    sim->n_cores = MAX(n_cores, 1);
    for (int i = 0; i < 4; i++) {
        /* splitmix64 to spread the seed */
        z += 0x9e3779b97f4a7c15ull;
        guint64 x = z;
        x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
        x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
        sim->rng[i] = x ^ (x >> 31);
    }
    return sim;
}

void
sim_free(Sim *sim)
{
    if (!sim)
        return;
    for (guint i = 0; i < sim->n_vms; i++)
        g_free(sim->vms[i]);
    g_free(sim->vms);
    g_free(sim->runlist);
    g_free(sim->heap);
    g_free(sim);
}

guint
sim_n_vms(const Sim *sim)
{
    return sim->n_vms;
}

void
sim_host_counters(Sim *sim, PolicyHostCounters *out)
{
    guint64 delay = 0;

    for (guint i = 0; i < sim->n_vms; i++) {
        sim_thread_flush(sim, &sim->vms[i]->vcpu);
        delay += (guint64)sim->vms[i]->vcpu.delay_ns;
    }
    policy_host_counters_init(out);
    out->when_ms = (gint64)(sim->now / 1e6);
    out->mono_ns = (gint64)sim->now;
    out->n_cpus = sim->n_cores;
    out->n_vcpus = sim->n_vms;
    out->v.v[METRIC_HOST_PSI_SOME_US] = (gint64)(guint64)(sim->psi_some_ns / 1000);
    out->v.v[METRIC_HOST_CPU_BUSY] = (gint64)(guint64)sim->busy_ns;
    out->v.v[METRIC_HOST_CPU_TOTAL] = (gint64)(guint64)(sim->now * sim->n_cores);
    out->v.v[METRIC_HOST_VCPU_WAIT_NS] = (gint64)delay;
}

double
sim_hist_quantile(const guint64 *now, const guint64 *before, double q)
{
    guint64 total = 0, acc = 0;
    guint n = G_N_ELEMENTS(((SimTruth *)NULL)->lat_hist);

    for (guint i = 0; i < n; i++)
        total += now[i] - (before ? before[i] : 0);
    if (!total)
        return 0.0;
    for (guint i = 0; i < n; i++) {
        acc += now[i] - (before ? before[i] : 0);
        if (acc >= q * total)
            return (i + 0.5) * 1000.0;
    }
    return n * 1000.0;
}
