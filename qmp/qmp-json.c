/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-json.h"
#include "qmp-error.h"

#include <string.h>

void
qmp_message_free(QmpMessage *msg)
{
    if (!msg)
        return;
    json_object_put(msg->root);
    g_free(msg);
}

static json_object *
qmp_json_get(json_object *obj, const char *key)
{
    json_object *v = NULL;

    if (!obj || !json_object_is_type(obj, json_type_object))
        return NULL;
    if (!json_object_object_get_ex(obj, key, &v))
        return NULL;
    return v;
}

const char *
qmp_json_string(json_object *v)
{
    const char *s;

    if (!v || !json_object_is_type(v, json_type_string))
        return NULL;
    s = json_object_get_string(v);
    /* "\u0000" is valid JSON; a C string would end there. */
    if (strlen(s) != (size_t)json_object_get_string_len(v))
        return NULL;
    return s;
}

const char *
qmp_json_get_string(json_object *obj, const char *key)
{
    return qmp_json_string(qmp_json_get(obj, key));
}

gboolean
qmp_json_get_int(json_object *obj, const char *key, gint64 *out)
{
    json_object *v = qmp_json_get(obj, key);

    if (!v || !json_object_is_type(v, json_type_int))
        return FALSE;
    *out = json_object_get_int64(v);
    return TRUE;
}

gboolean
qmp_json_get_uint(json_object *obj, const char *key, guint64 *out)
{
    json_object *v = qmp_json_get(obj, key);

    if (!v || !json_object_is_type(v, json_type_int))
        return FALSE;
    /* json-c keeps a non-negative number above INT64_MAX as a uint64 (since
     * 0.14), for which json_object_get_int64() answers INT64_MAX; a negative
     * one as an int64, for which json_object_get_uint64() answers 0.  So the
     * sign is read one way and the magnitude the other. */
    if (json_object_get_int64(v) < 0)
        return FALSE;
    *out = json_object_get_uint64(v);
    return TRUE;
}

gboolean
qmp_json_get_bool(json_object *obj, const char *key, gboolean *out)
{
    json_object *v = qmp_json_get(obj, key);

    if (!v || !json_object_is_type(v, json_type_boolean))
        return FALSE;
    *out = json_object_get_boolean(v);
    return TRUE;
}

static gboolean
qmp_message_classify(QmpMessage *m, GError **error)
{
    json_object *root = m->root;
    json_object *v;

    m->id = qmp_json_get(root, "id");

    if ((v = qmp_json_get(root, "return"))) {
        m->kind = QMP_MESSAGE_RETURN;
        m->body = v;
        return TRUE;
    }
    if ((v = qmp_json_get(root, "error"))) {
        m->kind = QMP_MESSAGE_ERROR;
        m->name = qmp_json_get_string(v, "class");
        m->desc = qmp_json_get_string(v, "desc");
        if (!m->name || !m->desc) {
            g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                        "error reply without a class and desc string");
            return FALSE;
        }
        return TRUE;
    }
    if ((v = qmp_json_get(root, "event"))) {
        json_object *ts = qmp_json_get(root, "timestamp");
        gint64 sec = 0, usec = 0;

        m->kind = QMP_MESSAGE_EVENT;
        m->name = qmp_json_get_string(root, "event");
        if (!m->name) {
            g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                        "event whose name is not a string (or holds a NUL)");
            return FALSE;
        }
        m->body = qmp_json_get(root, "data");
        if (qmp_json_get_int(ts, "seconds", &sec) &&
            qmp_json_get_int(ts, "microseconds", &usec) &&
            sec >= 0 && sec < G_MAXINT64 / G_USEC_PER_SEC)
            m->timestamp_us = sec * G_USEC_PER_SEC + usec;
        return TRUE;
    }
    if ((v = qmp_json_get(root, "QMP"))) {
        m->kind = QMP_MESSAGE_GREETING;
        m->body = v;
        if (!json_object_is_type(v, json_type_object)) {
            g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                        "greeting whose QMP member is not an object");
            return FALSE;
        }
        return TRUE;
    }
    if ((v = qmp_json_get(root, "execute"))) {
        m->kind = QMP_MESSAGE_COMMAND;
        m->name = qmp_json_get_string(root, "execute");
        m->body = qmp_json_get(root, "arguments");
        if (!m->name) {
            g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                        "command whose execute member is not a string (or holds a NUL)");
            return FALSE;
        }
        if (m->body && !json_object_is_type(m->body, json_type_object)) {
            g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                        "command %s: arguments is not an object", m->name);
            return FALSE;
        }
        return TRUE;
    }
    g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                "message is none of greeting, return, error, event or command");
    return FALSE;
}

QmpMessage *
qmp_message_parse(const char *text, gsize len, guint max_depth, GError **error)
{
    g_autoptr(QmpMessage) m = g_new0(QmpMessage, 1);
    json_tokener *tok;
    enum json_tokener_error jerr;

    if (len > G_MAXINT) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_TOO_BIG,
                    "message of %" G_GSIZE_FORMAT " bytes", len);
        return NULL;
    }
    /* json-c counts the outermost object as a level too. */
    tok = json_tokener_new_ex((int)MIN(max_depth + 1, G_MAXINT));
    if (!tok) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL, "out of memory");
        return NULL;
    }
    /* Strict mode refuses trailing commas and bare words; json-c 0.16 still
     * takes single-quoted strings, which is harmless to us. */
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
    m->root = json_tokener_parse_ex(tok, text, (int)len);
    jerr = json_tokener_get_error(tok);
    if (jerr == json_tokener_success && json_tokener_get_parse_end(tok) < len) {
        /* Trailing bytes after a complete object: QmpStream never hands us
         * such a buffer, but other callers might. */
        jerr = json_tokener_error_parse_unexpected;
    }
    json_tokener_free(tok);

    if (jerr != json_tokener_success || !m->root) {
        g_set_error(error, QMP_ERROR,
                    jerr == json_tokener_error_depth ? QMP_ERROR_TOO_DEEP :
                                                       QMP_ERROR_PROTOCOL,
                    "invalid JSON: %s",
                    jerr == json_tokener_success || jerr == json_tokener_continue ?
                    "incomplete message" : json_tokener_error_desc(jerr));
        return NULL;
    }
    if (!json_object_is_type(m->root, json_type_object)) {
        g_set_error(error, QMP_ERROR, QMP_ERROR_PROTOCOL,
                    "message is not a JSON object");
        return NULL;
    }
    if (!qmp_message_classify(m, error))
        return NULL;
    return g_steal_pointer(&m);
}

static char *
qmp_message_serialise(json_object *obj)
{
    const char *s = json_object_to_json_string_ext(obj,
                        JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);

    return g_strconcat(s, "\n", NULL);
}

char *
qmp_message_build_command(const char *execute, json_object *args,
                          json_object *id)
{
    json_object *obj = json_object_new_object();
    char *out;

    json_object_object_add(obj, "execute", json_object_new_string(execute));
    if (args)
        json_object_object_add(obj, "arguments", json_object_get(args));
    if (id)
        json_object_object_add(obj, "id", json_object_get(id));
    out = qmp_message_serialise(obj);
    json_object_put(obj);
    return out;
}

char *
qmp_message_build_return(json_object *ret, json_object *id)
{
    json_object *obj = json_object_new_object();
    char *out;

    json_object_object_add(obj, "return",
                           ret ? json_object_get(ret) : json_object_new_object());
    if (id)
        json_object_object_add(obj, "id", json_object_get(id));
    out = qmp_message_serialise(obj);
    json_object_put(obj);
    return out;
}

char *
qmp_message_build_error(const char *klass, const char *desc, json_object *id)
{
    json_object *obj = json_object_new_object();
    json_object *err = json_object_new_object();
    char *out;

    json_object_object_add(err, "class", json_object_new_string(klass));
    json_object_object_add(err, "desc", json_object_new_string(desc));
    json_object_object_add(obj, "error", err);
    if (id)
        json_object_object_add(obj, "id", json_object_get(id));
    out = qmp_message_serialise(obj);
    json_object_put(obj);
    return out;
}
