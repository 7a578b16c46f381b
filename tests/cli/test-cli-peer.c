/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl against a scripted control-socket peer.
 *
 * The peer below is NOT polltuned: it replays canned lines shaped as in
 * docs/CONTROL.md, so these tests exercise only polltunectl's side of the
 * wire: framing, request shapes, EXPORT_DATA streaming, output formatting,
 * and what happens when the peer misbehaves (a truncated reply, a closed
 * connection, silence, garbage, a QEMU monitor instead of polltuned).
 * Whether the real daemon answers as documented is for the tests that run
 * polltunectl against a running polltuned.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli-testdb.h"
#include "qmp-json.h"
#include "store-testutil.h"

#define GREETING "{\"QMP\": {\"version\": {\"polltune\": {\"major\": 0, \"minor\": 1, " \
                 "\"micro\": 0}, \"protocol\": 1}, \"capabilities\": []}}\n"

/* One request the peer expects and the text it sends back; "@ID@" in a
 * piece is replaced by the request's id. */
typedef struct {
    const char *execute;
    const char *const *pieces;
} PeerStep;

typedef struct {
    const char *greeting;       /* NULL: the daemon's */
    gboolean silent;            /* send nothing at all */
    const PeerStep *steps;
    guint n_steps;
    /* filled by the peer */
    GPtrArray *requests;        /* json_object, as received */
    char *failure;
} PeerScript;

typedef struct {
    char *dir;
    char *path;
    int listen_fd;
    GThread *thread;
    PeerScript *script;
} Peer;

static gboolean
read_line(int fd, GString *line)
{
    char c;

    g_string_truncate(line, 0);
    for (;;) {
        ssize_t n = recv(fd, &c, 1, 0);

        if (n <= 0)
            return FALSE;
        if (c == '\n')
            return TRUE;
        g_string_append_c(line, c);
    }
}

static void
send_text(int fd, const char *text)
{
    gsize len = strlen(text);

    while (len > 0) {
        ssize_t n = send(fd, text, len, MSG_NOSIGNAL);

        if (n <= 0)
            return;
        text += n;
        len -= (gsize)n;
    }
}

static gpointer
peer_main(gpointer data)
{
    Peer *p = data;
    PeerScript *s = p->script;
    g_autoptr(GString) line = g_string_new(NULL);
    int fd = accept(p->listen_fd, NULL, NULL);

    if (fd < 0) {
        s->failure = g_strdup_printf("accept: %s", g_strerror(errno));
        return NULL;
    }
    if (s->silent) {
        /* Hold the connection open until the client gives up. */
        while (recv(fd, line->str, 1, 0) > 0)
            ;
        close(fd);
        return NULL;
    }
    send_text(fd, s->greeting ? s->greeting : GREETING);
    for (guint i = 0; i < s->n_steps; i++) {
        const PeerStep *step = &s->steps[i];
        json_object *req, *id;
        const char *execute;
        g_autofree char *id_text = NULL;

        if (!read_line(fd, line)) {
            s->failure = g_strdup_printf("step %u: no request (expected %s)", i, step->execute);
            break;
        }
        req = json_tokener_parse(line->str);
        g_ptr_array_add(s->requests, req);
        execute = qmp_json_get_string(req, "execute");
        if (g_strcmp0(execute, step->execute) != 0) {
            s->failure = g_strdup_printf("step %u: got %s, expected %s", i, line->str,
                                         step->execute);
            break;
        }
        id = json_object_object_get_ex(req, "id", &id) ? id : NULL;
        id_text = g_strdup(id ? json_object_to_json_string(id) : "null");
        for (const char *const *piece = step->pieces; piece && *piece; piece++) {
            g_auto(GStrv) parts = g_strsplit(*piece, "@ID@", -1);
            g_autofree char *text = g_strjoinv(id_text, parts);

            send_text(fd, text);
            /* Separate writes, so the client sees the pieces as they are. */
            g_usleep(2000);
        }
    }
    close(fd);
    return NULL;
}

static void
peer_start(Peer *p, PeerScript *script)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };

    p->script = script;
    script->requests = g_ptr_array_new_with_free_func((GDestroyNotify)qmp_json_unref);
    p->dir = test_dir_new();
    p->path = g_build_filename(p->dir, "control.sock", NULL);
    g_assert_cmpuint(strlen(p->path), <, sizeof(addr.sun_path));
    strcpy(addr.sun_path, p->path);
    p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert_cmpint(p->listen_fd, >=, 0);
    g_assert_cmpint(bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)), ==, 0);
    g_assert_cmpint(listen(p->listen_fd, 4), ==, 0);
    p->thread = g_thread_new("peer", peer_main, p);
}

static void
peer_finish(Peer *p)
{
    g_thread_join(p->thread);
    close(p->listen_fd);
    if (p->script->failure)
        g_error("peer: %s", p->script->failure);
    test_dir_remove(p->dir);
    g_free(p->dir);
    g_free(p->path);
}

static void
script_clear(PeerScript *s)
{
    g_clear_pointer(&s->requests, g_ptr_array_unref);
    g_clear_pointer(&s->failure, g_free);
}

/* Runs polltunectl --socket PEER ARGS... against @script. */
static void
run_against(PeerScript *script, CliRun *r, const char *const *args)
{
    Peer p = { 0 };
    g_autoptr(GPtrArray) argv = g_ptr_array_new();

    peer_start(&p, script);
    g_ptr_array_add(argv, (char *)"--socket");
    g_ptr_array_add(argv, p.path);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    cli_run(r, (const char *const *)argv->pdata);
    peer_finish(&p);
}

static json_object *
request_args(PeerScript *s, guint i)
{
    json_object *req = g_ptr_array_index(s->requests, i), *args = NULL;

    g_assert_true(json_object_object_get_ex(req, "arguments", &args));
    return args;
}

/* The status reply of docs/CONTROL.md, with a target and a broken one. */
#define STATUS_RETURN                                                                       \
    "{\"mode\": \"enforce\", \"interval_ms\": 1000, \"uptime_s\": 3600, \"ticks\": 3600,"   \
    " \"overruns\": 0, \"last_tick_ms\": 3.2, \"store\": {\"path\": "                       \
    "\"/var/lib/polltune/history.db\", \"health\": \"ok\", \"pending\": 0, \"dropped\": 0},"\
    " \"host\": {\"psi_some_avg10\": 0.5, \"cpu_busy_pct\": 37.0, \"polling_cores\": 0.21," \
    " \"budget_cores\": 1.0}, \"targets\": [{\"name\": \"vm-3\", \"kind\": \"libvirt\","    \
    " \"state\": \"attached\", \"pid\": 1234, \"late_ticks\": 3,"                            \
    " \"policy\": \"adaptive:balanced\","                                                    \
    " \"iothreads\": [{\"id\": \"iothread1\", \"tid\": 1240, \"triple\": {\"poll-max-ns\":" \
    " 32768, \"poll-grow\": 0, \"poll-shrink\": 0}, \"policy\": \"adaptive:balanced\","     \
    " \"override\": null, \"metrics\": {\"ts_ms\": 1764690000000, \"iops\": 2410.0,"        \
    " \"rd_iops\": 2410.0, \"wr_iops\": 0.0, \"flush_iops\": 0.0, \"mbps\": 9.87,"          \
    " \"lat_us\": 402.1, \"queue_depth\": 0.97, \"cpu_pct\": 14.2, \"blocks_per_s\": 2380.0,"\
    " \"blocks_per_op\": 0.99, \"run_delay_pct\": 0.3, \"exits_per_s\": 2500.0,"            \
    " \"exits_per_op\": 1.04}, \"last_decision\": {\"ts_ms\": 1764690000000, \"target\":"   \
    " \"vm-3\", \"iothread\": \"iothread1\", \"policy\": \"adaptive:balanced\", \"cause\":" \
    " \"probe\", \"old\": {\"poll-max-ns\": 16384, \"poll-grow\": 0, \"poll-shrink\": 0},"  \
    " \"new\": {\"poll-max-ns\": 32768, \"poll-grow\": 0, \"poll-shrink\": 0}, \"applied\":"\
    " true, \"outcome\": \"applied\", \"reason\": \"probe: IOPS +31% for 2% CPU\","         \
    " \"evidence\": \"iops=2410 cpu=14.2\"}}]}, {\"name\": \"db-1\", \"kind\": \"qmp\","   \
    " \"state\": \"lost\", \"state_reason\": \"db-1: greeting: no QMP member; attempt 3"    \
    " failed, the next in 4 s\", \"pid\": 0, \"policy\": \"adaptive:balanced\","             \
    " \"iothreads\": []}]}"

static void
test_status(void)
{
    static const char *const reply[] = { "{\"return\": " STATUS_RETURN ", \"id\": @ID@}\n",
                                         NULL };
    static const PeerStep steps[] = { { "status", reply } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };
    g_autoptr(json_object) want = json_tokener_parse(STATUS_RETURN);
    g_autoptr(json_object) got = NULL;

    run_against(&s, &r, (const char *[]){ "status", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_str_has_prefix(r.out, "mode    enforce \302\267 up 1h0m"));
    g_assert_nonnull(strstr(r.out, "polling 0.21 of 1.00 cores budget"));
    g_assert_nonnull(strstr(r.out, "vm-3/iothread1  attached"));
    g_assert_nonnull(strstr(r.out, "adaptive:balanced  2.41k"));
    g_assert_nonnull(strstr(r.out, "402.1   14.2    0.99     1.04"));
    g_assert_nonnull(strstr(r.out, "16384 \342\206\222 32768  probe: IOPS +31% for 2% CPU"));
    /* A target that is not healthy says why. */
    g_assert_nonnull(strstr(r.out, "\nNot healthy\n"));
    g_assert_nonnull(strstr(r.out, "db-1  lost   db-1: greeting: no QMP member; attempt 3 failed"));
    /* Nor is one whose samples miss the tick. */
    g_assert_nonnull(strstr(r.out, "vm-3  late   no sample for the last 3 ticks: its answers "
                                   "come after the tick's deadline; not tuned meanwhile"));
    script_clear(&s);

    run_against(&s, &r, (const char *[]){ "status", "--json", NULL });
    g_assert_cmpint(r.status, ==, 0);
    got = json_tokener_parse(r.out);
    g_assert_true(json_object_equal(got, want));
    script_clear(&s);
    cli_run_clear(&r);
}

/* Runs `explain vm-9` against a peer that answers with @reply; it succeeds. */
static void
run_explain(const char *reply, CliRun *r)
{
    const char *replies[] = { reply, NULL };
    PeerStep steps[] = { { "explain", replies } };
    PeerScript x = { .steps = steps, .n_steps = 1 };

    run_against(&x, r, (const char *[]){ "explain", "vm-9", NULL });
    g_assert_cmpint(r->status, ==, 0);
    script_clear(&x);
}

/*
 * What a peer wrote is printed with its control characters written out:
 * a QMP error description relayed by the daemon (an override's failure,
 * a decision's outcome), whose ESC and BEL would otherwise set the
 * terminal's title and clear its screen.
 */
static void
test_peer_text_escaped(void)
{
    static const char *const explain_replies[] = {
        "{\"return\": {\"target\": \"/run/vm-9.qmp\", \"display_name\": "
        "\"vm\\u001b]0;x\\u0007-9\", \"state\": \"lost\", \"iothreads\": []}, "
        "\"id\": @ID@}\n",
        "{\"return\": {\"target\": \"/run/vm-9.qmp\", \"iothreads\": [{\"target\": "
        "\"/run/vm-9.qmp\", \"display_name\": \"vm\\u001b]0;x\\u0007-9\", "
        "\"iothread\": \"iot0\", \"policy\": \"off\", \"mode\": \"auto\"}]}, "
        "\"id\": @ID@}\n",
    };
    g_autoptr(GString) ret = g_string_new("{\"return\": " STATUS_RETURN ", \"id\": @ID@}\n");
    const char *status_reply[] = { NULL, NULL };
    static const char *const error_reply[] = {
        "{\"error\": {\"class\": \"GenericError\", \"desc\": \"vm-3: qom-set: QMP error "
        "GenericError: bad\\n10:00:00.000 polltuned info: forged\\u001b]0;owned\\u0007"
        "\\u001b[2J\\u009b\"}, \"id\": @ID@}\n",
        NULL,
    };
    PeerStep steps[] = { { "status", status_reply } };
    static const PeerStep err_steps[] = { { "detach", error_reply } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    PeerScript e = { .steps = err_steps, .n_steps = 1 };
    CliRun r = { 0 };

    g_assert_cmpuint(g_string_replace(ret, "\"outcome\": \"applied\"",
                                      "\"outcome\": \"failed: QMP error: no\\u001b[31m red"
                                      "\\u0007\\nforged line\"", 1), ==, 1);
    g_assert_cmpuint(g_string_replace(ret, "\"name\": \"db-1\"",
                                      "\"name\": \"db\\u001b]0;x\\u0007-1\"", 1), ==, 1);
    status_reply[0] = ret->str;
    run_against(&s, &r, (const char *[]){ "status", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_null(strchr(r.out, '\033'));
    g_assert_null(strchr(r.out, '\007'));
    g_assert_nonnull(strstr(r.out, "db\\x1b]0;x\\x07-1"));
    g_assert_null(strstr(r.out, "\nforged line"));
    script_clear(&s);

    run_against(&e, &r, (const char *[]){ "detach", "vm-3", NULL });
    g_assert_cmpint(r.status, ==, 1);
    g_assert_null(strchr(r.err, '\033'));
    g_assert_null(strchr(r.err, '\007'));
    g_assert_null(strstr(r.err, "\302\233"));
    g_assert_nonnull(strstr(r.err, "bad\\n10:00:00.000 polltuned info: forged\\x1b]0;owned"
                                   "\\x07\\x1b[2J\\u009b"));
    /* One line. */
    g_assert_cmpint(strchr(r.err, '\n') - r.err, ==, strlen(r.err) - 1);
    script_clear(&e);

    /* The name a QMP target goes by is QEMU's -name, a peer's text too. */
    for (guint i = 0; i < G_N_ELEMENTS(explain_replies); i++) {
        run_explain(explain_replies[i], &r);
        g_assert_null(strchr(r.out, '\033'));
        g_assert_null(strchr(r.out, '\007'));
        g_assert_true(g_str_has_prefix(r.out, "vm\\x1b]0;x\\x07-9"));
    }
    cli_run_clear(&r);
}

/*
 * explain prints what the workload memory says and how many workloads it
 * holds (the reply's "memory" and "memory_entries"), escaped as any
 * peer's text; a policy without a memory prints no such line.
 */
static void
test_explain_memory(void)
{
    static const char reply_mem[] =
        "{\"return\": {\"target\": \"vm-9\", \"iothreads\": [{\"target\": \"vm-9\", "
        "\"iothread\": \"iot0\", \"policy\": \"adaptive:balanced\", \"mode\": \"enforce\", "
        "\"memory\": \"remembered: workload q\\u001b1, best 0/0/0\", \"memory_entries\": 2}]}, "
        "\"id\": @ID@}\n";
    static const char reply_none[] =
        "{\"return\": {\"target\": \"vm-9\", \"iothreads\": [{\"target\": \"vm-9\", "
        "\"iothread\": \"iot0\", \"policy\": \"off\", \"mode\": \"enforce\", "
        "\"memory\": null, \"memory_entries\": 0}]}, \"id\": @ID@}\n";
    const char *const replies[] = { reply_mem, reply_none };
    CliRun r = { 0 };

    for (guint i = 0; i < G_N_ELEMENTS(replies); i++) {
        run_explain(replies[i], &r);
        if (i == 0)
            g_assert_nonnull(strstr(r.out, "\n  memory        remembered: workload q\\x1b1, "
                                           "best 0/0/0; 2 workloads remembered\n"));
        else
            g_assert_null(strstr(r.out, "  memory  "));
    }
    cli_run_clear(&r);
}

/* A budget of 0 is "none set": it used to read "polling 0.21 of 0.00
 * cores budget". */
static void
test_status_no_budget(void)
{
    g_autoptr(GString) ret = g_string_new("{\"return\": " STATUS_RETURN ", \"id\": @ID@}\n");
    const char *reply[] = { NULL, NULL };
    PeerStep steps[] = { { "status", reply } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };

    g_assert_cmpuint(g_string_replace(ret, "\"budget_cores\": 1.0", "\"budget_cores\": 0.0", 1),
                     ==, 1);
    reply[0] = ret->str;
    run_against(&s, &r, (const char *[]){ "status", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "polling 0.21 cores (no budget set)"));
    g_assert_null(strstr(r.out, "of 0.00"));
    script_clear(&s);
    cli_run_clear(&r);
}

static void
test_export_stream(void)
{
    /* The file arrives in three chunks cut mid-line, with an unrelated
     * event between them, then the reply. */
    static const char *const reply[] = {
        "{\"event\": \"EXPORT_DATA\", \"data\": {\"chunk\": \"{\\\"time\\\":\\\"2026-12-01T"
        "10:00:00.000Z\\\",\\\"target\\\":\\\"vm-3\\\"}\\n{\\\"ti\"}}\n",
        "{\"event\": \"TARGET_LOST\", \"data\": {\"name\": \"vm-9\"}}\n",
        "{\"event\": \"EXPORT_DATA\", \"data\": {\"chunk\": \"me\\\":\\\"2026-12-01T10:00:01"
        ".000Z\\\",\\\"target\\\":\\\"vm-3\\\"}\\n\"}}\n{\"event\": \"EXPORT_DATA\",",
        " \"data\": {\"chunk\": \"\"}}\n{\"return\": {\"rows\": 2, \"bytes\": 112}, \"id\": @ID@}\n",
        NULL,
    };
    static const PeerStep steps[] = { { "export", reply } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "out.jsonl", NULL);
    CliRun r = { 0 };
    g_autofree char *data = NULL;
    json_object *args, *v;

    run_against(&s, &r, (const char *[]){ "export", "--format", "jsonl", "--since", "7d",
                                          "--vm", "vm-3", "--decisions", "-o", out, NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_file_get_contents(out, &data, NULL, NULL));
    g_assert_cmpstr(data, ==, "{\"time\":\"2026-12-01T10:00:00.000Z\",\"target\":\"vm-3\"}\n"
                              "{\"time\":\"2026-12-01T10:00:01.000Z\",\"target\":\"vm-3\"}\n");
    {
        g_autofree char *want = g_strdup_printf("wrote 2 rows (%zu bytes) to %s\n",
                                                strlen(data), out);

        g_assert_cmpstr(r.out, ==, want);
    }
    args = request_args(&s, 0);
    g_assert_cmpstr(qmp_json_get_string(args, "format"), ==, "jsonl");
    g_assert_cmpstr(qmp_json_get_string(args, "since"), ==, "7d");
    g_assert_cmpstr(qmp_json_get_string(args, "target"), ==, "vm-3");
    g_assert_true(json_object_object_get_ex(args, "decisions", &v));
    g_assert_true(json_object_get_boolean(v));
    g_assert_false(json_object_object_get_ex(args, "until", NULL));
    script_clear(&s);
    cli_run_clear(&r);
    test_dir_remove(dir);
}

static void
test_export_cut_short(void)
{
    /* The daemon goes away after one chunk: no half file is left. */
    static const char *const reply[] = {
        "{\"event\": \"EXPORT_DATA\", \"data\": {\"chunk\": \"time,target\\r\\n\"}}\n", NULL,
    };
    static const PeerStep steps[] = { { "export", reply } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "out.csv", NULL);
    CliRun r = { 0 };

    g_assert_true(g_file_set_contents(out, "previous export\n", -1, NULL));
    run_against(&s, &r, (const char *[]){ "export", "-o", out, NULL });
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "polltuned closed the connection before the reply to "
                                    "export"));
    {
        g_autofree char *data = NULL;

        /* The earlier file is still there, untouched. */
        g_assert_true(g_file_get_contents(out, &data, NULL, NULL));
        g_assert_cmpstr(data, ==, "previous export\n");
    }
    script_clear(&s);
    cli_run_clear(&r);
    test_dir_remove(dir);
}

typedef struct {
    const char *name;
    const char *greeting;
    gboolean silent;
    const char *execute;        /* NULL: no request expected */
    const char *pieces[4];
    const char *args[10];
    int status;
    const char *message;        /* part of stderr */
} FailCase;

static void
test_failures(void)
{
    static const FailCase cases[] = {
        { "truncated reply", NULL, FALSE, "status",
          { "{\"return\": {\"mode\": \"enf", NULL }, { "status", NULL }, 1,
          "closed the connection in the middle of the reply to status (24 bytes of a "
          "truncated message)" },
        { "closed before the reply", NULL, FALSE, "status", { NULL }, { "status", NULL }, 1,
          "polltuned closed the connection before the reply to status" },
        { "closed before the greeting", "", FALSE, NULL, { NULL }, { "list", NULL }, 1,
          "polltuned closed the connection before the greeting" },
        { "silent peer", NULL, TRUE, NULL, { NULL }, { "--timeout", "1", "list", NULL }, 1,
          "no greeting from polltuned within 1000 ms" },
        { "a QEMU monitor", "{\"QMP\": {\"version\": {\"qemu\": {\"major\": 7, \"minor\": 2, "
          "\"micro\": 0}, \"package\": \"\"}, \"capabilities\": [\"oob\"]}}\n", FALSE, NULL,
          { NULL }, { "status", NULL }, 1, "is this a QEMU monitor?" },
        { "too many connections", "{\"error\": {\"class\": \"Busy\", \"desc\": \"64 "
          "connections already\"}}\n", FALSE, NULL, { NULL }, { "status", NULL }, 1,
          "polltuned refused the connection: Busy: 64 connections already" },
        { "garbage", NULL, FALSE, "list", { "]]] not json\n", NULL }, { "list", NULL }, 1,
          "bad reply to list" },
        { "another id", NULL, FALSE, "list", { "{\"return\": {}, \"id\": 999}\n", NULL },
          { "list", NULL }, 1, "list: the reply carries another request's id" },
        { "unknown target", NULL, FALSE, "show", { "{\"error\": {\"class\": \"NotFound\", "
          "\"desc\": \"vm-9: no such target\"}, \"id\": @ID@}\n", NULL }, { "show", "vm-9",
          NULL }, 1, "polltunectl: show: NotFound: vm-9: no such target\n" },
        { "permission denied", NULL, FALSE, "mode-set", { "{\"error\": {\"class\": "
          "\"PermissionDenied\", \"desc\": \"uid 1000 may not run mode-set\"}, \"id\": @ID@}\n",
          NULL }, { "mode", "observe", NULL }, 1,
          "mode-set: PermissionDenied: uid 1000 may not run mode-set" },
        { "value out of bounds", NULL, FALSE, "override-set", { "{\"error\": {\"class\": "
          "\"InvalidParameter\", \"desc\": \"poll-max-ns 900000000: above the bound "
          "2000000\"}, \"id\": @ID@}\n", NULL }, { "override", "set", "vm-3",
          "poll-max-ns=900000000", NULL }, 1, "override-set: InvalidParameter: poll-max-ns "
          "900000000: above the bound 2000000" },
        { "export event outside export", NULL, FALSE, "status", { "{\"event\": "
          "\"EXPORT_DATA\", \"data\": {\"chunk\": \"x\"}}\n", NULL }, { "status", NULL }, 1,
          "status: unexpected EXPORT_DATA event" },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        const FailCase *c = &cases[i];
        PeerStep step = { c->execute, c->pieces };
        PeerScript s = { .greeting = c->greeting, .silent = c->silent, .steps = &step,
                         .n_steps = c->execute ? 1 : 0 };
        CliRun r = { 0 };

        run_against(&s, &r, c->args);
        if (r.status != c->status || !strstr(r.err, c->message))
            g_error("%s: status %d, stderr \"%s\"; want %d and \"%s\"", c->name, r.status,
                    r.err, c->status, c->message);
        g_assert_cmpstr(r.out, ==, "");
        script_clear(&s);
        cli_run_clear(&r);
    }
}

static void
test_override_request(void)
{
    static const char *const reply[] = {
        "{\"return\": {\"id\": 7, \"expires_ms\": 1764691800000}, \"id\": @ID@}\n", NULL,
    };
    static const char *const cleared[] = { "{\"return\": {\"cleared\": 1}, \"id\": @ID@}\n",
                                           NULL };
    static const PeerStep steps[] = { { "override-set", reply } };
    static const PeerStep clear_steps[] = { { "override-clear", cleared } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };
    json_object *args, *v;

    run_against(&s, &r, (const char *[]){ "override", "set", "vm-3/iothread1",
                                          "poll-max-ns=65536", "poll-shrink=2", "--for", "30m",
                                          "--reason", "nightly batch", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.out, ==, "override 7 on vm-3/iothread1: until 2025-12-02 16:10:00 UTC\n");
    args = request_args(&s, 0);
    g_assert_cmpstr(qmp_json_get_string(args, "target"), ==, "vm-3");
    g_assert_cmpstr(qmp_json_get_string(args, "iothread"), ==, "iothread1");
    g_assert_true(json_object_object_get_ex(args, "poll-max-ns", &v));
    g_assert_true(json_object_is_type(v, json_type_int));
    g_assert_cmpint(json_object_get_int64(v), ==, 65536);
    g_assert_true(json_object_object_get_ex(args, "poll-shrink", &v));
    g_assert_cmpint(json_object_get_int64(v), ==, 2);
    g_assert_false(json_object_object_get_ex(args, "poll-grow", NULL));
    g_assert_cmpstr(qmp_json_get_string(args, "for"), ==, "30m");
    g_assert_cmpstr(qmp_json_get_string(args, "reason"), ==, "nightly batch");
    script_clear(&s);

    s = (PeerScript){ .steps = clear_steps, .n_steps = 1 };
    run_against(&s, &r, (const char *[]){ "override", "clear", "vm-3", "--json", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.out, ==, "{\n  \"cleared\": 1\n}\n");
    args = request_args(&s, 0);
    g_assert_cmpstr(qmp_json_get_string(args, "target"), ==, "vm-3");
    g_assert_false(json_object_object_get_ex(args, "iothread", NULL));
    script_clear(&s);
    cli_run_clear(&r);
}

static void
test_history_and_metrics(void)
{
    static const char *const history[] = {
        "{\"return\": {\"resolution\": \"raw\", \"rows\": ["
        "{\"ts_ms\": 1764690000000, \"target\": \"vm-3\", \"iothread\": \"iothread1\","
        " \"iops\": 1000.0, \"lat_us\": 400.0, \"cpu_pct\": 10.0},"
        "{\"ts_ms\": 1764690001000, \"target\": \"vm-3\", \"iothread\": \"iothread1\","
        " \"iops\": 3000.0, \"lat_us\": 300.0, \"cpu_pct\": 20.0}]}, \"id\": @ID@}\n", NULL,
    };
    static const char *const metrics[] = {
        "{\"return\": {\"text\": \"# TYPE polltune_ticks counter\\npolltune_ticks_total 3600\\n"
        "# EOF\\n\"}, \"id\": @ID@}\n", NULL,
    };
    static const PeerStep steps[] = { { "history", history } };
    static const PeerStep msteps[] = { { "metrics", metrics } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };
    json_object *args;

    run_against(&s, &r, (const char *[]){ "history", "vm-3/iothread1", "--since", "30m",
                                          NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "vm-3/iothread1 \302\267 2025-12-02 15:40:00 \342\206\222 "
                                   "2025-12-02 15:40:01 UTC \302\267 2 rows"));
    g_assert_nonnull(strstr(r.out, "IOPS     \342\226\201\342\226\210  min 1.00k  mean 2.00k  "
                                   "max 3.00k"));
    g_assert_nonnull(strstr(r.out, "2025-12-02 15:40:01  3.00k   300.0   20.0            -"));
    args = request_args(&s, 0);
    g_assert_cmpstr(qmp_json_get_string(args, "since"), ==, "30m");
    /* Half an hour picks raw rows. */
    g_assert_cmpstr(qmp_json_get_string(args, "resolution"), ==, "raw");
    script_clear(&s);

    s = (PeerScript){ .steps = msteps, .n_steps = 1 };
    run_against(&s, &r, (const char *[]){ "metrics", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.out, ==, "# TYPE polltune_ticks counter\npolltune_ticks_total 3600\n"
                               "# EOF\n");
    script_clear(&s);
    cli_run_clear(&r);
}

/*
 * A socket path is whatever the operator's tooling named it: ESC, BEL, CR
 * and LF in one reached stdout raw through the header of history (a
 * forged line) and through metrics on a pipe.  None may.
 */
static void
test_target_path_escaped(void)
{
#define EVIL "/run/vm\\u001b]0;owned\\u0007\\r\\nforged line/qmp.sock"
    static const char *const history[] = {
        "{\"return\": {\"resolution\": \"raw\", \"rows\": ["
        "{\"ts_ms\": 1764690000000, \"target\": \"" EVIL "\", \"iothread\": \"iot\\u001b[2J0\","
        " \"iops\": 1000.0, \"lat_us\": 400.0, \"cpu_pct\": 10.0}]}, \"id\": @ID@}\n", NULL,
    };
    /* The daemon's exposition escapes a label's newline, not the rest. */
    static const char *const metrics[] = {
        "{\"return\": {\"text\": \"# TYPE polltune_ticks counter\\n"
        "polltune_poll_max_seconds{domain=\\\"/run/vm\\u001b]0;owned\\u0007\\r\\\\nforged\\\"}"
        " 0\\n# EOF\\n\"}, \"id\": @ID@}\n", NULL,
    };
#undef EVIL
    static const PeerStep steps[] = { { "history", history } };
    static const PeerStep msteps[] = { { "metrics", metrics } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };

    run_against(&s, &r, (const char *[]){ "history", "vm-3", "--since", "30m", NULL });
    g_assert_cmpint(r.status, ==, 0);
    for (const char *c = "\033\007\r"; *c; c++)
        g_assert_null(strchr(r.out, *c));
    g_assert_null(strstr(r.out, "\nforged line"));
    g_assert_nonnull(strstr(r.out, "/run/vm\\x1b]0;owned\\x07\\r\\nforged line/qmp.sock/"
                                   "iot\\x1b[2J0 \302\267 "));
    script_clear(&s);

    s = (PeerScript){ .steps = msteps, .n_steps = 1 };
    run_against(&s, &r, (const char *[]){ "metrics", NULL });
    g_assert_cmpint(r.status, ==, 0);
    for (const char *c = "\033\007\r"; *c; c++)
        g_assert_null(strchr(r.out, *c));
    g_assert_cmpstr(r.out, ==, "# TYPE polltune_ticks counter\n"
                               "polltune_poll_max_seconds{domain=\"/run/vm\\x1b]0;owned\\x07"
                               "\\r\\nforged\"} 0\n# EOF\n");
    script_clear(&s);
    cli_run_clear(&r);
}

static void
test_report_online(void)
{
    static const char *const list[] = {
        "{\"return\": {\"targets\": [{\"name\": \"vm-3\", \"kind\": \"qmp\", \"state\": "
        "\"attached\", \"pid\": 1234, \"iothreads\": [\"iothread1\"]}]}, \"id\": @ID@}\n", NULL,
    };
    static const char *const history[] = {
        "{\"return\": {\"resolution\": \"1m\", \"rows\": ["
        "{\"ts_ms\": 1764684000000, \"target\": \"vm-3\", \"iothread\": \"iothread1\", \"count\":"
        " 60, \"iops\": {\"min\": 900, \"mean\": 1000, \"max\": 1100, \"p95\": 1080}, \"lat_us\":"
        " {\"mean\": 400}, \"cpu_pct\": {\"mean\": 10}},"
        "{\"ts_ms\": 1764684060000, \"target\": \"vm-3\", \"iothread\": \"iothread1\", \"count\":"
        " 60, \"iops\": {\"mean\": 3000}, \"lat_us\": {\"mean\": 300}, \"cpu_pct\": {\"mean\": 20}}"
        "]}, \"id\": @ID@}\n", NULL,
    };
    static const char *const decisions[] = {
        "{\"event\": \"EXPORT_DATA\", \"data\": {\"chunk\": \"{\\\"time\\\":\\\"2025-12-02T14:"
        "00:30.000Z\\\",\\\"target\\\":\\\"vm-3\\\",\\\"iothread\\\":\\\"iothread1\\\",\\\"old_p"
        "oll_max_ns\\\":16384,\\\"new_poll_max_ns\\\":32768,\\\"applied\\\":1,\\\"policy\\\":"
        "\\\"adaptive:latency\\\",\\\"reason\\\":\\\"probe <IOPS> & more\\\"}\\n\"}}\n",
        "{\"return\": {\"rows\": 1, \"bytes\": 200}, \"id\": @ID@}\n", NULL,
    };
    /* Beside rollups, the raw rows that say which ticks polled. */
    static const char *const raw[] = {
        "{\"return\": {\"resolution\": \"raw\", \"rows\": ["
        "{\"ts_ms\": 1764684001000, \"target\": \"vm-3\", \"iothread\": \"iothread1\","
        " \"iops\": 1000, \"cpu_pct\": 10, \"poll-max-ns\": 0}"
        "]}, \"id\": @ID@}\n", NULL,
    };
    /* The raw rows before the range, whose pairs charge its first ticks
     * (none here). */
    static const char *const warm[] = {
        "{\"return\": {\"resolution\": \"raw\", \"rows\": []}, \"id\": @ID@}\n", NULL,
    };
    /* A daemon from before host-history: the page is written without the
     * host's figures, and says so. */
    static const char *const no_host[] = {
        "{\"error\": {\"class\": \"CommandNotFound\", \"desc\": \"host-history: no such "
        "command\"}, \"id\": @ID@}\n", NULL,
    };
    static const PeerStep steps[] = {
        { "list", list }, { "history", history }, { "history", raw }, { "history", warm },
        { "host-history", no_host }, { "export", decisions },
    };
    PeerScript s = { .steps = steps, .n_steps = 6 };
    g_autofree char *dir = test_dir_new();
    g_autofree char *out = g_build_filename(dir, "report.html", NULL);
    g_autofree char *html = NULL;
    g_autofree char *want = NULL;
    CliRun r = { 0 };
    json_object *h, *e;

    run_against(&s, &r, (const char *[]){ "report", "--since", "2025-12-02T14:00:00Z",
                                          "--until", "2025-12-02T16:00:00Z", "-o", out, NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    want = g_strdup_printf("wrote %s (2 points at 1m resolution)\n", out);
    g_assert_cmpstr(r.out, ==, want);
    g_assert_true(g_file_get_contents(out, &html, NULL, NULL));
    g_assert_nonnull(strstr(html, "polltuned at "));
    g_assert_nonnull(strstr(html, "data-points=\"2\""));
    g_assert_nonnull(strstr(html, "class=\"decision applied\""));
    g_assert_nonnull(strstr(html, "probe &lt;IOPS&gt; &amp; more"));
    g_assert_nonnull(strstr(html, "16384 &#8594; 32768"));
    /* Every request covers the same absolute range. */
    g_assert_nonnull(strstr(html, "This daemon does not give the host&apos;s CPU and pressure"));
    g_assert_nonnull(strstr(html, "id=\"no-host\""));
    h = request_args(&s, 1);
    e = request_args(&s, 5);
    g_assert_cmpstr(qmp_json_get_string(request_args(&s, 2), "resolution"), ==, "raw");
    g_assert_cmpstr(qmp_json_get_string(request_args(&s, 2), "since"), ==,
                    "2025-12-02T14:00:00.000000Z");
    /* The rows before the range: as many seconds as the daemon answers
     * rows (10,000) before it, raw. */
    g_assert_cmpstr(qmp_json_get_string(request_args(&s, 3), "resolution"), ==, "raw");
    g_assert_cmpstr(qmp_json_get_string(request_args(&s, 3), "since"), ==,
                    "2025-12-02T11:13:20.000000Z");
    g_assert_cmpstr(qmp_json_get_string(request_args(&s, 3), "until"), ==,
                    "2025-12-02T14:00:00.000000Z");
    /* That tick did not poll: 0 % of the time polling on. */
    g_assert_nonnull(strstr(html, "<td>0.0</td>"));
    g_assert_cmpstr(qmp_json_get_string(h, "target"), ==, "vm-3");
    g_assert_cmpstr(qmp_json_get_string(h, "iothread"), ==, "iothread1");
    g_assert_cmpstr(qmp_json_get_string(h, "resolution"), ==, "1m");
    g_assert_cmpstr(qmp_json_get_string(h, "since"), ==, "2025-12-02T14:00:00.000000Z");
    g_assert_cmpstr(qmp_json_get_string(h, "until"), ==, "2025-12-02T16:00:00.000000Z");
    g_assert_cmpstr(qmp_json_get_string(e, "since"), ==, qmp_json_get_string(h, "since"));
    g_assert_cmpstr(qmp_json_get_string(e, "until"), ==, qmp_json_get_string(h, "until"));
    g_assert_cmpstr(qmp_json_get_string(e, "format"), ==, "jsonl");
    script_clear(&s);
    cli_run_clear(&r);
    test_dir_remove(dir);
}

static void
test_show_and_policy(void)
{
    static const char *const show[] = {
        "{\"return\": {\"name\": \"vm-3\", \"kind\": \"libvirt\", \"state\": \"attached\", "
        "\"pid\": 1234, \"policy\": \"adaptive:balanced\", \"iothreads\": [{\"id\": "
        "\"iothread1\", \"tid\": 1240, \"triple\": {\"poll-max-ns\": 65536, \"poll-grow\": 2, "
        "\"poll-shrink\": 2}, \"policy\": \"adaptive:balanced\", \"override\": {\"id\": 7, "
        "\"expires_ms\": 1764691800000}, \"metrics\": {\"iops\": 2410.0, \"lat_us\": 402.1}, "
        "\"history\": [{\"ts_ms\": 1764690000000, \"iops\": 100.0}, {\"ts_ms\": 1764690001000,"
        " \"iops\": 900.0}], \"decisions\": [{\"ts_ms\": 1764689000000, \"outcome\": "
        "\"recommended\", \"old\": {\"poll-max-ns\": 0}, \"new\": {\"poll-max-ns\": 8192}, "
        "\"policy\": \"adaptive:balanced\", \"cause\": \"probe\", \"reason\": \"first\"}, "
        "{\"ts_ms\": 1764689500000, \"outcome\": \"failed: qom-set timed out\", \"old\": "
        "{\"poll-max-ns\": 8192}, \"new\": {\"poll-max-ns\": 65536}, \"policy\": "
        "\"adaptive:balanced\", \"cause\": \"probe\", \"reason\": \"second\"}]}]}, "
        "\"id\": @ID@}\n", NULL,
    };
    static const char *const policy[] = {
        "{\"return\": {\"default\": \"adaptive:balanced\", \"rules\": [{\"glob\": \"vm-*\", "
        "\"policy\": \"off\", \"source\": \"policy-set\", \"set-by\": \"uid 0\", "
        "\"set-at\": 1764590400000}, {\"glob\": \"db-*\", "
        "\"policy\": \"static:70000/2/2\", \"source\": \"config\"}], \"targets\": "
        "[{\"name\": \"vm-3\", \"policy\": \"adaptive:balanced\"}]}, \"id\": @ID@}\n", NULL,
    };
    static const PeerStep steps[] = { { "show", show } };
    static const PeerStep psteps[] = { { "policy-get", policy } };
    PeerScript s = { .steps = steps, .n_steps = 1 };
    CliRun r = { 0 };
    const char *second, *first;

    run_against(&s, &r, (const char *[]){ "show", "vm-3/iothread1", "--ticks", "2", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_str_has_prefix(r.out, "vm-3 (libvirt, attached, pid 1234) \302\267 policy "
                                          "adaptive:balanced\n"));
    g_assert_nonnull(strstr(r.out, "iothread1 (tid 1240): poll-max-ns 65536, poll-grow 2, "
                                   "poll-shrink 2"));
    g_assert_nonnull(strstr(r.out, "last 2 ticks:"));
    g_assert_nonnull(strstr(r.out, "IOPS     \342\226\201\342\226\210  min 100  mean 500  "
                                   "max 900"));
    /* The decision log is newest first. */
    second = strstr(r.out, "failed: qom-set timed out  8192 \342\206\222 65536");
    first = strstr(r.out, "recommended                0 \342\206\222 8192");
    g_assert_nonnull(second);
    g_assert_nonnull(first);
    g_assert_true(second < first);
    g_assert_cmpint(json_object_get_int(json_object_object_get(request_args(&s, 0), "ticks")),
                    ==, 2);
    script_clear(&s);

    s = (PeerScript){ .steps = psteps, .n_steps = 1 };
    run_against(&s, &r, (const char *[]){ "policy", "get", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.out, ==, "default policy: adaptive:balanced\n\nrules, first match wins:\n"
                               "GLOB  POLICY            FROM\n"
                               "vm-*  off               policy set by uid 0, 2025-12-01 12:00:00 UTC\n"
                               "db-*  static:70000/2/2  configuration\n\nTARGET  POLICY\n"
                               "vm-3    adaptive:balanced\n");
    script_clear(&s);
    cli_run_clear(&r);
}

static void
test_busy_retry(void)
{
    static const char *const busy[] = {
        "{\"error\": {\"class\": \"Busy\", \"desc\": \"more than 50 requests per second\"}, "
        "\"id\": @ID@}\n", NULL,
    };
    static const char *const ok[] = { "{\"return\": {\"mode\": \"observe\"}, \"id\": @ID@}\n",
                                      NULL };
    static const PeerStep steps[] = { { "mode-set", busy }, { "mode-set", busy },
                                      { "mode-set", ok } };
    PeerScript s = { .steps = steps, .n_steps = 3 };
    CliRun r = { 0 };
    json_object *id1, *id3;

    /* Refused twice for the rate, then run: the operator sees only success. */
    run_against(&s, &r, (const char *[]){ "mode", "observe", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_cmpstr(r.out, ==, "mode observe\n");
    g_assert_cmpuint(s.requests->len, ==, 3);
    json_object_object_get_ex(g_ptr_array_index(s.requests, 0), "id", &id1);
    json_object_object_get_ex(g_ptr_array_index(s.requests, 2), "id", &id3);
    g_assert_cmpint(json_object_get_int(id1), !=, json_object_get_int(id3));
    script_clear(&s);
    cli_run_clear(&r);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/cli/peer/status", test_status);
    g_test_add_func("/cli/peer/status-no-budget", test_status_no_budget);
    g_test_add_func("/cli/peer/peer-text-escaped", test_peer_text_escaped);
    g_test_add_func("/cli/peer/explain-memory", test_explain_memory);
    g_test_add_func("/cli/peer/export-stream", test_export_stream);
    g_test_add_func("/cli/peer/export-cut-short", test_export_cut_short);
    g_test_add_func("/cli/peer/failures", test_failures);
    g_test_add_func("/cli/peer/override-request", test_override_request);
    g_test_add_func("/cli/peer/history-metrics", test_history_and_metrics);
    g_test_add_func("/cli/peer/target-path-escaped", test_target_path_escaped);
    g_test_add_func("/cli/peer/busy-retry", test_busy_retry);
    g_test_add_func("/cli/peer/report", test_report_online);
    g_test_add_func("/cli/peer/show-policy", test_show_and_policy);
    return g_test_run();
}
