/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * e2e-stall: where the guest's requests are when its I/O stops, for the
 * failure message of an end-to-end test.
 *
 * A request the guest waits for is in one of four places, and the split
 * virtqueue of the disk tells which (virtio 1.x, 2.7 "Split Virtqueues"):
 *
 *   - in the avail ring, never taken by QEMU: the guest's notification
 *     (kick) was lost, or QEMU stopped looking;
 *   - taken by QEMU (its `inuse` count) and not completed: stuck in QEMU's
 *     block layer or backend;
 *   - completed into the used ring past the index the guest asked to be
 *     interrupted at (its used_event): the completion interrupt was lost
 *     on the way to, or inside, the guest;
 *   - none of these: the guest lost the requests itself.
 *
 * QEMU's side comes from x-query-virtio-queue-status (QEMU 7.2 and later);
 * the guest's side (avail idx, used_event) is read from guest memory with
 * the monitor's `xp`, because QEMU's copy of the avail idx is only as new
 * as its last look.
 */
#pragma once

#include "e2e-scenario.h"

/* The indices are the ring's free-running 16-bit counters. */
typedef struct {
    guint64 num;            /* ring size */
    guint64 avail_idx;      /* guest: avail->idx */
    guint64 used_event;     /* guest: interrupt me once used passes this */
    guint64 used_flags;     /* QEMU: used->flags (1: do not kick me) */
    guint64 avail_event;    /* QEMU: kick me once avail passes this */
    guint64 last_avail;     /* QEMU: the next avail entry it will take */
    guint64 used_idx;       /* QEMU: used->idx */
    guint64 signalled;      /* QEMU: used idx at its last interrupt decision */
    guint64 inuse;          /* QEMU: taken and not yet completed */
} E2eVirtq;

/* One sentence saying where the requests are, from @q alone. */
char *e2e_virtq_diagnose(const E2eVirtq *q);

/*
 * Ask @vm's QEMU (vm->monitor) for the disk's queue 0 and the guest's view
 * of it, its iothreads and its block stats; returns the diagnosis and the
 * raw figures as text.  Never fails: what cannot be read is said so.
 */
char *e2e_vm_state(E2eVm *vm);
