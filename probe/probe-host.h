/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-host: how contended the host's CPUs are.
 *
 *   <proc_root>/pressure/cpu   PSI: "some" and "full" lines, avg10 (%) and
 *                              total (µs stalled).  Kernels before 5.13 have
 *                              no "full" line for cpu: have_full FALSE.
 *   <proc_root>/stat           the aggregate "cpu" line, in clock ticks, and
 *                              the number of "cpuN" lines (online CPUs).
 *
 * Parsers are pure; readers take the root so that tests use fixture trees.
 */
#pragma once

#include <glib.h>
#include "probe-read.h"

typedef struct {
    double some_avg10;
    guint64 some_total_us;
    gboolean have_full;
    double full_avg10;
    guint64 full_total_us;
} ProbePsi;

typedef struct {
    guint64 busy_ticks;     /* user nice system irq softirq steal */
    guint64 total_ticks;    /* busy + idle + iowait */
    guint n_cpus;
} ProbeCpuStat;

gboolean probe_psi_parse(const char *text, const char *path, ProbePsi *out,
                         GError **error);

/* The same through a descriptor kept open (probe-read.h). */
gboolean probe_psi_reread(ProbeFile *f, ProbeBuf *buf, ProbePsi *out,
                          GError **error);

gboolean probe_cpu_stat_parse(const char *text, const char *path,
                              ProbeCpuStat *out, GError **error);
gboolean probe_cpu_stat_reread(ProbeFile *f, ProbeBuf *buf, ProbeCpuStat *out,
                               GError **error);

/*
 * This boot's identity, <proc_root>/sys/kernel/random/boot_id (a UUID), so
 * that a pid and start time seen before a reboot are not taken for the
 * same process after it.  NULL with @error when unreadable or malformed.
 */
char *probe_boot_id_read(const char *proc_root, GError **error);
