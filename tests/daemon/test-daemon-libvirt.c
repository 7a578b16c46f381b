/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltuned against a real libvirtd (private, in its own mount namespace)
 * and real TCG domains: discovery at start and on domain start, detach and
 * attach again by name or UUID, detach on destroy, a policy change that
 * `virsh domstats --iothread` confirms, an operator's `virsh iothreadset`
 * held rather than reverted, and a reconnect after libvirtd is killed and
 * started again.
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-libvirt.h"
#include "pt-test-qemu.h"
#include "qmp-json.h"

#include <glob.h>
#include <signal.h>
#include <string.h>
#include <stdio.h>
#include <sys/wait.h>

/* The QEMU release libvirt reports, and no exit figures for a TCG
 * (type='qemu') domain, with the reason. */
/* A daemon ticking every 500 ms on @lvd's domains, with @own lines. */
static PtTestDaemon *
daemon_up(PtTestLibvirtd *lvd, const char *own)
{
    return pt_test_daemon_up(PT_TEST_CONF_BASE, "interval = 500ms\n[targets]\nlibvirt = true\n"
                             "libvirt-uri = %s\nlibvirt-pid-dir = %s\n%s", lvd->uri,
                             lvd->pid_dir, own);
}

static void
assert_qemu_facts(PtTestDaemon *d, const char *name)
{
    g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);
    json_object *tl = pt_json_path(st, "targets");
    json_object *t = NULL;
    const char *version;
    guint major, minor, micro;

    for (size_t i = 0; i < json_object_array_length(tl); i++)
        if (g_str_equal(pt_json_path_str(json_object_array_get_idx(tl, i), "name"), name))
            t = json_object_array_get_idx(tl, i);
    g_assert_nonnull(t);
    version = pt_json_path_str(t, "qemu_version");
    g_assert_nonnull(version);
    g_assert_cmpint(sscanf(version, "%u.%u.%u", &major, &minor, &micro), ==, 3);
    g_assert_cmpuint(major, >=, 2);
    g_assert_cmpstr(pt_json_path_str(t, "exits_source"), ==, "none");
    g_assert_nonnull(strstr(pt_json_path_str(t, "exits_reason"), "type='qemu'"));
}

typedef struct {
    PtTestLibvirtd *lvd;
    const char *name;
    const char *needle;
} VirshWait;

static gboolean
domstats_has(gpointer data)
{
    VirshWait *w = data;
    g_autofree char *out = pt_test_libvirtd_virsh(w->lvd, NULL, "domstats", "--iothread",
                                                  w->name, NULL);

    return out && strstr(out, w->needle);
}

/* status shows @w->value as the external write held on the iothread. */
static gboolean
external_held(json_object *status, const PtDaemonWait *w)
{
    json_object *io = pt_test_status_iothread(status, w->target, w->iothread);
    json_object *h = io ? pt_json_path(io, "external_hold") : NULL;

    return h && !json_object_is_type(h, json_type_null) &&
           pt_json_path_int(h, "poll-max-ns") == w->value;
}

/* The daemon's metrics text (the control command, as scraped). */
static char *
metrics_text(PtTestDaemon *d)
{
    g_autoptr(json_object) r = pt_test_daemon_ok(d, "metrics", NULL);

    return g_strdup(pt_json_path_str(r, "text"));
}

typedef struct {
    PtTestDaemon *d;
    gint64 connected, connections;
} MetricWait;

static gboolean
metrics_have(gpointer data)
{
    MetricWait *w = data;
    g_autofree char *text = metrics_text(w->d);
    g_autofree char *up = g_strdup_printf("\npolltune_libvirt_connected %" G_GINT64_FORMAT "\n",
                                          w->connected);
    g_autofree char *n = g_strdup_printf("\npolltune_libvirt_connections_total %"
                                         G_GINT64_FORMAT "\n", w->connections);

    return strstr(text, up) && strstr(text, n);
}

/*
 * One QEMU is one target: the domain's own monitor socket, attached by
 * request beside the domain, reaches the same QEMU process and is refused
 * naming the domain (libvirt holds that monitor, so the connect waits in
 * QEMU's backlog; the pid answers all the same).
 */
static void
assert_monitor_refused(PtTestDaemon *d, const char *domain)
{
    g_autofree char *pattern = g_strdup_printf("/var/lib/libvirt/qemu/domain-*-%s/monitor.sock",
                                               domain);
    g_autofree char *args = NULL;
    g_autoptr(json_object) r = NULL;
    g_autoptr(GError) err = NULL;
    glob_t g = { 0 };

    if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
        globfree(&g);
        /* libvirt 11 of the QEMU 10 run keeps its state in its root. */
        if (pt_test_qemu_generation())
            g_test_message("no monitor socket at %s: not checked", pattern);
        else
            g_error("no monitor socket at %s", pattern);
        return;
    }
    args = g_strdup_printf("{\"path\": \"%s\"}", g.gl_pathv[0]);
    r = pt_test_daemon_call(d, "attach", args, &err);
    g_assert_no_error(err);
    g_assert_null(pt_json_path(r, "return"));
    g_assert_nonnull(strstr(pt_json_path_str(r, "error/desc"), g.gl_pathv[0]));
    g_assert_nonnull(strstr(pt_json_path_str(r, "error/desc"), "already attached as"));
    g_assert_nonnull(strstr(pt_json_path_str(r, "error/desc"), domain));
    globfree(&g);
}

static void
test_libvirt(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestLibvirtd) lvd = NULL;
    g_autoptr(PtTestDomain) before = NULL;
    g_autoptr(PtTestDomain) after = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *after_name = NULL;
    VirshWait vw;

    if (pt_test_skip_without_libvirtd())
        return;
    lvd = pt_test_libvirtd_start(&err);
    g_assert_no_error(err);
    before = pt_test_domain_start(lvd, &err);
    g_assert_no_error(err);

    d = daemon_up(lvd, "[policy]\ndefault = static:60000/2/2\n");

    /* A domain running at start is found, with its pid and iothreads. */
    g_assert_cmpint(pt_test_wait_target(d, before->name, 2, TRUE, 5000), >=, 0);
    {
        g_autoptr(json_object) list = pt_test_daemon_ok(d, "list", NULL);

        g_assert_cmpint(pt_json_path_int(pt_test_status_target(list, before->name), "pid"), >, 0);
    }
    /* The policy reaches QEMU through libvirt, as virsh sees it. */
    vw = (VirshWait){ lvd, before->name, "iothread.1.poll-max-ns=60000" };
    g_assert_true(pt_test_wait(domstats_has, &vw, 5000));
    vw.needle = "iothread.2.poll-grow=2";
    g_assert_true(pt_test_wait(domstats_has, &vw, 5000));
    assert_qemu_facts(d, before->name);
    /* Iothreads as virsh numbers them (iothreadset DOMAIN 2): 2 is
     * iothread2, and one the domain lacks is named with those it has. */
    {
        g_autofree char *by_number = g_strdup_printf("{\"target\": \"%s\", \"iothread\": "
                                                     "\"2\"}", before->name);
        g_autofree char *by_id = g_strdup_printf("{\"target\": \"%s\", \"iothread\": "
                                                 "\"iothread1\"}", before->name);
        g_autofree char *wrong = g_strdup_printf("{\"target\": \"%s\", \"iothread\": "
                                                 "\"7\"}", before->name);
        g_autofree char *want = g_strdup_printf("%s/7: no such iothread; %s has iothread1, "
                                                "iothread2", before->name, before->name);
        g_autoptr(json_object) x = pt_test_daemon_ok(d, "explain", by_number);
        g_autoptr(json_object) p = pt_test_daemon_ok(d, "policy-get", by_id);
        g_autoptr(json_object) e = pt_test_daemon_call(d, "explain", wrong, &err);

        g_assert_no_error(err);
        g_assert_cmpstr(pt_json_path_str(x, "iothreads/0/iothread"), ==, "iothread2");
        g_assert_cmpstr(pt_json_path_str(p, "targets/0/iothread"), ==, "iothread1");
        g_assert_cmpstr(pt_json_path_str(e, "error/class"), ==, "NotFound");
        g_assert_cmpstr(pt_json_path_str(e, "error/desc"), ==, want);
    }
    assert_monitor_refused(d, before->name);
    /* Connected once: what tells a later loss from a host without libvirt. */
    {
        MetricWait mw = { d, 1, 1 };

        g_assert_true(metrics_have(&mw));
    }

    /* An operator's virsh iothreadset is held, not reverted (it used to be
     * within a second), and status says so; the stop leaves it (below). */
    {
        g_autofree char *set = pt_test_libvirtd_virsh(lvd, NULL, "iothreadset", before->name,
                                                      "2", "--poll-max-ns", "5000",
                                                      "--poll-grow", "4", "--poll-shrink", "4",
                                                      "--live", NULL);
        PtDaemonWait hw = { d, "status", external_held, before->name, "iothread2", 5000 };
        g_autoptr(json_object) st = NULL;

        g_assert_nonnull(set);
        g_assert_true(pt_test_daemon_wait(&hw, 10000));
        /* Four ticks later libvirt still sees the operator's value. */
        st = pt_test_daemon_ok(d, "status", NULL);
        g_assert_true(pt_test_wait_ticks(d, pt_json_path_int(st, "ticks") + 4, 20000));
        vw.needle = "iothread.2.poll-max-ns=5000";
        g_assert_true(domstats_has(&vw));
    }

    /* A domain started later is found through the lifecycle event. */
    after = pt_test_domain_start(lvd, &err);
    g_assert_no_error(err);
    after_name = g_strdup(after->name);     /* outlives the domain handle */
    g_assert_cmpint(pt_test_wait_target(d, after_name, 2, TRUE, 3000), >=, 0);

    /* Detached by request, it stays detached (a listing does not bring it
     * back) until attached again by name, then by UUID. */
    {
        g_autofree char *by_name = g_strdup_printf("{\"name\": \"%s\"}", after_name);
        g_autofree char *attach_name = g_strdup_printf("{\"domain\": \"%s\"}", after_name);
        g_autofree char *attach_uuid = g_strdup_printf("{\"path\": \"%s\"}", after->uuid);
        g_autoptr(json_object) r = NULL;
        g_autoptr(json_object) e = NULL;

        json_object_put(pt_test_daemon_ok(d, "detach", by_name));
        g_assert_cmpint(pt_test_wait_target(d, after_name, 2, FALSE, 3000), >=, 0);
        r = pt_test_daemon_ok(d, "attach", attach_name);
        g_assert_cmpstr(pt_json_path_str(r, "name"), ==, after_name);
        g_assert_cmpint(pt_test_wait_target(d, after_name, 2, TRUE, 5000), >=, 0);

        json_object_put(pt_test_daemon_ok(d, "detach", by_name));
        g_assert_cmpint(pt_test_wait_target(d, after_name, 2, FALSE, 3000), >=, 0);
        json_object_put(pt_test_daemon_ok(d, "attach", attach_uuid));
        g_assert_cmpint(pt_test_wait_target(d, after_name, 2, TRUE, 5000), >=, 0);

        /* A name libvirt never ran is refused, naming it. */
        e = pt_test_daemon_call(d, "attach", "{\"domain\": \"no-such-vm\"}", &err);
        g_assert_no_error(err);
        g_assert_cmpstr(pt_json_path_str(e, "error/class"), ==, "NotFound");
        g_assert_cmpstr(pt_json_path_str(e, "error/desc"), ==,
                        "no-such-vm: no such target (attach takes a QMP socket's path, or "
                        "a libvirt domain that was detached by request)");
    }

    /* Destroyed: detached. */
    g_clear_pointer(&after, pt_test_domain_free);
    g_assert_cmpint(pt_test_wait_target(d, after_name, 2, FALSE, 3000), >=, 0);

    /* libvirtd killed and restarted: the daemon reconnects and carries on. */
    g_assert_true(pt_test_libvirtd_kill(lvd, &err));
    g_assert_no_error(err);
    {
        /* Lost after it had been connected: what PolltuneLibvirtDisconnected
         * (contrib/prometheus) alerts on. */
        MetricWait mw = { d, 0, 1 };

        g_assert_true(pt_test_wait(metrics_have, &mw, 10000));
    }
    g_usleep(1500000);
    g_assert_true(pt_test_libvirtd_restart(lvd, &err));
    g_assert_no_error(err);
    g_assert_cmpint(pt_test_wait_target(d, before->name, 2, TRUE, 40000), >=, 0);
    {
        MetricWait mw = { d, 1, 2 };

        g_assert_true(pt_test_wait(metrics_have, &mw, 10000));
    }
    {
        g_autofree char *args = g_strdup_printf(
            "{\"target\": \"%s\", \"iothread\": \"iothread1\", \"poll-max-ns\": 12345}",
            before->name);
        g_autoptr(json_object) ov = pt_test_daemon_ok(d, "override-set", args);

        g_assert_nonnull(ov);

        vw = (VirshWait){ lvd, before->name, "iothread.1.poll-max-ns=12345" };
        g_assert_true(pt_test_wait(domstats_has, &vw, 5000));
    }

    /*
     * A clean stop restores libvirt's view to the original values, even
     * with libvirtd stalled for 3 s when it begins: longer than the calls'
     * deadline (qmp-timeout, 2 s), within the stop's 5 s.  A restore that
     * kept the call deadline failed and left the VM changed.
     */
    {
        gint64 t0;
        int status = -1;

        g_assert_true(pt_test_libvirtd_signal(lvd, SIGSTOP, &err));
        g_assert_no_error(err);
        t0 = g_get_monotonic_time();
        g_assert_cmpint(kill(d->pid, SIGTERM), ==, 0);
        g_usleep(3 * G_USEC_PER_SEC);
        g_assert_true(pt_test_libvirtd_signal(lvd, SIGCONT, &err));
        g_assert_no_error(err);
        g_assert_cmpint(waitpid(d->pid, &status, 0), ==, d->pid);
        g_spawn_close_pid(d->pid);
        d->pid = 0;
        g_test_message("stopped in %" G_GINT64_FORMAT " ms",
                       (g_get_monotonic_time() - t0) / 1000);
        g_assert_cmpint(status, ==, 0);
    }
    vw.needle = "iothread.1.poll-max-ns=32768";
    g_assert_true(pt_test_wait(domstats_has, &vw, 3000));
    g_assert_cmpuint(pt_test_daemon_log_count(d, "restore applied -> 32768/0/0"), >=, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "restores did not complete in time"), ==, 0);
    /* The operator's write was the original from then on: it stays. */
    g_assert_cmpuint(pt_test_daemon_log_count(d, "5000/4/4 was written outside polltune"), ==, 1);
    vw.needle = "iothread.2.poll-max-ns=5000";
    g_assert_true(domstats_has(&vw));
    vw.needle = "iothread.2.poll-grow=4";
    g_assert_true(domstats_has(&vw));
    vw.needle = "iothread.2.poll-shrink=4";
    g_assert_true(domstats_has(&vw));
}

#define POLICY_NS "https://polltune.org/xmlns/policy/1"

/* virsh metadata DOMAIN --uri NS --key polltune --live --set/--remove:
 * libvirt puts the element in the namespace itself (an xmlns of our own
 * fails), and the domains of these tests are transient, so --live only. */
static void
metadata_set(PtTestLibvirtd *lvd, const char *domain, const char *policy)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *xml = policy ?
        g_strdup_printf("<policy>%s</policy>", policy) : NULL;
    g_autofree char *out = policy ?
        pt_test_libvirtd_virsh(lvd, &err, "metadata", domain, "--uri", POLICY_NS, "--key",
                               "polltune", "--live", "--set", xml, NULL) :
        pt_test_libvirtd_virsh(lvd, &err, "metadata", domain, "--uri", POLICY_NS, "--live",
                               "--remove", NULL);

    g_assert_no_error(err);
    g_assert_nonnull(out);
}

typedef struct {
    PtTestDaemon *d;
    const char *target;
    const char *policy;
    const char *source;
} SourceWait;

/* explain says the target's iothread1 runs @policy, which comes from @source. */
static gboolean
policy_from(gpointer data)
{
    SourceWait *w = data;
    g_autofree char *args = g_strdup_printf("{\"target\": \"%s\", \"iothread\": \"iothread1\"}",
                                            w->target);
    g_autoptr(json_object) r = pt_test_daemon_call(w->d, "explain", args, NULL);
    const char *policy = r ? pt_json_path_str(r, "return/iothreads/0/policy") : NULL;
    const char *source = r ? pt_json_path_str(r, "return/iothreads/0/policy_source/kind") : NULL;

    return g_strcmp0(policy, w->policy) == 0 && g_strcmp0(source, w->source) == 0;
}

/*
 * A policy in the domain's metadata: read at discovery, followed on
 * libvirt's metadata-change event, ranked above the configuration's rules
 * and below policy-set, dropped when removed, and garbage refused with a
 * log line naming the domain and the cause while the policy stays.
 */
static void
test_policy_metadata(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestLibvirtd) lvd = NULL;
    g_autoptr(PtTestDomain) dom = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autoptr(json_object) r = NULL;
    g_autofree char *set_args = NULL;
    g_autofree char *clear_args = NULL;
    g_autofree char *refused = NULL;
    SourceWait sw;
    VirshWait vw;

    if (pt_test_skip_without_libvirtd())
        return;
    lvd = pt_test_libvirtd_start(&err);
    g_assert_no_error(err);
    dom = pt_test_domain_start(lvd, &err);
    g_assert_no_error(err);
    /* Set before the daemon starts: found at discovery. */
    metadata_set(lvd, dom->name, "static:70000/0/0");

    d = daemon_up(lvd, "[policy]\ndefault = static:60000/0/0\n"
                  "[rule *]\npolicy = static:50000/0/0\n");
    sw = (SourceWait){ d, dom->name, "static:70000/0/0", "libvirt-metadata" };
    g_assert_true(pt_test_wait(policy_from, &sw, 15000));
    vw = (VirshWait){ lvd, dom->name, "iothread.1.poll-max-ns=70000" };
    g_assert_true(pt_test_wait(domstats_has, &vw, 10000));
    r = pt_test_daemon_ok(d, "policy-get", NULL);
    g_assert_cmpstr(pt_json_path_str(r, "rules/0/glob"), ==, dom->name);
    g_assert_cmpstr(pt_json_path_str(r, "rules/0/source"), ==, "libvirt-metadata");
    g_assert_cmpstr(pt_json_path_str(r, "rules/1/source"), ==, "config");
    g_clear_pointer(&r, json_object_put);

    /* Changed on the running domain: the event brings it. */
    metadata_set(lvd, dom->name, "static:80000/0/0");
    sw.policy = "static:80000/0/0";
    g_assert_true(pt_test_wait(policy_from, &sw, 15000));
    vw.needle = "iothread.1.poll-max-ns=80000";
    g_assert_true(pt_test_wait(domstats_has, &vw, 10000));

    /* policy-set from polltunectl ranks above the metadata. */
    set_args = g_strdup_printf("{\"target\": \"%s\", \"policy\": \"static:40000/0/0\"}",
                               dom->name);
    clear_args = g_strdup_printf("{\"target\": \"%s\"}", dom->name);
    json_object_put(pt_test_daemon_ok(d, "policy-set", set_args));
    sw = (SourceWait){ d, dom->name, "static:40000/0/0", "policy-set" };
    g_assert_true(pt_test_wait(policy_from, &sw, 15000));
    vw.needle = "iothread.1.poll-max-ns=40000";
    g_assert_true(pt_test_wait(domstats_has, &vw, 10000));
    json_object_put(pt_test_daemon_ok(d, "policy-clear", clear_args));
    sw = (SourceWait){ d, dom->name, "static:80000/0/0", "libvirt-metadata" };
    g_assert_true(pt_test_wait(policy_from, &sw, 15000));
    vw.needle = "iothread.1.poll-max-ns=80000";
    g_assert_true(pt_test_wait(domstats_has, &vw, 10000));

    /* Garbage is refused, naming the domain and the cause; the policy stays. */
    metadata_set(lvd, dom->name, "static:fast");
    refused = g_strdup_printf("%s: libvirt metadata <polltune:policy> refused", dom->name);
    g_assert_true(pt_test_wait_log(d, refused, 1, 15000));
    g_assert_cmpuint(pt_test_daemon_log_count(d, "static:fast"), >=, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "the policy stays static:80000/0/0"), ==, 1);
    /* Three ticks later, still the metadata's last good policy. */
    r = pt_test_daemon_ok(d, "status", NULL);
    g_assert_true(pt_test_wait_ticks(d, pt_json_path_int(r, "ticks") + 3, 15000));
    g_clear_pointer(&r, json_object_put);
    g_assert_true(policy_from(&sw));
    g_assert_true(domstats_has(&vw));

    /* Removed: the configuration's rule applies again. */
    metadata_set(lvd, dom->name, NULL);
    sw = (SourceWait){ d, dom->name, "static:50000/0/0", "config" };
    g_assert_true(pt_test_wait(policy_from, &sw, 15000));
    vw.needle = "iothread.1.poll-max-ns=50000";
    g_assert_true(pt_test_wait(domstats_has, &vw, 10000));
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
}

/* The device key status shows for iothread1 (vda's), as @key_wanted. */
static const char *key_wanted;

static gboolean
vda_keyed(json_object *st, const PtDaemonWait *w)
{
    json_object *io = pt_test_status_iothread(st, w->target, "iothread1");

    return io && g_strcmp0(pt_json_path_str(io, "device_key"), key_wanted) == 0;
}

/*
 * virsh blockcopy --pivot puts another disk behind vda while the domain
 * runs: the device key of vda's iothread follows, from the block job's
 * event, so the workload memory does not recall the old disk's winners.
 * Before the event was heard the key kept the old <source> until the
 * domain was listed again (a start, a reconnect).
 */
static void
test_blockcopy_pivot(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtTestLibvirtd) lvd = NULL;
    g_autoptr(PtTestDomain) dom = NULL;
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *disk = NULL;
    g_autofree char *copy = NULL;
    g_autofree char *key = NULL;
    g_autofree char *out = NULL;
    PtDaemonWait w = { .check = vda_keyed };

    if (pt_test_skip_without_libvirtd())
        return;
    lvd = pt_test_libvirtd_start(&err);
    g_assert_no_error(err);
    dom = pt_test_domain_start(lvd, &err);
    g_assert_no_error(err);
    disk = g_strdup_printf("%s/%s.raw", lvd->dir, dom->name);
    copy = g_strdup_printf("%s/%s-copy.raw", lvd->dir, dom->name);
    d = daemon_up(lvd, "[policy]\ndefault = observe\n");
    w.d = d;
    w.target = dom->name;
    key = g_strconcat("vda=", disk, NULL);
    key_wanted = key;
    g_assert_true(pt_test_daemon_wait(&w, 15000));

    out = pt_test_libvirtd_virsh(lvd, &err, "blockcopy", dom->name, "vda", copy, "--format",
                                 "raw", "--wait", "--pivot", NULL);
    g_assert_no_error(err);
    g_free(key);
    key = g_strconcat("vda=", copy, NULL);
    key_wanted = key;
    g_assert_true(pt_test_daemon_wait(&w, 15000));
    g_test_message("vda keyed by the copy %" G_GINT64_FORMAT " ms after the pivot", w.took_ms);
    key_wanted = NULL;
    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
}

int
main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/libvirt/discover-apply-reconnect", test_libvirt);
    g_test_add_func("/daemon/libvirt/policy-metadata", test_policy_metadata);
    g_test_add_func("/daemon/libvirt/blockcopy-pivot", test_blockcopy_pivot);
    return g_test_run();
}
