/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "e2e-guest.h"
#include "e2e-keep.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/wait.h>

typedef struct {
    gint64 host_ms;
    char *line;
} SerialLine;

struct GuestSerial {
    GMutex lock;
    GCond cond;
    GPtrArray *lines;           /* SerialLine */
    GThread *thread;
    int fd;
    char *path;                 /* following a file instead of a pipe */
    int log_fd;                 /* every line as it comes, or -1 */
    gboolean stop;
    gboolean eof;
};

static void
serial_line_free(gpointer p)
{
    SerialLine *l = p;

    g_free(l->line);
    g_free(l);
}

static void
serial_add(GuestSerial *s, GString *buf)
{
    SerialLine *l = g_new0(SerialLine, 1);

    /* The console ends lines with \r\n. */
    while (buf->len && (buf->str[buf->len - 1] == '\r' || buf->str[buf->len - 1] == '\n'))
        g_string_truncate(buf, buf->len - 1);
    l->host_ms = g_get_real_time() / 1000;
    l->line = g_strdup(buf->str);
    g_string_truncate(buf, 0);
    g_mutex_lock(&s->lock);
    if (s->log_fd >= 0) {
        g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT " %s\n", l->host_ms, l->line);

        if (write(s->log_fd, text, strlen(text)) < 0) {
            close(s->log_fd);
            s->log_fd = -1;
        }
    }
    g_ptr_array_add(s->lines, l);
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
}

/* Lines are stamped as they arrive, one read() at a time, so a burst read
 * in one go gets one time: fine at the 1 s spacing of PT- lines. */
static gpointer
serial_thread(gpointer data)
{
    GuestSerial *s = data;
    g_autoptr(GString) buf = g_string_new(NULL);
    char chunk[4096];

    for (;;) {
        ssize_t n;

        g_mutex_lock(&s->lock);
        if (s->stop) {
            g_mutex_unlock(&s->lock);
            break;
        }
        g_mutex_unlock(&s->lock);
        if (s->fd < 0 && s->path) {
            s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
            if (s->fd < 0) {
                g_usleep(20000);
                continue;
            }
        }
        n = read(s->fd, chunk, sizeof(chunk));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!s->path)
                break;
            /* A file that has not grown yet. */
            g_usleep(20000);
            continue;
        }
        for (ssize_t i = 0; i < n; i++) {
            g_string_append_c(buf, chunk[i]);
            if (chunk[i] == '\n')
                serial_add(s, buf);
        }
    }
    g_mutex_lock(&s->lock);
    s->eof = TRUE;
    g_cond_broadcast(&s->cond);
    g_mutex_unlock(&s->lock);
    return NULL;
}

static GuestSerial *
serial_new(int fd, const char *path)
{
    GuestSerial *s = g_new0(GuestSerial, 1);

    g_mutex_init(&s->lock);
    g_cond_init(&s->cond);
    s->lines = g_ptr_array_new_with_free_func(serial_line_free);
    s->fd = fd;
    s->path = g_strdup(path);
    s->log_fd = -1;
    s->thread = g_thread_new("serial", serial_thread, s);
    return s;
}

void
guest_serial_log_to(GuestSerial *s, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

    g_assert_cmpint(fd, >=, 0);
    g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->lines->len; i++) {
        SerialLine *l = s->lines->pdata[i];
        g_autofree char *text = g_strdup_printf("%" G_GINT64_FORMAT " %s\n", l->host_ms, l->line);

        if (write(fd, text, strlen(text)) < 0)
            break;
    }
    if (s->log_fd >= 0)
        close(s->log_fd);
    s->log_fd = fd;
    g_mutex_unlock(&s->lock);
}

GuestSerial *
guest_serial_new_fd(int fd)
{
    return serial_new(fd, NULL);
}

GuestSerial *
guest_serial_new_file(const char *path)
{
    return serial_new(-1, path);
}

void
guest_serial_free(GuestSerial *s)
{
    if (!s)
        return;
    g_mutex_lock(&s->lock);
    s->stop = TRUE;
    g_mutex_unlock(&s->lock);
    /* A pipe reader blocked in read() returns when the writer (QEMU) is
     * gone, which the caller ensures first. */
    g_thread_join(s->thread);
    if (s->fd >= 0)
        close(s->fd);
    if (s->log_fd >= 0)
        close(s->log_fd);
    g_ptr_array_unref(s->lines);
    g_mutex_clear(&s->lock);
    g_cond_clear(&s->cond);
    g_free(s->path);
    g_free(s);
}

gint64
guest_serial_wait(GuestSerial *s, const char *prefix, guint timeout_ms, char **line)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    gint64 found = -1;

    g_mutex_lock(&s->lock);
    for (;;) {
        for (guint i = 0; i < s->lines->len; i++) {
            SerialLine *l = s->lines->pdata[i];

            if (g_str_has_prefix(l->line, prefix)) {
                found = l->host_ms;
                if (line)
                    *line = g_strdup(l->line);
                break;
            }
        }
        if (found >= 0 || s->eof || !g_cond_wait_until(&s->cond, &s->lock, deadline))
            break;
    }
    g_mutex_unlock(&s->lock);
    return found;
}

char *
guest_serial_dump(GuestSerial *s)
{
    GString *out = g_string_new(NULL);

    g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->lines->len; i++) {
        SerialLine *l = s->lines->pdata[i];

        g_string_append_printf(out, "%" G_GINT64_FORMAT " %s\n", l->host_ms, l->line);
    }
    g_mutex_unlock(&s->lock);
    return g_string_free(out, FALSE);
}

char *
guest_field(const char *line, const char *key)
{
    g_auto(GStrv) kv = g_strsplit(line, " ", -1);
    gsize klen = strlen(key);

    for (guint i = 0; kv[i]; i++)
        if (strncmp(kv[i], key, klen) == 0 && kv[i][klen] == '=')
            return g_strdup(kv[i] + klen + 1);
    return NULL;
}

static gint64
field_int(const char *line, const char *key)
{
    g_autofree char *v = guest_field(line, key);

    return v ? g_ascii_strtoll(v, NULL, 10) : -1;
}

/*
 * What the lines so far say about a wait for @prefix: SEEN (*@host_ms
 * set), FAILED, ENDED or STALLED (*@why set), or TIMEOUT for "not yet".
 * Called with the lock held.  The whole log is read each time, so a stall
 * that has since recovered still counts: ten seconds without a completed
 * request is a failure whatever came after.
 */
static GuestWaitResult
serial_scan(GuestSerial *s, const char *prefix, gint64 *host_ms, char **why)
{
    g_autofree char *phase = NULL;
    gint64 last_ops = 0;
    guint same = 0;

    for (guint i = 0; i < s->lines->len; i++) {
        SerialLine *l = s->lines->pdata[i];

        if (g_str_has_prefix(l->line, prefix)) {
            *host_ms = l->host_ms;
            return GUEST_WAIT_SEEN;
        }
        if (g_str_has_prefix(l->line, "PT-ERROR ") ||
            (g_str_has_prefix(l->line, "PT-DONE ") && strstr(l->line, " status=error"))) {
            *why = g_strdup_printf("the guest failed: %s", l->line);
            return GUEST_WAIT_FAILED;
        }
        if (g_str_has_prefix(l->line, "PT-DONE ")) {
            *why = g_strdup_printf("the guest ended its schedule first: %s", l->line);
            return GUEST_WAIT_ENDED;
        }
        if (g_str_has_prefix(l->line, "PT-PHASE-BEGIN ")) {
            g_free(phase);
            /* Idle phases (qd=0) complete nothing by design. */
            phase = field_int(l->line, "qd") > 0 ? guest_field(l->line, "name") : NULL;
            last_ops = 0;
            same = 0;
        } else if (g_str_has_prefix(l->line, "PT-PHASE ")) {
            g_clear_pointer(&phase, g_free);
        } else if (phase && g_str_has_prefix(l->line, "PT-TICK ")) {
            gint64 ops = field_int(l->line, "ops");

            same = ops == last_ops ? same + 1 : 0;
            last_ops = ops;
            if (same >= GUEST_STALL_TICKS) {
                *why = g_strdup_printf("the guest's I/O stalled: %u ticks in a row of its %s "
                                       "phase ended with ops=%" G_GINT64_FORMAT
                                       ", the last at host time %" G_GINT64_FORMAT,
                                       same, phase, ops, l->host_ms);
                return GUEST_WAIT_STALLED;
            }
        }
    }
    if (s->eof) {
        *why = g_strdup("the guest's console closed (QEMU exited)");
        return GUEST_WAIT_ENDED;
    }
    return GUEST_WAIT_TIMEOUT;
}

GuestWaitResult
guest_serial_wait_for(GuestSerial *s, const char *prefix, guint timeout_ms, gint64 *host_ms,
                      char **why)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    g_autofree char *reason = NULL;
    GuestWaitResult r;

    *host_ms = -1;
    g_mutex_lock(&s->lock);
    while ((r = serial_scan(s, prefix, host_ms, &reason)) == GUEST_WAIT_TIMEOUT &&
           g_cond_wait_until(&s->cond, &s->lock, deadline))
        ;
    g_mutex_unlock(&s->lock);
    if (r == GUEST_WAIT_TIMEOUT)
        reason = g_strdup_printf("no line starting with \"%s\" within %u s", prefix,
                                 timeout_ms / 1000);
    if (why)
        *why = g_steal_pointer(&reason);
    return r;
}

static void
phase_clear(gpointer p)
{
    GuestPhase *ph = p;

    g_free(ph->name);
    g_array_unref(ph->tick_host_ms);
    g_array_unref(ph->tick_ops);
}

GArray *
guest_serial_phases(GuestSerial *s)
{
    GArray *out = g_array_new(FALSE, TRUE, sizeof(GuestPhase));
    GuestPhase *cur = NULL;

    g_array_set_clear_func(out, phase_clear);
    g_mutex_lock(&s->lock);
    for (guint i = 0; i < s->lines->len; i++) {
        SerialLine *l = s->lines->pdata[i];

        if (g_str_has_prefix(l->line, "PT-PHASE-BEGIN ")) {
            GuestPhase ph = { 0 };

            ph.idx = field_int(l->line, "idx");
            ph.name = guest_field(l->line, "name");
            ph.begin_host_ms = l->host_ms;
            ph.end_host_ms = -1;
            ph.tick_host_ms = g_array_new(FALSE, FALSE, sizeof(gint64));
            ph.tick_ops = g_array_new(FALSE, FALSE, sizeof(gint64));
            /* The phase starts at zero ops. */
            g_array_append_val(ph.tick_host_ms, l->host_ms);
            g_array_append_val(ph.tick_ops, (gint64){ 0 });
            g_array_append_val(out, ph);
            cur = &g_array_index(out, GuestPhase, out->len - 1);
        } else if (cur && g_str_has_prefix(l->line, "PT-TICK ")) {
            gint64 ops = field_int(l->line, "ops");

            g_array_append_val(cur->tick_host_ms, l->host_ms);
            g_array_append_val(cur->tick_ops, ops);
        } else if (cur && g_str_has_prefix(l->line, "PT-PHASE ")) {
            g_autofree char *iops = guest_field(l->line, "iops");

            cur->end_host_ms = l->host_ms;
            cur->ops = field_int(l->line, "ops");
            /* The phase's total closes its run of counts. */
            g_array_append_val(cur->tick_host_ms, l->host_ms);
            g_array_append_val(cur->tick_ops, cur->ops);
            cur->dur_ms = field_int(l->line, "dur_ms");
            cur->iops = iops ? g_ascii_strtod(iops, NULL) : -1;
            cur = NULL;
        }
    }
    g_mutex_unlock(&s->lock);
    /* A phase still running is not reported. */
    if (out->len && g_array_index(out, GuestPhase, out->len - 1).end_host_ms < 0)
        g_array_set_size(out, out->len - 1);
    return out;
}

static double
ops_at(const GuestPhase *p, gint64 t)
{
    const gint64 *ts = (const gint64 *)p->tick_host_ms->data;
    const gint64 *ops = (const gint64 *)p->tick_ops->data;

    for (guint i = 1; i < p->tick_host_ms->len; i++) {
        if (ts[i] >= t) {
            double f = ts[i] == ts[i - 1] ? 1.0 : (double)(t - ts[i - 1]) / (ts[i] - ts[i - 1]);

            return ops[i - 1] + f * (ops[i] - ops[i - 1]);
        }
    }
    return -1;
}

double
guest_phase_rate(const GuestPhase *p, gint64 from_ms, gint64 to_ms)
{
    double a, b;

    if (to_ms <= from_ms || p->tick_host_ms->len < 2 ||
        from_ms < g_array_index(p->tick_host_ms, gint64, 0))
        return -1;
    a = ops_at(p, from_ms);
    b = ops_at(p, to_ms);
    if (a < 0 || b < 0)
        return -1;
    return (b - a) * 1000.0 / (double)(to_ms - from_ms);
}

gboolean
guest_build(char **why)
{
    const char *src = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *script = g_build_filename(src ? src : ".", "tests", "guest", "build.sh", NULL);
    const char *argv[] = { script, NULL };
    g_autofree char *err = NULL;
    g_autofree char *qemu = g_find_program_in_path("qemu-system-x86_64");
    int status = 0;

    if (!qemu) {
        *why = g_strdup("qemu-system-x86_64 not installed");
        return FALSE;
    }
    if (!g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL,
                      NULL, &err, &status, NULL) ||
        !g_spawn_check_wait_status(status, NULL)) {
        *why = g_strdup_printf("tests/guest/build.sh cannot build the guest: %s",
                               err ? g_strstrip(err) : "");
        return FALSE;
    }
    return TRUE;
}

guint
e2e_env_seconds(const char *name, guint dflt, guint min, guint max)
{
    const char *v = g_getenv(name);
    guint64 n;

    if (!v || !*v)
        return dflt;
    if (!g_ascii_string_to_unsigned(v, 10, min, max, &n, NULL))
        g_error("%s=%s: not a whole number of seconds from %u to %u", name, v, min, max);
    return (guint)n;
}

char *
e2e_ctl(const char *first, ...)
{
    const char *build = g_getenv("PT_BUILD_ROOT");
    g_autofree char *bin = g_build_filename(build ? build : ".", "cli", "polltunectl", NULL);
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    g_autofree char *err_text = NULL;
    char *out = NULL;
    int status = 0;
    va_list ap;

    g_ptr_array_add(argv, bin);
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *))
        g_ptr_array_add(argv, (char *)a);
    va_end(ap);
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                               &out, &err_text, &status, &err));
    g_assert_no_error(err);
    if (!g_spawn_check_wait_status(status, NULL))
        g_error("polltunectl %s ... failed (status %d): %s", first, status, err_text);
    return out;
}

json_object *
e2e_history(PtTestDaemon *d, const char *target, const char *iothread)
{
    g_autofree char *args = g_strdup_printf(
        "{\"target\": \"%s\", \"iothread\": \"%s\", \"since\": \"1h\", \"resolution\": \"raw\"}",
        target, iothread);
    g_autoptr(json_object) ret = pt_test_daemon_ok(d, "history", args);
    json_object *rows = pt_json_path(ret, "rows");

    g_assert_nonnull(rows);
    return json_object_get(rows);
}

/* The indices of the rows whose tick (ts - interval, ts] lies inside the
 * phase, with the edge ticks left out. */
static GArray *
phase_rows(json_object *rows, const GuestPhase *p, gint64 interval_ms, guint skip_head,
           guint skip_tail)
{
    GArray *idx = g_array_new(FALSE, FALSE, sizeof(guint));
    gsize n = json_object_array_length(rows);

    for (gsize i = 0; i < n; i++) {
        gint64 ts = pt_json_path_int(json_object_array_get_idx(rows, i), "ts_ms");

        if (ts - interval_ms >= p->begin_host_ms && ts <= p->end_host_ms) {
            guint u = i;

            g_array_append_val(idx, u);
        }
    }
    if (idx->len <= skip_head + skip_tail) {
        g_array_set_size(idx, 0);
        return idx;
    }
    g_array_remove_range(idx, idx->len - skip_tail, skip_tail);
    g_array_remove_range(idx, 0, skip_head);
    return idx;
}

double
e2e_phase_mean(json_object *rows, const GuestPhase *p, const char *key, gint64 interval_ms,
               guint skip_head, guint skip_tail, guint *n)
{
    g_autoptr(GArray) idx = phase_rows(rows, p, interval_ms, skip_head, skip_tail);
    double sum = 0;
    guint used = 0;

    for (guint i = 0; i < idx->len; i++) {
        json_object *row = json_object_array_get_idx(rows, g_array_index(idx, guint, i));
        json_object *v = NULL;

        if (json_object_object_get_ex(row, key, &v) && v) {
            sum += json_object_get_double(v);
            used++;
        }
    }
    *n = used;
    return used ? sum / used : -1;
}

void
e2e_phase_window(json_object *rows, const GuestPhase *p, gint64 interval_ms, guint skip_head,
                 guint skip_tail, gint64 *from_ms, gint64 *to_ms)
{
    g_autoptr(GArray) idx = phase_rows(rows, p, interval_ms, skip_head, skip_tail);

    *from_ms = *to_ms = -1;
    if (!idx->len)
        return;
    *from_ms = pt_json_path_int(json_object_array_get_idx(rows, g_array_index(idx, guint, 0)),
                                "ts_ms") - interval_ms;
    *to_ms = pt_json_path_int(json_object_array_get_idx(rows, g_array_index(idx, guint, idx->len - 1)),
                              "ts_ms");
}

/* ---- cleanup after a failed assertion ---------------------------------- */

#define E2E_MAX_REAP 8
static volatile GPid e2e_reap[E2E_MAX_REAP];

static void
e2e_on_abort(int sig)
{
    for (guint i = 0; i < E2E_MAX_REAP; i++)
        if (e2e_reap[i] > 0)
            kill(e2e_reap[i], SIGKILL);
    /* Dead, their files are whole: then keep what the run had. */
    for (guint i = 0; i < E2E_MAX_REAP; i++)
        if (e2e_reap[i] > 0)
            waitpid(e2e_reap[i], NULL, 0);
    e2e_keep_on_abort();
    signal(sig, SIG_DFL);
    raise(sig);
}

void
e2e_reap_on_abort(GPid pid)
{
    static gsize installed;

    if (g_once_init_enter(&installed)) {
        signal(SIGABRT, e2e_on_abort);
        signal(SIGTRAP, e2e_on_abort);
        g_once_init_leave(&installed, 1);
    }
    for (guint i = 0; i < E2E_MAX_REAP; i++) {
        if (e2e_reap[i] <= 0) {
            e2e_reap[i] = pid;
            return;
        }
    }
}

void
e2e_reap_forget(GPid pid)
{
    for (guint i = 0; i < E2E_MAX_REAP; i++)
        if (e2e_reap[i] == pid)
            e2e_reap[i] = 0;
}
