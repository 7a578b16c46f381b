/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltuned: parse options, wire the components, run the loop.
 */
#include "pt-config.h"
#include "pt-conf.h"
#include "pt-control.h"
#include "pt-daemon.h"
#include "pt-lock.h"
#include "pt-log.h"
#include "pt-metrics.h"
#include "pt-stop.h"

#include <errno.h>
#include <locale.h>
#include <signal.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <glib-unix.h>
#include <glib/gstdio.h>
#include <systemd/sd-daemon.h>

#define PT_DEFAULT_CONFIG PT_SYSCONFDIR "/polltune/polltuned.conf"
#define PT_DEFAULT_PIDFILE PT_RUNTIME_DIR "/polltuned.pid"

typedef struct {
    GMainLoop *loop;
    PtDaemon *daemon;
    PtControl *control;
    PtMetricsServer *metrics;
    const char *config_path;        /* main()'s, which owns it */
    const char *db_lock_path;       /* main()'s too */
    const char *pidfile;
    int db_lock_fd;
    int pidfile_fd;
    gboolean stopping;
    int exit_code;
} PtMain;

/* The soft descriptor limit is often 1024 below a far higher hard limit
 * (systemd's default is 1024:524288); the daemon's use is bounded by its
 * own caps, so it takes what it may.  Returns the soft limit in force. */
static guint64
pt_raise_nofile(void)
{
    struct rlimit rl;

    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t want = rl.rlim_max;

        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            pt_warn(NULL, NULL, "raising the descriptor limit to %llu: %s",
                    (unsigned long long)want, g_strerror(errno));
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    return rl.rlim_cur == RLIM_INFINITY ? G_MAXUINT64 : (guint64)rl.rlim_cur;
}

static void
pt_main_stopped(gpointer data)
{
    PtMain *m = data;

    g_main_loop_quit(m->loop);
}

static gboolean
pt_on_term(gpointer data)
{
    PtMain *m = data;

    if (m->stopping) {
        pt_warn(NULL, NULL, "second signal: exiting without waiting");
        g_main_loop_quit(m->loop);
        return G_SOURCE_CONTINUE;
    }
    m->stopping = TRUE;
    pt_info(NULL, NULL, "stopping");
    sd_notify(0, "STOPPING=1\nSTATUS=restoring original values");
    pt_daemon_shutdown(m->daemon, pt_daemon_stop_timeout_ms(m->daemon),
                       G_CALLBACK(pt_main_stopped), m);
    return G_SOURCE_CONTINUE;
}

static gboolean
pt_on_hup(gpointer data)
{
    PtMain *m = data;

    sd_notify(0, "RELOADING=1");
    /* Logs the outcome itself, as for the control command. */
    pt_daemon_reload_file(m->daemon, NULL);
    sd_notify(0, "READY=1");
    return G_SOURCE_CONTINUE;
}

static gboolean
pt_on_watchdog(gpointer data)
{
    PtMain *m = data;
    PtDaemonStats st;
    g_autoptr(GPtrArray) targets = pt_daemon_list_targets(m->daemon);

    pt_daemon_get_stats(m->daemon, &st);
    sd_notifyf(0, "WATCHDOG=1\nSTATUS=%u targets, %" G_GUINT64_FORMAT " ticks, "
               "last tick %.1f ms, mode %s", targets->len, st.ticks, st.last_tick_ms,
               pt_mode_to_string(pt_daemon_get_mode(m->daemon)));
    return G_SOURCE_CONTINUE;
}

int
main(int argc, char **argv)
{
    PtMain m = { .exit_code = 0, .db_lock_fd = -1, .pidfile_fd = -1 };
    g_autoptr(GError) err = NULL;
    g_autoptr(GOptionContext) ctx = NULL;
    g_autoptr(PtConf) conf = NULL;
    g_autofree char *interval = NULL;
    /* Freed on every return: a start that fails (a full disk, say) must
     * leave nothing for LeakSanitizer to report. */
    g_autofree char *config_path = NULL;
    g_autofree char *pidfile = NULL, *db_lock_path = NULL;
    g_autofree char *opt_db = NULL, *opt_socket = NULL, *opt_mode = NULL;
    gint64 opt_interval = 0;
    PtConfOverrides ov = { .mode = PT_MODE_INVALID };
    gboolean foreground = FALSE, verbose = FALSE, version = FALSE, explicit_config;
    gboolean detach, check_config = FALSE;
    guint64 watchdog_us = 0;
    guint64 nofile;
    GOptionEntry entries[] = {
        { "config", 'c', 0, G_OPTION_ARG_FILENAME, &config_path,
          "Configuration file (default " PT_DEFAULT_CONFIG ")", "FILE" },
        { "db", 0, 0, G_OPTION_ARG_FILENAME, &opt_db, "History database", "FILE" },
        { "socket", 0, 0, G_OPTION_ARG_FILENAME, &opt_socket, "Control socket", "PATH" },
        { "interval", 'i', 0, G_OPTION_ARG_STRING, &interval, "Tick interval, e.g. 1s or 250ms", "DURATION" },
        { "mode", 'm', 0, G_OPTION_ARG_STRING, &opt_mode, "observe, recommend or enforce", "MODE" },
        { "pidfile", 0, 0, G_OPTION_ARG_FILENAME, &pidfile,
          "Pid file when detached (default " PT_DEFAULT_PIDFILE ")", "FILE" },
        { "check-config", 0, 0, G_OPTION_ARG_NONE, &check_config,
          "Validate the configuration (FILE, or --config's), print it in effect and exit",
          NULL },
        { "foreground", 'f', 0, G_OPTION_ARG_NONE, &foreground, "Do not detach from the terminal", NULL },
        { "verbose", 'v', 0, G_OPTION_ARG_NONE, &verbose, "Log debug messages", NULL },
        { "version", 'V', 0, G_OPTION_ARG_NONE, &version, "Print the version and exit", NULL },
        { NULL },
    };

    setlocale(LC_ALL, "");
    ctx = g_option_context_new("[--check-config [FILE]] - tune QEMU iothread polling");
    g_option_context_add_main_entries(ctx, entries, NULL);
    if (!g_option_context_parse(ctx, &argc, &argv, &err)) {
        fprintf(stderr, "polltuned: %s\n", err->message);
        return 2;
    }
    if (version) {
        printf("polltuned %s\n", PT_VERSION);
        return 0;
    }
    if (check_config && argc == 2 && !config_path) {
        config_path = g_strdup(argv[1]);
        argc--;
    }
    if (argc > 1) {
        fprintf(stderr, "polltuned: unexpected argument '%s'\n", argv[1]);
        return 2;
    }
    if (interval && (!pt_parse_duration(interval, &opt_interval, &err) ||
                     opt_interval < 100 || opt_interval > 3600000)) {
        fprintf(stderr, "polltuned: --interval: %s\n", err ? err->message : "must be 100ms..1h");
        return 2;
    }
    if (opt_mode && pt_mode_from_string(opt_mode) == PT_MODE_INVALID) {
        fprintf(stderr, "polltuned: --mode: '%s' is not observe, recommend or enforce\n", opt_mode);
        return 2;
    }
    pt_log_init(verbose);
    nofile = pt_raise_nofile();
    /* A file named on the command line must exist: a typo must not start
     * an enforcing daemon on defaults.  Only the default may be absent. */
    explicit_config = config_path != NULL;
    if (!config_path)
        config_path = g_strdup(PT_DEFAULT_CONFIG);
    m.config_path = config_path;
    conf = pt_conf_load(m.config_path, explicit_config, &err);
    if (!conf) {
        pt_err(NULL, NULL, "%s", err->message);
        return 1;
    }
    if (!explicit_config && !g_file_test(m.config_path, G_FILE_TEST_EXISTS))
        pt_info(NULL, NULL, "%s does not exist: using the defaults", m.config_path);
    /* Kept in the configuration, so every reload puts them in front too. */
    ov.database = opt_db;
    ov.control_socket = opt_socket;
    ov.mode = opt_mode ? pt_mode_from_string(opt_mode) : PT_MODE_INVALID;
    ov.interval_ms = (guint)opt_interval;
    pt_conf_apply_overrides(conf, &ov);

    /* Like nginx -t: validate and show, opening nothing else. */
    if (check_config) {
        g_autofree char *text = pt_conf_format(conf);

        fputs(text, stdout);
        return 0;
    }
    /* One daemon per database and per control socket: checked before
     * detaching, so the operator sees the error on the terminal. */
    {
        const PtConf *c = conf;

        if (!g_str_equal(c->database, ":memory:")) {
            if (!pt_daemon_prepare_state_dir(c->database, &err)) {
                pt_err(NULL, NULL, "%s", err->message);
                return 1;
            }
            db_lock_path = g_strconcat(c->database, ".lock", NULL);
            m.db_lock_path = db_lock_path;
            m.db_lock_fd = pt_lock_file_acquire(m.db_lock_path, c->database, &err);
            /* A read-only directory: no second daemon can write there either,
             * and opening the store says what to do about it. */
            if (m.db_lock_fd < 0 && g_error_matches(err, G_IO_ERROR, G_IO_ERROR_READ_ONLY))
                g_clear_error(&err);
            else if (m.db_lock_fd < 0) {
                pt_err(NULL, NULL, "%s", err->message);
                return 1;
            }
        }
        if (!pt_socket_check_unused(c->control_socket, &err)) {
            pt_err(NULL, NULL, "%s", err->message);
            pt_lock_file_release(m.db_lock_fd, m.db_lock_path);
            return 1;
        }
    }
    /* Under systemd (either variable set) the service manager supervises
     * and the journal logs; by hand, detach unless -f. */
    detach = !foreground && !getenv("NOTIFY_SOCKET") && !getenv("INVOCATION_ID");
    if (detach) {
        if (!pidfile)
            pidfile = g_strdup(PT_DEFAULT_PIDFILE);
        m.pidfile = pidfile;
        {
            g_autofree char *dir = g_path_get_dirname(m.pidfile);

            if (g_str_equal(dir, PT_RUNTIME_DIR))
                g_mkdir_with_parents(dir, 0755);
        }
        m.pidfile_fd = pt_lock_file_acquire(m.pidfile, m.pidfile, &err);
        if (m.pidfile_fd < 0) {
            pt_err(NULL, NULL, "%s", err->message);
            pt_lock_file_release(m.db_lock_fd, m.db_lock_path);
            return 1;
        }
        /* Empty until the detached child writes its own pid: a reader
         * never sees the parent's, which exits at once. */
        if (ftruncate(m.pidfile_fd, 0) < 0 || daemon(0, 0) < 0) {
            pt_err(NULL, NULL, "daemon: %s", g_strerror(errno));
            return 1;
        }
        /* stderr is /dev/null now: syslog is where an operator looks. */
        pt_log_use_syslog();
        /* The database lock first: once the pidfile names this process,
         * everything else that names a pid does too. */
        if ((m.db_lock_fd >= 0 &&
             !pt_lock_file_write_pid(m.db_lock_fd, m.db_lock_path, &err)) ||
            !pt_lock_file_write_pid(m.pidfile_fd, m.pidfile, &err)) {
            pt_err(NULL, NULL, "%s", err->message);
            return 1;
        }
    }
    signal(SIGPIPE, SIG_IGN);
    /*
     * The stop and reload signals are caught before the control socket
     * listens: a SIGTERM from then on (a client saw the socket, systemd
     * stopped the unit during a long start) is acted on once the main
     * loop runs, after the start, and never kills the daemon with its
     * writes half done.  Not g_unix_signal_add() for the stop: a reload
     * waiting for its file must see a stop request at once (pt-stop.h).
     */
    if (!pt_stop_watch(pt_on_term, &m, &err)) {
        pt_err(NULL, NULL, "%s", err->message);
        return 1;
    }
    g_unix_signal_add(SIGHUP, pt_on_hup, &m);

    m.daemon = pt_daemon_new(g_steal_pointer(&conf), NULL, &err);
    if (!m.daemon) {
        pt_err(NULL, NULL, "%s", err->message);
        return 1;
    }
    {
        const PtConf *c = pt_daemon_get_conf(m.daemon);

        PtControlLimits lim = { .max_connections = pt_control_conn_cap(nofile) };

        if (lim.max_connections < PT_CONTROL_MAX_CONNECTIONS)
            pt_warn(NULL, NULL, "control: at most %u connections, not %u: the descriptor "
                    "limit is %" G_GUINT64_FORMAT, lim.max_connections,
                    PT_CONTROL_MAX_CONNECTIONS, nofile);
        m.control = pt_control_new(m.daemon, c->control_socket, c->control_group,
                                   c->admin_group, &lim, &err);
        if (!m.control) {
            pt_err(NULL, NULL, "%s", err->message);
            pt_daemon_free(m.daemon);
            return 1;
        }
        if (c->metrics_listen) {
            guint cap = pt_metrics_conn_cap(c->metrics_max_conns, nofile);

            if (cap < c->metrics_max_conns)
                pt_warn(NULL, NULL, "metrics: at most %u connections, not %u: the "
                        "descriptor limit is %" G_GUINT64_FORMAT, cap,
                        c->metrics_max_conns, nofile);
            m.metrics = pt_metrics_server_new(m.daemon, c->metrics_listen, cap,
                                              c->metrics_idle_ms, &err);
            if (!m.metrics) {
                /* Scraping is optional; tuning is not held up by it. */
                pt_warn(NULL, NULL, "%s; metrics endpoint disabled", err->message);
                g_clear_error(&err);
            }
        }
    }
    if (!pt_daemon_start(m.daemon, &err)) {
        pt_err(NULL, NULL, "%s", err->message);
        pt_control_free(m.control);
        pt_daemon_free(m.daemon);
        return 1;
    }

    m.loop = g_main_loop_new(NULL, FALSE);
    if (sd_watchdog_enabled(0, &watchdog_us) > 0)
        g_timeout_add(watchdog_us / 2000, pt_on_watchdog, &m);
    pt_info(NULL, NULL, "polltuned %s running: mode %s, interval %u ms, database %s, socket %s",
            PT_VERSION, pt_mode_to_string(pt_daemon_get_mode(m.daemon)),
            pt_daemon_get_conf(m.daemon)->interval_ms, pt_daemon_get_conf(m.daemon)->database,
            pt_daemon_get_conf(m.daemon)->control_socket);
    sd_notify(0, "READY=1\nSTATUS=running");
    g_main_loop_run(m.loop);

    pt_metrics_server_free(m.metrics);
    pt_control_free(m.control);
    pt_daemon_free(m.daemon);
    g_main_loop_unref(m.loop);
    pt_lock_file_release(m.pidfile_fd, m.pidfile);
    pt_lock_file_release(m.db_lock_fd, m.db_lock_path);
    pt_info(NULL, NULL, "stopped");
    return m.exit_code;
}
