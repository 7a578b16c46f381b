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

PT_ENUM_IMPL(probe_exit_counter, ProbeExitCounter, PROBE_EXIT_COUNTER_MAX,
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
             [PROBE_EXIT_FAST_MMIO] = "fast_mmio")

G_STATIC_ASSERT(PROBE_EXIT_COUNTER_MAX <= 32);

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
    if (c->source == PROBE_EXIT_SOURCE_NONE)
        c->source = PROBE_EXIT_SOURCE_QUERY_STATS;
    counters_add(c, k, value);
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

        if (!r || !probe_exit_counters_has(r, PROBE_EXIT_EXITS)) {
            ch->have_prev[s] = FALSE;
            continue;
        }
        now = r->v[PROBE_EXIT_EXITS];
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
        if (readings[s] && probe_exit_counters_has(readings[s], PROBE_EXIT_EXITS) &&
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
#define DEBUGFS_N_COUNTERS PROBE_EXIT_USERSPACE_EXITS

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

    for (int k = 0; k < DEBUGFS_N_COUNTERS; k++)
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

    for (int k = 0; k < DEBUGFS_N_COUNTERS; k++) {
        char *path = g_build_filename(dir, probe_exit_counter_strings[k], NULL);

        if (k != PROBE_EXIT_EXITS && !g_file_test(path, G_FILE_TEST_EXISTS))
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
    for (int k = 0; k < DEBUGFS_N_COUNTERS; k++) {
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
        counters_add(c, k, value);
    }
    return TRUE;
}

gboolean
probe_kvm_debugfs_read(ProbeKvmDebugfs *d, ProbeExitCounters *out,
                       GError **error)
{
    gboolean rescanned = FALSE;

    for (;;) {
        ProbeExitCounters c = { .source = PROBE_EXIT_SOURCE_DEBUGFS };
        g_autoptr(GError) local = NULL;
        guint i;

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
