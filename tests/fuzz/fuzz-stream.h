/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Feed fuzz input through a QmpStream as a peer's bytes would arrive.
 *
 * The first input byte picks the chunk size (0: all at once), so messages
 * torn at every boundary are explored too; the rest is the stream.  Limits
 * are the control server's: 64 KiB per message, nesting depth 32.  The QMP
 * client allows far larger replies (qmp-client.h), which the same code
 * splits and parses; the fuzzer keeps inputs small to stay fast.
 */
#pragma once

#include "qmp-stream.h"

#include <stdint.h>

void fuzz_stream_feed(const uint8_t *data, size_t size, QmpStreamMessageFunc on_message);
/* The same in line mode, as the control server frames its requests. */
void fuzz_stream_feed_lines(const uint8_t *data, size_t size, QmpStreamMessageFunc on_message);
