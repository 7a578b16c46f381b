/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-config: names, triples, specs, rules and bounds.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/pt-enum-table.h"
#include "policy-memory.h"
#include "policy-private.h"

G_DEFINE_QUARK(policy-error-quark, policy_error)

PT_ENUM_IMPL(policy_kind, PolicyKind, POLICY_KIND_MAX,
             [POLICY_KIND_OBSERVE] = "observe",
             [POLICY_KIND_OFF] = "off",
             [POLICY_KIND_STATIC] = "static",
             [POLICY_KIND_QEMU_DEFAULT] = "qemu-default",
             [POLICY_KIND_ADAPTIVE] = "adaptive")

PT_ENUM_IMPL(policy_objective, PolicyObjective, POLICY_OBJECTIVE_MAX,
             [POLICY_OBJECTIVE_LATENCY] = "latency",
             [POLICY_OBJECTIVE_EFFICIENCY] = "efficiency",
             [POLICY_OBJECTIVE_BALANCED] = "balanced")

PT_ENUM_IMPL(policy_mode, PolicyMode, POLICY_MODE_MAX,
             [POLICY_MODE_ENFORCE] = "enforce",
             [POLICY_MODE_RECOMMEND] = "recommend")

PT_ENUM_IMPL(policy_knob, PolicyKnob, POLICY_KNOB_MAX,
             [POLICY_KNOB_POLL_GROW] = "poll-grow",
             [POLICY_KNOB_POLL_SHRINK] = "poll-shrink",
             [POLICY_KNOB_POLL_MAX_NS] = "poll-max-ns")

/* Where each knob lives in PolicyTriple. */
static const gsize knob_offset[POLICY_KNOB_MAX] = {
    [POLICY_KNOB_POLL_GROW] = G_STRUCT_OFFSET(PolicyTriple, poll_grow),
    [POLICY_KNOB_POLL_SHRINK] = G_STRUCT_OFFSET(PolicyTriple, poll_shrink),
    [POLICY_KNOB_POLL_MAX_NS] = G_STRUCT_OFFSET(PolicyTriple, poll_max_ns),
};

guint64
policy_triple_get(const PolicyTriple *t, PolicyKnob knob)
{
    g_return_val_if_fail(knob >= 0 && knob < POLICY_KNOB_MAX, 0);
    return G_STRUCT_MEMBER(guint64, t, knob_offset[knob]);
}

PT_ENUM_IMPL(policy_poll_model, PolicyPollModel, POLICY_POLL_MODEL_MAX,
             [POLICY_POLL_MODEL_UNKNOWN] = "unknown",
             [POLICY_POLL_MODEL_72] = "7.2",
             [POLICY_POLL_MODEL_10] = "10.0")

PolicyPollModel
policy_poll_model_for_version(guint32 qemu_version)
{
    /* QEMU 10.0 "aio-posix: Separate AioPolledEvent per AioHandler". */
    if (qemu_version == 0)
        return POLICY_POLL_MODEL_UNKNOWN;
    return qemu_version >= 10000000 ? POLICY_POLL_MODEL_10 : POLICY_POLL_MODEL_72;
}

PT_ENUM_IMPL(policy_cause, PolicyCause, POLICY_CAUSE_MAX,
             [POLICY_CAUSE_NONE] = "none",
             [POLICY_CAUSE_OVERRIDE] = "override",
             [POLICY_CAUSE_POLICY] = "policy",
             [POLICY_CAUSE_IDLE] = "idle",
             [POLICY_CAUSE_PROBE] = "probe",
             [POLICY_CAUSE_ACCEPT] = "accept",
             [POLICY_CAUSE_ROLLBACK] = "rollback",
             [POLICY_CAUSE_CONTENTION] = "contention",
             [POLICY_CAUSE_BUDGET] = "budget",
             [POLICY_CAUSE_REMEMBERED] = "remembered")

/* "config" and "policy-set" are what policy get has always called them. */
PT_ENUM_IMPL(policy_origin, PolicyOrigin, POLICY_ORIGIN_MAX,
             [POLICY_ORIGIN_CONFIG] = "config",
             [POLICY_ORIGIN_LIBVIRT_METADATA] = "libvirt-metadata",
             [POLICY_ORIGIN_POLICY_SET] = "policy-set",
             [POLICY_ORIGIN_EXTERNAL_WRITE] = "external-write",
             [POLICY_ORIGIN_OVERRIDE] = "override")

gboolean
policy_triple_equal(const PolicyTriple *a, const PolicyTriple *b)
{
    return a->poll_max_ns == b->poll_max_ns && a->poll_grow == b->poll_grow &&
           a->poll_shrink == b->poll_shrink;
}

char *
policy_triple_format(const PolicyTriple *t)
{
    return g_strdup_printf("%" G_GUINT64_FORMAT "/%" G_GUINT64_FORMAT
                           "/%" G_GUINT64_FORMAT,
                           t->poll_max_ns, t->poll_grow, t->poll_shrink);
}

static gboolean
parse_u64(const char *s, guint64 *out)
{
    char *end = NULL;

    if (!s || !*s || !g_ascii_isdigit(*s))
        return FALSE;
    errno = 0;
    *out = g_ascii_strtoull(s, &end, 10);
    return errno == 0 && end && *end == '\0';
}

gboolean
policy_triple_parse(const char *s, PolicyTriple *out, GError **error)
{
    g_auto(GStrv) parts = g_strsplit(s ? s : "", "/", -1);
    guint64 v[3] = { 0, 0, 0 };
    guint n = g_strv_length(parts);

    if (n < 1 || n > 3) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "triple '%s': expected poll-max-ns[/poll-grow[/poll-shrink]]", s);
        return FALSE;
    }
    for (guint i = 0; i < n; i++) {
        if (!parse_u64(parts[i], &v[i])) {
            g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                        "triple '%s': '%s' is not a non-negative integer", s, parts[i]);
            return FALSE;
        }
    }
    *out = (PolicyTriple){ v[0], v[1], v[2] };
    return TRUE;
}

gboolean
policy_spec_parse(const char *s, PolicySpec *out, GError **error)
{
    const char *colon = s ? strchr(s, ':') : NULL;
    g_autofree char *name = colon ? g_strndup(s, colon - s) : g_strdup(s);
    const char *arg = colon ? colon + 1 : NULL;
    PolicySpec spec = { .objective = POLICY_OBJECTIVE_BALANCED };

    spec.kind = policy_kind_from_string(name);
    if (spec.kind == POLICY_KIND_INVALID) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "policy '%s': unknown name (observe, off, static, qemu-default, adaptive)",
                    s ? s : "");
        return FALSE;
    }
    switch (spec.kind) {
    case POLICY_KIND_STATIC:
        if (!arg) {
            g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                        "policy '%s': static needs a triple, e.g. static:70000/2/2", s);
            return FALSE;
        }
        if (!policy_triple_parse(arg, &spec.triple, error))
            return FALSE;
        break;
    case POLICY_KIND_ADAPTIVE:
        if (arg) {
            spec.objective = policy_objective_from_string(arg);
            if (spec.objective == POLICY_OBJECTIVE_INVALID) {
                g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                            "policy '%s': unknown objective (latency, efficiency, balanced)", s);
                return FALSE;
            }
        }
        break;
    default:
        if (arg) {
            g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                        "policy '%s': %s takes no argument", s, name);
            return FALSE;
        }
        break;
    }
    *out = spec;
    return TRUE;
}

char *
policy_spec_format(const PolicySpec *spec)
{
    if (spec->kind == POLICY_KIND_STATIC) {
        g_autofree char *t = policy_triple_format(&spec->triple);
        return g_strdup_printf("static:%s", t);
    }
    if (spec->kind == POLICY_KIND_ADAPTIVE)
        return g_strdup_printf("adaptive:%s", policy_objective_to_string(spec->objective));
    return g_strdup(policy_kind_to_string(spec->kind));
}

static void
policy_rule_free(gpointer p)
{
    PolicyRule *r = p;

    if (!r)
        return;
    g_free(r->glob);
    g_free(r->who);
    g_free(r);
}

PolicyConfig *
policy_config_new(void)
{
    PolicyConfig *c = g_new0(PolicyConfig, 1);

    c->mode = POLICY_MODE_ENFORCE;
    c->rules = g_ptr_array_new_with_free_func(policy_rule_free);
    /* What the configuration file sets has its default in the key table,
     * so that the daemon, the simulator and the tests start alike. */
#define PT_CONF_DEFAULT_PtConf(field, d)
#define PT_CONF_DEFAULT_PolicyConfig(field, d) c->field = (d);
#define PT_CONF_KEY(g, k, type, Struct, field, def, ...) PT_CONF_DEFAULT_##Struct(field, def)
#include "common/pt-conf-keys.def"
#undef PT_CONF_KEY
#undef PT_CONF_DEFAULT_PolicyConfig
#undef PT_CONF_DEFAULT_PtConf
    /* The rest no file sets. */
    c->rollback_tolerance = 0.02;
    c->probe_margin = 0.01;
    c->change_ratio = 0.25;
    c->probe_poll_max_ns = 262144;
    c->saving_per_block_ns = 8000;
    c->contention_holdoff_ms = 60000;
    return c;
}

void
policy_config_free(PolicyConfig *c)
{
    if (!c)
        return;
    g_ptr_array_unref(c->rules);
    g_free(c);
}

static gboolean
rule_check(const PolicyConfig *config, const char *glob, const PolicySpec *spec,
           GError **error)
{
    if (!glob || !*glob) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "policy rule: empty glob");
        return FALSE;
    }
    if (spec->kind < 0 || spec->kind >= POLICY_KIND_MAX) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "policy rule '%s': invalid policy", glob);
        return FALSE;
    }
    if (spec->kind == POLICY_KIND_STATIC &&
        !policy_config_check_triple(config, &spec->triple, error)) {
        g_prefix_error(error, "policy rule '%s': ", glob);
        return FALSE;
    }
    return TRUE;
}

static PolicyRule *
rule_new(const char *glob, const PolicySpec *spec, PolicyOrigin origin, const char *who,
         gint64 set_ms)
{
    PolicyRule *r = g_new0(PolicyRule, 1);

    r->glob = g_strdup(glob);
    r->spec = *spec;
    r->origin = origin;
    r->who = g_strdup(who);
    r->set_ms = set_ms;
    return r;
}

/* Where a rule of @origin goes: in front of its own origin's (@newest_first)
 * or behind them; always behind every higher origin's, which come first.
 * The list is sorted by origin, highest first, so the slot is found from
 * the end the rule goes nearest to: behind its origin's, only the lower
 * origins' rules are passed (none for the file's, the lowest), and in
 * front, only the higher ones'.  A file of N rules thus loads in O(N)
 * steps; searching from the front every time cost O(N^2), 73 s for 200k. */
static guint
rule_slot(const PolicyConfig *config, PolicyOrigin origin, gboolean newest_first)
{
    guint at;

    if (newest_first) {
        for (at = 0; at < config->rules->len; at++)
            if (((const PolicyRule *)config->rules->pdata[at])->origin <= origin)
                break;
        return at;
    }
    for (at = config->rules->len; at > 0; at--)
        if (((const PolicyRule *)config->rules->pdata[at - 1])->origin >= origin)
            break;
    return at;
}

gboolean
policy_config_add_rule(PolicyConfig *config, const char *glob,
                       const PolicySpec *spec, GError **error)
{
    if (!rule_check(config, glob, spec, error))
        return FALSE;
    g_ptr_array_insert(config->rules, (gint)rule_slot(config, POLICY_ORIGIN_CONFIG, FALSE),
                       rule_new(glob, spec, POLICY_ORIGIN_CONFIG, NULL, 0));
    return TRUE;
}

static gint
rule_index(const PolicyConfig *config, PolicyOrigin origin, const char *glob)
{
    for (guint i = 0; i < config->rules->len; i++) {
        const PolicyRule *r = config->rules->pdata[i];

        if (r->origin == origin && g_str_equal(r->glob, glob))
            return (gint)i;
    }
    return -1;
}

const PolicyRule *
policy_config_find_rule(const PolicyConfig *config, PolicyOrigin origin, const char *glob)
{
    gint i = glob ? rule_index(config, origin, glob) : -1;

    return i >= 0 ? config->rules->pdata[i] : NULL;
}

gboolean
policy_config_clear_rule(PolicyConfig *config, PolicyOrigin origin, const char *glob)
{
    gint i = glob ? rule_index(config, origin, glob) : -1;

    if (i < 0)
        return FALSE;
    g_ptr_array_remove_index(config->rules, (guint)i);
    return TRUE;
}

gboolean
policy_config_set_rule(PolicyConfig *config, PolicyOrigin origin, const char *glob,
                       const PolicySpec *spec, const char *who, gint64 set_ms,
                       GError **error)
{
    if (origin <= POLICY_ORIGIN_CONFIG || origin >= POLICY_ORIGIN_MAX) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "policy rule '%s': origin %d is not one set at run time",
                    glob ? glob : "", origin);
        return FALSE;
    }
    if (!rule_check(config, glob, spec, error))
        return FALSE;
    policy_config_clear_rule(config, origin, glob);
    g_ptr_array_insert(config->rules, (gint)rule_slot(config, origin, TRUE),
                       rule_new(glob, spec, origin, who, set_ms));
    return TRUE;
}

gboolean
policy_config_copy_rules(PolicyConfig *to, const PolicyConfig *from, PolicyOrigin origin,
                         GError **error)
{
    g_autoptr(GPtrArray) mine = g_ptr_array_new();

    /* Check all first, so that a failure leaves @to as it was. */
    for (guint i = 0; i < from->rules->len; i++) {
        const PolicyRule *r = from->rules->pdata[i];

        if (r->origin != origin)
            continue;
        if (!rule_check(to, r->glob, &r->spec, error))
            return FALSE;
        g_ptr_array_add(mine, (gpointer)r);
    }
    /* Oldest first, each in front of the last: the order is kept. */
    for (guint i = mine->len; i > 0; i--) {
        const PolicyRule *r = mine->pdata[i - 1];

        if (!policy_config_set_rule(to, origin, r->glob, &r->spec, r->who, r->set_ms, error))
            return FALSE;
    }
    return TRUE;
}

gboolean
policy_config_validate(const PolicyConfig *c, GError **error)
{
    const char *why = NULL;

    if (c->mode < 0 || c->mode >= POLICY_MODE_MAX)
        why = "mode is invalid";
    else if (c->grow_min < 2 || c->grow_max < c->grow_min)
        why = "poll-grow range must satisfy 2 <= min <= max";
    else if (c->shrink_min < 2 || c->shrink_max < c->shrink_min)
        why = "poll-shrink range must satisfy 2 <= min <= max";
    else if (c->min_dwell_ms < 0 || c->revalidate_ms < 0 || c->memory_ttl_ms < 0 ||
             c->contention_holdoff_ms < 0 ||
             c->external_hold_ms < 0)
        why = "durations must not be negative";
    else if (c->budget_cores < 0)
        why = "budget must not be negative";
    else if (c->saving_per_block_ns < 0)
        why = "saving per block must not be negative";
    else if (c->balanced_cpu_weight < 0 || c->efficiency_cpu_weight < 0 || c->exit_cost_ns < 0)
        why = "objective weights and the exit cost must not be negative";
    else if (c->probe_poll_max_ns == 0)
        why = "probe poll-max-ns must be positive";
    if (why) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "policy config: %s", why);
        return FALSE;
    }
    return TRUE;
}

/* Whether @glob matches @target/@iothread or @target alone. */
static gboolean
rule_matches(const char *glob, const char *target, const char *full)
{
    return (full && g_pattern_match_simple(glob, full)) || g_pattern_match_simple(glob, target);
}

const PolicySpec *
policy_config_lookup_named(const PolicyConfig *config, const char *target, const char *name,
                           const char *iothread)
{
    g_autofree char *full = iothread ? g_strdup_printf("%s/%s", target, iothread) : NULL;
    g_autofree char *named = NULL;

    if (name && g_str_equal(name, target))
        name = NULL;
    if (name && iothread)
        named = g_strdup_printf("%s/%s", name, iothread);
    for (guint i = 0; i < config->rules->len; i++) {
        const PolicyRule *r = g_ptr_array_index(config->rules, i);

        if (rule_matches(r->glob, target, full) || (name && rule_matches(r->glob, name, named)))
            return &r->spec;
    }
    return &config->default_spec;
}

static gboolean
factor_ok(guint64 v, guint64 lo, guint64 hi)
{
    return v == 0 || (v >= lo && v <= hi);
}

gboolean
policy_config_check_triple(const PolicyConfig *c, const PolicyTriple *t, GError **error)
{
    if (t->poll_max_ns > c->max_poll_max_ns) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "poll-max-ns=%" G_GUINT64_FORMAT " exceeds the bound %" G_GUINT64_FORMAT,
                    t->poll_max_ns, c->max_poll_max_ns);
        return FALSE;
    }
    if (!factor_ok(t->poll_grow, c->grow_min, c->grow_max)) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "poll-grow=%" G_GUINT64_FORMAT " outside 0 or %" G_GUINT64_FORMAT
                    "..%" G_GUINT64_FORMAT, t->poll_grow, c->grow_min, c->grow_max);
        return FALSE;
    }
    if (!factor_ok(t->poll_shrink, c->shrink_min, c->shrink_max)) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID,
                    "poll-shrink=%" G_GUINT64_FORMAT " outside 0 or %" G_GUINT64_FORMAT
                    "..%" G_GUINT64_FORMAT, t->poll_shrink, c->shrink_min, c->shrink_max);
        return FALSE;
    }
    return TRUE;
}

static guint64
clamp_factor(guint64 v, guint64 lo, guint64 hi)
{
    if (v == 0)
        return 0;
    return CLAMP(v, lo, hi);
}

gboolean
policy_config_clamp_triple(const PolicyConfig *c, PolicyTriple *t)
{
    PolicyTriple before = *t;

    t->poll_max_ns = MIN(t->poll_max_ns, c->max_poll_max_ns);
    t->poll_grow = clamp_factor(t->poll_grow, c->grow_min, c->grow_max);
    t->poll_shrink = clamp_factor(t->poll_shrink, c->shrink_min, c->shrink_max);
    return !policy_triple_equal(&before, t);
}
