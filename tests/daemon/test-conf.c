/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltuned.conf loading: the shipped example parses and means the
 * defaults, and every kind of mistake is refused with an error that names
 * the file, the line, the group and the key, so the operator can go
 * straight to it.
 */
#include "pt-conf.h"
#include "pt-metrics.h"

#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <glib/gstdio.h>

static PtConf *
conf_from(const char *text)
{
    g_autoptr(GError) err = NULL;
    PtConf *c = pt_conf_load_data(text, strlen(text), "t.conf", &err);

    g_assert_no_error(err);
    return c;
}

static void
test_example(void)
{
    const char *root = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *path = NULL;
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) conf = NULL;
    g_autoptr(PtConf) def = pt_conf_new_default();

    g_assert_nonnull(root);
    path = g_build_filename(root, "docs", "polltuned.conf.example", NULL);
    conf = pt_conf_load(path, TRUE, &err);
    g_assert_no_error(err);
    g_assert_nonnull(conf);

    /* The example sets every key to its default, as it says. */
    g_assert_cmpuint(conf->interval_ms, ==, def->interval_ms);
    g_assert_cmpint(conf->mode, ==, def->mode);
    g_assert_cmpint(conf->restore_on_exit, ==, def->restore_on_exit);
    g_assert_cmpint(conf->on_restart, ==, def->on_restart);
    g_assert_cmpuint(conf->qmp_timeout_ms, ==, def->qmp_timeout_ms);
    g_assert_cmpstr(conf->exits_source, ==, def->exits_source);
    g_assert_cmpstr(conf->database, ==, def->database);
    g_assert_cmpstr(conf->control_socket, ==, def->control_socket);
    g_assert_cmpstr(conf->control_group, ==, def->control_group);
    g_assert_null(conf->admin_group);
    g_assert_cmpstr(conf->metrics_listen, ==, def->metrics_listen);
    g_assert_cmpuint(conf->metrics_max_conns, ==, def->metrics_max_conns);
    g_assert_cmpuint(conf->metrics_idle_ms, ==, def->metrics_idle_ms);
    g_assert_true(conf->libvirt);
    g_assert_cmpstr(conf->libvirt_uri, ==, def->libvirt_uri);
    g_assert_cmpuint(g_strv_length(conf->qmp_sockets), ==, 0);
    g_assert_cmpuint(g_strv_length(conf->qmp_globs), ==, 0);
    g_assert_cmpint(conf->raw_retention_ms, ==, def->raw_retention_ms);
    g_assert_cmpint(conf->rollup_1m_retention_ms, ==, def->rollup_1m_retention_ms);
    g_assert_cmpint(conf->rollup_1h_retention_ms, ==, def->rollup_1h_retention_ms);
    g_assert_cmpint(conf->max_size_bytes, ==, def->max_size_bytes);
    g_assert_true(memcmp(&conf->policy->default_spec, &def->policy->default_spec,
                         sizeof(PolicySpec)) == 0);
    g_assert_cmpuint(conf->policy->max_poll_max_ns, ==, def->policy->max_poll_max_ns);
    g_assert_cmpuint(conf->policy->grow_min, ==, def->policy->grow_min);
    g_assert_cmpuint(conf->policy->grow_max, ==, def->policy->grow_max);
    g_assert_cmpuint(conf->policy->shrink_min, ==, def->policy->shrink_min);
    g_assert_cmpuint(conf->policy->shrink_max, ==, def->policy->shrink_max);
    g_assert_cmpint(conf->policy->min_dwell_ms, ==, def->policy->min_dwell_ms);
    g_assert_cmpint(conf->policy->revalidate_ms, ==, def->policy->revalidate_ms);
    g_assert_cmpint(conf->policy->memory_ttl_ms, ==, def->policy->memory_ttl_ms);
    g_assert_cmpfloat(conf->policy->idle_iops, ==, def->policy->idle_iops);
    g_assert_cmpfloat(conf->policy->budget_cores, ==, def->policy->budget_cores);
    g_assert_cmpfloat(conf->policy->psi_some_limit, ==, def->policy->psi_some_limit);
    g_assert_cmpfloat(conf->policy->vcpu_delay_limit, ==, def->policy->vcpu_delay_limit);
    g_assert_cmpfloat(conf->policy->iothread_delay_limit, ==,
                      def->policy->iothread_delay_limit);
    g_assert_cmpuint(conf->policy->rules->len, ==, 0);
}

static void
test_missing(void)
{
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) conf = pt_conf_load("/nonexistent/polltuned.conf", FALSE, &err);
    g_autoptr(PtConf) strict = NULL;

    g_assert_no_error(err);
    g_assert_nonnull(conf);
    g_assert_cmpuint(conf->interval_ms, ==, 1000);
    strict = pt_conf_load("/nonexistent/polltuned.conf", TRUE, &err);
    g_assert_null(strict);
    g_assert_nonnull(err);
    g_assert_nonnull(strstr(err->message, "/nonexistent/polltuned.conf"));
}

/* Only a regular file of at most PT_CONF_MAX_BYTES is read; a FIFO is
 * refused without waiting for a writer (the open() used to wait for
 * good), and every refusal names the path and what it is. */
static void
test_not_regular(void)
{
    g_autofree char *dir = g_dir_make_tmp("pt-conf-XXXXXX", NULL);
    g_autofree char *fifo = g_build_filename(dir, "fifo.conf", NULL);
    g_autofree char *big = g_build_filename(dir, "big.conf", NULL);
    g_autofree char *text = g_strnfill(PT_CONF_MAX_BYTES, '#');
    static const struct {
        const char *path, *says;
    } refused[] = {
        { NULL, "is a FIFO, not a regular file: refused" },
        { "/dev/null", "is a character device, not a regular file: refused" },
        { "/", "is a directory, not a regular file: refused" },
        { NULL, "above the limit of 4194304 bytes" },
    };

    g_assert_cmpint(mkfifo(fifo, 0600), ==, 0);
    text[PT_CONF_MAX_BYTES - 1] = '\n';
    g_assert_true(g_file_set_contents(big, text, PT_CONF_MAX_BYTES, NULL));
    {
        /* At the limit: read. */
        g_autoptr(GError) err = NULL;
        g_autoptr(PtConf) conf = pt_conf_load(big, TRUE, &err);

        g_assert_no_error(err);
        g_assert_true(conf->from_file);
    }
    /* A byte more: refused. */
    {
        FILE *f = fopen(big, "a");

        g_assert_nonnull(f);
        fputc('\n', f);
        fclose(f);
    }
    for (gsize i = 0; i < G_N_ELEMENTS(refused); i++) {
        g_autoptr(GError) err = NULL;
        const char *path = refused[i].path ? refused[i].path : i == 0 ? fifo : big;
        g_autoptr(PtConf) conf = pt_conf_load(path, FALSE, &err);

        g_assert_null(conf);
        g_assert_nonnull(err);
        g_assert_true(g_str_has_prefix(err->message, path));
        g_assert_nonnull(strstr(err->message, refused[i].says));
    }
    g_unlink(fifo);
    g_unlink(big);
    g_rmdir(dir);
}

/* --check-config prints every key; what it prints loads back to the
 * same configuration, with non-default values, lists and rules. */
static void
test_format(void)
{
    static const char text[] =
        "[daemon]\ninterval = 250ms\nmode = recommend\nadmin-group = wheel\n"
        "metrics-listen =\n"
        "[targets]\nlibvirt = false\nqmp-sockets = /run/a.qmp;/run/b.qmp\n"
        "qmp-globs = /run/vm/*.qmp\n"
        "[retention]\nraw = 3d\nmax-size = 1G\n"
        "[policy]\ndefault = static:50000/4/4\nbudget-cores = 1.5\nidle-iops = 250\n"
        "[rule db-*]\npolicy = adaptive:latency\n";
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) conf = pt_conf_load_data(text, strlen(text), "t.conf", &err);
    g_autoptr(PtConf) again = NULL;
    g_autofree char *out = NULL, *out2 = NULL;
    g_autoptr(GKeyFile) kf = g_key_file_new();
    static const char *const groups[] = { "daemon", "targets", "retention", "policy", NULL };
    gsize nkeys = 0;

    g_assert_no_error(err);
    out = pt_conf_format(conf);
    again = pt_conf_load_data(out, strlen(out), "formatted", &err);
    g_assert_no_error(err);
    out2 = pt_conf_format(again);
    /* Equal but for the first line, which names the source. */
    g_assert_cmpstr(strchr(out, '\n'), ==, strchr(out2, '\n'));
    g_assert_cmpuint(again->interval_ms, ==, 250);
    g_assert_cmpint(again->mode, ==, PT_MODE_RECOMMEND);
    g_assert_null(again->metrics_listen);
    g_assert_cmpstr(again->qmp_sockets[1], ==, "/run/b.qmp");
    g_assert_cmpint(again->max_size_bytes, ==, 1024 * 1024 * 1024);
    g_assert_cmpfloat(again->policy->budget_cores, ==, 1.5);
    g_assert_cmpuint(again->policy->rules->len, ==, 1);
    /* Durations and sizes as the file wrote them. */
    g_assert_nonnull(strstr(out, "\ninterval = 250ms\n"));
    g_assert_nonnull(strstr(out, "\nraw = 3d\n"));
    g_assert_nonnull(strstr(out, "\nmax-size = 1G\n"));
    /* Every key: 13 daemon, 5 targets, 4 retention, 18 policy. */
    g_assert_true(g_key_file_load_from_data(kf, out, -1, G_KEY_FILE_NONE, &err));
    for (guint i = 0; groups[i]; i++) {
        g_auto(GStrv) keys = g_key_file_get_keys(kf, groups[i], NULL, &err);

        g_assert_no_error(err);
        nkeys += g_strv_length(keys);
    }
    g_assert_cmpuint(nkeys, ==, 13 + 5 + 4 + 18);
}

/* --check-config shows durations and sizes as written, and those not
 * written (defaults, the command line's) in the largest exact unit:
 * never a count of milliseconds an operator has to divide. */
static void
test_format_units(void)
{
    static const struct {
        gint64 v;
        const char *duration, *size;
    } cases[] = {
        { 0, "0ms", "0B" }, { 1, "1ms", "1B" }, { 250, "250ms", "250B" },
        { 1000, "1s", "1000B" }, { 1024, "1024ms", "1KiB" }, { 90000, "90s", "90000B" },
        { 5400000, "90m", "5400000B" }, { 172800000, "2d", "168750KiB" },
        { 3 * 3600000, "3h", "10800000B" }, { 730 * G_GINT64_CONSTANT(86400000), "730d", NULL },
        { 1209600000, "2w", NULL }, { G_GINT64_CONSTANT(2) << 30, NULL, "2GiB" },
        { (G_GINT64_CONSTANT(3) << 20) + 512, NULL, "3146240B" },
    };
    const char *root = g_getenv("PT_SOURCE_ROOT");
    g_autofree char *path = g_build_filename(root, "docs", "polltuned.conf.example", NULL);
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) example = pt_conf_load(path, TRUE, &err);
    g_autoptr(PtConf) def = pt_conf_new_default();
    g_autoptr(PtConf) cli = conf_from("[daemon]\ninterval = 2s\n[policy]\nmin-dwell = 0\n");
    PtConfOverrides ov = { .mode = PT_MODE_INVALID, .interval_ms = 300 };
    g_autofree char *out = NULL, *out_def = NULL, *out_cli = NULL;

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (cases[i].duration) {
            g_autofree char *d = pt_format_duration(cases[i].v);
            gint64 back;

            g_assert_cmpstr(d, ==, cases[i].duration);
            g_assert_true(pt_parse_duration(d, &back, NULL));
            g_assert_cmpint(back, ==, cases[i].v);
        }
        if (cases[i].size) {
            g_autofree char *z = pt_format_size(cases[i].v);
            gint64 back;

            g_assert_cmpstr(z, ==, cases[i].size);
            g_assert_true(pt_parse_size(z, &back, NULL));
            g_assert_cmpint(back, ==, cases[i].v);
        }
    }

    g_assert_no_error(err);
    out = pt_conf_format(example);
    g_test_message("%s", out);
    for (const char *const *l = (const char *const[]){
             "\ninterval = 1s\n", "\nqmp-timeout = 2s\n", "\nmetrics-idle-timeout = 10s\n",
             "\nraw = 48h\n", "\nrollup-1m = 30d\n", "\nrollup-1h = 730d\n",
             "\nmax-size = 2GiB\n", "\nmin-dwell = 2s\n", "\nrevalidate = 5m\n",
             "\nmemory-ttl = 7d\n",
             "\nexternal-hold = 1h\n", NULL }; *l; l++)
        if (!strstr(out, *l))
            g_error("the example's --check-config lacks '%s'", *l + 1);
    g_assert_null(strstr(out, "000ms"));

    out_def = pt_conf_format(def);
    g_assert_nonnull(strstr(out_def, "\nraw = 2d\n"));
    g_assert_nonnull(strstr(out_def, "\ninterval = 1s\n"));
    g_assert_nonnull(strstr(out_def, "\nmax-size = 2GiB\n"));

    /* The command line's interval is not what the file wrote. */
    pt_conf_apply_overrides(cli, &ov);
    out_cli = pt_conf_format(cli);
    g_assert_nonnull(strstr(out_cli, "\ninterval = 300ms\n"));
    g_assert_nonnull(strstr(out_cli, "\nmin-dwell = 0\n"));
}

/* The same key in two groups is two keys. */
static void
test_same_key_other_group(void)
{
    g_autoptr(PtConf) c = conf_from("[rule a-*]\npolicy = off\n[rule b-*]\npolicy = off\n"
                                    "[daemon]\n# interval = 5s\ninterval = 2s\n");

    g_assert_cmpuint(c->policy->rules->len, ==, 2);
    g_assert_cmpuint(c->interval_ms, ==, 2000);
}

/* Every form metrics-listen takes. */
static void
test_listen(void)
{
    static const struct {
        const char *text, *host;
        guint16 port;
    } ok[] = {
        { "127.0.0.1:9563", "127.0.0.1", 9563 }, { "0.0.0.0:1", "0.0.0.0", 1 },
        { "[::1]:65535", "::1", 65535 }, { "[fe80::1]:80", "fe80::1", 80 },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(ok); i++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *host = NULL;
        guint16 port = 0;

        g_assert_true(pt_parse_listen(ok[i].text, &host, &port, &err));
        g_assert_no_error(err);
        g_assert_cmpstr(host, ==, ok[i].host);
        g_assert_cmpuint(port, ==, ok[i].port);
    }
    for (const char *const *bad = (const char *const[]){ "127.0.0.1:65536", "127.0.0.1:-1",
                                                         "::1:9563x", "1.2.3.4:0x10", "",
                                                         "9563", NULL }; *bad; bad++) {
        g_autoptr(GError) err = NULL;
        g_autofree char *host = NULL;
        guint16 port = 0;

        g_assert_false(pt_parse_listen(*bad, &host, &port, &err));
        g_assert_nonnull(err);
        g_assert_null(host);
    }
}

static void
test_values(void)
{
    static const char text[] =
        "[daemon]\n"
        "interval = 250ms\n"
        "mode = observe\n"
        "restore-on-exit = no\n"
        "on-restart = resume\n"
        "database = :memory:\n"
        "admin-group = wheel\n"
        "metrics-listen =\n"
        "metrics-max-connections = 4\n"
        "metrics-idle-timeout = 5s\n"
        "[targets]\n"
        "libvirt = false\n"
        "qmp-sockets = /run/a.sock; /run/b.sock\n"
        "qmp-globs = /run/qemu/*.qmp\n"
        "[retention]\n"
        "raw = 2d\n"
        "max-size = 512 MiB\n"
        "[policy]\n"
        "default = static:32768/2/2\n"
        "budget-cores = 1.5\n"
        "[rule db-*]\n"
        "policy = adaptive:latency\n"
        "[rule web-*/iothread1]\n"
        "policy = off\n";
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) c = pt_conf_load_data(text, strlen(text), "t.conf", &err);
    const PolicySpec *s;

    g_assert_no_error(err);
    g_assert_cmpuint(c->interval_ms, ==, 250);
    g_assert_cmpint(c->mode, ==, PT_MODE_OBSERVE);
    g_assert_false(c->restore_on_exit);
    g_assert_cmpint(c->on_restart, ==, PT_RESTART_RESUME);
    g_assert_cmpstr(c->database, ==, ":memory:");
    g_assert_cmpstr(c->admin_group, ==, "wheel");
    g_assert_null(c->metrics_listen);
    g_assert_cmpuint(c->metrics_max_conns, ==, 4);
    g_assert_cmpuint(c->metrics_idle_ms, ==, 5000);
    g_assert_false(c->libvirt);
    g_assert_cmpuint(g_strv_length(c->qmp_sockets), ==, 2);
    g_assert_cmpstr(c->qmp_sockets[1], ==, "/run/b.sock");
    g_assert_cmpstr(c->qmp_globs[0], ==, "/run/qemu/*.qmp");
    g_assert_cmpint(c->raw_retention_ms, ==, 2 * 86400000LL);
    g_assert_cmpint(c->max_size_bytes, ==, 512LL << 20);
    g_assert_cmpint(c->policy->default_spec.kind, ==, POLICY_KIND_STATIC);
    g_assert_cmpfloat(c->policy->budget_cores, ==, 1.5);
    /* Rules keep file order; the first match wins. */
    g_assert_cmpuint(c->policy->rules->len, ==, 2);
    s = policy_config_lookup_named(c->policy, "db-7", NULL, "iothread0");
    g_assert_cmpint(s->kind, ==, POLICY_KIND_ADAPTIVE);
    g_assert_cmpint(s->objective, ==, POLICY_OBJECTIVE_LATENCY);
    s = policy_config_lookup_named(c->policy, "web-1", NULL, "iothread1");
    g_assert_cmpint(s->kind, ==, POLICY_KIND_OFF);
    s = policy_config_lookup_named(c->policy, "web-1", NULL, "iothread0");
    g_assert_cmpint(s->kind, ==, POLICY_KIND_STATIC);
}

typedef struct {
    const char *name;
    const char *text;
    gsize len;              /* 0: strlen(text) */
    /* Each must appear in the message; NULL ends the list. */
    const char *expect[4];
} BadCase;

#define NUL_TEXT "[daemon]\ninterval = 1s\n\0mode = observe\n"

static const BadCase bad_cases[] = {
    { "not-utf8", "[daemon]\ninterval = 1s\nmode = \xff\n", 0,
      { "bad.conf:3:", "not valid UTF-8" } },
    { "static-default-out-of-bounds", "[policy]\ndefault = static:900000/0/0\n", 0,
      { "bad.conf:2:", "[policy]", "default" } },
    { "unknown-key", "[daemon]\ninterval = 1s\nintervall = 2s\n", 0,
      { "bad.conf:3:", "[daemon]", "intervall", "unknown key" } },
    { "unknown-group", "[daemon]\nmode = observe\n\n[deamon]\n", 0,
      { "bad.conf:4:", "unknown group", "[deamon]" } },
    { "bad-duration", "[daemon]\n# tick\ninterval = 5 parsecs\n", 0,
      { "bad.conf:3:", "[daemon]", "interval", "unknown unit" } },
    { "duration-range", "[daemon]\ninterval = 10ms\n", 0,
      { "bad.conf:2:", "[daemon]", "interval", "outside" } },
    { "duration-overflow", "[retention]\nraw = 99999999999999999999w\n", 0,
      { "bad.conf:2:", "[retention]", "raw", "too large" } },
    { "bad-mode", "[daemon]\nmode = enforcing\n", 0,
      { "bad.conf:2:", "[daemon]", "mode", "'enforcing'" } },
    { "bad-restart", "[daemon]\non-restart = maybe\n", 0,
      { "bad.conf:2:", "[daemon]", "on-restart", "restore or resume" } },
    { "bad-bool", "[daemon]\nrestore-on-exit = sometimes\n", 0,
      { "bad.conf:2:", "[daemon]", "restore-on-exit", "true or false" } },
    { "bad-exits", "[daemon]\nexits-source = ebpf\n", 0,
      { "bad.conf:2:", "[daemon]", "exits-source", "'ebpf'" } },
    { "relative-database", "[daemon]\ndatabase = history.db\n", 0,
      { "bad.conf:2:", "[daemon]", "database", "absolute path" } },
    { "relative-socket", "[daemon]\ncontrol-socket = control.sock\n", 0,
      { "bad.conf:2:", "[daemon]", "control-socket", "absolute path" } },
    { "relative-qmp", "[targets]\nqmp-sockets = /run/a.sock;b.sock\n", 0,
      { "bad.conf:2:", "[targets]", "qmp-sockets", "'b.sock'" } },
    { "empty-group", "[daemon]\ncontrol-group =\n", 0,
      { "bad.conf:2:", "[daemon]", "control-group", "empty" } },
    { "bad-listen", "[daemon]\nmetrics-listen = localhost\n", 0,
      { "bad.conf:2:", "[daemon]", "metrics-listen", "HOST:PORT" } },
    { "metrics-no-connections", "[daemon]\nmetrics-max-connections = 0\n", 0,
      { "bad.conf:2:", "[daemon]", "metrics-max-connections", "1..1024" } },
    { "metrics-idle-short", "[daemon]\nmetrics-idle-timeout = 100ms\n", 0,
      { "bad.conf:2:", "[daemon]", "metrics-idle-timeout", "outside" } },
    { "bad-size", "[retention]\nmax-size = 2 parsecs\n", 0,
      { "bad.conf:2:", "[retention]", "max-size", "unknown unit" } },
    { "small-size", "[retention]\nmax-size = 1MiB\n", 0,
      { "bad.conf:2:", "[retention]", "max-size", "16MiB" } },
    { "bad-default-policy", "[policy]\ndefault = aggressive\n", 0,
      { "bad.conf:2:", "[policy]", "default", "unknown name" } },
    { "bad-number", "[policy]\nbudget-cores = lots\n", 0,
      { "bad.conf:2:", "[policy]", "budget-cores", "'lots'" } },
    { "bad-uint", "[policy]\nmax-poll-max-ns = -5\n", 0,
      { "bad.conf:2:", "[policy]", "max-poll-max-ns", "whole number" } },
    { "rule-bad-spec", "[policy]\n\n[rule db-*]\npolicy = static:fast\n", 0,
      { "bad.conf:4:", "[rule db-*]", "policy", "'fast'" } },
    { "rule-out-of-bounds", "[policy]\nmax-poll-max-ns = 1000\n[rule x]\npolicy = static:5000\n", 0,
      { "bad.conf:4:", "[rule x]", "policy", "policy rule 'x'" } },
    { "rule-without-policy", "[rule x]\n", 0,
      { "bad.conf", "[rule x]", "policy", "needs a policy" } },
    { "rule-unknown-key", "[rule x]\npolicy = off\nobjective = latency\n", 0,
      { "bad.conf:3:", "[rule x]", "objective", "unknown key" } },
    { "nul-byte", NUL_TEXT, sizeof(NUL_TEXT) - 1,
      { "bad.conf", "NUL" } },
    { "syntax", "[daemon]\nthis line has no equals sign\n", 0,
      { "bad.conf:2:", "this line has no equals sign" } },
    { "syntax-late", "# comment\n[daemon]\ninterval = 1s\n\n[policy]\nmin-dwell = 2s\n"
      "[[[ not a group\nidle-iops = 5\n", 0,
      { "bad.conf:7:" } },
    { "syntax-last-line-unterminated", "[daemon]\ninterval = 1s\nno equals", 0,
      { "bad.conf:3:", "no equals" } },
    { "key-before-group", "\n\ninterval = 1s\n[daemon]\n", 0,
      { "bad.conf:3:" } },
    /* Numbers are decimal, as documented: no hex, exponent, sign or inf. */
    { "number-hex", "[policy]\npsi-limit = 0x10\n", 0,
      { "bad.conf:2:", "[policy]", "psi-limit", "'0x10' is not a decimal number" } },
    { "number-exponent", "[policy]\nidle-iops = 1e3\n", 0,
      { "bad.conf:2:", "[policy]", "idle-iops", "decimal" } },
    { "number-inf", "[policy]\nbudget-cores = inf\n", 0,
      { "bad.conf:2:", "[policy]", "budget-cores", "decimal" } },
    { "number-sign", "[policy]\nvcpu-delay-limit = +5\n", 0,
      { "bad.conf:2:", "[policy]", "vcpu-delay-limit", "decimal" } },
    { "number-bare-point", "[policy]\niothread-delay-limit = 5.\n", 0,
      { "bad.conf:2:", "[policy]", "iothread-delay-limit", "decimal" } },
    { "uint-hex", "[policy]\nmax-poll-max-ns = 0x10\n", 0,
      { "bad.conf:2:", "[policy]", "max-poll-max-ns", "whole number" } },
    { "uint-sign", "[policy]\npoll-grow-max = +8\n", 0,
      { "bad.conf:2:", "[policy]", "poll-grow-max", "whole number" } },
    { "duration-hex", "[daemon]\ninterval = 0x10\n", 0,
      { "bad.conf:2:", "[daemon]", "interval", "unknown unit" } },
    { "size-hex", "[retention]\nmax-size = 0x1000000\n", 0,
      { "bad.conf:2:", "[retention]", "max-size", "unknown unit" } },
    { "port-hex", "[daemon]\nmetrics-max-connections = 0x10\n", 0,
      { "bad.conf:2:", "[daemon]", "metrics-max-connections", "whole number" } },
    /* A key set twice is refused, naming both lines, also when its group
     * is opened twice (GKeyFile would keep the last value). */
    { "repeated-key-line", "[daemon]\ninterval = 1s\n[daemon]\ninterval = 1 parsec\n", 0,
      { "bad.conf:4:", "[daemon]", "interval", "line 2" } },
    { "repeated-key", "[daemon]\ninterval = 1s\nmode = observe\ninterval=2s\n", 0,
      { "bad.conf:4:", "[daemon]", "interval", "set on line 2" } },
    { "repeated-key-reopened-group", "[policy]\nidle-iops = 5\n[daemon]\nmode = observe\n"
      "\n[policy]\n  idle-iops = 5\n", 0,
      { "bad.conf:7:", "[policy]", "idle-iops", "line 2" } },
    { "repeated-rule-key", "[rule db-*]\npolicy = off\n# again\npolicy = off\n", 0,
      { "bad.conf:4:", "[rule db-*]", "policy", "line 2" } },
    /* metrics-listen: a port out of range, none, a host name, port 0. */
    { "listen-port-range", "[daemon]\nmetrics-listen = 0.0.0.0:99999\n", 0,
      { "bad.conf:2:", "[daemon]", "metrics-listen", "'99999' is not a whole number in 1..65535" } },
    { "listen-port-zero", "[daemon]\nmetrics-listen = [::1]:0\n", 0,
      { "bad.conf:2:", "metrics-listen", "1..65535" } },
    { "listen-no-port", "[daemon]\nmetrics-listen = 127.0.0.1:\n", 0,
      { "bad.conf:2:", "metrics-listen", "1..65535" } },
    { "listen-no-host", "[daemon]\nmetrics-listen = :9563\n", 0,
      { "bad.conf:2:", "metrics-listen", "HOST:PORT" } },
    { "listen-host-name", "[daemon]\nmetrics-listen = localhost:9563\n", 0,
      { "bad.conf:2:", "metrics-listen", "'localhost' is not an IP address" } },
};

static void
test_bad(gconstpointer data)
{
    const BadCase *bc = data;
    gsize len = bc->len ? bc->len : strlen(bc->text);
    g_autoptr(GError) err = NULL;
    g_autoptr(PtConf) c = pt_conf_load_data(bc->text, len, "bad.conf", &err);

    g_assert_null(c);
    g_assert_nonnull(err);
    g_test_message("%s: %s", bc->name, err->message);
    for (guint i = 0; i < G_N_ELEMENTS(bc->expect) && bc->expect[i]; i++)
        if (!strstr(err->message, bc->expect[i]))
            g_error("%s: '%s' does not mention '%s'", bc->name, err->message, bc->expect[i]);
    /* Every message leads with the file's name. */
    g_assert_true(g_str_has_prefix(err->message, "bad.conf"));
}

static void
test_units(void)
{
    static const struct {
        const char *text;
        gboolean duration;
        gint64 value;       /* -1: must fail */
    } cases[] = {
        { "1500", TRUE, 1500 }, { "250ms", TRUE, 250 }, { "2s", TRUE, 2000 },
        { "3m", TRUE, 180000 }, { "48h", TRUE, 172800000 }, { "2w", TRUE, 1209600000 },
        { "1 S", TRUE, 1000 }, { "", TRUE, -1 }, { "-1s", TRUE, -1 }, { "1y", TRUE, -1 },
        { "s", TRUE, -1 }, { "4096", FALSE, 4096 }, { "16MiB", FALSE, 16 << 20 },
        { "2G", FALSE, 2LL << 30 }, { "1TiB", FALSE, 1LL << 40 }, { "1 kib", FALSE, 1024 },
        { "1PB", FALSE, -1 }, { "99999999999T", FALSE, -1 },
    };

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) err = NULL;
        gint64 v = 0;
        gboolean ok = cases[i].duration ? pt_parse_duration(cases[i].text, &v, &err)
                                        : pt_parse_size(cases[i].text, &v, &err);

        if (cases[i].value < 0) {
            g_assert_false(ok);
            g_assert_nonnull(err);
        } else {
            g_assert_no_error(err);
            g_assert_cmpint(v, ==, cases[i].value);
        }
    }
}

/* Decimal numbers that are fine stay fine. */
static void
test_decimal(void)
{
    g_autoptr(PtConf) c = conf_from("[policy]\npsi-limit = 12.5\nidle-iops = 007\n"
                                    "budget-cores = 0.25\n");

    g_assert_cmpfloat(c->policy->psi_some_limit, ==, 12.5);
    g_assert_cmpfloat(c->policy->idle_iops, ==, 7);
    g_assert_cmpfloat(c->policy->budget_cores, ==, 0.25);
}

/* What a reload may change: live keys yes, keys read at start no, each
 * refusal naming its group and key; command-line settings are carried. */
static void
test_reload_check(void)
{
    static const struct {
        const char *text;
        const char *refused;    /* NULL: allowed */
    } cases[] = {
        { "[daemon]\ninterval = 5s\nmode = observe\nqmp-timeout = 1s\n", NULL },
        { "[daemon]\non-restart = restore\nexits-source = off\n", NULL },
        { "[policy]\ndefault = off\n[rule x]\npolicy = off\n", NULL },
        { "[targets]\nqmp-globs = /run/x/*.qmp\n", NULL },
        { "[daemon]\ndatabase = /var/lib/other.db\n", "[daemon] database:" },
        { "[daemon]\ncontrol-socket = /run/other.sock\n", "[daemon] control-socket:" },
        { "[daemon]\ncontrol-group = wheel\n", "[daemon] control-group:" },
        { "[daemon]\nadmin-group = wheel\n", "[daemon] admin-group:" },
        { "[daemon]\nmetrics-listen =\n", "[daemon] metrics-listen:" },
        { "[daemon]\nmetrics-max-connections = 3\n", "[daemon] metrics-max-connections:" },
        { "[daemon]\nmetrics-idle-timeout = 3s\n", "[daemon] metrics-idle-timeout:" },
        { "[targets]\nlibvirt = false\n", "[targets] libvirt:" },
        { "[targets]\nlibvirt-uri = qemu:///session\n", "[targets] libvirt-uri:" },
        { "[targets]\nlibvirt-pid-dir = /tmp\n", "[targets] libvirt-pid-dir:" },
        { "[targets]\nqmp-sockets = /run/a.qmp\n", "[targets] qmp-sockets:" },
        { "[retention]\nraw = 3d\n", "[retention] raw:" },
        { "[retention]\nrollup-1m = 3d\n", "[retention] rollup-1m:" },
        { "[retention]\nrollup-1h = 3d\n", "[retention] rollup-1h:" },
        { "[retention]\nmax-size = 1GiB\n", "[retention] max-size:" },
    };
    g_autoptr(PtConf) running = pt_conf_new_default();

    for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(PtConf) next = conf_from(cases[i].text);
        g_autoptr(GError) err = NULL;
        gboolean ok = pt_conf_check_reload(running, next, &err);

        if (!cases[i].refused) {
            g_assert_no_error(err);
            g_assert_true(ok);
            continue;
        }
        g_assert_false(ok);
        g_assert_nonnull(err);
        g_test_message("%s", err->message);
        g_assert_true(g_str_has_prefix(err->message, "t.conf"));
        g_assert_nonnull(strstr(err->message, cases[i].refused));
        g_assert_nonnull(strstr(err->message, "restart"));
    }
}

/* Command-line settings win over the file's and travel with the
 * configuration, so a reload can put them in front again. */
static void
test_overrides(void)
{
    PtConfOverrides ov = { .database = (char *)"/tmp/cli.db", .mode = PT_MODE_OBSERVE,
                           .interval_ms = 300 };
    g_autoptr(PtConf) first = conf_from("[daemon]\ninterval = 2s\nmode = enforce\n"
                                        "database = /var/lib/a.db\n");
    g_autoptr(PtConf) second = conf_from("[daemon]\ninterval = 5s\ndatabase = /var/lib/b.db\n");
    g_autoptr(GError) err = NULL;

    pt_conf_apply_overrides(first, &ov);
    g_assert_cmpuint(first->interval_ms, ==, 300);
    g_assert_cmpint(first->mode, ==, PT_MODE_OBSERVE);
    g_assert_cmpstr(first->database, ==, "/tmp/cli.db");
    pt_conf_apply_overrides(second, &first->overrides);
    g_assert_cmpuint(second->interval_ms, ==, 300);
    g_assert_cmpint(second->mode, ==, PT_MODE_OBSERVE);
    g_assert_cmpstr(second->database, ==, "/tmp/cli.db");
    g_assert_cmpstr(second->overrides.database, ==, "/tmp/cli.db");
    /* With --db given, the file's database may change without effect. */
    g_assert_true(pt_conf_check_reload(first, second, &err));
    g_assert_no_error(err);
}

/* The metrics cap never takes more than an eighth of the descriptors. */
static void
test_metrics_cap(void)
{
    g_assert_cmpuint(pt_metrics_conn_cap(16, 524288), ==, 16);
    g_assert_cmpuint(pt_metrics_conn_cap(16, 1024), ==, 16);
    g_assert_cmpuint(pt_metrics_conn_cap(1024, 1024), ==, 128);
    g_assert_cmpuint(pt_metrics_conn_cap(16, 256), ==, 16);
    g_assert_cmpuint(pt_metrics_conn_cap(16, 64), ==, 8);
    g_assert_cmpuint(pt_metrics_conn_cap(16, 4), ==, 1);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/conf/example", test_example);
    g_test_add_func("/conf/missing", test_missing);
    g_test_add_func("/conf/not-regular", test_not_regular);
    g_test_add_func("/conf/values", test_values);
    g_test_add_func("/conf/format", test_format);
    g_test_add_func("/conf/format-units", test_format_units);
    g_test_add_func("/conf/same-key-other-group", test_same_key_other_group);
    g_test_add_func("/conf/listen", test_listen);
    g_test_add_func("/conf/units", test_units);
    g_test_add_func("/conf/metrics-cap", test_metrics_cap);
    g_test_add_func("/conf/decimal", test_decimal);
    g_test_add_func("/conf/reload-check", test_reload_check);
    g_test_add_func("/conf/overrides", test_overrides);
    for (gsize i = 0; i < G_N_ELEMENTS(bad_cases); i++) {
        g_autofree char *path = g_strdup_printf("/conf/bad/%s", bad_cases[i].name);

        g_test_add_data_func(path, &bad_cases[i], test_bad);
    }
    return g_test_run();
}
