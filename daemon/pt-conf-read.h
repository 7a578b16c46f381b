/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-read: reading the configuration file without ever blocking the
 * daemon on it.
 */
#pragma once

#include <glib.h>

/*
 * The largest configuration file read.  The largest legitimate one holds
 * the fixed groups (about 60 keys, under 8 KiB with the shipped example's
 * comments) and a rule per iothread of the largest host: 1024 VMs of 8
 * iothreads each is 8192 [rule] groups, at about 100 bytes each with a
 * long VM name and a comment line, some 800 KiB.  4 MiB leaves five times
 * that; a file at the limit (143k short rules) loads in about 0.7 s of
 * CPU, so a reload at the limit holds the main loop about that long, far
 * inside the watchdog's 30 s, and a stop not at all (pt_conf_load_until()).
 */
#define PT_CONF_MAX_BYTES (4u << 20)

/* @path's text, NUL-terminated: opened without blocking (a FIFO at @path
 * does not hold the caller), refused unless a regular file of at most
 * PT_CONF_MAX_BYTES; the error names @path and the cause.  @len may be
 * NULL. */
gboolean pt_conf_read_file(const char *path, char **data, gsize *len, GError **error);
