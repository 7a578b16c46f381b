/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-source.h"
#include "common/pt-enum-table.h"

#include "probe-read.h"

PT_ENUM_IMPL(probe_source_kind, ProbeSourceKind, PROBE_SOURCE_MAX,
             [PROBE_SOURCE_THREAD] = "thread",
             [PROBE_SOURCE_SCHEDSTAT] = "schedstat",
             [PROBE_SOURCE_VCPU] = "vcpu",
             [PROBE_SOURCE_DEBUGFS] = "debugfs",
             [PROBE_SOURCE_PERF] = "perf",
             [PROBE_SOURCE_PSI] = "psi",
             [PROBE_SOURCE_STAT] = "stat")

void
probe_source_init(ProbeSource *s, ProbeSourceKind kind)
{
    memset(s, 0, sizeof(*s));
    s->kind = kind;
}

void
probe_source_clear(ProbeSource *s)
{
    if (!s)
        return;
    g_clear_pointer(&s->reason, g_free);
}

void
probe_source_set_available(ProbeSource *s)
{
    s->skip = 0;
    if (s->state == PROBE_SOURCE_AVAILABLE)
        return;
    s->state = PROBE_SOURCE_AVAILABLE;
    g_clear_pointer(&s->reason, g_free);
    s->news = TRUE;
}

void
probe_source_set_unavailable(ProbeSource *s, char *reason)
{
    s->skip = PROBE_SOURCE_RETRY_TICKS;
    if (s->state == PROBE_SOURCE_UNAVAILABLE && g_strcmp0(s->reason, reason) == 0) {
        g_free(reason);
        return;
    }
    s->state = PROBE_SOURCE_UNAVAILABLE;
    g_free(s->reason);
    s->reason = reason;
    s->news = TRUE;
}

gboolean
probe_source_should_try(ProbeSource *s)
{
    if (s->state != PROBE_SOURCE_UNAVAILABLE)
        return TRUE;
    if (s->skip > 0)
        s->skip--;
    return s->skip == 0;
}

gboolean
probe_source_take_news(ProbeSource *s, char **message)
{
    if (!s->news)
        return FALSE;
    s->news = FALSE;
    if (s->state == PROBE_SOURCE_UNAVAILABLE)
        *message = g_strdup_printf("%s: unavailable: %s",
                                   probe_source_kind_strings[s->kind], s->reason);
    else
        *message = g_strdup_printf("%s: available", probe_source_kind_strings[s->kind]);
    return TRUE;
}
