/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "probe-read.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

G_DEFINE_QUARK(probe-error-quark, probe_error)

#define PROBE_BUF_MIN 4096

void
probe_buf_clear(ProbeBuf *buf)
{
    if (!buf)
        return;
    g_free(buf->data);
    buf->data = NULL;
    buf->len = buf->cap = 0;
}

static ProbeErrorCode
errno_to_code(int err)
{
    switch (err) {
    case ENOENT:
    case ESRCH:
    case ENOTDIR:
        return PROBE_ERROR_MISSING;
    case EACCES:
    case EPERM:
        return PROBE_ERROR_ACCESS;
    default:
        return PROBE_ERROR_IO;
    }
}

static void
set_errno_error(GError **error, const char *path, const char *op, int err)
{
    g_set_error(error, PROBE_ERROR, errno_to_code(err), "%s: %s: %s",
                path, op, g_strerror(err));
}

/* Read @fd from offset 0 into @buf; pread regenerates seq_file and
 * debugfs attribute files, so a descriptor can be kept and read again. */
static gboolean
read_fd(int fd, const char *path, ProbeBuf *buf, gsize max_size,
        GError **error)
{
    if (buf->cap < PROBE_BUF_MIN) {
        buf->data = g_realloc(buf->data, PROBE_BUF_MIN);
        buf->cap = PROBE_BUF_MIN;
    }
    buf->len = 0;
    buf->data[0] = '\0';
    for (;;) {
        gsize want;
        ssize_t n;

        if (buf->len > max_size)
            break;
        if (buf->cap - buf->len < 2) {
            buf->cap *= 2;
            buf->data = g_realloc(buf->data, buf->cap);
        }
        want = buf->cap - buf->len - 1;
        n = pread(fd, buf->data + buf->len, want, (off_t)buf->len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            set_errno_error(error, path, "read", errno);
            return FALSE;
        }
        if (n == 0)
            break;
        buf->len += (gsize)n;
        /* Regular files, seq files and debugfs attributes fill the buffer
         * whenever more follows, so a short read is the end.  Asking again
         * would make a seq file generate its content a second time. */
        if ((gsize)n < want)
            break;
    }
    if (buf->len > max_size) {
        g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                    "%s: larger than %" G_GSIZE_FORMAT " bytes", path, max_size);
        return FALSE;
    }
    buf->data[buf->len] = '\0';
    /* A NUL inside the file ends the text: parsers see a short file. */
    buf->len = strlen(buf->data);
    return TRUE;
}

static int
open_ro(const char *path, GError **error)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0)
        set_errno_error(error, path, "open", errno);
    return fd;
}

gboolean
probe_file_read(const char *path, ProbeBuf *buf, gsize max_size, GError **error)
{
    int fd = open_ro(path, error);
    gboolean ok;

    if (fd < 0)
        return FALSE;
    ok = read_fd(fd, path, buf, max_size, error);
    close(fd);
    return ok;
}

void
probe_file_init(ProbeFile *f, char *path)
{
    f->path = path;
    f->fd = -1;
}

void
probe_file_clear(ProbeFile *f)
{
    if (!f)
        return;
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    g_clear_pointer(&f->path, g_free);
}

gboolean
probe_file_reread(ProbeFile *f, ProbeBuf *buf, gsize max_size, GError **error)
{
    if (f->fd < 0) {
        f->fd = open_ro(f->path, error);
        if (f->fd < 0)
            return FALSE;
    }
    if (read_fd(f->fd, f->path, buf, max_size, error))
        return TRUE;
    /* Gone (ESRCH from a dead task) or broken: open afresh next time. */
    close(f->fd);
    f->fd = -1;
    return FALSE;
}

gboolean
probe_parse_u64(const char **p, guint64 *out)
{
    const char *s = *p;
    guint64 v = 0;

    while (*s == ' ' || *s == '\t')
        s++;
    if (!g_ascii_isdigit(*s))
        return FALSE;
    for (; g_ascii_isdigit(*s); s++) {
        guint d = (guint)(*s - '0');

        if (v > (G_MAXUINT64 - d) / 10)
            return FALSE;
        v = v * 10 + d;
    }
    *out = v;
    *p = s;
    return TRUE;
}

gboolean
probe_parse_udouble(const char **p, double *out)
{
    const char *s = *p;
    guint64 whole;
    double v, scale = 0.1;

    if (!probe_parse_u64(&s, &whole))
        return FALSE;
    v = (double)whole;
    if (*s == '.') {
        s++;
        if (!g_ascii_isdigit(*s))
            return FALSE;
        for (; g_ascii_isdigit(*s); s++, scale /= 10)
            v += (*s - '0') * scale;
    }
    *out = v;
    *p = s;
    return TRUE;
}

void
probe_set_parse_error(GError **error, const char *path, const char *what)
{
    g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE, "%s: %s", path, what);
}
