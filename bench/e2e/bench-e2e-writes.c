/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Writes per iothread per workload phase, as QEMU itself saw them.
 *
 * The test guest runs idle, QD1, QD16, idle under polltuned with
 * adaptive:latency and the contention guards off, so that only the
 * policy's own reading of a noisy TCG guest decides.  QEMU logs every
 * qom-set it receives (trace event qmp_enter_qom_set, log backend, with
 * -msg timestamp=on each line carries the host's wall clock); the guest's
 * serial phase markers, stamped with the same clock on arrival, cut that
 * log into phases.  Counting in QEMU rather than asking the daemon checks
 * what really reached the iothreads, and needs nothing between the daemon
 * and the monitor (the daemon reads QEMU's pid through it).
 *
 * The promise checked is docs/POLICY.md's: an exploration writes at most
 * three times (probe, probe, winner), it starts on a workload change or
 * every `revalidate`, and otherwise nothing is written.  The program prints
 * the table and a verdict line, and fails (exit status 1) when the
 * promise is not kept; a missing QEMU or guest build is a skip.  It is a
 * benchmark rather than a test while the policy misses on some runs
 * (docs/BENCHMARKS.md).
 */
#include "e2e-direct.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define WRITES_PHASES "idle:10,qd1:40,qd16:40,idle:10"
#define WRITES_N_PHASES 4
/* docs/POLICY.md, "Writes": probe, probe, winner. */
#define WRITES_PER_CHANGE 3
/* The default `revalidate`, set explicitly so the bound below does not
 * move with the default. */
#define WRITES_REVALIDATE_MS 300000
/* The daemon writes a triple as one qom-set per property, back to back
 * in one tick; qom-sets on one iothread closer than half the 1 s interval
 * are one write.  Two decisions on one iothread are a tick apart. */
#define WRITES_GROUP_MS 500
/* An exploration's writes come within this long of its first: each of
 * the two probes runs at most 3 ticks (docs/POLICY.md, "Segments and
 * evidence") plus up to 2 settling ticks after its write, and the winner
 * follows the second at once: 10 ticks of 1 s (16 when probes ran up to
 * 6 ticks), with room for slow ticks on a loaded host.  A write later in
 * the same phase is a new exploration in a steady phase. */
#define WRITES_EXPLORATION_MS 20000
/* Boot under TCG on a busy host took up to 15 s; the schedule is 100 s. */
#define WRITES_DONE_WAIT_MS 400000

static const char *const writes_iothreads[] = { "iot0", "iot1" };
#define WRITES_N_IOTHREADS G_N_ELEMENTS(writes_iothreads)

typedef struct {
    gint64 ms;          /* host wall clock, as logged by QEMU */
    char *iothread;
    char *property;
    gint64 value;
} QomSet;

static void
qom_set_clear(gpointer p)
{
    QomSet *s = p;

    g_free(s->iothread);
    g_free(s->property);
}

/* The iothread a qom-set path names: "/objects/ID" as the daemon writes
 * it, or the partial path "ID" that QOM also resolves. */
static char *
qom_path_iothread(const char *path)
{
    const char *slash = strrchr(path, '/');

    return g_strdup(slash ? slash + 1 : path);
}

/*
 * Parse QEMU's trace log.  A line of the log backend with timestamps is
 *   PID@SEC.USEC:qmp_enter_qom_set {"path": ..., "property": ..., "value": N}
 * (checked on QEMU 7.2); other lines (QEMU's own messages) are skipped.
 */
static GArray *
trace_qom_sets(const char *path)
{
    g_autofree char *text = NULL;
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) lines = NULL;
    GArray *out = g_array_new(FALSE, TRUE, sizeof(QomSet));

    g_array_set_clear_func(out, qom_set_clear);
    g_assert_true(g_file_get_contents(path, &text, NULL, &err));
    g_assert_no_error(err);
    lines = g_strsplit(text, "\n", -1);
    for (guint i = 0; lines[i]; i++) {
        const char *at = strchr(lines[i], '@');
        const char *ev = strstr(lines[i], ":qmp_enter_qom_set ");
        g_autoptr(json_object) args = NULL;
        json_object *v = NULL;
        QomSet s = { 0 };
        char *end = NULL;
        double sec;

        if (!at || !ev || at > ev)
            continue;
        sec = g_ascii_strtod(at + 1, &end);
        if (end != ev)
            g_error("%s: line %u: no SEC.USEC timestamp (is -msg timestamp=on given?): %s",
                    path, i + 1, lines[i]);
        args = json_tokener_parse(ev + strlen(":qmp_enter_qom_set "));
        if (!args || !json_object_is_type(args, json_type_object))
            g_error("%s: line %u: arguments are not a JSON object: %s", path, i + 1, lines[i]);
        if (!pt_json_path_str(args, "path"))
            g_error("%s: line %u: no path: %s", path, i + 1, lines[i]);
        s.ms = (gint64)(sec * 1000.0);
        s.iothread = qom_path_iothread(pt_json_path_str(args, "path"));
        s.property = g_strdup(pt_json_path_str(args, "property"));
        if (json_object_object_get_ex(args, "value", &v))
            s.value = json_object_get_int64(v);
        g_array_append_val(out, s);
    }
    return out;
}

/* The bucket of time @ms: 0 before the first phase (boot), 1 + p inside
 * phase p (from its PT-PHASE-BEGIN to the next one's), and 1 + n after
 * the last phase's PT-PHASE. */
static guint
phase_bucket(GArray *phases, gint64 ms)
{
    guint b = 0;

    for (guint p = 0; p < phases->len; p++)
        if (ms >= g_array_index(phases, GuestPhase, p).begin_host_ms)
            b = p + 1;
    if (b == phases->len && ms > g_array_index(phases, GuestPhase, phases->len - 1).end_host_ms)
        b = phases->len + 1;
    return b;
}

static void
string_free(gpointer s)
{
    g_string_free(s, TRUE);
}

/* Where bucket @b's times count from: its phase's start; boot counts
 * from the first phase's, "after" from the last one's end. */
static gint64
bucket_start_ms(GArray *phases, guint b)
{
    if (b == 0)
        return g_array_index(phases, GuestPhase, 0).begin_host_ms;
    if (b > phases->len)
        return g_array_index(phases, GuestPhase, phases->len - 1).end_host_ms;
    return g_array_index(phases, GuestPhase, b - 1).begin_host_ms;
}

static char *
writes_daemon_conf(const char *dir)
{
    g_autofree char *targets = e2e_direct_targets(dir);

    return g_strdup_printf("interval = 1s\nmetrics-listen =\n"
                           "[targets]\n%s"
                           "[policy]\ndefault = adaptive:latency\n"
                           "psi-limit = 0\nvcpu-delay-limit = 0\niothread-delay-limit = 0\n"
                           "revalidate = %ds\n",
                           targets, WRITES_REVALIDATE_MS / 1000);
}

/* The daemon's own account of @iothread's last decisions, for the log:
 * it says why each write was made. */
static void
print_decisions(PtTestDaemon *d, const char *iothread)
{
    g_autofree char *args = g_strdup_printf("{\"target\": \"pt-e2e\", \"iothread\": \"%s\","
                                            " \"ticks\": 1}", iothread);
    g_autoptr(json_object) ret = pt_test_daemon_ok(d, "show", args);
    json_object *dec = pt_json_path(ret, "iothreads/0/decisions");

    for (size_t i = 0; dec && i < json_object_array_length(dec); i++) {
        json_object *o = json_object_array_get_idx(dec, i);

        g_test_message("  %s %" G_GINT64_FORMAT " %-10s -> %" G_GINT64_FORMAT "/%" G_GINT64_FORMAT
                       "/%" G_GINT64_FORMAT " %s", iothread, pt_json_path_int(o, "ts_ms"),
                       pt_json_path_str(o, "cause") ? pt_json_path_str(o, "cause") : "-",
                       pt_json_path_int(o, "new/poll-max-ns"), pt_json_path_int(o, "new/poll-grow"),
                       pt_json_path_int(o, "new/poll-shrink"), pt_json_path_str(o, "reason"));
    }
}

static void
test_writes_per_phase(void)
{
    g_autofree char *why = NULL;
    g_autofree char *dir = NULL;
    g_autofree char *trace = NULL;
    g_autofree char *conf = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(E2eDirectVm) dv = NULL;
    g_autoptr(GArray) phases = NULL;
    g_autoptr(GArray) sets = NULL;
    /* Per bucket (boot, the phases, after) and iothread: the writes of the
     * exploration the change started, and those after it. */
    guint change[WRITES_N_PHASES + 2][WRITES_N_IOTHREADS] = { { 0 } };
    guint steady[WRITES_N_PHASES + 2][WRITES_N_IOTHREADS] = { { 0 } };
    /* Per bucket, when each write came: "iot0@+6.0", seconds from the
     * phase's start (boot: from the first phase's, negative). */
    g_autoptr(GPtrArray) at = g_ptr_array_new_with_free_func(string_free);
    gint64 first_ms[WRITES_N_PHASES + 2][WRITES_N_IOTHREADS];
    gint64 last_ms[WRITES_N_IOTHREADS];
    guint n_writes = 0;
    g_autoptr(GString) table = g_string_new(NULL);
    g_autoptr(GString) over = g_string_new(NULL);

    if (!guest_build(&why)) {
        g_test_skip(why);
        return;
    }
    dir = e2e_vm_dir_new();
    trace = g_build_filename(dir, "qemu.trace", NULL);
    conf = writes_daemon_conf(dir);
    d = e2e_daemon_start(conf);
    {
        const char *const extra[] = { "-trace", "qmp_enter_qom_set", "-D", trace,
                                      "-msg", "timestamp=on", NULL };

        /* At QEMU's own defaults, as libvirt starts a domain. */
        dv = e2e_direct_vm_start(dir, WRITES_PHASES, "tcg", 0, extra);
    }
    e2e_direct_vm_connect(dv);
    g_assert_cmpint(e2e_wait_attached(d, "pt-e2e", 20000), >=, 0);
    if (guest_serial_wait(dv->vm.serial, "PT-DONE ", WRITES_DONE_WAIT_MS, NULL) < 0) {
        g_autofree char *dump = guest_serial_dump(dv->vm.serial);

        g_error("the guest did not finish its schedule; serial so far:\n%s", dump);
    }
    phases = guest_serial_phases(dv->vm.serial);
    if (phases->len != WRITES_N_PHASES) {
        g_autofree char *dump = guest_serial_dump(dv->vm.serial);

        g_error("the guest reported %u phases, not %u; serial:\n%s", phases->len,
                WRITES_N_PHASES, dump);
    }
    /* Read before the daemon stops: its restore writes are not the
     * policy's. */
    sets = trace_qom_sets(trace);
    print_decisions(d, "iot0");
    print_decisions(d, "iot1");

    for (guint b = 0; b < WRITES_N_PHASES + 2; b++)
        g_ptr_array_add(at, g_string_new(NULL));
    for (guint it = 0; it < WRITES_N_IOTHREADS; it++) {
        last_ms[it] = -1;
        for (guint b = 0; b < WRITES_N_PHASES + 2; b++)
            first_ms[b][it] = -1;
    }
    for (guint k = 0; k < sets->len; k++) {
        QomSet *s = &g_array_index(sets, QomSet, k);
        guint it, b;

        for (it = 0; it < WRITES_N_IOTHREADS; it++)
            if (g_str_equal(s->iothread, writes_iothreads[it]))
                break;
        if (it == WRITES_N_IOTHREADS)
            g_error("%s: qom-set on %s, which is not an iothread of the guest", trace,
                    s->iothread);
        if (last_ms[it] >= 0 && s->ms - last_ms[it] < WRITES_GROUP_MS) {
            last_ms[it] = s->ms;
            continue;
        }
        last_ms[it] = s->ms;
        n_writes++;
        b = phase_bucket(phases, s->ms);
        g_string_append_printf(at->pdata[b], " %s@%+.1f", writes_iothreads[it],
                               (s->ms - bucket_start_ms(phases, b)) / 1000.0);
        if (first_ms[b][it] < 0)
            first_ms[b][it] = s->ms;
        if (s->ms - first_ms[b][it] <= WRITES_EXPLORATION_MS)
            change[b][it]++;
        else
            steady[b][it]++;
    }

    g_string_append_printf(table, "writes per iothread per phase, from QEMU's qom-set trace "
                           "(%u qom-sets, %u writes)\n", sets->len, n_writes);
    g_string_append(table, "  phase        dur_s  guest_iops  iot0 change/steady  iot1 change/steady"
                           "  writes at (s into the phase)\n");
    for (guint b = 0; b < WRITES_N_PHASES + 2; b++) {
        g_autofree char *name = NULL;
        double dur = 0, iops = 0;
        guint bound_change, bound_steady;

        if (b == 0) {
            name = g_strdup("boot");
        } else if (b == WRITES_N_PHASES + 1) {
            name = g_strdup("after");
        } else {
            const GuestPhase *p = &g_array_index(phases, GuestPhase, b - 1);

            name = g_strdup_printf("%u:%s", p->idx, p->name);
            dur = p->dur_ms / 1000.0;
            iops = p->iops;
        }
        g_string_append_printf(table, "  %-11s %6.1f %11.0f  %11u/%-6u  %11u/%-6u %s\n", name, dur,
                               iops, change[b][0], steady[b][0], change[b][1], steady[b][1],
                               ((GString *)at->pdata[b])->str);
        /* Boot (the first measurement after attaching) and every phase
         * start one exploration; after it, one more per revalidation
         * period the phase lasts.  Nothing is written after the schedule. */
        bound_change = b == WRITES_N_PHASES + 1 ? 0 : WRITES_PER_CHANGE;
        bound_steady = b == WRITES_N_PHASES + 1 ? 0
                     : WRITES_PER_CHANGE * (guint)(dur * 1000 / WRITES_REVALIDATE_MS);
        for (guint it = 0; it < WRITES_N_IOTHREADS; it++) {
            if (change[b][it] > bound_change)
                g_string_append_printf(over, " %s/%s: %u writes at the change, at most %u;",
                                       name, writes_iothreads[it], change[b][it], bound_change);
            if (steady[b][it] > bound_steady)
                g_string_append_printf(over, " %s/%s: %u writes in the steady phase, at most %u;",
                                       name, writes_iothreads[it], steady[b][it], bound_steady);
        }
    }
    g_test_message("%s", table->str);
    /* Without one write at least (the first decision moves iot0 off
     * QEMU's default) the trace would be proving nothing. */
    g_assert_cmpuint(n_writes, >=, 1);
    if (over->len) {
        g_test_message("verdict: FAIL, more writes than the policy promises:%s", over->str);
        g_test_fail();
    } else {
        g_test_message("verdict: PASS, at most %u writes per phase change and none in a "
                       "steady phase", WRITES_PER_CHANGE);
    }

    g_clear_pointer(&dv, e2e_direct_vm_free);
    e2e_reap_forget(d->pid);
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    e2e_vm_dir_remove(dir);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/bench/e2e/writes-per-phase", test_writes_per_phase);
    return g_test_run();
}
