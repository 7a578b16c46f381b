/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-child.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

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

PtTestListener *
pt_test_listener_new(int fd, int backlog)
{
    PtTestListener *l = g_new0(PtTestListener, 1);
    int ready[2];
    int parent = getpid();
    char ok = 0;

    g_assert_cmpint(pipe2(ready, O_CLOEXEC), ==, 0);
    l->pid = fork();
    g_assert_cmpint(l->pid, >=, 0);
    if (l->pid == 0) {
        /* Only what is safe after a fork of a process with threads. */
        pt_test_child_setup(GINT_TO_POINTER(parent));
        ok = listen(fd, backlog) == 0;
        if (write(ready[1], &ok, 1) != 1)
            _exit(1);
        /* Holding no copy of the test's descriptors: a connection the test
         * closes must close. */
        close_range(0, ~0U, 0);
        for (;;)
            pause();
    }
    close(ready[1]);
    g_assert_cmpint(read(ready[0], &ok, 1), ==, 1);
    g_assert_true(ok);
    close(ready[0]);
    return l;
}

void
pt_test_listener_free(PtTestListener *l)
{
    if (!l)
        return;
    kill(l->pid, SIGKILL);
    waitpid(l->pid, NULL, 0);
    g_free(l);
}
