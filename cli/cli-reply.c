/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-reply: see cli-reply.h.
 */
#include <math.h>

#include "cli-format.h"
#include "cli-reply.h"
#include "qmp-json.h"

json_object *
cli_reply_member(json_object *o, const char *key)
{
    json_object *v = NULL;

    if (!o || !json_object_is_type(o, json_type_object) ||
        !json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
        return NULL;
    return v;
}

double
cli_reply_number(json_object *o, const char *key)
{
    json_object *v = cli_reply_member(o, key);

    if (!v || !(json_object_is_type(v, json_type_double) ||
                json_object_is_type(v, json_type_int)))
        return NAN;
    return json_object_get_double(v);
}

char *
cli_reply_num_text(json_object *o, const char *key, int decimals)
{
    double v = cli_reply_number(o, key);

    return decimals < 0 ? cli_format_si(v) : cli_format_fixed(v, decimals);
}

char *
cli_reply_int_text(json_object *o, const char *key)
{
    gint64 v;

    return qmp_json_get_int(o, key, &v) ? g_strdup_printf("%" G_GINT64_FORMAT, v)
                                         : g_strdup("-");
}

/* A string of the reply, escaped for the terminal. */
const char *
cli_reply_str(json_object *o, const char *key)
{
    const char *s = cli_text(qmp_json_get_string(o, key));

    return s ? s : "-";
}

gsize
cli_reply_array_len(json_object *a)
{
    return a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

char *
cli_reply_age_text(CliContext *ctx, json_object *o, const char *key)
{
    gint64 ts;
    g_autofree char *d = NULL;

    if (!qmp_json_get_int(o, key, &ts))
        return g_strdup("-");
    d = cli_format_duration_ms(MAX(ctx->now_ms - ts, 0));
    return g_strdup_printf("%s ago", d);
}

/* "override 12 by uid 0, set 3m ago, 7m left: reason" (show, explain). */
char *
cli_reply_override_text(CliContext *ctx, json_object *ov)
{
    g_autofree char *id = cli_reply_int_text(ov, "id");
    g_autofree char *age = cli_reply_age_text(ctx, ov, "set_ms");
    g_autofree char *left = NULL;
    const char *who = cli_reply_str(ov, "who");
    const char *reason = qmp_json_get_string(ov, "reason");
    gint64 expires;

    if (qmp_json_get_int(ov, "expires_ms", &expires)) {
        g_autofree char *l = cli_format_duration_left_ms(MAX(expires - ctx->now_ms, 0));

        left = g_strdup_printf("%s left", l);
    }
    return g_strdup_printf("override %s by %s, set %s, %s: %s", id, *who ? who : "?",
                           g_str_equal(age, "-") ? "at an unknown time" : age,
                           left ? left : "until cleared",
                           reason && *reason ? cli_text(reason) : "no reason given");
}
