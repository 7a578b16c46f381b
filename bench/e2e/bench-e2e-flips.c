/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Stress: can rewriting an iothread's poll parameters stall a guest's I/O?
 *
 * The test guest reads random 4 KiB blocks at QD16 from a raw file (cache
 * on, QEMU's thread pool: the block path of the libvirt domain in
 * tests/e2e) while this program rewrites poll-max-ns, poll-grow and
 * poll-shrink of the disk's iothread with qom-set every period, cycling
 * through a pattern that turns polling off and on while the iothread
 * polls.  Once a second it also asks what libvirt's domstats asks of QEMU
 * (query-iothreads, query-blockstats, query-named-block-nodes), as
 * polltuned's libvirt sampling makes it do.
 *
 * A stall is GUEST_STALL_TICKS guest ticks in a row without one completed
 * request (e2e-guest.h).  It fails the run, with where the requests are
 * (e2e-stall.h) while the guest still waits for them.  Without a stall the
 * program prints the flips, the QD16 phase's figures and QEMU's read count
 * against the guest's.
 *
 * PT_FLIPS_SECONDS: the QD16 phase (default 300).  PT_FLIPS_PERIOD_MS:
 * the time between writes (default 100; 0 writes nothing, the control).
 * docs/BENCHMARKS.md has the figures and the command.
 */
#include "e2e-direct.h"
#include "e2e-stall.h"

#include <gio/gio.h>
#include <signal.h>
#include <stdlib.h>
#include <glib/gstdio.h>

#define FLIPS_DEFAULT_SECONDS 300
#define FLIPS_DEFAULT_PERIOD_MS 100
/* What libvirt's domstats asks, once a second like polltuned's tick. */
#define FLIPS_SAMPLE_MS 1000
/* Boot under TCG on a busy host took up to 15 s. */
#define FLIPS_BOOT_WAIT_MS 120000

/* Off, far above QEMU's default, off again, the default; the growth and
 * shrink factors changed in between.  Each write resets QEMU's window. */
static const struct {
    const char *property;
    gint64 value;
} flip_pattern[] = {
    { "poll-max-ns", 0 },      { "poll-max-ns", 262144 }, { "poll-max-ns", 0 },
    { "poll-max-ns", 32768 },  { "poll-grow", 4 },        { "poll-max-ns", 0 },
    { "poll-shrink", 2 },      { "poll-max-ns", 262144 }, { "poll-grow", 0 },
    { "poll-max-ns", 32768 },  { "poll-shrink", 0 },      { "poll-max-ns", 50000 },
};

static guint
env_uint(const char *name, guint dflt)
{
    const char *v = g_getenv(name);
    char *end = NULL;
    guint64 n;

    if (!v || !*v)
        return dflt;
    n = g_ascii_strtoull(v, &end, 10);
    if (*end || n > G_MAXUINT)
        g_error("%s=%s: not a whole number", name, v);
    return (guint)n;
}

static void
monitor_ok(E2eDirectVm *dv, const char *command, const char *args)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) ret = dv->vm.monitor(&dv->vm, command, args, &err);

    if (!ret)
        g_error("%s %s: %s", command, args ? args : "", err->message);
}

static gint64
qemu_reads(E2eDirectVm *dv)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(json_object) ret = dv->vm.monitor(&dv->vm, "query-blockstats", NULL, &err);

    g_assert_no_error(err);
    return pt_json_path_int(ret, "0/stats/rd_operations");
}

static void
test_flips(void)
{
    guint seconds = env_uint("PT_FLIPS_SECONDS", FLIPS_DEFAULT_SECONDS);
    guint period_ms = env_uint("PT_FLIPS_PERIOD_MS", FLIPS_DEFAULT_PERIOD_MS);
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *disk = NULL;
    g_autofree char *phases_arg = g_strdup_printf("idle:2,qd16:%u", seconds);
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autoptr(GArray) phases = NULL;
    guint flips = 0, k = 0;
    gint64 at, next_sample = 0, t_first = 0, t_last = 0;
    GuestWaitResult r;

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    /* Not under /tmp, which may be a tmpfs: the file backend is the point. */
    dir = g_strdup("/var/tmp/pt-flips-XXXXXX");
    g_assert_nonnull(g_mkdtemp(dir));
    disk = g_build_filename(dir, "disk.img", NULL);
    g_setenv("PT_GUEST_DISK", disk, TRUE);
    dv = e2e_direct_vm_start(dir, phases_arg, "tcg", 0, NULL);
    e2e_direct_vm_connect(dv);
    if (guest_serial_wait_for(dv->vm.serial, "PT-PHASE-BEGIN idx=1 ", FLIPS_BOOT_WAIT_MS, &at,
                              &why) != GUEST_WAIT_SEEN)
        g_error("the guest did not begin its QD16 phase: %s", why);

    for (;;) {
        gint64 now;

        r = guest_serial_wait_for(dv->vm.serial, "PT-PHASE idx=1 ", period_ms ? period_ms : 100,
                                  &at, &why);
        if (r != GUEST_WAIT_TIMEOUT)
            break;
        now = g_get_monotonic_time();
        if (period_ms) {
            g_autofree char *args = g_strdup_printf(
                "{\"path\": \"/objects/iot0\", \"property\": \"%s\", \"value\": %" G_GINT64_FORMAT
                "}", flip_pattern[k].property, flip_pattern[k].value);

            monitor_ok(dv, "qom-set", args);
            k = (k + 1) % G_N_ELEMENTS(flip_pattern);
            flips++;
            t_last = now;
            if (!t_first)
                t_first = now;
        }
        if (now >= next_sample) {
            monitor_ok(dv, "query-iothreads", NULL);
            monitor_ok(dv, "query-blockstats", NULL);
            monitor_ok(dv, "query-named-block-nodes", "{\"flat\": true}");
            next_sample = now + FLIPS_SAMPLE_MS * 1000;
        }
    }
    g_test_message("%u writes (period %u ms) over %.1f s", flips, period_ms,
                   (t_last - t_first) / 1e6);
    if (r != GUEST_WAIT_SEEN) {
        g_autofree char *state = e2e_vm_state(&dv->vm);
        g_autofree char *dump = guest_serial_dump(dv->vm.serial);

        g_test_message("STALL after %u writes: %s\nQEMU: %s\nserial:\n%s\nkept: %s", flips, why,
                       state, dump, dir);
        g_test_fail();
        return;
    }
    phases = guest_serial_phases(dv->vm.serial);
    g_assert_cmpuint(phases->len, ==, 2);
    {
        const GuestPhase *p = &g_array_index(phases, GuestPhase, 1);

        /* QEMU counts the kernel's partition scan at boot too (1-2 reads). */
        g_test_message("qd16: %" G_GINT64_FORMAT " ops in %.1f s, %.0f IOPS; QEMU counted %"
                       G_GINT64_FORMAT " reads; no stall", p->ops, p->dur_ms / 1000.0, p->iops,
                       qemu_reads(dv));
    }
    g_clear_pointer(&dv, e2e_direct_vm_free);
    g_unlink(disk);
    e2e_vm_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/e2e/flips", test_flips);
    return g_test_run();
}
