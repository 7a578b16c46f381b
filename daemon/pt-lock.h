/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-lock: one polltuned per state directory and per control socket.
 *
 * A lock file holds an flock(2) for as long as the daemon runs and the
 * daemon's pid as text, so a second instance can name the first.  The
 * kernel drops the lock when the process dies, so a stale file from a
 * crash never blocks a start.
 *
 * Error contract: functions returning gboolean or a descriptor set @error
 * on failure and return FALSE or -1.
 */
#pragma once

#include <glib.h>

/* Lock @path (created 0644 if missing) and write our pid into it.
 * Returns the descriptor to keep open, or -1 with @error naming @path and
 * the other instance's pid when it is held. */
int pt_lock_file_acquire(const char *path, const char *what, GError **error);
/* Write our pid into the held lock file @fd (again after a fork). */
gboolean pt_lock_file_write_pid(int fd, const char *path, GError **error);
/* Unlink @path and close @fd (no-op for -1). */
void pt_lock_file_release(int fd, const char *path);

/* TRUE when @path is missing or a socket; FALSE with @error naming what
 * it is otherwise (a file that is not a socket is never replaced). */
gboolean pt_socket_path_replaceable(const char *path, GError **error);
/* TRUE when @path may be bound: nothing is there, or a stale socket
 * (connect refused).  FALSE with @error when something listens on it (its
 * pid named from SO_PEERCRED), when it is anything but a socket (never
 * replaced), or when which of these cannot be told. */
gboolean pt_socket_check_unused(const char *path, GError **error);
