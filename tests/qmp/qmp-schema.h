/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * qmp-schema: what a real QEMU can answer, from its own introspection.
 *
 * tests/qmp/schema/qemu-X.Y.json.gz holds a real QEMU's query-version and
 * its query-qmp-schema (SchemaInfo entries, qapi/introspect.json), trimmed
 * to the commands polltune speaks, every event and the types they reach
 * (tests/qmp/capture-schema.py writes them).  The checks below walk those
 * entries: objects (members, their types, which are optional, a union's
 * variant chosen by its tag, no member QEMU does not have), arrays, enums,
 * alternates and the builtins (int, str, bool, number, null, any).
 *
 * A reply is judged together with the command it answers: a command this
 * QEMU lacks can only get CommandNotFound, arguments it would refuse only
 * an error, and an error's class is one of QapiErrorClass
 * (qapi/error.json), its members exactly class and desc.
 *
 * Errors follow STYLE.md: FALSE and @error, naming the command and the
 * place in the value ("query-iothreads: return[0].thread-id: ...").
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

typedef struct QmpSchema QmpSchema;

/* The capture for QEMU @major.@minor: the newest one not newer than it,
 * or the oldest for a QEMU older than every capture.  Loaded once per
 * process and kept; never NULL (a missing capture aborts the test). */
const QmpSchema *qmp_schema_for_version(int major, int minor);
/* A capture by file, for the schema's own tests. */
QmpSchema *qmp_schema_load(const char *path, GError **error);
void qmp_schema_free(QmpSchema *s);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(QmpSchema, qmp_schema_free)

/* "7.2.22": the QEMU that was captured. */
const char *qmp_schema_qemu(const QmpSchema *s);
gboolean qmp_schema_has_command(const QmpSchema *s, const char *command);

/* @reply is {"return": ...} or {"error": ...}, with or without "id";
 * @args is what the command carried (NULL: none, or not known yet). */
gboolean qmp_schema_check_reply(const QmpSchema *s, const char *command,
                                json_object *args, json_object *reply,
                                GError **error);
/* The arguments a command carried (NULL: none) as this QEMU takes them. */
gboolean qmp_schema_check_args(const QmpSchema *s, const char *command,
                               json_object *args, GError **error);
/* An event's "data" (NULL: none). */
gboolean qmp_schema_check_event(const QmpSchema *s, const char *event,
                                json_object *data, GError **error);

/* @reply (JSON text) with every member this QEMU always sends and it
 * lacks added, at its plainest (0, false, "", [], an enum's first value):
 * for a test that cares about a few members of a large reply. */
char *qmp_schema_fill_reply(const QmpSchema *s, const char *command, const char *reply);
