/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The effective configuration written back in the file's syntax, every key
 * with its value, for `polltuned --check-config`.  What it prints loads
 * again to the same configuration.
 */
#include "pt-conf.h"

static void
pt_conf_put_list(GString *s, const char *key, char **v)
{
    g_string_append_printf(s, "%s =", key);
    for (guint i = 0; v && v[i]; i++)
        g_string_append_printf(s, " %s;", v[i]);
    g_string_append_c(s, '\n');
}

/* An unset string prints as an empty value, which the loader reads back
 * as unset. */
static void
pt_conf_put_str(GString *s, const char *key, const char *v)
{
    g_string_append_printf(s, "%s =%s%s\n", key, v ? " " : "", v ? v : "");
}

/* A duration or size as the file wrote it while that still means @v (the
 * command line may have replaced it), else in the largest exact unit. */
static void
pt_conf_put_scaled(GString *s, const PtConf *c, const char *group, const char *key, gint64 v,
                   char *(*format)(gint64), gboolean (*parse)(const char *, gint64 *, GError **))
{
    g_autofree char *slot = g_strdup_printf("%s/%s", group, key);
    const char *written = c->written ? g_hash_table_lookup(c->written, slot) : NULL;
    g_autofree char *text = NULL;
    gint64 back;

    if (!written || !parse(written, &back, NULL) || back != v)
        written = text = format(v);
    g_string_append_printf(s, "%s = %s\n", key, written);
}

static void
pt_conf_put_duration(GString *s, const PtConf *c, const char *group, const char *key,
                     gint64 ms)
{
    pt_conf_put_scaled(s, c, group, key, ms, pt_format_duration, pt_parse_duration);
}

char *
pt_conf_format(const PtConf *c)
{
    GString *s = g_string_new(NULL);
    const PolicyConfig *p = c->policy;
    g_autofree char *def = policy_spec_format(&p->default_spec);

    g_string_append_printf(s, "# effective configuration from %s\n", c->path ? c->path : "defaults");
    g_string_append(s, "[daemon]\n");
    pt_conf_put_duration(s, c, "daemon", "interval", c->interval_ms);
    g_string_append_printf(s, "mode = %s\n", pt_mode_to_string(c->mode));
    g_string_append_printf(s, "restore-on-exit = %s\n", c->restore_on_exit ? "true" : "false");
    g_string_append_printf(s, "on-restart = %s\n", pt_restart_to_string(c->on_restart));
    pt_conf_put_duration(s, c, "daemon", "qmp-timeout", c->qmp_timeout_ms);
    g_string_append_printf(s, "exits-source = %s\n", c->exits_source);
    g_string_append_printf(s, "database = %s\n", c->database);
    g_string_append_printf(s, "control-socket = %s\n", c->control_socket);
    pt_conf_put_str(s, "control-group", c->control_group);
    pt_conf_put_str(s, "admin-group", c->admin_group);
    pt_conf_put_str(s, "metrics-listen", c->metrics_listen);
    g_string_append_printf(s, "metrics-max-connections = %u\n", c->metrics_max_conns);
    pt_conf_put_duration(s, c, "daemon", "metrics-idle-timeout", c->metrics_idle_ms);

    g_string_append(s, "\n[targets]\n");
    g_string_append_printf(s, "libvirt = %s\n", c->libvirt ? "true" : "false");
    g_string_append_printf(s, "libvirt-uri = %s\n", c->libvirt_uri);
    g_string_append_printf(s, "libvirt-pid-dir = %s\n", c->libvirt_pid_dir);
    pt_conf_put_list(s, "qmp-sockets", c->qmp_sockets);
    pt_conf_put_list(s, "qmp-globs", c->qmp_globs);

    g_string_append(s, "\n[retention]\n");
    pt_conf_put_duration(s, c, "retention", "raw", c->raw_retention_ms);
    pt_conf_put_duration(s, c, "retention", "rollup-1m", c->rollup_1m_retention_ms);
    pt_conf_put_duration(s, c, "retention", "rollup-1h", c->rollup_1h_retention_ms);
    pt_conf_put_scaled(s, c, "retention", "max-size", c->max_size_bytes, pt_format_size,
                       pt_parse_size);

    g_string_append(s, "\n[policy]\n");
    g_string_append_printf(s, "default = %s\n", def);
    g_string_append_printf(s, "max-poll-max-ns = %" G_GUINT64_FORMAT "\n", p->max_poll_max_ns);
    g_string_append_printf(s, "poll-grow-min = %" G_GUINT64_FORMAT "\n", p->grow_min);
    g_string_append_printf(s, "poll-grow-max = %" G_GUINT64_FORMAT "\n", p->grow_max);
    g_string_append_printf(s, "poll-shrink-min = %" G_GUINT64_FORMAT "\n", p->shrink_min);
    g_string_append_printf(s, "poll-shrink-max = %" G_GUINT64_FORMAT "\n", p->shrink_max);
    pt_conf_put_duration(s, c, "policy", "min-dwell", p->min_dwell_ms);
    pt_conf_put_duration(s, c, "policy", "revalidate", p->revalidate_ms);
    pt_conf_put_duration(s, c, "policy", "memory-ttl", p->memory_ttl_ms);
    pt_conf_put_duration(s, c, "policy", "external-hold", p->external_hold_ms);
    g_string_append_printf(s, "idle-iops = %g\n", p->idle_iops);
    g_string_append_printf(s, "budget-cores = %g\n", p->budget_cores);
    g_string_append_printf(s, "psi-limit = %g\n", p->psi_some_limit);
    g_string_append_printf(s, "vcpu-delay-limit = %g\n", p->vcpu_delay_limit);
    g_string_append_printf(s, "iothread-delay-limit = %g\n", p->iothread_delay_limit);
    g_string_append_printf(s, "balanced-cpu-weight = %g\n", p->balanced_cpu_weight);
    g_string_append_printf(s, "efficiency-cpu-weight = %g\n", p->efficiency_cpu_weight);
    g_string_append_printf(s, "exit-cost-ns = %g\n", p->exit_cost_ns);

    for (guint i = 0; p->rules && i < p->rules->len; i++) {
        const PolicyRule *rule = p->rules->pdata[i];
        g_autofree char *spec = NULL;

        /* The file's own: rules set at run time live in the store. */
        if (rule->origin != POLICY_ORIGIN_CONFIG)
            continue;
        spec = policy_spec_format(&rule->spec);
        g_string_append_printf(s, "\n[rule %s]\npolicy = %s\n", rule->glob, spec);
    }
    return g_string_free(s, FALSE);
}
