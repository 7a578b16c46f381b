/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the QMP stream splitter, the message parser and every typed
 * reply decoder, on whatever bytes a peer might send.
 *
 * The first input byte picks the chunk size the stream is fed in, so the
 * fuzzer also explores messages torn at every boundary.
 */
#include "qmp-decode.h"
#include "qmp-json.h"

#include "fuzz-stream.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const QmpDecodeFunc decoders[] = {
    qmp_decode_iothreads, qmp_decode_blockstats, qmp_decode_block, qmp_decode_stats,
    qmp_decode_stats_schemas, qmp_decode_status, qmp_decode_name,
    qmp_decode_version, qmp_decode_qom_int, qmp_decode_qom_link,
    qmp_decode_empty, qmp_decode_qom_vq_mapping,
};

static const GDestroyNotify destroyers[] = {
    (GDestroyNotify)g_ptr_array_unref, (GDestroyNotify)g_ptr_array_unref,
    (GDestroyNotify)g_ptr_array_unref, (GDestroyNotify)qmp_stats_free, (GDestroyNotify)g_ptr_array_unref,
    (GDestroyNotify)qmp_status_free, g_free, (GDestroyNotify)qmp_version_free,
    g_free, g_free, NULL, (GDestroyNotify)g_strfreev,
};
G_STATIC_ASSERT(G_N_ELEMENTS(decoders) == G_N_ELEMENTS(destroyers));

static gboolean
on_message(const char *text, gsize len, gpointer user_data, GError **error)
{
    g_autoptr(QmpMessage) m = qmp_message_parse(text, len, 32, NULL);

    if (!m || m->kind != QMP_MESSAGE_RETURN)
        return TRUE;
    for (gsize i = 0; i < G_N_ELEMENTS(decoders); i++) {
        g_autoptr(GError) err = NULL;
        gpointer r = decoders[i](m->body, &err);

        /* Exactly one of a result and an error. */
        if (!r == !err)
            abort();
        if (r && destroyers[i])
            destroyers[i](r);
    }
    return TRUE;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream_feed(data, size, on_message);
    return 0;
}
