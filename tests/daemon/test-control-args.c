/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hostile control arguments against the real polltuned attached to a real
 * QEMU: every request below once crashed the daemon, stored nonsense or
 * told a caller more than she may know.  Each is refused with
 * InvalidParameter (or PermissionDenied) naming the argument, and the
 * daemon lives on, tuning as before.
 */
#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "pt-test-qemu.h"
#include "pt-test-qmp.h"
#include "qmp-json.h"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>
#include <glib/gstdio.h>

typedef struct {
    char *vm_dir;
    PtTestVm *vm;
    PtTestDaemon *d;
} Fixture;

/* QEMU vm-a (iot0, iot1) found through the glob, under static:50000/2/2,
 * with @extra in [daemon]. */
static gboolean
fixture_start(Fixture *f, const char *extra)
{
    g_autoptr(GError) err = NULL;

    if (pt_test_skip_without_qemu())
        return FALSE;
    f->vm_dir = g_dir_make_tmp("pt-args-XXXXXX", &err);
    g_assert_no_error(err);
    f->vm = pt_test_vm_start(f->vm_dir, "vm-a", NULL);
    f->d = pt_test_daemon_up(PT_TEST_CONF_BASE, "%s[targets]\nqmp-globs = %s/*.qmp\n"
                             "[policy]\ndefault = static:50000/2/2\n", extra ? extra : "",
                             f->vm_dir);
    g_assert_cmpint(pt_test_wait_target(f->d, "vm-a", 2, TRUE, 5000), >=, 0);
    pt_test_qmp_assert_poll_max(f->vm->qmp, "vm-a", "iot0", 50000, 3000);
    return TRUE;
}

static void
fixture_stop(Fixture *f)
{
    if (f->d)
        g_assert_cmpint(pt_test_daemon_stop(f->d), ==, 0);
    g_clear_pointer(&f->d, pt_test_daemon_free);
    g_clear_pointer(&f->vm, pt_test_vm_free);
    if (f->vm_dir)
        g_rmdir(f->vm_dir);
    g_clear_pointer(&f->vm_dir, g_free);
}

/* override-clear with an id of -1 called g_str_equal(o->target, NULL)
 * and took the daemon down, leaving the VM at the override's value. */
static void
test_override_clear_bad_id(void)
{
    static const PtTestCall refused[] = {
        { "override-clear", "{\"id\": -1}", "InvalidParameter",
                       "id: must be a positive integer" },
        { "override-clear", "{\"id\": 0}", "InvalidParameter", "id: " },
        { "override-clear", "{\"id\": -9223372036854775808}",
                       "InvalidParameter", "id: " },
        { "override-clear", "{\"id\": \"1\"}", "InvalidParameter",
                       "id: not an integer" },
        { "override-clear", "{\"id\": 1.5}", "InvalidParameter",
                       "id: not an integer" },
        { "override-clear", "{}", "InvalidParameter", "target: missing" },
        { "override-clear", "{\"target\": 7}", "InvalidParameter",
                       "target: not a string" },
        { "override-clear", "{\"id\": 987654321}", "NotFound", "no active" },
        /* The other integers of the protocol are checked the same way. */
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": 1000, "
                       "\"poll-grow\": -1}", "InvalidParameter",
          "poll-grow: must not be negative" },
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": -5}",
                       "InvalidParameter", "poll-max-ns: must not be negative" },
        { "show", "{\"target\": \"vm-a\", \"ticks\": -3}", "InvalidParameter",
                       "ticks: " },
        { "export", "{\"decisions\": \"false\"}", "InvalidParameter",
                       "decisions: not a boolean" },
    };
    Fixture f = { 0 };
    g_autoptr(json_object) set = NULL;
    g_autoptr(json_object) st = NULL;
    g_autofree char *by_id = NULL;

    if (!fixture_start(&f, NULL))
        return;
    set = pt_test_daemon_ok(f.d, "override-set",
                            "{\"target\": \"vm-a\", \"iothread\": \"iot1\", "
                            "\"poll-max-ns\": 12000}");
    pt_test_qmp_assert_poll_max(f.vm->qmp, "vm-a", "iot1", 12000, 3000);

    pt_test_daemon_calls(f.d, refused, G_N_ELEMENTS(refused));

    /* Alive, still holding the override, and it clears by its id. */
    st = pt_test_daemon_ok(f.d, "status", NULL);
    g_assert_cmpint(pt_json_path_int(pt_test_status_iothread(st, "vm-a", "iot1"),
                                     "override/id"), ==, pt_json_path_int(set, "id"));
    by_id = g_strdup_printf("{\"id\": %" G_GINT64_FORMAT "}", pt_json_path_int(set, "id"));
    json_object_put(pt_test_daemon_ok(f.d, "override-clear", by_id));
    pt_test_qmp_assert_poll_max(f.vm->qmp, "vm-a", "iot1", 50000, 3000);
    fixture_stop(&f);
}

/* --for 106751991d is 9.2e18 ms, within gint64; now + that wrapped to a
 * negative expiry, and the override was stored already expired. */
static void
test_override_for_bound(void)
{
    static const PtTestCall refused[] = {
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": 12000, "
                       "\"for\": \"106751991d\"}", "InvalidParameter",
                       "for: '106751991d' is longer than 366d" },
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": 12000, "
                       "\"for\": \"367d\"}", "InvalidParameter", "366d" },
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": 12000, "
                       "\"for\": \"99999999999999999999w\"}", "InvalidParameter", "for: " },
    };
    Fixture f = { 0 };
    g_autoptr(json_object) ok = NULL;
    g_autoptr(json_object) st = NULL;
    gint64 now_ms;

    if (!fixture_start(&f, NULL))
        return;
    pt_test_daemon_calls(f.d, refused, G_N_ELEMENTS(refused));
    st = pt_test_daemon_ok(f.d, "status", NULL);
    g_assert_null(pt_json_path(pt_test_status_iothread(st, "vm-a", "iot0"), "override"));

    /* The bound itself is accepted, and expires a year on. */
    now_ms = g_get_real_time() / 1000;
    ok = pt_test_daemon_ok(f.d, "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": "
                           "12000, \"for\": \"366d\"}");
    g_assert_cmpint(pt_json_path_int(ok, "expires_ms"), >=, now_ms + 366 * 86400000LL);
    g_assert_cmpint(pt_json_path_int(ok, "expires_ms"), <, now_ms + 367 * 86400000LL);
    pt_test_qmp_assert_poll_max(f.vm->qmp, "vm-a", "iot0", 12000, 3000);
    fixture_stop(&f);
}

/* "off\u0000static:1" is valid JSON; read as a C string it was "off". */
static void
test_embedded_nul(void)
{
    static const PtTestCall refused[] = {
        { "policy-set", "{\"target\": \"vm-*\", \"policy\": "
                       "\"off\\u0000static:1\"}", "InvalidParameter",
                       "policy: contains a NUL character" },
        { "policy-set", "{\"target\": \"vm-a\\u0000x\", \"policy\": \"off\"}",
                       "InvalidParameter", "target: contains a NUL character" },
        { "show", "{\"target\": \"vm-a\\u0000\"}", "InvalidParameter",
                       "target: contains a NUL character" },
        { "override-set", "{\"target\": \"vm-a\", \"poll-max-ns\": 1, "
                       "\"reason\": \"a\\u0000b\"}", "InvalidParameter", "reason: " },
        /* Nor other control characters, which would reach logs and terminals. */
        { "policy-set", "{\"target\": \"vm-\\u001b[2J\", \"policy\": \"off\"}",
                       "InvalidParameter", "target: contains a control character" },
        /* A command name cut short at a NUL is no command. */
        { "status\\u0000x", NULL, "InvalidParameter", "execute" },
    };
    Fixture f = { 0 };
    g_autoptr(json_object) pg = NULL;

    if (!fixture_start(&f, NULL))
        return;
    pt_test_daemon_calls(f.d, refused, G_N_ELEMENTS(refused));
    pg = pt_test_daemon_ok(f.d, "policy-get", NULL);
    g_assert_cmpuint(json_object_array_length(pt_json_path(pg, "rules")), ==, 0);
    /* Nothing was set: QEMU stays under the configured policy. */
    g_assert_cmpuint(pt_test_qmp_poll_max(f.vm->qmp, "iot0"), ==, 50000);
    fixture_stop(&f);
}

/*
 * attach as a member of the admin group: root's connect must not reach a
 * socket she could not reach herself, and the answer must not tell her
 * whether a file exists where she may not look.
 */
static void
test_attach_as_caller(void)
{
    Fixture f = { 0 };
    g_autoptr(PtTestVm) hidden = NULL;
    g_autofree char *secret = NULL, *missing = NULL, *args = NULL, *args2 = NULL;
    g_autoptr(json_object) r1 = NULL;
    g_autoptr(json_object) r2 = NULL;
    g_autoptr(json_object) r3 = NULL;
    g_autoptr(json_object) r4 = NULL;
    g_autoptr(json_object) l = NULL;
    g_autofree char *d1 = NULL, *d2 = NULL;

    if (pt_test_skip_without_nobody())
        return;
    if (!fixture_start(&f, "control-group = nogroup\nadmin-group = nogroup\n"))
        return;
    g_assert_cmpint(g_chmod(f.d->dir, 0755), ==, 0);
    /* A QEMU whose monitor is in a directory only root may enter. */
    secret = g_build_filename(f.d->dir, "secret", NULL);
    g_assert_cmpint(g_mkdir(secret, 0700), ==, 0);
    hidden = pt_test_vm_start(secret, "hidden", NULL);
    missing = g_build_filename(secret, "nothing.qmp", NULL);
    args = g_strdup_printf("{\"path\": \"%s\", \"name\": \"hidden\"}", hidden->daemon_sock);
    args2 = g_strdup_printf("{\"path\": \"%s\", \"name\": \"nothing\"}", missing);

    r1 = pt_test_daemon_call_as(f.d, 65534, 65534, "attach", args);
    r2 = pt_test_daemon_call_as(f.d, 65534, 65534, "attach", args2);
    g_test_message("as nobody: %s / %s", json_object_to_json_string(r1),
                   json_object_to_json_string(r2));
    g_assert_cmpstr(pt_json_path_str(r1, "error/class"), ==, "PermissionDenied");
    g_assert_cmpstr(pt_json_path_str(r2, "error/class"), ==, "PermissionDenied");
    /* The same words for a socket that exists and a path that does not. */
    d1 = g_strdup(pt_json_path_str(r1, "error/desc") + strlen(hidden->daemon_sock));
    d2 = g_strdup(pt_json_path_str(r2, "error/desc") + strlen(missing));
    g_assert_cmpstr(d1, ==, d2);
    l = pt_test_daemon_ok(f.d, "list", NULL);
    g_assert_null(pt_test_status_target(l, "hidden"));

    /* The directory open to her, the socket still hers to write only
     * by mode: refused at the socket; made writable: attached, as she
     * could have connected herself. */
    g_assert_cmpint(g_chmod(secret, 0711), ==, 0);
    g_assert_cmpint(g_chmod(hidden->daemon_sock, 0700), ==, 0);
    r3 = pt_test_daemon_call_as(f.d, 65534, 65534, "attach", args);
    g_assert_cmpstr(pt_json_path_str(r3, "error/class"), ==, "PermissionDenied");
    g_assert_cmpint(g_chmod(hidden->daemon_sock, 0777), ==, 0);
    r4 = pt_test_daemon_call_as(f.d, 65534, 65534, "attach", args);
    g_test_message("socket open to her: %s", json_object_to_json_string(r4));
    /* A QMP target is its socket path; "hidden" is the name it goes by. */
    g_assert_cmpstr(pt_json_path_str(r4, "return/name"), ==, hidden->daemon_sock);
    g_assert_cmpstr(pt_json_path_str(r4, "return/display_name"), ==, "hidden");
    g_assert_cmpint(pt_test_wait_target(f.d, "hidden", 2, TRUE, 5000), >=, 0);
    /* Where she may search, a missing file is hers to know about. */
    json_object_put(r2);
    r2 = pt_test_daemon_call_as(f.d, 65534, 65534, "attach", args2);
    g_assert_cmpstr(pt_json_path_str(r2, "error/class"), ==, "NotFound");

    json_object_put(pt_test_daemon_ok(f.d, "detach", "{\"name\": \"hidden\"}"));
    g_clear_pointer(&hidden, pt_test_vm_free);
    g_rmdir(secret);
    fixture_stop(&f);
}

/*
 * memory and forget name a VM and an iothread as every command does; a
 * name neither tuned nor kept in the store, an iothread the VM lacks, a
 * path for an iothread, are refused; forget changes what the policy will
 * do, so a reader may list the memory but not clear it.
 */
static void
test_memory_args(void)
{
    static const PtTestCall refused[] = {
        { "memory", "{}", "InvalidParameter", "target: missing" },
        { "memory", "{\"target\": \"vm-zz\"}", "NotFound",
                       "vm-zz: no such target" },
        { "memory", "{\"target\": \"vm-a\", \"iothread\": \"iot9\"}",
                       "NotFound", "vm-a/iot9: no such iothread; vm-a has iot0, iot1" },
        { "memory", "{\"target\": \"vm-a\", \"iothread\": \"a/b\"}",
                       "InvalidParameter", "no iothread id" },
        { "forget", "{\"target\": \"vm-zz\", \"iothread\": \"iot0\"}",
                       "NotFound", "vm-zz: no such target" },
        { "forget", "{\"target\": 3}", "InvalidParameter",
                       "target: not a string" },
    };
    Fixture f = { 0 };
    g_autoptr(json_object) m = NULL;
    g_autoptr(json_object) r = NULL;
    g_autoptr(json_object) r2 = NULL;

    if (pt_test_skip_without_nobody())
        return;
    if (!fixture_start(&f, "control-group = nogroup\n"))
        return;
    g_assert_cmpint(g_chmod(f.d->dir, 0755), ==, 0);
    pt_test_daemon_calls(f.d, refused, G_N_ELEMENTS(refused));

    /* A reader sees the (empty) memory, and may not forget it. */
    r = pt_test_daemon_call_as(f.d, 65534, 65534, "memory", "{\"target\": \"vm-a\"}");
    g_assert_null(pt_json_path(r, "error"));
    g_assert_cmpstr(pt_json_path_str(r, "return/vm"), ==, "vm-a");
    g_assert_cmpint(json_object_array_length(pt_json_path(r, "return/iothreads")), ==, 0);
    r2 = pt_test_daemon_call_as(f.d, 65534, 65534, "forget", "{\"target\": \"vm-a\"}");
    g_assert_cmpstr(pt_json_path_str(r2, "error/class"), ==, "PermissionDenied");
    /* Root may; an iothread with nothing learnt lists empty. */
    json_object_put(pt_test_daemon_ok(f.d, "forget", "{\"target\": \"vm-a\"}"));
    m = pt_test_daemon_ok(f.d, "memory", "{\"target\": \"vm-a\", \"iothread\": \"iot1\"}");
    g_assert_cmpstr(pt_json_path_str(m, "iothread"), ==, "iot1");
    g_assert_cmpint(json_object_array_length(pt_json_path(m, "iothreads/0/entries")), ==, 0);
    fixture_stop(&f);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/control-args/override-clear-bad-id", test_override_clear_bad_id);
    g_test_add_func("/daemon/control-args/override-for-bound", test_override_for_bound);
    g_test_add_func("/daemon/control-args/embedded-nul", test_embedded_nul);
    g_test_add_func("/daemon/control-args/attach-as-caller", test_attach_as_caller);
    g_test_add_func("/daemon/control-args/memory", test_memory_args);
    return g_test_run();
}
