/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-test-fixture.h"
#include "pt-test-child.h"
#include "qmp-json.h"     /* g_autoptr(json_object) */

#include <string.h>

/* The key a line sets, or NULL for a comment or a blank line. */
static char *
conf_line_key(const char *line)
{
    const char *eq = strchr(line, '=');
    const char *s = line + strspn(line, " \t");

    if (!eq || *s == '#' || *s == ';')
        return NULL;
    return g_strstrip(g_strndup(line, eq - line));
}

/* A group is the array of its lines, the first its "[name]". */
static GPtrArray *
conf_group_get(GPtrArray *groups, const char *name)
{
    g_autofree char *header = g_strdup_printf("[%s]", name);
    GPtrArray *g;

    for (guint i = 0; i < groups->len; i++) {
        g = groups->pdata[i];
        if (g_str_equal(g->pdata[0], header))
            return g;
    }
    g = g_ptr_array_new_with_free_func(g_free);
    g_ptr_array_add(g, g_steal_pointer(&header));
    g_ptr_array_add(groups, g);
    return g;
}

/* Add @text's lines to @groups; a key already in its group is replaced
 * where it stands. */
static void
conf_groups_add(GPtrArray *groups, const char *text)
{
    g_auto(GStrv) lines = g_strsplit(text ? text : "", "\n", -1);
    GPtrArray *g = conf_group_get(groups, "daemon");

    for (guint i = 0; lines[i]; i++) {
        const char *s = lines[i] + strspn(lines[i], " \t");
        g_autofree char *key = conf_line_key(lines[i]);
        gboolean replaced = FALSE;

        if (*s == '[' && strchr(s, ']')) {
            g_autofree char *name = g_strndup(s + 1, strchr(s, ']') - s - 1);

            g = conf_group_get(groups, g_strstrip(name));
            continue;
        }
        if (!*s)
            continue;
        for (guint j = 1; key && j < g->len && !replaced; j++) {
            g_autofree char *have = conf_line_key(g->pdata[j]);

            if (g_strcmp0(have, key) == 0) {
                g_free(g->pdata[j]);
                g->pdata[j] = g_strdup(lines[i]);
                replaced = TRUE;
            }
        }
        if (!replaced)
            g_ptr_array_add(g, g_strdup(lines[i]));
    }
}

char *
pt_test_conf_merge(const char *base, const char *own)
{
    g_autoptr(GPtrArray) groups = g_ptr_array_new_with_free_func(
        (GDestroyNotify)g_ptr_array_unref);
    GString *out = g_string_new(NULL);

    conf_groups_add(groups, base);
    conf_groups_add(groups, own);
    for (guint i = 0; i < groups->len; i++) {
        GPtrArray *g = groups->pdata[i];

        /* [daemon] comes first and without its header:
         * pt_test_daemon_conf_text() opens the file with it. */
        for (guint j = i == 0 ? 1 : 0; j < g->len; j++)
            g_string_append_printf(out, "%s\n", (char *)g->pdata[j]);
    }
    return g_string_free(out, FALSE);
}

/* polltuned answers status, within PT_TEST_START_S; else the test fails
 * with its log. */
static void
pt_test_daemon_wait_up(PtTestDaemon *d)
{
    gint64 deadline = g_get_monotonic_time() + PT_TEST_START_S * G_USEC_PER_SEC;

    for (;;) {
        g_autoptr(json_object) reply = pt_test_daemon_call(d, "status", NULL, NULL);
        g_autofree char *log = NULL;

        if (reply && pt_json_path(reply, "return"))
            return;
        if (g_get_monotonic_time() > deadline) {
            g_file_get_contents(d->log_path, &log, NULL, NULL);
            g_error("polltuned does not answer status after %d s:\n%s", PT_TEST_START_S,
                    log ? log : "");
        }
        g_usleep(20000);
    }
}

PtTestDaemon *
pt_test_daemon_up_args(const char *const *args, const char *base, const char *own)
{
    g_autoptr(GError) err = NULL;
    g_autofree char *conf = pt_test_conf_merge(base, own);
    PtTestDaemon *d = pt_test_daemon_start_args(conf, args, &err);

    if (!d)
        g_error("polltuned on\n%s\ndid not start: %s", conf, err->message);
    d->stop_at_free = TRUE;
    pt_test_daemon_wait_up(d);
    return d;
}

PtTestDaemon *
pt_test_daemon_up(const char *base, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *own = NULL;

    va_start(ap, fmt);
    own = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    return pt_test_daemon_up_args(NULL, base, own);
}

void
pt_test_daemon_reconf(PtTestDaemon *d, const char *base, const char *fmt, ...)
{
    va_list ap;
    g_autofree char *own = NULL;
    g_autofree char *merged = NULL;
    g_autofree char *text = NULL;

    va_start(ap, fmt);
    own = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    merged = pt_test_conf_merge(base, own);
    text = pt_test_daemon_conf_text(d, merged);
    g_assert_true(g_file_set_contents(d->conf_path, text, -1, NULL));
}

void
pt_test_daemon_up_again(PtTestDaemon *d)
{
    g_autoptr(GError) err = NULL;

    if (!pt_test_daemon_restart(d, &err))
        g_error("polltuned did not start again: %s", err->message);
    pt_test_daemon_wait_up(d);
}

void
pt_test_daemon_calls(PtTestDaemon *d, const PtTestCall *calls, gsize n_calls)
{
    for (gsize i = 0; i < n_calls; i++) {
        const PtTestCall *c = &calls[i];
        g_autoptr(GError) err = NULL;
        g_autoptr(json_object) reply = pt_test_daemon_call(d, c->command, c->args, &err);
        const char *text = reply ? json_object_to_json_string(reply) : "(none)";
        const char *args = c->args ? c->args : "{}";
        const char *desc;

        g_assert_no_error(err);
        g_test_message("%s %s -> %s", c->command, args, text);
        if (g_str_equal(c->expect, "ok")) {
            json_object *ret = pt_json_path(reply, "return");

            if (!ret || (c->needle && !pt_json_path(ret, c->needle)))
                g_error("row %" G_GSIZE_FORMAT ": %s %s: not ok with %s: %s", i, c->command,
                        args, c->needle ? c->needle : "a return", text);
            continue;
        }
        if (g_strcmp0(pt_json_path_str(reply, "error/class"), c->expect) != 0)
            g_error("row %" G_GSIZE_FORMAT ": %s %s: not refused with %s: %s", i, c->command,
                    args, c->expect, text);
        desc = pt_json_path_str(reply, "error/desc");
        if (c->needle && !(desc && strstr(desc, c->needle)))
            g_error("row %" G_GSIZE_FORMAT ": %s %s: '%s' lacks '%s'", i, c->command, args,
                    desc ? desc : "", c->needle);
    }
}
