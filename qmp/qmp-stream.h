/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-stream: split a byte stream into JSON object messages.
 *
 * QMP (and polltune's control protocol, which is shaped like it) sends one
 * JSON object after another, normally one per line.  The splitter does not
 * rely on newlines: it tracks strings, escapes and bracket depth, so a
 * message may arrive in any number of pieces and several may arrive in one.
 *
 * Between messages only whitespace is allowed; anything else, such as a bare
 * number or an array at the top level, is a protocol error.  Two limits bound
 * memory whatever the peer sends: the size of one message and its nesting
 * depth.  Once an error is returned the stream is poisoned and every later
 * feed fails with the same error: a peer that broke framing cannot be
 * resynchronised reliably, so the caller must drop the connection.
 *
 * The splitter only finds message boundaries.  Whether the bytes inside are
 * valid JSON is decided by the parser (qmp-json.h) afterwards.
 */
#pragma once

#include <glib.h>

/*
 * The largest reply of polltune's control protocol, as sent: one line of
 * compact JSON.  The daemon answers a larger one with TooLarge (the
 * connection stays), and polltunectl reads up to this much, so a reply
 * never reaches a client that could not read it.  The largest is status
 * on the largest host tuned: about 2.9 KB per iothread (measured: an idle
 * iothread under the adaptive policy, with its decision, metrics and
 * explanation) and at most 6 KiB with all of explain's 6 candidates, long
 * names and reasons.  That host has 4096 iothreads (PT_IOTHREADS_MAX):
 * 2048 small VMs with two each on a 2-socket host of 768 hardware
 * threads, or a few large VMs with one iothread per vCPU queue
 * (iothread-vq-mapping).  4096 x 6 KiB is 24 MiB, which 32 MiB holds with
 * room.  8192 iothreads (two such hosts' worth) fit at their usual size:
 * bench/scale/status-bench measured 23.9 MB for 2 QEMUs x 4096 under the
 * adaptive policy, 2,950 bytes an entry at most, and `polltunectl status`
 * and `--json status` both succeeded (docs/BENCHMARKS.md, "Status of
 * 8,192 iothreads"); they are refused, with TooLarge naming this limit,
 * only when their entries average above 4 KiB (32 MiB / 8192).  What
 * `polltunectl --json` prints is indented, so larger than what was sent.
 */
#define QMP_CONTROL_MAX_REPLY (32 * 1024 * 1024)

typedef struct QmpStream QmpStream;

/*
 * Called once per complete message.  @msg is NUL-terminated and valid only
 * during the call.  Return FALSE to stop feeding, with @error set when
 * something went wrong; qmp_stream_feed() then returns FALSE with that error
 * (or with none, when the consumer stopped without one).
 */
typedef gboolean (*QmpStreamMessageFunc)(const char *msg, gsize len,
                                         gpointer user_data, GError **error);

QmpStream *qmp_stream_new(gsize max_message_size, guint max_depth,
                          QmpStreamMessageFunc func, gpointer user_data);
void qmp_stream_free(QmpStream *s);

/*
 * Line mode, for polltune's control protocol, whose requests are JSON lines:
 * a newline also ends a message, whatever its brackets, and a line that does
 * not start with '{' is passed to @func whole instead of poisoning the
 * stream.  The parser then rejects what is not one JSON object, the server
 * answers that error, and the next line starts afresh.  QMP itself never
 * uses this mode: QEMU may split a message across lines.  Only the size
 * limit still poisons the stream (the rest of an overlong line cannot be
 * told apart from the next request without buffering it).
 */
void qmp_stream_set_line_mode(QmpStream *s, gboolean line_mode);

/* Feed @len bytes.  FALSE with @error on a framing error or a limit. */
gboolean qmp_stream_feed(QmpStream *s, const char *data, gsize len,
                         GError **error);

/* Bytes of an incomplete message currently buffered. */
gsize qmp_stream_pending(const QmpStream *s);

G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpStream, qmp_stream_free)
