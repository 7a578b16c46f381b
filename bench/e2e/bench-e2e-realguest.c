/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Does the adaptive policy find, on the real test guest, what an A/B of the
 * same guest finds?
 *
 * The test guest (docs/GUEST.md) boots under TCG as every real VM does,
 * idle first, then runs a QD1 and a QD16 phase of random 4 KiB reads.  It
 * boots twice on the same machine:
 *
 *  1. the reference: polltuned records every tick under the observe policy
 *     while this program alternates the disk's iothread between polling
 *     off and a 65536 ns window every PT_REALGUEST_PERIOD_S seconds
 *     (qom-set on its own monitor), off first in even pairs and on first
 *     in odd ones, so that a drift inside a phase cancels.  Each run's first
 *     tick (the write's) is dropped; each pair gives the difference of the
 *     balanced objective (ln IOPS - 0.10 x the iothread's cores, what the
 *     policy maximises), and a paired t-test over the pairs says whether
 *     polling or off wins with 95% confidence, or neither;
 *  2. adaptive:balanced with the contention guard's limits at 0, from the
 *     boot on, as the daemon runs it.
 *
 * Per load phase it prints the A/B's verdict with its pairs, the triple
 * adaptive ends the phase on, whether adaptive measured a polling window
 * in the phase, and the IOPS and CPU of each; it ends with
 *   realguest: PHASES phases, adaptive agrees with the A/B in N, probed polling in M
 * Where the A/B is significant, adaptive must end the phase on its side
 * (polling: any window; off: 0), or the benchmark fails; where it is not,
 * either is right.  docs/BENCHMARKS.md has the runs and the command:
 *   meson test -C build --benchmark e2e-realguest --print-errorlogs -v
 * PT_REALGUEST_PHASE_S: each load phase (default 160); PT_REALGUEST_PERIOD_S:
 * the A/B's run length (default 10).
 */
#include "e2e-direct.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>

#include "policy.h"

#define RG_IDLE_S 10
#define RG_TAIL_IDLE_S 5
#define RG_DEFAULT_PHASE_S 160
#define RG_DEFAULT_PERIOD_S 10
/* The A/B's window, the one the first measurement of the gain used. */
#define RG_POLL_NS 65536
#define RG_INTERVAL_MS 1000
/* Boot under TCG on a busy host took up to 15 s; the first phase follows. */
#define RG_BOOT_WAIT_MS 120000
#define RG_N_LOADS 2

static const char *const rg_loads[RG_N_LOADS] = { "qd1", "qd16" };

typedef struct {
    /* the A/B */
    guint pairs, polling_ahead;
    double diff_mean, diff_t, diff_df;
    int verdict;                /* +1 polling, -1 off, 0 no significant difference */
    double iops_off, iops_on, cpu_off, cpu_on;
    /* adaptive */
    gint64 settled_ns;
    gboolean probed_polling;
    guint n_writes;             /* changes of poll-max-ns seen in the phase */
    double iops, cpu;
} RgPhase;

/*
 * Student's t at 97.5% (a two-sided 95% test) for 1..30 degrees of
 * freedom, from the standard tables; the normal's 1.96 beyond.
 */
static double
t_975(guint df)
{
    static const double t[] = { 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                2.060, 2.056, 2.052, 2.048, 2.045, 2.042 };

    return df >= 1 && df <= G_N_ELEMENTS(t) ? t[df - 1] : 1.96;
}

static gint64
now_ms(void)
{
    return g_get_real_time() / 1000;
}

static void
sleep_until(gint64 ms)
{
    gint64 left = ms - now_ms();

    if (left > 0)
        g_usleep((gulong)left * 1000);
}

static double
row_double(json_object *row, const char *key, gboolean *ok)
{
    json_object *v = NULL;

    if (!json_object_object_get_ex(row, key, &v) || !v) {
        *ok = FALSE;
        return 0;
    }
    return json_object_get_double(v);
}

/* The objective the policy maximises, for one tick: ln IOPS - w x cores. */
static double
tick_score(double iops, double cpu_pct)
{
    PolicyMetrics m = { .rd_iops = iops, .have_cpu = TRUE, .cpu_pct = cpu_pct };

    return policy_objective_score(POLICY_OBJECTIVE_BALANCED, &m);
}

typedef struct {
    double score, iops, cpu;
    guint n;
    gint64 poll_ns;             /* the value in force at the run's last tick */
    gint64 first_ns;            /* and at its first */
    guint changes;
} RgWindow;

/* The ticks wholly inside (@from_ms, @to_ms], less the first @skip. */
static RgWindow
window_of(json_object *rows, gint64 from_ms, gint64 to_ms, guint skip)
{
    RgWindow w = { .poll_ns = -1, .first_ns = -1 };
    gint64 last = -1;
    guint seen = 0;

    for (size_t i = 0; i < json_object_array_length(rows); i++) {
        json_object *row = json_object_array_get_idx(rows, i);
        gint64 ts = pt_json_path_int(row, "ts_ms");
        gboolean ok = TRUE;
        double iops, cpu;
        gint64 ns;

        if (ts - RG_INTERVAL_MS < from_ms || ts > to_ms)
            continue;
        ns = pt_json_path_int(row, "poll-max-ns");
        if (w.first_ns < 0)
            w.first_ns = ns;
        if (last >= 0 && ns != last)
            w.changes++;
        last = ns;
        w.poll_ns = ns;
        if (seen++ < skip)
            continue;
        iops = row_double(row, "iops", &ok);
        cpu = row_double(row, "cpu_pct", &ok);
        if (!ok || iops <= 0)
            continue;
        w.score += tick_score(iops, cpu);
        w.iops += iops;
        w.cpu += cpu;
        w.n++;
    }
    if (w.n) {
        w.score /= w.n;
        w.iops /= w.n;
        w.cpu /= w.n;
    }
    return w;
}

typedef struct {
    E2eDirectVm *dv;
    PtTestDaemon *d;
    char *dir;
    GArray *phases;
    json_object *rows;
} RgRun;

static void
rg_run_clear(RgRun *r)
{
    g_clear_pointer(&r->dv, e2e_direct_vm_free);
    if (r->d) {
        e2e_reap_forget(r->d->pid);
        g_assert_cmpint(pt_test_daemon_stop(r->d), ==, 0);
        pt_test_daemon_free(r->d);
        r->d = NULL;
    }
    if (r->dir)
        e2e_vm_dir_remove(r->dir);
    g_clear_pointer(&r->dir, g_free);
    g_clear_pointer(&r->phases, g_array_unref);
    g_clear_pointer(&r->rows, json_object_put);
}

G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(RgRun, rg_run_clear)

static char *
rg_phases(guint phase_s)
{
    return g_strdup_printf("idle:%u,%s:%u,%s:%u,idle:%u", RG_IDLE_S, rg_loads[0], phase_s,
                           rg_loads[1], phase_s, RG_TAIL_IDLE_S);
}

/* Boot the guest under the daemon configured with @policy_lines. */
static void
rg_boot(RgRun *r, guint phase_s, const char *policy_lines)
{
    g_autofree char *targets = NULL;
    g_autofree char *conf = NULL;
    g_autofree char *phases = rg_phases(phase_s);

    r->dir = e2e_vm_dir_new();
    targets = e2e_direct_targets(r->dir);
    conf = g_strdup_printf("interval = 1s\nmetrics-listen =\n[targets]\n%s[policy]\n%s",
                           targets, policy_lines);
    r->d = e2e_daemon_start(conf);
    /* At QEMU's own defaults, as libvirt starts a domain. */
    r->dv = e2e_direct_vm_start(r->dir, phases, "tcg", 0, NULL);
    e2e_direct_vm_connect(r->dv);
    g_assert_cmpint(e2e_wait_attached(r->d, "pt-e2e", 30000), >=, 0);
}

/* Wait for the schedule's end and take the daemon's history of iot0. */
static void
rg_finish(RgRun *r, guint phase_s)
{
    guint wait_ms = RG_BOOT_WAIT_MS + (2 * phase_s + RG_IDLE_S + RG_TAIL_IDLE_S) * 2000;

    if (guest_serial_wait(r->dv->vm.serial, "PT-DONE ", wait_ms, NULL) < 0) {
        g_autofree char *dump = guest_serial_dump(r->dv->vm.serial);

        g_error("the guest did not finish its schedule; serial so far:\n%s", dump);
    }
    r->phases = guest_serial_phases(r->dv->vm.serial);
    g_assert_cmpuint(r->phases->len, ==, RG_N_LOADS + 2);
    g_assert_true(pt_test_wait_stored(r->d, "pt-e2e", "iot0",
                                      g_array_index(r->phases, GuestPhase, r->phases->len - 1)
                                          .end_host_ms, 10000));
    r->rows = e2e_history(r->d, "pt-e2e", "iot0");
}

static void
qom_set_poll(E2eDirectVm *dv, gint64 ns)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *args = g_strdup_printf("{\"path\": \"/objects/iot0\", \"property\": "
                                            "\"poll-max-ns\", \"value\": %" G_GINT64_FORMAT "}",
                                            ns);
    g_autoptr(json_object) ret = dv->vm.monitor(&dv->vm, "qom-set", args, &err);

    if (!ret)
        g_error("qom-set poll-max-ns=%" G_GINT64_FORMAT ": %s", ns, err->message);
}

/* Polling off in the first run of even pairs, on in the first of odd ones. */
static gint64
ab_value(guint run)
{
    gboolean first = run % 2 == 0, on_first = (run / 2) % 2 == 1;

    return first == on_first ? RG_POLL_NS : 0;
}

static void
rg_ab(guint phase_s, guint period_s, RgPhase out[RG_N_LOADS])
{
    g_auto(RgRun) r = { 0 };
    guint n_runs = phase_s / period_s;
    gint64 begin[RG_N_LOADS];

    n_runs -= n_runs % 2;
    g_assert_cmpuint(n_runs, >=, 4);
    rg_boot(&r, phase_s, "default = observe\n");
    for (guint k = 0; k < RG_N_LOADS; k++) {
        g_autofree char *prefix = g_strdup_printf("PT-PHASE-BEGIN idx=%u ", k + 1);

        begin[k] = guest_serial_wait(r.dv->vm.serial, prefix,
                                     RG_BOOT_WAIT_MS + (k + 1) * phase_s * 2000, NULL);
        g_assert_cmpint(begin[k], >, 0);
        for (guint run = 0; run < n_runs; run++) {
            sleep_until(begin[k] + (gint64)run * period_s * 1000);
            qom_set_poll(r.dv, ab_value(run));
        }
    }
    rg_finish(&r, phase_s);
    for (guint k = 0; k < RG_N_LOADS; k++) {
        RgPhase *ph = &out[k];
        g_autoptr(GString) pairs = g_string_new(NULL);
        double sum = 0, sumsq = 0;
        guint n_on = 0, n_off = 0;

        for (guint pr = 0; pr < n_runs / 2; pr++) {
            RgWindow w[2];
            double d;

            for (guint j = 0; j < 2; j++) {
                gint64 from = begin[k] + (gint64)(2 * pr + j) * period_s * 1000;

                w[j] = window_of(r.rows, from, from + period_s * 1000, 1);
                g_assert_cmpuint(w[j].n, >=, period_s / 2);
            }
            /* w_on, w_off */
            if (ab_value(2 * pr) != 0) {
                RgWindow t = w[0];
                w[0] = w[1];
                w[1] = t;
            }
            d = w[1].score - w[0].score;
            sum += d;
            sumsq += d * d;
            ph->polling_ahead += d > 0;
            ph->iops_off += w[0].iops;
            ph->cpu_off += w[0].cpu;
            ph->iops_on += w[1].iops;
            ph->cpu_on += w[1].cpu;
            n_off++;
            n_on++;
            g_string_append_printf(pairs, " %+.3f(%.0f->%.0f)", d, w[0].iops, w[1].iops);
        }
        ph->pairs = n_runs / 2;
        ph->iops_off /= n_off;
        ph->cpu_off /= n_off;
        ph->iops_on /= n_on;
        ph->cpu_on /= n_on;
        ph->diff_mean = sum / ph->pairs;
        ph->diff_df = ph->pairs - 1;
        {
            double var = (sumsq - sum * sum / ph->pairs) / ph->diff_df;
            double se = sqrt(MAX(var, 1e-12) / ph->pairs);
            double crit = t_975((guint)ph->diff_df);

            ph->diff_t = ph->diff_mean / se;
            ph->verdict = ph->diff_t > crit ? 1 : ph->diff_t < -crit ? -1 : 0;
            g_test_message("A/B %s: %u pairs, polling minus off in the objective:%s; mean "
                           "%+.3f, t=%.2f (95%%: |t| > %.2f)", rg_loads[k], ph->pairs,
                           pairs->str, ph->diff_mean, ph->diff_t, crit);
        }
    }
}

static void
rg_adaptive(guint phase_s, RgPhase out[RG_N_LOADS])
{
    g_auto(RgRun) r = { 0 };

    rg_boot(&r, phase_s, "default = adaptive:balanced\n"
                         "psi-limit = 0\nvcpu-delay-limit = 0\niothread-delay-limit = 0\n");
    rg_finish(&r, phase_s);
    for (guint k = 0; k < RG_N_LOADS; k++) {
        const GuestPhase *p = &g_array_index(r.phases, GuestPhase, k + 1);
        gint64 mid = p->begin_host_ms + (p->end_host_ms - p->begin_host_ms) / 2;
        RgWindow all = window_of(r.rows, p->begin_host_ms, p->end_host_ms, 0);
        RgWindow late = window_of(r.rows, mid, p->end_host_ms, 0);
        RgPhase *ph = &out[k];

        ph->settled_ns = all.poll_ns;
        ph->n_writes = all.changes;
        ph->iops = late.iops;
        ph->cpu = late.cpu;
        for (size_t i = 0; i < json_object_array_length(r.rows); i++) {
            json_object *row = json_object_array_get_idx(r.rows, i);
            gint64 ts = pt_json_path_int(row, "ts_ms");

            if (ts - RG_INTERVAL_MS >= p->begin_host_ms && ts <= p->end_host_ms &&
                pt_json_path_int(row, "poll-max-ns") > 0)
                ph->probed_polling = TRUE;
        }
    }
    /* The daemon's account of its decisions, for the log. */
    {
        g_autoptr(json_object) ret = pt_test_daemon_ok(
            r.d, "show", "{\"target\": \"pt-e2e\", \"iothread\": \"iot0\", \"ticks\": 1}");
        json_object *dec = pt_json_path(ret, "iothreads/0/decisions");

        for (size_t i = 0; dec && i < json_object_array_length(dec); i++) {
            json_object *o = json_object_array_get_idx(dec, i);

            g_test_message("  decision %" G_GINT64_FORMAT " %s -> %" G_GINT64_FORMAT ": %s",
                           pt_json_path_int(o, "ts_ms"),
                           pt_json_path_str(o, "cause") ? pt_json_path_str(o, "cause") : "-",
                           pt_json_path_int(o, "new/poll-max-ns"),
                           pt_json_path_str(o, "reason"));
        }
    }
}

static const char *
verdict_name(int v)
{
    return v > 0 ? "polling" : v < 0 ? "off" : "no significant difference";
}

static void
test_realguest(void)
{
    g_autofree char *why = NULL;
    guint phase_s = e2e_env_seconds("PT_REALGUEST_PHASE_S", RG_DEFAULT_PHASE_S, 40, 3600);
    guint period_s = e2e_env_seconds("PT_REALGUEST_PERIOD_S", RG_DEFAULT_PERIOD_S, 4, 600);
    RgPhase ph[RG_N_LOADS] = { 0 };
    guint agree = 0, probed = 0;
    g_autoptr(GString) miss = g_string_new(NULL);

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    rg_ab(phase_s, period_s, ph);
    rg_adaptive(phase_s, ph);
    g_test_message("phase  A/B verdict                 pairs ahead  mean diff      t  "
                   "A/B IOPS off/on   A/B CPU%% off/on  adaptive: ends on  writes  "
                   "probed polling  IOPS    CPU%%");
    for (guint k = 0; k < RG_N_LOADS; k++) {
        const RgPhase *p = &ph[k];
        gboolean ok = p->verdict == 0 || (p->verdict > 0) == (p->settled_ns > 0);

        agree += ok;
        probed += p->probed_polling;
        g_test_message("%-6s %-26s %u/%u %+10.3f %6.2f  %7.0f/%-7.0f %7.1f/%-7.1f %18" G_GINT64_FORMAT
                       " %7u %15s %6.0f %6.1f", rg_loads[k], verdict_name(p->verdict),
                       p->polling_ahead, p->pairs, p->diff_mean, p->diff_t, p->iops_off,
                       p->iops_on, p->cpu_off, p->cpu_on, p->settled_ns, p->n_writes,
                       p->probed_polling ? "yes" : "no", p->iops, p->cpu);
        if (!ok)
            g_string_append_printf(miss, " %s: the A/B finds %s, adaptive ends on %" G_GINT64_FORMAT ";",
                                   rg_loads[k], verdict_name(p->verdict), p->settled_ns);
    }
    g_test_message("realguest: %u phases, adaptive agrees with the A/B in %u, probed polling "
                   "in %u", RG_N_LOADS, agree, probed);
    if (miss->len) {
        g_test_message("verdict: FAIL:%s", miss->str);
        g_test_fail();
    }
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/e2e/realguest", test_realguest);
    return g_test_run();
}
