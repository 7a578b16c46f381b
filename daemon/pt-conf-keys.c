/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The configuration's keys as a table, expanded from
 * common/pt-conf-keys.def, with what every user of a key needs of it: its
 * field, its defaults and its value as text.
 */
#include "pt-conf-keys.h"

/* Where a row's field lands: PtConf itself, or the PolicyConfig it holds. */
#define PT_CONF_IN_PtConf FALSE
#define PT_CONF_IN_PolicyConfig TRUE

#define PT_CONF_KEY(g, k, ty, Struct, field, def, lo, hi, reload, doc_)                     \
    { .group = #g, .key = k, .type = PT_CONF_TYPE_##ty, .in_policy = PT_CONF_IN_##Struct,   \
      .offset = G_STRUCT_OFFSET(Struct, field), .size = sizeof(((Struct *)0)->field),       \
      .min = (lo), .max = (hi), .restart = PT_CONF_##reload, .doc = doc_ },
#define PT_CONF_RELOAD FALSE
#define PT_CONF_RESTART TRUE

const PtConfKey pt_conf_keys[] = {
#include "common/pt-conf-keys.def"
};
#undef PT_CONF_KEY

const gsize pt_conf_n_keys = G_N_ELEMENTS(pt_conf_keys);

const char *const pt_conf_groups[] = { "daemon", "targets", "retention", "policy", NULL };

/* The default of a PtConf row, by its type: text is owned, a list starts
 * empty.  PolicyConfig rows are policy_config_new()'s. */
#define PT_CONF_INIT_BOOL(lv, d) (lv) = (d)
#define PT_CONF_INIT_MODE(lv, d) (lv) = (d)
#define PT_CONF_INIT_RESTART(lv, d) (lv) = (d)
#define PT_CONF_INIT_DURATION(lv, d) (lv) = (d)
#define PT_CONF_INIT_SIZE(lv, d) (lv) = (d)
#define PT_CONF_INIT_UINT(lv, d) (lv) = (d)
#define PT_CONF_INIT_DOUBLE(lv, d) (lv) = (d)
#define PT_CONF_INIT_STRING(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_STRING_EMPTY(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_PATH(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_DATABASE(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_LISTEN(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_EXITS(lv, d) (lv) = g_strdup(d)
#define PT_CONF_INIT_PATHS(lv, d) (lv) = g_new0(char *, 1)
#define PT_CONF_DEFAULT_PtConf(type, field, d) PT_CONF_INIT_##type(c->field, d);
#define PT_CONF_DEFAULT_PolicyConfig(type, field, d)

void
pt_conf_keys_set_defaults(PtConf *c)
{
#define PT_CONF_KEY(g, k, type, Struct, field, def, ...) PT_CONF_DEFAULT_##Struct(type, field, def)
#include "common/pt-conf-keys.def"
#undef PT_CONF_KEY
}

const PtConfKey *
pt_conf_key_lookup(const char *group, const char *key)
{
    for (gsize i = 0; i < pt_conf_n_keys; i++)
        if (g_str_equal(pt_conf_keys[i].group, group) && g_str_equal(pt_conf_keys[i].key, key))
            return &pt_conf_keys[i];
    return NULL;
}

gpointer
pt_conf_key_field(const PtConfKey *k, PtConf *c)
{
    return (char *)(k->in_policy ? (gpointer)c->policy : (gpointer)c) + k->offset;
}

gconstpointer
pt_conf_key_field_const(const PtConfKey *k, const PtConf *c)
{
    return pt_conf_key_field(k, (PtConf *)c);
}

/* Every 32-bit integer field holds a guint (durations and counts that
 * fit); every 64-bit one a gint64 or a guint64 below G_MAXINT64. */
gint64
pt_conf_key_get_int(const PtConfKey *k, const PtConf *c)
{
    gconstpointer f = pt_conf_key_field_const(k, c);

    g_assert(k->size == sizeof(guint) || k->size == sizeof(gint64));
    return k->size == sizeof(gint64) ? *(const gint64 *)f : (gint64)*(const guint *)f;
}

void
pt_conf_key_set_int(const PtConfKey *k, PtConf *c, gint64 v)
{
    gpointer f = pt_conf_key_field(k, c);

    g_assert(k->size == sizeof(guint) || k->size == sizeof(gint64));
    g_assert(v >= 0 && (k->size == sizeof(gint64) || v <= G_MAXUINT));
    if (k->size == sizeof(gint64))
        *(gint64 *)f = v;
    else
        *(guint *)f = (guint)v;
}

gboolean
pt_conf_key_is_string(const PtConfKey *k)
{
    switch (k->type) {
    case PT_CONF_TYPE_STRING:
    case PT_CONF_TYPE_STRING_EMPTY:
    case PT_CONF_TYPE_PATH:
    case PT_CONF_TYPE_DATABASE:
    case PT_CONF_TYPE_LISTEN:
    case PT_CONF_TYPE_EXITS:
        return TRUE;
    default:
        return FALSE;
    }
}

gboolean
pt_conf_key_is_text(const PtConfKey *k)
{
    return k->type == PT_CONF_TYPE_PATHS || pt_conf_key_is_string(k);
}

char *
pt_conf_key_format(const PtConfKey *k, const PtConf *c)
{
    gconstpointer f = pt_conf_key_field_const(k, c);

    if (pt_conf_key_is_string(k))
        return g_strdup(*(const char *const *)f);
    switch (k->type) {
    case PT_CONF_TYPE_BOOL:
        return g_strdup(*(const gboolean *)f ? "true" : "false");
    case PT_CONF_TYPE_MODE:
        return g_strdup(pt_mode_to_string(*(const PtMode *)f));
    case PT_CONF_TYPE_RESTART:
        return g_strdup(pt_restart_to_string(*(const PtRestart *)f));
    case PT_CONF_TYPE_DURATION:
        return pt_format_duration(pt_conf_key_get_int(k, c));
    case PT_CONF_TYPE_SIZE:
        return pt_format_size(pt_conf_key_get_int(k, c));
    case PT_CONF_TYPE_UINT:
        return g_strdup_printf("%" G_GINT64_FORMAT, pt_conf_key_get_int(k, c));
    case PT_CONF_TYPE_DOUBLE:
        return g_strdup_printf("%g", *(const double *)f);
    case PT_CONF_TYPE_SPEC:
        return policy_spec_format((const PolicySpec *)f);
    case PT_CONF_TYPE_PATHS:
        return g_strjoinv(";", *(char **const *)f);
    default:
        break;
    }
    g_assert_not_reached();
}
