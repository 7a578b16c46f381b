/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-child.h"

#include <signal.h>
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
