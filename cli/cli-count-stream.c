/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-count-stream: byte and line counts, and a throttled progress callback.
 */
#include <string.h>

#include "cli-count-stream.h"

struct _CliCountStream {
    GFilterOutputStream parent;
    guint64 bytes, lines;
    CliCountFunc func;
    gpointer user_data;
    gint64 interval_us;
    gint64 last_report_us;
};

G_DEFINE_TYPE(CliCountStream, cli_count_stream, G_TYPE_FILTER_OUTPUT_STREAM)

static gssize
count_write(GOutputStream *stream, const void *buffer, gsize count, GCancellable *cancellable,
            GError **error)
{
    CliCountStream *s = CLI_COUNT_STREAM(stream);
    GOutputStream *base = g_filter_output_stream_get_base_stream(G_FILTER_OUTPUT_STREAM(s));
    gssize n = g_output_stream_write(base, buffer, count, cancellable, error);

    if (n <= 0)
        return n;
    s->bytes += (guint64)n;
    for (const char *p = buffer, *end = p + n; (p = memchr(p, '\n', (gsize)(end - p))); p++)
        s->lines++;
    if (s->func) {
        gint64 now = g_get_monotonic_time();

        if (now - s->last_report_us >= s->interval_us) {
            s->last_report_us = now;
            s->func(s->bytes, s->lines, s->user_data);
        }
    }
    return n;
}

static gboolean
count_flush(GOutputStream *stream, GCancellable *cancellable, GError **error)
{
    GOutputStream *base = g_filter_output_stream_get_base_stream(G_FILTER_OUTPUT_STREAM(stream));

    return g_output_stream_flush(base, cancellable, error);
}

static void
cli_count_stream_class_init(CliCountStreamClass *klass)
{
    GOutputStreamClass *out = G_OUTPUT_STREAM_CLASS(klass);

    out->write_fn = count_write;
    out->flush = count_flush;
}

static void
cli_count_stream_init(CliCountStream *s)
{
}

GOutputStream *
cli_count_stream_new(GOutputStream *base, CliCountFunc func, gpointer user_data,
                     guint interval_ms)
{
    CliCountStream *s = g_object_new(CLI_TYPE_COUNT_STREAM, "base-stream", base,
                                     "close-base-stream", FALSE, NULL);

    s->func = func;
    s->user_data = user_data;
    s->interval_us = (gint64)interval_ms * 1000;
    s->last_report_us = g_get_monotonic_time();
    return G_OUTPUT_STREAM(s);
}

guint64
cli_count_stream_get_bytes(CliCountStream *s)
{
    return s->bytes;
}

guint64
cli_count_stream_get_lines(CliCountStream *s)
{
    return s->lines;
}
