/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-explain: the read-only view of the engine.  Asking must change
 * nothing (two engines, one asked every tick, decide alike), and the view
 * must show what the engine measured and what holds it back.
 */
#include <math.h>
#include <string.h>

#include "policy-explain.h"

/* Polling at >= 18 us doubles nothing but lifts IOPS by half (seed 001). */
static PolicyMetrics
measure(const PolicyTriple *t, gint64 tick)
{
    PolicyMetrics m = { 0 };
    gboolean catches = t->poll_max_ns >= 18000;
    double iops = catches ? 37000 : 25000;

    m.when_ms = tick * 1000;
    m.interval_ns = 1000000000;
    m.triple = *t;
    m.have_io = TRUE;
    m.rd_iops = iops;
    m.lat_mean_ns = 1e9 / iops;
    m.queue_depth = 1.0;
    m.have_cpu = TRUE;
    m.cpu_pct = catches ? 100 : 20;
    m.blocks_per_op = catches ? 0.1 : 2.0;
    return m;
}

typedef struct {
    PolicyEngine *e;
    PolicyTriple cur;
    GArray *hist;
} Run;

/* One tick; returns the decision's "triple cause reason" for comparison. */
static char *
run_tick(Run *r, const PolicyHost *host, gint64 tick)
{
    PolicyMetrics m = measure(&r->cur, tick);
    PolicyIothreadInput in;
    g_autoptr(GPtrArray) ds = NULL;
    const PolicyDecision *d;

    g_array_append_val(r->hist, m);
    in = (PolicyIothreadInput){ "vm", "iothread0", r->cur, (PolicyMetrics *)r->hist->data,
                                r->hist->len };
    ds = policy_engine_tick(r->e, host, &in, 1, tick * 1000);
    d = ds->pdata[0];
    if (d->change && d->apply)
        r->cur = d->triple;
    return g_strdup_printf("%d %" G_GUINT64_FORMAT " %s %s", d->change, d->triple.poll_max_ns,
                           policy_cause_to_string(d->cause), d->reason);
}

static PolicyExplain *
run_explain(Run *r, const PolicyHost *host, gint64 now_ms)
{
    PolicyExplainContext ctx = { host, 0.0, now_ms + 1000 };
    PolicyIothreadInput in = { "vm", "iothread0", r->cur, (PolicyMetrics *)r->hist->data,
                               r->hist->len };

    return policy_engine_explain(r->e, &ctx, &in, now_ms);
}

static void
test_explain(void)
{
    g_autoptr(PolicyConfig) cfg = policy_config_new();
    Run a = { 0 }, b = { 0 };
    PolicyHost host = { .n_cpus = 4, .have_psi = TRUE };
    g_autoptr(PolicyExplain) x = NULL;
    const PolicyGuardView *g;
    guint chosen = 0;
    gint64 tick;

    g_assert_true(policy_spec_parse("adaptive:latency", &cfg->default_spec, NULL));
    a.e = policy_engine_new(cfg, NULL);
    b.e = policy_engine_new(cfg, NULL);
    a.cur = b.cur = POLICY_TRIPLE_QEMU_DEFAULT;
    a.hist = g_array_new(FALSE, FALSE, sizeof(PolicyMetrics));
    b.hist = g_array_new(FALSE, FALSE, sizeof(PolicyMetrics));

    /* Before the first tick the iothread is new to the engine. */
    x = run_explain(&a, &host, 0);
    g_assert_cmpstr(x->phase, ==, "new");
    g_assert_false(x->known);
    g_clear_pointer(&x, policy_explain_free);

    for (tick = 1; tick <= 30; tick++) {
        g_autofree char *da = NULL, *db = NULL;

        host.when_ms = tick * 1000;
        g_clear_pointer(&x, policy_explain_free);
        x = run_explain(&a, &host, tick * 1000);
        da = run_tick(&a, &host, tick);
        db = run_tick(&b, &host, tick);
        g_assert_cmpstr(da, ==, db);
    }
    g_clear_pointer(&x, policy_explain_free);
    x = run_explain(&a, &host, tick * 1000);
    /* Settled on the window that catches the completions. */
    g_assert_cmpstr(x->phase, ==, "steady");
    g_assert_cmpuint(a.cur.poll_max_ns, >=, 18000);
    g_assert_cmpuint(x->n_candidates, >=, 3);
    g_assert_cmpstr(x->candidates[0].role, ==, "settled");
    for (guint i = 0; i < x->n_candidates; i++) {
        const PolicyCandidateView *c = &x->candidates[i];

        g_assert_cmpuint(c->n, >, 0);
        g_assert_true(isfinite(c->score));
        g_assert_cmpint(c->measured_ms, >, 0);
        g_assert_cmpint(c->measured_ms, <=, tick * 1000);
        if (c->chosen) {
            chosen++;
            g_assert_true(policy_triple_equal(&c->triple, &a.cur));
        }
    }
    g_assert_cmpuint(chosen, ==, 1);
    g_assert_true(x->have_benefit);
    g_assert_cmpfloat(x->gain, >, 0);
    /* Next look: the periodic revalidation of the settled choice. */
    g_assert_cmpint(x->next_look_ms, >, tick * 1000);
    g_assert_nonnull(strstr(x->next_look, "revalidation"));
    g = &x->guards[POLICY_GUARD_PSI];
    g_assert_true(g->available);
    g_assert_false(g->holds);

    /* The host runs short of CPU: polling is cut and probes held off. */
    host.psi_some_pct = 3 * cfg->psi_some_limit;
    for (gint64 end = tick + 3; tick < end; tick++) {
        g_autofree char *da = NULL, *db = NULL;

        host.when_ms = tick * 1000;
        da = run_tick(&a, &host, tick);
        db = run_tick(&b, &host, tick);
        g_assert_cmpstr(da, ==, db);
    }
    g_clear_pointer(&x, policy_explain_free);
    x = run_explain(&a, &host, tick * 1000);
    g_assert_cmpuint(a.cur.poll_max_ns, ==, 0);
    g = &x->guards[POLICY_GUARD_PSI];
    g_assert_true(g->holds);
    g_assert_cmpfloat(g->value, ==, 3 * cfg->psi_some_limit);
    g_assert_cmpfloat(g->limit, ==, cfg->psi_some_limit);
    g = &x->guards[POLICY_GUARD_HOLDOFF];
    g_assert_true(g->holds);
    g_assert_cmpfloat(g->limit, ==, cfg->contention_holdoff_ms / 1000.0);
    g_assert_cmpfloat(g->value, >, 0);
    g_assert_cmpfloat(g->value, <=, g->limit);
    g_assert_cmpint(g->until_ms, ==, tick * 1000 + (gint64)(g->value * 1000));
    /* vCPUs and the iothread itself waiting for a CPU, each against its limit. */
    {
        PolicyMetrics *last = &g_array_index(a.hist, PolicyMetrics, a.hist->len - 1);
        g_autoptr(PolicyExplain) y = NULL;

        host.have_vcpu_delay = TRUE;
        host.vcpu_run_delay_pct = 2 * cfg->vcpu_delay_limit;
        last->run_delay_pct = 3 * cfg->iothread_delay_limit;
        y = run_explain(&a, &host, tick * 1000);
        g = &y->guards[POLICY_GUARD_VCPU_DELAY];
        g_assert_true(g->holds);
        g_assert_cmpfloat(g->value, ==, 2 * cfg->vcpu_delay_limit);
        g_assert_cmpfloat(g->limit, ==, cfg->vcpu_delay_limit);
        g = &y->guards[POLICY_GUARD_IOTHREAD_DELAY];
        g_assert_true(g->holds);
        g_assert_cmpfloat(g->value, ==, 3 * cfg->iothread_delay_limit);
        g_assert_cmpfloat(g->limit, ==, cfg->iothread_delay_limit);
        /* Under a policy that is not adaptive none of them holds back. */
        g_assert_true(policy_spec_parse("static:50000/0/0", &cfg->default_spec, NULL));
        g_clear_pointer(&y, policy_explain_free);
        y = run_explain(&a, &host, tick * 1000);
        g_assert_false(y->guards[POLICY_GUARD_VCPU_DELAY].holds);
        g_assert_false(y->guards[POLICY_GUARD_PSI].holds);
        g_assert_nonnull(strstr(y->guards[POLICY_GUARD_PSI].detail, "not adaptive"));
        g_assert_cmpstr(y->phase, ==, "fixed");
    }
    g_assert_cmpstr(policy_guard_to_string(POLICY_GUARD_HOLDOFF), ==, "contention-holdoff");
    g_assert_cmpint(policy_guard_from_string("budget"), ==, POLICY_GUARD_BUDGET);
    g_assert_cmpint(policy_guard_from_string("nope"), ==, POLICY_GUARD_INVALID);

    policy_engine_free(a.e);
    policy_engine_free(b.e);
    g_array_unref(a.hist);
    g_array_unref(b.hist);
}

/*
 * The adaptive phases by name: an idle iothread waits for I/O, and after
 * its exploration the write budget shows what the writes used.
 */
static void
test_explain_idle_and_budget(void)
{
    g_autoptr(PolicyConfig) cfg = policy_config_new();
    g_autoptr(PolicyEngine) e = NULL;
    g_autoptr(GArray) hist = g_array_new(FALSE, FALSE, sizeof(PolicyMetrics));
    PolicyHost host = { .n_cpus = 4 };
    PolicyTriple cur = POLICY_TRIPLE_QEMU_DEFAULT;
    guint writes = 0;

    g_assert_true(policy_spec_parse("adaptive", &cfg->default_spec, NULL));
    e = policy_engine_new(cfg, NULL);
    for (gint64 tick = 1; tick <= 12; tick++) {
        PolicyMetrics m = measure(&cur, tick);
        PolicyIothreadInput in;
        g_autoptr(GPtrArray) ds = NULL;
        const PolicyDecision *d;

        /* Idle for the first four ticks, as a VM that boots. */
        if (tick <= 4)
            m.rd_iops = 2;
        g_array_append_val(hist, m);
        in = (PolicyIothreadInput){ "vm", "iothread0", cur, (PolicyMetrics *)hist->data,
                                    hist->len };
        ds = policy_engine_tick(e, &host, &in, 1, tick * 1000);
        d = ds->pdata[0];
        if (d->change && d->apply) {
            cur = d->triple;
            writes++;
        }
        if (tick == 3) {
            PolicyExplainContext ctx = { &host, 0.0, tick * 1000 + 1000 };
            g_autoptr(PolicyExplain) x = policy_engine_explain(e, &ctx, &in, tick * 1000);

            g_assert_cmpstr(x->phase, ==, "idle");
            g_assert_cmpint(x->next_look_ms, ==, G_MININT64);
            g_assert_nonnull(strstr(x->next_look, "I/O again"));
            g_assert_cmpuint(cur.poll_max_ns, ==, 0);
        }
    }
    {
        PolicyIothreadInput in = { "vm", "iothread0", cur, (PolicyMetrics *)hist->data,
                                   hist->len };
        PolicyExplainContext ctx = { &host, 0.0, 13000 };
        g_autoptr(PolicyExplain) x = policy_engine_explain(e, &ctx, &in, 12000);
        const PolicyGuardView *g = &x->guards[POLICY_GUARD_WRITE_BUDGET];

        /* The idle write, two probes and perhaps a return, all in 30 s. */
        g_assert_cmpuint(writes, >=, 3);
        g_assert_true(g->available);
        g_assert_cmpfloat(g->value, ==, writes);
        g_assert_cmpfloat(g->limit, ==, 4);
        g_assert_true(g->holds);
        g_assert_cmpint(g->until_ms, >, 12000);
        g_assert_cmpstr(policy_guard_to_string(POLICY_GUARD_WRITE_BUDGET), ==, "write-budget");
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/policy/explain/view", test_explain);
    g_test_add_func("/policy/explain/idle-and-write-budget", test_explain_idle_and_budget);
    return g_test_run();
}
