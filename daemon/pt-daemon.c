/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-daemon.h"
#include "pt-daemon-private.h"
#include "pt-history.h"
#include "pt-log.h"
#include "pt-stop.h"
#include "probe-derive.h"

#include <errno.h>
#include <math.h>

#define PT_TICK_RING 600

/* From 5 ms (a few VMs on an idle host) to 10 s (ten default intervals),
 * finer around 100 ms, the bound a tick over 100 VMs should stay under. */
const double pt_tick_bucket_le[PT_TICK_BUCKETS] = {
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.25, 0.5, 1, 2.5, 5, 10,
};

/* ---- lifecycle --------------------------------------------------------- */

ProbeExitsMode
pt_daemon_exits_mode(const PtConf *conf)
{
    ProbeExitsMode m = probe_exits_mode_from_string(conf->exits_source);

    return m == PROBE_EXITS_MODE_INVALID ? PROBE_EXITS_AUTO : m;
}

static void
pt_store_options(const PtConf *conf, gint64 now_ms, StoreOptions *opts)
{
    store_options_init(opts);
    opts->now_ms = now_ms;
    opts->raw_retention_ms = conf->raw_retention_ms;
    opts->rollup_1m_retention_ms = conf->rollup_1m_retention_ms;
    opts->rollup_1h_retention_ms = conf->rollup_1h_retention_ms;
    opts->size_cap_bytes = conf->max_size_bytes;
}

gboolean
pt_daemon_prepare_state_dir(const char *database, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(database);

    /* Only the state directory is ours to create; any other is the
     * operator's, and a typo in database= must not grow a tree. */
    if (g_str_equal(dir, PT_STATE_DIR) && g_mkdir_with_parents(dir, 0750) < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: cannot create: %s",
                    dir, g_strerror(errno));
        return FALSE;
    }
    if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "%s: the database's directory %s does not exist; create it or set "
                    "database= to a path in one that does", database, dir);
        return FALSE;
    }
    return TRUE;
}

PtDaemon *
pt_daemon_new(PtConf *conf, const PtDaemonRoots *roots, GError **error)
{
    g_autoptr(PtDaemon) d = g_new0(PtDaemon, 1);
    g_autoptr(GError) local = NULL;
    StoreOptions opts;
    gint64 now_ms = g_get_real_time() / 1000;

    d->conf = conf;
    d->mode = conf->mode;
    d->runtime_mode = PT_MODE_INVALID;
    pt_daemon_mode_to_policy(d);
    if (roots) {
        d->proc_root = g_strdup(roots->proc_root);
        d->debugfs_root = g_strdup(roots->debugfs_root);
        d->tracefs_root = g_strdup(roots->tracefs_root);
    }
    d->proot.proc = d->proc_root;
    d->proot.debugfs = d->debugfs_root;
    d->proot.tracefs = d->tracefs_root;
    d->targets = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)pt_target_unref);
    d->tick_ms = g_array_new(FALSE, TRUE, sizeof(double));
    d->stats.started_ms = now_ms;

    if (g_strcmp0(conf->database, ":memory:") != 0) {
        if (!pt_daemon_prepare_state_dir(conf->database, error))
            return NULL;
        d->run_marker = g_strconcat(conf->database, ".running", NULL);
    }
    pt_store_options(conf, now_ms, &opts);
    d->store = store_db_open(conf->database, &opts, &local);
    if (!d->store) {
        /* The store names the path and the cause; the remedy is ours. */
        if (g_error_matches(local, G_IO_ERROR, G_IO_ERROR_READ_ONLY) ||
            g_error_matches(local, G_IO_ERROR, G_IO_ERROR_PERMISSION_DENIED)) {
            g_autofree char *msg = g_steal_pointer(&local->message);

            local->message = g_strdup_printf("%s; make it writable by polltuned or set "
                                             "database= to a path it can write", msg);
        } else if (g_error_matches(local, STORE_ERROR, STORE_ERROR_FULL)) {
            g_autofree char *msg = g_steal_pointer(&local->message);

            /* Starting without the history would lose the originals that
             * a crash left to restore, so wait for space instead. */
            local->message = g_strdup_printf("%s; the filesystem that holds it is full: "
                                             "free space there and start polltuned again",
                                             msg);
        }
        g_propagate_error(error, g_steal_pointer(&local));
        return NULL;
    }
    {
        StoreStats st;

        /* A file moved aside at open held nothing of this run. */
        store_db_get_stats(d->store, &st);
        d->originals_reopens = st.reopens;
    }
    d->engine = policy_engine_new(conf->policy, error);
    if (!d->engine)
        return NULL;
    d->host = probe_host_sampler_new(&d->proot);
    return g_steal_pointer(&d);
}

void
pt_daemon_store_notices(PtDaemon *d)
{
    char *notice;

    while ((notice = store_db_take_notice(d->store))) {
        pt_warn(NULL, NULL, "store: %s", notice);
        g_free(notice);
    }
}

/*
 * Ticks the store still holds in memory (the database was full, locked or
 * unwritable) get one last try; what still cannot be written is lost with
 * the process, so say how much, and how much the run lost before.
 */
static void
pt_daemon_store_close(PtDaemon *d)
{
    StoreStats st;

    if (!d->store)
        return;
    store_flush(d->store, NULL);
    pt_daemon_store_notices(d);
    store_db_get_stats(d->store, &st);
    if (st.pending_ticks)
        pt_warn(NULL, NULL, "store: %u ticks kept in memory could not be written to %s "
                "(%s): dropped at exit; %" G_GUINT64_FORMAT " dropped earlier in this run "
                "when the queue was full", st.pending_ticks, d->conf->database,
                store_health_to_string(st.health), st.ticks_dropped);
    else if (st.ticks_dropped)
        pt_warn(NULL, NULL, "store: %" G_GUINT64_FORMAT " ticks were dropped in this run "
                "while %s could not take them", st.ticks_dropped, d->conf->database);
    g_clear_pointer(&d->store, store_db_close);
}

void
pt_daemon_free(PtDaemon *d)
{
    if (!d)
        return;
    g_clear_handle_id(&d->timer, g_source_remove);
    g_clear_handle_id(&d->tick_deadline, g_source_remove);
    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        pt_target_kinds[k]->stop(d);
    if (d->targets) {
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, d->targets);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            PtTarget *t = v;

            t->detached = TRUE;
            if (t->ops->close)
                t->ops->close(t);
        }
        g_hash_table_unref(d->targets);
    }
    g_clear_pointer(&d->tick_results, g_ptr_array_unref);
    probe_host_snap_free(d->host_prev);
    probe_host_snap_free(d->tick_host);
    probe_host_sampler_free(d->host);
    /* What the last tick learnt, if the store could not take it then. */
    if (d->engine && d->store)
        pt_daemon_memory_save(d);
    pt_daemon_memory_free(d);
    policy_engine_free(d->engine);
    pt_daemon_store_close(d);
    if (d->tick_ms)
        g_array_unref(d->tick_ms);
    pt_conf_free(d->conf);
    g_free(d->run_marker);
    g_free(d->proc_root);
    g_free(d->debugfs_root);
    g_free(d->tracefs_root);
    g_free(d);
}

static gboolean pt_daemon_tick(gpointer data);

const PtTargetKindOps *const pt_target_kinds[STORE_TARGET_KIND_MAX] = {
    [STORE_TARGET_LIBVIRT] = &pt_daemon_libvirt_kind,
    [STORE_TARGET_QMP] = &pt_daemon_qmp_kind,
};

gboolean
pt_daemon_start(PtDaemon *d, GError **error)
{
    gint64 now_ms = g_get_real_time() / 1000;

    if (d->run_marker) {
        d->unclean_start = g_file_test(d->run_marker, G_FILE_TEST_EXISTS);
        if (d->unclean_start)
            pt_warn(NULL, NULL, "the last run did not exit cleanly; on-restart=%s",
                    pt_restart_to_string(d->conf->on_restart));
        if (!g_file_set_contents(d->run_marker, "", 0, error))
            return FALSE;
    }
    if (!pt_daemon_overrides_load(d, now_ms, error))
        return FALSE;
    if (!pt_daemon_load_rules(d, error))
        return FALSE;
    /* A mode set with polltunectl in an earlier run holds, unless the
     * command line names one, which ends it. */
    {
        int m = store_runtime_mode_get(d->store);

        if (d->conf->overrides.mode != PT_MODE_INVALID) {
            if (m >= 0 && !store_runtime_mode_set(d->store, -1, error))
                return FALSE;
        } else if (m >= 0 && m < PT_MODE_MAX && (PtMode)m != d->conf->mode) {
            d->runtime_mode = m;
            pt_daemon_set_mode(d, m, NULL);
            pt_info(NULL, NULL, "mode %s, set with polltunectl mode before the restart; "
                    "'polltunectl mode %s' returns to the configuration's",
                    pt_mode_to_string(m), pt_mode_to_string(d->conf->mode));
        }
    }

    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        pt_target_kinds[k]->start(d);
    d->timer = g_timeout_add(d->conf->interval_ms, pt_daemon_tick, d);
    return TRUE;
}

gboolean
pt_daemon_reload(PtDaemon *d, PtConf *conf, GError **error)
{
    g_autoptr(PtConf) newc = conf;
    PolicyEngine *engine;

    if (!pt_conf_check_reload(d->conf, conf, error))
        return FALSE;
    /* Rules from policy-set go in front of the new file's, as they stood
     * in front of the old one's; one the new bounds reject fails the
     * reload, which keeps the old configuration. */
    if (!pt_daemon_install_rules(d->conf->policy, conf->policy, error)) {
        g_prefix_error(error, "%s: ", conf->path ? conf->path : "configuration");
        return FALSE;
    }
    engine = policy_engine_new(conf->policy, error);
    if (!engine)
        return FALSE;
    pt_daemon_metadata_install_all(d, conf->policy);
    /* A new engine starts learning afresh; the operator's overrides
     * stay in force. */
    pt_daemon_overrides_carry(d, engine, g_get_real_time() / 1000);
    /* What the policy learnt of each workload is kept too. */
    pt_daemon_memory_carry(d, engine);
    policy_engine_free(d->engine);
    d->engine = engine;
    if (conf->interval_ms != d->conf->interval_ms) {
        g_clear_handle_id(&d->timer, g_source_remove);
        d->timer = g_timeout_add(conf->interval_ms, pt_daemon_tick, d);
    }
    pt_conf_free(d->conf);
    d->conf = g_steal_pointer(&newc);
    /* The new file's policy starts in its own mode: the one in force wins. */
    pt_daemon_set_mode(d, d->runtime_mode != PT_MODE_INVALID ? d->runtime_mode :
                       d->conf->mode, NULL);
    pt_daemon_mode_to_policy(d);
    return TRUE;
}

gboolean
pt_daemon_reload_file(PtDaemon *d, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = g_strdup(d->conf->path);
    PtConf *conf;

    if (!path) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND,
                    "no configuration file to reload");
        return FALSE;
    }
    /* A file the running configuration was read from must be there: a
     * reload without it would run on the defaults.  The wait gives way to
     * SIGTERM, so a stop is never held up by a reload. */
    pt_info(NULL, NULL, "reloading the configuration from %s", path);
    conf = pt_conf_load_until(path, d->conf->from_file, pt_stop_requested, &err);
    if (conf) {
        pt_conf_apply_overrides(conf, &d->conf->overrides);
        /* Takes @conf, and on success frees the running one. */
        if (pt_daemon_reload(d, conf, &err)) {
            pt_info(NULL, NULL, "configuration reloaded from %s", path);
            return TRUE;
        }
    }
    pt_err(NULL, NULL, "reload refused, keeping the running configuration: %s",
           err->message);
    g_propagate_error(error, g_steal_pointer(&err));
    return FALSE;
}

/* ---- targets ----------------------------------------------------------- */

void
pt_daemon_add_target(PtDaemon *d, PtTarget *t)
{
    g_autoptr(GError) err = NULL;

    if (!store_target_register(d->store, t->kind, t->name, t->uuid,
                               g_get_real_time() / 1000, &err))
        pt_warn(t->name, NULL, "store: %s", err->message);
    g_hash_table_replace(d->targets, g_strdup(t->name), t);
    if (t->display_given)
        pt_info(t->name, NULL, "attached (%s), named %s", store_target_kind_to_string(t->kind),
                t->display);
    else
        pt_info(t->name, NULL, "attached (%s)", store_target_kind_to_string(t->kind));
    pt_daemon_check_name(d, t);
}

/*
 * @t's display name is settled (given to attach, or QEMU answered for its
 * own): another target of the same name makes the name ambiguous, so
 * commands refuse it and ask for the path.  Said once per name and pair,
 * as an error naming both paths, however often either reconnects; both
 * targets are tuned as before, each under its own identity.
 */
void
pt_daemon_check_name(PtDaemon *d, PtTarget *t)
{
    GHashTableIter it;
    gpointer v;

    if (!t->display_changed)
        return;
    t->display_changed = FALSE;
    g_hash_table_iter_init(&it, d->targets);
    while (t->display && g_hash_table_iter_next(&it, NULL, &v)) {
        PtTarget *o = v;

        if (o == t || (g_strcmp0(o->display, t->display) && !g_str_equal(o->name, t->display)))
            continue;
        if (!g_strcmp0(t->name_clash, t->display))
            return;
        pt_err(t->name, NULL, "its name %s is also the name of %s: commands must name "
               "either by its path", t->display, o->name);
        g_free(t->name_clash);
        t->name_clash = g_strdup(t->display);
        g_free(o->name_clash);
        o->name_clash = g_strdup(t->display);
        return;
    }
    g_clear_pointer(&t->name_clash, g_free);
}

void
pt_daemon_remove_target(PtDaemon *d, PtTarget *t, const char *why)
{
    pt_info(t->name, NULL, "detached: %s", why);
    pt_daemon_drop_target(d, t, NULL);
}

void
pt_daemon_drop_target(PtDaemon *d, PtTarget *t, const char *why)
{
    if (why)
        pt_info(t->name, NULL, "%s", why);
    t->detached = TRUE;
    if (t->ops->close)
        t->ops->close(t);
    policy_engine_forget(d->engine, t->name);
    g_hash_table_remove(d->targets, t->name);
}

/*
 * @t's QEMU exited (PT_TARGET_GONE): its originals went with it, and a QEMU
 * started on its channel later has its own command line, so the stored
 * originals are dropped rather than kept to match nothing; one line says
 * so.  The kind keeps the target (a configured socket waits for its QEMU)
 * or lets it go (one found by qmp-globs is found again as new); either way
 * it is no longer lost, and no alert on lost targets fires for a VM shut
 * down cleanly.
 */
static void
pt_daemon_target_gone(PtDaemon *d, PtTarget *t)
{
    g_autoptr(GError) err = NULL;
    guint n = 0;

    if (!store_original_drop(d->store, t->name, &n, &err))
        pt_warn(t->name, NULL, "store: dropping the original values: %s", err->message);
    pt_info(t->name, NULL, "gone: %s; %u stored original values dropped", t->state_reason, n);
    policy_engine_forget(d->engine, t->name);
    g_hash_table_remove_all(t->iothreads);
    g_clear_pointer(&t->prev, probe_target_snap_free);
    /* The loss of its channel that came first is told by this line. */
    g_ptr_array_set_size(t->news, 0);
    pt_target_kinds[t->kind]->gone(d, t);
}

static gint
pt_target_cmp(gconstpointer a, gconstpointer b)
{
    return g_strcmp0((*(PtTarget *const *)a)->name, (*(PtTarget *const *)b)->name);
}

GPtrArray *
pt_daemon_list_targets(PtDaemon *d)
{
    GPtrArray *out = g_ptr_array_new();
    GHashTableIter it;
    gpointer v;

    g_hash_table_iter_init(&it, d->targets);
    while (g_hash_table_iter_next(&it, NULL, &v))
        g_ptr_array_add(out, v);

    g_ptr_array_sort(out, pt_target_cmp);
    return out;
}

PtTarget *
pt_daemon_find_target(PtDaemon *d, const char *name)
{
    return name ? g_hash_table_lookup(d->targets, name) : NULL;
}

PtTarget *
pt_daemon_resolve_target(PtDaemon *d, const char *name, GError **error)
{
    PtTarget *t = pt_daemon_find_target(d, name);
    g_autoptr(GPtrArray) all = NULL;
    g_autoptr(GPtrArray) named = g_ptr_array_new();

    if (t)
        return t;
    all = pt_daemon_list_targets(d);
    for (guint i = 0; name && i < all->len; i++)
        if (!g_strcmp0(((PtTarget *)all->pdata[i])->display, name))
            g_ptr_array_add(named, all->pdata[i]);
    if (named->len == 1)
        return named->pdata[0];
    if (!named->len) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_NOT_FOUND, "%s: no such target",
                    name ? name : "");
        return NULL;
    }
    {
        g_autoptr(GString) paths = g_string_new(NULL);

        for (guint i = 0; i < named->len; i++)
            g_string_append_printf(paths, "%s%s", i ? ", " : "",
                                   ((PtTarget *)named->pdata[i])->name);
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "%s names %u targets (%s): name one by its path", name, named->len,
                    paths->str);
    }
    return NULL;
}

/* ---- the tick ---------------------------------------------------------- */

typedef struct {
    PtTarget *t;
    ProbeTargetSnap *snap;
} PtTickResult;

static void
pt_tick_result_free(PtTickResult *r)
{
    pt_target_unref(r->t);
    probe_target_snap_free(r->snap);
    g_free(r);
}

static void pt_daemon_tick_end(PtDaemon *d);

static void
pt_daemon_log_news(PtTarget *t)
{
    for (guint i = 0; i < t->news->len; i++)
        pt_info(t->name, NULL, "%s", (char *)t->news->pdata[i]);
    g_ptr_array_set_size(t->news, 0);
}

typedef struct {
    PtDaemon *d;
    guint64 tick;
} PtSampleCtx;

static void
pt_daemon_on_sample(PtTarget *t, ProbeTargetSnap *snap, const GError *error, gpointer data)
{
    PtSampleCtx *ctx = data;
    PtDaemon *d = ctx->d;
    /* A detached target's daemon may be gone: look at it first. */
    gboolean current = !t->detached && d->tick_running && ctx->tick == d->tick_id;

    g_free(ctx);
    if (!current) {
        /* A late failure: the target is lost and says so itself; its
         * next attach starts a fresh count of late ticks. */
        if (error && !t->detached)
            t->late_ticks = 0;
        probe_target_snap_free(snap);
        return;
    }
    /* A peer that answers, but never usefully (wrong shapes, errors), must
     * not look attached: it is lost with the reason, and a QMP target is
     * reconnected from scratch after its backoff. */
    pt_target_sample_result(t, error, g_get_monotonic_time());
    /* In time again; a failure says so through the target's health. */
    if (t->late_ticks && !error)
        pt_info(t->name, NULL, "sample back within its tick after %u late tick%s",
                t->late_ticks, t->late_ticks == 1 ? "" : "s");
    t->late_ticks = 0;
    if (error) {
        pt_debug(t->name, NULL, "sample: %s", error->message);
    } else {
        PtTickResult *r = g_new0(PtTickResult, 1);

        r->t = pt_target_ref(t);
        r->snap = snap;
        g_ptr_array_add(d->tick_results, r);
    }
    if (--d->tick_pending == 0)
        pt_daemon_tick_end(d);
}

/* The share of the interval a tick waits for its samples. */
static guint
pt_daemon_tick_wait_ms(const PtDaemon *d)
{
    return MAX(d->conf->interval_ms * 8 / 10, 50);
}

/*
 * @t gives no sample this tick: its answer missed the tick's deadline
 * (@at_deadline), or the sample of an earlier tick is still out, so none
 * was started.  The VM is named, so that one never tuned because its QEMU
 * or libvirtd answers too slowly is not only a counter: at its first late
 * tick, then at the 2nd, 4th, 8th... in a row, so that a VM late for hours
 * writes a few dozen lines, not one a tick.
 */
static void
pt_daemon_late(PtDaemon *d, PtTarget *t, gboolean at_deadline)
{
    guint n = ++t->late_ticks;

    if (n & (n - 1))
        return;
    if (at_deadline)
        pt_warn(t->name, NULL, "no sample this tick: the answer was not back within %u ms "
                "(%u tick%s in a row); its iothreads are not tuned until one is",
                pt_daemon_tick_wait_ms(d), n, n == 1 ? "" : "s");
    else
        pt_warn(t->name, NULL, "no sample this tick: still waiting for the one sent %.1f s "
                "ago (%u tick%s in a row); its iothreads are not tuned until one is",
                (g_get_monotonic_time() - t->sample_start_us) / 1e6, n, n == 1 ? "" : "s");
}

/* The tick's deadline: it goes on without the samples still out, whose
 * answers will be dropped. */
static gboolean
pt_daemon_tick_deadline(gpointer data)
{
    PtDaemon *d = data;
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(d);

    d->tick_deadline = 0;
    d->stats.late_targets += d->tick_pending;
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];

        if (t->sampling && t->sample_tick == d->tick_id)
            pt_daemon_late(d, t, TRUE);
    }
    pt_daemon_tick_end(d);
    return G_SOURCE_REMOVE;
}

static gboolean
pt_daemon_tick(gpointer data)
{
    PtDaemon *d = data;
    g_autoptr(GPtrArray) targets = NULL;

    if (d->tick_running) {
        d->stats.overruns++;
        pt_warn(NULL, NULL, "tick %" G_GUINT64_FORMAT " still running after %u ms; skipping one",
                d->tick_id, d->conf->interval_ms);
        return G_SOURCE_CONTINUE;
    }
    d->tick_running = TRUE;
    d->tick_id++;
    d->tick_start_us = g_get_monotonic_time();
    d->tick_mono_ns = d->tick_start_us * 1000;
    d->tick_now_ms = g_get_real_time() / 1000;
    d->tick_results = g_ptr_array_new_with_free_func((GDestroyNotify)pt_tick_result_free);

    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        if (pt_target_kinds[k]->discover)
            pt_target_kinds[k]->discover(d);
    d->tick_host = probe_host_snap_new(d->tick_mono_ns, d->tick_now_ms);
    probe_host_sampler_sample(d->host, d->tick_host);

    targets = pt_daemon_list_targets(d);
    d->tick_pending = 1;        /* held while samples start */
    for (guint i = 0; i < targets->len; i++) {
        PtTarget *t = targets->pdata[i];
        PtSampleCtx *ctx;

        pt_target_retry(t);
        if (t->refused) {
            /* May free @t. */
            pt_warn(t->name, NULL, "dropped: %s", t->refused);
            pt_daemon_drop_target(d, t, NULL);
            continue;
        }
        if (t->gone_pending) {
            /* May free @t: nothing of it is used after. */
            t->gone_pending = FALSE;
            pt_daemon_target_gone(d, t);
            continue;
        }
        pt_target_health_tick(t, d->tick_start_us);
        pt_daemon_log_news(t);
        pt_daemon_check_name(d, t);
        if (t->state != PT_TARGET_ATTACHED)
            continue;
        if (t->sampling) {
            pt_daemon_late(d, t, FALSE);
            continue;
        }
        if (t->probe)
            probe_target_sample_vcpus(t->probe, d->tick_host);
        ctx = g_new0(PtSampleCtx, 1);
        ctx->d = d;
        ctx->tick = d->tick_id;
        t->sample_tick = d->tick_id;
        d->tick_pending++;
        pt_target_sample(t, d->tick_mono_ns, d->tick_now_ms, pt_daemon_on_sample, ctx);
    }
    if (--d->tick_pending == 0)
        pt_daemon_tick_end(d);
    else if (d->tick_running)
        d->tick_deadline = g_timeout_add(pt_daemon_tick_wait_ms(d), pt_daemon_tick_deadline, d);
    return G_SOURCE_CONTINUE;
}

/* Metrics and store rows for one target's fresh snapshot. */
static void
pt_daemon_absorb(PtDaemon *d, PtTarget *t, ProbeTargetSnap *snap, GArray *samples)
{
    GHashTableIter it;
    gpointer v;
    gboolean exits_counted = FALSE;

    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        ((PtIothread *)v)->seen = FALSE;

    for (guint i = 0; i < snap->iothreads->len; i++) {
        ProbeIothreadSnap *ios = snap->iothreads->pdata[i];
        PtIothread *io = pt_target_iothread(t, ios->id);
        PolicyMetrics m;
        StoreSample s;

        io->seen = TRUE;
        if (ios->have_triple) {
            pt_daemon_note_read(d, t, io, &ios->triple, snap->mono_ns / 1000);
            io->triple = ios->triple;
            io->have_triple = TRUE;
            /* A sample begun after our last write completed reads it back. */
            if (io->write_verify && snap->mono_ns / 1000 > io->write_done_us)
                pt_daemon_verify_write(d, t, io);
            if (!io->have_original)
                pt_daemon_capture_original(d, t, io);
            else if (!io->original_saved)
                pt_daemon_save_original(d, t, io);
        }
        if (g_strcmp0(io->group, ios->group) != 0) {
            if (ios->group)
                pt_info(t->name, io->id, "tuned with group %s: %u iothreads share devices",
                        ios->group, ios->group_size);
            else
                pt_info(t->name, io->id, "tuned on its own: it shares no device");
            g_free(io->group);
            io->group = g_strdup(ios->group);
        }
        io->group_size = ios->group_size;
        probe_derive_iothread(t->prev, snap, ios->id, &m);
        pt_iothread_push_metrics(io, &m);
        if (pt_history_sample(t->prev, snap, ios->id, &s)) {
            s.target = t->name;
            s.target_name = pt_target_display(t);
            s.iothread = io->id;
            g_array_append_val(samples, s);
            pt_iothread_totals_add(&io->totals, &s);
            /* Exits are the whole VM's, repeated in each iothread's row. */
            if (!exits_counted && s.kvm_exits != STORE_NULL) {
                t->exits_total += s.kvm_exits;
                t->have_exits_total = TRUE;
                exits_counted = TRUE;
            }
        }
    }
    /* Iothreads that went away (object-del) leave with their state. */
    g_hash_table_iter_init(&it, t->iothreads);
    while (g_hash_table_iter_next(&it, NULL, &v))
        if (!((PtIothread *)v)->seen)
            g_hash_table_iter_remove(&it);
}

static void
pt_daemon_record_tick_time(PtDaemon *d, gint64 work_start_us)
{
    gint64 now = g_get_monotonic_time();
    double ms = (now - d->tick_start_us) / 1000.0;
    g_autoptr(GArray) sorted = NULL;
    guint b = 0;

    d->stats.last_tick_ms = ms;
    d->stats.last_wait_ms = (work_start_us - d->tick_start_us) / 1000.0;
    d->stats.last_work_ms = (now - work_start_us) / 1000.0;
    d->stats.wait_s_total += d->stats.last_wait_ms / 1000.0;
    d->stats.work_s_total += d->stats.last_work_ms / 1000.0;
    while (b < PT_TICK_BUCKETS && ms / 1000.0 > pt_tick_bucket_le[b])
        b++;
    d->stats.tick_hist[b]++;
    d->stats.tick_s_sum += ms / 1000.0;
    if (d->tick_ms->len >= PT_TICK_RING)
        g_array_remove_index(d->tick_ms, 0);
    g_array_append_val(d->tick_ms, ms);
    sorted = g_array_copy(d->tick_ms);
    g_array_sort(sorted, (GCompareFunc)pt_double_cmp);
    d->stats.tick_ms_p50 = g_array_index(sorted, double, sorted->len / 2);
    d->stats.tick_ms_p99 = g_array_index(sorted, double, MIN(sorted->len - 1,
                                                             sorted->len * 99 / 100));
    if (ms > d->conf->interval_ms) {
        d->stats.overruns++;
        pt_warn(NULL, NULL, "tick took %.0f ms, longer than the %u ms interval "
                "(%.0f ms waiting for targets)", ms, d->conf->interval_ms,
                d->stats.last_wait_ms);
    }
}

gint
pt_double_cmp(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static void
pt_daemon_write_store(PtDaemon *d, GArray *samples)
{
    g_autoptr(GError) err = NULL;
    StoreTick tick;

    store_tick_init(&tick);
    tick.ts_ms = d->tick_now_ms;
    tick.len_ns = d->host_prev ? d->tick_mono_ns - d->host_prev->mono_ns : 0;
    pt_history_psi(d->host_prev, d->tick_host, &tick.psi);
    pt_history_host_cpu(d->host_prev, d->tick_host, &tick.cpu);
    tick.samples = (const StoreSample *)samples->data;
    tick.n_samples = samples->len;
    /* The first tick is the baseline of every counter: nothing to write. */
    if (tick.len_ns > 0 && samples->len && !store_tick_write(d->store, &tick, &err)) {
        d->stats.store_errors++;
        pt_err(NULL, NULL, "store: %s", err->message);
    }
    pt_daemon_store_notices(d);
}

static void
pt_daemon_maintain(PtDaemon *d)
{
    g_autoptr(GError) err = NULL;
    gboolean more = FALSE;

    /* A small slice per tick keeps every tick short; rollups of a busy
     * hour catch up over a few ticks. */
    if (!store_maintain_step(d->store, d->tick_now_ms, 10, &more, &err))
        pt_warn(NULL, NULL, "store maintenance: %s", err->message);
}

static void
pt_daemon_tick_end(PtDaemon *d)
{
    g_autoptr(GArray) samples = g_array_new(FALSE, TRUE, sizeof(StoreSample));
    g_autoptr(GPtrArray) results = g_steal_pointer(&d->tick_results);
    g_autoptr(GPtrArray) sampled = g_ptr_array_new();
    gint64 work_start_us = g_get_monotonic_time();

    g_clear_handle_id(&d->tick_deadline, g_source_remove);
    d->tick_running = FALSE;

    probe_derive_host(d->host_prev, d->tick_host, &d->host_metrics);
    for (guint i = 0; i < results->len; i++) {
        PtTickResult *r = results->pdata[i];

        pt_daemon_absorb(d, r->t, r->snap, samples);
        g_ptr_array_add(sampled, r->t);
        probe_target_snap_free(r->t->prev);
        r->t->prev = g_steal_pointer(&r->snap);
    }
    pt_daemon_write_store(d, samples);
    probe_host_snap_free(d->host_prev);
    d->host_prev = g_steal_pointer(&d->tick_host);

    /* A new file without the originals in it: the policy waits a tick. */
    if (pt_daemon_originals_on_disk(d))
        pt_daemon_run_policy(d, sampled);
    pt_daemon_maintain(d);
    d->stats.ticks++;
    pt_daemon_record_tick_time(d, work_start_us);
}

/* ---- accessors --------------------------------------------------------- */

const PtConf *
pt_daemon_get_conf(PtDaemon *d)
{
    return d->conf;
}

StoreDb *
pt_daemon_get_store(PtDaemon *d)
{
    return d->store;
}

PtMode
pt_daemon_get_mode(PtDaemon *d)
{
    return d->mode;
}

void
pt_daemon_get_stats(PtDaemon *d, PtDaemonStats *stats)
{
    *stats = d->stats;
}

const PolicyHost *
pt_daemon_get_host(PtDaemon *d)
{
    return &d->host_metrics;
}

double
pt_daemon_polling_cores(PtDaemon *d)
{
    GHashTableIter it;
    gpointer v;
    double cores = 0;

    g_hash_table_iter_init(&it, d->targets);
    while (g_hash_table_iter_next(&it, NULL, &v)) {
        GHashTableIter jt;
        gpointer w;

        g_hash_table_iter_init(&jt, ((PtTarget *)v)->iothreads);
        while (g_hash_table_iter_next(&jt, NULL, &w)) {
            PtIothread *io = w;
            const PolicyMetrics *m;

            if (!io->history->len || !io->have_triple || io->triple.poll_max_ns == 0)
                continue;
            m = &g_array_index(io->history, PolicyMetrics, io->history->len - 1);
            if (m->have_cpu)
                cores += m->cpu_pct / 100.0;
        }
    }
    return cores;
}
