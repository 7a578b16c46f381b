/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sim-lifetime: see sim-lifetime.h.
 */
#include <math.h>
#include <string.h>

#include "common/pt-enum-table.h"
#include "sim-lifetime.h"

PT_ENUM_IMPL_TO_STRING(sim_lifetime_run, SimLifetimeRun, SIM_LT_N_RUNS,
             [SIM_LT_ADAPTIVE] = "adaptive",
             [SIM_LT_NEVER_WRITE] = "never-write",
             [SIM_LT_OFF] = "off",
             [SIM_LT_ORACLE] = "oracle",
             [SIM_LT_ADAPTIVE_NO_RESTART] = "adaptive-no-restart",
             [SIM_LT_NEVER_WRITE_NO_RESTART] = "never-write-no-restart",
             [SIM_LT_OFF_NO_RESTART] = "off-no-restart")

/*
 * The reduced form (the slow test suite): one seed, the four lifetimes
 * that cover both device classes on both hosts, 4 minutes each, about
 * two CPU-minutes per QEMU model.  The full form: three seeds, eight
 * lifetimes each, four hours each.
 */
#define REDUCED_MINUTES 4
#define REDUCED_PER_SEED 4
#define FULL_MINUTES 240
#define FULL_PER_SEED 8
#define FULL_SEEDS 3
/* A week of simulated time is the longest a run could want. */
#define MAX_MINUTES (7 * 24 * 60)

/* Every VM boots idle first: the test guest boots in about 6 s. */
#define BOOT_IDLE_S 10
/*
 * Segment lengths, log-uniform (every decade as likely): a workload from
 * 5 s to 40 min, an idle spell from 5 s to 20 min, a burst from 2 to 20 s.
 * A workload is also capped at an eighth of the lifetime and an idle spell
 * at a sixteenth, so that a short lifetime (the reduced form's) still
 * sees its workloads come back several times.
 */
#define LOAD_MIN_S 5
#define LOAD_MAX_S 2400
#define IDLE_MIN_S 5
#define IDLE_MAX_S 1200
#define BURST_MIN_S 2
#define BURST_MAX_S 20
/* The share of segments that are idle spells, and bursts. */
#define P_IDLE 0.15
#define P_BURST 0.15
/* A device or QEMU change happens at the first segment past this share. */
#define CHANGE_AT 0.3

static const double noises[] = { 0, 0.10, 0.25, 0.50 };
/*
 * The loads a workload is drawn from, the last an open loop.  One disk:
 * a VM's disks do not come and go between its workloads.
 */
static const guint loads_qd[] = { 1, 4, 16, 64, 0 };
#define LOAD_OPEN 4
#define N_SVC 6

SimLifetimeParams
sim_lifetime_params(gboolean full, SimQemuModel model, guint64 seed, guint n_threads)
{
    SimLifetimeParams p = {
        .first_seed = seed,
        .qemu_model = model,
        .n_threads = n_threads,
        .check_restart = !full,
    };

    p.n_seeds = (guint)sim_env_unsigned("POLLSIM_SEEDS", 1, 1000, full ? FULL_SEEDS : 1);
    p.minutes = (guint)sim_env_unsigned("POLLSIM_LIFETIME_MINUTES", 2, MAX_MINUTES,
                                        full ? FULL_MINUTES : REDUCED_MINUTES);
    p.per_seed = (guint)sim_env_unsigned("POLLSIM_LIFETIMES", 1, 64,
                                         full ? FULL_PER_SEED : REDUCED_PER_SEED);
    p.sample = sim_matrix_sample_stride();
    return p;
}

static double
rand_log_uniform(GRand *rng, double lo, double hi)
{
    return lo * exp(g_rand_double(rng) * log(hi / lo));
}

static SimMatrixWorkload
random_workload(GRand *rng, const SimLifetime *lt)
{
    guint load = (guint)g_rand_int_range(rng, 0, G_N_ELEMENTS(loads_qd));
    SimMatrixWorkload w = {
        .qd = loads_qd[load],
        .open_load = load == LOAD_OPEN ? 0.5 : 0,
        .svc_us = 5.0 * pow(10.0, 0.4 * g_rand_int_range(rng, 0, N_SVC)),
        .shared = lt->shared,
        .qemu_model = lt->qemu_model,
        .device = lt->device,
    };

    return w;
}

static gboolean
workload_equal(const SimMatrixWorkload *a, const SimMatrixWorkload *b)
{
    return a->qd == b->qd && a->open_load == b->open_load && a->svc_us == b->svc_us &&
           a->device == b->device && a->qemu_model == b->qemu_model &&
           a->n_devices == b->n_devices && a->shared == b->shared;
}

static guint
key_of(GArray *keys, const SimMatrixWorkload *w)
{
    for (guint i = 0; i < keys->len; i++)
        if (workload_equal(&g_array_index(keys, SimMatrixWorkload, i), w))
            return i;
    g_array_append_val(keys, *w);
    return keys->len - 1;
}

void
sim_lifetime_generate(SimLifetime *lt, const SimLifetimeParams *p, guint64 seed, guint index)
{
    guint32 words[3] = { (guint32)seed, (guint32)(seed >> 32), index };
    g_autoptr(GRand) rng = g_rand_new_with_seed_array(words, G_N_ELEMENTS(words));
    g_autoptr(GArray) segs = g_array_new(FALSE, TRUE, sizeof(SimLifetimeSegment));
    g_autoptr(GArray) wl = g_array_new(FALSE, TRUE, sizeof(SimMatrixWorkload));
    g_autoptr(GArray) keys = g_array_new(FALSE, TRUE, sizeof(SimMatrixWorkload));
    SimMatrixWorkload set[3], burst;
    guint n_set, t = 0;
    double u;

    memset(lt, 0, sizeof(*lt));
    lt->seed = seed;
    lt->index = index;
    lt->len_s = p->minutes * 60;
    lt->qemu_model = p->qemu_model;
    /* Every four lifetimes cover both classes on both hosts. */
    lt->device = index & 1 ? SIM_DEVICE_BATCHING : SIM_DEVICE_NVME;
    lt->shared = (index >> 1) & 1;
    /* Each four lifetimes of a seed have the four noise levels, rotated by seed. */
    lt->noise = noises[(index + index / 4 + seed) % G_N_ELEMENTS(noises)];
    lt->recurring = index % 4 != (seed + 2) % 4;
    lt->restart_s = lt->len_s / 2;
    u = g_rand_double(rng);
    lt->change = u < 0.5 ? SIM_LT_CHANGE_NONE : u < 0.75 ? SIM_LT_CHANGE_DEVICE
                                                          : SIM_LT_CHANGE_QEMU;

    n_set = (guint)g_rand_int_range(rng, 2, 4);
    for (guint i = 0; i < n_set; i++)
        set[i] = random_workload(rng, lt);
    /* A burst: the set's first device at QD64, for seconds. */
    burst = set[0];
    burst.qd = 64;
    burst.open_load = 0;

    while (t < lt->len_s) {
        SimLifetimeSegment s = { .start_s = t, .key = G_MAXUINT };
        SimMatrixWorkload w = { 0 };
        SimLifetimeSegment *prev = segs->len ? &g_array_index(segs, SimLifetimeSegment,
                                                              segs->len - 1) : NULL;
        double len;

        u = g_rand_double(rng);
        if (t == 0) {
            len = BOOT_IDLE_S;
        } else if (u < P_IDLE) {
            len = rand_log_uniform(rng, IDLE_MIN_S, MIN(IDLE_MAX_S, lt->len_s / 16.0));
        } else if (u < P_IDLE + P_BURST) {
            len = rand_log_uniform(rng, BURST_MIN_S, BURST_MAX_S);
            s.burst = TRUE;
            s.key = 0;
            w = burst;
        } else {
            len = rand_log_uniform(rng, LOAD_MIN_S, MIN(LOAD_MAX_S, lt->len_s / 8.0));
            s.key = 0;
            w = lt->recurring ? set[g_rand_int_range(rng, 0, n_set)] : random_workload(rng, lt);
        }
        s.len_s = MIN((guint)lround(len), lt->len_s - t);
        t += s.len_s;
        /* The same load again, or idle after idle, goes on: no new arrival. */
        if (prev && (prev->key == G_MAXUINT) == (s.key == G_MAXUINT) &&
            (s.key == G_MAXUINT ||
             workload_equal(&g_array_index(wl, SimMatrixWorkload, wl->len - 1), &w))) {
            prev->len_s += s.len_s;
            continue;
        }
        g_array_append_val(segs, s);
        g_array_append_val(wl, w);
    }

    /* The change, for good, at the first segment past CHANGE_AT of the lifetime. */
    for (guint i = 1; lt->change != SIM_LT_CHANGE_NONE && i < segs->len; i++) {
        SimLifetimeSegment *s = &g_array_index(segs, SimLifetimeSegment, i);

        if (s->start_s < CHANGE_AT * lt->len_s)
            continue;
        lt->change_s = s->start_s;
        for (guint j = i; j < segs->len; j++) {
            SimMatrixWorkload *w = &g_array_index(wl, SimMatrixWorkload, j);

            if (lt->change == SIM_LT_CHANGE_DEVICE)
                w->device = lt->device == SIM_DEVICE_NVME ? SIM_DEVICE_BATCHING
                                                          : SIM_DEVICE_NVME;
            else
                w->qemu_model = lt->qemu_model == SIM_QEMU_7_2 ? SIM_QEMU_10 : SIM_QEMU_7_2;
        }
        break;
    }
    if (!lt->change_s)
        lt->change = SIM_LT_CHANGE_NONE;

    for (guint i = 0; i < segs->len; i++) {
        SimLifetimeSegment *s = &g_array_index(segs, SimLifetimeSegment, i);
        const SimMatrixWorkload *w = &g_array_index(wl, SimMatrixWorkload, i);

        if (s->key == G_MAXUINT) {
            /* An idle spell: the VM's disk and host, nothing submitted. */
            SimMatrixWorkload idle = { .qd = 1, .svc_us = 5, .shared = lt->shared,
                                       .device = lt->device };
            SimWorkload busy;

            if (lt->change == SIM_LT_CHANGE_DEVICE && s->start_s >= lt->change_s)
                idle.device = lt->device == SIM_DEVICE_NVME ? SIM_DEVICE_BATCHING
                                                            : SIM_DEVICE_NVME;
            busy = sim_matrix_workload_of(&idle);
            s->w = sim_workload_idle(&busy);
        } else {
            s->key = key_of(keys, w);
            s->w = sim_matrix_workload_of(w);
        }
    }
    lt->n_segments = segs->len;
    lt->segments = (SimLifetimeSegment *)g_array_free(g_steal_pointer(&segs), FALSE);
    lt->n_keys = keys->len;
    lt->keys = (SimMatrixWorkload *)g_array_free(g_steal_pointer(&keys), FALSE);
}

void
sim_lifetime_clear(SimLifetime *lt)
{
    g_free(lt->segments);
    g_free(lt->keys);
    g_free(lt->windows);
    memset(lt, 0, sizeof(*lt));
}

void
sim_lifetime_result_free(SimLifetimeResult *r)
{
    if (!r)
        return;
    for (guint i = 0; i < r->n_lifetimes; i++)
        sim_lifetime_clear(&r->lifetimes[i]);
    g_free(r->lifetimes);
    g_free(r);
}

char *
sim_lifetime_format(const SimLifetime *lt)
{
    static const char *const changes[] = { "none", "device", "qemu" };

    return g_strdup_printf("seed=%" G_GUINT64_FORMAT " #%u dev=%s host=%s noise=%.0f%% %s "
                           "change=%s@%us qemu=%s %u segments %u workloads",
                           lt->seed, lt->index, sim_device_class_to_string(lt->device),
                           lt->shared ? "shared" : "dedicated", 100 * lt->noise,
                           lt->recurring ? "recurring" : "fresh", changes[lt->change],
                           lt->change_s, sim_qemu_model_to_string(lt->qemu_model),
                           lt->n_segments, lt->n_keys);
}

/* What a run's tick hook follows. */
typedef struct {
    const SimLifetime *lt;
    gboolean restart;
    gboolean oracle;
    guint next;                 /* the next segment to begin */
    PolicyTriple *triples;      /* the VM's triple at the end of each tick */
} LifetimeRunCtx;

static SimRunEvent
lifetime_tick(Sim *sim, guint t, gpointer data)
{
    LifetimeRunCtx *c = data;
    const SimLifetime *lt = c->lt;
    guint now = t + 1;
    SimRunEvent ev = SIM_RUN_GO_ON;

    c->triples[t] = sim_vm_triple(sim, 0);
    if (c->next < lt->n_segments && lt->segments[c->next].start_s == now) {
        const SimLifetimeSegment *s = &lt->segments[c->next++];

        if (lt->change == SIM_LT_CHANGE_QEMU && now == lt->change_s) {
            /* A new QEMU process: its own mechanism, at QEMU's default triple. */
            static const PolicyTriple qemu_default = POLICY_TRIPLE_QEMU_DEFAULT;

            sim_set_qemu_model(sim, lt->qemu_model == SIM_QEMU_7_2 ? SIM_QEMU_10
                                                                   : SIM_QEMU_7_2);
            sim_vm_set_triple(sim, 0, &qemu_default);
            ev = SIM_RUN_VM_RESTART;
        }
        sim_vm_set_workload(sim, 0, &s->w);
        if (c->oracle)
            sim_vm_set_triple(sim, 0, &s->oracle);
    }
    return c->restart && now == lt->restart_s ? SIM_RUN_DAEMON_RESTART : ev;
}

/*
 * A restarted daemon loads the memory it kept in its store: the rows the
 * stopped engine would have saved, through the same text the store keeps,
 * and the times of its own recent writes (the store's decisions).
 * POLLSIM_NO_MEMORY_RELOAD=1 starts it empty instead, as before the
 * store kept the memory.
 */
static void
lifetime_memory_reload(const PolicyEngine *old, PolicyEngine *fresh,
                       gpointer data G_GNUC_UNUSED)
{
    g_autoptr(GPtrArray) rows = policy_engine_memory_rows(old, SIM_TARGET, "iothread0");
    g_autoptr(GArray) writes = NULL;
    g_autoptr(GError) error = NULL;

    if (g_strcmp0(g_getenv("POLLSIM_NO_MEMORY_RELOAD"), "1") == 0)
        return;
    if (!policy_engine_memory_load(fresh, SIM_TARGET, "iothread0",
                                   (PtMemoryRow *const *)rows->pdata, rows->len, &error))
        g_error("lifetime: the memory's rows do not load again: %s", error->message);
    /* And the write budget's record, from the decisions the store keeps. */
    writes = policy_engine_writes_recent(old, SIM_TARGET, "iothread0");
    policy_engine_writes_restore(fresh, SIM_TARGET, "iothread0", (const gint64 *)writes->data,
                                 writes->len);
}

static void
lifetime_run_one(SimLifetime *lt, SimLifetimeRun which, guint64 seed)
{
    static const PolicyKind kinds[SIM_LT_N_RUNS] = {
        [SIM_LT_ADAPTIVE] = POLICY_KIND_ADAPTIVE,
        [SIM_LT_ADAPTIVE_NO_RESTART] = POLICY_KIND_ADAPTIVE,
        [SIM_LT_NEVER_WRITE] = POLICY_KIND_OBSERVE,
        [SIM_LT_NEVER_WRITE_NO_RESTART] = POLICY_KIND_OBSERVE,
        [SIM_LT_OFF] = POLICY_KIND_OFF,
        [SIM_LT_OFF_NO_RESTART] = POLICY_KIND_OFF,
    };
    PolicySpec spec = { .objective = POLICY_OBJECTIVE_BALANCED, .kind = kinds[which] };
    g_autofree PolicyTriple *triples = g_new0(PolicyTriple, lt->len_s);
    LifetimeRunCtx ctx = {
        .lt = lt,
        .restart = which < SIM_LT_ORACLE,
        .oracle = which == SIM_LT_ORACLE,
        .next = 1,
        .triples = triples,
    };
    SimRunOpts opts = {
        .tick_hook = lifetime_tick,
        .restart_hook = lifetime_memory_reload,
        .hook_data = &ctx,
    };
    SimScenario scn = {
        .name = "lifetime",
        .what = "generated lifetime",
        .n_cores = lt->shared ? 1 : 4,
        .n_phases = 1,
        .phase_s = lt->len_s,
        .n_groups = 1,
        .beneficiary_group = G_MAXUINT,
        .qemu_model = lt->qemu_model,
    };
    PolicyTriple first[SIM_MAX_PHASES] = { lt->segments[0].oracle };
    g_autoptr(SimRun) run = NULL;

    const char *trace = g_getenv("POLLSIM_TRACE");
    g_autofree char *name = sim_lifetime_format(lt);

    scn.groups[0].count = 1;
    scn.groups[0].phase[0] = lt->segments[0].w;
    /* POLLSIM_TRACE=substring: the decisions of the lifetimes whose name has it. */
    if (trace && strstr(name, trace)) {
        opts.trace = stderr;
        fprintf(stderr, "== %s: %s\n", name, sim_lifetime_run_to_string(which));
    }
    /* Noise is what adaptive is shown; the others do not look. */
    if (which == SIM_LT_ADAPTIVE || which == SIM_LT_ADAPTIVE_NO_RESTART) {
        opts.noise = lt->noise;
        opts.noise_seed = seed * 0x2545f4914f6cdd1dull + 1;
    }
    run = sim_scenario_run_opts(&scn, which == SIM_LT_ORACLE ? NULL : &spec,
                                which == SIM_LT_ORACLE ? first : NULL, 1.0, seed, &opts);
    sim_lifetime_fill(lt, which, run, triples);
}

/* The oracle of each distinct workload, by the matrix's grid search. */
static void
lifetime_oracle(SimLifetime *lt, guint64 seed)
{
    static const PolicyTriple off = { 0, 0, 0 };
    g_autofree PolicyTriple *best = g_new0(PolicyTriple, lt->n_keys);

    for (guint k = 0; k < lt->n_keys; k++) {
        SimScenario one = {
            .name = "lifetime-oracle",
            .n_cores = lt->shared ? 1 : 4,
            .n_phases = 1,
            .n_groups = 1,
            .beneficiary_group = G_MAXUINT,
            .qemu_model = lt->keys[k].qemu_model,
        };
        PolicyTriple out[SIM_MAX_PHASES];
        double scores[SIM_MAX_PHASES][SIM_MATRIX_ORACLE_GRID_N];

        one.groups[0].count = 1;
        one.groups[0].phase[0] = sim_matrix_workload_of(&lt->keys[k]);
        sim_matrix_oracle_search(&one, seed + k, out, scores, NULL);
        best[k] = out[0];
    }
    /* Idle: nothing to catch, polling only costs. */
    for (guint i = 0; i < lt->n_segments; i++)
        lt->segments[i].oracle = lt->segments[i].key == G_MAXUINT ? off
                                                                  : best[lt->segments[i].key];
}

static void
lifetime_job(gpointer data, gpointer user_data)
{
    SimLifetime *lt = data;
    const SimLifetimeParams *p = user_data;
    guint64 seed = lt->seed * 1000003ull + lt->index;

    lifetime_oracle(lt, seed);
    for (guint r = 0; r < SIM_LT_N_RUNS; r++) {
        if (!p->check_restart &&
            (r == SIM_LT_NEVER_WRITE_NO_RESTART || r == SIM_LT_OFF_NO_RESTART))
            continue;
        lifetime_run_one(lt, r, seed);
    }
}

SimLifetimeResult *
sim_lifetime_run(const SimLifetimeParams *p)
{
    SimLifetimeResult *r = g_new0(SimLifetimeResult, 1);
    g_autoptr(GArray) lts = g_array_new(FALSE, TRUE, sizeof(SimLifetime));
    GThreadPool *pool;
    guint n_threads = p->n_threads ? p->n_threads : MAX(g_get_num_processors(), 1);
    guint n_seen = 0;

    r->params = *p;
    for (guint s = 0; s < p->n_seeds; s++) {
        for (guint i = 0; i < p->per_seed; i++) {
            SimLifetime lt;

            if (!sim_matrix_sampled(n_seen++, MAX(p->sample, 1)))
                continue;
            sim_lifetime_generate(&lt, p, p->first_seed + s, i);
            g_array_append_val(lts, lt);
        }
    }
    r->n_lifetimes = lts->len;
    r->lifetimes = (SimLifetime *)g_array_free(g_steal_pointer(&lts), FALSE);
    pool = g_thread_pool_new(lifetime_job, (gpointer)&r->params, (gint)n_threads, TRUE, NULL);
    for (guint i = 0; i < r->n_lifetimes; i++)
        g_thread_pool_push(pool, &r->lifetimes[i], NULL);
    g_thread_pool_free(pool, FALSE, TRUE);
    sim_lifetime_judge(r);
    return r;
}
