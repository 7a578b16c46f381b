/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-private: the simulator's internal state, shared by sim-core.c (event
 * queue, PRNG, processor-sharing CPU) and sim-vm.c (guest, iothread, device).
 */
#pragma once

#include "sim.h"

#define SIM_RING 4096           /* requests in flight per VM, at most */

/*
 * QEMU 10's poll handlers: the iothread's Linux AIO completion ring (one
 * per AioContext, shared by its disks) and each disk's virtqueue.
 */
enum {
    SIM_HANDLER_VQ,             /* the first disk's virtqueue: guest requests (and kicks) */
    SIM_HANDLER_AIO,            /* Linux AIO completion ring */
    SIM_HANDLER_N = 1 + SIM_MAX_DEVICES,        /* disk d > 0's virtqueue: 1 + d */
};

typedef enum {
    EV_DEVICE_DONE,             /* arg: request */
    EV_POLL_DEADLINE,           /* arg: poll generation */
    EV_WAKE,                    /* blocked iothread is scheduled again */
    EV_IRQ,                     /* interrupt reaches the guest */
    EV_KICK,                    /* ioeventfd signalled */
    EV_ARRIVAL,                 /* open-loop request, arg: generation */
    EV_POLL_SEE,                /* a poll iteration ends having seen work, arg: poll generation */
} SimEventKind;

typedef struct {
    double t;
    guint64 seq;
    guint32 kind;
    guint32 vm;
    guint32 arg;
} SimEvent;

typedef enum { THREAD_IOT, THREAD_VCPU } SimThreadKind;

typedef struct {
    SimThreadKind kind;
    guint vm;
    gboolean runnable;
    gboolean has_chunk;
    double vf;                  /* virtual time at which the chunk is done */
    double v_mark, t_mark;      /* accounting marks while runnable */
    double cpu_ns, delay_ns;
    int rq;                     /* index in the run list, -1 if not runnable */
} SimThread;

typedef struct {
    guint32 buf[SIM_RING];
    guint head, len;
} SimFifo;

typedef enum {
    IOT_BLOCKED,
    IOT_WAKING,
    IOT_WAKE_CPU,
    IOT_POLLING,
    IOT_POLL_ONCE,              /* the one iteration before blocking (sim_set_qemu_poll_once) */
    IOT_RUNNING,
} SimIotState;

typedef enum {
    VCPU_ITEM_IRQ,
    VCPU_ITEM_SUBMIT,           /* a request, then the notify check */
    VCPU_ITEM_SUBMIT_MORE,      /* a request of a batch that goes on: no notify check */
    VCPU_ITEM_KICK,
} SimVcpuItemKind;

typedef struct {
    guint32 kind;
    guint32 req;
} SimVcpuItem;

typedef struct {
    double t_guest;             /* guest began submitting */
    double t_qemu;              /* iothread submitted to the device */
    guint dev;                  /* the disk it is for */
} SimReq;

/* One disk of the VM: its virtqueue, its interrupt, its device. */
typedef struct {
    SimWorkload w;              /* the VM's workload with this disk's depth */
    gboolean kick_armed;        /* event index: the next request may kick */
    gboolean kick_pending;
    /*
     * Batched guests (guest_batch > 1) only: whether the iothread looks at
     * the virtqueue without a kick.  It does while polling, when a poll
     * ends and right after its own virtqueue pass (virtio-blk pops until
     * the queue is empty with notifications back on); otherwise only the
     * kick's eventfd makes it look.
     */
    gboolean vq_look;
    gboolean vq_take;           /* this dispatch pops the virtqueue */
    SimFifo avail;              /* guest-visible requests */
    guint32 taken_sub[SIM_RING];
    guint n_sub;
    SimFifo used;               /* completions the guest has not reaped */
    gboolean irq_active;
    double dev_free_at;         /* one pipeline stage, then the rest of the latency */
    guint inflight;             /* closed-loop requests in the system */
    guint32 arrival_gen;
    guint64 ops, total_ns;
} SimDev;

typedef struct {
    SimWorkload w;
    PolicyTriple triple;
    SimDev dev[SIM_MAX_DEVICES];
    guint n_dev;

    /* iothread */
    SimThread iot;
    SimIotState st;
    double poll_ns;             /* QEMU's adaptive window (10: the max over handlers) */
    double poll_h[SIM_HANDLER_N];       /* QEMU 10: per-handler windows, SIM_HANDLER_* */
    double loop_start;
    guint32 poll_gen;
    double poll_v_start;
    double poll_t_start;        /* wall time the busy-poll began */
    gboolean poll_see_pending;  /* an EV_POLL_SEE is queued for this poll */
    gboolean poll_started;      /* notifications suppressed by polling */
    gboolean adjust_at_end;     /* v4: block_ns includes this dispatch */
    SimFifo cq;                 /* device completions, all disks */
    guint32 taken_cpl[SIM_RING];
    guint n_cpl;

    /* guest */
    SimThread vcpu;
    SimVcpuItem items[SIM_RING];
    guint item_head, item_len;
    SimVcpuItem cur_item;
    guint irq_reaped;
    guint32 irq_reqs[SIM_RING];
    gboolean halted;
    gboolean computing;
    double compute_v_start;

    /* requests */
    SimReq reqs[SIM_RING];
    guint32 free_reqs[SIM_RING];
    guint n_free;

    /* counters */
    guint64 vol_ctxsw;
    SimTruth truth;
    /* What the last sim_vm_delta() read, cumulative: the next one's
     * previous reading. */
    MetricVec read;
    gint64 read_mono_ns;
    guint64 read_dev_ops[SIM_MAX_DEVICES];
} SimVm;

struct _Sim {
    SimCosts costs;
    guint n_cores;
    gboolean qemu_v4;
    gboolean qemu_poll_once;
    SimQemuModel qemu_model;
    guint64 rng[4];

    double now;
    double v;                   /* processor-sharing virtual time */
    SimThread **runlist;
    guint n_run, cap_run;
    double psi_some_ns, busy_ns;

    SimEvent *heap;
    guint n_heap, cap_heap;
    guint64 seq;

    SimVm **vms;
    guint n_vms;
};

/* sim-core.c */
double sim_rand01(Sim *sim);
double sim_rand_exp(Sim *sim, double mean);
double sim_rand_dist(Sim *sim, const SimDist *d);
void sim_event_push(Sim *sim, double t, SimEventKind kind, guint vm, guint32 arg);
void sim_thread_run(Sim *sim, SimThread *th, double work_ns);   /* runnable with a chunk */
void sim_thread_spin(Sim *sim, SimThread *th);                  /* runnable, no chunk */
void sim_thread_stop(Sim *sim, SimThread *th);                  /* not runnable */
void sim_thread_flush(Sim *sim, SimThread *th);

/* sim-vm.c */
void sim_vm_handle_event(Sim *sim, const SimEvent *ev);
void sim_vm_chunk_done(Sim *sim, SimThread *th);
