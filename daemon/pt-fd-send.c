/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-fd-send: the non-blocking write of a pending reply.  See the header.
 */
#include "pt-fd-send.h"

#include <errno.h>
#include <sys/socket.h>

PtFdSendResult
pt_fd_send_pending(int fd, const char *buf, gsize len, gsize *pos)
{
    while (*pos < len) {
        ssize_t n = send(fd, buf + *pos, len - *pos, MSG_NOSIGNAL | MSG_DONTWAIT);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return PT_FD_SEND_AGAIN;
        if (n < 0)
            return PT_FD_SEND_FAILED;
        *pos += (gsize)n;
    }
    return PT_FD_SEND_DONE;
}
