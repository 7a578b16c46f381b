/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-guard: the host-wide guard rails, applied to adaptive proposals
 * after every iothread has made its own.
 *
 *  - Contention: when the host is short of CPU (PSI, vCPU or iothread
 *    run-queue wait), polling is cut, first where it buys least per core, and
 *    no polling probe starts until a hold-off expires.  Where exit counters
 *    exist, polling is weighed on whole-VM CPU: polling that suppresses
 *    kicks saves the vCPUs an exit each, and polling that saves more vCPU
 *    time than it burns eases the contention, so it is not cut, and its
 *    probe (a measurement of exactly that) is not deferred.
 *  - Budget: polling CPU across the host is kept within budget_cores, given
 *    to the iothreads with the highest measured gain per polling core.
 */
#include <math.h>
#include <stdlib.h>

#include "policy-private.h"

/*
 * On a contended host polling that costs whole-VM CPU is kept only where
 * each net core it costs buys more than GUARD_KEEP_GAIN_PER_CORE of the
 * objective (natural-log units): 1.0 is 2.7 times the I/O per core, ten
 * times the weight the balanced objective puts on a core (0.10), so the
 * guard still trades I/O for the host's CPU wherever the trade is close.
 * The full matrix first showed the need: the guard cut a window that cost
 * 0.009 cores net for a gain of 4.7 (three disks on one iothread).  That
 * gain was the simulator's (a shallow disk that starved without polling,
 * fixed in the simulator since); the rule stands on its own:
 * contention-keeps-polling-worth-its-cost, 25 times the IOPS for 0.01
 * core.  The QD1 cells where the guard gives the guest's app its core
 * back gain about 0.4 per net core, and are still cut.
 */
#define GUARD_KEEP_GAIN_PER_CORE 1.0

PolicyGuardCheck
policy_guard_dwell(const PolicyConfig *cfg, const PolicyIothreadState *st, gint64 now_ms)
{
    PolicyGuardCheck g = { .limit = cfg->min_dwell_ms / 1000.0, .until_ms = G_MININT64 };

    if (!st || st->last_write_ms == G_MININT64)
        return g;
    g.available = TRUE;
    g.value = (now_ms - st->last_write_ms) / 1000.0;
    g.holds = now_ms - st->last_write_ms < cfg->min_dwell_ms;
    if (g.holds)
        g.until_ms = st->last_write_ms + cfg->min_dwell_ms;
    return g;
}

PolicyGuardCheck
policy_guard_threshold(gboolean have, double value, double limit)
{
    PolicyGuardCheck g = { .available = have, .value = have ? value : 0, .limit = limit,
                           .until_ms = G_MININT64 };

    g.holds = have && limit > 0 && value >= limit;
    return g;
}

PolicyGuardCheck
policy_guard_holdoff(const PolicyConfig *cfg, const PolicyIothreadState *st, gint64 now_ms)
{
    PolicyGuardCheck g = { .available = TRUE, .limit = cfg->contention_holdoff_ms / 1000.0,
                           .until_ms = G_MININT64 };

    if (st && st->holdoff_until_ms != G_MININT64 && now_ms < st->holdoff_until_ms) {
        g.holds = TRUE;
        g.value = (st->holdoff_until_ms - now_ms) / 1000.0;
        g.until_ms = st->holdoff_until_ms;
    }
    return g;
}

PolicyGuardCheck
policy_guard_budget_check(const PolicyConfig *cfg, double used, double cost)
{
    PolicyGuardCheck g = { .available = TRUE, .value = used + cost, .limit = cfg->budget_cores,
                           .until_ms = G_MININT64 };

    g.holds = cfg->budget_cores > 0 && used + cost > cfg->budget_cores * 1.0001;
    return g;
}

void
policy_writes_note(PolicyIothreadState *st, gint64 now_ms)
{
    st->write_log[st->write_log_next] = now_ms;
    st->write_log_next = (st->write_log_next + 1) % POLICY_WRITES_LONG_MAX;
}

/* The writes logged at or after @since_ms. */
static guint
writes_since(const PolicyIothreadState *st, gint64 since_ms)
{
    guint n = 0;

    for (guint i = 0; i < POLICY_WRITES_LONG_MAX; i++)
        n += st->write_log[i] != G_MININT64 && st->write_log[i] >= since_ms;
    return n;
}

/* When at most @keep of the logged writes are younger than @window_ms. */
static gint64
writes_until(const PolicyIothreadState *st, guint keep, gint64 window_ms)
{
    g_autofree gint64 *t = g_memdup2(st->write_log, sizeof(st->write_log));
    guint n = POLICY_WRITES_LONG_MAX;

    /* Newest first; the (keep+1)-th newest must leave the window. */
    for (guint i = 0; i < n; i++)
        for (guint j = i + 1; j < n; j++)
            if (t[j] > t[i]) {
                gint64 x = t[i];
                t[i] = t[j];
                t[j] = x;
            }
    return keep < n && t[keep] != G_MININT64 ? t[keep] + window_ms : G_MININT64;
}

PolicyGuardCheck
policy_guard_writes(const PolicyIothreadState *st, guint n, gint64 now_ms)
{
    PolicyGuardCheck g = { .available = TRUE, .limit = POLICY_WRITES_SHORT_MAX,
                           .until_ms = G_MININT64 };
    guint short_n, long_n;

    if (!st)
        return g;
    short_n = writes_since(st, now_ms - POLICY_WRITES_SHORT_MS + 1);
    long_n = writes_since(st, MAX(now_ms - POLICY_WRITES_LONG_MS + 1, st->write_epoch_ms));
    g.value = short_n;
    if (short_n + n > POLICY_WRITES_SHORT_MAX) {
        g.holds = TRUE;
        g.until_ms = writes_until(st, POLICY_WRITES_SHORT_MAX - n, POLICY_WRITES_SHORT_MS);
    }
    if (long_n + n > POLICY_WRITES_LONG_MAX) {
        g.holds = TRUE;
        g.until_ms = MAX(g.until_ms,
                         writes_until(st, POLICY_WRITES_LONG_MAX - n, POLICY_WRITES_LONG_MS));
    }
    return g;
}

static gboolean
proposes_polling(const PolicyProposal *p)
{
    return p->triple.poll_max_ns > 0;
}

/* Gain per polling core; unknown value sorts as worthless. */
static double
value_per_core(const PolicyProposal *p)
{
    if (!p->st->polling.measured)
        return 0.0;
    return p->st->polling.gain / MAX(p->st->polling.cores, 0.01);
}

static int
cmp_value_asc(const void *a, const void *b)
{
    const PolicyProposal *pa = *(PolicyProposal *const *)a;
    const PolicyProposal *pb = *(PolicyProposal *const *)b;
    double va = value_per_core(pa), vb = value_per_core(pb);

    if (va != vb)
        return (va > vb) - (va < vb);
    return (pa > pb) - (pa < pb);
}

/*
 * Polling off on @p for the host's sake.  A probe is deferred instead.  A
 * contention cut settles the iothread at off (policy_adaptive_settle_cut):
 * exploring again at once, from a cut the dwell deferred, probed off, wrote
 * the polling window back and was cut again, every three or four seconds
 * (17 writes in a 30 s phase of a deep queue on a shared core in the
 * QEMU 10 model).  A budget cut starts over, so that the probe it defers
 * is tried again as soon as the budget allows.
 */
static void
cut_polling(PolicyProposal *p, PolicyCause cause, gint64 holdoff_until_ms,
            const char *why, gint64 now_ms)
{
    PolicyTriple off = policy_adaptive_off(&p->in->current);

    p->st->holdoff_until_ms = MAX(p->st->holdoff_until_ms, holdoff_until_ms);
    if (p->trial_cand) {
        /*
         * A probe is only deferred; current stays.  QEMU's default window
         * is probed after off: deferred, it would hold the iothread at off
         * for as long as the budget or the contention lasts, so it is
         * dropped instead and the exploration ends next tick on what it
         * measured.
         */
        if (p->trial_cand == POLICY_CAND_NARROW)
            p->st->pending &= ~POLICY_CAND_NARROW;
        p->trial_cand = 0;
        policy_proposal_set(p, &p->in->current, POLICY_CAUSE_NONE,
                            "adaptive: probe deferred, %s", why);
        if (p->in->current.poll_max_ns == 0)
            return;
    }
    policy_proposal_set(p, &off, cause, "adaptive: polling off, %s", why);
    p->guard_cut = TRUE;
    if (cause == POLICY_CAUSE_CONTENTION)
        policy_adaptive_settle_cut(p->st, &off, &p->in->current, cause, now_ms);
    else
        policy_adaptive_enter(p->st, POLICY_ADAPTIVE_NEW);
}

/*
 * May this proposal poll on a contended host?  Only when exit counters
 * show what polling saves: a measured exploration whose polling triple
 * cost no more whole-VM CPU than off (and gained), a wide probe that
 * measures it, or an exploration still in progress (it measures off next).
 * Sets @why to the evidence either way.
 */
static gboolean
polling_pays_for_itself(const PolicyProposal *p, GString *why)
{
    const PolicyIothreadState *st = p->st;

    if (!p->m || !p->m->have_exits) {
        g_string_append(why, " exits=unavailable(polling's vCPU saving unknown)");
        return FALSE;
    }
    if ((p->trial_cand & POLICY_CAND_POLLING) ||
        (policy_adaptive_exploring(st) && !st->polling.this_workload)) {
        g_string_append(why, " exits_per_op_now=");
        g_string_append_printf(why, "%.2f(measuring whole-VM CPU)", p->m->exits_per_op);
        return TRUE;
    }
    /*
     * A remembered window whose exploration ran on a contended host, the
     * guard letting it measure polling against off there: it won on the
     * objective, which charges the whole VM's CPU, under the contention
     * that is here again.  What polling was worth on the workload before
     * does not judge it (a shared core's recalled window, cut on another
     * workload's value, left the simulator's batching device 17% short
     * for 85 s).  A window learnt on a quiet host is judged as before.
     */
    if (st->recall_contended && !st->polling.this_workload &&
        policy_triple_equal(&p->triple, &st->best)) {
        g_string_append(why, " remembered=learnt under contention");
        return TRUE;
    }
    if (st->polling.measured && st->polling.net_measured) {
        g_string_append_printf(why, " polling_net_cores=%.3f polling_gain=%.4f",
                               st->polling.net_cores, st->polling.gain);
        /*
         * Polling that gains and saves whole-VM CPU eases the contention;
         * polling that gains far more than the net CPU it costs is kept
         * too: cutting it relieves the host of less than it takes from the
         * VM's I/O.
         */
        if (st->polling.gain > MAX(0.0, GUARD_KEEP_GAIN_PER_CORE * st->polling.net_cores)) {
            if (st->polling.net_cores > 0)
                g_string_append_printf(why, " polling_gain_per_net_core=%.1f",
                                       st->polling.gain / st->polling.net_cores);
            return TRUE;
        }
        /* The chosen window costs more, a narrower one measured does not. */
        return st->polling.have_frugal &&
               policy_triple_equal(&p->triple, &st->polling.frugal.triple);
    }
    g_string_append(why, " polling_net_cores=unknown");
    return FALSE;
}

void
policy_guard_contention(const PolicyConfig *cfg, const PolicyHost *host,
                        PolicyProposal *props, guint n, gint64 now_ms)
{
    g_autoptr(GPtrArray) pollers = g_ptr_array_new();
    gboolean host_hot = FALSE, severe = FALSE;
    g_autofree char *why = NULL;
    PolicyGuardCheck psi = policy_guard_threshold(host && host->have_psi,
                                                  host ? host->psi_some_pct : 0,
                                                  cfg->psi_some_limit);
    PolicyGuardCheck vcpu = policy_guard_threshold(host && host->have_vcpu_delay,
                                                   host ? host->vcpu_run_delay_pct : 0,
                                                   cfg->vcpu_delay_limit);

    if (psi.holds) {
        host_hot = TRUE;
        severe |= psi.value >= 2 * psi.limit;
    }
    if (vcpu.holds) {
        host_hot = TRUE;
        severe |= vcpu.value >= 2 * vcpu.limit;
    }
    if (host)
        why = g_strdup_printf("host contention (psi_some=%.1f%% vcpu_run_delay=%.1f%%)",
                              host->have_psi ? host->psi_some_pct : 0.0,
                              host->have_vcpu_delay ? host->vcpu_run_delay_pct : 0.0);

    for (guint i = 0; i < n; i++) {
        PolicyProposal *p = &props[i];
        gboolean own_hot;

        if (!p->adaptive || p->is_override || !proposes_polling(p))
            continue;
        own_hot = policy_guard_threshold(p->m && p->m->have_cpu,
                                         p->m ? p->m->run_delay_pct : 0,
                                         cfg->iothread_delay_limit).holds;
        if (host_hot || own_hot) {
            g_autoptr(GString) ev = g_string_new(NULL);

            /* What an exploration learns here, it learns under contention. */
            if (policy_adaptive_exploring(p->st))
                p->st->explore_contended = TRUE;
            if (polling_pays_for_itself(p, ev)) {
                g_string_append_printf(p->evidence,
                                       "%s contention_kept=polling pays for its whole-VM CPU",
                                       ev->str);
                continue;
            }
            g_string_append(p->evidence, ev->str);
            if (!p->trial_cand && policy_adaptive_fall_back_frugal(p, now_ms))
                continue;
        }
        if ((p->trial_cand & POLICY_CAND_POLLING) && (host_hot || own_hot)) {
            cut_polling(p, POLICY_CAUSE_CONTENTION, now_ms + cfg->contention_holdoff_ms,
                        host_hot ? why : "iothread run-queue wait", now_ms);
            continue;
        }
        if (own_hot && !host_hot) {
            g_autofree char *own = g_strdup_printf("iothread run-queue wait %.1f%%",
                                                   p->m->run_delay_pct);
            cut_polling(p, POLICY_CAUSE_CONTENTION, now_ms + cfg->contention_holdoff_ms, own,
                        now_ms);
            continue;
        }
        if (host_hot)
            g_ptr_array_add(pollers, p);
    }
    if (!pollers->len)
        return;
    /* Cheapest loss first; one per tick unless the host is badly short. */
    qsort(pollers->pdata, pollers->len, sizeof(gpointer), cmp_value_asc);
    for (guint i = 0; i < pollers->len; i++) {
        PolicyProposal *p = g_ptr_array_index(pollers, i);

        g_string_append_printf(p->evidence, " value_per_core=%.3f rank=%u/%u",
                               value_per_core(p), i + 1, pollers->len);
        cut_polling(p, POLICY_CAUSE_CONTENTION, now_ms + cfg->contention_holdoff_ms, why, now_ms);
        if (!severe)
            break;
    }
}

/* Cores of a proposal's iothreads: a group polls on each member's. */
static double
proposal_cores(const PolicyProposal *p)
{
    return MAX(p->in->n_iothreads, 1);
}

double
policy_guard_polling_cost(const PolicyIothreadState *st, guint n_iothreads,
                          const PolicyMetrics *m, guint probe)
{
    double n = MAX(n_iothreads, 1);

    if (st && st->polling.measured && !probe)
        return st->polling.cores;
    /*
     * A probe still being measured from a start that did not poll costs
     * what it burns beyond the start's measured CPU: counted whole, a
     * window that fills the core exceeded a budget below one core on its
     * second tick and was cut before it could be judged.
     */
    if (st && m && m->have_cpu && !probe && m->triple.poll_max_ns > 0 &&
        st->phase == POLICY_ADAPTIVE_PROBE && st->seg_a.n && st->seg_a.triple.poll_max_ns == 0)
        return CLAMP(m->cpu_pct / 100.0 - st->seg_a.cpu_sum / st->seg_a.n / 100.0, 0.05 * n, n);
    /*
     * Unknown.  Another iothread that polls now costs at most what it
     * burns; one that does not can at most fill the time it is not busy.
     */
    if (m && m->have_cpu && !probe && m->triple.poll_max_ns > 0)
        return CLAMP(m->cpu_pct / 100.0, 0.05 * n, n);
    if (m && m->have_cpu)
        return CLAMP(n - m->cpu_pct / 100.0, 0.05 * n, n);
    return n;
}

/* What polling on this iothread is expected to cost, in cores. */
static double
polling_cost(const PolicyProposal *p)
{
    return policy_guard_polling_cost(p->st, p->in->n_iothreads, p->m, p->trial_cand);
}

static int
cmp_budget_priority(const void *a, const void *b)
{
    const PolicyProposal *pa = *(PolicyProposal *const *)a;
    const PolicyProposal *pb = *(PolicyProposal *const *)b;
    /* Measured value first, then settled pollers, then probes. */
    int ka = pa->trial_cand ? 2 : pa->st->polling.measured ? 0 : 1;
    int kb = pb->trial_cand ? 2 : pb->st->polling.measured ? 0 : 1;
    double va, vb;

    if (ka != kb)
        return ka - kb;
    /* Probes: the one that could gain most per core first. */
    va = ka == 2 ? pa->probe_value : value_per_core(pa);
    vb = kb == 2 ? pb->probe_value : value_per_core(pb);
    if (va != vb)
        return (vb > va) - (vb < va);
    return (pa > pb) - (pa < pb);  /* input order: deterministic */
}

void
policy_guard_budget(const PolicyConfig *cfg, PolicyProposal *props, guint n, gint64 now_ms)
{
    g_autoptr(GPtrArray) cands = g_ptr_array_new();
    double used = 0.0;

    if (cfg->budget_cores <= 0)
        return;
    for (guint i = 0; i < n; i++) {
        PolicyProposal *p = &props[i];

        if (!proposes_polling(p))
            continue;
        if (!p->adaptive || p->is_override) {
            /* Operator-chosen polling is not ours to cut, but it counts. */
            used += p->m && p->m->have_cpu ? p->m->cpu_pct / 100.0 : proposal_cores(p);
            continue;
        }
        if (p->trial_cand && p->m)
            p->probe_value = policy_adaptive_polling_bound(cfg, p->objective, p->m) /
                             MAX(polling_cost(p), 0.01);
        g_ptr_array_add(cands, p);
    }
    /* An empty GPtrArray's pdata may be NULL, which qsort() must not get. */
    if (cands->len > 1)
        qsort(cands->pdata, cands->len, sizeof(gpointer), cmp_budget_priority);
    for (guint i = 0; i < cands->len; i++) {
        PolicyProposal *p = g_ptr_array_index(cands, i);
        double cost = polling_cost(p);
        g_autofree char *why = NULL;

        g_string_append_printf(p->evidence, " budget_cores=%.2f used=%.2f cost=%.2f",
                               cfg->budget_cores, used, cost);
        if (!policy_guard_budget_check(cfg, used, cost).holds) {
            used += cost;
            continue;
        }
        why = g_strdup_printf("polling budget of %.2f cores is spent (%.2f in use, "
                              "this needs %.2f)", cfg->budget_cores, used, cost);
        cut_polling(p, POLICY_CAUSE_BUDGET, G_MININT64, why, now_ms);
    }
}
