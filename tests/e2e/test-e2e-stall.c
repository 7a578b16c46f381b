/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pieces that turn a stalled guest into a clear failure, without a
 * guest: the serial wait that gives up when the guest fails, ends or
 * stalls (a console fed from a pipe), and the diagnosis of a virtqueue.
 */
#include "e2e-stall.h"

#include <unistd.h>

/* Long enough never to be reached by a wait that works: the failing
 * cases must end at once, not at the deadline. */
#define WAIT_MS 60000

static GuestSerial *
serial_fed(const char *const *lines, int *write_fd)
{
    int fds[2];

    g_assert_cmpint(pipe(fds), ==, 0);
    for (guint i = 0; lines[i]; i++) {
        g_autofree char *l = g_strdup_printf("%s\r\n", lines[i]);

        g_assert_cmpint(write(fds[1], l, strlen(l)), ==, (gssize)strlen(l));
    }
    if (write_fd)
        *write_fd = fds[1];
    else
        close(fds[1]);
    return guest_serial_new_fd(fds[0]);
}

static const char *const head[] = {
    "PT-START dev=/dev/vda size_bytes=1073741824 phases=qd1:2,qd16:15,qd1:2 t_ms=1928",
    "PT-PHASE-BEGIN idx=0 name=qd1 kind=read qd=1 t_ms=1931",
    "PT-TICK idx=0 name=qd1 t_ms=2931 ops=6709",
    "PT-PHASE idx=0 name=qd1 kind=read qd=1 start_ms=1931 end_ms=3931 dur_ms=2000 ops=13500 "
    "reads=13500 writes=0 errors=0 iops=6750.0 avg_lat_us=148.1",
    "PT-PHASE-BEGIN idx=1 name=qd16 kind=read qd=16 t_ms=3935",
    "PT-TICK idx=1 name=qd16 t_ms=4935 ops=36982",
    NULL,
};

/* What the CI run of the failure printed, shortened: the load generator
 * gives up and says so; the wait for the next phase must end right there
 * (it used to wait out its 180 s).  The console stays open, as a guest's
 * does after its schedule (pt.after=idle, or a log file that is followed). */
static void
test_wait_failed(void)
{
    g_autoptr(GPtrArray) lines = g_ptr_array_new();
    g_autoptr(GuestSerial) s = NULL;
    g_autofree char *why = NULL;
    gint64 t0 = g_get_monotonic_time(), at;
    int fd;

    for (guint i = 0; head[i]; i++)
        g_ptr_array_add(lines, (char *)head[i]);
    g_ptr_array_add(lines, "PT-ERROR msg=\"16 requests still in flight 30 s after the phase\"");
    g_ptr_array_add(lines, "PT-DONE status=error phases=1 t_ms=66940");
    g_ptr_array_add(lines, NULL);
    s = serial_fed((const char *const *)lines->pdata, &fd);

    g_assert_cmpint(guest_serial_wait_for(s, "PT-PHASE-BEGIN idx=2 ", WAIT_MS, &at, &why), ==,
                    GUEST_WAIT_FAILED);
    g_assert_cmpint(at, ==, -1);
    g_assert_nonnull(strstr(why, "16 requests still in flight"));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, WAIT_MS * 1000 / 2);
    close(fd);
}

/* Ten ticks of an I/O phase without one completion is a stall, reported
 * while the guest still waits; the same in an idle phase is not. */
static void
test_wait_stalled(void)
{
    g_autoptr(GPtrArray) lines = g_ptr_array_new();
    g_autoptr(GuestSerial) s = NULL;
    g_autoptr(GuestSerial) idle = NULL;
    g_autofree char *why = NULL;
    g_autofree char *why_idle = NULL;
    g_autoptr(GPtrArray) ticks = g_ptr_array_new_with_free_func(g_free);
    gint64 t0 = g_get_monotonic_time(), at;
    int fd;

    for (guint i = 0; head[i]; i++)
        g_ptr_array_add(lines, (char *)head[i]);
    for (guint i = 0; i <= GUEST_STALL_TICKS; i++)
        g_ptr_array_add(ticks, g_strdup_printf("PT-TICK idx=1 name=qd16 t_ms=%u ops=48815",
                                               5935 + 1000 * i));
    for (guint i = 0; i < ticks->len; i++)
        g_ptr_array_add(lines, ticks->pdata[i]);
    g_ptr_array_add(lines, NULL);
    s = serial_fed((const char *const *)lines->pdata, &fd);
    g_assert_cmpint(guest_serial_wait_for(s, "PT-PHASE-BEGIN idx=2 ", WAIT_MS, &at, &why), ==,
                    GUEST_WAIT_STALLED);
    g_assert_nonnull(strstr(why, "qd16"));
    g_assert_nonnull(strstr(why, "ops=48815"));
    g_assert_cmpint(g_get_monotonic_time() - t0, <, WAIT_MS * 1000 / 2);
    close(fd);

    /* An idle phase: the same ticks, no stall; the wait runs to its
     * deadline (short here) with the console still open. */
    idle = serial_fed((const char *const[]){ "PT-PHASE-BEGIN idx=0 name=idle kind=idle qd=0 t_ms=1",
                                             "PT-TICK idx=0 name=idle t_ms=2 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=3 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=4 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=5 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=6 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=7 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=8 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=9 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=10 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=11 ops=0",
                                             "PT-TICK idx=0 name=idle t_ms=12 ops=0",
                                             NULL },
                      &fd);
    g_assert_cmpint(guest_serial_wait_for(idle, "PT-PHASE ", 300, &at, &why_idle), ==,
                    GUEST_WAIT_TIMEOUT);
    g_assert_nonnull(strstr(why_idle, "PT-PHASE "));
    /* The awaited line still ends the wait when it comes. */
    g_assert_cmpint(write(fd, "PT-PHASE idx=0 name=idle\n", 25), ==, 25);
    g_assert_cmpint(guest_serial_wait_for(idle, "PT-PHASE ", WAIT_MS, &at, NULL), ==,
                    GUEST_WAIT_SEEN);
    g_assert_cmpint(at, >, 0);
    close(fd);
}

/* A schedule that ends before the awaited line. */
static void
test_wait_ended(void)
{
    g_autoptr(GuestSerial) s = serial_fed((const char *const[]){ "PT-DONE status=ok phases=1 t_ms=9",
                                                                 NULL },
                                          NULL);
    g_autofree char *why = NULL;
    gint64 at;

    g_assert_cmpint(guest_serial_wait_for(s, "PT-PHASE-BEGIN idx=4 ", WAIT_MS, &at, &why), ==,
                    GUEST_WAIT_ENDED);
    g_assert_nonnull(strstr(why, "status=ok"));
}

static void
test_diagnose(void)
{
    /* A stall of the kind the CI run's figures point to: QEMU completed
     * all 16, the guest took none of them. */
    E2eVirtq lost_irq = { .num = 256, .avail_idx = 48831, .used_event = 48815,
                          .last_avail = 48831, .used_idx = 48831, .signalled = 48831 };
    E2eVirtq lost_kick = { .num = 256, .avail_idx = 5, .used_event = 65530,
                           .last_avail = 65530, .used_idx = 65530, .signalled = 65530,
                           .used_flags = 1, .avail_event = 65530 };
    E2eVirtq stuck = { .num = 256, .avail_idx = 100, .used_event = 84, .last_avail = 100,
                       .used_idx = 84, .signalled = 84, .inuse = 16 };
    E2eVirtq none = { .num = 256, .avail_idx = 100, .used_event = 100, .last_avail = 100,
                      .used_idx = 100, .signalled = 100 };
    g_autofree char *a = e2e_virtq_diagnose(&lost_irq);
    g_autofree char *b = e2e_virtq_diagnose(&lost_kick);
    g_autofree char *c = e2e_virtq_diagnose(&stuck);
    g_autofree char *d = e2e_virtq_diagnose(&none);

    g_test_message("%s\n%s\n%s\n%s", a, b, c, d);
    g_assert_nonnull(strstr(a, "16 completion(s) the guest never took"));
    g_assert_nonnull(strstr(a, "interrupt was lost"));
    /* The indices wrap at 65536: 65530 -> 5 is 11 requests. */
    g_assert_nonnull(strstr(b, "11 request(s) wait in the avail ring"));
    g_assert_nonnull(strstr(c, "QEMU took 16 request(s)"));
    g_assert_nonnull(strstr(d, "lost inside the guest"));
}

/* stdout of @argv (NULL-terminated), which must succeed. */
static char *
run_ok(const char *const *argv)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *err_text = NULL;
    char *out = NULL;
    int status = 0;

    g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                               &err_text, &status, &err));
    g_assert_no_error(err);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("%s failed: %s", argv[0], err_text);
    return out;
}

/*
 * Both ways of booting the guest under TCG give it a second, offline vCPU
 * slot, so that QEMU 7.2 keeps its memory barriers (docs/GUEST.md).
 * Without them a QD16 guest lost a completion interrupt once in about
 * ten minutes here.
 */
static void
test_tcg_barriers(void)
{
    const char *src = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *run = g_build_filename(src, "tests", "guest", "run-guest.sh", NULL);
    g_autofree char *lv = g_build_filename(src, "tests", "guest", "libvirt-guest.sh", NULL);
    g_autofree char *why = NULL;
    g_autofree char *cmd = NULL;
    g_autofree char *kvm = NULL;
    g_autofree char *xml = NULL;

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    cmd = run_ok((const char *const[]){ run, "-N", "-p", "idle:1", NULL });
    g_assert_nonnull(strstr(cmd, " -accel tcg "));
    g_assert_nonnull(strstr(cmd, " -smp 1,maxcpus=2 "));
    /* KVM keeps the guest's barriers in hardware: no extra slot. */
    kvm = run_ok((const char *const[]){ run, "-N", "-A", "kvm", "-p", "idle:1", NULL });
    g_assert_nonnull(strstr(kvm, " -smp 1,maxcpus=1 "));
    xml = run_ok((const char *const[]){ lv, "xml", "-n", "pt-barriers", "-p", "idle:1",
                                        "-d", "/var/tmp/pt-barriers.img", NULL });
    g_assert_nonnull(strstr(xml, "<domain type='qemu'>"));
    g_assert_nonnull(strstr(xml, "<vcpu current='1'>2</vcpu>"));
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/e2e/serial/wait-failed", test_wait_failed);
    g_test_add_func("/e2e/serial/wait-stalled", test_wait_stalled);
    g_test_add_func("/e2e/serial/wait-ended", test_wait_ended);
    g_test_add_func("/e2e/stall/diagnose", test_diagnose);
    g_test_add_func("/e2e/guest/tcg-barriers", test_tcg_barriers);
    return g_test_run();
}
