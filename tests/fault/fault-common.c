/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fault-common.h"

#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

FaultCase *
fault_case_new(void)
{
    g_autoptr(GError) err = NULL;
    FaultCase *fc;

    if (pt_test_skip_without_qemu())
        return NULL;
    /* A daemon whose peer vanished must not die of SIGPIPE, nor the test. */
    signal(SIGPIPE, SIG_IGN);
    fc = g_new0(FaultCase, 1);
    fc->dir = g_dir_make_tmp("pt-fault-XXXXXX", &err);
    g_assert_no_error(err);
    fc->healthy = fault_qemu_start(fc, "healthy");
    return fc;
}

PtTestQemu *
fault_qemu_start(FaultCase *fc, const char *name)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *sock = g_strdup_printf("%s/%s.qmp", fc->dir, name);
    g_autofree char *qmp = g_strdup_printf("unix:%s,server=on,wait=off", sock);
    const char *args[] = { "-name", name,
                           "-object", "iothread,id=iot0", "-object", "iothread,id=iot1",
                           "-drive", "driver=null-co,if=none,id=drive0",
                           "-qmp", qmp, NULL };
    PtTestQemu *q = pt_test_qemu_start(args, &err);

    g_assert_no_error(err);
    return q;
}

void
fault_daemon_start(FaultCase *fc, const char *extra)
{
    static const char *const defaults[][2] = {
        { "interval", "1s" }, { "qmp-timeout", "500ms" }, { "mode", "enforce" },
        { "metrics-listen", "" },
    };
    g_autoptr(GError) err = NULL;
    g_autoptr(GString) daemon = g_string_new(NULL);
    g_autofree char *conf = NULL;

    /* @extra's keys instead of these: a key may be set once. */
    for (gsize i = 0; i < G_N_ELEMENTS(defaults); i++) {
        g_autofree char *set = g_strdup_printf("(^|\n)\\s*%s\\s*=", defaults[i][0]);

        if (!extra || !g_regex_match_simple(set, extra, 0, 0))
            g_string_append_printf(daemon, "%s = %s\n", defaults[i][0], defaults[i][1]);
    }
    conf = g_strdup_printf("%s%s[targets]\nlibvirt = false\nqmp-globs = %s/*.qmp\n"
                           "[policy]\ndefault = static:40000/2/2\nmin-dwell = 0\n",
                           daemon->str, extra ? extra : "", fc->dir);

    fc->d = pt_test_daemon_start(conf, &err);
    g_assert_no_error(err);
    g_assert_true(fault_wait_attached(fc, "healthy", 2, 30000));
}

PtTestDaemon *
fault_daemon_start_nofile(const char *conf, guint nofile)
{
    g_autofree char *prlimit = g_find_program_in_path("prlimit");
    g_autofree char *old = g_strdup(g_getenv("PT_DAEMON_WRAPPER"));
    g_autofree char *wrapper = NULL;
    g_autoptr(GError) err = NULL;
    PtTestDaemon *d;

    if (!prlimit) {
        g_test_skip("prlimit (util-linux) is not installed: cannot lower the "
                    "daemon's descriptor limit");
        return NULL;
    }
    /* Before a checker in the old wrapper, which execs in place too. */
    wrapper = g_strdup_printf("%s --nofile=%u:%u %s", prlimit, nofile, nofile, old ? old : "");
    g_setenv("PT_DAEMON_WRAPPER", wrapper, TRUE);
    d = pt_test_daemon_start(conf, &err);
    if (old)
        g_setenv("PT_DAEMON_WRAPPER", old, TRUE);
    else
        g_unsetenv("PT_DAEMON_WRAPPER");
    g_assert_no_error(err);
    return d;
}

static json_object *
fault_status(FaultCase *fc)
{
    g_autoptr(GError) err = NULL;
    json_object *reply = pt_test_daemon_call(fc->d, "status", NULL, &err);
    json_object *ret = NULL;

    if (reply && json_object_object_get_ex(reply, "return", &ret))
        json_object_get(ret);
    json_object_put(reply);
    return ret;
}

char *
fault_target_state(FaultCase *fc, const char *name, gint *n_iothreads)
{
    g_autoptr(json_object) st = fault_status(fc);
    json_object *t = st ? pt_test_status_target(st, name) : NULL;

    if (n_iothreads)
        *n_iothreads = t ? (gint)json_object_array_length(pt_json_path(t, "iothreads")) : -1;
    return t ? g_strdup(pt_json_path_str(t, "state")) : NULL;
}

gboolean
fault_wait_attached(FaultCase *fc, const char *name, guint n_iothreads, guint timeout_ms)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;

    do {
        g_autoptr(json_object) st = fault_status(fc);
        json_object *t = st ? pt_test_status_target(st, name) : NULL;

        if (t && g_strcmp0(pt_json_path_str(t, "state"), "attached") == 0 &&
            json_object_array_length(pt_json_path(t, "iothreads")) == n_iothreads)
            return TRUE;
        g_usleep(100000);
    } while (g_get_monotonic_time() < deadline);
    return FALSE;
}

static void
fault_assert_alive(FaultCase *fc)
{
    int status;

    if (waitpid(fc->d->pid, &status, WNOHANG) == fc->d->pid) {
        g_autofree char *log = NULL;

        fc->d->pid = 0;
        g_file_get_contents(fc->d->log_path, &log, NULL, NULL);
        g_error("polltuned died (status 0x%x); log:\n%s", status, log ? log : "");
    }
}

void
fault_assert_healthy_for(FaultCase *fc, guint seconds)
{
    fault_assert_healthy_watch(fc, seconds, NULL, NULL);
}

void
fault_assert_healthy_watch(FaultCase *fc, guint seconds, FaultStatusFunc fn, gpointer data)
{
    gint64 start = g_get_monotonic_time();
    gint64 end = start + (gint64)seconds * G_USEC_PER_SEC;
    gint64 last_ts = -1, last_ticks = -1, first_ticks = -1;
    gint64 ts_moved = start, ticks_moved = start;

    while (g_get_monotonic_time() < end) {
        g_autoptr(json_object) st = NULL;
        json_object *t;
        gint64 now;

        fault_assert_alive(fc);
        st = fault_status(fc);
        now = g_get_monotonic_time();
        if (st && fn)
            fn(st, data);
        if (st && (t = pt_test_status_target(st, "healthy"))) {
            gint64 ticks = pt_json_path_int(st, "ticks");
            gint64 ts = pt_json_path_int(t, "iothreads/0/metrics/ts_ms");

            if (first_ticks < 0)
                first_ticks = ticks;
            if (ticks != last_ticks)
                ticks_moved = now;
            if (ts != last_ts)
                ts_moved = now;
            last_ticks = ticks;
            last_ts = ts;
        }
        if (now - ticks_moved > 2500000 || now - ts_moved > 2500000)
            g_error("after %.1f s: ticks last advanced %.1f s ago, healthy sampled %.1f s ago",
                    (now - start) / 1e6, (now - ticks_moved) / 1e6, (now - ts_moved) / 1e6);
        g_usleep(250000);
    }
    g_assert_cmpint(last_ticks - first_ticks, >=, (gint64)seconds - 2);
}

void
fault_assert_db_intact(const char *db_path)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;

    g_assert_cmpint(sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    g_assert_cmpint(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL), ==,
                    SQLITE_OK);
    g_assert_cmpint(sqlite3_step(stmt), ==, SQLITE_ROW);
    g_assert_cmpstr((const char *)sqlite3_column_text(stmt, 0), ==, "ok");
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

void
fault_case_finish(FaultCase *fc)
{
    int status;

    fault_assert_alive(fc);
    status = pt_test_daemon_stop(fc->d);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_autofree char *log = NULL;

        g_file_get_contents(fc->d->log_path, &log, NULL, NULL);
        g_error("polltuned did not stop cleanly (status 0x%x); log:\n%s", status,
                log ? log : "");
    }
    fault_assert_db_intact(fc->db ? fc->db : fc->d->db_path);
}

void
fault_case_free(FaultCase *fc)
{
    if (!fc)
        return;
    pt_test_daemon_free(fc->d);
    pt_test_qemu_free(fc->healthy);
    if (fc->dir) {
        g_autoptr(GDir) gd = g_dir_open(fc->dir, 0, NULL);
        const char *n;

        while (gd && (n = g_dir_read_name(gd))) {
            g_autofree char *p = g_build_filename(fc->dir, n, NULL);

            g_unlink(p);
        }
        g_rmdir(fc->dir);
    }
    g_free(fc->dir);
    g_free(fc);
}
