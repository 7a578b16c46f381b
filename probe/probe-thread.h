/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-thread: per-thread counters of a QEMU process, and finding its
 * threads.
 *
 * All paths are below @proc_root ("/proc", or a fixture tree): a thread is
 * <proc_root>/<pid>/task/<tid>/.  Looking a tid up there also proves it is a
 * thread of @pid: the kernel lists only the thread group's own tasks.
 *
 * Readers:
 *   stat       utime and stime (clock ticks) and comm;
 *   status     voluntary_ctxt_switches and nonvoluntary_ctxt_switches;
 *   schedstat  time on CPU and time waiting on a run queue (ns).  Kernels
 *              without scheduler statistics print "0 0 0" there; that is
 *              reported as absent, not as zero contention.
 *
 * Thread names: with QEMU's debug-threads=on an iothread <id> is named
 * "IO <id>" and a vCPU "CPU <n>/KVM" (or "/TCG").  The kernel cuts names to
 * 15 bytes, so a long iothread id is matched on its first bytes, and two ids
 * that become the same name are reported as ambiguous.
 */
#pragma once

#include <glib.h>
#include "metric-vec.h"
#include "probe-read.h"

#define PROBE_COMM_MAX 16       /* TASK_COMM_LEN, with the NUL */

/*
 * One thread's reading: its name, and its counters as entries of the
 * metric vector, cumulative (metric_reading()), absent until read:
 *   stat       METRIC_UTIME_TICKS, METRIC_STIME_TICKS;
 *   status     METRIC_CTX_VOL (voluntary: blocks), METRIC_CTX_INVOL
 *              (involuntary: preemptions);
 *   schedstat  METRIC_CPU_NS (field 1, time on CPU) and
 *              METRIC_RUNQ_WAIT_NS (field 2, run-queue wait), both absent
 *              without scheduler statistics.
 */
typedef struct {
    char comm[PROBE_COMM_MAX];
    MetricVec v;
} ProbeThreadCounters;

/* No name, every counter absent. */
void probe_thread_counters_init(ProbeThreadCounters *c);

/* Whether schedstat was read (and was not all zero). */
static inline gboolean
probe_thread_counters_have_schedstat(const ProbeThreadCounters *c)
{
    return metric_vec_has(&c->v, METRIC_CPU_NS);
}

/* Pure parsers; @path only names the file in errors. */
gboolean probe_thread_parse_stat(const char *text, const char *path,
                                 ProbeThreadCounters *out, GError **error);
gboolean probe_thread_parse_status(const char *text, const char *path,
                                   ProbeThreadCounters *out, GError **error);
gboolean probe_thread_parse_schedstat(const char *text, const char *path,
                                      ProbeThreadCounters *out, GError **error);

/*
 * One thread's files, kept open from tick to tick (see ProbeFile).  Reads
 * fail with PROBE_ERROR_MISSING once the thread has exited, even if its
 * tid is reused: the caller then resolves the thread again.
 */
typedef struct {
    int pid;
    int tid;
    ProbeFile stat;
    ProbeFile status;
    ProbeFile schedstat;
} ProbeThreadFiles;

void probe_thread_files_init(ProbeThreadFiles *f, const char *proc_root,
                             int pid, int tid);
void probe_thread_files_clear(ProbeThreadFiles *f);

/*
 * Read stat, status and schedstat.  A missing or malformed schedstat
 * leaves its entries absent and is not an error; a missing stat or
 * status is (PROBE_ERROR_MISSING when the thread is gone).  @buf is
 * scratch space the caller keeps between calls.
 */
gboolean probe_thread_files_read(ProbeThreadFiles *f, ProbeBuf *buf,
                                 ProbeThreadCounters *out, GError **error);
/* Only schedstat (vCPU run delay) into @out, its entries absent if all zero. */
gboolean probe_thread_files_read_schedstat(ProbeThreadFiles *f, ProbeBuf *buf,
                                           ProbeThreadCounters *out,
                                           GError **error);

/*
 * When process @pid started: field 22 of <proc_root>/<pid>/stat, in clock
 * ticks after boot.  With the pid it names one process for the boot: a
 * reused pid belongs to a process that started later.
 */
gboolean probe_process_parse_start(const char *text, const char *path,
                                   guint64 *start_ticks, GError **error);
gboolean probe_process_read_start(const char *proc_root, int pid,
                                  guint64 *start_ticks, GError **error);
/* Field 3 of <proc_root>/<pid>/stat, the process state ('R', 'S', 'Z' for
 * one that exited and is not yet reaped...), or 0 when it cannot be read. */
char probe_process_read_state(const char *proc_root, int pid);

typedef struct {
    int tid;
    char comm[PROBE_COMM_MAX];
} ProbeTask;

/* A task directory's name as a tid (a positive int), or FALSE. */
gboolean probe_parse_tid(const char *name, int *tid);

/* The threads of @pid with their names, as a GArray of ProbeTask. */
GArray *probe_tasks_list(const char *proc_root, int pid, GError **error);

/* The thread name QEMU gives iothread @id, cut as the kernel cuts it. */
void probe_iothread_comm(const char *iothread_id, char comm[PROBE_COMM_MAX]);

/*
 * The tid of iothread @iothread_id among @tasks, or 0 with
 * PROBE_ERROR_MISSING (no such thread) or PROBE_ERROR_PARSE (ambiguous).
 */
int probe_tasks_find_iothread(const GArray *tasks, const char *iothread_id,
                              GError **error);

/* If @comm names a vCPU thread ("CPU <n>/KVM", "CPU <n>/TCG"), its index. */
gboolean probe_comm_is_vcpu(const char *comm, guint *index);
