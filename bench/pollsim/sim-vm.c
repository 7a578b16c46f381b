/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-vm: one VM's guest, iothread and disks.
 *
 * The iothread follows QEMU 7.2's aio_poll():
 *   - an iteration starts; if work is already there it runs at once
 *     (block_ns = 0);
 *   - else, with a window poll_ns > 0, it busy-polls (virtqueue
 *     notifications suppressed) until work appears or the window elapses;
 *   - else, or after a failed poll, it blocks in ppoll (notifications on,
 *     one voluntary context switch) until an eventfd fires (a guest kick or
 *     a Linux AIO completion), then pays the wake-up latency;
 *   - block_ns, from iteration start to having work, adjusts the window:
 *       block_ns <= poll_ns              nothing;
 *       block_ns >  poll-max-ns          poll_ns /= poll-shrink, 0 if shrink 0;
 *       poll_ns < max, block_ns < max    poll_ns = poll_ns ? poll_ns * grow : 4000,
 *                                         grow 0 meaning 2, capped at max;
 *   - every parameter write sets poll_ns back to 0.
 * Processing takes everything visible at that moment: the virtqueue's
 * requests go to the device in one submission (one fixed cost for the
 * batch, and SimWorkload.dev_batch_ns of the device's time), the
 * completions go to the guest with one interrupt.  Requests a guest adds
 * one by one are therefore batched when the iothread is slow to look and
 * split when it polls: polling can lose batching.
 *
 * With several disks each has its own virtqueue (and kicks), interrupt and
 * device; a pass takes every disk's visible requests (one submission call
 * per disk) and the completions of all of them from the iothread's one
 * Linux AIO ring.
 *
 * A poll iteration checks every handler of the iothread, so work is seen
 * at the end of the iteration in which it appeared, and a poll lasts a
 * whole number of iterations (at least one).  With thousands of handlers
 * an iteration outlasts the gaps it is meant to catch.
 */
#include <math.h>

#include "sim-private.h"

static const SimCosts calibrated = {
    .wake_lat = 2144,
    .wake_cpu = 536,
    .kick_lat = 6868,
    .exit_cpu = 12424,
    .irq_lat = 503,
    .irq_cpu = 2838,
    .sub_fixed = 3995,
    .sub_per = 952,
    .cpl_fixed = 2823,
    .cpl_per = 472,
    .g_irq = 874,
    .g_cpl = 2774,
    .g_sub = 2179,
    .poll_handler_ns = 27,
};

const SimCosts *
sim_costs_calibrated(void)
{
    return &calibrated;
}

static void
fifo_push(SimFifo *f, guint32 v)
{
    g_assert(f->len < SIM_RING);
    f->buf[(f->head + f->len++) % SIM_RING] = v;
}

static guint32
fifo_pop(SimFifo *f)
{
    guint32 v = f->buf[f->head];

    f->head = (f->head + 1) % SIM_RING;
    f->len--;
    return v;
}

static SimVm *
vm_of(Sim *sim, guint i)
{
    return sim->vms[i];
}

static guint
vm_index(Sim *sim, SimVm *vm)
{
    return vm->iot.vm;
}

/* ---- iothread ---------------------------------------------------------- */

static void iot_loop_begin(Sim *sim, SimVm *vm);

/* QEMU's grow/shrink rule applied to one window. */
static double
window_adjust(const PolicyTriple *t, double poll_ns, double block_ns)
{
    double max = (double)t->poll_max_ns;

    if (block_ns <= poll_ns) {
        /* the window is about right */
    } else if (block_ns > max) {
        poll_ns = t->poll_shrink ? floor(poll_ns / t->poll_shrink) : 0;
    } else if (poll_ns < max && block_ns < max) {
        double grow = t->poll_grow ? (double)t->poll_grow : 2.0;

        poll_ns = poll_ns > 0 ? poll_ns * grow : 4000;
        if (poll_ns > max)
            poll_ns = max;
    }
    return poll_ns;
}

/*
 * @fired: the handlers that had work (1 << SIM_HANDLER_*).  7.2 has one
 * window for the iothread; 10 adjusts only the windows of the handlers
 * that fired and polls for the longest window.
 */
static void
iot_adjust(Sim *sim, SimVm *vm, double block_ns, guint fired)
{
    if (!vm->triple.poll_max_ns)
        return;
    if (sim->qemu_model != SIM_QEMU_10) {
        vm->poll_ns = window_adjust(&vm->triple, vm->poll_ns, block_ns);
        return;
    }
    vm->poll_ns = 0;
    for (guint h = 0; h < G_N_ELEMENTS(vm->poll_h); h++) {
        if (fired & (1u << h))
            vm->poll_h[h] = window_adjust(&vm->triple, vm->poll_h[h], block_ns);
        vm->poll_ns = MAX(vm->poll_ns, vm->poll_h[h]);
    }
}

/* QEMU 10's handler of disk @d's virtqueue. */
static guint
handler_vq(guint d)
{
    return d == 0 ? SIM_HANDLER_VQ : 1 + d;
}

/* Which handlers have work now. */
static guint
iot_fired(const SimVm *vm)
{
    guint fired = vm->cq.len ? 1u << SIM_HANDLER_AIO : 0;

    for (guint d = 0; d < vm->n_dev; d++)
        if (vm->dev[d].avail.len || vm->dev[d].kick_pending)
            fired |= 1u << handler_vq(d);
    return fired;
}

/* Every handler of the iothread is checked once per poll iteration. */
static double
iot_poll_iteration(const Sim *sim, const SimVm *vm)
{
    return (1 + vm->n_dev + vm->w.idle_handlers) * sim->costs.poll_handler_ns;
}

static gboolean
iot_has_work(const SimVm *vm)
{
    for (guint d = 0; d < vm->n_dev; d++)
        if (vm->dev[d].avail.len || vm->dev[d].kick_pending)
            return TRUE;
    return vm->cq.len > 0;
}

/*
 * Whether an iteration that is not polling looks at the virtqueue.  A
 * guest submitting request by request kicks for the first one after each
 * re-arm, and the model lets the iothread take them as soon as it loops
 * (the seed-004 fit has it so).  A batching guest notifies after its last
 * request only: until then the iothread does not look unless it polls or
 * has just run its own virtqueue pass.
 */
static gboolean
iot_vq_looks(const SimVm *vm, const SimDev *dv)
{
    return dv->w.guest_batch <= 1 || dv->kick_pending || dv->vq_look || vm->poll_started;
}

/* Each disk's virtqueue is popped in this dispatch if the iothread looks at it. */
static void
iot_vq_take_set(SimVm *vm)
{
    for (guint d = 0; d < vm->n_dev; d++)
        vm->dev[d].vq_take = iot_vq_looks(vm, &vm->dev[d]);
}

static void
iot_end_polling(Sim *sim, SimVm *vm)
{
    sim_thread_flush(sim, &vm->iot);
    vm->truth.poll_cpu_ns += sim->v - vm->poll_v_start;
    vm->poll_gen++;
    vm->poll_see_pending = FALSE;
}

static void
iot_dispatch(Sim *sim, SimVm *vm)
{
    const SimCosts *c = &sim->costs;
    double work = 0;
    guint irqs = 0;

    vm->n_cpl = 0;
    for (guint d = 0; d < vm->n_dev; d++) {
        SimDev *dv = &vm->dev[d];

        dv->n_sub = 0;
        while (dv->vq_take && dv->avail.len)
            dv->taken_sub[dv->n_sub++] = fifo_pop(&dv->avail);
        dv->vq_take = TRUE;
        dv->kick_pending = FALSE;
        /* Each disk's virtqueue pass and io_submit. */
        if (dv->n_sub)
            work += c->sub_fixed + dv->n_sub * c->sub_per;
    }
    while (vm->cq.len) {
        guint32 r = fifo_pop(&vm->cq);

        vm->taken_cpl[vm->n_cpl++] = r;
        irqs |= 1u << vm->reqs[r].dev;
    }
    if (vm->n_cpl)
        work += c->cpl_fixed + vm->n_cpl * c->cpl_per;
    /* A disk whose guest asked for an interrupt (virtio event index): irqfd write. */
    for (guint d = 0; d < vm->n_dev; d++)
        if ((irqs & (1u << d)) && !vm->dev[d].irq_active)
            work += c->irq_cpu;
    vm->st = IOT_RUNNING;
    sim_thread_run(sim, &vm->iot, work > 0 ? work : 300);
}

/*
 * Work showed up for an iteration: already there, caught by polling, or
 * after a wake-up.  QEMU 7.2 measures block_ns before dispatching.  The v4
 * series that seed 004 measured ran the handlers inside its poll loop, so a
 * successful poll (or the one-shot poll of an iteration with work already
 * there) counted the processing too; sim_set_qemu_v4() selects that.
 */
static void
iot_got_work(Sim *sim, SimVm *vm, gboolean by_polling)
{
    if (sim->qemu_v4 && by_polling)
        vm->adjust_at_end = TRUE;
    else
        iot_adjust(sim, vm, sim->now - vm->loop_start, iot_fired(vm));
    iot_dispatch(sim, vm);
}

static void
iot_block(Sim *sim, SimVm *vm)
{
    vm->st = IOT_BLOCKED;
    vm->vol_ctxsw++;
    sim_thread_stop(sim, &vm->iot);
}

/*
 * No window, or a poll that timed out: block, unless the QEMU modelled
 * runs one more poll iteration first (before 5.0).
 */
static void
iot_block_or_poll_once(Sim *sim, SimVm *vm)
{
    double iter = iot_poll_iteration(sim, vm);

    if (sim->qemu_poll_once && iter > 0) {
        vm->st = IOT_POLL_ONCE;
        sim_thread_run(sim, &vm->iot, iter);
        return;
    }
    iot_block(sim, vm);
}

static void
iot_loop_begin(Sim *sim, SimVm *vm)
{
    gboolean work = vm->cq.len > 0;
    gboolean look[SIM_MAX_DEVICES];

    for (guint d = 0; d < vm->n_dev; d++) {
        SimDev *dv = &vm->dev[d];

        look[d] = iot_vq_looks(vm, dv);
        work |= (look[d] && dv->avail.len) || dv->kick_pending;
    }
    vm->loop_start = sim->now;
    for (guint d = 0; d < vm->n_dev; d++)
        vm->dev[d].vq_look = FALSE;
    if ((!vm->triple.poll_max_ns || vm->poll_ns <= 0) && vm->poll_started) {
        vm->poll_started = FALSE;
        for (guint d = 0; d < vm->n_dev; d++)
            vm->dev[d].kick_armed = TRUE;
    }
    if (work) {
        for (guint d = 0; d < vm->n_dev; d++)
            vm->dev[d].vq_take = look[d];
        iot_got_work(sim, vm, TRUE);
        return;
    }
    if (vm->triple.poll_max_ns && vm->poll_ns > 0) {
        double iter = iot_poll_iteration(sim, vm);
        /* QEMU checks the clock after each iteration: whole iterations, at least one. */
        double len = iter > 0 ? MAX(1.0, ceil(vm->poll_ns / iter)) * iter : vm->poll_ns;

        vm->st = IOT_POLLING;
        vm->poll_started = TRUE;
        sim_thread_spin(sim, &vm->iot);
        sim_thread_flush(sim, &vm->iot);
        vm->poll_v_start = sim->v;
        vm->poll_t_start = sim->now;
        sim_event_push(sim, sim->now + len, EV_POLL_DEADLINE, vm_index(sim, vm), ++vm->poll_gen);
        return;
    }
    iot_block_or_poll_once(sim, vm);
}

static void
iot_signal(Sim *sim, SimVm *vm)
{
    if (vm->st == IOT_BLOCKED) {
        vm->st = IOT_WAKING;
        sim_event_push(sim, sim->now + sim->costs.wake_lat, EV_WAKE, vm_index(sim, vm), 0);
    }
}

/*
 * Something became visible to a polling iothread: it sees it at the end of
 * the current iteration.
 */
static void
iot_poll_sees(Sim *sim, SimVm *vm)
{
    double iter, seen;

    if (vm->st != IOT_POLLING || vm->poll_see_pending)
        return;
    iter = iot_poll_iteration(sim, vm);
    seen = iter > 0 ? vm->poll_t_start + ceil((sim->now - vm->poll_t_start) / iter) * iter
                    : sim->now;
    if (seen > sim->now) {
        vm->poll_see_pending = TRUE;
        sim_event_push(sim, seen, EV_POLL_SEE, vm_index(sim, vm), vm->poll_gen);
        return;
    }
    iot_end_polling(sim, vm);
    iot_got_work(sim, vm, TRUE);
}

/*
 * Disk @d's virtqueue notifications are off while a poll is in progress
 * and stay off through the dispatches of successful polls
 * (poll_set_started(), every handler of the iothread); they come back when
 * a poll times out or an iteration starts with a zero window.  virtio-blk
 * also turns them off on the one virtqueue it pops requests from, and
 * checks that queue once more when it turns them back on; another disk's
 * virtqueue keeps its notifications meanwhile.
 */
static gboolean
notifications_enabled(const SimVm *vm, guint d)
{
    return !vm->poll_started && !(vm->st == IOT_RUNNING && vm->dev[d].n_sub > 0);
}

/* ---- guest ------------------------------------------------------------- */

static void vcpu_next(Sim *sim, SimVm *vm);

static guint32
req_new(Sim *sim, SimVm *vm, guint d)
{
    guint32 r;

    g_assert(vm->n_free > 0);
    r = vm->free_reqs[--vm->n_free];
    vm->reqs[r].t_guest = sim->now;
    vm->reqs[r].dev = d;
    return r;
}

static void
vcpu_push(Sim *sim, SimVm *vm, SimVcpuItemKind kind, guint32 req, gboolean front)
{
    g_assert(vm->item_len < SIM_RING);
    if (front) {
        vm->item_head = (vm->item_head + SIM_RING - 1) % SIM_RING;
        vm->items[vm->item_head] = (SimVcpuItem){ kind, req };
    } else {
        vm->items[(vm->item_head + vm->item_len) % SIM_RING] = (SimVcpuItem){ kind, req };
    }
    vm->item_len++;
}

/* The disk an item of the vCPU's queue is for. */
static guint
vcpu_item_dev(const SimVm *vm, const SimVcpuItem *it)
{
    return it->kind == VCPU_ITEM_IRQ || it->kind == VCPU_ITEM_KICK ? it->req
                                                                   : vm->reqs[it->req].dev;
}

/*
 * A disk's interrupt: behind the work already queued for that disk (its
 * fio job submits the batch it is in before it reaps), in front of other
 * disks' work, which an interrupt preempts.  With one disk that is the
 * back of the queue, as seed 004's fit has it.  Queued behind every
 * disk's work instead, a shallow disk's interrupt waited for a deep
 * disk's whole batch of submissions, and which of the two orders the
 * queue settled in depended on the moment of the last triple write.
 */
static void
vcpu_push_irq(Sim *sim, SimVm *vm, guint d)
{
    guint at = 0;

    for (guint i = 0; i < vm->item_len; i++)
        if (vcpu_item_dev(vm, &vm->items[(vm->item_head + i) % SIM_RING]) == d)
            at = i + 1;
    if (at == vm->item_len) {
        vcpu_push(sim, vm, VCPU_ITEM_IRQ, d, FALSE);
        return;
    }
    g_assert(vm->item_len < SIM_RING);
    for (guint i = vm->item_len; i > at; i--)
        vm->items[(vm->item_head + i) % SIM_RING] = vm->items[(vm->item_head + i - 1) % SIM_RING];
    vm->items[(vm->item_head + at) % SIM_RING] = (SimVcpuItem){ VCPU_ITEM_IRQ, d };
    vm->item_len++;
}

static void
vcpu_stop_compute(Sim *sim, SimVm *vm)
{
    if (!vm->computing)
        return;
    sim_thread_flush(sim, &vm->vcpu);
    vm->truth.vcpu_compute_ns += sim->v - vm->compute_v_start;
    vm->computing = FALSE;
}

/* Give the vCPU work if it is idle. */
static void
vcpu_kick_idle(Sim *sim, SimVm *vm)
{
    if (vm->vcpu.has_chunk)
        return;
    vcpu_stop_compute(sim, vm);
    vcpu_next(sim, vm);
}

static void
vcpu_next(Sim *sim, SimVm *vm)
{
    const SimCosts *c = &sim->costs;
    SimVcpuItem it;
    double work;

    if (!vm->item_len) {
        if (vm->w.compute) {
            vm->halted = FALSE;
            vm->computing = TRUE;
            sim_thread_spin(sim, &vm->vcpu);
            sim_thread_flush(sim, &vm->vcpu);
            vm->compute_v_start = sim->v;
        } else {
            if (!vm->halted)
                vm->truth.exits++;      /* HLT */
            vm->halted = TRUE;
            sim_thread_stop(sim, &vm->vcpu);
        }
        return;
    }
    vm->halted = FALSE;
    it = vm->items[vm->item_head];
    vm->item_head = (vm->item_head + 1) % SIM_RING;
    vm->item_len--;
    vm->cur_item = it;
    switch (it.kind) {
    case VCPU_ITEM_IRQ:         /* req: the disk */
        vm->irq_reaped = 0;
        while (vm->dev[it.req].used.len)
            vm->irq_reqs[vm->irq_reaped++] = fifo_pop(&vm->dev[it.req].used);
        work = c->g_irq + vm->irq_reaped * (c->g_cpl + vm->w.think_ns);
        break;
    case VCPU_ITEM_KICK:        /* req: the disk */
        vm->truth.exits++;
        sim_event_push(sim, sim->now + c->kick_lat, EV_KICK, vm_index(sim, vm), it.req);
        work = c->exit_cpu;
        break;
    case VCPU_ITEM_SUBMIT:
    case VCPU_ITEM_SUBMIT_MORE:
    default:
        work = c->g_sub;
        break;
    }
    sim_thread_run(sim, &vm->vcpu, work);
}

static void
guest_refill(Sim *sim, SimVm *vm, guint d)
{
    SimDev *dv = &vm->dev[d];
    guint batch = MIN(MAX(dv->w.guest_batch, 1), MAX(dv->w.qd, 1));

    /* fio's iodepth_batch_submit: wait for enough free slots, then one batch. */
    if (dv->w.qd - MIN(dv->inflight, dv->w.qd) < batch)
        return;
    while (dv->inflight < dv->w.qd) {
        gboolean last = batch == 1 || dv->inflight + 1 == dv->w.qd;

        dv->inflight++;
        vcpu_push(sim, vm, last ? VCPU_ITEM_SUBMIT : VCPU_ITEM_SUBMIT_MORE, req_new(sim, vm, d),
                  FALSE);
    }
}

static void
vcpu_item_done(Sim *sim, SimVm *vm)
{
    SimVcpuItem it = vm->cur_item;

    switch (it.kind) {
    case VCPU_ITEM_IRQ: {
        SimDev *dv = &vm->dev[it.req];

        for (guint i = 0; i < vm->irq_reaped; i++) {
            guint32 r = vm->irq_reqs[i];
            double lat = sim->now - vm->reqs[r].t_guest;
            guint b = MIN((guint)(lat / 1000.0), G_N_ELEMENTS(vm->truth.lat_hist) - 1);

            vm->truth.guest_ops++;
            vm->truth.dev_guest_ops[it.req]++;
            vm->truth.guest_lat_sum_ns += lat;
            vm->truth.lat_hist[b]++;
            vm->free_reqs[vm->n_free++] = r;
            if (dv->inflight > 0)
                dv->inflight--;
        }
        guest_refill(sim, vm, it.req);
        if (dv->used.len)
            vcpu_push(sim, vm, VCPU_ITEM_IRQ, it.req, TRUE); /* the driver loops until empty */
        else
            dv->irq_active = FALSE;
        break;
    }
    case VCPU_ITEM_SUBMIT_MORE:
        fifo_push(&vm->dev[vm->reqs[it.req].dev].avail, it.req);
        iot_poll_sees(sim, vm);
        break;
    case VCPU_ITEM_SUBMIT: {
        guint d = vm->reqs[it.req].dev;

        fifo_push(&vm->dev[d].avail, it.req);
        iot_poll_sees(sim, vm);
        /*
         * Each request is its own submission with the notify check (fio
         * default).  With the event index only the first request after the
         * iothread re-armed notifications kicks.
         */
        if (notifications_enabled(vm, d) && vm->dev[d].kick_armed) {
            vm->dev[d].kick_armed = FALSE;
            vcpu_push(sim, vm, VCPU_ITEM_KICK, d, TRUE);
        }
        break;
    }
    case VCPU_ITEM_KICK:
    default:
        break;
    }
    vcpu_next(sim, vm);
}

/* ---- events ------------------------------------------------------------ */

static void
device_submit(Sim *sim, SimVm *vm, guint32 r)
{
    SimDev *dv = &vm->dev[vm->reqs[r].dev];
    double start = MAX(sim->now, dv->dev_free_at);
    double lat = sim_rand_dist(sim, &dv->w.service);
    double occ = MIN(dv->w.dev_occupancy, lat);

    dv->dev_free_at = start + occ;
    vm->reqs[r].t_qemu = sim->now;
    sim_event_push(sim, start + lat, EV_DEVICE_DONE, vm_index(sim, vm), r);
}

static void
iot_chunk_done(Sim *sim, SimVm *vm)
{
    if (vm->st == IOT_WAKE_CPU) {
        iot_vq_take_set(vm);
        iot_got_work(sim, vm, FALSE);
        return;
    }
    if (vm->st == IOT_POLL_ONCE) {
        vm->truth.poll_cpu_ns += iot_poll_iteration(sim, vm);
        if (iot_has_work(vm))
            iot_got_work(sim, vm, TRUE);
        else
            iot_block(sim, vm);
        return;
    }
    if (vm->adjust_at_end) {
        vm->adjust_at_end = FALSE;
        iot_adjust(sim, vm, sim->now - vm->loop_start, ~0u);
    }
    for (guint d = 0; d < vm->n_dev; d++) {
        SimDev *dv = &vm->dev[d];

        if (!dv->n_sub)
            continue;
        vm->truth.submit_calls++;
        /*
         * One submission call for the batch: a device with a per-command
         * overhead (dev_batch_ns) pays it once for what one io_submit
         * brings, in its throughput (the next batch waits), not in this
         * batch's latency.
         */
        for (guint i = 0; i < dv->n_sub; i++)
            device_submit(sim, vm, dv->taken_sub[i]);
        if (dv->w.dev_batch_ns > 0)
            dv->dev_free_at += dv->w.dev_batch_ns;
    }
    for (guint i = 0; i < vm->n_cpl; i++) {
        guint32 r = vm->taken_cpl[i];
        SimDev *dv = &vm->dev[vm->reqs[r].dev];

        dv->ops++;
        dv->total_ns += (guint64)(sim->now - vm->reqs[r].t_qemu);
        fifo_push(&dv->used, r);
    }
    for (guint d = 0; d < vm->n_dev; d++) {
        SimDev *dv = &vm->dev[d];

        if (dv->used.len && !dv->irq_active) {
            dv->irq_active = TRUE;
            sim_event_push(sim, sim->now + sim->costs.irq_lat, EV_IRQ, vm_index(sim, vm), d);
        }
        if (dv->n_sub) {
            dv->kick_armed = TRUE;      /* virtqueue handler re-enables notifications */
            dv->vq_look = TRUE;         /* ... and checks the queue once more */
        }
        dv->n_sub = 0;
    }
    vm->n_cpl = 0;
    iot_loop_begin(sim, vm);
}

void
sim_vm_chunk_done(Sim *sim, SimThread *th)
{
    SimVm *vm = vm_of(sim, th->vm);

    if (th->kind == THREAD_IOT)
        iot_chunk_done(sim, vm);
    else
        vcpu_item_done(sim, vm);
}

/* EV_ARRIVAL's arg: the disk in the low bits, the generation above. */
#define ARRIVAL_DEV_BITS 3
G_STATIC_ASSERT(SIM_MAX_DEVICES <= 1u << ARRIVAL_DEV_BITS);

static void
schedule_arrival(Sim *sim, SimVm *vm, guint d)
{
    SimDev *dv = &vm->dev[d];

    if (dv->w.qd == 0 && dv->w.open_iops > 0)
        sim_event_push(sim, sim->now + sim_rand_exp(sim, 1e9 / dv->w.open_iops), EV_ARRIVAL,
                       vm_index(sim, vm), dv->arrival_gen << ARRIVAL_DEV_BITS | d);
}

void
sim_vm_handle_event(Sim *sim, const SimEvent *ev)
{
    SimVm *vm = vm_of(sim, ev->vm);

    switch (ev->kind) {
    case EV_DEVICE_DONE:
        fifo_push(&vm->cq, ev->arg);
        iot_poll_sees(sim, vm);
        iot_signal(sim, vm);
        break;
    case EV_POLL_DEADLINE:
        if (vm->st == IOT_POLLING && ev->arg == vm->poll_gen) {
            iot_end_polling(sim, vm);
            /* Work that appeared in the last iteration is seen at its end. */
            if (iot_has_work(vm)) {
                iot_got_work(sim, vm, TRUE);
                break;
            }
            vm->poll_started = FALSE;
            for (guint d = 0; d < vm->n_dev; d++)
                vm->dev[d].kick_armed = TRUE;
            iot_block_or_poll_once(sim, vm);
        }
        break;
    case EV_POLL_SEE:
        if (vm->st == IOT_POLLING && ev->arg == vm->poll_gen) {
            iot_end_polling(sim, vm);
            iot_got_work(sim, vm, TRUE);
        }
        break;
    case EV_WAKE:
        vm->st = IOT_WAKE_CPU;
        sim_thread_run(sim, &vm->iot, sim->costs.wake_cpu);
        break;
    case EV_IRQ:                /* arg: the disk */
        vcpu_push_irq(sim, vm, ev->arg);
        vcpu_kick_idle(sim, vm);
        break;
    case EV_KICK:               /* arg: the disk */
        vm->dev[ev->arg].kick_pending = TRUE;
        iot_signal(sim, vm);
        break;
    case EV_ARRIVAL: {
        guint d = ev->arg & ((1u << ARRIVAL_DEV_BITS) - 1);
        SimDev *dv = &vm->dev[d];

        if (d >= vm->n_dev || ev->arg >> ARRIVAL_DEV_BITS != dv->arrival_gen)
            break;
        /*
         * An open loop beyond what the VM can serve would grow without
         * bound; past half the ring (shared by the disks) the guest's
         * queue is full and the request is not issued (fio would stall
         * the same way).
         */
        if (dv->inflight >= SIM_RING / 2 / vm->n_dev) {
            schedule_arrival(sim, vm, d);
            break;
        }
        dv->inflight++;
        vcpu_push(sim, vm, VCPU_ITEM_SUBMIT, req_new(sim, vm, d), FALSE);
        vcpu_kick_idle(sim, vm);
        schedule_arrival(sim, vm, d);
        break;
    }
    default:
        g_assert_not_reached();
    }
}

/* ---- public ------------------------------------------------------------ */

guint
sim_add_vm(Sim *sim, const SimWorkload *w, const PolicyTriple *triple)
{
    SimVm *vm = g_new0(SimVm, 1);
    guint idx = sim->n_vms;

    sim->vms = g_renew(SimVm *, sim->vms, sim->n_vms + 1);
    sim->vms[sim->n_vms++] = vm;
    vm->triple = *triple;
    vm->iot = (SimThread){ .kind = THREAD_IOT, .vm = idx, .rq = -1 };
    vm->vcpu = (SimThread){ .kind = THREAD_VCPU, .vm = idx, .rq = -1 };
    for (guint i = 0; i < SIM_RING; i++)
        vm->free_reqs[vm->n_free++] = SIM_RING - 1 - i;
    vm->st = IOT_RUNNING;
    vm->n_dev = w->n_devices >= 2 ? MIN(w->n_devices, SIM_MAX_DEVICES) : 1;
    for (guint d = 0; d < SIM_MAX_DEVICES; d++) {
        vm->dev[d].kick_armed = TRUE;
        vm->dev[d].vq_take = TRUE;
    }
    /* Every counter starts at 0 when the VM is added. */
    metric_vec_init(&vm->read);
    metric_vec_zero_source(&vm->read, METRIC_SOURCE_BLOCK);
    metric_vec_zero_source(&vm->read, METRIC_SOURCE_THREAD);
    metric_vec_zero_source(&vm->read, METRIC_SOURCE_EXITS);
    vm->read_mono_ns = (gint64)sim->now;
    iot_loop_begin(sim, vm);
    sim_vm_set_workload(sim, idx, w);
    return idx;
}

void
sim_vm_set_workload(Sim *sim, guint i, const SimWorkload *w)
{
    SimVm *vm = vm_of(sim, i);

    /* The number of disks is the VM's: a workload change keeps it. */
    g_assert(vm->n_dev == (w->n_devices >= 2 ? MIN(w->n_devices, SIM_MAX_DEVICES) : 1));
    vm->w = *w;
    for (guint d = 0; d < vm->n_dev; d++) {
        SimDev *dv = &vm->dev[d];

        dv->w = *w;
        if (vm->n_dev > 1)
            dv->w.qd = w->dev_qd[d];
        dv->arrival_gen++;
        guest_refill(sim, vm, d);
        schedule_arrival(sim, vm, d);
    }
    vcpu_kick_idle(sim, vm);
}

void
sim_set_qemu_model(Sim *sim, SimQemuModel model)
{
    sim->qemu_model = model;
}

SimQemuModel
sim_qemu_model(const Sim *sim)
{
    return sim->qemu_model;
}

gboolean
sim_qemu_model_parse(const char *s, SimQemuModel *out)
{
    if (g_strcmp0(s, "7.2") == 0)
        *out = SIM_QEMU_7_2;
    else if (g_strcmp0(s, "10") == 0)
        *out = SIM_QEMU_10;
    else
        return FALSE;
    return TRUE;
}

const char *
sim_qemu_model_to_string(SimQemuModel model)
{
    return model == SIM_QEMU_10 ? "10" : "7.2";
}

void
sim_set_qemu_v4(Sim *sim, gboolean v4)
{
    sim->qemu_v4 = v4;
}

void
sim_set_qemu_poll_once(Sim *sim, gboolean poll_once)
{
    sim->qemu_poll_once = poll_once;
}

void
sim_vm_set_triple(Sim *sim, guint i, const PolicyTriple *triple)
{
    SimVm *vm = vm_of(sim, i);

    vm->triple = *triple;
    vm->poll_ns = 0;
    for (guint h = 0; h < G_N_ELEMENTS(vm->poll_h); h++)
        vm->poll_h[h] = 0;
    vm->adjust_at_end = FALSE;
}

PolicyTriple
sim_vm_triple(const Sim *sim, guint i)
{
    return sim->vms[i]->triple;
}

const SimWorkload *
sim_vm_workload(const Sim *sim, guint i)
{
    return &sim->vms[i]->w;
}

void
sim_vm_delta(Sim *sim, guint i, PolicyDelta *out)
{
    SimVm *vm = vm_of(sim, i);

    sim_thread_flush(sim, &vm->iot);
    if (vm->st == IOT_POLLING) {
        vm->truth.poll_cpu_ns += sim->v - vm->poll_v_start;
        vm->poll_v_start = sim->v;
    }
    if (vm->computing) {
        sim_thread_flush(sim, &vm->vcpu);
        vm->truth.vcpu_compute_ns += sim->v - vm->compute_v_start;
        vm->compute_v_start = sim->v;
    }
    guint64 ops = 0, total_ns = 0;

    for (guint d = 0; d < vm->n_dev; d++) {
        ops += vm->dev[d].ops;
        total_ns += vm->dev[d].total_ns;
    }
    vm->truth.iot_cpu_ns = vm->iot.cpu_ns;

    MetricVec cur;
    gint64 now_ns = (gint64)sim->now;

    /* The reading query-blockstats, /proc and KVM would give, cumulative. */
    metric_vec_init(&cur);
    metric_vec_zero_source(&cur, METRIC_SOURCE_BLOCK);
    cur.v[METRIC_POLL_MAX_NS] = (gint64)vm->triple.poll_max_ns;
    cur.v[METRIC_POLL_GROW] = (gint64)vm->triple.poll_grow;
    cur.v[METRIC_POLL_SHRINK] = (gint64)vm->triple.poll_shrink;
    cur.v[METRIC_RD_OPS] = (gint64)ops;
    cur.v[METRIC_RD_BYTES] = (gint64)(ops * 4096);
    cur.v[METRIC_RD_TIME_NS] = (gint64)total_ns;
    cur.v[METRIC_CPU_NS] = (gint64)vm->iot.cpu_ns;
    cur.v[METRIC_CTX_VOL] = (gint64)vm->vol_ctxsw;
    cur.v[METRIC_CTX_INVOL] = 0;
    cur.v[METRIC_RUNQ_WAIT_NS] = (gint64)vm->iot.delay_ns;
    cur.v[METRIC_KVM_EXITS] = (gint64)vm->truth.exits;

    policy_delta_init(out);
    out->when_ms = (gint64)(sim->now / 1e6);
    out->len_ns = now_ns - vm->read_mono_ns;
    metric_vec_delta(&vm->read, &cur, METRIC_SOURCES_ALL, &out->v);
    /* query-blockstats per disk, as the daemon's sampler counts them */
    out->n_devices = vm->n_dev;
    for (guint d = 0; d < vm->n_dev; d++) {
        out->dev_ops[d] = (gint64)(vm->dev[d].ops - vm->read_dev_ops[d]);
        vm->read_dev_ops[d] = vm->dev[d].ops;
    }
    vm->read = cur;
    vm->read_mono_ns = now_ns;
}

const SimTruth *
sim_vm_truth(const Sim *sim, guint i)
{
    return &sim->vms[i]->truth;
}
