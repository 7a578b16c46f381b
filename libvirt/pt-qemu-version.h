/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The release of a running QEMU, from its own binary: `/proc/PID/exe
 * --version`, under a deadline and with a bounded read, since the binary
 * is a peer like any other (a wrapper script can hang or print anything).
 */
#pragma once

#include <glib.h>

/*
 * Run @exe --version and parse its "version X.Y[.Z]" line into libvirt's
 * encoding (major * 1000000 + minor * 1000 + micro).  0 with @error set
 * when it does not finish within @timeout_ms (it is killed), fails, or
 * prints no such line in its first PT_QEMU_VERSION_MAX_OUT bytes.
 */
guint32 pt_qemu_binary_version(const char *exe, guint timeout_ms, GError **error);

/* QEMU 10.2 prints two lines, about 110 bytes; a wrapper's banner may add
 * a few more.  Nothing legitimate comes near 64 KiB. */
#define PT_QEMU_VERSION_MAX_OUT 65536
