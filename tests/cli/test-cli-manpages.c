/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * test-cli-manpages: the manual pages know everything the programs know.
 * Every option that polltunectl (and each of its commands) or polltuned
 * prints in --help, and every key the configuration parser accepts, must
 * be in the page that documents it, and each page has the sections an
 * operator looks for.  The options are read from the real --help output,
 * so an option added to a program fails here until its page says it.
 */
#include <string.h>

#include <glib.h>

#include "pt-conf.h"

static char *
page_read(const char *name)
{
    g_autofree char *path = g_build_filename(g_getenv("PT_SOURCE_ROOT"), "docs", "man",
                                             name, NULL);
    g_autoptr(GError) err = NULL;
    char *text = NULL;

    if (!g_file_get_contents(path, &text, NULL, &err))
        g_error("%s", err->message);
    return text;
}

static char *
help_of(const char *prog, const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    char *out = NULL;
    g_autofree char *errout = NULL;
    int status;

    g_ptr_array_add(argv, (gpointer)prog);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (gpointer)*a);
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out,
                      &errout, &status, &err))
        g_error("%s: %s", prog, err->message);
    if (!g_spawn_check_wait_status(status, &err))
        g_error("%s %s: %s; stderr: %s", prog, args[0], err->message, errout);
    return out;
}

/* Whether the page's source mentions @word, written as roff writes it
 * ("-" as "\-"), as a whole word: "\-\-since" does not count for
 * "\-\-sin", nor "\-\-config" for "\-c". */
static gboolean
page_mentions(const char *page, const char *word)
{
    g_autofree char *roff = NULL;
    g_autofree char *quoted = NULL;
    g_autofree char *pattern = NULL;
    g_auto(GStrv) parts = g_strsplit(word, "-", -1);

    roff = g_strjoinv("\\-", parts);
    quoted = g_regex_escape_string(roff, -1);
    pattern = g_strdup_printf("(?<![A-Za-z0-9])%s(?![A-Za-z0-9]|\\\\-[A-Za-z0-9])", quoted);
    return g_regex_match_simple(pattern, page, 0, 0);
}

/* The short and long options listed under "Application Options:" in a
 * GOption --help text (the generic -h/--help are not listed there). */
static GPtrArray *
help_options(const char *help)
{
    GPtrArray *opts = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GRegex) re = g_regex_new("^  (?:(-[A-Za-z0-9]), )?(--[a-z0-9-]+)", G_REGEX_MULTILINE,
                                       0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    const char *app = strstr(help, "\nApplication Options:\n");

    if (!app)
        return opts;
    g_regex_match(re, app, 0, &mi);
    for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
        g_autofree char *s = g_match_info_fetch(mi, 1);

        if (s && *s)
            g_ptr_array_add(opts, g_steal_pointer(&s));
        g_ptr_array_add(opts, g_match_info_fetch(mi, 2));
    }
    return opts;
}

static void
assert_options_in(const char *page_name, const char *page, const char *what, const char *help)
{
    g_autoptr(GPtrArray) opts = help_options(help);

    g_assert_cmpuint(opts->len, >, 0);
    for (guint i = 0; i < opts->len; i++)
        if (!page_mentions(page, opts->pdata[i]))
            g_error("%s: %s knows %s, which the page does not mention", page_name, what,
                    (const char *)opts->pdata[i]);
}

static void
assert_sections(const char *page_name, const char *page, const char *const *sections)
{
    for (const char *const *s = sections; *s; s++) {
        g_autofree char *line = g_strdup_printf("\n.SH %s\n", *s);

        if (!strstr(page, line))
            g_error("%s: no %s section", page_name, *s);
    }
}

static void
test_polltunectl(void)
{
    const char *ctl = g_getenv("PT_POLLTUNECTL");
    g_autofree char *page = page_read("polltunectl.1");
    g_autofree char *top = help_of(ctl, (const char *const[]){ "--help", NULL });
    const char *cmds = strstr(top, "\nCommands:\n");
    g_autoptr(GRegex) re = g_regex_new("^  ([a-z]+)(?: ([a-z]+)(?= |$))?", G_REGEX_MULTILINE,
                                       0, NULL);
    g_autoptr(GMatchInfo) mi = NULL;
    guint n = 0;

    assert_options_in("polltunectl.1", page, "polltunectl --help", top);
    g_assert_nonnull(cmds);
    g_regex_match(re, cmds, 0, &mi);
    for (; g_match_info_matches(mi); g_match_info_next(mi, NULL)) {
        g_autofree char *cmd = g_match_info_fetch(mi, 1);
        g_autofree char *sub = g_match_info_fetch(mi, 2);
        g_autofree char *help = NULL;
        g_autofree char *what = NULL;
        gboolean group = sub && *sub && g_str_equal(sub, "get") + g_str_equal(sub, "set") +
                         g_str_equal(sub, "clear");

        if (!page_mentions(page, cmd))
            g_error("polltunectl.1: no command %s", cmd);
        n++;
        /* A group's line names the subcommand; a plain command's second
         * word is a parameter written in capitals, which the pattern
         * skips. */
        help = help_of(ctl, group ? (const char *const[]){ cmd, sub, "--help", NULL } :
                                    (const char *const[]){ cmd, "--help", NULL });
        what = g_strdup_printf("polltunectl %s%s%s --help", cmd, group ? " " : "",
                               group ? sub : "");
        if (strstr(help, "\nApplication Options:\n"))
            assert_options_in("polltunectl.1", page, what, help);
    }
    /* status ... help: the list is not empty or misread. */
    g_assert_cmpuint(n, >=, 18);
    assert_sections("polltunectl.1", page, (const char *const[]){
        "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO", NULL });
    g_assert_true(page_mentions(page, "POLLTUNE_SOCKET"));
}

static void
test_polltuned(void)
{
    g_autofree char *daemon = g_build_filename(g_getenv("PT_BUILD_ROOT"), "daemon",
                                               "polltuned", NULL);
    g_autofree char *page = page_read("polltuned.8");
    g_autofree char *help = help_of(daemon, (const char *const[]){ "--help", NULL });

    assert_options_in("polltuned.8", page, "polltuned --help", help);
    assert_sections("polltuned.8", page, (const char *const[]){
        "OPTIONS", "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO", NULL });
}

static void
test_polltuned_conf(void)
{
    static const char *const groups[] = { "daemon", "targets", "retention", "policy", "rule",
                                          NULL };
    g_autofree char *page = page_read("polltuned.conf.5");

    for (const char *const *g = groups; *g; g++) {
        const char *const *keys = pt_conf_known_keys(*g);
        g_autofree char *head = g_strdup_printf("[%s", *g);

        g_assert_nonnull(keys);
        if (!strstr(page, head))
            g_error("polltuned.conf.5: no group [%s]", *g);
        for (const char *const *k = keys; *k; k++)
            if (!page_mentions(page, *k))
                g_error("polltuned.conf.5: the parser knows [%s] %s, which the page does "
                        "not mention", *g, *k);
    }
    assert_sections("polltuned.conf.5", page, (const char *const[]){
        "EXIT STATUS", "ENVIRONMENT", "FILES", "SEE ALSO", NULL });
    /* The page stands alone: an installed system has no source tree. */
    g_assert_null(strstr(page, "source tree"));
}

/* The shipped example says it sets every key to its default: each key the
 * parser knows outside [rule] is on a line of its own ("KEY =", or "# KEY
 * =" for one without a default).  libvirt-pid-dir was missing. */
static void
test_example_conf(void)
{
    static const char *const groups[] = { "daemon", "targets", "retention", "policy", NULL };
    g_autofree char *path = g_build_filename(g_getenv("PT_SOURCE_ROOT"), "docs",
                                             "polltuned.conf.example", NULL);
    g_autofree char *text = NULL;

    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    for (const char *const *g = groups; *g; g++) {
        const char *const *keys = pt_conf_known_keys(*g);

        g_assert_nonnull(keys);
        for (const char *const *k = keys; *k; k++) {
            g_autofree char *re = g_strdup_printf("^(# )?%s =", *k);

            if (!g_regex_match_simple(re, text, G_REGEX_MULTILINE, 0))
                g_error("polltuned.conf.example lacks [%s] %s", *g, *k);
        }
    }
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/manpages/polltunectl", test_polltunectl);
    g_test_add_func("/cli/manpages/polltuned", test_polltuned);
    g_test_add_func("/cli/manpages/polltuned-conf", test_polltuned_conf);
    g_test_add_func("/cli/manpages/example-conf", test_example_conf);
    return g_test_run();
}
