/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz target: polltuned's configuration parser, on whatever text an
 * operator (or a broken package script) might leave in polltuned.conf.
 *
 * Loading must either give a configuration or an error, never both or
 * neither; an error must name the file it came from, so the operator is
 * told where to look.  The first line of the input is also tried as a
 * duration and as a size, the two unit parsers every section uses.
 */
#include "pt-conf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) conf = NULL;
    g_autofree char *first = NULL;
    const char *nl;
    gint64 v;

    conf = pt_conf_load_data((const char *)data, size, "fuzz.conf", &err);
    if (!conf == !err)
        abort();
    if (err && !g_str_has_prefix(err->message, "fuzz.conf"))
        abort();
    if (conf && (conf->interval_ms < 100 || conf->database[0] == '\0' ||
                 conf->control_socket[0] != '/'))
        abort();

    nl = memchr(data, '\n', size);
    first = g_strndup((const char *)data, nl ? (gsize)(nl - (const char *)data) : size);
    for (int i = 0; i < 2; i++) {
        g_autoptr(GError) e = NULL;
        gboolean ok = i ? pt_parse_size(first, &v, &e) : pt_parse_duration(first, &v, &e);

        if (ok == !!e || (ok && v < 0))
            abort();
    }
    return 0;
}
