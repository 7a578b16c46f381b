/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: the control socket's request path, on whatever bytes a
 * local client might send (docs/CONTROL.md).
 *
 * The daemon frames input with qmp-stream in line mode (64 KiB lines,
 * depth 32), parses each line with qmp_message_parse and, for a command,
 * checks its arguments before touching any daemon state.  This target runs
 * the same framing and parsing, then the pure argument checks every command
 * shares: the string arguments, the history/export filter (times,
 * resolution), the mode name and the override duration.  The dispatcher
 * itself needs a live daemon, so the lookups it does afterwards are not
 * reached here.  Each request also gets the reply the daemon would build,
 * echoing its id.
 *
 * The first input byte picks the chunk size the stream is fed in, so
 * requests torn at every boundary are explored too.
 */
#include "pt-conf.h"
#include "pt-control-private.h"

#include "fuzz-stream.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const string_args[] = {
    "target", "iothread", "policy", "mode", "for", "reason", "resolution",
    "since", "until", "format", "path", "name",
};

static void
check_args(json_object *args)
{
    StoreFilter f;
    const char *s;
    gint64 ms;

    for (gsize i = 0; i < G_N_ELEMENTS(string_args); i++) {
        g_autoptr(GError) err = NULL;

        if (pt_arg_str(args, string_args[i], i == 0, &s, &err) == !!err)
            abort();
        if (!s)
            continue;
        if (g_str_equal(string_args[i], "mode"))
            (void)pt_mode_from_string(s);
        if (g_str_equal(string_args[i], "for")) {
            g_autoptr(GError) e = NULL;

            if (pt_parse_duration(s, &ms, &e) == !!e)
                abort();
        }
    }
    {
        g_autoptr(GError) err = NULL;

        if (pt_filter_from_args(args, &f, &err) == !!err)
            abort();
    }
}

static gboolean
on_request(const char *text, gsize len, gpointer user_data, GError **error)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(QmpMessage) m = qmp_message_parse(text, len, 32, &err);
    g_autofree char *reply = NULL;

    if (!m == !err)
        abort();
    if (!m) {
        g_autoptr(GError) e = g_error_new(PT_CONTROL_ERROR,
                                          PT_CONTROL_ERROR_INVALID_PARAMETER,
                                          "request: %s", err->message);

        reply = qmp_message_build_error(pt_control_error_class(e), e->message, NULL);
    } else if (m->kind != QMP_MESSAGE_COMMAND) {
        reply = qmp_message_build_error("GenericError", "expected execute", m->id);
    } else {
        if (!m->name)
            abort();
        check_args(m->body);
        reply = qmp_message_build_return(m->body, m->id);
    }
    if (!reply || !g_str_has_suffix(reply, "\n"))
        abort();
    return TRUE;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_stream_feed_lines(data, size, on_request);
    return 0;
}
