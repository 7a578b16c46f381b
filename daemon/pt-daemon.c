/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-daemon: the lifecycle.  It stands above every other file of the
 * daemon's state and wires them: the hooks by which a file below calls
 * back into the files that own what it cannot see (PtDaemonFileResave).
 */
#include "pt-daemon.h"
#include "pt-daemon-metadata.h"
#include "pt-daemon-originals.h"
#include "pt-daemon-private.h"
#include "pt-daemon-tick.h"
#include "pt-log.h"
#include "pt-stop.h"

#include <errno.h>
#include <math.h>

/* ---- lifecycle --------------------------------------------------------- */

/* The overrides, policy-set rules and runtime mode into a new file: what
 * pt_daemon_originals_on_disk() asks for (PtDaemonFileResave.settings). */
static gboolean
pt_daemon_settings_rewrite(PtDaemon *d, gboolean say)
{
    gboolean settled;
    guint overrides = 0, rules = 0;

    settled = pt_daemon_overrides_rewrite(d, g_get_real_time() / 1000, say, &overrides);
    settled = pt_daemon_rules_rewrite(d, say, &rules) && settled;
    settled = pt_daemon_mode_rewrite(d, say) && settled;
    if ((overrides || rules || d->runtime_mode != PT_MODE_INVALID) && (say || settled))
        pt_info(NULL, NULL, "store: a new history database file: %u overrides, %u policy-set "
                "rules%s written into it again%s", overrides, rules,
                d->runtime_mode != PT_MODE_INVALID ? " and the mode set at run time" : "",
                settled ? "" : "; what failed is tried again at every tick");
    return settled;
}

static const PtDaemonFileResave pt_daemon_resave = {
    .settings = pt_daemon_settings_rewrite,
    .memory = pt_daemon_memory_resave,
};

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
        d->root_copy.proc = g_strdup(roots->proc_root);
        d->root_copy.debugfs = g_strdup(roots->debugfs_root);
        d->root_copy.tracefs = g_strdup(roots->tracefs_root);
    }
    d->proot.proc = d->root_copy.proc;
    d->proot.debugfs = d->root_copy.debugfs;
    d->proot.tracefs = d->root_copy.tracefs;
    d->targets.by_name = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       (GDestroyNotify)pt_target_unref);
    d->tick = pt_tick_new(&d->proot);
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
    d->file = pt_daemon_file_new(d->store, &pt_daemon_resave);
    d->engine = policy_engine_new(conf->policy, error);
    if (!d->engine)
        return NULL;
    return g_steal_pointer(&d);
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
    pt_tick_halt(d->tick);
    for (guint k = 0; k < STORE_TARGET_KIND_MAX; k++)
        pt_target_kinds[k]->stop(d);
    if (d->targets.by_name) {
        GHashTableIter it;
        gpointer v;

        g_hash_table_iter_init(&it, d->targets.by_name);
        while (g_hash_table_iter_next(&it, NULL, &v)) {
            PtTarget *t = v;

            t->detached = TRUE;
            if (t->ops->close)
                t->ops->close(t);
        }
        g_hash_table_unref(d->targets.by_name);
    }
    g_clear_pointer(&d->tick, pt_tick_free);
    /* What the last tick learnt, if the store could not take it then. */
    if (d->engine && d->store)
        pt_daemon_memory_save(d);
    pt_daemon_memory_free(d);
    policy_engine_free(d->engine);
    pt_daemon_store_close(d);
    pt_daemon_file_free(d->file);
    pt_conf_free(d->conf);
    g_free(d->run_marker);
    g_free(d->root_copy.proc);
    g_free(d->root_copy.debugfs);
    g_free(d->root_copy.tracefs);
    g_free(d);
}

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
    pt_daemon_tick_every(d, d->conf->interval_ms);
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
    if (conf->interval_ms != d->conf->interval_ms)
        pt_daemon_tick_every(d, conf->interval_ms);
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
