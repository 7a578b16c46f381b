/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-qemu-version.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gio/gio.h>

/* Parse "... version X.Y[.Z] ..." from @out. */
static guint32
parse_version(const char *out)
{
    const char *p = out;
    guint major = 0, minor = 0, micro = 0;

    while ((p = strstr(p, "version "))) {
        p += strlen("version ");
        micro = 0;
        if (sscanf(p, "%u.%u.%u", &major, &minor, &micro) >= 2 &&
            major > 0 && major < 1000 && minor < 1000 && micro < 1000)
            return major * 1000000 + minor * 1000 + micro;
    }
    return 0;
}

guint32
pt_qemu_binary_version(const char *exe, guint timeout_ms, GError **error)
{
    const char *argv[] = { exe, "--version", NULL };
    g_autoptr(GError) err = NULL;
    g_autofree char *buf = g_malloc(PT_QEMU_VERSION_MAX_OUT + 1);
    gsize len = 0;
    GPid child = 0;
    int fd = -1, status = 0;
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    gboolean timed_out = FALSE, eof = FALSE;
    guint32 version = 0;

    if (!g_spawn_async_with_pipes(NULL, (char **)argv, NULL,
                                  G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL,
                                  NULL, NULL, &child, NULL, &fd, NULL, &err)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s --version: %s", exe,
                    err->message);
        return 0;
    }
    while (!eof && len < PT_QEMU_VERSION_MAX_OUT) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        ssize_t n;

        if (left <= 0) {
            timed_out = TRUE;
            break;
        }
        if (poll(&pfd, 1, (int)MIN(left, G_MAXINT)) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (!pfd.revents)
            continue;
        n = read(fd, buf + len, PT_QEMU_VERSION_MAX_OUT - len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (n <= 0)
            eof = TRUE;
        else
            len += n;
    }
    buf[len] = '\0';
    close(fd);
    /* Whatever it is still doing, we are done with it: a binary that
     * holds its output open, or floods it, is not waited for. */
    if (!eof)
        kill(child, SIGKILL);
    while (waitpid(child, &status, 0) < 0 && errno == EINTR)
        ;
    g_spawn_close_pid(child);

    if (timed_out) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_TIMED_OUT,
                    "%s --version: no answer within %u ms; killed", exe, timeout_ms);
        return 0;
    }
    if (!eof) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                    "%s --version: more than %u bytes of output; killed", exe,
                    PT_QEMU_VERSION_MAX_OUT);
        return 0;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s --version: %s %d", exe,
                    WIFEXITED(status) ? "exited with status" : "killed by signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
        return 0;
    }
    if (memchr(buf, '\0', len) || !(version = parse_version(buf)))
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s --version: no \"version X.Y\" line in its output", exe);
    return version;
}

#define VERSION_MARK "QEMU emulator version "

guint32
pt_qemu_file_version(const char *path, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(GMappedFile) map = g_mapped_file_new(path, FALSE, &err);
    const char *data, *hit;
    gsize len;
    char line[64];
    guint32 version;

    if (!map) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_FAILED, "%s: %s", path, err->message);
        return 0;
    }
    data = g_mapped_file_get_contents(map);
    len = g_mapped_file_get_length(map);
    if (len > PT_QEMU_VERSION_MAX_FILE) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_MESSAGE_TOO_LARGE,
                    "%s: %" G_GSIZE_FORMAT " bytes, more than a QEMU binary's %u", path, len,
                    (guint)PT_QEMU_VERSION_MAX_FILE);
        return 0;
    }
    hit = data ? memmem(data, len, VERSION_MARK, strlen(VERSION_MARK)) : NULL;
    if (hit) {
        gsize n = MIN(sizeof(line) - 1, len - (gsize)(hit - data));

        /* "QEMU emulator version 10.0.13 (Debian ...)": parse from "version". */
        memcpy(line, hit, n);
        line[n] = '\0';
        version = parse_version(line);
        if (version)
            return version;
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                "%s: no \"" VERSION_MARK "X.Y\" string in the file", path);
    return 0;
}
