/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <gio/gio.h>
#include <glib/gstdio.h>

int
pt_lock_file_acquire(const char *path, const char *what, GError **error)
{
    char buf[32];   /* a pid as written below */
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);

    if (fd < 0) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "%s: cannot open lock file: %s", path, g_strerror(errno));
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        int saved = errno;
        ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

        close(fd);
        if (saved == EWOULDBLOCK) {
            buf[n > 0 ? n : 0] = 0;
            g_strchomp(buf);
            g_set_error(error, G_IO_ERROR, G_IO_ERROR_BUSY,
                        "%s is in use by another polltuned (pid %s, lock %s)",
                        what, *buf ? buf : "unknown", path);
        } else {
            g_set_error(error, G_IO_ERROR, g_io_error_from_errno(saved),
                        "%s: cannot lock: %s", path, g_strerror(saved));
        }
        return -1;
    }
    if (!pt_lock_file_write_pid(fd, path, error)) {
        close(fd);
        return -1;
    }
    return fd;
}

gboolean
pt_lock_file_write_pid(int fd, const char *path, GError **error)
{
    char buf[32];   /* "%d\n" of a pid: at most 8 characters (pid_max 2^22) */
    int len = g_snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

    if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, len, 0) != len) {
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(errno),
                    "%s: cannot write pid: %s", path, g_strerror(errno));
        return FALSE;
    }
    return TRUE;
}

void
pt_lock_file_release(int fd, const char *path)
{
    if (fd < 0)
        return;
    /* Unlink while still holding the lock, so no one locks the old inode. */
    g_unlink(path);
    close(fd);
}

gboolean
pt_socket_path_replaceable(const char *path, GError **error)
{
    struct stat st;
    int e;

    /* Only a socket is ever replaced: "--socket ./history.db" used to
     * take the failed connect for a stale socket and delete the database. */
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT)
            return TRUE;
        e = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "%s: control socket path: %s", path, g_strerror(e));
        return FALSE;
    }
    if (!S_ISSOCK(st.st_mode)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_EXISTS,
                    "%s: control socket path names an existing %s, not a socket; "
                    "it is left alone: choose another path", path,
                    S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "directory" :
                    S_ISLNK(st.st_mode) ? "symbolic link" : "non-socket file");
        return FALSE;
    }
    return TRUE;
}

gboolean
pt_socket_check_unused(const char *path, GError **error)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct ucred cred = { 0 };
    socklen_t clen = sizeof(cred);
    int fd, e;

    if (strlen(path) >= sizeof(sun.sun_path))
        return TRUE;    /* the caller reports the length */
    if (!pt_socket_path_replaceable(path, error))
        return FALSE;
    strcpy(sun.sun_path, path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        e = errno;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "%s: cannot tell whether the control socket is in use: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        e = errno;
        close(fd);
        /* Refused: nothing listens, the socket a dead daemon left (stale).
         * Gone meanwhile: nothing to replace.  Anything else, a full
         * backlog (EAGAIN) included, may be a live daemon's. */
        if (e == ECONNREFUSED || e == ENOENT)
            return TRUE;
        g_set_error(error, G_IO_ERROR, g_io_error_from_errno(e),
                    "%s: cannot tell whether the control socket is in use: %s", path,
                    g_strerror(e));
        return FALSE;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) < 0)
        cred.pid = 0;
    close(fd);
    if (cred.pid > 0)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
                    "%s: control socket is in use by another process (pid %d)",
                    path, (int)cred.pid);
    else
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_ADDRESS_IN_USE,
                    "%s: control socket is in use by another process", path);
    return FALSE;
}
