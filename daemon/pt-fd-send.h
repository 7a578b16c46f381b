/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-fd-send: what is left of a reply, written to a non-blocking socket.
 *
 * The control socket and the metrics endpoint each keep a reply and how
 * much of it is out, and write the rest when the socket takes it; this is
 * that write, so that both treat an interrupted call, a full socket, a
 * short write and a broken peer alike.
 */
#pragma once

#include <glib.h>

typedef enum {
    PT_FD_SEND_DONE,            /* all of it is out */
    PT_FD_SEND_AGAIN,           /* the socket is full: wait for G_IO_OUT */
    PT_FD_SEND_FAILED,          /* the peer is gone or the socket broke: close */
} PtFdSendResult;

/*
 * Send @buf[*@pos, @len) on the non-blocking socket @fd, advancing *@pos
 * past what went out.  Never raises SIGPIPE (a client that hung up is
 * PT_FD_SEND_FAILED) and retries a call a signal interrupted.
 */
PtFdSendResult pt_fd_send_pending(int fd, const char *buf, gsize len, gsize *pos);
