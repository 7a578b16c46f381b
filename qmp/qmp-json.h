/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-json: the QMP message codec.
 *
 * This is the only header in the project that exposes json-c.  It is for the
 * QMP client inside qmp/, for the daemon's control protocol (which is shaped
 * like QMP) and for tests.  Everything else uses the typed wrappers in
 * qmp-commands.h, which return plain C structs.
 *
 * A message is classified by its keys, as the QMP specification does:
 * "QMP" is the greeting, "return" and "error" answer a command, "event" is an
 * asynchronous event and "execute" is a command (what a server receives).
 * Unknown extra keys are ignored, as the specification requires of clients.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

typedef enum {
    QMP_MESSAGE_GREETING,
    QMP_MESSAGE_RETURN,
    QMP_MESSAGE_ERROR,
    QMP_MESSAGE_EVENT,
    QMP_MESSAGE_COMMAND,
} QmpMessageKind;

typedef struct {
    QmpMessageKind kind;
    json_object *root;      /* owned: the whole message */
    json_object *id;        /* borrowed from root, NULL if absent */
    json_object *body;      /* borrowed: greeting "QMP", "return", event
                             * "data" or command "arguments"; may be NULL */
    const char *name;       /* event name, command name or error class */
    const char *desc;       /* error description, else NULL */
    gint64 timestamp_us;    /* events: the peer's timestamp, else 0 */
} QmpMessage;

/* Parse one complete message as delimited by QmpStream.  Strict JSON, at most
 * @max_depth levels, and it must be an object of one of the kinds above. */
QmpMessage *qmp_message_parse(const char *text, gsize len, guint max_depth,
                              GError **error);
void qmp_message_free(QmpMessage *msg);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpMessage, qmp_message_free)

/*
 * Serialise messages, each terminated by "\n".  @args, @ret and @id are
 * borrowed (their reference counts are left as they were); NULL @args or @id
 * are omitted, and NULL @ret is sent as an empty object.
 */
char *qmp_message_build_command(const char *execute, json_object *args,
                                json_object *id);
char *qmp_message_build_return(json_object *ret, json_object *id);
char *qmp_message_build_error(const char *klass, const char *desc,
                              json_object *id);

/* json_object_put() returns int, so it cannot be a GDestroyNotify. */
static inline void
qmp_json_unref(json_object *obj)
{
    json_object_put(obj);
}
G_DEFINE_AUTOPTR_CLEANUP_FUNC(json_object, qmp_json_unref)

/* Small accessors that tolerate a missing key or a wrong type. */
/* @v's text, or NULL when @v is not a string or holds a NUL character
 * ("a\u0000b"), which a C string would silently cut short. */
const char *qmp_json_string(json_object *v);
const char *qmp_json_get_string(json_object *obj, const char *key);
/* A signed integer; a number above INT64_MAX reads as INT64_MAX. */
gboolean qmp_json_get_int(json_object *obj, const char *key, gint64 *out);
/* An unsigned integer, the whole uint64 range (QEMU's uint64 members, such
 * as KVM statistics); FALSE for a negative number as for a missing one. */
gboolean qmp_json_get_uint(json_object *obj, const char *key, guint64 *out);
gboolean qmp_json_get_bool(json_object *obj, const char *key, gboolean *out);
