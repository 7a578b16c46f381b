/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The effective configuration written back in the file's syntax, every key
 * of the key table with its value, for `polltuned --check-config`.  What
 * it prints loads again to the same configuration.
 */
#include "pt-conf.h"
#include "pt-conf-keys.h"

static void
pt_conf_put_list(GString *s, const char *key, char **v)
{
    g_string_append_printf(s, "%s =", key);
    for (guint i = 0; v && v[i]; i++)
        g_string_append_printf(s, " %s;", v[i]);
    g_string_append_c(s, '\n');
}

/* A duration or size as the file wrote it while that still means the
 * value (the command line may have replaced it), else in the largest
 * exact unit. */
static const char *
pt_conf_written(const PtConf *c, const PtConfKey *k)
{
    g_autofree char *slot = g_strdup_printf("%s/%s", k->group, k->key);
    const char *written = c->written ? g_hash_table_lookup(c->written, slot) : NULL;
    gboolean (*parse)(const char *, gint64 *, GError **) =
        k->type == PT_CONF_TYPE_SIZE ? pt_parse_size : pt_parse_duration;
    gint64 back;

    if (!written || !parse(written, &back, NULL) || back != pt_conf_key_get_int(k, c))
        return NULL;
    return written;
}

/* An unset string prints as an empty value, which the loader reads back
 * as unset. */
static void
pt_conf_put_key(GString *s, const PtConf *c, const PtConfKey *k)
{
    g_autofree char *v = NULL;
    const char *written = NULL;

    if (k->type == PT_CONF_TYPE_PATHS) {
        pt_conf_put_list(s, k->key, *(char **const *)pt_conf_key_field_const(k, c));
        return;
    }
    if (k->type == PT_CONF_TYPE_DURATION || k->type == PT_CONF_TYPE_SIZE)
        written = pt_conf_written(c, k);
    if (!written)
        written = v = pt_conf_key_format(k, c);
    g_string_append_printf(s, "%s =%s%s\n", k->key, written ? " " : "", written ? written : "");
}

char *
pt_conf_format(const PtConf *c)
{
    GString *s = g_string_new(NULL);
    const PolicyConfig *p = c->policy;

    g_string_append_printf(s, "# effective configuration from %s\n", c->path ? c->path : "defaults");
    for (const char *const *g = pt_conf_groups; *g; g++) {
        g_string_append_printf(s, "%s[%s]\n", g == pt_conf_groups ? "" : "\n", *g);
        for (gsize i = 0; i < pt_conf_n_keys; i++)
            if (g_str_equal(pt_conf_keys[i].group, *g))
                pt_conf_put_key(s, c, &pt_conf_keys[i]);
    }

    for (guint i = 0; p->rules && i < p->rules->len; i++) {
        const PolicyRule *rule = p->rules->pdata[i];
        g_autofree char *spec = NULL;

        /* The file's own: rules set at run time live in the store. */
        if (rule->origin != POLICY_ORIGIN_CONFIG)
            continue;
        spec = policy_spec_format(&rule->spec);
        g_string_append_printf(s, "\n[rule %s]\npolicy = %s\n", rule->glob, spec);
    }
    return g_string_free(s, FALSE);
}
