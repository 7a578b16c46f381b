/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * QEMU 10.0 keeps one adaptive polling window per handler ("aio-posix:
 * Separate AioPolledEvent per AioHandler"), busy-polls for the largest of
 * them, and a qom-set of poll-max-ns, poll-grow or poll-shrink resets every
 * one of them to 0.  The policy's dwell rules rest on that reset; this test
 * observes it on the real QEMU 10 (it skips, saying why, on QEMU 7.2).
 *
 * The test guest runs a QD1 random-read load on an iothread whose
 * poll-max-ns (100 ms) is far longer than the gaps between requests under
 * TCG and whose poll-shrink halves, so the windows of the iothread's
 * handlers (the virtqueue's ioeventfd, the AIO completions, the iothread's
 * notifier) grow and stay grown.  QEMU's trace event
 * run_poll_handlers_begin, enabled for a few seconds only through
 * trace-event-set-state, logs the busy-poll length each time the iothread
 * polls: the largest window (max_ns).  Once it is well above the 4 µs
 * every window starts from, the test writes poll-max-ns again, with the
 * same value.  After that write the iothread polls next for at most 8 µs:
 * no handler kept its grown window, or the largest would still be its.
 */
#include <stdio.h>
#include <string.h>
#include <glib/gstdio.h>

#include "e2e-direct.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"

/* Far above TCG's request gaps at QD1, so that a wait rarely passes it;
 * and a shrink that halves (the default, 0, empties a window at once), so
 * that a window does not fall to 4 µs on its own. */
#define POLL_MAX_NS 100000000
#define POLL_SHRINK 2
#define GROWN_NS 32000          /* three doublings past the start */
#define FRESH_NS 8000           /* 4000, or its first doubling */

/* max_ns of each run_poll_handlers_begin line of @log from byte @from on,
 * appended to @out; returns the offset read up to (whole lines only). */
static gsize
read_max_ns(const char *log, gsize from, GArray *out)
{
    g_autofree char *text = NULL;
    gsize len = 0, end;
    const char *p;

    if (!g_file_get_contents(log, &text, &len, NULL) || len <= from)
        return from;
    end = len;
    while (end > from && text[end - 1] != '\n')
        end--;
    text[end] = '\0';
    for (p = text + from; (p = strstr(p, "run_poll_handlers_begin")); p++) {
        const char *m = strstr(p, "max_ns ");
        const char *nl = strchr(p, '\n');
        gint64 v;

        if (m && (!nl || m < nl) && sscanf(m, "max_ns %" G_GINT64_FORMAT, &v) == 1)
            g_array_append_val(out, v);
    }
    return end;
}

static void
run(E2eDirectVm *dv, const char *command, const char *args)
{
    g_autoptr(GError) err = NULL;

    json_object_put(pt_test_qmp_run(dv->qmp, command, args, &err));
    g_assert_no_error(err);
}

static void
trace(E2eDirectVm *dv, gboolean on)
{
    g_autofree char *args = g_strdup_printf("{\"name\": \"run_poll_handlers_begin\","
                                            " \"enable\": %s}", on ? "true" : "false");

    run(dv, "trace-event-set-state", args);
}

static void
test_qom_set_resets_every_window(void)
{
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *log = NULL;
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autoptr(GArray) before = g_array_new(FALSE, FALSE, sizeof(gint64));
    g_autoptr(GArray) after = g_array_new(FALSE, FALSE, sizeof(gint64));
    gint64 grown = 0, deadline;
    gsize off = 0;
    guint first_fresh = G_MAXUINT, at_reply = 0;

    if (pt_test_skip_below_qemu(10, 0))
        return;
    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    dir = e2e_vm_dir_new();
    log = g_build_filename(dir, "qemu.trace", NULL);
    dv = e2e_direct_vm_start(dir, "qd1:120", "tcg", POLL_MAX_NS,
                             (const char *const[]){ "-D", log, NULL });
    e2e_direct_vm_connect(dv);
    g_assert_cmpint(guest_serial_wait(dv->vm.serial, "PT-PHASE-BEGIN ", 120000, NULL), >=, 0);
    run(dv, "qom-set", "{\"path\": \"/objects/iot0\", \"property\": \"poll-shrink\","
        " \"value\": " G_STRINGIFY(POLL_SHRINK) "}");

    /* The windows grow under the load: wait for a busy-poll well past 4 µs. */
    trace(dv, TRUE);
    deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
    while (grown < GROWN_NS && g_get_monotonic_time() < deadline) {
        g_usleep(100 * 1000);
        off = read_max_ns(log, off, before);
        for (guint i = 0; i < before->len; i++)
            grown = MAX(grown, g_array_index(before, gint64, i));
    }
    g_test_message("before the write: %u polls, the longest %" G_GINT64_FORMAT " ns",
                   before->len, grown);
    g_assert_cmpint(grown, >=, GROWN_NS);

    /* Grown windows stay grown: of the last polls before the write, few
     * are short (a handler just added, or one that shrank a few times). */
    g_usleep(500 * 1000);
    off = read_max_ns(log, off, before);
    {
        guint n = MIN(before->len, 200), small = 0;

        for (guint i = before->len - n; i < before->len; i++)
            small += g_array_index(before, gint64, i) <= FRESH_NS;
        g_test_message("of the last %u polls before the write, %u were at most %d ns", n,
                       small, FRESH_NS);
        g_assert_cmpuint(small * 10, <, n);
    }

    /* The same value again: still a write, still a reset. */
    run(dv, "qom-set", "{\"path\": \"/objects/iot0\", \"property\": \"poll-max-ns\","
        " \"value\": " G_STRINGIFY(POLL_MAX_NS) "}");
    /*
     * Polls logged before QEMU replied may predate the write: on a loaded
     * host the iothread logs hundreds between the last read and the
     * reply (83 once, where 64 was the bound).  Count from the reply.
     */
    {
        g_autoptr(GArray) upto = g_array_new(FALSE, FALSE, sizeof(gint64));

        read_max_ns(log, off, upto);
        at_reply = upto->len;
    }
    deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
    while (first_fresh == G_MAXUINT && g_get_monotonic_time() < deadline) {
        g_usleep(100 * 1000);
        read_max_ns(log, off, after);
        for (guint i = 0; i < after->len && first_fresh == G_MAXUINT; i++)
            if (g_array_index(after, gint64, i) <= FRESH_NS)
                first_fresh = i;
        if (first_fresh == G_MAXUINT)
            g_array_set_size(after, 0);
    }
    trace(dv, FALSE);
    /* Lines logged between the read and the write may still show the old
     * windows; after the write, the first poll is short. */
    g_test_message("after the write: %u polls before the first of at most %d ns, %u of them "
                   "logged before QEMU replied", first_fresh, FRESH_NS, at_reply);
    g_assert_cmpuint(first_fresh, !=, G_MAXUINT);
    g_assert_cmpuint(first_fresh, <, at_reply + 64);

    g_clear_pointer(&dv, e2e_direct_vm_free);
    e2e_vm_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/e2e/qemu10/qom-set-resets-every-window", test_qom_set_resets_every_window);
    return g_test_run();
}
