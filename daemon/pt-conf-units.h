/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-units: the configuration's units: durations, sizes and listen
 * addresses, read and written back.
 */
#pragma once

#include <glib.h>

/* "1s", "250ms", "48h", "30d", "2w"; a bare number is milliseconds. */
gboolean pt_parse_duration(const char *text, gint64 *ms, GError **error);
/* "2GiB", "512MiB", "100M", "4096"; a bare number is bytes. */
gboolean pt_parse_size(const char *text, gint64 *bytes, GError **error);
/* @ms in the largest unit that holds it exactly: "48h", "250ms", "3d". */
char *pt_format_duration(gint64 ms);
/* @bytes in the largest binary unit that holds it exactly: "2GiB". */
char *pt_format_size(gint64 bytes);
/* metrics-listen: "IPV4:PORT" or "[IPV6]:PORT", PORT in 1..65535.  Sets
 * @host (the address without brackets) and @port. */
gboolean pt_parse_listen(const char *text, char **host, guint16 *port, GError **error);
