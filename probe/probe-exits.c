/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-exits.h"
#include "common/pt-enum-table.h"

#include <limits.h>
#include <string.h>

PT_ENUM_IMPL(probe_exit_source, ProbeExitSource, PROBE_EXIT_SOURCE_MAX,
             [PROBE_EXIT_SOURCE_NONE] = "none",
             [PROBE_EXIT_SOURCE_QUERY_STATS] = "query-stats",
             [PROBE_EXIT_SOURCE_DEBUGFS] = "debugfs",
             [PROBE_EXIT_SOURCE_PERF] = "perf")

/*
 * KVM's names of the counters: debugfs reads them in this order, the
 * first DEBUGFS_N_COUNTERS of them (the rest exist only as tracepoints).
 */
static const struct {
    const char *name;
    MetricId id;
} exit_counters[] = {
    { "exits", METRIC_KVM_EXITS },
    { "io_exits", METRIC_IO_EXITS },
    { "mmio_exits", METRIC_MMIO_EXITS },
    { "halt_exits", METRIC_HALT_EXITS },
    { "halt_successful_poll", METRIC_HALT_SUCCESSFUL_POLL },
    { "halt_attempted_poll", METRIC_HALT_ATTEMPTED_POLL },
    { "halt_poll_invalid", METRIC_HALT_POLL_INVALID },
    { "halt_wakeup", METRIC_HALT_WAKEUP },
    { "halt_poll_success_ns", METRIC_HALT_POLL_SUCCESS_NS },
    { "halt_poll_fail_ns", METRIC_HALT_POLL_FAIL_NS },
    { "halt_wait_ns", METRIC_HALT_WAIT_NS },
    { "userspace_exits", METRIC_USERSPACE_EXITS },      /* kvm_userspace_exit */
    { "fast_mmio", METRIC_FAST_MMIO },                  /* kvm_fast_mmio */
};

const char *
probe_exit_counter_to_string(MetricId id)
{
    for (guint i = 0; i < G_N_ELEMENTS(exit_counters); i++)
        if (exit_counters[i].id == id)
            return exit_counters[i].name;
    return NULL;
}

MetricId
probe_exit_counter_from_string(const char *name)
{
    for (guint i = 0; name && i < G_N_ELEMENTS(exit_counters); i++)
        if (strcmp(exit_counters[i].name, name) == 0)
            return exit_counters[i].id;
    return METRIC_INVALID;
}

void
probe_exit_counters_init(ProbeExitCounters *c, ProbeExitSource source)
{
    c->source = source;
    metric_vec_init(&c->v);
}

static void
counters_add(ProbeExitCounters *c, MetricId id, guint64 value)
{
    gint64 sum = metric_vec_has(&c->v, id) ? c->v.v[id] : 0, add = metric_reading(value);

    c->v.v[id] = add > G_MAXINT64 - sum ? G_MAXINT64 : sum + add;
}

gboolean
probe_exit_counters_add_named(ProbeExitCounters *c, const char *name,
                              guint64 value)
{
    MetricId id = probe_exit_counter_from_string(name);

    if (id == METRIC_INVALID)
        return FALSE;
    if (c->source == PROBE_EXIT_SOURCE_NONE)
        c->source = PROBE_EXIT_SOURCE_QUERY_STATS;
    counters_add(c, id, value);
    return TRUE;
}

void
probe_exit_choice_init(ProbeExitChoice *ch)
{
    memset(ch, 0, sizeof(*ch));
    ch->chosen = PROBE_EXIT_SOURCE_NONE;
}

void
probe_exit_choice_clear(ProbeExitChoice *ch)
{
    g_clear_pointer(&ch->why, g_free);
}

gboolean
probe_exit_choice_is_dead(const ProbeExitChoice *ch, ProbeExitSource s)
{
    return s > PROBE_EXIT_SOURCE_NONE && s < PROBE_EXIT_SOURCE_MAX &&
           ch->dead[s] != PROBE_EXIT_SOURCE_NONE;
}

static void
choice_set(ProbeExitChoice *ch, ProbeExitSource chosen, const char *why)
{
    if (chosen == ch->chosen && g_strcmp0(why, ch->why) == 0)
        return;
    ch->chosen = chosen;
    g_free(ch->why);
    ch->why = g_strdup(why);
    ch->news = TRUE;
}

void
probe_exit_choice_set_absent(ProbeExitChoice *ch, const char *why)
{
    for (int s = 0; s < PROBE_EXIT_SOURCE_MAX; s++) {
        ch->have_prev[s] = FALSE;
        ch->dead[s] = PROBE_EXIT_SOURCE_NONE;
    }
    choice_set(ch, PROBE_EXIT_SOURCE_NONE, why);
}

/* Update liveness from this tick's deltas. */
static void
choice_note_deltas(ProbeExitChoice *ch,
                   const ProbeExitCounters *const readings[PROBE_EXIT_SOURCE_MAX])
{
    gboolean moved[PROBE_EXIT_SOURCE_MAX] = { FALSE };
    gboolean still[PROBE_EXIT_SOURCE_MAX] = { FALSE };
    ProbeExitSource counting = PROBE_EXIT_SOURCE_NONE;

    for (int s = PROBE_EXIT_SOURCE_NONE + 1; s < PROBE_EXIT_SOURCE_MAX; s++) {
        const ProbeExitCounters *r = readings[s];
        guint64 now;

        if (!r || !probe_exit_counters_has(r, METRIC_KVM_EXITS)) {
            ch->have_prev[s] = FALSE;
            continue;
        }
        now = (guint64)r->v.v[METRIC_KVM_EXITS];
        /* Backwards is a restart: a new baseline, no verdict this tick. */
        if (ch->have_prev[s] && now > ch->prev[s])
            moved[s] = TRUE;
        else if (ch->have_prev[s] && now == ch->prev[s])
            still[s] = TRUE;
        ch->have_prev[s] = TRUE;
        ch->prev[s] = now;
        if (moved[s] && counting == PROBE_EXIT_SOURCE_NONE)
            counting = s;
    }
    for (int s = PROBE_EXIT_SOURCE_NONE + 1; s < PROBE_EXIT_SOURCE_MAX; s++) {
        /* Judged afresh when it counts, or when it or its witness stops
         * reading. */
        if (moved[s] || !readings[s] ||
            (ch->dead[s] != PROBE_EXIT_SOURCE_NONE && !readings[ch->dead[s]]))
            ch->dead[s] = PROBE_EXIT_SOURCE_NONE;
        else if (still[s] && counting != PROBE_EXIT_SOURCE_NONE)
            ch->dead[s] = counting;
    }
}

ProbeExitSource
probe_exit_choice_pick(ProbeExitChoice *ch,
                       const ProbeExitCounters *const readings[PROBE_EXIT_SOURCE_MAX],
                       const char *const why_not[PROBE_EXIT_SOURCE_MAX])
{
    g_autoptr(GString) why = g_string_new(NULL);
    ProbeExitSource chosen = PROBE_EXIT_SOURCE_NONE;

    choice_note_deltas(ch, readings);
    for (int s = PROBE_EXIT_SOURCE_NONE + 1; s < PROBE_EXIT_SOURCE_MAX; s++) {
        if (readings[s] && probe_exit_counters_has(readings[s], METRIC_KVM_EXITS) &&
            !probe_exit_choice_is_dead(ch, s)) {
            chosen = s;
            break;
        }
        /* Why not this better one: said in the reason, without figures,
         * so that the reason changes only when the situation does. */
        if (why->len)
            g_string_append(why, "; ");
        g_string_append_printf(why, "%s ", probe_exit_source_strings[s]);
        if (readings[s] && probe_exit_choice_is_dead(ch, s))
            g_string_append_printf(why, "counts no exits while %s counts them",
                                   probe_exit_source_strings[ch->dead[s]]);
        else if (readings[s])
            g_string_append(why, "has no exits counter");
        else
            g_string_append(why, why_not && why_not[s] ? why_not[s] : "not used");
    }
    if (chosen == PROBE_EXIT_SOURCE_QUERY_STATS)
        g_string_assign(why, "QEMU's own KVM statistics");
    else if (chosen != PROBE_EXIT_SOURCE_NONE)
        g_string_prepend(why, "better sources unusable: ");
    choice_set(ch, chosen, why->str);
    return chosen;
}

gboolean
probe_exit_choice_take_news(ProbeExitChoice *ch, char **message)
{
    if (!ch->news)
        return FALSE;
    ch->news = FALSE;
    *message = g_strdup_printf("exits: %s: %s", probe_exit_source_strings[ch->chosen],
                               ch->why ? ch->why : "");
    return TRUE;
}

/* The counters debugfs has: all but the tracepoint-only ones. */
#define DEBUGFS_N_COUNTERS (G_N_ELEMENTS(exit_counters) - 2)

typedef struct {
    ProbeFile files[DEBUGFS_N_COUNTERS];
} VmDir;

struct ProbeKvmDebugfs {
    char *kvm_dir;          /* <debugfs>/kvm */
    int pid;
    GArray *vm_dirs;        /* VmDir of each <pid>-* directory */
    ProbeBuf buf;
};

static void
vm_dir_clear(gpointer p)
{
    VmDir *v = p;

    for (guint k = 0; k < DEBUGFS_N_COUNTERS; k++)
        probe_file_clear(&v->files[k]);
}

ProbeKvmDebugfs *
probe_kvm_debugfs_new(const char *debugfs_root, int pid)
{
    ProbeKvmDebugfs *d = g_new0(ProbeKvmDebugfs, 1);

    d->kvm_dir = g_build_filename(debugfs_root, "kvm", NULL);
    d->pid = pid;
    d->vm_dirs = g_array_new(FALSE, TRUE, sizeof(VmDir));
    g_array_set_clear_func(d->vm_dirs, vm_dir_clear);
    return d;
}

void
probe_kvm_debugfs_free(ProbeKvmDebugfs *d)
{
    if (!d)
        return;
    g_free(d->kvm_dir);
    g_array_unref(d->vm_dirs);
    probe_buf_clear(&d->buf);
    g_free(d);
}

/* Note which counter files @dir has: kernels differ in the halt_* set. */
static void
vm_dir_add(ProbeKvmDebugfs *d, const char *dir)
{
    VmDir v;

    for (guint k = 0; k < DEBUGFS_N_COUNTERS; k++) {
        char *path = g_build_filename(dir, exit_counters[k].name, NULL);

        if (exit_counters[k].id != METRIC_KVM_EXITS && !g_file_test(path, G_FILE_TEST_EXISTS))
            g_clear_pointer(&path, g_free);
        probe_file_init(&v.files[k], path);
    }
    g_array_append_val(d->vm_dirs, v);
}

static gboolean
debugfs_scan(ProbeKvmDebugfs *d, GError **error)
{
    g_autoptr(GDir) dir = NULL;
    g_autoptr(GError) local = NULL;
    g_autofree char *prefix = g_strdup_printf("%d-", d->pid);
    const char *name;

    g_array_set_size(d->vm_dirs, 0);
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
    while ((name = g_dir_read_name(dir))) {
        g_autofree char *path = NULL;

        if (!g_str_has_prefix(name, prefix))
            continue;
        path = g_build_filename(d->kvm_dir, name, NULL);
        vm_dir_add(d, path);
    }
    if (d->vm_dirs->len == 0) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_MISSING,
                    "%s: no directory for process %d (not a KVM guest?)",
                    d->kvm_dir, d->pid);
        return FALSE;
    }
    return TRUE;
}

static gboolean
debugfs_read_dir(ProbeKvmDebugfs *d, VmDir *v, ProbeExitCounters *c,
                 GError **error)
{
    for (guint k = 0; k < DEBUGFS_N_COUNTERS; k++) {
        ProbeFile *f = &v->files[k];
        const char *p;
        guint64 value;

        if (!f->path)
            continue;
        if (!probe_file_reread(f, &d->buf, 4096, error))
            return FALSE;
        p = d->buf.data;
        if (!probe_parse_u64(&p, &value) || (*p != '\n' && *p != '\0')) {
            probe_set_parse_error(error, f->path, "not a single unsigned number");
            return FALSE;
        }
        counters_add(c, exit_counters[k].id, value);
    }
    return TRUE;
}

gboolean
probe_kvm_debugfs_read(ProbeKvmDebugfs *d, ProbeExitCounters *out,
                       GError **error)
{
    gboolean rescanned = FALSE;

    for (;;) {
        ProbeExitCounters c;
        g_autoptr(GError) local = NULL;
        guint i;

        probe_exit_counters_init(&c, PROBE_EXIT_SOURCE_DEBUGFS);
        if (d->vm_dirs->len == 0) {
            if (!debugfs_scan(d, error))
                return FALSE;
            rescanned = TRUE;
        }
        for (i = 0; i < d->vm_dirs->len; i++)
            if (!debugfs_read_dir(d, &g_array_index(d->vm_dirs, VmDir, i), &c,
                                  &local))
                break;
        if (i == d->vm_dirs->len) {
            *out = c;
            return TRUE;
        }
        /* The VM went away, or a file did: look again, once. */
        g_array_set_size(d->vm_dirs, 0);
        if (rescanned || g_error_matches(local, PROBE_ERROR, PROBE_ERROR_PARSE)) {
            g_propagate_error(error, g_steal_pointer(&local));
            return FALSE;
        }
    }
}
