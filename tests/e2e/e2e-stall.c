/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "e2e-stall.h"

#include <gio/gio.h>

static guint
ring_diff(guint64 a, guint64 b)
{
    return (guint16)(a - b);
}

char *
e2e_virtq_diagnose(const E2eVirtq *q)
{
    guint waiting = ring_diff(q->avail_idx, q->last_avail);
    guint untaken = ring_diff(q->used_idx, q->used_event);

    if (waiting)
        return g_strdup_printf("%u request(s) wait in the avail ring that QEMU never took "
                               "(guest avail idx %" G_GUINT64_FORMAT ", QEMU's last-avail-idx %"
                               G_GUINT64_FORMAT "; QEMU asks for a kick after %" G_GUINT64_FORMAT
                               ", used flags %#" G_GINT64_MODIFIER "x): the guest's "
                               "notification was lost or QEMU stopped looking",
                               waiting, q->avail_idx, q->last_avail, q->avail_event,
                               q->used_flags);
    if (q->inuse)
        return g_strdup_printf("QEMU took %" G_GUINT64_FORMAT " request(s) and has not completed "
                               "them: they are in its block layer or backend", q->inuse);
    if (untaken)
        return g_strdup_printf("QEMU completed every request it took (used idx %" G_GUINT64_FORMAT
                               ") but the guest asked to be interrupted after %" G_GUINT64_FORMAT
                               ": %u completion(s) the guest never took, so their interrupt was "
                               "lost (QEMU last decided at used idx %" G_GUINT64_FORMAT ")",
                               q->used_idx, q->used_event, untaken, q->signalled);
    return g_strdup("QEMU holds nothing of the guest's and the guest has taken every completion "
                    "it was signalled: the requests were lost inside the guest");
}

/* One little-endian u16 of guest-physical memory, through the human
 * monitor's "xp /1hx ADDR" ("00000000029a0002: 0x002a"). */
static gboolean
guest_u16(E2eVm *vm, guint64 addr, guint64 *out, GError **error)
{
    g_autofree char *args = g_strdup_printf("{\"command-line\": \"xp /1hx 0x%" G_GINT64_MODIFIER
                                            "x\"}", addr);
    g_autoptr(json_object) ret = vm->monitor(vm, "human-monitor-command", args, error);
    const char *text, *colon;

    if (!ret)
        return FALSE;
    text = json_object_get_string(ret);
    colon = text ? strstr(text, ": 0x") : NULL;
    if (!colon) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "xp 0x%" G_GINT64_MODIFIER "x: unexpected reply \"%s\"", addr,
                    text ? text : "");
        return FALSE;
    }
    *out = g_ascii_strtoull(colon + 4, NULL, 16);
    return TRUE;
}

static gboolean
virtq_read(E2eVm *vm, E2eVirtq *q, GString *out, GError **error)
{
    g_autofree char *args = g_strdup_printf("{\"path\": \"%s\", \"queue\": 0}", vm->disk_qom);
    g_autoptr(json_object) st = vm->monitor(vm, "x-query-virtio-queue-status", args, error);
    guint64 avail, used;

    if (!st)
        return FALSE;
    g_string_append_printf(out, "x-query-virtio-queue-status %s queue 0: %s\n", vm->disk_qom,
                           json_object_to_json_string(st));
    q->num = pt_json_path_int(st, "vring-num");
    q->last_avail = pt_json_path_int(st, "last-avail-idx");
    q->used_idx = pt_json_path_int(st, "used-idx");
    q->signalled = pt_json_path_int(st, "signalled-used");
    q->inuse = pt_json_path_int(st, "inuse");
    avail = pt_json_path_int(st, "vring-avail");
    used = pt_json_path_int(st, "vring-used");
    /* avail: flags, idx, ring[num], used_event; used: flags, idx,
     * ring[num] of {id, len}, avail_event. */
    if (!guest_u16(vm, avail + 2, &q->avail_idx, error) ||
        !guest_u16(vm, avail + 4 + 2 * q->num, &q->used_event, error) ||
        !guest_u16(vm, used, &q->used_flags, error) ||
        !guest_u16(vm, used + 4 + 8 * q->num, &q->avail_event, error))
        return FALSE;
    g_string_append_printf(out, "guest memory: avail idx %" G_GUINT64_FORMAT ", used_event %"
                           G_GUINT64_FORMAT "; used flags %" G_GUINT64_FORMAT ", avail_event %"
                           G_GUINT64_FORMAT "\n", q->avail_idx, q->used_event, q->used_flags,
                           q->avail_event);
    return TRUE;
}

static void
append_query(E2eVm *vm, GString *out, const char *command)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) ret = vm->monitor(vm, command, NULL, &err);

    g_string_append_printf(out, "%s: %s\n", command,
                           ret ? json_object_to_json_string(ret) : err->message);
}

char *
e2e_vm_state(E2eVm *vm)
{
    GString *out = g_string_new(NULL);
    g_autoptr(GError) err = NULL;
    E2eVirtq q = { 0 };

    if (!vm->monitor) {
        g_string_append_printf(out, "no monitor of %s to ask\n", vm->target);
        return g_string_free(out, FALSE);
    }
    if (virtq_read(vm, &q, out, &err)) {
        g_autofree char *why = e2e_virtq_diagnose(&q);

        g_string_prepend(out, "\n");
        g_string_prepend(out, why);
        g_string_prepend(out, "diagnosis: ");
    } else {
        g_string_append_printf(out, "the disk's virtqueue could not be read: %s\n",
                               err->message);
    }
    append_query(vm, out, "query-iothreads");
    append_query(vm, out, "query-blockstats");
    return g_string_free(out, FALSE);
}
