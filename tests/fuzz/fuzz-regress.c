/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run a fuzz target over its seed corpus and kept reproducers, one GTest
 * case per file, so every build checks that no input ever found to crash a
 * parser crashes it again.  Under -Dfuzzing=true the same target is linked
 * with libFuzzer instead, and explores beyond these inputs.
 */
#include <glib.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
run_one(gconstpointer path)
{
    g_autofree char *data = NULL;
    gsize len;
    g_autoptr(GError) err = NULL;

    g_assert_true(g_file_get_contents(path, &data, &len, &err));
    g_assert_no_error(err);
    /* Reaching here without a crash or a sanitizer report is the test. */
    g_assert_cmpint(LLVMFuzzerTestOneInput((const uint8_t *)data, len), ==, 0);
}

int
main(int argc, char **argv)
{
    const char *dir;
    g_autoptr(GDir) d = NULL;
    g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GError) err = NULL;
    const char *name;

    g_test_init(&argc, &argv, NULL);
    dir = g_getenv("PT_FUZZ_CORPUS");
    g_assert_nonnull(dir);
    d = g_dir_open(dir, 0, &err);
    g_assert_no_error(err);
    while ((name = g_dir_read_name(d)))
        g_ptr_array_add(names, g_strdup(name));
    g_ptr_array_sort(names, (GCompareFunc)g_strcmp0);
    g_assert_cmpuint(names->len, >, 0);
    for (guint i = 0; i < names->len; i++) {
        const char *n = names->pdata[i];
        g_autofree char *base = g_path_get_basename(dir);
        g_autofree char *tpath = g_strdup_printf("/fuzz/%s/%s", base, n);

        g_test_add_data_func_full(tpath, g_build_filename(dir, n, NULL), run_one, g_free);
    }
    return g_test_run();
}
