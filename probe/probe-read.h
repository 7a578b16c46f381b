/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * probe-read: the one narrow edge through which probe/ reads the host.
 *
 * Every reader in probe/ reads small text files below a root directory that
 * the caller passes (/proc, debugfs, tracefs, or a fixture tree in tests).
 * This module reads such a file in one go into a caller-owned buffer that
 * grows as needed, and parses the unsigned decimal numbers those files hold
 * with overflow checks.
 *
 * Errors are in PROBE_ERROR:
 *   PROBE_ERROR_MISSING   the file (or the thread/process it describes) does
 *                         not exist, or reading it says the task is gone;
 *   PROBE_ERROR_ACCESS    permission denied;
 *   PROBE_ERROR_IO        any other read failure;
 *   PROBE_ERROR_PARSE     the content is malformed: truncated, garbage,
 *                         a missing field, a number that does not fit.
 * Messages name the file and the cause.
 */
#pragma once

#include <glib.h>

#define PROBE_ERROR (probe_error_quark())
GQuark probe_error_quark(void);

typedef enum {
    PROBE_ERROR_MISSING,
    PROBE_ERROR_ACCESS,
    PROBE_ERROR_IO,
    PROBE_ERROR_PARSE,
} ProbeErrorCode;

/* A reusable read buffer; zero-initialise it, release with probe_buf_clear(). */
typedef struct {
    char *data;
    gsize len;      /* bytes read, excluding the NUL that always follows */
    gsize cap;
} ProbeBuf;

void probe_buf_clear(ProbeBuf *buf);

/*
 * Read @path whole into @buf (NUL-terminated; a NUL inside the file ends the
 * text).  Files larger than @max_size are an error, so that a runaway file
 * cannot make the daemon allocate without bound.
 */
gboolean probe_file_read(const char *path, ProbeBuf *buf, gsize max_size,
                         GError **error);

/*
 * A file read again every tick through a descriptor kept open: pread from
 * offset 0 makes /proc's seq files and debugfs attributes generate fresh
 * content, and saves the path walk of open().  A descriptor of a task that
 * has exited fails with ESRCH (PROBE_ERROR_MISSING) and never reads a
 * later task that reuses the tid.  After a failure the next read opens the
 * path again.
 */
typedef struct {
    char *path;
    int fd;                 /* -1: not open */
} ProbeFile;

/* Take @path; nothing is opened until the first read. */
void probe_file_init(ProbeFile *f, char *path);
void probe_file_clear(ProbeFile *f);
gboolean probe_file_reread(ProbeFile *f, ProbeBuf *buf, gsize max_size,
                           GError **error);

/*
 * Parse one unsigned decimal number at *@p, after optional spaces and tabs.
 * On success, store it in *@out, move *@p past it and return TRUE.  Return
 * FALSE without moving *@p when there is no digit or the value exceeds
 * G_MAXUINT64.
 */
gboolean probe_parse_u64(const char **p, guint64 *out);

/* Parse a non-negative decimal with an optional fraction ("49.67"). */
gboolean probe_parse_udouble(const char **p, double *out);

/* Set PROBE_ERROR_PARSE "<path>: <what>". */
void probe_set_parse_error(GError **error, const char *path, const char *what);
