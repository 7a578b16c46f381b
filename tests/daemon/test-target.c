/*
 * The per-target bookkeeping the daemon keeps in memory between ticks:
 * whatever the uptime, it must stay bounded.
 */
#include "pt-target.h"

static void
noop_free(PtTarget *t)
{
}

static const PtTargetOps noop_ops = { .free = noop_free };

/* A day of ticks leaves at most PT_HISTORY_TICKS plus the slack of one
 * trim per iothread, and the newest metrics last. */
static void
test_history_bounded(void)
{
    g_autoptr(PtTarget) t = pt_target_alloc(sizeof(PtTarget), &noop_ops, "vm", STORE_TARGET_QMP);
    PtIothread *io = pt_target_iothread(t, "iot0");
    guint most = 0;

    for (guint i = 0; i < 86400; i++) {
        PolicyMetrics m = { 0 };

        m.rd_iops = i;
        pt_iothread_push_metrics(io, &m);
        most = MAX(most, io->history->len);
    }
    g_assert_cmpuint(most, <=, PT_HISTORY_TICKS + PT_HISTORY_TICKS / 10);
    g_assert_cmpuint(io->history->len, >=, PT_HISTORY_TICKS);
    g_assert_cmpfloat(g_array_index(io->history, PolicyMetrics, io->history->len - 1).rd_iops,
                      ==, 86399);
    /* Oldest first, consecutive. */
    for (guint i = 1; i < io->history->len; i++)
        g_assert_cmpfloat(g_array_index(io->history, PolicyMetrics, i).rd_iops, ==,
                          g_array_index(io->history, PolicyMetrics, i - 1).rd_iops + 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/target/history-bounded", test_history_bounded);
    return g_test_run();
}
