/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The release of a running QEMU, from its own binary: `/proc/PID/exe
 * --version`, under a deadline and with a bounded read, since the binary
 * is a peer like any other (a wrapper script can hang or print anything);
 * or, where the binary cannot run here, from the version string in it.
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

/*
 * The version a QEMU binary would print, read from the file itself: the
 * "QEMU emulator version X.Y.Z" string QEMU keeps for --version.  For a
 * binary that does not run here: a QEMU in a container (its libraries are
 * the container's, /proc/PID/exe finds the host's) or chrooted.  0 with
 * @error set when the file cannot be read, is larger than
 * PT_QEMU_VERSION_MAX_FILE, or holds no such string.
 */
guint32 pt_qemu_file_version(const char *path, GError **error);

/* Debian 13's qemu-system-x86_64 (QEMU 10.0) is 29 MB, a build with debug
 * information about 300 MB; no QEMU comes near 1 GiB. */
#define PT_QEMU_VERSION_MAX_FILE (1024 * 1024 * 1024)

/* QEMU 10.2 prints two lines, about 110 bytes; a wrapper's banner may add
 * a few more.  Nothing legitimate comes near 64 KiB. */
#define PT_QEMU_VERSION_MAX_OUT 65536
