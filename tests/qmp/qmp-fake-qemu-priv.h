/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The fake QEMU's insides, shared by its two files: qmp-fake-qemu.c (the
 * connection, the script's runner) and qmp-fake-answer.c (what it says:
 * steps, replies checked against the schema, the model, the hostile
 * presets).  Every callback runs under f->lock, a recursive mutex, so a
 * responder may call the model's accessors.
 */
#pragma once

#include "pt-test-child.h"
#include "qmp-fake-qemu.h"
#include "qmp-fake-hostile.h"
#include "qmp-json.h"
#include "qmp-schema.h"
#include "qmp-stream.h"

#include <string.h>

typedef enum {
    STEP_SEND,          /* QMP, checked when scripted */
    STEP_RAW,           /* not QMP */
    STEP_REPEAT,        /* not QMP, again and again */
    STEP_HUGE,
    STEP_DRIP,
    STEP_EXPECT,
    STEP_SILENCE,
    STEP_WRONGLY,
    STEP_IGNORE_ALL,
    STEP_CLOSE,
} StepKind;

typedef struct {
    StepKind kind;
    char *command;
    char *args_json;
    char *data;             /* reply or bytes */
    gsize len;              /* of data: raw bytes may hold NULs */
    char *tail;             /* huge */
    gsize size;             /* huge */
    guint interval_ms;      /* drip, repeat */
    gboolean unchecked;     /* expect: a reply no captured QEMU sends */
} Step;

typedef enum {
    FAKE_ANSWER_SCRIPT,
    FAKE_ANSWER_WRONGLY,
    FAKE_ANSWER_NEVER,
} FakeAnswerMode;

typedef struct {
    char *id;
    guint tid;
    gint64 max_ns, grow, shrink;
    guint sets;
} FakeIothread;

struct QmpFakeQemu {
    GRecMutex lock;
    GMainContext *ctx;
    GThread *thread;
    gint stop;

    int fd;
    int listen_fd;
    /* listen(2) is made by a child of its own, so that a client's
     * SO_PEERCRED names a process per fake, as it names one per QEMU:
     * polltuned refuses a second socket of a process it has attached. */
    PtTestListener *listener;
    char *listen_path;
    GSource *listen_src, *in_src, *out_src, *timer_src;

    int major, minor, micro;
    const QmpSchema *schema;

    GPtrArray *script;      /* of Step */
    guint pos;
    gboolean replay;
    gboolean closed;        /* a close step ran on this connection */
    FakeAnswerMode mode;
    guint wrong_k;

    QmpStream *stream;
    GString *out;
    gsize out_pos;
    gsize huge_left;        /* bytes of a huge message still to generate */
    char *huge_tail;
    Step *timed;            /* the drip or repetition under way */
    const char *drip_pos;

    QmpFakeResponder responder;
    gpointer responder_data;
    GPtrArray *standing;    /* of Step (expect) */
    GArray *iothreads;      /* of FakeIothread */
    QmpFakeWrites writes_mode;
    char *refusal;
    GPtrArray *writes;      /* "ID PROP=VALUE" */

    gint received, connections;     /* atomic */
    guint64 sent;
    GString *failures;
};

void fake_step_free(Step *s);
void fake_fail(QmpFakeQemu *f, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void fake_write(QmpFakeQemu *f, const char *bytes);
void fake_write_len(QmpFakeQemu *f, const char *bytes, gsize len);
void fake_push(QmpFakeQemu *f, Step *s);

gboolean fake_args_match(json_object *got, const char *want_json);
/* Answer command @m with @reply (JSON text without "id"), checked
 * unless @unchecked. */
void fake_reply(QmpFakeQemu *f, QmpMessage *m, const char *reply, gboolean unchecked);
/* A command no expect step waits for. */
void fake_answer_unscripted(QmpFakeQemu *f, QmpMessage *m, const char *text);
