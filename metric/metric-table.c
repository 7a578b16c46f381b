/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * metric-table: the declarations; see the header for what reads them.
 */
#include <math.h>

#include "common/pt-enum-table.h"
#include "metric-vec.h"

#define IOTHREAD METRIC_SOURCE_IOTHREAD
#define THREAD METRIC_SOURCE_THREAD
#define BLOCK METRIC_SOURCE_BLOCK
#define EXITS METRIC_SOURCE_EXITS
#define HOST_PSI METRIC_SOURCE_HOST_PSI
#define HOST_STAT METRIC_SOURCE_HOST_STAT
#define HOST_VCPU METRIC_SOURCE_HOST_VCPU

static const char om_ops_help[] =
    "Read, write and flush operations on the devices the iothread serves.";
static const char om_bytes_help[] =
    "Bytes read and written on the devices the iothread serves.";
static const char om_io_time_help[] =
    "Time the operations were in flight, summed over operations; its rate is the "
    "mean queue depth.";

/* A counter after METRIC_MAX: no sample column, not exported per iothread. */
#define VEC_ONLY(name, unit, source, reset, help) \
    { name, unit, source, reset, help, NULL, NULL, NULL, 1, NULL, NULL, NULL, FALSE }

static const MetricDef metric_defs[METRIC_VEC_MAX] = {
    [METRIC_POLL_MAX_NS] = {
        "poll_max_ns", "ns", IOTHREAD, METRIC_RESET_GAUGE,
        "The iothread's poll-max-ns in force during the tick.",
        "polltune_poll_max_seconds", NULL, NULL, 1e-9, "seconds",
        "The iothread's poll-max-ns, in seconds.", "poll-max-ns", .rollup = TRUE },
    [METRIC_POLL_GROW] = {
        "poll_grow", "", IOTHREAD, METRIC_RESET_GAUGE,
        "The iothread's poll-grow in force during the tick (0: QEMU's default).",
        "polltune_poll_grow", NULL, NULL, 1, NULL,
        "The iothread's poll-grow (0: QEMU's default).", NULL, .rollup = TRUE },
    [METRIC_POLL_SHRINK] = {
        "poll_shrink", "", IOTHREAD, METRIC_RESET_GAUGE,
        "The iothread's poll-shrink in force during the tick (0: reset).",
        "polltune_poll_shrink", NULL, NULL, 1, NULL,
        "The iothread's poll-shrink (0: reset).", NULL, .rollup = TRUE },
    [METRIC_CPU_NS] = {
        "cpu_ns", "ns", THREAD, METRIC_RESET_SELF,
        "CPU time of the iothread's thread: schedstat run time, else utime+stime.",
        /* label without a value: split by whether polling was on */
        "polltune_iothread_cpu_seconds", "polling", NULL, 1e-9, "seconds",
        "CPU time of the iothread's thread, split by whether poll-max-ns was above 0 "
        "during the tick (the CPU of a polling iothread, not the CPU spent polling).", NULL },
    [METRIC_CTX_VOL] = {
        "ctx_vol", "switches", THREAD, METRIC_RESET_SELF,
        "Voluntary context switches: each is one real block in ppoll/epoll_wait.",
        "polltune_iothread_blocks", NULL, NULL, 1, NULL,
        "Voluntary context switches of the iothread: each is one real block in "
        "ppoll/epoll_wait.", NULL },
    [METRIC_CTX_INVOL] = {
        "ctx_invol", "switches", THREAD, METRIC_RESET_SELF,
        "Involuntary context switches: the iothread was preempted.",
        NULL, NULL, NULL, 1, NULL, NULL, NULL },
    [METRIC_RUNQ_WAIT_NS] = {
        "runq_wait_ns", "ns", THREAD, METRIC_RESET_SELF,
        "Time the iothread waited for a CPU (schedstat run-queue wait).",
        "polltune_iothread_run_delay_seconds", NULL, NULL, 1e-9, "seconds",
        "Time the iothread waited for a CPU (schedstat run-queue wait).", NULL },
    [METRIC_RD_OPS] = {
        "rd_ops", "ops", BLOCK, METRIC_RESET_GROUP, "Read operations.",
        "polltune_iothread_operations", "op", "read", 1, NULL, om_ops_help, NULL },
    [METRIC_RD_BYTES] = {
        "rd_bytes", "bytes", BLOCK, METRIC_RESET_GROUP, "Bytes read.",
        "polltune_iothread_bytes", "op", "read", 1, "bytes", om_bytes_help, NULL },
    [METRIC_RD_TIME_NS] = {
        "rd_time_ns", "ns", BLOCK, METRIC_RESET_GROUP,
        "Time reads were in flight, summed over reads.",
        "polltune_iothread_io_time_seconds", NULL, NULL, 1e-9, "seconds", om_io_time_help, NULL },
    [METRIC_WR_OPS] = {
        "wr_ops", "ops", BLOCK, METRIC_RESET_GROUP, "Write operations.",
        "polltune_iothread_operations", "op", "write", 1, NULL, om_ops_help, NULL },
    [METRIC_WR_BYTES] = {
        "wr_bytes", "bytes", BLOCK, METRIC_RESET_GROUP, "Bytes written.",
        "polltune_iothread_bytes", "op", "write", 1, "bytes", om_bytes_help, NULL },
    [METRIC_WR_TIME_NS] = {
        "wr_time_ns", "ns", BLOCK, METRIC_RESET_GROUP,
        "Time writes were in flight, summed over writes.",
        "polltune_iothread_io_time_seconds", NULL, NULL, 1e-9, "seconds", om_io_time_help, NULL },
    [METRIC_FLUSH_OPS] = {
        "flush_ops", "ops", BLOCK, METRIC_RESET_GROUP, "Flush operations.",
        "polltune_iothread_flush_operations", NULL, NULL, 1, NULL,
        "Flush operations on the devices the iothread serves.", NULL },
    [METRIC_FLUSH_TIME_NS] = {
        "flush_time_ns", "ns", BLOCK, METRIC_RESET_GROUP,
        "Time flushes were in flight, summed over flushes.",
        "polltune_iothread_io_time_seconds", NULL, NULL, 1e-9, "seconds", om_io_time_help, NULL },
    [METRIC_KVM_EXITS] = {
        "kvm_exits", "exits", EXITS, METRIC_RESET_SELF, "KVM exits of the whole VM.",
        NULL, NULL, NULL, 1, NULL, NULL, NULL },
    [METRIC_IO_EXITS] = {
        "io_exits", "exits", EXITS, METRIC_RESET_SELF, "KVM exits on port I/O.",
        NULL, NULL, NULL, 1, NULL, NULL, NULL },
    [METRIC_MMIO_EXITS] = {
        "mmio_exits", "exits", EXITS, METRIC_RESET_SELF, "KVM exits on MMIO.",
        NULL, NULL, NULL, 1, NULL, NULL, NULL },
    [METRIC_HALT_EXITS] = {
        "halt_exits", "exits", EXITS, METRIC_RESET_SELF, "KVM exits on HLT.",
        NULL, NULL, NULL, 1, NULL, NULL, NULL },
    [METRIC_AIO_MAX_BATCH] = {
        "aio_max_batch", "requests", IOTHREAD, METRIC_RESET_GAUGE,
        "The iothread's aio-max-batch in force during the tick: the most requests its "
        "AIO engine submits in one batch (0: QEMU's default).",
        "polltune_aio_max_batch", NULL, NULL, 1, NULL,
        "The iothread's aio-max-batch (0: QEMU's default).", "aio-max-batch" },
    /* The host's: not exported per iothread, no JSON key of a sample. */
    [METRIC_HOST_PSI_SOME_US] = VEC_ONLY(
        "cpu_some_us", "us", HOST_PSI, METRIC_RESET_SELF,
        "Time some runnable task waited for a CPU (PSI's cpu some total)."),
    /* busy and total are one ratio: either going back drops both */
    [METRIC_HOST_CPU_BUSY] = VEC_ONLY(
        "busy_ticks", "ticks", HOST_STAT, METRIC_RESET_GROUP,
        "Non-idle CPU time of the host, summed over its CPUs."),
    [METRIC_HOST_CPU_TOTAL] = VEC_ONLY(
        "total_ticks", "ticks", HOST_STAT, METRIC_RESET_GROUP,
        "CPU time of the host in all, busy and idle, summed over its CPUs."),
    [METRIC_HOST_VCPU_WAIT_NS] = VEC_ONLY(
        "vcpu_run_delay_ns", "ns", HOST_VCPU, METRIC_RESET_SELF,
        "Time the VMs' vCPU threads waited for a CPU, summed over the threads."),
    /* The thread's CPU time in ticks, read for METRIC_CPU_NS's fallback. */
    [METRIC_UTIME_TICKS] = VEC_ONLY(
        "utime_ticks", "ticks", THREAD, METRIC_RESET_SELF,
        "CPU time of the iothread's thread in user mode (stat's utime)."),
    [METRIC_STIME_TICKS] = VEC_ONLY(
        "stime_ticks", "ticks", THREAD, METRIC_RESET_SELF,
        "CPU time of the iothread's thread in the kernel (stat's stime)."),
    [METRIC_HALT_SUCCESSFUL_POLL] = VEC_ONLY(
        "halt_successful_poll", "polls", EXITS, METRIC_RESET_SELF,
        "HLTs that KVM's halt polling ended with a wakeup."),
    [METRIC_HALT_ATTEMPTED_POLL] = VEC_ONLY(
        "halt_attempted_poll", "polls", EXITS, METRIC_RESET_SELF,
        "HLTs that KVM polled on."),
    [METRIC_HALT_POLL_INVALID] = VEC_ONLY(
        "halt_poll_invalid", "polls", EXITS, METRIC_RESET_SELF,
        "Halt polls ended because the vCPU could not sleep."),
    [METRIC_HALT_WAKEUP] = VEC_ONLY(
        "halt_wakeup", "wakeups", EXITS, METRIC_RESET_SELF,
        "Wakeups of a halted vCPU."),
    [METRIC_HALT_POLL_SUCCESS_NS] = VEC_ONLY(
        "halt_poll_success_ns", "ns", EXITS, METRIC_RESET_SELF,
        "Time spent in halt polls that ended with a wakeup."),
    [METRIC_HALT_POLL_FAIL_NS] = VEC_ONLY(
        "halt_poll_fail_ns", "ns", EXITS, METRIC_RESET_SELF,
        "Time spent in halt polls that did not."),
    [METRIC_HALT_WAIT_NS] = VEC_ONLY(
        "halt_wait_ns", "ns", EXITS, METRIC_RESET_SELF,
        "Time halted vCPUs slept."),
    [METRIC_USERSPACE_EXITS] = VEC_ONLY(
        "userspace_exits", "exits", EXITS, METRIC_RESET_SELF,
        "Exits to QEMU (the kvm_userspace_exit tracepoint)."),
    [METRIC_FAST_MMIO] = VEC_ONLY(
        "fast_mmio", "exits", EXITS, METRIC_RESET_SELF,
        "MMIO exits handled in the kernel (the kvm_fast_mmio tracepoint)."),
};

#define OPS { METRIC_RD_OPS, METRIC_WR_OPS, METRIC_FLUSH_OPS }
#define IO_TIME { METRIC_RD_TIME_NS, METRIC_WR_TIME_NS, METRIC_FLUSH_TIME_NS }
#define ONE(id) { id, METRIC_INVALID, METRIC_INVALID }

/*
 * Rollups keep integers: IOPS in milli-ops/s, latency in ns per operation,
 * CPU in ppm of one core (store-maintain.c); the scale turns them into the
 * rate's unit.
 */
static const MetricRateDef metric_rate_defs[METRIC_RATE_MAX] = {
    [METRIC_RATE_IOPS] = { "iops", "ops/s", OPS, 1, METRIC_PER_SECOND, FALSE,
                           "iops", "milli-ops/s", 1e-3, "", 3, "IOPS", -1, .raw_export = TRUE },
    [METRIC_RATE_RD_IOPS] = { "rd_iops", "ops/s", ONE(METRIC_RD_OPS), 1, METRIC_PER_SECOND,
                              TRUE },
    [METRIC_RATE_WR_IOPS] = { "wr_iops", "ops/s", ONE(METRIC_WR_OPS), 1, METRIC_PER_SECOND,
                              TRUE },
    [METRIC_RATE_FLUSH_IOPS] = { "flush_iops", "ops/s", ONE(METRIC_FLUSH_OPS), 1,
                                 METRIC_PER_SECOND, TRUE },
    [METRIC_RATE_MBPS] = { "mbps", "MB/s", { METRIC_RD_BYTES, METRIC_WR_BYTES, METRIC_INVALID },
                           1e-6, METRIC_PER_SECOND, FALSE },
    [METRIC_RATE_LAT_US] = { "lat_us", "us", IO_TIME, 1e-3, METRIC_PER_OP_SKIP_IDLE, TRUE,
                             "lat", "ns", 1e-3, "_ns", 0, "LAT-\302\265s", 1 },
    [METRIC_RATE_QUEUE_DEPTH] = { "queue_depth", "", IO_TIME, 1, METRIC_PER_TICK_NS, TRUE },
    [METRIC_RATE_CPU_PCT] = { "cpu_pct", "%", ONE(METRIC_CPU_NS), 100, METRIC_PER_TICK_NS, FALSE,
                              "cpu", "ppm", 1e-4, "_pct", 4, "CPU-%", 1 },
    [METRIC_RATE_BLOCKS_PER_S] = { "blocks_per_s", "1/s", ONE(METRIC_CTX_VOL), 1,
                                   METRIC_PER_SECOND, FALSE },
    [METRIC_RATE_BLOCKS_PER_OP] = { "blocks_per_op", "", ONE(METRIC_CTX_VOL), 1,
                                    METRIC_PER_OP_SKIP_IDLE,
                                    TRUE, .cli_header = "BLK/OP", .cli_decimals = 2 },
    [METRIC_RATE_RUN_DELAY_PCT] = { "run_delay_pct", "%", ONE(METRIC_RUNQ_WAIT_NS), 100,
                                    METRIC_PER_TICK_NS, FALSE },
    [METRIC_RATE_EXITS_PER_S] = { "exits_per_s", "1/s", ONE(METRIC_KVM_EXITS), 1,
                                  METRIC_PER_SECOND, FALSE },
    [METRIC_RATE_EXITS_PER_OP] = { "exits_per_op", "", ONE(METRIC_KVM_EXITS), 1,
                                   METRIC_PER_OP_SKIP_IDLE,
                                   TRUE, .cli_header = "EXIT/OP", .cli_decimals = 2 },
};

PT_ENUM_IMPL_TO_STRING(metric_source, MetricSource, METRIC_SOURCE_MAX,
                       [METRIC_SOURCE_IOTHREAD] = "query-iothreads",
                       [METRIC_SOURCE_THREAD] = "thread",
                       [METRIC_SOURCE_BLOCK] = "blockstats",
                       [METRIC_SOURCE_EXITS] = "exits",
                       [METRIC_SOURCE_HOST_PSI] = "pressure",
                       [METRIC_SOURCE_HOST_STAT] = "stat",
                       [METRIC_SOURCE_HOST_VCPU] = "vcpu-schedstat")

PT_ENUM_IMPL_TO_STRING(metric_reset, MetricReset, METRIC_RESET_MAX,
                       [METRIC_RESET_GAUGE] = "gauge",
                       [METRIC_RESET_GROUP] = "group",
                       [METRIC_RESET_SELF] = "self")

const MetricDef *
metric_def(MetricId id)
{
    return id >= 0 && id < METRIC_VEC_MAX ? &metric_defs[id] : NULL;
}

const MetricRateDef *
metric_rate_def(MetricRate rate)
{
    return rate >= 0 && rate < METRIC_RATE_MAX ? &metric_rate_defs[rate] : NULL;
}

/* Sum of the terms, or FALSE if one is absent. */
static gboolean
terms_sum(const MetricId *terms, const MetricVec *m, gint64 *sum)
{
    *sum = 0;
    for (int i = 0; i < METRIC_RATE_TERMS && terms[i] != METRIC_INVALID; i++) {
        if (!metric_vec_has(m, terms[i]))
            return FALSE;
        /* Each value is held below 2^63, their sum need not be: a rate
         * of readings that large saturates instead of wrapping. */
        if (__builtin_add_overflow(*sum, m->v[terms[i]], sum))
            *sum = m->v[terms[i]] > 0 ? G_MAXINT64 : -G_MAXINT64;
    }
    return TRUE;
}

gboolean
metric_values_ops(const MetricVec *m, gint64 *ops)
{
    static const MetricId terms[METRIC_RATE_TERMS] = OPS;

    return terms_sum(terms, m, ops);
}

gboolean
metric_rate_value(MetricRate rate, const MetricVec *m, gint64 len_ns, double *out)
{
    const MetricRateDef *r = metric_rate_def(rate);
    gint64 num, ops = 0;
    gboolean have_ops;
    double v;

    if (!r || len_ns <= 0 || !terms_sum(r->terms, m, &num))
        return FALSE;
    have_ops = metric_values_ops(m, &ops);
    if (!have_ops && (r->needs_ops || r->per == METRIC_PER_OP_SKIP_IDLE))
        return FALSE;
    switch (r->per) {
    case METRIC_PER_SECOND:
        v = num * r->scale * 1e9 / len_ns;
        break;
    case METRIC_PER_TICK_NS:
        v = num * r->scale / (double)len_ns;
        break;
    case METRIC_PER_OP_SKIP_IDLE:
        if (ops <= 0)
            return FALSE;
        v = num * r->scale / (double)ops;
        break;
    default:
        return FALSE;
    }
    if (isnan(v) || isinf(v))
        return FALSE;
    *out = v;
    return TRUE;
}
