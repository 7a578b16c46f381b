/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt-metadata: the text of polltune's <policy> metadata element.
 */
#include "pt-libvirt-metadata.h"

#include <string.h>

/*
 * The longest policy text is "static:" and three 20-digit numbers, about
 * 70 characters; 4 KiB leaves room for white space and comments an
 * orchestrator may add, and stops a megabyte of text from being logged.
 */
#define METADATA_MAX 4096

typedef struct {
    guint depth;
    gboolean seen_root;
    GString *text;
} MetaParse;

/* "polltune:policy" and "policy" are both the element; libvirt keeps the
 * prefix the element was set with. */
static gboolean
is_policy_element(const char *name)
{
    const char *colon = strrchr(name, ':');

    return g_str_equal(colon ? colon + 1 : name, "policy");
}

static void
meta_start(GMarkupParseContext *pc, const char *element, const char **names,
           const char **values, gpointer user_data, GError **error)
{
    MetaParse *p = user_data;

    if (p->depth++ > 0) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                    "<%s> inside the policy element: it holds text only", element);
        return;
    }
    if (!is_policy_element(element)) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_UNKNOWN_ELEMENT,
                    "<%s> is not a <policy> element", element);
        return;
    }
    p->seen_root = TRUE;
}

static void
meta_end(GMarkupParseContext *pc, const char *element, gpointer user_data, GError **error)
{
    ((MetaParse *)user_data)->depth--;
}

static void
meta_text(GMarkupParseContext *pc, const char *text, gsize len, gpointer user_data,
          GError **error)
{
    MetaParse *p = user_data;

    if (p->depth == 0) {
        for (gsize i = 0; i < len; i++)
            if (!g_ascii_isspace(text[i])) {
                g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                            "text outside the policy element");
                return;
            }
        return;
    }
    g_string_append_len(p->text, text, len);
}

char *
pt_libvirt_policy_metadata_parse(const char *xml, GError **error)
{
    static const GMarkupParser parser = {
        .start_element = meta_start,
        .end_element = meta_end,
        .text = meta_text,
    };
    g_autoptr(GString) text = g_string_new(NULL);
    MetaParse p = { .text = text };
    g_autoptr(GMarkupParseContext) pc = NULL;
    g_autoptr(GError) err = NULL;

    if (!xml || !*xml) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_EMPTY, "empty metadata");
        return NULL;
    }
    if (strlen(xml) > METADATA_MAX) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_INVALID_CONTENT,
                    "%zu bytes of metadata, more than %d", strlen(xml), METADATA_MAX);
        return NULL;
    }
    pc = g_markup_parse_context_new(&parser, G_MARKUP_PREFIX_ERROR_POSITION, &p, NULL);
    if (!g_markup_parse_context_parse(pc, xml, -1, &err) ||
        !g_markup_parse_context_end_parse(pc, &err)) {
        g_set_error(error, G_MARKUP_ERROR, err->code, "not a policy element: %s",
                    err->message);
        return NULL;
    }
    if (!p.seen_root) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_EMPTY, "no policy element");
        return NULL;
    }
    g_strstrip(text->str);
    if (!*text->str) {
        g_set_error(error, G_MARKUP_ERROR, G_MARKUP_ERROR_EMPTY,
                    "the policy element is empty");
        return NULL;
    }
    return g_strdup(text->str);
}
