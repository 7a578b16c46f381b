/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers shared by the probe tests: where the fixture trees are, and a
 * writable copy of a fixture tree that a test may change between ticks.
 */
#pragma once

#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>

/* tests/probe/fixtures/<name> in the source tree. */
static inline const char *
probe_test_fixture(const char *name)
{
    return g_test_get_filename(G_TEST_DIST, "probe", "fixtures", name, NULL);
}

/*
 * Write @text to @dir/@rel in place (same inode, so that a descriptor the
 * reader keeps open sees the change, as with /proc), creating directories.
 */
static inline void
probe_test_write(const char *dir, const char *rel, const char *text)
{
    g_autofree char *path = g_build_filename(dir, rel, NULL);
    g_autofree char *parent = g_path_get_dirname(path);
    FILE *f;

    g_assert_cmpint(g_mkdir_with_parents(parent, 0755), ==, 0);
    f = fopen(path, "w");
    g_assert_nonnull(f);
    g_assert_cmpint(fputs(text, f), >=, 0);
    g_assert_cmpint(fclose(f), ==, 0);
}

/* Remove @path and everything below it. */
static inline void
probe_test_rmtree(const char *path)
{
    g_autoptr(GDir) dir = g_dir_open(path, 0, NULL);
    const char *name;

    if (dir)
        while ((name = g_dir_read_name(dir))) {
            g_autofree char *child = g_build_filename(path, name, NULL);

            if (g_file_test(child, G_FILE_TEST_IS_DIR) &&
                !g_file_test(child, G_FILE_TEST_IS_SYMLINK))
                probe_test_rmtree(child);
            else
                g_assert_cmpint(g_unlink(child), ==, 0);
        }
    g_rmdir(path);
}

/* Write one fake thread @tid of @pid below the proc tree @root. */
static inline void
probe_test_thread(const char *root, int pid, int tid, const char *comm,
                  guint64 utime, guint64 stime, guint64 vcsw, guint64 nvcsw,
                  guint64 run_ns, guint64 wait_ns)
{
    g_autofree char *base = g_strdup_printf("%d/task/%d", pid, tid);
    g_autofree char *p_comm = g_strdup_printf("%s/comm", base);
    g_autofree char *p_stat = g_strdup_printf("%s/stat", base);
    g_autofree char *p_status = g_strdup_printf("%s/status", base);
    g_autofree char *p_sched = g_strdup_printf("%s/schedstat", base);
    g_autofree char *comm_nl = g_strdup_printf("%s\n", comm);
    g_autofree char *stat = g_strdup_printf(
        "%d (%s) S 1 %d %d 0 -1 4194368 0 0 0 0 %" G_GUINT64_FORMAT " %"
        G_GUINT64_FORMAT " 0 0 20 0 1 0 1 1 1\n", tid, comm, pid, pid, utime,
        stime);
    g_autofree char *status = g_strdup_printf(
        "Name:\t%s\nvoluntary_ctxt_switches:\t%" G_GUINT64_FORMAT
        "\nnonvoluntary_ctxt_switches:\t%" G_GUINT64_FORMAT "\n", comm, vcsw,
        nvcsw);
    g_autofree char *sched = g_strdup_printf(
        "%" G_GUINT64_FORMAT " %" G_GUINT64_FORMAT " 1\n", run_ns, wait_ns);

    probe_test_write(root, p_comm, comm_nl);
    probe_test_write(root, p_stat, stat);
    probe_test_write(root, p_status, status);
    probe_test_write(root, p_sched, sched);
}
