/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-count-stream: an output stream that counts what passes through it.
 *
 * export writes through one of these so it can show progress on a terminal
 * and report the bytes and lines written, without holding any of the data:
 * every write goes straight on to the wrapped stream.
 */
#pragma once

#include <gio/gio.h>

G_BEGIN_DECLS

#define CLI_TYPE_COUNT_STREAM (cli_count_stream_get_type())
G_DECLARE_FINAL_TYPE(CliCountStream, cli_count_stream, CLI, COUNT_STREAM, GFilterOutputStream)

/* Called at most every @interval_ms with the totals so far; NULL for none. */
typedef void (*CliCountFunc)(guint64 bytes, guint64 lines, gpointer user_data);

GOutputStream *cli_count_stream_new(GOutputStream *base, CliCountFunc func,
                                    gpointer user_data, guint interval_ms);
guint64 cli_count_stream_get_bytes(CliCountStream *s);
guint64 cli_count_stream_get_lines(CliCountStream *s);

G_END_DECLS
