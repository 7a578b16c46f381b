/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the metrics endpoint's request head, on whatever bytes a
 * TCP client sends (daemon/pt-metrics-http.c).  The server hands
 * pt_http_head_parse() what it read up to the blank line, at most 8 KiB;
 * here the whole input is that head.  Every answer must be one of the
 * statuses the server knows how to send, and HEAD only with a 200.
 */
#include "pt-metrics.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gboolean openmetrics, head_only;
    guint status;

    if (size > 8192)
        return 0;
    status = pt_http_head_parse((const char *)data, size, &openmetrics, &head_only);
    if (status != 200 && status != 400 && status != 404 && status != 405 && status != 413)
        abort();
    if (head_only && status != 200)
        abort();
    return 0;
}
