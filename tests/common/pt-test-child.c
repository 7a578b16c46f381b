/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-child.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

void
pt_test_child_setup(gpointer parent_pid)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* The test may have died between the fork and the prctl: then no
     * signal comes, and the child was adopted by another process. */
    if (parent_pid && getppid() != GPOINTER_TO_INT(parent_pid))
        _exit(127);
}

gboolean
pt_test_process_gone(GPid pid)
{
    g_autofree char *path = g_strdup_printf("/proc/%d/stat", (int)pid);
    g_autofree char *text = NULL;
    const char *paren;

    if (!g_file_get_contents(path, &text, NULL, NULL))
        return TRUE;
    paren = strrchr(text, ')');
    return paren && paren[1] == ' ' && (paren[2] == 'Z' || paren[2] == 'X');
}

pid_t
pt_test_child_fork(int report[2])
{
    pid_t child;

    g_assert_cmpint(pipe2(report, O_CLOEXEC), ==, 0);
    child = fork();
    g_assert_cmpint(child, >=, 0);
    return child;
}

void
pt_test_child_report(int fd, const void *pids, gsize pids_len, const void *dirs,
                     gsize dirs_len)
{
    if (write(fd, pids, pids_len) != (gssize)pids_len ||
        write(fd, dirs, dirs_len) != (gssize)dirs_len)
        _exit(3);
    for (;;)
        pause();
}

void
pt_test_child_read_report(int fd, void *pids, gsize pids_len, void *dirs, gsize dirs_len)
{
    g_assert_cmpint(read(fd, pids, pids_len), ==, (gssize)pids_len);
    g_assert_cmpint(read(fd, dirs, dirs_len), ==, (gssize)dirs_len);
    close(fd);
}
