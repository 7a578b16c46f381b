/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-source: whether a measurement source works, said once.
 *
 * Each source (a target's thread files, debugfs, perf; the host's PSI and
 * /proc/stat) keeps a state: unknown until first tried, then available or
 * "unavailable: <reason>".  The caller can ask the state at any time, and
 * probe_source_take_news() hands out a message only when the state (or the
 * reason) changes, so the daemon logs "debugfs: unavailable: ..." once and
 * not every tick.  An unavailable source is tried again only every
 * PROBE_SOURCE_RETRY_TICKS samples, so that a missing facility costs
 * nothing in between.
 */
#pragma once

#include <glib.h>

#define PROBE_SOURCE_RETRY_TICKS 60

typedef enum {
    PROBE_SOURCE_THREAD,        /* /proc/<pid>/task/<tid>/{stat,status,schedstat} */
    PROBE_SOURCE_SCHEDSTAT,     /* schedstat specifically: run delay */
    PROBE_SOURCE_VCPU,          /* vCPU threads' schedstat */
    PROBE_SOURCE_DEBUGFS,       /* debugfs kvm/<pid>-* */
    PROBE_SOURCE_PERF,          /* kvm tracepoints */
    PROBE_SOURCE_PSI,           /* /proc/pressure/cpu */
    PROBE_SOURCE_STAT,          /* /proc/stat */
    PROBE_SOURCE_MAX,
    PROBE_SOURCE_INVALID = -1,
} ProbeSourceKind;

const char *probe_source_kind_to_string(ProbeSourceKind k);
ProbeSourceKind probe_source_kind_from_string(const char *s);

typedef enum {
    PROBE_SOURCE_UNKNOWN,
    PROBE_SOURCE_AVAILABLE,
    PROBE_SOURCE_UNAVAILABLE,
} ProbeSourceState;

typedef struct {
    ProbeSourceKind kind;
    ProbeSourceState state;
    char *reason;               /* when UNAVAILABLE */
    gboolean news;              /* state changed since the last take */
    guint skip;                 /* samples left before the next retry */
} ProbeSource;

void probe_source_init(ProbeSource *s, ProbeSourceKind kind);
void probe_source_clear(ProbeSource *s);

void probe_source_set_available(ProbeSource *s);
/* Record the failure; takes @reason. */
void probe_source_set_unavailable(ProbeSource *s, char *reason);

/* TRUE if the caller should try the source this sample (counts retries). */
gboolean probe_source_should_try(ProbeSource *s);

/*
 * If the state changed since the last call, return TRUE and a message for
 * the log: "<kind>: available" or "<kind>: unavailable: <reason>".
 */
gboolean probe_source_take_news(ProbeSource *s, char **message);
