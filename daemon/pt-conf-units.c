/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration's units: durations, sizes and listen addresses, read
 * and written back (pt-conf.h).
 */
#include "pt-conf-units.h"
#include "store.h"

#include <errno.h>
#include <gio/gio.h>

static gboolean
pt_parse_scaled(const char *text, const char *what, const char *const *units,
                const gint64 *scale, gint64 *out, GError **error)
{
    const char *end = NULL;
    guint64 n;

    if (!text || !g_ascii_isdigit(*text)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "'%s' is not a %s", text ? text : "", what);
        return FALSE;
    }
    errno = 0;
    n = g_ascii_strtoull(text, (char **)&end, 10);
    while (*end == ' ')
        end++;
    for (int i = 0; units[i]; i++) {
        if (g_ascii_strcasecmp(end, units[i]) == 0) {
            if (errno || n > (guint64)(G_MAXINT64 / scale[i])) {
                g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                            "'%s' is too large a %s", text, what);
                return FALSE;
            }
            *out = (gint64)n * scale[i];
            return TRUE;
        }
    }
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                "'%s' has an unknown unit for a %s", text, what);
    return FALSE;
}

/* The store's grammar, shared with the CLI and the time bounds. */
gboolean
pt_parse_duration(const char *text, gint64 *ms, GError **error)
{
    return store_duration_parse(text, ms, error);
}

gboolean
pt_parse_size(const char *text, gint64 *bytes, GError **error)
{
    static const char *const units[] = { "", "B", "K", "KiB", "M", "MiB", "G", "GiB",
                                         "T", "TiB", NULL };
    static const gint64 scale[] = { 1, 1, 1 << 10, 1 << 10, 1 << 20, 1 << 20,
                                    1 << 30, 1 << 30, G_GINT64_CONSTANT(1) << 40,
                                    G_GINT64_CONSTANT(1) << 40 };

    return pt_parse_scaled(text, "size", units, scale, bytes, error);
}

/* The largest of @units (ascending) that divides @v exactly. */
static char *
pt_format_scaled(gint64 v, const char *const *units, const gint64 *scale, gsize n)
{
    for (gsize i = n; i-- > 1;)
        if (v != 0 && v % scale[i] == 0)
            return g_strdup_printf("%" G_GINT64_FORMAT "%s", v / scale[i], units[i]);
    return g_strdup_printf("%" G_GINT64_FORMAT "%s", v, units[0]);
}

char *
pt_format_duration(gint64 ms)
{
    static const char *const units[] = { "ms", "s", "m", "h", "d", "w" };
    static const gint64 scale[] = { 1, 1000, 60000, 3600000, 86400000,
                                    7 * G_GINT64_CONSTANT(86400000) };

    return pt_format_scaled(ms, units, scale, G_N_ELEMENTS(units));
}

char *
pt_format_size(gint64 bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    static const gint64 scale[] = { 1, 1 << 10, 1 << 20, 1 << 30, G_GINT64_CONSTANT(1) << 40 };

    return pt_format_scaled(bytes, units, scale, G_N_ELEMENTS(units));
}

gboolean
pt_parse_listen(const char *text, char **host, guint16 *port, GError **error)
{
    const char *colon = text ? strrchr(text, ':') : NULL;
    g_autofree char *h = NULL;
    g_autoptr(GInetAddress) addr = NULL;
    guint64 n;

    if (!colon || colon == text) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "'%s' is not HOST:PORT", text ? text : "");
        return FALSE;
    }
    /* Port 0 would bind a port chosen at random, which no scraper knows. */
    if (!g_ascii_string_to_unsigned(colon + 1, 10, 1, 65535, &n, NULL)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "'%s': the port '%s' is not a whole number in 1..65535", text, colon + 1);
        return FALSE;
    }
    h = g_strndup(text, colon - text);
    if (h[0] == '[' && colon[-1] == ']') {
        char *inner = g_strndup(h + 1, strlen(h) - 2);

        g_free(h);
        h = inner;
    }
    addr = g_inet_address_new_from_string(h);
    if (!addr) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_ARGUMENT,
                    "'%s': '%s' is not an IP address (IPv6 goes in brackets: [::1]:9563)",
                    text, h);
        return FALSE;
    }
    *host = g_steal_pointer(&h);
    *port = (guint16)n;
    return TRUE;
}
