/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Unit tests of the QMP stream splitter and the message codec. */
#include "qmp-error.h"
#include "qmp-json.h"
#include "qmp-stream.h"

typedef struct {
    GPtrArray *msgs;
} Collect;

static gboolean
collect(const char *msg, gsize len, gpointer data, GError **error)
{
    Collect *c = data;

    g_assert_cmpuint(strlen(msg), ==, len);
    g_ptr_array_add(c->msgs, g_strdup(msg));
    return TRUE;
}

static QmpStream *
new_stream(Collect *c, gsize max, guint depth)
{
    c->msgs = g_ptr_array_new_with_free_func(g_free);
    return qmp_stream_new(max, depth, collect, c);
}

static void
test_stream_split_anywhere(void)
{
    const char *input =
        "{\"QMP\": {\"v\": 1}}\r\n"
        "  {\"return\": {\"s\": \"a } ] { [ \\\" \\\\\"}, \"id\": 1}\n"
        "{\"event\": \"X\", \"data\": [1, [2, {\"k\": []}]]}";
    gsize len = strlen(input);

    /* Every split point, and one byte at a time, must give the same three. */
    for (gsize cut = 0; cut <= len; cut++) {
        Collect c;
        g_autoptr(QmpStream) s = new_stream(&c, 4096, 16);
        g_autoptr(GError) err = NULL;

        g_assert_true(qmp_stream_feed(s, input, cut, &err));
        g_assert_true(qmp_stream_feed(s, input + cut, len - cut, &err));
        g_assert_no_error(err);
        g_assert_cmpuint(c.msgs->len, ==, 3);
        g_assert_cmpstr(c.msgs->pdata[0], ==, "{\"QMP\": {\"v\": 1}}");
        g_assert_true(g_str_has_suffix(c.msgs->pdata[1], "\"id\": 1}"));
        g_assert_cmpuint(qmp_stream_pending(s), ==, 0);
        g_ptr_array_unref(c.msgs);
    }
    {
        Collect c;
        g_autoptr(QmpStream) s = new_stream(&c, 4096, 16);

        for (gsize i = 0; i < len; i++)
            g_assert_true(qmp_stream_feed(s, input + i, 1, NULL));
        g_assert_cmpuint(c.msgs->len, ==, 3);
        g_ptr_array_unref(c.msgs);
    }
}

static void
test_stream_rejects_non_object(void)
{
    const char *bad[] = { "[1]", "42", "\"str\"", "null", "}", "\x01garbage" };

    for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
        Collect c;
        g_autoptr(QmpStream) s = new_stream(&c, 4096, 16);
        g_autoptr(GError) err = NULL;
        g_autoptr(GError) again = NULL;

        g_assert_false(qmp_stream_feed(s, bad[i], strlen(bad[i]), &err));
        g_assert_error(err, QMP_ERROR, QMP_ERROR_PROTOCOL);
        /* Poisoned: a valid message afterwards is refused too. */
        g_assert_false(qmp_stream_feed(s, "{}", 2, &again));
        g_assert_error(again, QMP_ERROR, QMP_ERROR_PROTOCOL);
        g_assert_cmpuint(c.msgs->len, ==, 0);
        g_ptr_array_unref(c.msgs);
    }
}

static void
test_stream_size_limit(void)
{
    Collect c;
    g_autoptr(QmpStream) s = new_stream(&c, 100, 16);
    g_autoptr(GError) err = NULL;
    g_autofree char *big = g_strnfill(64, 'x');

    /* A message of exactly the limit passes... */
    {
        g_autofree char *fill = g_strnfill(100 - 9, 'z');
        g_autofree char *msg = g_strdup_printf("{\"k\": \"%s\"}", fill);

        g_assert_cmpuint(strlen(msg), ==, 100);
        g_assert_true(qmp_stream_feed(s, msg, strlen(msg), &err));
        g_assert_no_error(err);
    }
    /* ...one byte more fails, even when fed in small pieces. */
    g_assert_true(qmp_stream_feed(s, "{\"k\": \"", 7, NULL));
    g_assert_true(qmp_stream_feed(s, big, 64, NULL));
    g_assert_false(qmp_stream_feed(s, big, 64, &err));
    g_assert_error(err, QMP_ERROR, QMP_ERROR_TOO_BIG);
    g_assert_cmpuint(qmp_stream_pending(s), ==, 0);
    g_assert_cmpuint(c.msgs->len, ==, 1);
    g_ptr_array_unref(c.msgs);
}

static void
test_stream_depth_limit(void)
{
    Collect c;
    g_autoptr(QmpStream) s = new_stream(&c, 1 << 20, 8);
    g_autoptr(GError) err = NULL;
    g_autofree char *ok = g_strconcat("{\"a\":", "[[[[[[[", "]]]]]]]", "}", NULL);
    g_autofree char *deep = g_strnfill(100000, '[');

    g_assert_true(qmp_stream_feed(s, ok, strlen(ok), &err));
    g_assert_cmpuint(c.msgs->len, ==, 1);
    g_assert_false(qmp_stream_feed(s, "{\"a\":", 5, &err) &&
                   qmp_stream_feed(s, deep, strlen(deep), &err));
    g_assert_error(err, QMP_ERROR, QMP_ERROR_TOO_DEEP);
    g_ptr_array_unref(c.msgs);
}

static void
test_message_classify(void)
{
    struct {
        const char *text;
        QmpMessageKind kind;
        const char *name;
    } cases[] = {
        { "{\"QMP\": {\"version\": {}, \"capabilities\": []}}", QMP_MESSAGE_GREETING, NULL },
        { "{\"return\": {}, \"id\": 3, \"future-key\": true}", QMP_MESSAGE_RETURN, NULL },
        { "{\"error\": {\"class\": \"GenericError\", \"desc\": \"d\"}}", QMP_MESSAGE_ERROR, "GenericError" },
        { "{\"event\": \"STOP\", \"timestamp\": {\"seconds\": 2, \"microseconds\": 5}}", QMP_MESSAGE_EVENT, "STOP" },
        { "{\"execute\": \"status\", \"arguments\": {}, \"id\": \"x\"}", QMP_MESSAGE_COMMAND, "status" },
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(QmpMessage) m = qmp_message_parse(cases[i].text, strlen(cases[i].text), 8, &err);

        g_assert_no_error(err);
        g_assert_cmpint(m->kind, ==, cases[i].kind);
        g_assert_cmpstr(m->name, ==, cases[i].name);
        if (m->kind == QMP_MESSAGE_EVENT)
            g_assert_cmpint(m->timestamp_us, ==, 2000005);
    }
}

static void
test_message_invalid(void)
{
    struct {
        const char *text;
        gint code;
    } cases[] = {
        { "{\"return\": {}, }", QMP_ERROR_PROTOCOL },            /* trailing comma: strict */
        { "{\"return\": \"\xff\xfe\"}", QMP_ERROR_PROTOCOL },    /* not UTF-8 */
        { "{\"return\": tru}", QMP_ERROR_PROTOCOL },
        { "{\"hello\": 1}", QMP_ERROR_PROTOCOL },                 /* no known key */
        { "{\"error\": \"oops\"}", QMP_ERROR_PROTOCOL },          /* error without class */
        { "{\"event\": 5}", QMP_ERROR_PROTOCOL },
        { "{\"execute\": \"x\", \"arguments\": [1]}", QMP_ERROR_PROTOCOL },
        { "{\"return\": [[[[[[[[[[[[1]]]]]]]]]]]]}", QMP_ERROR_TOO_DEEP },
        { "{\"return\": {}} {}", QMP_ERROR_PROTOCOL },            /* trailing bytes */
        { "{\"return\": {", QMP_ERROR_PROTOCOL },                 /* incomplete */
    };

    for (guint i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        g_autoptr(QmpMessage) m = qmp_message_parse(cases[i].text, strlen(cases[i].text), 8, &err);

        g_assert_null(m);
        g_assert_error(err, QMP_ERROR, cases[i].code);
    }
}

static void
test_message_build(void)
{
    g_autoptr(json_object) args = json_object_new_object();
    g_autoptr(json_object) id = json_object_new_int(7);
    g_autofree char *cmd = NULL, *ret = NULL, *err = NULL;

    json_object_object_add(args, "path", json_object_new_string("/objects/iot0"));
    cmd = qmp_message_build_command("qom-get", args, id);
    g_assert_cmpstr(cmd, ==, "{\"execute\":\"qom-get\",\"arguments\":{\"path\":\"/objects/iot0\"},\"id\":7}\n");
    ret = qmp_message_build_return(NULL, id);
    g_assert_cmpstr(ret, ==, "{\"return\":{},\"id\":7}\n");
    err = qmp_message_build_error("GenericError", "no \"such\" thing", NULL);
    g_assert_cmpstr(err, ==, "{\"error\":{\"class\":\"GenericError\",\"desc\":\"no \\\"such\\\" thing\"}}\n");
    /* Borrowed arguments keep their reference. */
    g_assert_cmpint(json_object_put(json_object_get(args)), ==, 0);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/qmp/stream/split-anywhere", test_stream_split_anywhere);
    g_test_add_func("/qmp/stream/rejects-non-object", test_stream_rejects_non_object);
    g_test_add_func("/qmp/stream/size-limit", test_stream_size_limit);
    g_test_add_func("/qmp/stream/depth-limit", test_stream_depth_limit);
    g_test_add_func("/qmp/message/classify", test_message_classify);
    g_test_add_func("/qmp/message/invalid", test_message_invalid);
    g_test_add_func("/qmp/message/build", test_message_build);
    return g_test_run();
}
