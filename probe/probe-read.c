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

gboolean
probe_file_read(const char *path, ProbeBuf *buf, gsize max_size, GError **error)
{
    int fd;

    if (buf->cap < PROBE_BUF_MIN) {
        buf->data = g_realloc(buf->data, PROBE_BUF_MIN);
        buf->cap = PROBE_BUF_MIN;
    }
    buf->len = 0;
    buf->data[0] = '\0';

    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        set_errno_error(error, path, "open", errno);
        return FALSE;
    }
    for (;;) {
        ssize_t n;

        if (buf->len > max_size) {
            close(fd);
            g_set_error(error, PROBE_ERROR, PROBE_ERROR_PARSE,
                        "%s: larger than %" G_GSIZE_FORMAT " bytes",
                        path, max_size);
            return FALSE;
        }
        if (buf->cap - buf->len < 2) {
            buf->cap *= 2;
            buf->data = g_realloc(buf->data, buf->cap);
        }
        n = read(fd, buf->data + buf->len, buf->cap - buf->len - 1);
        if (n < 0) {
            int err = errno;

            if (err == EINTR)
                continue;
            close(fd);
            set_errno_error(error, path, "read", err);
            return FALSE;
        }
        if (n == 0)
            break;
        buf->len += (gsize)n;
    }
    close(fd);
    buf->data[buf->len] = '\0';
    /* A NUL inside the file ends the text: parsers see a short file. */
    buf->len = strlen(buf->data);
    return TRUE;
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

int
probe_table_lookup(const char *const *table, int n, const char *s)
{
    if (!s)
        return -1;
    for (int i = 0; i < n; i++)
        if (table[i] && strcmp(table[i], s) == 0)
            return i;
    return -1;
}
