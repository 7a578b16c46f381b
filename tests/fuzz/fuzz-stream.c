/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "fuzz-stream.h"

static void
fuzz_stream_run(const uint8_t *data, size_t size, gboolean line_mode,
                QmpStreamMessageFunc on_message)
{
    g_autoptr(QmpStream) s = NULL;
    gsize chunk;

    if (size < 1)
        return;
    chunk = data[0] ? data[0] : size;
    data++;
    size--;
    s = qmp_stream_new(64 * 1024, 32, on_message, NULL);
    qmp_stream_set_line_mode(s, line_mode);
    for (gsize off = 0; off < size; off += chunk)
        if (!qmp_stream_feed(s, (const char *)data + off, MIN(chunk, size - off), NULL))
            break;
}

void
fuzz_stream_feed(const uint8_t *data, size_t size, QmpStreamMessageFunc on_message)
{
    fuzz_stream_run(data, size, FALSE, on_message);
}

void
fuzz_stream_feed_lines(const uint8_t *data, size_t size, QmpStreamMessageFunc on_message)
{
    fuzz_stream_run(data, size, TRUE, on_message);
}
