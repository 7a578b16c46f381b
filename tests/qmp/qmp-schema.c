/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-schema.h"
#include "qmp-json.h"

#include <gio/gio.h>
#include <string.h>

/* A capture's JSON nests a SchemaInfo list in an object: a few levels. */
#define SCHEMA_DEPTH 16
/* Nesting of a value being checked: QEMU's deepest replies (a long backing
 * chain in query-blockstats) stay well inside json-c's parse limit of the
 * fake, 4096; the walk allows as much. */
#define CHECK_DEPTH 4096

struct QmpSchema {
    json_object *root;
    GHashTable *by_name;        /* name -> SchemaInfo (borrowed from root) */
    char *qemu;
    int major, minor;
};

/* QapiErrorClass, qapi/error.json: the classes every QEMU since 1.2 uses. */
static const char *const error_classes[] = {
    "GenericError", "CommandNotFound", "DeviceNotActive", "DeviceNotFound",
    "KVMMissingCap",
};

void
qmp_schema_free(QmpSchema *s)
{
    if (!s)
        return;
    g_clear_pointer(&s->by_name, g_hash_table_unref);
    json_object_put(s->root);
    g_free(s->qemu);
    g_free(s);
}

static json_object *
schema_read_gz(const char *path, GError **error)
{
    g_autoptr(GFile) file = g_file_new_for_path(path);
    g_autoptr(GInputStream) raw = NULL;
    g_autoptr(GConverter) gunzip = NULL;
    g_autoptr(GInputStream) in = NULL;
    g_autoptr(GByteArray) text = g_byte_array_new();
    json_tokener *tok;
    json_object *root;
    guint8 buf[16384];
    gssize n;

    raw = G_INPUT_STREAM(g_file_read(file, NULL, error));
    if (!raw)
        return NULL;
    gunzip = G_CONVERTER(g_zlib_decompressor_new(G_ZLIB_COMPRESSOR_FORMAT_GZIP));
    in = g_converter_input_stream_new(raw, gunzip);
    while ((n = g_input_stream_read(in, buf, sizeof(buf), NULL, error)) > 0)
        g_byte_array_append(text, buf, n);
    if (n < 0)
        return NULL;
    tok = json_tokener_new_ex(SCHEMA_DEPTH);
    root = json_tokener_parse_ex(tok, (const char *)text->data, text->len);
    if (json_tokener_get_error(tok) != json_tokener_success)
        g_clear_pointer(&root, json_object_put);
    json_tokener_free(tok);
    if (!root)
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: not JSON", path);
    return root;
}

QmpSchema *
qmp_schema_load(const char *path, GError **error)
{
    g_autoptr(QmpSchema) s = g_new0(QmpSchema, 1);
    json_object *list, *ver, *q;
    gint64 micro = 0;

    s->root = schema_read_gz(path, error);
    if (!s->root)
        return NULL;
    if (!json_object_object_get_ex(s->root, "schema", &list) ||
        !json_object_is_type(list, json_type_array) ||
        !json_object_object_get_ex(s->root, "version", &ver) ||
        !json_object_object_get_ex(ver, "qemu", &q)) {
        g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA,
                    "%s: no \"version\" and \"schema\"", path);
        return NULL;
    }
    s->major = json_object_get_int(json_object_object_get(q, "major"));
    s->minor = json_object_get_int(json_object_object_get(q, "minor"));
    micro = json_object_get_int(json_object_object_get(q, "micro"));
    s->qemu = g_strdup_printf("%d.%d.%d", s->major, s->minor, (int)micro);
    s->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        json_object *e = json_object_array_get_idx(list, i);
        const char *name = json_object_get_string(json_object_object_get(e, "name"));

        if (name)
            g_hash_table_insert(s->by_name, (gpointer)name, e);
    }
    return g_steal_pointer(&s);
}

const char *
qmp_schema_qemu(const QmpSchema *s)
{
    return s->qemu;
}

/* The captures in tests/qmp/schema/, oldest first. */
static const struct {
    int major, minor;
    const char *file;
} schema_files[] = {
    { 7, 2, "qemu-7.2.json.gz" },
    { 10, 0, "qemu-10.0.json.gz" },
};

const QmpSchema *
qmp_schema_for_version(int major, int minor)
{
    static QmpSchema *loaded[G_N_ELEMENTS(schema_files)];
    G_LOCK_DEFINE_STATIC(loaded);
    guint pick = 0;
    QmpSchema *s;

    for (guint i = 0; i < G_N_ELEMENTS(schema_files); i++)
        if (schema_files[i].major < major ||
            (schema_files[i].major == major && schema_files[i].minor <= minor))
            pick = i;
    G_LOCK(loaded);
    if (!loaded[pick]) {
        g_autofree char *path = g_build_filename(PT_QMP_SCHEMA_DIR, schema_files[pick].file,
                                                 NULL);
        g_autoptr(GError) err = NULL;

        loaded[pick] = qmp_schema_load(path, &err);
        if (!loaded[pick])
            g_error("the QMP schema capture: %s", err->message);
    }
    s = loaded[pick];
    G_UNLOCK(loaded);
    return s;
}

static json_object *
schema_entry(const QmpSchema *s, const char *name, const char *meta_type)
{
    json_object *e = name ? g_hash_table_lookup(s->by_name, name) : NULL;
    const char *mt = e ? json_object_get_string(json_object_object_get(e, "meta-type")) : NULL;

    return e && (!meta_type || g_strcmp0(mt, meta_type) == 0) ? e : NULL;
}

gboolean
qmp_schema_has_command(const QmpSchema *s, const char *command)
{
    return schema_entry(s, command, "command") != NULL;
}

typedef struct {
    const QmpSchema *s;
    GString *where;             /* "return[0].thread-id" */
    guint depth;
} Walk;

static gboolean walk_value(Walk *w, const char *type, json_object *v, GError **error);

static gboolean
schema_fail(const QmpSchema *s, GError **error, const char *where, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* "WHERE: WHAT (QEMU X.Y.Z)"; always FALSE. */
static gboolean
schema_fail(const QmpSchema *s, GError **error, const char *where, const char *fmt, ...)
{
    g_autofree char *what = NULL;
    va_list ap;

    va_start(ap, fmt);
    what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, G_IO_ERROR, G_IO_ERROR_INVALID_DATA, "%s: %s (QEMU %s)", where, what,
                s->qemu);
    return FALSE;
}

#define walk_fail(w, error, ...) schema_fail((w)->s, error, (w)->where->str, __VA_ARGS__)

static const char *
json_kind(json_object *v)
{
    return v ? json_type_to_name(json_object_get_type(v)) : "null";
}

static gboolean
walk_builtin(Walk *w, json_object *e, json_object *v, GError **error)
{
    const char *jt = json_object_get_string(json_object_object_get(e, "json-type"));
    gboolean ok;

    if (g_strcmp0(jt, "value") == 0)
        return TRUE;
    if (g_strcmp0(jt, "int") == 0)
        ok = v && json_object_is_type(v, json_type_int);
    else if (g_strcmp0(jt, "number") == 0)
        ok = v && (json_object_is_type(v, json_type_int) ||
                   json_object_is_type(v, json_type_double));
    else if (g_strcmp0(jt, "string") == 0)
        ok = v && json_object_is_type(v, json_type_string);
    else if (g_strcmp0(jt, "boolean") == 0)
        ok = v && json_object_is_type(v, json_type_boolean);
    else if (g_strcmp0(jt, "null") == 0)
        ok = !v;
    else if (g_strcmp0(jt, "object") == 0)
        ok = v && json_object_is_type(v, json_type_object);
    else
        return walk_fail(w, error, "builtin of unknown JSON type %s", jt);
    return ok ? TRUE : walk_fail(w, error, "%s where QEMU sends %s", json_kind(v), jt);
}

static gboolean
walk_enum(Walk *w, json_object *e, json_object *v, GError **error)
{
    json_object *members = json_object_object_get(e, "members");
    const char *str = v && json_object_is_type(v, json_type_string) ?
                      json_object_get_string(v) : NULL;

    if (!str)
        return walk_fail(w, error, "%s where QEMU sends an enum's name", json_kind(v));
    for (size_t i = 0; i < json_object_array_length(members); i++)
        if (g_strcmp0(str, json_object_get_string(json_object_object_get(
                                json_object_array_get_idx(members, i), "name"))) == 0)
            return TRUE;
    return walk_fail(w, error, "\"%s\" is no value of this enum", str);
}

static gboolean
walk_array(Walk *w, json_object *e, json_object *v, GError **error)
{
    const char *elem = json_object_get_string(json_object_object_get(e, "element-type"));
    gsize len = w->where->len;

    if (!v || !json_object_is_type(v, json_type_array))
        return walk_fail(w, error, "%s where QEMU sends an array", json_kind(v));
    for (size_t i = 0; i < json_object_array_length(v); i++) {
        g_string_append_printf(w->where, "[%zu]", i);
        if (!walk_value(w, elem, json_object_array_get_idx(v, i), error))
            return FALSE;
        g_string_truncate(w->where, len);
    }
    return TRUE;
}

/* The members @v may have: @e's own, and those of the variant its tag
 * picks (itself an object, maybe with variants of its own).  NULL and
 * @error when the tag names no variant. */
static gboolean
object_members(Walk *w, json_object *e, json_object *v, GPtrArray *out, GError **error)
{
    json_object *members = json_object_object_get(e, "members");
    json_object *variants = json_object_object_get(e, "variants");
    const char *tag = json_object_get_string(json_object_object_get(e, "tag"));
    const char *tag_value;
    json_object *tv = NULL;

    for (size_t i = 0; i < json_object_array_length(members); i++)
        g_ptr_array_add(out, json_object_array_get_idx(members, i));
    if (!tag)
        return TRUE;
    if (!json_object_object_get_ex(v, tag, &tv))
        return walk_fail(w, error, "no \"%s\", which picks the variant", tag);
    tag_value = json_object_get_string(tv);
    for (size_t i = 0; i < json_object_array_length(variants); i++) {
        json_object *var = json_object_array_get_idx(variants, i);

        if (g_strcmp0(tag_value, json_object_get_string(json_object_object_get(var, "case"))))
            continue;
        e = schema_entry(w->s, json_object_get_string(json_object_object_get(var, "type")),
                         "object");
        return e ? object_members(w, e, v, out, error) : walk_fail(w, error, "bad variant");
    }
    /* An enum value with no variant of its own has no members beyond the
     * base (QAPI allows leaving such cases out). */
    return TRUE;
}

static gboolean
walk_object(Walk *w, json_object *e, json_object *v, GError **error)
{
    g_autoptr(GPtrArray) members = g_ptr_array_new();
    g_autoptr(GHashTable) known = g_hash_table_new(g_str_hash, g_str_equal);
    gsize len = w->where->len;

    if (!v || !json_object_is_type(v, json_type_object))
        return walk_fail(w, error, "%s where QEMU sends an object", json_kind(v));
    if (!object_members(w, e, v, members, error))
        return FALSE;
    for (guint i = 0; i < members->len; i++) {
        json_object *m = members->pdata[i];
        const char *name = json_object_get_string(json_object_object_get(m, "name"));
        gboolean optional = json_object_object_get_ex(m, "default", NULL);
        json_object *mv = NULL;

        g_hash_table_add(known, (gpointer)name);
        if (!json_object_object_get_ex(v, name, &mv)) {
            if (optional)
                continue;
            return walk_fail(w, error, "no \"%s\", which QEMU always sends", name);
        }
        g_string_append_printf(w->where, ".%s", name);
        if (!walk_value(w, json_object_get_string(json_object_object_get(m, "type")), mv, error))
            return FALSE;
        g_string_truncate(w->where, len);
    }
    json_object_object_foreach(v, key, val) {
        (void)val;
        if (!g_hash_table_contains(known, key))
            return walk_fail(w, error, "\"%s\" is no member of this object", key);
    }
    return TRUE;
}

static gboolean
walk_alternate(Walk *w, json_object *e, json_object *v, GError **error)
{
    json_object *members = json_object_object_get(e, "members");
    GString *tried = g_string_new(NULL);

    for (size_t i = 0; i < json_object_array_length(members); i++) {
        const char *type = json_object_get_string(json_object_object_get(
            json_object_array_get_idx(members, i), "type"));
        g_autoptr(GError) err = NULL;
        gsize len = w->where->len;

        if (walk_value(w, type, v, &err)) {
            g_string_free(tried, TRUE);
            return TRUE;
        }
        g_string_truncate(w->where, len);
        g_string_append_printf(tried, "%s%s", tried->len ? "; " : "", err->message);
    }
    walk_fail(w, error, "no branch of the alternate fits: %s", tried->str);
    g_string_free(tried, TRUE);
    return FALSE;
}

static gboolean
walk_value(Walk *w, const char *type, json_object *v, GError **error)
{
    json_object *e = schema_entry(w->s, type, NULL);
    const char *mt;
    gboolean ok;

    if (!e)
        return walk_fail(w, error, "type %s is not in the capture", type);
    if (++w->depth > CHECK_DEPTH)
        return walk_fail(w, error, "nested deeper than %d", CHECK_DEPTH);
    mt = json_object_get_string(json_object_object_get(e, "meta-type"));
    if (g_strcmp0(mt, "builtin") == 0)
        ok = walk_builtin(w, e, v, error);
    else if (g_strcmp0(mt, "enum") == 0)
        ok = walk_enum(w, e, v, error);
    else if (g_strcmp0(mt, "array") == 0)
        ok = walk_array(w, e, v, error);
    else if (g_strcmp0(mt, "object") == 0)
        ok = walk_object(w, e, v, error);
    else if (g_strcmp0(mt, "alternate") == 0)
        ok = walk_alternate(w, e, v, error);
    else
        ok = walk_fail(w, error, "%s is a %s, not a type", type, mt);
    w->depth--;
    return ok;
}

/* Check @v against @type, naming the place as @what. */
static gboolean
schema_check(const QmpSchema *s, const char *type, json_object *v, const char *what,
             GError **error)
{
    g_autoptr(GString) where = g_string_new(what);
    Walk w = { s, where, 0 };

    return walk_value(&w, type, v, error);
}

gboolean
qmp_schema_check_args(const QmpSchema *s, const char *command, json_object *args,
                      GError **error)
{
    json_object *cmd = schema_entry(s, command, "command");
    g_autoptr(json_object) empty = NULL;
    g_autofree char *what = g_strdup_printf("%s: arguments", command);

    if (!cmd)
        return schema_fail(s, error, command, "no such command");
    if (!args)
        args = empty = json_object_new_object();
    return schema_check(s, json_object_get_string(json_object_object_get(cmd, "arg-type")),
                        args, what, error);
}

/* {"class": one of QapiErrorClass, "desc": text}, nothing else. */
static gboolean
schema_check_error(const QmpSchema *s, const char *command, json_object *err,
                   const char **klass, GError **error)
{
    json_object *c = NULL, *d = NULL;

    *klass = NULL;
    if (!err || !json_object_is_type(err, json_type_object) ||
        !json_object_object_get_ex(err, "class", &c) || !json_object_is_type(c, json_type_string) ||
        !json_object_object_get_ex(err, "desc", &d) || !json_object_is_type(d, json_type_string) ||
        json_object_object_length(err) != 2)
        return schema_fail(s, error, command, "an error is {\"class\", \"desc\"}, not %s",
                           json_object_to_json_string(err));
    *klass = json_object_get_string(c);
    for (guint i = 0; i < G_N_ELEMENTS(error_classes); i++)
        if (g_str_equal(*klass, error_classes[i]))
            return TRUE;
    return schema_fail(s, error, command, "no error class %s", *klass);
}

gboolean
qmp_schema_check_reply(const QmpSchema *s, const char *command, json_object *args,
                       json_object *reply, GError **error)
{
    json_object *cmd = schema_entry(s, command, "command");
    json_object *ret = NULL, *err = NULL;
    gboolean has_ret, has_err;
    g_autoptr(GError) args_err = NULL;
    const char *klass;

    if (!reply || !json_object_is_type(reply, json_type_object))
        return schema_fail(s, error, command, "a reply is an object");
    has_ret = json_object_object_get_ex(reply, "return", &ret);
    has_err = json_object_object_get_ex(reply, "error", &err);
    if (has_ret == has_err)
        return schema_fail(s, error, command, "a reply has either \"return\" or \"error\"");
    json_object_object_foreach(reply, key, val) {
        (void)val;
        if (!g_str_equal(key, "return") && !g_str_equal(key, "error") && !g_str_equal(key, "id"))
            return schema_fail(s, error, command, "a reply has no \"%s\"", key);
    }
    if (has_err) {
        if (!schema_check_error(s, command, err, &klass, error))
            return FALSE;
        if (!cmd && !g_str_equal(klass, "CommandNotFound"))
            return schema_fail(s, error, command, "no such command, so CommandNotFound, not %s",
                               klass);
        return TRUE;
    }
    if (!cmd)
        return schema_fail(s, error, command, "no such command: QEMU answers CommandNotFound");
    if (args && !qmp_schema_check_args(s, command, args, &args_err))
        return schema_fail(s, error, command, "QEMU refuses these arguments (%s), yet this "
                           "returns", args_err->message);
    {
        g_autofree char *what = g_strdup_printf("%s: return", command);

        return schema_check(s, json_object_get_string(json_object_object_get(cmd, "ret-type")),
                            ret, what, error);
    }
}

gboolean
qmp_schema_check_event(const QmpSchema *s, const char *event, json_object *data,
                       GError **error)
{
    json_object *ev = schema_entry(s, event, "event");
    g_autoptr(json_object) empty = NULL;
    g_autofree char *what = g_strdup_printf("event %s: data", event);

    const char *arg_type;

    if (!ev)
        return schema_fail(s, error, event, "no such event");
    arg_type = json_object_get_string(json_object_object_get(ev, "arg-type"));
    if (!data)
        data = empty = json_object_new_object();
    if (!arg_type)
        return json_object_object_length(data) == 0 ? TRUE :
               schema_fail(s, error, event, "this event carries no data");
    return schema_check(s, arg_type, data, what, error);
}

/* ---- filling in ---------------------------------------------------------- */

static json_object *fill_new(const QmpSchema *s, const char *type, guint depth);

/* Add to object @v every member it must have and lacks, and fill in the
 * objects it holds; nothing is checked here. */
static void
fill_value(const QmpSchema *s, const char *type, json_object *v, guint depth)
{
    json_object *e = schema_entry(s, type, NULL);
    const char *mt = e ? json_object_get_string(json_object_object_get(e, "meta-type")) : NULL;

    if (!e || !v || depth > CHECK_DEPTH)
        return;
    if (g_strcmp0(mt, "array") == 0 && json_object_is_type(v, json_type_array)) {
        const char *elem = json_object_get_string(json_object_object_get(e, "element-type"));

        for (size_t i = 0; i < json_object_array_length(v); i++)
            fill_value(s, elem, json_object_array_get_idx(v, i), depth + 1);
    } else if (g_strcmp0(mt, "object") == 0 && json_object_is_type(v, json_type_object)) {
        g_autoptr(GPtrArray) members = g_ptr_array_new();
        g_autoptr(GString) where = g_string_new(NULL);
        Walk w = { s, where, 0 };

        if (!object_members(&w, e, v, members, NULL))
            return;
        for (guint i = 0; i < members->len; i++) {
            json_object *m = members->pdata[i];
            const char *name = json_object_get_string(json_object_object_get(m, "name"));
            const char *mtype = json_object_get_string(json_object_object_get(m, "type"));
            json_object *mv = NULL;

            if (json_object_object_get_ex(v, name, &mv))
                fill_value(s, mtype, mv, depth + 1);
            else if (!json_object_object_get_ex(m, "default", NULL))
                json_object_object_add(v, name, fill_new(s, mtype, depth + 1));
        }
    }
}

/* The plainest value of @type: 0, false, "", the first of an enum, [],
 * an object of its required members, an alternate's first branch. */
static json_object *
fill_new(const QmpSchema *s, const char *type, guint depth)
{
    json_object *e = schema_entry(s, type, NULL);
    const char *mt = e ? json_object_get_string(json_object_object_get(e, "meta-type")) : "";
    const char *jt = e ? json_object_get_string(json_object_object_get(e, "json-type")) : "";
    json_object *v;

    if (g_strcmp0(mt, "builtin") == 0) {
        if (g_strcmp0(jt, "int") == 0 || g_strcmp0(jt, "number") == 0)
            return json_object_new_int(0);
        if (g_strcmp0(jt, "boolean") == 0)
            return json_object_new_boolean(FALSE);
        if (g_strcmp0(jt, "string") == 0)
            return json_object_new_string("");
        return NULL;
    }
    if (g_strcmp0(mt, "enum") == 0)
        return json_object_new_string(json_object_get_string(json_object_object_get(
            json_object_array_get_idx(json_object_object_get(e, "members"), 0), "name")));
    if (g_strcmp0(mt, "array") == 0)
        return json_object_new_array();
    if (g_strcmp0(mt, "alternate") == 0)
        return fill_new(s, json_object_get_string(json_object_object_get(
            json_object_array_get_idx(json_object_object_get(e, "members"), 0), "type")), depth);
    v = json_object_new_object();
    fill_value(s, type, v, depth);
    return v;
}

char *
qmp_schema_fill_reply(const QmpSchema *s, const char *command, const char *reply)
{
    json_object *cmd = schema_entry(s, command, "command");
    json_tokener *tok = json_tokener_new_ex(CHECK_DEPTH);
    g_autoptr(json_object) obj = json_tokener_parse_ex(tok, reply, -1);
    json_object *ret = NULL;

    if (json_tokener_get_error(tok) != json_tokener_success)
        g_clear_pointer(&obj, json_object_put);
    json_tokener_free(tok);
    if (!obj)
        g_error("the reply to fill in is not JSON: %s", reply);
    if (cmd && json_object_object_get_ex(obj, "return", &ret))
        fill_value(s, json_object_get_string(json_object_object_get(cmd, "ret-type")), ret, 0);
    return g_strdup(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN));
}
