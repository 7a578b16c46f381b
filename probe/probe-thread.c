/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-thread.h"

#include <errno.h>
#include <stdio.h>

/* Generous: status is about 1.5 KiB on current kernels. */
#define THREAD_FILE_MAX (64 * 1024)

/*
 * The numeric fields of a stat line, 4 to @last, into @vals[0..@last - 4].
 * comm may hold spaces and parentheses: it ends at the last ')'.  Fields
 * below @first_unsigned may be negative (tty_nr, tpgid, priority, nice);
 * only their magnitude is kept, and no caller reads them.
 */
#define STAT_FIELDS_MAX 22

static gboolean
stat_fields(const char *text, const char *path, int last, int first_unsigned,
            guint64 *vals, GError **error)
{
    const char *close_paren = strrchr(text, ')');
    const char *p;

    g_assert(last <= STAT_FIELDS_MAX);
    if (!strchr(text, '(') || !close_paren || close_paren < strchr(text, '(')) {
        probe_set_parse_error(error, path, "no (comm) field");
        return FALSE;
    }
    p = close_paren + 1;
    while (*p == ' ')
        p++;
    if (!g_ascii_isalpha(*p)) {
        probe_set_parse_error(error, path, "no state field");
        return FALSE;
    }
    p++;
    for (int field = 4; field <= last; field++) {
        while (*p == ' ')
            p++;
        if (*p == '-' && field < first_unsigned)
            p++;
        if (!probe_parse_u64(&p, &vals[field - 4]) || (*p != ' ' && *p != '\n' && *p)) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                        "%s: field %d is missing or not a number", path, field);
            return FALSE;
        }
    }
    return TRUE;
}

void
probe_thread_counters_init(ProbeThreadCounters *c)
{
    c->comm[0] = '\0';
    metric_vec_init(&c->v);
}

gboolean
probe_thread_parse_stat(const char *text, const char *path,
                        ProbeThreadCounters *out, GError **error)
{
    guint64 vals[STAT_FIELDS_MAX - 3];
    const char *open_paren = strchr(text, '(');
    gsize comm_len;

    /* utime and stime are fields 14 and 15. */
    if (!stat_fields(text, path, 15, 14, vals, error))
        return FALSE;
    comm_len = MIN((gsize)(strrchr(text, ')') - open_paren - 1), PROBE_COMM_MAX - 1);
    memcpy(out->comm, open_paren + 1, comm_len);
    out->comm[comm_len] = '\0';
    out->v.v[METRIC_UTIME_TICKS] = metric_reading(vals[14 - 4]);
    out->v.v[METRIC_STIME_TICKS] = metric_reading(vals[15 - 4]);
    return TRUE;
}

static gboolean
status_field(const char *text, const char *key, guint64 *out)
{
    gsize key_len = strlen(key);

    for (const char *line = text; line && *line;) {
        if (strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
            const char *p = line + key_len + 1;

            return probe_parse_u64(&p, out) && (*p == '\n' || *p == '\0');
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return FALSE;
}

gboolean
probe_thread_parse_status(const char *text, const char *path,
                          ProbeThreadCounters *out, GError **error)
{
    guint64 vol, invol;

    if (!status_field(text, "voluntary_ctxt_switches", &vol)) {
        probe_set_parse_error(error, path,
                              "voluntary_ctxt_switches missing or malformed");
        return FALSE;
    }
    if (!status_field(text, "nonvoluntary_ctxt_switches", &invol)) {
        probe_set_parse_error(error, path,
                              "nonvoluntary_ctxt_switches missing or malformed");
        return FALSE;
    }
    out->v.v[METRIC_CTX_VOL] = metric_reading(vol);
    out->v.v[METRIC_CTX_INVOL] = metric_reading(invol);
    return TRUE;
}

static void
schedstat_clear(ProbeThreadCounters *c)
{
    c->v.v[METRIC_CPU_NS] = METRIC_ABSENT;
    c->v.v[METRIC_RUNQ_WAIT_NS] = METRIC_ABSENT;
}

gboolean
probe_thread_parse_schedstat(const char *text, const char *path,
                             ProbeThreadCounters *out, GError **error)
{
    const char *p = text;
    guint64 run, wait, slices;

    schedstat_clear(out);
    if (!probe_parse_u64(&p, &run) || !probe_parse_u64(&p, &wait) ||
        !probe_parse_u64(&p, &slices)) {
        probe_set_parse_error(error, path, "expected three numbers");
        return FALSE;
    }
    while (*p == ' ')
        p++;
    if (*p != '\n' && *p != '\0') {
        probe_set_parse_error(error, path, "trailing garbage");
        return FALSE;
    }
    /* "0 0 0" is what a kernel without sched_info prints for every task. */
    if (run != 0 || wait != 0 || slices != 0) {
        out->v.v[METRIC_CPU_NS] = metric_reading(run);
        out->v.v[METRIC_RUNQ_WAIT_NS] = metric_reading(wait);
    }
    return TRUE;
}

static char *
task_path(const char *proc_root, int pid, int tid, const char *file)
{
    return g_strdup_printf("%s/%d/task/%d/%s", proc_root, pid, tid, file);
}

void
probe_thread_files_init(ProbeThreadFiles *f, const char *proc_root, int pid,
                        int tid)
{
    f->pid = pid;
    f->tid = tid;
    probe_file_init(&f->stat, task_path(proc_root, pid, tid, "stat"));
    probe_file_init(&f->status, task_path(proc_root, pid, tid, "status"));
    probe_file_init(&f->schedstat, task_path(proc_root, pid, tid, "schedstat"));
}

void
probe_thread_files_clear(ProbeThreadFiles *f)
{
    if (!f)
        return;
    probe_file_clear(&f->stat);
    probe_file_clear(&f->status);
    probe_file_clear(&f->schedstat);
}

gboolean
probe_thread_files_read_schedstat(ProbeThreadFiles *f, ProbeBuf *buf,
                                  ProbeThreadCounters *out, GError **error)
{
    schedstat_clear(out);
    return probe_file_reread(&f->schedstat, buf, THREAD_FILE_MAX, error) &&
           probe_thread_parse_schedstat(buf->data, f->schedstat.path, out, error);
}

gboolean
probe_thread_files_read(ProbeThreadFiles *f, ProbeBuf *buf,
                        ProbeThreadCounters *out, GError **error)
{
    ProbeThreadCounters c;

    probe_thread_counters_init(&c);
    if (!probe_file_reread(&f->stat, buf, THREAD_FILE_MAX, error) ||
        !probe_thread_parse_stat(buf->data, f->stat.path, &c, error))
        return FALSE;
    if (!probe_file_reread(&f->status, buf, THREAD_FILE_MAX, error) ||
        !probe_thread_parse_status(buf->data, f->status.path, &c, error))
        return FALSE;
    /* Optional: without it there is no run delay, but CPU time remains. */
    probe_thread_files_read_schedstat(f, buf, &c, NULL);
    *out = c;
    return TRUE;
}

gboolean
probe_process_parse_start(const char *text, const char *path, guint64 *start_ticks,
                          GError **error)
{
    guint64 vals[STAT_FIELDS_MAX - 3];

    if (!stat_fields(text, path, 22, 22, vals, error))
        return FALSE;
    *start_ticks = vals[22 - 4];
    return TRUE;
}

gboolean
probe_process_read_start(const char *proc_root, int pid, guint64 *start_ticks,
                         GError **error)
{
    g_autofree char *path = g_strdup_printf("%s/%d/stat", proc_root, pid);
    ProbeBuf buf = { 0 };
    gboolean ok;

    ok = probe_file_read(path, &buf, THREAD_FILE_MAX, error) &&
         probe_process_parse_start(buf.data, path, start_ticks, error);
    probe_buf_clear(&buf);
    return ok;
}

char
probe_process_read_state(const char *proc_root, int pid)
{
    g_autofree char *path = g_strdup_printf("%s/%d/stat", proc_root, pid);
    ProbeBuf buf = { 0 };
    const char *paren;
    char state = 0;

    /* The name in parentheses may hold anything: the state follows the
     * last closing one. */
    if (probe_file_read(path, &buf, THREAD_FILE_MAX, NULL) &&
        (paren = strrchr(buf.data, ')')) && paren[1] == ' ' && g_ascii_isalpha(paren[2]))
        state = paren[2];
    probe_buf_clear(&buf);
    return state;
}

gboolean
probe_parse_tid(const char *name, int *tid)
{
    const char *p = name;
    guint64 v;

    if (!probe_parse_u64(&p, &v) || *p || v == 0 || v > G_MAXINT)
        return FALSE;
    *tid = (int)v;
    return TRUE;
}

GArray *
probe_tasks_list(const char *proc_root, int pid, GError **error)
{
    g_autofree char *dir_path = g_strdup_printf("%s/%d/task", proc_root, pid);
    g_autoptr(GArray) tasks = g_array_new(FALSE, TRUE, sizeof(ProbeTask));
    g_autoptr(GDir) dir = NULL;
    g_autoptr(GError) local = NULL;
    ProbeBuf buf = { 0 };
    const char *name;

    dir = g_dir_open(dir_path, 0, &local);
    if (!dir) {
        g_set_error(error, PROBE_ERROR,
                    g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_NOENT)
                        ? PROBE_ERROR_MISSING : PROBE_ERROR_IO,
                    "%s", local->message);
        return NULL;
    }
    while ((name = g_dir_read_name(dir))) {
        ProbeTask t = { 0 };
        char path[PATH_MAX];
        char *nl;

        if (!probe_parse_tid(name, &t.tid))
            continue;
        g_snprintf(path, sizeof(path), "%s/%s/comm", dir_path, name);
        /* A thread that exits while we list it is simply not listed. */
        if (!probe_file_read(path, &buf, 4096, NULL))
            continue;
        nl = strchr(buf.data, '\n');
        if (nl)
            *nl = '\0';
        g_strlcpy(t.comm, buf.data, sizeof(t.comm));
        g_array_append_val(tasks, t);
    }
    probe_buf_clear(&buf);
    return g_steal_pointer(&tasks);
}

void
probe_iothread_comm(const char *iothread_id, char comm[PROBE_COMM_MAX])
{
    g_snprintf(comm, PROBE_COMM_MAX, "IO %s", iothread_id);
}

int
probe_tasks_find_iothread(const GArray *tasks, const char *iothread_id,
                          GError **error)
{
    char want[PROBE_COMM_MAX];
    int found = 0;

    probe_iothread_comm(iothread_id, want);
    for (guint i = 0; i < tasks->len; i++) {
        const ProbeTask *t = &g_array_index(tasks, ProbeTask, i);

        if (strcmp(t->comm, want) != 0)
            continue;
        if (found) {
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                        "iothread %s: threads %d and %d are both named '%s'",
                        iothread_id, found, t->tid, want);
            return 0;
        }
        found = t->tid;
    }
    if (!found)
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "iothread %s: no thread named '%s'", iothread_id, want);
    return found;
}

gboolean
probe_comm_is_vcpu(const char *comm, guint *index)
{
    const char *p;
    guint64 n;

    if (!g_str_has_prefix(comm, "CPU "))
        return FALSE;
    p = comm + 4;
    if (!probe_parse_u64(&p, &n) || n > G_MAXUINT)
        return FALSE;
    if (strcmp(p, "/KVM") != 0 && strcmp(p, "/TCG") != 0)
        return FALSE;
    if (index)
        *index = (guint)n;
    return TRUE;
}
