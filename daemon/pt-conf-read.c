/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading the configuration file without ever blocking the daemon on it.
 *
 * The file is opened with O_NONBLOCK and must be a regular file: a FIFO
 * put at its path would otherwise hold open() until a writer came, and a
 * device or a directory is no configuration either.  Its size is bounded
 * (PT_CONF_MAX_BYTES).
 */
#include "pt-conf-read.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *
pt_file_type_name(mode_t mode)
{
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISSOCK(mode))
        return "a socket";
    return "of another kind";
}

/* FALSE with @path and errno's message; closes @fd when one is open. */
static gboolean
pt_conf_read_fail(const char *path, int fd, GError **error)
{
    int e = errno;

    g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e), "%s: %s", path,
                g_strerror(e));
    if (fd >= 0)
        close(fd);
    return FALSE;
}

gboolean
pt_conf_read_file(const char *path, char **data, gsize *len, GError **error)
{
    g_autofree char *buf = NULL;
    struct stat st;
    gsize got = 0;
    int fd;

    /* O_NONBLOCK: open() of a FIFO returns at once instead of waiting for
     * a writer; on a regular file the flag changes nothing. */
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || fstat(fd, &st) < 0)
        return pt_conf_read_fail(path, fd, error);
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
                    "%s: is %s, not a regular file: refused", path,
                    pt_file_type_name(st.st_mode));
        close(fd);
        return FALSE;
    }
    if (st.st_size > PT_CONF_MAX_BYTES) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: is %" G_GINT64_FORMAT " bytes, above the limit of %u bytes",
                    path, (gint64)st.st_size, (guint)PT_CONF_MAX_BYTES);
        close(fd);
        return FALSE;
    }
    /* One byte more than the limit, to see a file that grew since fstat. */
    buf = g_malloc(PT_CONF_MAX_BYTES + 2);
    while (got <= PT_CONF_MAX_BYTES) {
        ssize_t n = read(fd, buf + got, PT_CONF_MAX_BYTES + 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return pt_conf_read_fail(path, fd, error);
        if (n == 0)
            break;
        got += n;
    }
    close(fd);
    if (got > PT_CONF_MAX_BYTES) {
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED,
                    "%s: above the limit of %u bytes", path, (guint)PT_CONF_MAX_BYTES);
        return FALSE;
    }
    buf[got] = '\0';
    *data = g_realloc(g_steal_pointer(&buf), got + 1);
    if (len)
        *len = got;
    return TRUE;
}
