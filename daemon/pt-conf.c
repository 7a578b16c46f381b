/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "pt-conf.h"
#include "pt-conf-keys.h"
#include "common/pt-conf-key-names.h"

/* ---- defaults ---------------------------------------------------------- */

/* The defaults are the key table's (common/pt-conf-keys.def). */
PtConf *
pt_conf_new_default(void)
{
    PtConf *c = g_new0(PtConf, 1);

    c->policy = policy_config_new();
    pt_conf_keys_set_defaults(c);
    c->overrides.mode = PT_MODE_INVALID;
    c->written = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    return c;
}

void
pt_conf_free(PtConf *c)
{
    if (!c)
        return;
    g_free(c->path);
    g_free(c->exits_source);
    g_free(c->libvirt_uri);
    g_free(c->libvirt_pid_dir);
    g_strfreev(c->qmp_sockets);
    g_strfreev(c->qmp_globs);
    g_free(c->database);
    g_free(c->control_socket);
    g_free(c->control_group);
    g_free(c->admin_group);
    g_free(c->metrics_listen);
    g_free(c->overrides.database);
    g_free(c->overrides.control_socket);
    policy_config_free(c->policy);
    g_clear_pointer(&c->written, g_hash_table_unref);
    g_free(c);
}

/* ---- loading ----------------------------------------------------------- */

typedef struct {
    GKeyFile *kf;
    const char *name;           /* file name for messages */
    const char *data;           /* raw text, to find line numbers */
    const char *group;
    GHashTable *written;        /* PtConf.written, or NULL */
} PtConfReader;

/* The 1-based line of @key in [@group], or 0.  GKeyFile keeps no line
 * numbers, and an error that names one saves the operator a search.  A
 * key is set once (pt_conf_check_repeats()); a group may open twice. */
static guint
pt_conf_line_of(const PtConfReader *r, const char *group, const char *key)
{
    g_auto(GStrv) lines = g_strsplit(r->data, "\n", -1);
    gboolean in_group = FALSE;
    guint found = 0;

    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i];
        gsize klen;

        while (*l == ' ' || *l == '\t')
            l++;
        if (*l == '[') {
            const char *end = strchr(l, ']');

            in_group = end && (gsize)(end - l - 1) == strlen(group) &&
                       strncmp(l + 1, group, end - l - 1) == 0;
            continue;
        }
        klen = strlen(key);
        if (in_group && strncmp(l, key, klen) == 0 &&
            (l[klen] == '=' || l[klen] == ' ' || l[klen] == '\t'))
            found = i + 1;
    }
    return found;
}

static gboolean
pt_conf_fail(const PtConfReader *r, const char *key, GError **error,
             const char *fmt, ...) G_GNUC_PRINTF(4, 5);

static gboolean
pt_conf_fail(const PtConfReader *r, const char *key, GError **error,
             const char *fmt, ...)
{
    g_autofree char *why = NULL;
    va_list ap;
    guint line = pt_conf_line_of(r, r->group, key);

    va_start(ap, fmt);
    why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (line)
        g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                    "%s:%u: [%s] %s: %s", r->name, line, r->group, key, why);
    else
        g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                    "%s: [%s] %s: %s", r->name, r->group, key, why);
    return FALSE;
}

/* A string value, or NULL (not an error) when the key is absent. */
static char *
pt_conf_string(const PtConfReader *r, const char *key)
{
    return g_key_file_get_string(r->kf, r->group, key, NULL);
}

static gboolean
pt_conf_get_bool(const PtConfReader *r, const char *key, gboolean *out, GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);

    if (!v)
        return TRUE;
    if (g_str_equal(v, "true") || g_str_equal(v, "yes") || g_str_equal(v, "1"))
        *out = TRUE;
    else if (g_str_equal(v, "false") || g_str_equal(v, "no") || g_str_equal(v, "0"))
        *out = FALSE;
    else
        return pt_conf_fail(r, key, error, "'%s' is not true or false", v);
    return TRUE;
}

static gboolean
pt_conf_get_str(const PtConfReader *r, const char *key, char **out, gboolean allow_empty,
                GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);

    if (!v)
        return TRUE;
    g_strstrip(v);
    if (!*v && !allow_empty)
        return pt_conf_fail(r, key, error, "must not be empty");
    g_free(*out);
    *out = *v ? g_steal_pointer(&v) : NULL;
    return TRUE;
}

static gboolean
pt_conf_get_list(const PtConfReader *r, const char *key, char ***out, GError **error)
{
    g_auto(GStrv) v = g_key_file_get_string_list(r->kf, r->group, key, NULL, NULL);

    if (!v)
        return TRUE;
    for (guint i = 0; v[i]; i++) {
        g_strstrip(v[i]);
        if (v[i][0] != '/')
            return pt_conf_fail(r, key, error, "'%s' is not an absolute path", v[i]);
    }
    g_strfreev(*out);
    *out = g_steal_pointer(&v);
    return TRUE;
}

/* Keeps @text as the file wrote @key, for pt_conf_written(). */
static void
pt_conf_keep_written(const PtConfReader *r, const char *key, const char *text)
{
    if (r->written)
        g_hash_table_replace(r->written, g_strdup_printf("%s/%s", r->group, key),
                             g_strdup(text));
}

static gboolean
pt_conf_get_duration(const PtConfReader *r, const char *key, gint64 min, gint64 max,
                     gint64 *out, GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);
    g_autoptr(GError) err = NULL;
    gint64 ms;

    if (!v)
        return TRUE;
    g_strstrip(v);
    if (!pt_parse_duration(v, &ms, &err))
        return pt_conf_fail(r, key, error, "%s", err->message);
    if (ms < min || ms > max) {
        g_autofree char *lo = pt_format_duration(min);
        g_autofree char *hi = pt_format_duration(max);

        /* "5 is outside 100ms..1h" alone hides that 5 meant 5 ms */
        return pt_conf_fail(r, key, error, "%s is outside %s..%s%s", v, lo, hi,
                            strspn(v, "0123456789") == strlen(v) ?
                            " (a number without a unit is milliseconds)" : "");
    }
    *out = ms;
    pt_conf_keep_written(r, key, v);
    return TRUE;
}

static gboolean
pt_conf_get_uint(const PtConfReader *r, const char *key, guint64 min, guint64 max,
                 guint64 *out, GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);
    guint64 n;

    if (!v)
        return TRUE;
    g_strstrip(v);
    if (!g_ascii_string_to_unsigned(v, 10, min, max, &n, NULL))
        return pt_conf_fail(r, key, error, "'%s' is not a whole number in %"
                            G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT, v, min, max);
    *out = n;
    return TRUE;
}

/* DIGITS or DIGITS.DIGITS, nothing else. */
static gboolean
pt_is_decimal(const char *s)
{
    const char *p = s;

    while (g_ascii_isdigit(*p))
        p++;
    if (p == s)
        return FALSE;
    if (*p == '.') {
        const char *frac = ++p;

        while (g_ascii_isdigit(*p))
            p++;
        if (p == frac)
            return FALSE;
    }
    return *p == '\0';
}

static gboolean
pt_conf_get_double(const PtConfReader *r, const char *key, double min, double max,
                   double *out, GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);
    char *end = NULL;
    double d;

    if (!v)
        return TRUE;
    g_strstrip(v);
    /* The documented form is decimal: g_ascii_strtod alone would also
     * take "0x10", "1e2", "inf" and a sign. */
    if (!pt_is_decimal(v))
        return pt_conf_fail(r, key, error, "'%s' is not a decimal number (digits, "
                            "optionally a point and digits) in %g..%g", v, min, max);
    d = g_ascii_strtod(v, &end);
    if (*end || !(d >= min && d <= max))
        return pt_conf_fail(r, key, error, "'%s' is not a number in %g..%g", v, min, max);
    *out = d;
    return TRUE;
}

static gboolean
pt_conf_get_spec(const PtConfReader *r, const char *key, PolicySpec *out, GError **error)
{
    g_autofree char *v = pt_conf_string(r, key);
    g_autoptr(GError) err = NULL;

    if (!v)
        return TRUE;
    g_strstrip(v);
    if (!policy_spec_parse(v, out, &err))
        return pt_conf_fail(r, key, error, "%s", err->message);
    return TRUE;
}

/* The keys of [rule GLOB]: the one group the table does not hold. */
static const char *const pt_keys_rule[] = { "policy", NULL };

/* Keys we know, per group, from the key table: anything else is a typo
 * worth stopping for.  Built once, in whichever thread loads first. */
const char *const *
pt_conf_known_keys(const char *group)
{
    static GHashTable *by_group;

    if (g_once_init_enter(&by_group)) {
        GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, NULL,
                                              (GDestroyNotify)g_ptr_array_unref);

        for (const char *const *g = pt_conf_groups; *g; g++) {
            GPtrArray *keys = g_ptr_array_new();

            for (gsize i = 0; i < pt_conf_n_keys; i++)
                if (g_str_equal(pt_conf_keys[i].group, *g))
                    g_ptr_array_add(keys, (gpointer)pt_conf_keys[i].key);
            g_ptr_array_add(keys, NULL);
            g_hash_table_insert(t, (gpointer)*g, keys);
        }
        g_once_init_leave(&by_group, t);
    }
    if (g_str_equal(group, "rule"))
        return pt_keys_rule;
    {
        GPtrArray *keys = g_hash_table_lookup(by_group, group);

        return keys ? (const char *const *)keys->pdata : NULL;
    }
}

static gboolean
pt_conf_check_keys(PtConfReader *r, const char *const *known, GError **error)
{
    g_auto(GStrv) keys = g_key_file_get_keys(r->kf, r->group, NULL, NULL);

    for (guint i = 0; keys && keys[i]; i++)
        if (!g_strv_contains(known, keys[i]))
            return pt_conf_fail(r, keys[i], error, "unknown key");
    return TRUE;
}

/* A text key's value (absent: kept) and its type's own check. */
static gboolean
pt_conf_read_text(PtConfReader *r, const PtConfKey *k, char **out, GError **error)
{
    if (!pt_conf_get_str(r, k->key, out, k->type == PT_CONF_TYPE_STRING_EMPTY ||
                                         k->type == PT_CONF_TYPE_LISTEN, error))
        return FALSE;
    switch (k->type) {
    case PT_CONF_TYPE_EXITS:
        if (!g_strv_contains((const char *const[]){ "auto", "debugfs", "perf", "off", NULL },
                             *out))
            return pt_conf_fail(r, k->key, error, "'%s' is not auto, debugfs, perf or off",
                                *out);
        break;
    case PT_CONF_TYPE_DATABASE:
        if ((*out)[0] != '/' && !g_str_equal(*out, ":memory:"))
            return pt_conf_fail(r, k->key, error, "'%s' is not an absolute path", *out);
        break;
    case PT_CONF_TYPE_PATH:
        if ((*out)[0] != '/')
            return pt_conf_fail(r, k->key, error, "'%s' is not an absolute path", *out);
        break;
    case PT_CONF_TYPE_LISTEN:
        if (*out) {
            g_autoptr(GError) err = NULL;
            g_autofree char *host = NULL;
            guint16 port;

            if (!pt_parse_listen(*out, &host, &port, &err))
                return pt_conf_fail(r, k->key, error, "%s", err->message);
        }
        break;
    default:
        break;
    }
    return TRUE;
}

static gboolean
pt_conf_read_size(PtConfReader *r, const PtConfKey *k, gint64 *out, GError **error)
{
    g_autofree char *size = pt_conf_string(r, k->key);
    g_autoptr(GError) err = NULL;

    if (!size)
        return TRUE;
    g_strstrip(size);
    if (!pt_parse_size(size, out, &err))
        return pt_conf_fail(r, k->key, error, "%s", err->message);
    if (*out < (gint64)k->min) {
        g_autofree char *lo = pt_format_size((gint64)k->min);

        return pt_conf_fail(r, k->key, error, "%s is below the minimum of %s", size, lo);
    }
    pt_conf_keep_written(r, k->key, size);
    return TRUE;
}

/* @k's value from [@k->group], where the file sets it, into @c. */
static gboolean
pt_conf_read_key(PtConfReader *r, const PtConfKey *k, PtConf *c, GError **error)
{
    gpointer f = pt_conf_key_field(k, c);
    g_autofree char *v = NULL;
    gint64 n = 0;
    guint64 u = 0;

    if (pt_conf_key_is_string(k))
        return pt_conf_read_text(r, k, f, error);
    switch (k->type) {
    case PT_CONF_TYPE_BOOL:
        return pt_conf_get_bool(r, k->key, f, error);
    case PT_CONF_TYPE_MODE:
        if (!(v = pt_conf_string(r, k->key)))
            return TRUE;
        g_strstrip(v);
        if ((*(PtMode *)f = pt_mode_from_string(v)) == PT_MODE_INVALID)
            return pt_conf_fail(r, k->key, error,
                                "'%s' is not observe, recommend or enforce", v);
        return TRUE;
    case PT_CONF_TYPE_RESTART:
        if (!(v = pt_conf_string(r, k->key)))
            return TRUE;
        g_strstrip(v);
        if ((*(PtRestart *)f = pt_restart_from_string(v)) == PT_RESTART_INVALID)
            return pt_conf_fail(r, k->key, error, "'%s' is not restore or resume", v);
        return TRUE;
    case PT_CONF_TYPE_DURATION:
        n = pt_conf_key_get_int(k, c);
        if (!pt_conf_get_duration(r, k->key, (gint64)k->min, (gint64)k->max, &n, error))
            return FALSE;
        pt_conf_key_set_int(k, c, n);
        return TRUE;
    case PT_CONF_TYPE_SIZE:
        n = pt_conf_key_get_int(k, c);
        if (!pt_conf_read_size(r, k, &n, error))
            return FALSE;
        pt_conf_key_set_int(k, c, n);
        return TRUE;
    case PT_CONF_TYPE_UINT:
        u = (guint64)pt_conf_key_get_int(k, c);
        if (!pt_conf_get_uint(r, k->key, (guint64)k->min, (guint64)k->max, &u, error))
            return FALSE;
        pt_conf_key_set_int(k, c, (gint64)u);
        return TRUE;
    case PT_CONF_TYPE_DOUBLE:
        return pt_conf_get_double(r, k->key, k->min, k->max, f, error);
    case PT_CONF_TYPE_SPEC:
        return pt_conf_get_spec(r, k->key, f, error);
    case PT_CONF_TYPE_PATHS:
        return pt_conf_get_list(r, k->key, f, error);
    default:
        break;
    }
    g_assert_not_reached();
}

/* The fixed groups, each checked for unknown keys before its keys are
 * read, in the table's order. */
static gboolean
pt_conf_read_keys(PtConfReader *r, PtConf *c, GError **error)
{
    for (const char *const *g = pt_conf_groups; *g; g++) {
        r->group = *g;
        if (!pt_conf_check_keys(r, pt_conf_known_keys(*g), error))
            return FALSE;
        for (gsize i = 0; i < pt_conf_n_keys; i++)
            if (g_str_equal(pt_conf_keys[i].group, *g) &&
                !pt_conf_read_key(r, &pt_conf_keys[i], c, error))
                return FALSE;
    }
    return TRUE;
}

/* The [rule GLOB] groups, then the policy's own check of the whole. */
static gboolean
pt_conf_read_rules(PtConfReader *r, PtConf *c, GError **error)
{
    PolicyConfig *p = c->policy;
    g_autoptr(GError) err = NULL;
    g_auto(GStrv) groups = g_key_file_get_groups(r->kf, NULL);

    for (guint i = 0; groups[i]; i++) {
        const char *glob;
        PolicySpec spec;
        g_autofree char *v = NULL;

        if (!g_str_has_prefix(groups[i], "rule "))
            continue;
        glob = groups[i] + strlen("rule ");
        r->group = groups[i];
        if (!pt_conf_check_keys(r, pt_keys_rule, error))
            return FALSE;
        if (!(v = pt_conf_string(r, "policy")))
            return pt_conf_fail(r, "policy", error, "a rule needs a policy");
        g_strstrip(v);
        if (!policy_spec_parse(v, &spec, &err) ||
            !policy_config_add_rule(p, glob, &spec, &err))
            return pt_conf_fail(r, "policy", error, "%s", err->message);
    }
    /* The bounds and the default are checked together: the default
     * takes the blame. */
    r->group = "policy";
    if (!policy_config_validate(p, &err))
        return pt_conf_fail(r, pt_conf_key_name(PT_CONF_KEY_default_spec), error, "%s",
                            err->message);
    if (p->default_spec.kind == POLICY_KIND_STATIC &&
        !policy_config_check_triple(p, &p->default_spec.triple, &err))
        return pt_conf_fail(r, pt_conf_key_name(PT_CONF_KEY_default_spec), error, "%s",
                            err->message);
    return TRUE;
}

/* The line GKeyFile stopped at: its messages name the offending text but
 * no line.  GKeyFile parses line by line and stops at the first bad one,
 * so a prefix of the file fails to load exactly when it holds that line;
 * the shortest such prefix is found by bisection over the line count. */
static guint
pt_conf_syntax_line(const char *text, gsize len)
{
    g_autoptr(GArray) ends = g_array_new(FALSE, FALSE, sizeof(gsize));
    guint lo = 1, hi;

    for (gsize i = 0; i < len; i++)
        if (text[i] == '\n')
            g_array_append_val(ends, i);
    if (!len || text[len - 1] != '\n')
        g_array_append_val(ends, len);
    hi = ends->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        g_autoptr(GKeyFile) kf = g_key_file_new();

        if (g_key_file_load_from_data(kf, text, g_array_index(ends, gsize, mid - 1),
                                      G_KEY_FILE_NONE, NULL))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A key set twice in one group (a group may be opened twice: GKeyFile
 * merges them) is refused: GKeyFile would quietly keep the last value, so
 * an edit appended below the shipped line would win or lose by position.
 * Runs on text GKeyFile has parsed, so every line that is not blank, a
 * comment or a group header is KEY=VALUE. */
static gboolean
pt_conf_check_repeats(const char *text, const char *name, GError **error)
{
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    g_autofree char *group = g_strdup("");

    for (guint i = 0; lines[i]; i++) {
        const char *l = lines[i], *eq;
        g_autofree char *key = NULL;
        g_autofree char *slot = NULL;
        gpointer first;

        while (*l == ' ' || *l == '\t')
            l++;
        if (!*l || *l == '#' || *l == '\r')
            continue;
        if (*l == '[') {
            const char *end = strchr(l, ']');

            g_free(group);
            group = end ? g_strndup(l + 1, end - l - 1) : g_strdup(l + 1);
            continue;
        }
        if (!(eq = strchr(l, '=')))
            continue;
        key = g_strstrip(g_strndup(l, eq - l));
        slot = g_strdup_printf("%s\n%s", group, key);
        if (g_hash_table_lookup_extended(seen, slot, NULL, &first)) {
            g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                        "%s:%u: [%s] %s: set again; it was set on line %u already, and "
                        "a key may be set once", name, i + 1, group, key,
                        GPOINTER_TO_UINT(first));
            return FALSE;
        }
        g_hash_table_insert(seen, g_steal_pointer(&slot), GUINT_TO_POINTER(i + 1));
    }
    return TRUE;
}

PtConf *
pt_conf_load_data(const char *data, gsize len, const char *name, GError **error)
{
    g_autoptr(GKeyFile) kf = g_key_file_new();
    g_autoptr(PtConf) c = pt_conf_new_default();
    g_autoptr(GError) err = NULL;
    g_autofree char *text = g_strndup(data, len);
    g_auto(GStrv) groups = NULL;
    PtConfReader r = { .kf = kf, .name = name, .data = text, .group = "",
                       .written = c->written };

    if (strlen(text) != len) {
        g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                    "%s: contains a NUL byte", name);
        return NULL;
    }
    /* GKeyFile quietly drops values that are not UTF-8, which would turn a
     * typo into a default; name the line instead. */
    {
        const char *bad = NULL;

        if (!g_utf8_validate(text, len, &bad)) {
            guint line = 1;

            for (const char *p = text; p < bad; p++)
                line += *p == '\n';
            g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE,
                        "%s:%u: not valid UTF-8", name, line);
            return NULL;
        }
    }
    if (!g_key_file_load_from_data(kf, text, len, G_KEY_FILE_NONE, &err)) {
        g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_PARSE, "%s:%u: %s",
                    name, pt_conf_syntax_line(text, len), err->message);
        return NULL;
    }
    groups = g_key_file_get_groups(kf, NULL);
    for (guint i = 0; groups[i]; i++) {
        if (!g_strv_contains(pt_conf_groups, groups[i]) && !g_str_has_prefix(groups[i], "rule ")) {
            guint line = 0;
            g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
            g_autofree char *hdr = g_strdup_printf("[%s]", groups[i]);

            for (guint j = 0; lines[j] && !line; j++)
                if (strstr(lines[j], hdr))
                    line = j + 1;
            g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_GROUP_NOT_FOUND,
                        "%s:%u: unknown group [%s]", name, line, groups[i]);
            return NULL;
        }
    }
    if (!pt_conf_check_repeats(text, name, error))
        return NULL;
    if (!pt_conf_read_keys(&r, c, error) || !pt_conf_read_rules(&r, c, error))
        return NULL;
    c->path = g_strdup(name);
    return g_steal_pointer(&c);
}

/* ---- command line and reload ------------------------------------------ */

void
pt_conf_apply_overrides(PtConf *conf, const PtConfOverrides *ov)
{
    if (ov != &conf->overrides) {
        g_free(conf->overrides.database);
        g_free(conf->overrides.control_socket);
        conf->overrides = (PtConfOverrides){
            .database = g_strdup(ov->database),
            .control_socket = g_strdup(ov->control_socket),
            .mode = ov->mode,
            .interval_ms = ov->interval_ms,
        };
    }
    if (ov->database) {
        g_free(conf->database);
        conf->database = g_strdup(ov->database);
    }
    if (ov->control_socket) {
        g_free(conf->control_socket);
        conf->control_socket = g_strdup(ov->control_socket);
    }
    if (ov->mode != PT_MODE_INVALID)
        conf->mode = ov->mode;
    if (ov->interval_ms)
        conf->interval_ms = ov->interval_ms;
}

/* @k's value for a reload's message: text quoted, or "(empty)". */
static char *
pt_conf_show(const PtConfKey *k, const PtConf *c)
{
    g_autofree char *v = pt_conf_key_format(k, c);

    if (!pt_conf_key_is_text(k))
        return g_steal_pointer(&v);
    return v && *v ? g_strdup_printf("'%s'", v) : g_strdup("(empty)");
}

gboolean
pt_conf_check_reload(const PtConf *running, const PtConf *next, GError **error)
{
    for (gsize i = 0; i < pt_conf_n_keys; i++) {
        const PtConfKey *k = &pt_conf_keys[i];
        g_autofree char *was = NULL;
        g_autofree char *now = NULL;

        if (!k->restart)
            continue;
        was = pt_conf_show(k, running);
        now = pt_conf_show(k, next);

        if (!g_str_equal(was, now)) {
            g_autofree char *text = NULL;
            g_autofree char *where = NULL;
            guint line = 0;

            /* The line, as load errors give it; absent when the key was
             * removed (back to its default). */
            if (next->path && pt_conf_read_file(next->path, &text, NULL, NULL)) {
                PtConfReader r = { .data = text };

                line = pt_conf_line_of(&r, k->group, k->key);
            }
            where = line ? g_strdup_printf("%s:%u", next->path, line) :
                           g_strdup(next->path ? next->path : "configuration");
            g_set_error(error, G_KEY_FILE_ERROR, G_KEY_FILE_ERROR_INVALID_VALUE,
                        "%s: [%s] %s: %s differs from the running %s; this key is "
                        "read only at start: restart polltuned to change it",
                        where, k->group, k->key, now, was);
            return FALSE;
        }
    }
    return TRUE;
}
