/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The key table (common/pt-conf-keys.def) against itself and against what
 * documents it: the shipped example, polltuned.conf(5) and docs/CONFIG.md
 * each list every key with its default and whether a reload may change
 * it, and these tests fail when one drifts from the table.
 */
#include <string.h>

#include "pt-conf.h"
#include "pt-conf-keys.h"
#include "common/pt-conf-key-names.h"

static char *
source_file(const char *first, ...)
{
    const char *root = g_getenv("PT_SOURCE_ROOT");
    g_autoptr(GPtrArray) parts = g_ptr_array_new();
    g_autofree char *path = NULL;
    char *text = NULL;
    va_list ap;

    g_assert_nonnull(root);
    g_ptr_array_add(parts, (gpointer)root);
    va_start(ap, first);
    for (const char *p = first; p; p = va_arg(ap, const char *))
        g_ptr_array_add(parts, (gpointer)p);
    va_end(ap);
    g_ptr_array_add(parts, NULL);
    path = g_build_filenamev((char **)parts->pdata);
    if (!g_file_get_contents(path, &text, NULL, NULL))
        g_error("cannot read %s", path);
    return text;
}

/* @k's value as a file of that one key with @text gives it; NULL for an
 * empty or unset value alike. */
static char *
value_of(const PtConfKey *k, const char *text)
{
    g_autofree char *file = g_strdup_printf("[%s]\n%s = %s\n", k->group, k->key, text);
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) c = pt_conf_load_data(file, strlen(file), "doc", &err);
    char *v;

    if (!c)
        g_error("[%s] %s: the documented default '%s' does not load: %s", k->group, k->key,
                text, err->message);
    v = pt_conf_key_format(k, c);
    if (v && !*v)
        g_clear_pointer(&v, g_free);
    return v;
}

static char *
default_of(const PtConfKey *k)
{
    g_autoptr(PtConf) def = pt_conf_new_default();
    char *v = pt_conf_key_format(k, def);

    if (v && !*v)
        g_clear_pointer(&v, g_free);
    return v;
}

/* A documented default: its first word, or empty for a parenthesised
 * note such as "(none)" or "(empty: root only)". */
static void
check_default(const char *doc, const PtConfKey *k, const char *written)
{
    g_autofree char *word = g_strdup(written);
    g_autofree char *want = default_of(k);
    g_autofree char *got = NULL;

    g_strstrip(word);
    if (word[0] == '(' || word[0] == '*')
        word[0] = '\0';
    else
        word[strcspn(word, " \t")] = '\0';
    got = *word ? value_of(k, word) : NULL;
    if (g_strcmp0(got, want) != 0)
        g_error("%s: [%s] %s: the default is written '%s' (%s), the table's is %s", doc,
                k->group, k->key, written, got ? got : "empty", want ? want : "empty");
}

static void
check_restart(const char *doc, const PtConfKey *k, const char *reload)
{
    /* "restart", "restart (use ...)", "... is refused: restart"; "restarts"
     * in passing (mode's cell) is not the mark. */
    gboolean marked = g_regex_match_simple("(^|; |: )restart\\b(?!s)", reload, 0, 0);

    if (marked != k->restart)
        g_error("%s: [%s] %s: the reload column says '%s', the table says %s", doc, k->group,
                k->key, reload, k->restart ? "restart" : "reload");
}

static void
test_table(void)
{
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autoptr(PtConf) def = pt_conf_new_default();
    g_autofree char *out = pt_conf_format(def);
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) back = pt_conf_load_data(out, strlen(out), "formatted", &err);

    g_assert_cmpuint(pt_conf_n_keys, >=, 40);
    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        const PtConfKey *k = &pt_conf_keys[i];
        g_autofree char *line = g_strdup_printf("\n%s =", k->key);

        g_assert_true(g_strv_contains(pt_conf_groups, k->group));
        g_assert_true(g_hash_table_add(seen, g_strdup_printf("%s/%s", k->group, k->key)));
        g_assert_true(g_strv_contains(pt_conf_known_keys(k->group), k->key));
        g_assert_true(pt_conf_key_lookup(k->group, k->key) == k);
        g_assert_nonnull(k->doc);
        g_assert_cmpuint(strlen(k->doc), >, 0);
        g_assert_null(strchr(k->doc, '\n'));
        g_assert_cmpfloat(k->min, <=, k->max == 0 ? k->min : k->max);
        if (!strstr(out, line))
            g_error("--check-config lacks [%s] %s", k->group, k->key);
    }
    /* Every default loads back to itself, and explain's names are the
     * table's. */
    g_assert_no_error(err);
    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        g_autofree char *a = pt_conf_key_format(&pt_conf_keys[i], def);
        g_autofree char *b = pt_conf_key_format(&pt_conf_keys[i], back);

        g_assert_cmpstr(a, ==, b);
    }
    g_assert_cmpstr(pt_conf_key_name(PT_CONF_KEY_psi_some_limit), ==, "psi-limit");
    g_assert_cmpstr(pt_conf_key_name(PT_CONF_KEY_memory_ttl_ms), ==, "memory-ttl");
    g_assert_null(pt_conf_key_name(PT_CONF_KEY_MAX));
    g_assert_null(pt_conf_known_keys("nosuch"));
}

/* The example sets every key to the table's default, as it says; a key
 * without a default is commented out ("# KEY ="). */
static void
test_example(void)
{
    g_autofree char *text = source_file("docs", "polltuned.conf.example", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) example = pt_conf_load_data(text, strlen(text), "example", &err);
    g_autoptr(PtConf) def = pt_conf_new_default();

    g_assert_no_error(err);
    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        const PtConfKey *k = &pt_conf_keys[i];
        g_autofree char *re = g_strdup_printf("^(# )?%s =", k->key);
        g_autofree char *got = pt_conf_key_format(k, example);
        g_autofree char *want = pt_conf_key_format(k, def);

        if (!g_regex_match_simple(re, text, G_REGEX_MULTILINE, 0))
            g_error("polltuned.conf.example lacks [%s] %s", k->group, k->key);
        if (g_strcmp0(got, want) != 0)
            g_error("polltuned.conf.example: [%s] %s = %s, the table's default is %s",
                    k->group, k->key, got ? got : "(empty)", want ? want : "(empty)");
    }
}

/* The text of [@group] in @text: from @head to the next heading @next. */
static char *
section_of(const char *doc, const char *text, const char *head, const char *next)
{
    const char *at = strstr(text, head);
    const char *end;

    if (!at)
        g_error("%s: no section '%s'", doc, head);
    at += strlen(head);
    end = strstr(at, next);
    return g_strndup(at, end ? (gsize)(end - at) : strlen(at));
}

/* polltuned.conf(5): ".B KEY" under ".SS [GROUP]", then "Default X; ...;
 * RELOAD." up to the next paragraph macro. */
static void
test_manpage(void)
{
    g_autofree char *page = source_file("docs", "man", "polltuned.conf.5", NULL);

    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        const PtConfKey *k = &pt_conf_keys[i];
        g_autofree char *head = g_strdup_printf(".SS [%s]\n", k->group);
        g_autofree char *sect = section_of("polltuned.conf.5", page, head, ".SS ");
        g_autofree char *escaped = NULL;
        g_autofree char *entry = NULL;
        g_auto(GStrv) parts = NULL;
        g_auto(GStrv) clauses = NULL;
        const char *at, *end;
        GString *para = g_string_new(NULL);

        {
            g_auto(GStrv) dashes = g_strsplit(k->key, "-", -1);

            escaped = g_strjoinv("\\-", dashes);
        }
        entry = g_strdup_printf(".TP\n.B %s\n", escaped);
        if (!(at = strstr(sect, entry)))
            g_error("polltuned.conf.5: [%s] has no entry for %s", k->group, k->key);
        at += strlen(entry);
        end = strstr(at, "\n.TP") ? strstr(at, "\n.TP") : at + strlen(at);
        {
            g_autofree char *body = g_strndup(at, end - at);

            parts = g_strsplit(body, "\n", -1);
        }
        /* The first sentence, which runs to the first full stop at a line's end. */
        for (guint j = 0; parts[j]; j++) {
            g_string_append_printf(para, "%s%s", j ? " " : "", parts[j]);
            if (g_str_has_suffix(parts[j], "."))
                break;
        }
        if (!g_str_has_prefix(para->str, "Default "))
            g_error("polltuned.conf.5: %s's entry does not start with its default", k->key);
        clauses = g_strsplit(para->str + strlen("Default "), "; ", -1);
        check_default("polltuned.conf.5", k, clauses[0]);
        check_restart("polltuned.conf.5", k, clauses[g_strv_length(clauses) - 1]);
        g_string_free(para, TRUE);
    }
}

/* docs/CONFIG.md: a "| `KEY` | DEFAULT | VALID | RELOAD |" row under
 * "## [GROUP]". */
static void
test_config_md(void)
{
    g_autofree char *md = source_file("docs", "CONFIG.md", NULL);

    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        const PtConfKey *k = &pt_conf_keys[i];
        g_autofree char *head = g_strdup_printf("\n## [%s]\n", k->group);
        g_autofree char *sect = section_of("CONFIG.md", md, head, "\n## ");
        g_autofree char *start = g_strdup_printf("\n| `%s` |", k->key);
        g_autofree char *row = NULL;
        g_auto(GStrv) cells = NULL;
        const char *at = strstr(sect, start);
        g_autofree char *def = NULL;

        if (!at)
            g_error("CONFIG.md: [%s] has no row for %s", k->group, k->key);
        at++;
        row = g_strndup(at, strcspn(at, "\n"));
        cells = g_strsplit(row, " | ", -1);
        g_assert_cmpuint(g_strv_length(cells), ==, 4);
        def = g_strdup(cells[1]);
        /* `2GiB`, `0` (unlimited), *(none)* */
        if (def[0] == '`') {
            memmove(def, def + 1, strlen(def));
            def[strcspn(def, "`")] = '\0';
        }
        check_default("CONFIG.md", k, def);
        g_strchomp(cells[3]);
        if (g_str_has_suffix(cells[3], " |"))
            cells[3][strlen(cells[3]) - 2] = '\0';
        check_restart("CONFIG.md", k, cells[3]);
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/conf-keys/table", test_table);
    g_test_add_func("/conf-keys/example", test_example);
    g_test_add_func("/conf-keys/manpage", test_manpage);
    g_test_add_func("/conf-keys/config-md", test_config_md);
    return g_test_run();
}
