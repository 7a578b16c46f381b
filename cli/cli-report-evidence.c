/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-report-evidence: a decision's evidence as fields a reader can read.
 *
 * The daemon stores a decision's reason as "TEXT [key=value ...]" (the
 * policy's evidence in brackets, pt-daemon-policy.c).  The report shows the
 * text, then each field under a name with its unit; keys it does not know
 * are shown as they are, so a newer policy's evidence is never hidden.
 */
#include <string.h>

#include "cli-format.h"
#include "cli-report-evidence.h"

static const struct {
    const char *key, *label, *unit;
} names[] = {
    { "triple", "triple", "poll-max-ns/grow/shrink" },
    { "iops", "IOPS", "ops/s" },
    { "lat_us", "latency in QEMU", "\302\265s" },
    { "qd", "queue depth", NULL },
    { "cpu_pct", "iothread CPU", "% of one core" },
    { "blocks_per_op", "blocks per operation", NULL },
    { "exits_per_op", "VM exits per operation", NULL },
    { "exits", "VM exit figures", NULL },
    { "exits_per_op_now", "VM exits per operation now", NULL },
    { "score", "objective score", NULL },
    { "noise_sd", "noise (standard deviation of the score)", NULL },
    { "start", "starting run", NULL },
    { "probe", "probe run", NULL },
    { "z", "lead over noise", "standard errors" },
    { "cusum", "change detector (up/down)", NULL },
    { "limit", "change detector limit", NULL },
    { "shape_cusum", "shape change detector (up/down)", NULL },
    { "shape_limit", "shape change detector limit", NULL },
    { "trigger", "trigger", NULL },
    { "polling_bound", "most polling could gain", "objective units" },
    { "value_per_core", "value per polling core", NULL },
    { "rank", "rank among polling iothreads", NULL },
    { "budget_cores", "budget", "cores" },
    { "used", "used", "cores" },
    { "cost", "cost", "cores" },
    { "external_hold", "external write hold", NULL },
    { "external_write_ms", "external write at", NULL },
    { "external_until_ms", "held until", NULL },
    { "override_expires_ms", "override expires", NULL },
};

static void
evidence_field_free(gpointer p)
{
    CliEvidenceField *f = p;

    g_free(f->label);
    g_free(f->value);
    g_free(f);
}

/* "32768/2/0:n=10:score=0.1234:z=2.1" -> "32768/2/0, 10 ticks, score 0.1234, z 2.1" */
static char *
run_value(const char *v)
{
    g_auto(GStrv) parts = g_strsplit(v, ":", -1);
    g_autoptr(GString) out = g_string_new(NULL);

    for (char **p = parts; *p; p++) {
        if (out->len)
            g_string_append(out, ", ");
        if (g_str_has_prefix(*p, "n="))
            g_string_append_printf(out, "%s ticks", *p + 2);
        else if (strchr(*p, '='))
            g_string_append(out, g_strdelimit(*p, "=", ' '));
        else
            g_string_append(out, *p);
    }
    return g_string_free(g_steal_pointer(&out), FALSE);
}

static char *
field_value(const char *key, const char *v)
{
    if (g_str_equal(key, "start") || g_str_equal(key, "probe"))
        return run_value(v);
    if (g_str_has_suffix(key, "_ms")) {
        gint64 ms = g_ascii_strtoll(v, NULL, 10);
        g_autofree char *t = ms > 0 ? cli_format_time_ms(ms, FALSE) : NULL;

        return t ? g_strconcat(t, " UTC", NULL) : g_strdup("never");
    }
    /* "unavailable(why)", "0.42(measuring ...)": the note set off by a space */
    if (strchr(v, '(') && strchr(v, '(') > v && strchr(v, '(')[-1] != ' ') {
        const char *open = strchr(v, '(');

        return g_strdup_printf("%.*s %s", (int)(open - v), v, open);
    }
    return g_strdup(v);
}

static void
field_add(GPtrArray *fields, const char *key, const char *value)
{
    CliEvidenceField *f = g_new0(CliEvidenceField, 1);
    const char *label = NULL, *unit = NULL;
    g_autofree char *v = field_value(key, value);

    for (gsize i = 0; i < G_N_ELEMENTS(names) && !label; i++) {
        if (g_str_equal(names[i].key, key)) {
            label = names[i].label;
            unit = names[i].unit;
        }
    }
    f->label = label ? g_strdup(label) : g_strdelimit(g_strdup(key), "_", ' ');
    f->value = unit ? g_strdup_printf("%s %s", v, unit) : g_steal_pointer(&v);
    g_ptr_array_add(fields, f);
}

GPtrArray *
cli_evidence_parse(const char *reason, char **text)
{
    GPtrArray *fields = g_ptr_array_new_with_free_func(evidence_field_free);
    const char *open;
    gsize len = reason ? strlen(reason) : 0;
    const char *p, *end;

    if (!reason || len < 2 || reason[len - 1] != ']' || !(open = strstr(reason, " ["))) {
        *text = g_strdup(reason ? reason : "");
        return fields;
    }
    /* The last " [" opens the evidence: the text itself may hold brackets. */
    for (const char *q = open; (q = strstr(q + 1, " [")); )
        open = q;
    *text = g_strndup(reason, open - reason);
    p = open + 2;
    end = reason + len - 1;
    while (p < end) {
        const char *eq, *vstart, *vend;
        g_autofree char *key = NULL;
        g_autofree char *value = NULL;

        while (p < end && *p == ' ')
            p++;
        if (p >= end)
            break;
        eq = p;
        while (eq < end && *eq != '=' && *eq != ' ')
            eq++;
        if (eq >= end || *eq != '=') {
            /* A bare word: keep it, unnamed. */
            key = g_strndup(p, eq - p);
            field_add(fields, "note", key);
            p = eq;
            continue;
        }
        key = g_strndup(p, eq - p);
        vstart = eq + 1;
        if (vstart < end && *vstart == '"') {
            vstart++;
            vend = vstart;
            while (vend < end && *vend != '"')
                vend++;
            value = g_strndup(vstart, vend - vstart);
            p = vend < end ? vend + 1 : end;
        } else {
            int depth = 0;

            /* A value's note in parentheses may hold spaces:
             * "exits=unavailable(polling's vCPU saving unknown)". */
            vend = vstart;
            while (vend < end && (depth > 0 || *vend != ' ')) {
                depth += *vend == '(' ? 1 : *vend == ')' && depth > 0 ? -1 : 0;
                vend++;
            }
            value = g_strndup(vstart, vend - vstart);
            p = vend;
        }
        field_add(fields, key, value);
    }
    return fields;
}
