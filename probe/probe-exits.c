#include "probe-exits.h"

#include <limits.h>

static const char *const exit_source_names[PROBE_EXIT_SOURCE_MAX] = {
    [PROBE_EXIT_SOURCE_NONE] = "none",
    [PROBE_EXIT_SOURCE_QUERY_STATS] = "query-stats",
    [PROBE_EXIT_SOURCE_DEBUGFS] = "debugfs",
    [PROBE_EXIT_SOURCE_PERF] = "perf",
};

static const char *const exit_counter_names[PROBE_EXIT_COUNTER_MAX] = {
    [PROBE_EXIT_EXITS] = "exits",
    [PROBE_EXIT_IO_EXITS] = "io_exits",
    [PROBE_EXIT_MMIO_EXITS] = "mmio_exits",
    [PROBE_EXIT_HALT_EXITS] = "halt_exits",
    [PROBE_EXIT_HALT_SUCCESSFUL_POLL] = "halt_successful_poll",
    [PROBE_EXIT_HALT_ATTEMPTED_POLL] = "halt_attempted_poll",
    [PROBE_EXIT_HALT_POLL_INVALID] = "halt_poll_invalid",
    [PROBE_EXIT_HALT_WAKEUP] = "halt_wakeup",
    [PROBE_EXIT_HALT_POLL_SUCCESS_NS] = "halt_poll_success_ns",
    [PROBE_EXIT_HALT_POLL_FAIL_NS] = "halt_poll_fail_ns",
    [PROBE_EXIT_HALT_WAIT_NS] = "halt_wait_ns",
    [PROBE_EXIT_USERSPACE_EXITS] = "userspace_exits",
    [PROBE_EXIT_FAST_MMIO] = "fast_mmio",
};

G_STATIC_ASSERT(PROBE_EXIT_COUNTER_MAX <= 32);

const char *
probe_exit_source_to_string(ProbeExitSource s)
{
    return s >= 0 && s < PROBE_EXIT_SOURCE_MAX ? exit_source_names[s] : NULL;
}

ProbeExitSource
probe_exit_source_from_string(const char *s)
{
    return probe_table_lookup(exit_source_names, PROBE_EXIT_SOURCE_MAX, s);
}

const char *
probe_exit_counter_to_string(ProbeExitCounter c)
{
    return c >= 0 && c < PROBE_EXIT_COUNTER_MAX ? exit_counter_names[c] : NULL;
}

ProbeExitCounter
probe_exit_counter_from_string(const char *s)
{
    return probe_table_lookup(exit_counter_names, PROBE_EXIT_COUNTER_MAX, s);
}

static void
counters_add(ProbeExitCounters *c, ProbeExitCounter k, guint64 value)
{
    if (!g_uint64_checked_add(&c->v[k], c->v[k], value))
        c->v[k] = G_MAXUINT64;
    c->present |= 1u << k;
}

gboolean
probe_exit_counters_add_named(ProbeExitCounters *c, const char *name,
                              guint64 value)
{
    ProbeExitCounter k = probe_exit_counter_from_string(name);

    if (k == PROBE_EXIT_COUNTER_INVALID)
        return FALSE;
    counters_add(c, k, value);
    return TRUE;
}

struct ProbeKvmDebugfs {
    char *kvm_dir;          /* <debugfs>/kvm */
    int pid;
    GPtrArray *vm_dirs;     /* full paths of <pid>-* directories */
    ProbeBuf buf;
};

ProbeKvmDebugfs *
probe_kvm_debugfs_new(const char *debugfs_root, int pid)
{
    ProbeKvmDebugfs *d = g_new0(ProbeKvmDebugfs, 1);

    d->kvm_dir = g_build_filename(debugfs_root, "kvm", NULL);
    d->pid = pid;
    d->vm_dirs = g_ptr_array_new_with_free_func(g_free);
    return d;
}

void
probe_kvm_debugfs_free(ProbeKvmDebugfs *d)
{
    if (!d)
        return;
    g_free(d->kvm_dir);
    g_ptr_array_unref(d->vm_dirs);
    probe_buf_clear(&d->buf);
    g_free(d);
}

static gboolean
debugfs_scan(ProbeKvmDebugfs *d, GError **error)
{
    g_autoptr(GDir) dir = NULL;
    g_autoptr(GError) local = NULL;
    g_autofree char *prefix = g_strdup_printf("%d-", d->pid);
    const char *name;

    g_ptr_array_set_size(d->vm_dirs, 0);
    dir = g_dir_open(d->kvm_dir, 0, &local);
    if (!dir) {
        g_set_error(error, PROBE_ERROR,
                    g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_ACCES) ||
                    g_error_matches(local, G_FILE_ERROR, G_FILE_ERROR_PERM)
                        ? PROBE_ERROR_ACCESS : PROBE_ERROR_MISSING,
                    "%s (debugfs not mounted, or KVM not loaded)",
                    local->message);
        return FALSE;
    }
    /* Only the pid prefix is stable; what follows it has changed before. */
    while ((name = g_dir_read_name(dir)))
        if (g_str_has_prefix(name, prefix))
            g_ptr_array_add(d->vm_dirs, g_build_filename(d->kvm_dir, name, NULL));
    if (d->vm_dirs->len == 0) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "%s: no directory for process %d (not a KVM guest?)",
                    d->kvm_dir, d->pid);
        return FALSE;
    }
    return TRUE;
}

static gboolean
debugfs_read_dir(ProbeKvmDebugfs *d, const char *vm_dir, ProbeExitCounters *c,
                 GError **error)
{
    for (int k = 0; k < PROBE_EXIT_USERSPACE_EXITS; k++) {
        char path[PATH_MAX];
        g_autoptr(GError) local = NULL;
        const char *p;
        guint64 v;

        g_snprintf(path, sizeof(path), "%s/%s", vm_dir, exit_counter_names[k]);
        if (!probe_file_read(path, &d->buf, 4096, &local)) {
            /* Older and newer kernels differ in the halt_* set. */
            if (k != PROBE_EXIT_EXITS &&
                g_error_matches(local, PROBE_ERROR, PROBE_ERROR_MISSING))
                continue;
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
        p = d->buf.data;
        if (!probe_parse_u64(&p, &v) || (*p != '\n' && *p != '\0')) {
            probe_set_parse_error(error, path, "not a single unsigned number");
            return FALSE;
        }
        counters_add(c, k, v);
    }
    return TRUE;
}

gboolean
probe_kvm_debugfs_read(ProbeKvmDebugfs *d, ProbeExitCounters *out,
                       GError **error)
{
    ProbeExitCounters c = { .source = PROBE_EXIT_SOURCE_DEBUGFS };
    gboolean rescanned = FALSE;

    if (d->vm_dirs->len == 0) {
        if (!debugfs_scan(d, error))
            return FALSE;
        rescanned = TRUE;
    }
    for (guint i = 0; i < d->vm_dirs->len; i++) {
        g_autoptr(GError) local = NULL;

        if (debugfs_read_dir(d, d->vm_dirs->pdata[i], &c, &local))
            continue;
        /* The VM (or the process) went away: look again once. */
        if (!rescanned &&
            g_error_matches(local, PROBE_ERROR, PROBE_ERROR_MISSING)) {
            g_ptr_array_set_size(d->vm_dirs, 0);
            return probe_kvm_debugfs_read(d, out, error);
        }
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    *out = c;
    return TRUE;
}
