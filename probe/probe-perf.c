/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-perf.h"
#include "probe-thread.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef struct {
    int tid;
    int fd[PROBE_PERF_MAX_EVENTS];
    gboolean seen;          /* listed in the latest scan */
} PerfThread;

struct ProbePerf {
    char *task_dir;
    DIR *dir;               /* task_dir, kept open */
    int pid;
    gboolean kvm;
    guint n_events;
    ProbePerfEvent events[PROBE_PERF_MAX_EVENTS];
    GArray *threads;        /* PerfThread */
    guint64 retired[PROBE_PERF_MAX_EVENTS];  /* counts of exited threads */
};

static const char *const kvm_tracepoints[PROBE_PERF_MAX_EVENTS] = {
    "kvm_exit", "kvm_userspace_exit", "kvm_fast_mmio",
};
static const MetricId kvm_counters[PROBE_PERF_MAX_EVENTS] = {
    METRIC_KVM_EXITS, METRIC_USERSPACE_EXITS, METRIC_FAST_MMIO,
};

gboolean
probe_perf_tracepoint_id(const char *tracefs_root, const char *name,
                         guint64 *id, GError **error)
{
    static const char *const defaults[] = {
        "/sys/kernel/tracing", "/sys/kernel/debug/tracing",
    };
    ProbeBuf buf = { 0 };
    g_autoptr(GError) first = NULL;

    for (guint i = 0; i < G_N_ELEMENTS(defaults); i++) {
        const char *root = tracefs_root ? tracefs_root : defaults[i];
        g_autofree char *path = g_strdup_printf("%s/events/kvm/%s/id", root, name);
        g_autoptr(GError) local = NULL;
        const char *p;

        if (probe_file_read(path, &buf, 4096, &local)) {
            gboolean ok;

            p = buf.data;
            ok = probe_parse_u64(&p, id) && (*p == '\n' || *p == '\0');
            probe_buf_clear(&buf);
            if (!ok)
                probe_set_parse_error(error, path, "not a tracepoint id");
            return ok;
        }
        if (!first)
            first = g_steal_pointer(&local);
        if (tracefs_root)
            break;
    }
    probe_buf_clear(&buf);
    g_prefix_error(&first, "tracefs: ");
    g_propagate_error(error, g_steal_pointer(&first));
    return FALSE;
}

static int
perf_open(const ProbePerfEvent *ev, int tid, int group_fd)
{
    struct perf_event_attr attr = { 0 };

    attr.size = sizeof(attr);
    attr.type = ev->type;
    attr.config = ev->config;
    if (group_fd < 0)
        attr.read_format = PERF_FORMAT_GROUP;
    return (int)syscall(SYS_perf_event_open, &attr, tid, -1, group_fd,
                        PERF_FLAG_FD_CLOEXEC);
}

static void
thread_close(PerfThread *t)
{
    for (int i = PROBE_PERF_MAX_EVENTS - 1; i >= 0; i--)
        if (t->fd[i] >= 0) {
            close(t->fd[i]);
            t->fd[i] = -1;
        }
}

/* Open the group for @tid; -errno on failure. */
static int
thread_open(ProbePerf *p, int tid, PerfThread *t)
{
    t->tid = tid;
    t->seen = TRUE;
    for (guint i = 0; i < PROBE_PERF_MAX_EVENTS; i++)
        t->fd[i] = -1;
    for (guint i = 0; i < p->n_events; i++) {
        t->fd[i] = perf_open(&p->events[i], tid, i == 0 ? -1 : t->fd[0]);
        if (t->fd[i] < 0) {
            int err = errno;

            thread_close(t);
            return -err;
        }
    }
    return 0;
}

/* Read the group of @t into @counts; FALSE if the read failed. */
static gboolean
thread_read(ProbePerf *p, const PerfThread *t, guint64 *counts)
{
    guint64 data[1 + PROBE_PERF_MAX_EVENTS];
    ssize_t want = (ssize_t)((1 + p->n_events) * sizeof(guint64));

    if (read(t->fd[0], data, sizeof(data)) != want || data[0] != p->n_events)
        return FALSE;
    for (guint i = 0; i < p->n_events; i++)
        counts[i] = data[1 + i];
    return TRUE;
}

static void
add_saturating(guint64 *acc, guint64 v)
{
    if (!g_uint64_checked_add(acc, *acc, v))
        *acc = G_MAXUINT64;
}

static PerfThread *
thread_find(ProbePerf *p, int tid, guint n)
{
    for (guint i = 0; i < n; i++) {
        PerfThread *t = &g_array_index(p->threads, PerfThread, i);

        if (t->tid == tid)
            return t;
    }
    return NULL;
}

/* List the task directory; open new threads, retire vanished ones.  The
 * directory stays open: rewinding it costs less than opening it. */
static gboolean
perf_follow(ProbePerf *p, GError **error)
{
    guint n_known = p->threads->len;
    struct dirent *de;

    if (!p->dir) {
        p->dir = opendir(p->task_dir);
        if (!p->dir) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING, "%s: %s",
                        p->task_dir, g_strerror(errno));
            return FALSE;
        }
    } else {
        rewinddir(p->dir);
    }
    for (guint i = 0; i < n_known; i++)
        g_array_index(p->threads, PerfThread, i).seen = FALSE;
    while ((de = readdir(p->dir))) {
        PerfThread *t, fresh;
        int tid, rc;

        if (!probe_parse_tid(de->d_name, &tid))
            continue;
        /* Threads are few (tens): a scan beats a hash table here. */
        t = thread_find(p, tid, n_known);
        if (t) {
            t->seen = TRUE;
            continue;
        }
        rc = thread_open(p, tid, &fresh);
        if (rc == -ESRCH)
            continue;       /* exited while we listed it */
        if (rc < 0) {
            g_set_error(error, PROBE_ERROR,
                        rc == -EACCES || rc == -EPERM ? PROBE_ERROR_ACCESS
                                                      : PROBE_ERROR_IO,
                        "perf_event_open %s for thread %d of process %d: %s",
                        p->events[0].name, tid, p->pid, g_strerror(-rc));
            return FALSE;
        }
        g_array_append_val(p->threads, fresh);
    }
    for (guint i = p->threads->len; i-- > 0;) {
        PerfThread *t = &g_array_index(p->threads, PerfThread, i);
        guint64 counts[PROBE_PERF_MAX_EVENTS];

        if (t->seen)
            continue;
        if (thread_read(p, t, counts))
            for (guint e = 0; e < p->n_events; e++)
                add_saturating(&p->retired[e], counts[e]);
        thread_close(t);
        g_array_remove_index_fast(p->threads, i);
    }
    return TRUE;
}

ProbePerf *
probe_perf_new(const char *proc_root, int pid, const ProbePerfEvent *events,
               guint n_events, GError **error)
{
    g_autoptr(ProbePerf) p = g_new0(ProbePerf, 1);

    g_return_val_if_fail(n_events >= 1 && n_events <= PROBE_PERF_MAX_EVENTS, NULL);
    p->task_dir = g_strdup_printf("%s/%d/task", proc_root, pid);
    p->pid = pid;
    p->n_events = n_events;
    memcpy(p->events, events, n_events * sizeof(*events));
    p->threads = g_array_new(FALSE, TRUE, sizeof(PerfThread));
    if (!perf_follow(p, error))
        return NULL;
    if (p->threads->len == 0) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "%s: no threads to count", p->task_dir);
        return NULL;
    }
    return g_steal_pointer(&p);
}

ProbePerf *
probe_perf_new_kvm(const char *proc_root, const char *tracefs_root, int pid,
                   GError **error)
{
    ProbePerfEvent events[PROBE_PERF_MAX_EVENTS];
    ProbePerf *p;

    for (guint i = 0; i < PROBE_PERF_MAX_EVENTS; i++) {
        events[i].name = kvm_tracepoints[i];
        events[i].type = PERF_TYPE_TRACEPOINT;
        if (!probe_perf_tracepoint_id(tracefs_root, kvm_tracepoints[i],
                                      &events[i].config, error))
            return NULL;
    }
    p = probe_perf_new(proc_root, pid, events, PROBE_PERF_MAX_EVENTS, error);
    if (p)
        p->kvm = TRUE;
    return p;
}

void
probe_perf_free(ProbePerf *p)
{
    if (!p)
        return;
    if (p->threads) {
        for (guint i = 0; i < p->threads->len; i++)
            thread_close(&g_array_index(p->threads, PerfThread, i));
        g_array_unref(p->threads);
    }
    if (p->dir)
        closedir(p->dir);
    g_free(p->task_dir);
    g_free(p);
}

gboolean
probe_perf_read_totals(ProbePerf *p, guint64 *totals, GError **error)
{
    if (!perf_follow(p, error))
        return FALSE;
    for (guint e = 0; e < p->n_events; e++)
        totals[e] = p->retired[e];
    for (guint i = 0; i < p->threads->len; i++) {
        const PerfThread *t = &g_array_index(p->threads, PerfThread, i);
        guint64 counts[PROBE_PERF_MAX_EVENTS];

        if (!thread_read(p, t, counts)) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_IO,
                        "perf counters of thread %d of process %d: read: %s",
                        t->tid, p->pid, g_strerror(errno));
            return FALSE;
        }
        for (guint e = 0; e < p->n_events; e++)
            add_saturating(&totals[e], counts[e]);
    }
    return TRUE;
}

gboolean
probe_perf_read(ProbePerf *p, ProbeExitCounters *out, GError **error)
{
    guint64 totals[PROBE_PERF_MAX_EVENTS];
    ProbeExitCounters c;

    probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_PERF);
    g_return_val_if_fail(p->kvm, FALSE);
    if (!probe_perf_read_totals(p, totals, error))
        return FALSE;
    for (guint e = 0; e < PROBE_PERF_MAX_EVENTS; e++) {
        c.v.v[kvm_counters[e]] = metric_reading(totals[e]);
    }
    *out = c;
    return TRUE;
}

guint
probe_perf_n_threads(const ProbePerf *p)
{
    return p->threads->len;
}
