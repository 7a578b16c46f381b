/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "qmp-fake-qemu-priv.h"

#include <gio/gio.h>

/* Canned replies may nest as deep as a real QEMU's (a long backing chain
 * in query-blockstats), past json_tokener_parse()'s default of 32 levels. */
#define FAKE_REPLY_DEPTH 4096

static json_object *
fake_parse(const char *text)
{
    json_tokener *tok = json_tokener_new_ex(FAKE_REPLY_DEPTH);
    json_object *obj = json_tokener_parse_ex(tok, text, -1);

    if (json_tokener_get_error(tok) != json_tokener_success)
        g_clear_pointer(&obj, json_object_put);
    json_tokener_free(tok);
    return obj;
}

gboolean
fake_args_match(json_object *got, const char *want_json)
{
    g_autoptr(json_object) want = json_tokener_parse(want_json);

    return want && got && json_object_equal(got, want);
}

/* A reply the QEMU impersonated could not send is the test's own bug:
 * stop at once, saying which and why. */
static json_object *
fake_checked_reply(QmpFakeQemu *f, const char *command, json_object *args, const char *reply)
{
    g_autoptr(json_object) obj = fake_parse(reply);
    g_autoptr(GError) err = NULL;

    if (!obj)
        g_error("fake QEMU: the reply to %s is not JSON: %s", command, reply);
    if (!qmp_schema_check_reply(f->schema, command, args, obj, &err))
        g_error("fake QEMU %d.%d.%d could not send this reply: %s\n  reply: %.400s",
                f->major, f->minor, f->micro, err->message, reply);
    return g_steal_pointer(&obj);
}

/* Check a scripted reply when it is scripted, not when it is sent. */
static void
fake_check_scripted(QmpFakeQemu *f, const char *command, json_object *args, const char *reply)
{
    json_object_put(fake_checked_reply(f, command, args, reply));
}

static void
fake_write_message(QmpFakeQemu *f, json_object *msg)
{
    g_autofree char *wire = g_strconcat(json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN),
                                        "\r\n", NULL);

    fake_write(f, wire);
}

void
fake_reply(QmpFakeQemu *f, QmpMessage *m, const char *reply, gboolean unchecked)
{
    g_autoptr(json_object) obj = unchecked ? fake_parse(reply) :
                                 fake_checked_reply(f, m->name, m->body, reply);

    if (m->id)
        json_object_object_add(obj, "id", json_object_get(m->id));
    fake_write_message(f, obj);
}

/* ---- the iothread model ------------------------------------------------- */

static char *
model_query_iothreads(QmpFakeQemu *f)
{
    GString *r = g_string_sized_new(64 + f->iothreads->len * 128);

    g_string_append(r, "{\"return\": [");
    for (guint i = 0; i < f->iothreads->len; i++) {
        FakeIothread *io = &g_array_index(f->iothreads, FakeIothread, i);

        g_string_append_printf(r, "%s{\"id\": \"%s\", \"thread-id\": %u, \"poll-max-ns\": %"
                               G_GINT64_FORMAT ", \"poll-grow\": %" G_GINT64_FORMAT
                               ", \"poll-shrink\": %" G_GINT64_FORMAT ", \"aio-max-batch\": 0}",
                               i ? ", " : "", io->id, io->tid, io->max_ns, io->grow, io->shrink);
    }
    g_string_append(r, "]}");
    return g_string_free(r, FALSE);
}

static char *
model_error(const char *klass, const char *desc)
{
    g_autoptr(json_object) r = json_object_new_object();
    json_object *e = json_object_new_object();

    json_object_object_add(e, "class", json_object_new_string(klass));
    json_object_object_add(e, "desc", json_object_new_string(desc));
    json_object_object_add(r, "error", e);
    return g_strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN));
}

/* qom-set on /objects/ID of a modelled iothread; NULL for any other path. */
static char *
model_qom_set(QmpFakeQemu *f, json_object *args)
{
    const char *path = qmp_json_get_string(args, "path");
    const char *prop = qmp_json_get_string(args, "property");
    gint64 v = 0;

    if (!path || !g_str_has_prefix(path, "/objects/") || !prop)
        return NULL;
    for (guint i = 0; i < f->iothreads->len; i++) {
        FakeIothread *io = &g_array_index(f->iothreads, FakeIothread, i);
        gint64 *field = g_str_equal(prop, "poll-max-ns") ? &io->max_ns :
                        g_str_equal(prop, "poll-grow") ? &io->grow :
                        g_str_equal(prop, "poll-shrink") ? &io->shrink : NULL;

        if (!g_str_equal(path + strlen("/objects/"), io->id))
            continue;
        io->sets++;
        if (f->writes_mode == QMP_FAKE_WRITES_REFUSED)
            return model_error("GenericError", f->refusal);
        if (!field)
            return model_error("GenericError", "Property not found");
        qmp_json_get_int(args, "value", &v);
        g_ptr_array_add(f->writes, g_strdup_printf("%s %s=%" G_GINT64_FORMAT, io->id, prop, v));
        if (f->writes_mode == QMP_FAKE_WRITES_TAKE)
            *field = v;
        return g_strdup("{\"return\": {}}");
    }
    return NULL;
}

static char *
model_answer(QmpFakeQemu *f, QmpMessage *m)
{
    if (!f->iothreads->len)
        return NULL;
    if (g_str_equal(m->name, "query-iothreads"))
        return model_query_iothreads(f);
    if (g_str_equal(m->name, "qom-set"))
        return model_qom_set(f, m->body);
    return NULL;
}

/* ---- answers outside the script ----------------------------------------- */

/* Shapes no query asks for, from plain values to a thread id in text. */
static const char *const wrong_shapes[] = {
    "42", "\"text\"", "null", "{\"unexpected\": [1, 2, 3]}",
    "[{\"id\": 7, \"thread-id\": \"not a number\"}]",
    "[{\"device\": {}, \"stats\": [1]}]", "[[], {}, 1.5e308]",
};

static void
fake_answer_wrongly_to(QmpFakeQemu *f, QmpMessage *m)
{
    const char *ret = g_str_equal(m->name, "qmp_capabilities") ? "{}" :
                      wrong_shapes[f->wrong_k++ % G_N_ELEMENTS(wrong_shapes)];
    g_autofree char *wire = g_strdup_printf("{\"return\": %s%s%s}\r\n", ret,
                                            m->id ? ", \"id\": " : "",
                                            m->id ? json_object_to_json_string(m->id) : "");

    fake_write(f, wire);
}

void
fake_answer_unscripted(QmpFakeQemu *f, QmpMessage *m, const char *text)
{
    g_autofree char *answer = NULL;

    if (f->mode == FAKE_ANSWER_NEVER)
        return;
    if (f->mode == FAKE_ANSWER_WRONGLY) {
        fake_answer_wrongly_to(f, m);
        return;
    }
    if (f->responder)
        answer = f->responder(m->name, m->body, f->responder_data);
    if (!answer)
        answer = model_answer(f, m);
    for (guint i = 0; !answer && i < f->standing->len; i++) {
        Step *s = f->standing->pdata[i];

        if (g_str_equal(s->command, m->name) &&
            (!s->args_json || fake_args_match(m->body, s->args_json)))
            answer = g_strdup(s->data);
    }
    if (!answer) {
        fake_fail(f, "unexpected command: %s", text);
        return;
    }
    fake_reply(f, m, answer, FALSE);
}

void
qmp_fake_qemu_set_responder(QmpFakeQemu *f, QmpFakeResponder fn, gpointer user_data)
{
    g_assert_null(f->thread);
    f->responder = fn;
    f->responder_data = user_data;
}

static Step *
step_new(StepKind kind, const char *command, const char *args_json, const char *data)
{
    Step *s = g_new0(Step, 1);

    s->kind = kind;
    s->command = g_strdup(command);
    s->args_json = g_strdup(args_json);
    s->data = g_strdup(data);
    s->len = data ? strlen(data) : 0;
    return s;
}

/* Arguments as scripted, for the check of the reply (NULL: any). */
static json_object *
step_args(const char *command, const char *args_json)
{
    json_object *args = args_json ? json_tokener_parse(args_json) : NULL;

    if (args_json && !args)
        g_error("fake QEMU: the arguments scripted for %s are not JSON: %s", command, args_json);
    return args;
}

void
qmp_fake_answer(QmpFakeQemu *f, const char *command, const char *args_json, const char *reply)
{
    g_autoptr(json_object) args = step_args(command, args_json);

    fake_check_scripted(f, command, args, reply);
    g_assert_null(f->thread);
    g_ptr_array_add(f->standing, step_new(STEP_EXPECT, command, args_json, reply));
}

void
qmp_fake_answer_idle(QmpFakeQemu *f)
{
    qmp_fake_answer(f, "query-name", NULL, "{\"return\": {}}");
    qmp_fake_answer(f, "query-kvm", NULL, "{\"return\": {\"enabled\": false, \"present\": false}}");
    qmp_fake_answer(f, "query-blockstats", NULL, "{\"return\": []}");
    qmp_fake_answer(f, "query-stats", NULL, "{\"return\": []}");
    qmp_fake_answer(f, "qom-get", NULL,
                    "{\"error\": {\"class\": \"DeviceNotFound\", \"desc\": \"no such device\"}}");
}

/* ---- script ------------------------------------------------------------- */

void
qmp_fake_expect(QmpFakeQemu *f, const char *command, const char *args_json, const char *reply)
{
    g_autoptr(json_object) args = step_args(command, args_json);

    fake_check_scripted(f, command, args, reply);
    fake_push(f, step_new(STEP_EXPECT, command, args_json, reply));
}

char *
qmp_fake_qemu_fill(QmpFakeQemu *f, const char *command, const char *reply)
{
    return qmp_schema_fill_reply(f->schema, command, reply);
}

void
qmp_fake_expect_filled(QmpFakeQemu *f, const char *command, const char *args_json,
                       const char *reply)
{
    g_autofree char *full = qmp_schema_fill_reply(f->schema, command, reply);

    qmp_fake_expect(f, command, args_json, full);
}

void
qmp_fake_expect_unchecked(QmpFakeQemu *f, const char *command, const char *args_json,
                          const char *reply)
{
    g_autoptr(json_object) obj = fake_parse(reply);
    Step *s = step_new(STEP_EXPECT, command, args_json, reply);

    if (!obj)
        g_error("fake QEMU: the reply to %s is not JSON: %s", command, reply);
    s->unchecked = TRUE;
    fake_push(f, s);
}

void
qmp_fake_expect_silence(QmpFakeQemu *f, const char *command)
{
    fake_push(f, step_new(STEP_SILENCE, command, NULL, NULL));
}

void
qmp_fake_handshake_version(QmpFakeQemu *f, int major, int minor, int micro)
{
    g_autofree char *greeting = NULL;

    qmp_fake_qemu_set_version(f, major, minor, micro);
    greeting = g_strdup_printf("{\"QMP\": {\"version\": {\"qemu\": {\"micro\": %d, \"minor\": %d, "
                               "\"major\": %d}, \"package\": \"fake\"}, \"capabilities\": "
                               "[\"oob\"]}}\r\n", micro, minor, major);
    fake_push(f, step_new(STEP_SEND, NULL, NULL, greeting));
    qmp_fake_expect(f, "qmp_capabilities", NULL, "{\"return\": {}}");
}

void
qmp_fake_handshake(QmpFakeQemu *f)
{
    qmp_fake_handshake_version(f, f->major, f->minor, f->micro);
}

void
qmp_fake_event(QmpFakeQemu *f, const char *name, const char *data_json, gint64 timestamp_us)
{
    g_autoptr(json_object) data = data_json ? fake_parse(data_json) : NULL;
    g_autoptr(json_object) ev = json_object_new_object();
    g_autoptr(GError) err = NULL;
    gint64 now = timestamp_us ? timestamp_us : g_get_real_time();
    json_object *ts = json_object_new_object();
    g_autofree char *wire = NULL;

    if (data_json && !data)
        g_error("fake QEMU: the data of event %s is not JSON: %s", name, data_json);
    if (!qmp_schema_check_event(f->schema, name, data, &err))
        g_error("fake QEMU %d.%d.%d could not send this event: %s", f->major, f->minor,
                f->micro, err->message);
    json_object_object_add(ev, "event", json_object_new_string(name));
    if (data)
        json_object_object_add(ev, "data", json_object_get(data));
    json_object_object_add(ts, "seconds", json_object_new_int64(now / G_USEC_PER_SEC));
    json_object_object_add(ts, "microseconds", json_object_new_int64(now % G_USEC_PER_SEC));
    json_object_object_add(ev, "timestamp", ts);
    wire = g_strconcat(json_object_to_json_string_ext(ev, JSON_C_TO_STRING_PLAIN), "\r\n", NULL);
    fake_push(f, step_new(STEP_SEND, NULL, NULL, wire));
}

void
qmp_fake_send_reply(QmpFakeQemu *f, const char *command, const char *reply_json)
{
    g_autofree char *wire = g_strconcat(reply_json, "\r\n", NULL);

    fake_check_scripted(f, command, NULL, reply_json);
    fake_push(f, step_new(STEP_SEND, NULL, NULL, wire));
}

void
qmp_fake_send_raw(QmpFakeQemu *f, const char *bytes)
{
    fake_push(f, step_new(STEP_RAW, NULL, NULL, bytes));
}

void
qmp_fake_send_raw_repeat(QmpFakeQemu *f, const char *bytes, gsize len, guint interval_ms)
{
    Step *s = step_new(STEP_REPEAT, NULL, NULL, NULL);

    s->data = g_memdup2(bytes, len);
    s->len = len;
    s->interval_ms = interval_ms;
    fake_push(f, s);
}

void
qmp_fake_send_huge(QmpFakeQemu *f, const char *head, gsize size, const char *tail)
{
    Step *s = step_new(STEP_HUGE, NULL, NULL, head);

    s->size = size;
    s->tail = g_strdup(tail);
    fake_push(f, s);
}

void
qmp_fake_drip(QmpFakeQemu *f, const char *bytes, guint interval_ms)
{
    Step *s = step_new(STEP_DRIP, NULL, NULL, bytes);

    s->interval_ms = interval_ms;
    fake_push(f, s);
}

void
qmp_fake_answer_wrongly(QmpFakeQemu *f)
{
    fake_push(f, step_new(STEP_WRONGLY, NULL, NULL, NULL));
}

void
qmp_fake_ignore_all(QmpFakeQemu *f)
{
    fake_push(f, step_new(STEP_IGNORE_ALL, NULL, NULL, NULL));
}

void
qmp_fake_close(QmpFakeQemu *f)
{
    fake_push(f, step_new(STEP_CLOSE, NULL, NULL, NULL));
}

/* ---- the model's accessors ---------------------------------------------- */

void
qmp_fake_qemu_add_iothreads(QmpFakeQemu *f, const char *prefix, guint n, guint first_tid)
{
    g_rec_mutex_lock(&f->lock);
    for (guint i = 0; i < n; i++) {
        FakeIothread io = {
            .id = g_strdup_printf("%s%u", prefix, i), .tid = first_tid + i,
            .max_ns = 32768, .grow = 0, .shrink = 0,
        };

        g_array_append_val(f->iothreads, io);
    }
    g_rec_mutex_unlock(&f->lock);
}

void
qmp_fake_qemu_set_writes(QmpFakeQemu *f, QmpFakeWrites writes, const char *refusal)
{
    g_rec_mutex_lock(&f->lock);
    f->writes_mode = writes;
    g_free(f->refusal);
    f->refusal = g_strdup(refusal ? refusal : "Property is not writable");
    g_rec_mutex_unlock(&f->lock);
}

void
qmp_fake_qemu_iothread(QmpFakeQemu *f, guint i, gint64 *max_ns, gint64 *grow, gint64 *shrink)
{
    FakeIothread *io;

    g_rec_mutex_lock(&f->lock);
    g_assert_cmpuint(i, <, f->iothreads->len);
    io = &g_array_index(f->iothreads, FakeIothread, i);
    if (max_ns)
        *max_ns = io->max_ns;
    if (grow)
        *grow = io->grow;
    if (shrink)
        *shrink = io->shrink;
    g_rec_mutex_unlock(&f->lock);
}

guint
qmp_fake_qemu_iothread_sets(QmpFakeQemu *f, guint i)
{
    guint n;

    g_rec_mutex_lock(&f->lock);
    g_assert_cmpuint(i, <, f->iothreads->len);
    n = g_array_index(f->iothreads, FakeIothread, i).sets;
    g_rec_mutex_unlock(&f->lock);
    return n;
}

GStrv
qmp_fake_qemu_writes(QmpFakeQemu *f)
{
    GStrv out;

    g_rec_mutex_lock(&f->lock);
    out = g_new0(char *, f->writes->len + 1);
    for (guint i = 0; i < f->writes->len; i++)
        out[i] = g_strdup(f->writes->pdata[i]);
    g_rec_mutex_unlock(&f->lock);
    return out;
}
