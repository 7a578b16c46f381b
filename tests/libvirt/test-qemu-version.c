/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The release of a running QEMU from its binary's --version, against
 * scripted binaries: the real shapes of QEMU's answer, and a binary that
 * hangs, floods, prints garbage, fails or keeps its output open; and the
 * release read from a binary's file where it cannot run.
 */
#include <gio/gio.h>
#include <glib/gstdio.h>

#include "pt-qemu-version.h"

static char *dir;

/* An executable script printing or doing @body. */
static char *
script(const char *name, const char *body)
{
    g_autofree char *text = g_strdup_printf("#!/bin/sh\n%s\n", body);
    char *path = g_build_filename(dir, name, NULL);

    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_assert_cmpint(g_chmod(path, 0755), ==, 0);
    return path;
}

static guint32
version_of(const char *name, const char *body, guint timeout_ms, GError **error)
{
    g_autofree char *path = script(name, body);

    return pt_qemu_binary_version(path, timeout_ms, error);
}

static void
test_real_shapes(void)
{
    /* Debian 12's qemu-system-x86 8.2 backport, a 10.x build from source,
     * and a two-part release. */
    static const struct {
        const char *out;
        guint32 want;
    } rows[] = {
        { "QEMU emulator version 8.2.1 (Debian 1:8.2.1+ds-1~bpo12+1)\n"
          "Copyright (c) 2003-2023 Fabrice Bellard and the QEMU Project developers", 8002001 },
        { "QEMU emulator version 10.1.50 (v10.1.0-1234-gdeadbeef)\n"
          "Copyright (c) 2003-2025 Fabrice Bellard and the QEMU Project developers", 10001050 },
        { "QEMU emulator version 7.2\n", 7002000 },
        /* A wrapper's banner before QEMU's line: the first line that
         * parses wins, "version" alone does not. */
        { "wrapper version unknown\nQEMU emulator version 9.0.2\n", 9000002 },
    };

    for (guint i = 0; i < G_N_ELEMENTS(rows); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *body = g_strdup_printf("printf '%%s\\n' '%s'", rows[i].out);
        g_autofree char *quoted = g_strescape(rows[i].out, NULL);

        g_test_message("%s", quoted);
        g_assert_cmpuint(version_of("qemu", body, 5000, &err), ==, rows[i].want);
        g_assert_no_error(err);
    }
}

static void
test_bad(const char *body, GQuark domain, int code, const char *needle, guint timeout_ms)
{
    g_autoptr(GError) err = NULL;
    gint64 t0 = g_get_monotonic_time();

    g_assert_cmpuint(version_of("bad", body, timeout_ms, &err), ==, 0);
    g_assert_error(err, domain, code);
    g_assert_nonnull(strstr(err->message, needle));
    g_test_message("%s", err->message);
    /* Killed at the deadline, not waited for: a hang of 60 s returns
     * within the deadline and a generous margin for a loaded host. */
    g_assert_cmpint(g_get_monotonic_time() - t0, <, (timeout_ms + 10000) * (gint64)1000);
}

static void
test_garbage(void)
{
    test_bad("printf 'version\\nversion x.y\\nversion 0.0\\n\\377\\376'", G_IO_ERROR,
             G_IO_ERROR_INVALID_DATA, "no \"version X.Y\" line", 5000);
}

static void
test_no_line(void)
{
    test_bad("true", G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "no \"version X.Y\" line", 5000);
}

static void
test_nul(void)
{
    /* A NUL before a good line: not text, not trusted. */
    test_bad("printf 'x\\000QEMU emulator version 8.2.0\\n'", G_IO_ERROR,
             G_IO_ERROR_INVALID_DATA, "no \"version X.Y\" line", 5000);
}

static void
test_fails(void)
{
    test_bad("echo 'QEMU emulator version 8.2.0'; exit 3", G_IO_ERROR, G_IO_ERROR_FAILED,
             "exited with status 3", 5000);
}

static void
test_hangs(void)
{
    test_bad("exec sleep 60", G_IO_ERROR, G_IO_ERROR_TIMED_OUT, "no answer within 300 ms", 300);
}

static void
test_holds_output(void)
{
    /* Prints its line, then keeps stdout open: still a hang. */
    test_bad("echo 'QEMU emulator version 8.2.0'; exec sleep 60", G_IO_ERROR,
             G_IO_ERROR_TIMED_OUT, "no answer within 300 ms", 300);
}

static void
test_floods(void)
{
    test_bad("exec yes 'QEMU emulator version 8.2.0'", G_IO_ERROR,
             G_IO_ERROR_MESSAGE_TOO_LARGE, "more than 65536 bytes", 5000);
}

/* A binary that does not run here (a container's QEMU, whose libraries
 * the host lacks: the loader exits 127) still says its release in its
 * bytes; a file without the string, or none at all, says why. */
static void
test_file(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = script("qemu", "# QEMU emulator version 10.0.13 "
                                   "(Debian 1:10.0.13+ds-0+deb13u1)\nexit 127");
    g_autofree char *none = g_build_filename(dir, "no-such-binary", NULL);

    g_assert_cmpuint(pt_qemu_binary_version(path, 5000, &err), ==, 0);
    g_clear_error(&err);
    g_assert_cmpuint(pt_qemu_file_version(path, &err), ==, 10000013);
    g_assert_no_error(err);

    g_free(path);
    path = script("bad", "# QEMU emulator version unknown\nexit 127");
    g_assert_cmpuint(pt_qemu_file_version(path, &err), ==, 0);
    g_assert_error(err, G_IO_ERROR, G_IO_ERROR_INVALID_DATA);
    g_clear_error(&err);
    g_assert_cmpuint(pt_qemu_file_version(none, &err), ==, 0);
    g_assert_error(err, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_nonnull(strstr(err->message, "no-such-binary"));
}

static void
test_missing(void)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *path = g_build_filename(dir, "no-such-binary", NULL);

    g_assert_cmpuint(pt_qemu_binary_version(path, 1000, &err), ==, 0);
    g_assert_error(err, G_IO_ERROR, G_IO_ERROR_FAILED);
    g_assert_nonnull(strstr(err->message, "no-such-binary --version"));
}

int
main(int argc, char **argv)
{
    int rc;

    g_test_init(&argc, &argv, NULL);
    dir = g_dir_make_tmp("pt-qemu-version-XXXXXX", NULL);
    g_assert_nonnull(dir);
    g_test_add_func("/libvirt/qemu-version/real-shapes", test_real_shapes);
    g_test_add_func("/libvirt/qemu-version/garbage", test_garbage);
    g_test_add_func("/libvirt/qemu-version/no-line", test_no_line);
    g_test_add_func("/libvirt/qemu-version/nul", test_nul);
    g_test_add_func("/libvirt/qemu-version/fails", test_fails);
    g_test_add_func("/libvirt/qemu-version/hangs", test_hangs);
    g_test_add_func("/libvirt/qemu-version/holds-output", test_holds_output);
    g_test_add_func("/libvirt/qemu-version/floods", test_floods);
    g_test_add_func("/libvirt/qemu-version/missing", test_missing);
    g_test_add_func("/libvirt/qemu-version/file", test_file);
    rc = g_test_run();
    for (guint i = 0; i < 2; i++) {
        g_autofree char *p = g_build_filename(dir, i ? "bad" : "qemu", NULL);

        g_unlink(p);
    }
    g_rmdir(dir);
    g_free(dir);
    return rc;
}
