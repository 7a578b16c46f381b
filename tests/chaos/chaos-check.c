/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chaos run's invariants, checked between any two steps of the
 * schedule: the daemon lives and answers root, samples keep their cadence
 * in the daemon's own ticks, descriptors, memory and log rate stay bounded,
 * no sanitizer speaks, originals belong to their QEMU, and the database
 * passes integrity_check.
 */
#include "chaos.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>
#include "pt-test-qmp-sync.h"

void
chaos_violation(Chaos *ch, const char *invariant, const char *fmt, ...)
{
    g_autofree char *msg = NULL;
    guint n;
    va_list ap;

    va_start(ap, fmt);
    msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    n = GPOINTER_TO_UINT(g_hash_table_lookup(ch->v.count, invariant)) + 1;
    g_hash_table_insert(ch->v.count, (gpointer)invariant, GUINT_TO_POINTER(n));
    if (n == 1)
        g_hash_table_insert(ch->v.first, (gpointer)invariant,
                            g_strdup_printf("t=%.1f s: %s",
                                            (g_get_monotonic_time() - ch->start) / 1e6, msg));
    /* The first few in full; a flood of the same one would bury the rest. */
    if (n <= 3)
        g_printerr("# VIOLATION %s (seed %u, t=%.1f s): %s\n", invariant, ch->seed,
                   (g_get_monotonic_time() - ch->start) / 1e6, msg);
}

int
chaos_unix_connect(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

    g_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The next line from @fd into @buf, waiting until @deadline (monotonic µs). */
static char *
chaos_read_line(int fd, GString *buf, gint64 deadline, GError **error)
{
    for (;;) {
        char *nl = memchr(buf->str, '\n', buf->len);
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        char chunk[4096];
        ssize_t n;

        if (nl) {
            char *line = g_strndup(buf->str, nl - buf->str);

            g_string_erase(buf, 0, nl - buf->str + 1);
            return line;
        }
        if (left <= 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no complete line in time");
            return NULL;
        }
        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        n = read(fd, chunk, sizeof(chunk));
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n <= 0) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_CLOSED, "closed by the daemon%s%s",
                        buf->len ? " after: " : "", buf->str);
            return NULL;
        }
        g_string_append_len(buf, chunk, n);
    }
}

json_object *
chaos_control_call(Chaos *ch, const char *command, const char *args_json, guint timeout_ms,
                   GError **error)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_autoptr(GString) buf = g_string_new(NULL);
    g_autofree char *greeting = NULL;
    g_autofree char *req = NULL;
    json_object *reply = NULL;
    gsize off = 0;
    int fd = chaos_unix_connect(ch->d->socket_path);

    /* A full listen backlog (a burst of connect-and-close) makes a
     * non-blocking connect fail at once where a blocking one would wait:
     * wait like it, within the deadline. */
    while (fd < 0 && errno == EAGAIN && g_get_monotonic_time() < deadline) {
        g_usleep(20 * 1000);
        fd = chaos_unix_connect(ch->d->socket_path);
    }
    if (fd < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "%s: connect: %s",
                    ch->d->socket_path, g_strerror(errno));
        return NULL;
    }
    greeting = chaos_read_line(fd, buf, deadline, error);
    if (!greeting) {
        g_prefix_error(error, "greeting: ");
        goto out;
    }
    if (!strstr(greeting, "\"QMP\"")) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "greeting: %s", greeting);
        goto out;
    }
    req = g_strdup_printf("{\"execute\": \"%s\", \"arguments\": %s, \"id\": 1}\n", command,
                          args_json ? args_json : "{}");
    while (off < strlen(req)) {
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };
        ssize_t n;

        if (g_get_monotonic_time() > deadline) {
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "request not taken in time");
            goto out;
        }
        if (poll(&pfd, 1, 100) <= 0)
            continue;
        n = send(fd, req + off, strlen(req) - off, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (n < 0) {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno), "send: %s",
                        g_strerror(errno));
            goto out;
        }
        off += n;
    }
    for (;;) {
        g_autofree char *line = chaos_read_line(fd, buf, deadline, error);

        if (!line) {
            g_prefix_error(error, "%s: ", command);
            break;
        }
        reply = json_tokener_parse(line);
        if (reply && json_object_object_get_ex(reply, "event", NULL)) {
            g_clear_pointer(&reply, json_object_put);
            continue;
        }
        if (!reply)
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: not JSON: %s",
                        command, line);
        break;
    }
out:
    close(fd);
    return reply;
}

gboolean
chaos_daemon_alive(Chaos *ch)
{
    int status;

    if (ch->daemon_down || ch->d->pid <= 0)
        return TRUE;
    if (waitpid(ch->d->pid, &status, WNOHANG) != ch->d->pid)
        return TRUE;
    ch->d->pid = 0;
    chaos_check_log(ch);
    chaos_violation(ch, "daemon-alive", "polltuned died: %s %d (log: %s)",
                    WIFSIGNALED(status) ? "signal" : "exit status",
                    WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), ch->d->log_path);
    return FALSE;
}

void
chaos_check_log(Chaos *ch)
{
    static const char *const sanitizer[] = {
        "AddressSanitizer", "LeakSanitizer", "runtime error:", "-CRITICAL **",
    };
    g_autoptr(GFile) f = g_file_new_for_path(ch->d->log_path);
    g_autoptr(GFileInputStream) in = g_file_read(f, NULL, NULL);
    g_autoptr(GString) text = g_string_new(NULL);
    gint64 now = g_get_monotonic_time();
    char chunk[65536];
    gssize n;
    guint keep = 0;

    if (!in || !g_seekable_seek(G_SEEKABLE(in), ch->log_read, G_SEEK_SET, NULL, NULL))
        return;
    while ((n = g_input_stream_read(G_INPUT_STREAM(in), chunk, sizeof(chunk), NULL, NULL)) > 0)
        g_string_append_len(text, chunk, n);
    /* Only whole lines count; a partial one is read again next time. */
    for (gsize i = 0, start = 0; i < text->len; i++) {
        if (text->str[i] != '\n')
            continue;
        g_array_append_val(ch->log_stamps, now);
        for (guint k = 0; k < G_N_ELEMENTS(sanitizer); k++)
            if (g_strstr_len(text->str + start, i - start, sanitizer[k]))
                chaos_violation(ch, "no-sanitizer-report", "polltuned logged: %.*s",
                                (int)MIN(i - start, 300), text->str + start);
        ch->log_read += i + 1 - start;
        start = i + 1;
    }
    while (keep < ch->log_stamps->len &&
           g_array_index(ch->log_stamps, gint64, keep) < now - 60 * G_USEC_PER_SEC)
        keep++;
    g_array_remove_range(ch->log_stamps, 0, keep);
    ch->log_max_per_min = MAX(ch->log_max_per_min, ch->log_stamps->len);
    /* The first minute counts as a whole minute: it holds the start-up. */
    if (ch->log_stamps->len > CHAOS_LOG_LINES_PER_MIN)
        chaos_violation(ch, "log-rate", "%u log lines in the last minute (bound %u)",
                        ch->log_stamps->len, CHAOS_LOG_LINES_PER_MIN);
}

static void
chaos_check_proc(Chaos *ch)
{
    g_autofree char *fd_dir = g_strdup_printf("/proc/%d/fd", ch->d->pid);
    g_autofree char *status_path = g_strdup_printf("/proc/%d/status", ch->d->pid);
    g_autofree char *status = NULL;
    g_autoptr(GDir) dir = g_dir_open(fd_dir, 0, NULL);
    guint fds = 0;
    const char *rss;

    while (dir && g_dir_read_name(dir))
        fds++;
    ch->fd_max = MAX(ch->fd_max, fds);
    if (fds > CHAOS_FD_BOUND)
        chaos_violation(ch, "fd-bound", "polltuned holds %u descriptors (bound %u of %u)", fds,
                        CHAOS_FD_BOUND, CHAOS_DAEMON_NOFILE);
    if (g_file_get_contents(status_path, &status, NULL, NULL) &&
        (rss = strstr(status, "VmRSS:"))) {
        guint64 kb = g_ascii_strtoull(rss + 6, NULL, 10);

        if (!ch->rss_base_kb)
            ch->rss_base_kb = kb;
        ch->rss_max_kb = MAX(ch->rss_max_kb, kb);
        if (kb > ch->rss_base_kb + CHAOS_RSS_GROWTH_KB)
            chaos_violation(ch, "rss-bound", "RSS %" G_GUINT64_FORMAT " KiB, %" G_GUINT64_FORMAT
                            " KiB at the first check (bound +%u KiB)", kb, ch->rss_base_kb,
                            CHAOS_RSS_GROWTH_KB);
    }
}

static gboolean
chaos_triple_eq(const ChaosTriple *a, guint64 max_ns, guint64 grow, guint64 shrink)
{
    return a->max_ns == max_ns && a->grow == grow && a->shrink == shrink;
}

/* What QEMU itself says, through the test's own monitor. */
static GPtrArray *
chaos_vm_iothreads(Chaos *ch, ChaosVm *vm)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpClient) c = qmp_client_new(NULL, &(QmpClientOptions){ .name = vm->name,
                                                                          .timeout_ms = 3000 });
    GPtrArray *ios = NULL;

    if (!qmp_client_connect_path(c, vm->q->qmp_path, &err) ||
        !qmp_client_wait_ready_sync(c, &err) || !(ios = qmp_query_iothreads_sync(c, &err)))
        chaos_violation(ch, "qemu-monitor", "%s: own monitor: %s", vm->name, err->message);
    return ios;
}

static gboolean
chaos_triple_allowed(Chaos *ch, ChaosVm *vm, QmpIothread *io, gboolean strict)
{
    gboolean ok = chaos_triple_eq(&vm->original, io->poll_max_ns, io->poll_grow,
                                  io->poll_shrink);

    for (guint k = 0; !strict && !ok && k < ch->policy_triples->len; k++)
        ok = chaos_triple_eq(ch->policy_triples->pdata[k], io->poll_max_ns, io->poll_grow,
                             io->poll_shrink);
    return ok;
}

void
chaos_check_triples(Chaos *ch, ChaosVm *vm, gboolean strict, const char *when)
{
    g_autoptr(GPtrArray) ios = chaos_vm_iothreads(ch, vm);
    gboolean all_ok = TRUE;

    for (guint i = 0; ios && i < ios->len; i++)
        all_ok &= chaos_triple_allowed(ch, vm, ios->pdata[i], strict);
    /* While the daemon runs, a look may fall between the three qom-sets of
     * one apply; a triple it leaves mixed is gone by the next tick. */
    if (!all_ok && !strict) {
        g_usleep(1500 * 1000);
        g_clear_pointer(&ios, g_ptr_array_unref);
        ios = chaos_vm_iothreads(ch, vm);
    }
    for (guint i = 0; ios && i < ios->len; i++) {
        QmpIothread *io = ios->pdata[i];

        if (!chaos_triple_allowed(ch, vm, io, strict))
            chaos_violation(ch, "qemu-triple",
                            "%s (instance %u)/%s after %s: holds %" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                            "/%" G_GUINT64_FORMAT ", its own original is %" G_GUINT64_FORMAT
                            "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "%s", vm->name,
                            vm->instance, io->id, when, io->poll_max_ns, io->poll_grow,
                            io->poll_shrink, vm->original.max_ns, vm->original.grow,
                            vm->original.shrink, strict ? "" : " and it is no policy's");
    }
}

void
chaos_check_integrity(Chaos *ch, const char *when)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    const char *path = ch->mnt ? NULL : ch->d->db_path;
    g_autofree char *mnt_db = ch->mnt ? g_build_filename(ch->mnt, "history.db", NULL) : NULL;
    int rc;

    path = mnt_db ? mnt_db : path;
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 5000);
        rc = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &stmt, NULL);
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_step(stmt);
    if (rc != SQLITE_ROW)
        chaos_violation(ch, "integrity", "%s %s: %s", path, when, sqlite3_errmsg(db));
    else if (g_strcmp0((const char *)sqlite3_column_text(stmt, 0), "ok") != 0)
        chaos_violation(ch, "integrity", "%s %s: integrity_check says %s", path, when,
                        sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

void
chaos_vm_ineligible(Chaos *ch, ChaosVm *vm, const char *why)
{
    vm->tracking = FALSE;
    vm->eligible_since = 0;
    vm->since_what = why;
}

void
chaos_vm_eligible(Chaos *ch, ChaosVm *vm)
{
    vm->tracking = FALSE;
    vm->eligible_since = g_get_monotonic_time();
    vm->eligible_real_ms = g_get_real_time() / 1000;
}

/*
 * A running QEMU must be sampled every tick.  Time is counted in the
 * daemon's own ticks ("ticks" in status), not on the wall clock, so a tick
 * the loaded machine delays is no gap: the iothreads' newest sample
 * timestamp (the tick's own) must change at least every CHAOS_GAP_TICKS
 * ticks.  After a stop or restart it must be sampled again within
 * CHAOS_RECOVER_S.
 */
static void
chaos_check_samples(Chaos *ch, json_object *st)
{
    gint64 ticks = pt_json_path_int(st, "ticks");
    gint64 now = g_get_monotonic_time();

    for (guint i = 0; i < CHAOS_N_VMS; i++) {
        ChaosVm *vm = &ch->vms[i];
        json_object *t = pt_test_status_target(st, vm->name);
        json_object *ios = t ? pt_json_path(t, "iothreads") : NULL;
        gint64 ts = G_MAXINT64;

        if (!vm->eligible_since)
            continue;
        for (size_t k = 0; ios && k < json_object_array_length(ios); k++) {
            json_object *io = json_object_array_get_idx(ios, k);
            json_object *orig = pt_json_path(io, "original");

            ts = MIN(ts, pt_json_path(io, "metrics") ? pt_json_path_int(io, "metrics/ts_ms") : 0);
            if (orig && !json_object_is_type(orig, json_type_null) &&
                !chaos_triple_eq(&vm->original, pt_json_path_int(orig, "poll-max-ns"),
                                 pt_json_path_int(orig, "poll-grow"),
                                 pt_json_path_int(orig, "poll-shrink")))
                chaos_violation(ch, "originals-own",
                                "%s (instance %u)/%s: status says original %s, its own is %"
                                G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT,
                                vm->name, vm->instance, pt_json_path_str(io, "id"),
                                json_object_to_json_string(orig), vm->original.max_ns,
                                vm->original.grow, vm->original.shrink);
        }
        if (!ios || json_object_array_length(ios) != CHAOS_N_IOTHREADS)
            ts = 0;
        if (!vm->tracking) {
            if (ts > vm->eligible_real_ms && ts != G_MAXINT64) {
                vm->tracking = TRUE;
                vm->last_ts_ms = ts;
                vm->ticks_at_ts = ticks;
            } else if (now - vm->eligible_since > CHAOS_RECOVER_S * G_USEC_PER_SEC) {
                chaos_violation(ch, "sampled-again", "%s: not sampled within %d s after %s "
                                "(state %s)", vm->name, CHAOS_RECOVER_S, vm->since_what,
                                t ? pt_json_path_str(t, "state") : "absent");
                chaos_vm_eligible(ch, vm);
            }
            continue;
        }
        if (ts != vm->last_ts_ms) {
            vm->followed_ticks += ticks - vm->ticks_at_ts;
            vm->last_ts_ms = ts;
            vm->ticks_at_ts = ticks;
            if (vm->triple_check_due) {
                vm->triple_check_due = FALSE;
                chaos_check_triples(ch, vm, FALSE, vm->since_what);
            }
        } else if (ticks - vm->ticks_at_ts > CHAOS_GAP_TICKS) {
            chaos_violation(ch, "sample-every-tick", "%s: no sample for %" G_GINT64_FORMAT
                            " ticks (state %s)", vm->name, ticks - vm->ticks_at_ts,
                            t ? pt_json_path_str(t, "state") : "absent");
            vm->ticks_at_ts = ticks;
        }
    }
}

/* After the disk is freed, the store must say "ok" with nothing pending. */
static void
chaos_check_store(Chaos *ch, json_object *st)
{
    gint64 now = g_get_monotonic_time();

    if (!ch->disk_freed_at)
        return;
    if (g_strcmp0(pt_json_path_str(st, "store/health"), "ok") == 0 &&
        pt_json_path_int(st, "store/pending") == 0) {
        ch->disk_freed_at = 0;
    } else if (now - ch->disk_freed_at > CHAOS_STORE_RECOVER_S * G_USEC_PER_SEC) {
        chaos_violation(ch, "store-recovers", "%d s after the disk was freed: health %s, "
                        "%" G_GINT64_FORMAT " pending, %" G_GINT64_FORMAT " dropped",
                        CHAOS_STORE_RECOVER_S, pt_json_path_str(st, "store/health"),
                        pt_json_path_int(st, "store/pending"),
                        pt_json_path_int(st, "store/dropped"));
        ch->disk_freed_at = 0;
    }
}

void
chaos_check_all(Chaos *ch)
{
    g_autoptr(GError) err = NULL;
    json_object *reply, *st = NULL;

    chaos_check_log(ch);
    if (ch->daemon_down || !chaos_daemon_alive(ch))
        return;
    chaos_check_proc(ch);
    reply = chaos_control_call(ch, "status", NULL, CHAOS_CONTROL_TIMEOUT_MS, &err);
    if (!reply || !json_object_object_get_ex(reply, "return", &st))
        chaos_violation(ch, "control-answers-root", "status: %s",
                        reply ? json_object_to_json_string(reply) : err->message);
    else
        chaos_check_samples(ch, st), chaos_check_store(ch, st);
    json_object_put(reply);
}
