/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-stream.h"
#include "qmp-error.h"

G_DEFINE_QUARK(qmp-error-quark, qmp_error)

#define QMP_STREAM_KEEP_BYTES (64 * 1024)

struct QmpStream {
    gsize max_size;
    guint max_depth;
    QmpStreamMessageFunc func;
    gpointer user_data;

    GByteArray *buf;        /* the message being collected */
    guint depth;            /* open brackets, outside strings */
    gboolean in_string;
    gboolean escape;        /* previous byte in a string was a backslash */
    gboolean line_mode;     /* a newline ends a message too */
    gboolean bad_line;      /* line mode: this line did not start with '{' */
    GError *poison;         /* sticky error after a framing failure */
};

QmpStream *
qmp_stream_new(gsize max_message_size, guint max_depth,
               QmpStreamMessageFunc func, gpointer user_data)
{
    QmpStream *s = g_new0(QmpStream, 1);

    s->max_size = max_message_size;
    s->max_depth = max_depth;
    s->func = func;
    s->user_data = user_data;
    s->buf = g_byte_array_new();
    return s;
}

void
qmp_stream_free(QmpStream *s)
{
    if (!s)
        return;
    g_byte_array_unref(s->buf);
    g_clear_error(&s->poison);
    g_free(s);
}

void
qmp_stream_set_line_mode(QmpStream *s, gboolean line_mode)
{
    s->line_mode = line_mode;
}

gsize
qmp_stream_pending(const QmpStream *s)
{
    return s->buf->len;
}

static gboolean
qmp_stream_fail(QmpStream *s, GError **error, QmpErrorCode code,
                const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean
qmp_stream_fail(QmpStream *s, GError **error, QmpErrorCode code,
                const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    s->poison = g_error_new_valist(QMP_ERROR, code, fmt, ap);
    va_end(ap);
    /* Don't keep up to max_size bytes of a peer we are about to drop. */
    g_byte_array_set_size(s->buf, 0);
    g_propagate_error(error, g_error_copy(s->poison));
    return FALSE;
}

/* Scan @data[0..len) for the end of the current message.  Returns the number
 * of bytes that belong to it, and sets *done when the message closed. */
static gsize
qmp_stream_scan(QmpStream *s, const char *data, gsize len, gboolean *done,
                GError **error)
{
    for (gsize i = 0; i < len; i++) {
        char c = data[i];

        /* JSON strings cannot hold a raw newline, so in line mode one always
         * ends the request, complete or not. */
        if (s->line_mode && c == '\n') {
            s->depth = 0;
            s->in_string = s->escape = s->bad_line = FALSE;
            *done = TRUE;
            return i + 1;
        }
        if (s->bad_line)
            continue;
        if (s->in_string) {
            if (s->escape)
                s->escape = FALSE;
            else if (c == '\\')
                s->escape = TRUE;
            else if (c == '"')
                s->in_string = FALSE;
            continue;
        }
        switch (c) {
        case '"':
            s->in_string = TRUE;
            break;
        case '{':
        case '[':
            /* In line mode the parser enforces the depth, and the line's end
             * resynchronises; here only the count must not overflow. */
            if (++s->depth > s->max_depth && !s->line_mode) {
                qmp_stream_fail(s, error, QMP_ERROR_TOO_DEEP,
                                "message nests deeper than %u levels",
                                s->max_depth);
                return 0;
            }
            break;
        case '}':
        case ']':
            /* depth >= 1 here: we only scan inside a message */
            if (--s->depth == 0) {
                *done = TRUE;
                return i + 1;
            }
            break;
        default:
            break;
        }
    }
    return len;
}

/* After a large message, give its memory back rather than keep the peak. */
static void
qmp_stream_reset_buffer(QmpStream *s)
{
    if (s->buf->len > QMP_STREAM_KEEP_BYTES) {
        g_byte_array_unref(s->buf);
        s->buf = g_byte_array_new();
    } else {
        g_byte_array_set_size(s->buf, 0);
    }
}

gboolean
qmp_stream_feed(QmpStream *s, const char *data, gsize len, GError **error)
{
    if (s->poison) {
        g_propagate_error(error, g_error_copy(s->poison));
        return FALSE;
    }

    while (len > 0) {
        gboolean done = FALSE;
        gsize used;

        if (s->buf->len == 0) {
            /* Between messages: skip whitespace, then require an object. */
            char c = *data;

            if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
                data++;
                len--;
                continue;
            }
            if (c != '{' && s->line_mode)
                s->bad_line = TRUE;
            else if (c != '{')
                return qmp_stream_fail(s, error, QMP_ERROR_PROTOCOL,
                                       "expected a JSON object, got byte 0x%02x",
                                       (guchar)c);
        }

        used = qmp_stream_scan(s, data, len, &done, error);
        if (s->poison)
            return FALSE;
        if (s->buf->len + used > s->max_size)
            return qmp_stream_fail(s, error, QMP_ERROR_TOO_BIG,
                                   "message exceeds the limit of %" G_GSIZE_FORMAT
                                   " bytes", s->max_size);
        g_byte_array_append(s->buf, (const guint8 *)data, used);
        data += used;
        len -= used;

        if (done) {
            GError *local = NULL;
            gboolean ok;

            g_byte_array_append(s->buf, (const guint8 *)"", 1);
            ok = s->func((const char *)s->buf->data, s->buf->len - 1,
                         s->user_data, &local);
            qmp_stream_reset_buffer(s);
            if (!ok) {
                /* A consumer may stop without an error (it wants no more
                 * input for now); pass on only what it reported. */
                if (local)
                    g_propagate_error(error, local);
                return FALSE;
            }
        }
    }
    return TRUE;
}
