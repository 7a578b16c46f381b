/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-escape: a peer's text made safe for a log line or a terminal (header
 * only, GLib only: the daemon's log and polltunectl's output use the one
 * function).
 *
 * A QMP error description, a VM's name, a Prometheus server's error are
 * written by whoever runs the peer.  Raw, a newline in one forges a log
 * line of its own ("restore applied ..."), and ESC or BEL in one reach
 * the operator's terminal (a window title, a cleared screen).  So every
 * control character is written out: newline, carriage return and tab as
 * \n, \r, \t, the other C0 controls and DEL as \xNN, the C1 controls
 * (U+0080..U+009F, which a UTF-8 terminal obeys as well) as \u00NN, and
 * bytes that are not UTF-8 as \xNN.  Everything else, backslashes and
 * non-ASCII text included, stays as it was, so an ordinary message reads
 * the same.
 */
#pragma once

#include <string.h>
#include <glib.h>

static inline gboolean
pt_escape_is_control(gunichar c)
{
    return c < 0x20 || c == 0x7f || (c >= 0x80 && c <= 0x9f);
}

/* Whether @s holds anything pt_escape_text() would rewrite. */
static inline gboolean
pt_escape_needed(const char *s)
{
    const char *end = s ? s + strlen(s) : NULL;

    for (const char *p = s; p && *p;) {
        gunichar c = g_utf8_get_char_validated(p, end - p);

        if (c == (gunichar)-1 || c == (gunichar)-2 || pt_escape_is_control(c))
            return TRUE;
        p = g_utf8_next_char(p);
    }
    return FALSE;
}

/* @s with its control characters written out, as a new string ("" for
 * NULL). */
static inline char *
pt_escape_text(const char *s)
{
    const char *end;
    GString *out;

    if (!pt_escape_needed(s))
        return g_strdup(s ? s : "");
    end = s + strlen(s);
    out = g_string_sized_new(end - s + 16);
    for (const char *p = s; *p;) {
        gunichar c = g_utf8_get_char_validated(p, end - p);

        if (c == (gunichar)-1 || c == (gunichar)-2) {
            g_string_append_printf(out, "\\x%02x", (guchar)*p);
            p++;
            continue;
        }
        if (c == '\n')
            g_string_append(out, "\\n");
        else if (c == '\r')
            g_string_append(out, "\\r");
        else if (c == '\t')
            g_string_append(out, "\\t");
        else if (c < 0x80 && pt_escape_is_control(c))
            g_string_append_printf(out, "\\x%02x", (guint)c);
        else if (pt_escape_is_control(c))
            g_string_append_printf(out, "\\u%04x", (guint)c);
        else
            g_string_append_len(out, p, g_utf8_next_char(p) - p);
        p = g_utf8_next_char(p);
    }
    return g_string_free(out, FALSE);
}
