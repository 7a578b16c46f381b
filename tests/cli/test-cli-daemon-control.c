/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltunectl's mutating commands and its errors against the real
 * polltuned attached to real QEMU (see cli-live.h): each effect is read
 * back from QEMU itself.  Policies, overrides (with --for, cleared by
 * target and by id, expired), mode, attach and detach; no daemon, a caller
 * who may read but not change, an unknown VM, bad override values.  The
 * offline commands on the history the daemon writes ask for vm-a by its
 * name, and the daemon gives a VM's history by its name after it exited.
 */
#include <grp.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <glib/gstdio.h>

#include "cli-live.h"
#include "store-testutil.h"

/* ---- policies, overrides, mode ---------------------------------------- */

typedef struct {
    const char *iothread;
    gint64 want;
} StatusWait;

/* The daemon's own view, through polltunectl status --json. */
static gboolean
status_shows(gpointer data)
{
    StatusWait *w = data;
    g_autoptr(json_object) st = CTL_JSON("status");
    json_object *io = pt_test_status_iothread(st, "vm-a", w->iothread);

    return io && pt_json_path_int(io, "triple/poll-max-ns") == w->want;
}

static void
test_policy(void)
{
    g_autofree char *set = NULL;
    g_autofree char *get = NULL;
    g_autofree char *table = NULL;
    g_autoptr(json_object) pj = NULL;
    g_autoptr(json_object) empty = NULL;
    g_autofree char *clear = NULL;
    StatusWait w = { "iot0", 50000 };

    if (!cli_live_setup())
        return;
    /* The values as virsh iothreadset takes them stand for static:. */
    set = CTL_OK("policy", "set", "vm-*", "--poll-max-ns", "50000", "--poll-grow", "2",
                 "--poll-shrink", "2");
    g_assert_nonnull(strstr(set, "vm-*: policy static:50000/2/2"));
    CTL_FAILS(2, "stands for POLICY", "policy", "set", "vm-*", "off", "--poll-max-ns", "1");
    cli_assert_poll("iot0", 50000, 3000);
    cli_assert_poll("iot1", 50000, 3000);
    g_assert_true(pt_test_wait(status_shows, &w, 3000));
    table = CTL_OK("status");
    g_assert_true(g_regex_match_simple("\nvm-a/iot1 +attached +50000 +2 +2 +static:50000/2/2",
                                          table, 0, 0));

    get = CTL_OK("policy", "get");
    g_assert_nonnull(strstr(get, "default policy: static:70000/2/2"));
    g_assert_true(g_regex_match_simple("\nvm-\\* +static:50000/2/2 +policy set by uid [0-9]+, "
                                       "20[0-9][0-9]-[0-9-]+ [0-9:]+ UTC\n", get, 0, 0));
    pj = CTL_JSON("policy", "get", "vm-a");
    g_assert_cmpstr(pt_json_path_str(pj, "default"), ==, "static:70000/2/2");
    g_assert_cmpstr(pt_json_path_str(pj, "rules/0/glob"), ==, "vm-*");
    g_assert_cmpstr(pt_json_path_str(pj, "rules/0/source"), ==, "policy-set");
    g_assert_cmpstr(pt_json_path_str(pj, "targets/0/display_name"), ==, "vm-a");
    g_assert_cmpstr(pt_json_path_str(pj, "targets/0/policy"), ==, "static:50000/2/2");

    /* One iothread's policy, and one that is not there named with those
     * that are. */
    g_clear_pointer(&pj, json_object_put);
    pj = CTL_JSON("policy", "get", "vm-a/iot1");
    g_assert_cmpstr(pt_json_path_str(pj, "targets/0/iothread"), ==, "iot1");
    g_assert_cmpstr(pt_json_path_str(pj, "targets/0/policy"), ==, "static:50000/2/2");
    CTL_FAILS(1, "policy-get: NotFound: vm-a/iot9: no such iothread; vm-a has iot0, iot1\n",
              "policy", "get", "vm-a/iot9");

    /* The objective as a third word; a bad spec is the daemon's to refuse.
     * A glob that matches nothing is kept, with a note and a log line. */
    empty = CTL_JSON("policy", "set", "other-*", "adaptive", "latency");
    g_assert_cmpint(json_object_object_length(empty), ==, 1);
    g_assert_cmpstr(pt_json_path_str(empty, "note"), ==, "other-* matches no VM or iothread "
                    "now; the rule is kept for those that come");
    g_assert_cmpuint(pt_test_daemon_log_count(cli_live.d, "policy-set: other-* matches no VM "
                                                          "or iothread now"), >=, 1);
    g_free(set);
    set = CTL_OK("policy", "set", "other-*", "adaptive", "latency");
    g_assert_true(g_str_has_suffix(set, "\nnote: other-* matches no VM or iothread now; the "
                                        "rule is kept for those that come\n"));
    g_clear_pointer(&empty, json_object_put);
    empty = CTL_JSON("policy", "set", "vm-*", "static:50000/2/2");
    g_assert_cmpint(json_object_object_length(empty), ==, 0);
    CTL_FAILS(1, "policy-set: InvalidParameter: ", "policy", "set", "vm-*", "static:1/1/1");
    {
        CliRun r = { 0 };

        /* An unknown policy's choices, named once. */
        cli_ctl(&r, NULL, (const char *const[]){ "policy", "set", "vm-*", "fast", NULL });
        g_assert_cmpint(r.status, ==, 2);
        g_assert_cmpstr(r.err, ==, "polltunectl: policy set: policy 'fast': unknown name "
                                   "(observe, off, static, qemu-default, adaptive)\n");
        cli_run_clear(&r);
    }

    /* policy clear removes what policy set added, and only that. */
    clear = CTL_OK("policy", "clear", "other-*");
    g_assert_cmpstr(clear, ==, "other-*: rule removed; the configured policy applies\n");
    CTL_FAILS(1, "policy-clear: NotFound: other-*: no policy-set rule", "policy", "clear",
              "other-*");
    CTL_FAILS(2, "policy clear", "policy", "clear");
}

static void
test_override(void)
{
    g_autoptr(json_object) ov = NULL;
    g_autoptr(json_object) st = NULL;
    g_autoptr(json_object) cl = NULL;
    g_autofree char *set = NULL;
    g_autofree char *table = NULL;
    g_autofree char *clear = NULL;
    gint64 now_ms, id;

    if (!cli_live_setup())
        return;
    g_free(CTL_OK("policy", "set", "vm-*", "static:50000/2/2"));
    cli_assert_poll("iot1", 50000, 3000);

    now_ms = g_get_real_time() / 1000;
    ov = CTL_JSON("override", "set", "vm-a/iot1", "poll-max-ns=40000", "poll-grow=4",
                  "--for", "30m", "--reason", "test pin");
    id = pt_json_path_int(ov, "id");
    g_assert_cmpint(id, >, 0);
    g_assert_cmpint(pt_json_path_int(ov, "expires_ms"), >=, now_ms + 30 * 60000 - 1000);
    g_assert_cmpint(pt_json_path_int(ov, "expires_ms"), <=, now_ms + 30 * 60000 + 5000);
    /* QEMU has it on iot1 only. */
    cli_assert_poll("iot1", 40000, 3000);
    g_assert_cmpuint(pt_test_qmp_poll_max(cli_live.vm->qmp, "iot0"), ==, 50000);
    table = CTL_OK("status");
    g_assert_true(g_regex_match_simple("\nvm-a/iot1 +attached +40000 +4 +2 +override \\(",
                                          table, 0, 0));
    st = CTL_JSON("status");
    g_assert_cmpint(pt_json_path_int(pt_test_status_iothread(st, "vm-a", "iot1"), "override/id"), ==, id);
    g_assert_null(pt_json_path(pt_test_status_iothread(st, "vm-a", "iot0"), "override"));

    /* show and explain say whose it is and why. */
    {
        g_autofree char *show = CTL_OK("show", "vm-a");
        g_autofree char *explain = CTL_OK("explain", "vm-a/iot1");
        g_autofree char *pattern = g_strdup_printf(
            "\n  override %" G_GINT64_FORMAT " by uid [0-9]+, set [0-9]+s ago, 3[0-9]m left: "
            "test pin\n    holds poll-max-ns 40000, poll-grow 4, poll-shrink its own\n", id);
        g_autofree char *xpattern = g_strdup_printf(
            "\n  pinned by     override %" G_GINT64_FORMAT " by uid [0-9]+, set [0-9]+s ago, "
            "3[0-9]m left: test pin\n", id);

        g_test_message("%s\n%s", show, explain);
        g_assert_true(g_regex_match_simple(pattern, show, 0, 0));
        g_assert_true(g_regex_match_simple(xpattern, explain, 0, 0));
    }
    /* A second one on the same iothread replaces the first. */
    {
        g_autofree char *again = CTL_OK("override", "set", "vm-a/iot1", "poll-max-ns=35000");
        g_autofree char *replaces = g_strdup_printf("; replaces override %" G_GINT64_FORMAT "\n",
                                                    id);
        g_autofree char *show = NULL;

        g_assert_true(g_str_has_suffix(again, replaces));
        cli_assert_poll("iot1", 35000, 3000);
        show = CTL_OK("show", "vm-a");
        g_assert_nonnull(strstr(show, "until cleared: no reason given\n"));
    }

    /* Cleared by VM/IOTHREAD: the policy takes over again. */
    clear = CTL_OK("override", "clear", "vm-a/iot1");
    g_assert_cmpstr(clear, ==, "cleared 1 override\n");
    cli_assert_poll("iot1", 50000, 3000);
    CTL_FAILS(1, "override-clear: NotFound: ", "override", "clear", "vm-a/iot1");

    /* On every iothread, cleared by id. */
    set = CTL_OK("override", "set", "vm-a", "poll-max-ns=30000");
    g_assert_true(g_str_has_prefix(set, "override "));
    g_assert_nonnull(strstr(set, "on vm-a: until cleared"));
    cli_assert_poll("iot0", 30000, 3000);
    cli_assert_poll("iot1", 30000, 3000);
    {
        g_autofree char *idtext = g_strndup(set + strlen("override "),
                                            strcspn(set + strlen("override "), " "));

        cl = CTL_JSON("override", "clear", "--id", idtext);
    }
    g_assert_cmpint(pt_json_path_int(cl, "cleared"), ==, 1);
    cli_assert_poll("iot0", 50000, 3000);
    cli_assert_poll("iot1", 50000, 3000);
}

static void
test_override_expires(void)
{
    g_autoptr(json_object) ov = NULL;
    g_autoptr(json_object) st = NULL;
    gint64 now_ms;

    if (!cli_live_setup())
        return;
    g_free(CTL_OK("policy", "set", "vm-*", "static:50000/2/2"));
    cli_assert_poll("iot0", 50000, 3000);
    now_ms = g_get_real_time() / 1000;
    ov = CTL_JSON("override", "set", "vm-a/iot0", "poll-max-ns=12000", "--for", "1s");
    g_assert_cmpint(pt_json_path_int(ov, "expires_ms"), <=, now_ms + 1000 + 2000);
    cli_assert_poll("iot0", 12000, 2000);
    /* Gone after the second, and QEMU back under the policy. */
    cli_assert_poll("iot0", 50000, 4000);
    st = CTL_JSON("status");
    g_assert_null(pt_json_path(pt_test_status_iothread(st, "vm-a", "iot0"), "override"));
    g_assert_cmpstr(pt_json_path_str(pt_test_status_iothread(st, "vm-a", "iot0"), "policy"), ==,
                    "static:50000/2/2");
    CTL_FAILS(1, "override-clear: NotFound: ", "override", "clear", "vm-a/iot0");

    /* A bare number for --for is seconds, as sleep(1) takes it. */
    g_clear_pointer(&ov, json_object_put);
    now_ms = g_get_real_time() / 1000;
    ov = CTL_JSON("override", "set", "vm-a/iot1", "--poll-max-ns", "12000", "--for", "90");
    g_assert_cmpint(pt_json_path_int(ov, "expires_ms"), >=, now_ms + 90000);
    g_assert_cmpint(pt_json_path_int(ov, "expires_ms"), <=, now_ms + 90000 + 5000);
    cli_assert_poll("iot1", 12000, 3000);
    g_free(CTL_OK("override", "clear", "vm-a/iot1"));
}

static void
test_mode(void)
{
    g_autofree char *now = NULL;
    g_autofree char *set = NULL;
    g_autoptr(json_object) m = NULL;
    g_autoptr(json_object) back = NULL;

    if (!cli_live_setup())
        return;
    now = CTL_OK("mode");
    g_assert_cmpstr(now, ==, "enforce\n");
    set = CTL_OK("mode", "recommend");
    g_assert_cmpstr(set, ==, "mode recommend\n");
    m = CTL_JSON("mode");
    g_assert_cmpstr(pt_json_path_str(m, "mode"), ==, "recommend");
    /* Recommend changes nothing in QEMU: three ticks that could have. */
    g_free(CTL_OK("policy", "set", "vm-*", "static:60000/2/2"));
    cli_wait_ticks_pass(3);
    g_assert_cmpuint(pt_test_qmp_poll_max(cli_live.vm->qmp, "iot0"), ==, 50000);
    back = CTL_JSON("mode", "enforce");
    g_assert_cmpstr(pt_json_path_str(back, "mode"), ==, "enforce");
    cli_assert_poll("iot0", 60000, 3000);
    g_free(CTL_OK("policy", "set", "vm-*", "static:50000/2/2"));
    cli_assert_poll("iot0", 50000, 3000);
    CTL_FAILS(2, "mode", "mode", "sideways");
}

static void
test_reload(void)
{
    g_autofree char *out = NULL;
    g_autofree char *good = NULL;
    g_autofree char *bad = NULL;
    g_autoptr(json_object) empty = NULL;

    if (!cli_live_setup())
        return;
    /* A rule from policy set outlives the reload, until cleared. */
    g_free(CTL_OK("policy", "set", "vm-*", "static:50000/2/2"));
    cli_assert_poll("iot0", 50000, 3000);
    out = CTL_OK("reload");
    g_assert_cmpstr(out, ==, "configuration reloaded\n");
    cli_wait_ticks_pass(5);
    g_assert_cmpuint(pt_test_qmp_poll_max(cli_live.vm->qmp, "iot0"), ==, 50000);
    g_free(CTL_OK("policy", "clear", "vm-*"));
    cli_assert_poll("iot0", 70000, 3000);

    /* A broken file is refused, naming file, line and key. */
    g_assert_true(g_file_get_contents(cli_live.d->conf_path, &good, NULL, NULL));
    bad = g_strconcat(good, "[rule vm-*]\npolicy = static:abc\n", NULL);
    g_assert_true(g_file_set_contents(cli_live.d->conf_path, bad, -1, NULL));
    CTL_FAILS(1, "reload: GenericError: ", "reload");
    CTL_FAILS(1, "[rule vm-*] policy", "reload");
    g_assert_true(g_file_set_contents(cli_live.d->conf_path, good, -1, NULL));
    /* The reply says which mode holds and where it comes from. */
    empty = CTL_JSON("reload");
    g_assert_nonnull(pt_json_path_str(empty, "mode_from"));
    g_assert_nonnull(pt_json_path_str(empty, "mode"));
}

static gboolean
listed(const char *name)
{
    g_autoptr(json_object) l = CTL_JSON("list");

    return pt_test_status_target(l, name) != NULL;
}

static gboolean
listed_attached(gpointer data)
{
    g_autoptr(json_object) st = CTL_JSON("status");

    return pt_test_status_iothread(st, data, "iot0") != NULL;
}

static void
test_attach_detach(void)
{
    g_autoptr(PtTestVm) other = NULL;
    g_autoptr(json_object) at = NULL;
    g_autofree char *out = NULL;
    g_autofree char *cwd = g_get_current_dir();

    if (!cli_live_setup())
        return;
    /* A QEMU outside the daemon's glob: only attach brings it in.  The path
     * is given relative, polltunectl makes it absolute. */
    other = pt_test_vm_start(cli_live.tmp_dir, "extra", NULL);
    g_assert_false(listed("extra"));
    g_assert_cmpint(g_chdir(cli_live.tmp_dir), ==, 0);
    at = CTL_JSON("attach", "extra.qmp", "--name", "extra");
    g_assert_cmpint(g_chdir(cwd), ==, 0);
    g_assert_cmpstr(pt_json_path_str(at, "name"), ==, other->daemon_sock);
    g_assert_cmpstr(pt_json_path_str(at, "display_name"), ==, "extra");
    g_assert_true(pt_test_wait(listed_attached, (gpointer) "extra", 3000));
    CTL_FAILS(1, "attach: GenericError: ", "attach", other->daemon_sock);
    /* What is not a listening socket is refused before anything is
     * recorded: it used to answer {"name": "passwd"}. */
    CTL_FAILS(1, "attach: InvalidParameter: /etc/passwd: not a unix socket", "attach",
              "/etc/passwd");
    g_assert_false(listed("passwd"));
    CTL_FAILS(1, "attach: NotFound: /nonexistent/x.qmp: No such file or directory",
              "attach", "/nonexistent/x.qmp");

    out = CTL_OK("detach", "extra");
    g_assert_cmpstr(out, ==, "detached extra; its original values are restored\n");
    g_assert_false(listed("extra"));
    CTL_FAILS(1, "detach: NotFound: ", "detach", "extra");

    /* A target found through qmp-globs: detach restores QEMU's values and
     * the target stays away (only a libvirt domain comes back, when it
     * next starts). */
    g_free(CTL_OK("detach", "vm-a"));
    g_assert_false(listed("vm-a"));
    cli_assert_poll("iot0", 32768, 3000);
    /* And stays away, tick after tick. */
    cli_wait_ticks_pass(3);
    g_assert_false(listed("vm-a"));
    g_free(CTL_OK("attach", cli_live.vm->daemon_sock, "--name", "vm-a"));
    g_assert_true(pt_test_wait(listed_attached, (gpointer) "vm-a", 3000));
}
/* ---- errors ------------------------------------------------------------ */

static void
test_errors(void)
{
    g_autofree char *gone = g_build_filename(cli_live.tmp_dir, "none.sock", NULL);
    g_autofree char *msg = g_strdup_printf("%s: connect: No such file or directory "
                                           "(is polltuned running?)", gone);
    PtTestDaemon nodaemon = { .socket_path = gone };
    CliRun r = { 0 };
    guint64 before;

    /* No daemon. */
    cli_ctl_fails(&nodaemon, 1, msg, (const char *const[]){ "status", NULL });
    /* export's help says what it defaults to: raw rows, not a level by range. */
    cli_run(&r, (const char *const[]){ "export", "--help", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "raw, 1m or 1h (default: raw, every tick recorded)"));
    cli_run_clear(&r);
    /* A duration out of range is told in the units it was given in. */
    {
        static const struct {
            const char *conf, *want;
        } bad[] = {
            { "[retention]\nraw = 30m\n", "[retention] raw: 30m is outside 1h..3660d\n" },
            { "[daemon]\ninterval = 5\n", "[daemon] interval: 5 is outside 100ms..1h (a number "
                                          "without a unit is milliseconds)\n" },
        };
        g_autofree char *dir = g_dir_make_tmp("pt-range-XXXXXX", NULL);
        g_autofree char *conf = g_build_filename(dir, "range.conf", NULL);
        g_autofree char *daemon = g_build_filename(g_getenv("PT_BUILD_ROOT"), "daemon",
                                                   "polltuned", NULL);

        for (guint i = 0; i < G_N_ELEMENTS(bad); i++) {
            g_autofree char *out = NULL, *err = NULL;
            int ws = 0;

            g_assert_true(g_file_set_contents(conf, bad[i].conf, -1, NULL));
            g_assert_true(g_spawn_sync(NULL, (char *[]){ daemon, (char *)"--check-config",
                                                         (char *)"-c", conf, NULL },
                                       NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &ws, NULL));
            g_assert_false(g_spawn_check_wait_status(ws, NULL));
            if (!g_str_has_suffix(err, bad[i].want))
                g_error("polltuned --check-config: '%s', expected to end '%s'", err, bad[i].want);
        }
        g_unlink(conf);
        g_rmdir(dir);
    }
    /* A syntax error is found before connecting: no daemon needed. */
    cli_ctl_fails(&nodaemon, 2, "override set: poll-max-ns: \"abc\" is not a non-negative integer",
              (const char *const[]){ "override", "set", "vm-a", "poll-max-ns=abc", NULL });

    /* $POLLTUNE_SOCKET is the default socket; --socket still wins. */
    g_setenv("POLLTUNE_SOCKET", gone, TRUE);
    cli_run(&r, (const char *const[]){ "status", NULL });
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, msg));
    g_setenv("POLLTUNE_SOCKET", "/nonexistent/env.sock", TRUE);
    cli_ctl_fails(&nodaemon, 1, msg, (const char *const[]){ "status", NULL });
    cli_run_clear(&r);

    if (!cli_live_setup()) {
        g_unsetenv("POLLTUNE_SOCKET");
        return;
    }
    g_setenv("POLLTUNE_SOCKET", cli_live.d->socket_path, TRUE);
    cli_run(&r, (const char *const[]){ "list", NULL });
    g_assert_cmpint(r.status, ==, 0);
    g_assert_nonnull(strstr(r.out, "vm-a"));
    cli_run_clear(&r);
    g_unsetenv("POLLTUNE_SOCKET");

    before = pt_test_qmp_poll_max(cli_live.vm->qmp, "iot0");
    CTL_FAILS(1, "show: NotFound: nosuch: no such target", "show", "nosuch");
    CTL_FAILS(1, "show: NotFound: vm-a/iot9: no such iothread", "show", "vm-a/iot9");
    /* One rule for "not found": exit 1 from every command that names a
     * target the daemon neither tunes nor has history of. */
    CTL_FAILS(1, "history: NotFound: nosuch: no such target", "history", "nosuch");
    CTL_FAILS(1, "policy-get: NotFound: nosuch: no such target", "policy", "get", "nosuch");
    CTL_FAILS(1, "override-set: NotFound: ", "override", "set", "nosuch", "poll-max-ns=1");
    CTL_FAILS(1, "override-set: InvalidParameter: poll-max-ns", "override", "set", "vm-a/iot0",
              "poll-max-ns=99999999");
    g_assert_cmpuint(pt_test_qmp_poll_max(cli_live.vm->qmp, "iot0"), ==, before);
    CTL_FAILS(2, "poll-max-ns", "override", "set", "vm-a/iot0", "poll-grow=2");
}

/* polltunectl as nobody:nogroup. */
static void
drop_to_nobody(gpointer data)
{
    (void)data;
    if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
        _exit(99);
}

static void
run_as_nobody(CliRun *r, PtTestDaemon *d, const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) err = NULL;
    int ws = 0;

    cli_run_clear(r);
    g_ptr_array_add(argv, (char *)g_getenv("PT_POLLTUNECTL"));
    g_ptr_array_add(argv, (char *)"-s");
    g_ptr_array_add(argv, d->socket_path);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    g_assert_true(g_spawn_sync(NULL, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, drop_to_nobody,
                               NULL, &r->out, &r->err, &ws, &err));
    g_assert_no_error(err);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    g_assert_cmpint(r->status, !=, 99);
}

static void
test_permission(void)
{
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *log = NULL;
    CliRun r = { 0 };

    if (pt_test_skip_without_nobody())
        return;
    if (!cli_live_setup())
        return;
    d = cli_daemon_up(NULL, "control-group = nogroup\nmetrics-listen =\n"
                      "[targets]\nlibvirt = false\n[policy]\ndefault = observe\n");
    g_assert_cmpint(g_chmod(d->dir, 0711), ==, 0);

    run_as_nobody(&r, d, (const char *const[]){ "status", NULL });
    g_assert_cmpstr(r.err, ==, "");
    g_assert_cmpint(r.status, ==, 0);
    g_assert_true(g_str_has_prefix(r.out, "mode    enforce"));
    run_as_nobody(&r, d, (const char *const[]){ "mode", "observe", NULL });
    g_assert_cmpint(r.status, ==, 1);
    g_assert_cmpstr(r.out, ==, "");
    g_assert_true(g_str_has_prefix(r.err, "polltunectl: mode-set: PermissionDenied: "));
    cli_run_clear(&r);
    g_file_get_contents(d->log_path, &log, NULL, NULL);
    g_assert_nonnull(strstr(log, "refused mode-set from uid 65534"));
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

        g_assert_cmpstr(pt_json_path_str(st, "mode"), ==, "enforce");
    }

    /* Without a way to the socket: connect fails and says what to check. */
    g_assert_cmpint(g_chmod(d->dir, 0700), ==, 0);
    run_as_nobody(&r, d, (const char *const[]){ "status", NULL });
    g_assert_cmpint(r.status, ==, 1);
    g_assert_nonnull(strstr(r.err, "connect: Permission denied (are you root or in polltuned's "
                                   "control group?)"));
    cli_run_clear(&r);
    cli_daemon_log_check(d);
}

/* What bash offers for the words after "polltunectl -s SOCKET", the last
 * being the one completed: the installed script under bash-completion. */
static char **
complete_words(const char *const *words)
{
    g_autofree char *script = g_build_filename(g_getenv("PT_SOURCE_ROOT"), "cli",
                                               "polltunectl.bash-completion", NULL);
    g_autofree char *bindir = g_path_get_dirname(g_getenv("PT_POLLTUNECTL"));
    g_autofree char *line = NULL;
    g_autofree char *prog = NULL;
    g_autofree char *out = NULL;
    g_autoptr(GString) w = g_string_new("polltunectl -s ");
    guint n = 2;
    int ws = 0;

    g_string_append(w, cli_live.d->socket_path);
    for (const char *const *a = words; *a; a++, n++)
        g_string_append_printf(w, " %s", *a);
    line = g_shell_quote(w->str);
    prog = g_strdup_printf("export PATH=%s:$PATH; . /usr/share/bash-completion/bash_completion;"
                           " . %s; COMP_LINE=%s; COMP_POINT=${#COMP_LINE};"
                           " COMP_WORDS=($COMP_LINE%s); COMP_CWORD=%u; _polltunectl 2>/dev/null;"
                           " printf '%%s\\n' \"${COMPREPLY[@]}\"", bindir, script, line,
                           g_str_has_suffix(w->str, " ") ? " ''" : "", n);
    g_assert_true(g_spawn_sync(NULL, (char *[]){ (char *)"bash", (char *)"-c", prog, NULL },
                               NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out, NULL, &ws, NULL));
    g_assert_true(g_spawn_check_wait_status(ws, NULL));
    return g_strsplit(g_strchomp(out), "\n", -1);
}

static gboolean
strv_has(char **v, const char *s)
{
    return v && g_strv_contains((const char *const *)v, s);
}

/* Completion offers VM names, then a VM's iothreads, then what fits. */
static void
test_completion(void)
{
    g_auto(GStrv) vms = NULL, ios = NULL, vals = NULL, opts = NULL, pol = NULL;

    if (!g_file_test("/usr/share/bash-completion/bash_completion", G_FILE_TEST_EXISTS)) {
        g_test_skip("bash-completion is not installed");
        return;
    }
    if (!cli_live_setup())
        return;
    vms = complete_words((const char *const[]){ "show", "vm-", NULL });
    g_assert_true(strv_has(vms, "vm-a"));
    ios = complete_words((const char *const[]){ "override", "set", "vm-a/", NULL });
    g_assert_true(strv_has(ios, "vm-a/iot0"));
    g_assert_true(strv_has(ios, "vm-a/iot1"));
    vals = complete_words((const char *const[]){ "override", "set", "vm-a/iot0", "poll-", NULL });
    g_assert_true(strv_has(vals, "poll-max-ns="));
    opts = complete_words((const char *const[]){ "override", "set", "vm-a/iot0", "--poll", NULL });
    g_assert_true(strv_has(opts, "--poll-max-ns"));
    g_assert_true(strv_has(opts, "--poll-shrink"));
    pol = complete_words((const char *const[]){ "policy", "set", "--poll-m", NULL });
    g_assert_true(strv_has(pol, "--poll-max-ns"));
}

/* ---- the daemon's history, offline, by the VM's name ------------------ */

/* polltunectl --db @db ARGS..., which must exit with @status. */
static char *
offline_run(const char *db, int status, const char *const *args)
{
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    CliRun r = { 0 };
    char *out;

    g_ptr_array_add(argv, (char *)"--db");
    g_ptr_array_add(argv, (char *)db);
    for (guint i = 0; args[i]; i++)
        g_ptr_array_add(argv, (char *)args[i]);
    g_ptr_array_add(argv, NULL);
    cli_run(&r, (const char *const *)argv->pdata);
    if (r.status != status)
        g_error("polltunectl --db %s %s: exit %d, not %d: %s", db, args[0], r.status, status,
                r.err);
    out = g_strconcat(r.out, r.err, NULL);
    cli_run_clear(&r);
    return out;
}
#define OFFLINE(db, status, ...) offline_run(db, status, (const char *const[]){ __VA_ARGS__, NULL })

/* The history polltuned writes names vm-a as status does: history, export
 * and report --db take that name, not only the socket's path, and the
 * output names the VM by it; a name two targets went by is refused with
 * both paths. */
static void
test_offline_by_name(void)
{
    const char *db = cli_live.d->db_path;
    const char *sock = cli_live.vm->daemon_sock;
    g_autofree char *copy = NULL;
    g_autofree char *sql = NULL;
    g_autofree char *report = NULL;
    g_autofree char *html = NULL;
    g_autofree char *out = NULL;
    g_autofree char *text = NULL;
    g_autoptr(json_object) h = NULL;
    g_auto(GStrv) lines = NULL;
    gint64 deadline = g_get_monotonic_time() + 10 * G_USEC_PER_SEC;
    guint n = 0;

    if (!cli_live_setup())
        return;
    /* The name is written with the first tick the daemon stores. */
    while (test_sql_int(db, "SELECT count(*) FROM targets WHERE display_name = 'vm-a'") != 1) {
        if (g_get_monotonic_time() > deadline)
            g_error("no target named vm-a in %s", db);
        g_usleep(50 * 1000);
    }
    g_clear_pointer(&h, json_object_put);
    out = OFFLINE(db, 0, "--json", "history", "vm-a", "--since", "1h");
    h = json_tokener_parse(out);
    g_assert_cmpstr(pt_json_path_str(h, "rows/0/target"), ==, sock);
    g_assert_cmpstr(pt_json_path_str(h, "rows/0/name"), ==, "vm-a");
    text = OFFLINE(db, 0, "history", "vm-a/iot1", "--since", "1h");
    g_assert_nonnull(strstr(text, "vm-a/iot1 \302\267 "));
    g_assert_null(strstr(text, sock));

    g_free(out);
    out = OFFLINE(db, 0, "export", "--vm", "vm-a", "--since", "1h");
    lines = g_strsplit(out, "\r\n", -1);
    g_assert_true(g_str_has_prefix(lines[0], "time,target,name,iothread,"));
    for (guint i = 1; lines[i] && *lines[i]; i++, n++) {
        g_autofree char *cells = g_strconcat(sock, ",vm-a,", NULL);

        g_assert_true(g_str_has_prefix(strchr(lines[i], ',') + 1, cells));
    }
    g_assert_cmpuint(n, >, 0);

    report = g_build_filename(cli_live.tmp_dir, "offline-by-name.html", NULL);
    g_free(OFFLINE(db, 0, "report", "--vm", "vm-a", "-o", report));
    g_assert_true(g_file_get_contents(report, &html, NULL, NULL));
    g_assert_nonnull(strstr(html, "<tr><td>vm-a/iot1</td>"));
    g_assert_null(strstr(html, sock));
    g_unlink(report);

    /* A copy where another socket's QEMU went by vm-a too. */
    copy = g_build_filename(cli_live.tmp_dir, "two-vm-a.db", NULL);
    sql = g_strdup_printf("VACUUM INTO '%s'", copy);
    test_sql_int(db, sql);
    test_sql_int(copy, "INSERT INTO targets (kind, name, first_seen, last_seen, display_name)"
                       " VALUES (1, '/elsewhere/vm-a.qmp', 0, 0, 'vm-a')");
    g_free(out);
    out = OFFLINE(copy, 1, "history", "vm-a");
    g_assert_nonnull(strstr(out, sock));
    g_assert_nonnull(strstr(out, "/elsewhere/vm-a.qmp"));
    g_free(out);
    out = OFFLINE(copy, 1, "export", "--vm", "vm-a");
    g_assert_nonnull(strstr(out, "/elsewhere/vm-a.qmp"));
    g_free(out);
    out = OFFLINE(copy, 0, "--json", "history", sock, "--since", "1h");
    g_clear_pointer(&h, json_object_put);
    h = json_tokener_parse(out);
    /* Named by its path, the name no longer being its own. */
    g_assert_cmpstr(pt_json_path_str(h, "rows/0/name"), ==, sock);
    g_unlink(copy);
}

/* ---- the history of a VM that has exited, by its name ---------------- */

static gboolean
target_unlisted(json_object *list, const PtDaemonWait *w)
{
    return !pt_test_status_target(list, w->target);
}

/* Rows of history vm-gone --json, or 0 while it has none. */
static gboolean
history_has_rows(gpointer data)
{
    g_autoptr(json_object) h = CTL_JSON("history", data, "--since", "1h");

    return json_object_array_length(pt_json_path(h, "rows")) > 0;
}

/* Once its QEMU has exited a VM is no longer listed, but the daemon still
 * gives its history by the name it went by, as --db does; a name two
 * recorded targets went by is refused naming both.  The old daemon knew a
 * name only while the VM was listed: NotFound. */
static void
test_history_exited(void)
{
    g_autoptr(PtTestVm) vm = NULL;
    g_autoptr(json_object) h = NULL;
    g_autofree char *sock = NULL;
    g_autofree char *csv = NULL;
    g_autofree char *row = NULL;
    g_auto(GStrv) lines = NULL;
    PtDaemonWait gone = { .command = "list", .check = target_unlisted, .target = "vm-gone" };

    if (!cli_live_setup())
        return;
    vm = pt_test_vm_start(cli_live.vm_dir, "vm-gone", NULL);
    sock = g_strdup(vm->daemon_sock);
    g_assert_cmpint(pt_test_wait_target(cli_live.d, "vm-gone", 2, TRUE, 5000), >=, 0);
    g_assert_true(pt_test_wait(history_has_rows, (gpointer) "vm-gone", 5000));
    g_clear_pointer(&vm, pt_test_vm_free);
    gone.d = cli_live.d;
    g_assert_true(pt_test_daemon_wait(&gone, 10000));

    h = CTL_JSON("history", "vm-gone", "--since", "1h");
    g_assert_cmpuint(json_object_array_length(pt_json_path(h, "rows")), >, 0);
    g_assert_cmpstr(pt_json_path_str(h, "rows/0/target"), ==, sock);
    g_free(CTL_OK("history", "vm-gone/iot1", "--since", "1h"));
    /* export --vm by the name too, each row naming it beside the path. */
    csv = CTL_OK("export", "--vm", "vm-gone", "--since", "1h");
    lines = g_strsplit(csv, "\r\n", -1);
    row = g_strconcat(",", sock, ",vm-gone,", NULL);
    g_assert_nonnull(lines[1]);
    g_assert_nonnull(strstr(lines[1], row));

    /* Another socket's QEMU that went by vm-gone too. */
    test_sql_int(cli_live.d->db_path,
                 "INSERT INTO targets (kind, name, first_seen, last_seen, display_name)"
                 " VALUES (1, '/elsewhere/vm-gone.qmp', 0, 0, 'vm-gone')");
    CTL_FAILS(1, "/elsewhere/vm-gone.qmp", "history", "vm-gone");
    CTL_FAILS(1, sock, "history", "vm-gone");
    CTL_FAILS(1, "/elsewhere/vm-gone.qmp", "export", "--vm", "vm-gone");
    /* Its identity still names it alone. */
    g_clear_pointer(&h, json_object_put);
    h = CTL_JSON("history", sock, "--since", "1h");
    g_assert_cmpstr(pt_json_path_str(h, "rows/0/target"), ==, sock);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    cli_live_add("/cli/daemon/errors", test_errors);
    cli_live_add("/cli/daemon/offline-by-name", test_offline_by_name);
    cli_live_add("/cli/daemon/history-exited", test_history_exited);
    cli_live_add("/cli/daemon/policy", test_policy);
    cli_live_add("/cli/daemon/override", test_override);
    cli_live_add("/cli/daemon/override-expires", test_override_expires);
    cli_live_add("/cli/daemon/mode", test_mode);
    cli_live_add("/cli/daemon/attach-detach", test_attach_detach);
    cli_live_add("/cli/daemon/reload", test_reload);
    cli_live_add("/cli/daemon/permission", test_permission);
    cli_live_add("/cli/daemon/completion", test_completion);
    return cli_live_run(NULL);
}
