/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf-keys: the rows of common/pt-conf-keys.def as data, one PtConfKey
 * per key of polltuned.conf.  The parser (pt-conf.c), the formatter
 * (pt-conf-format.c, --check-config), the reload
 * check, the defaults and the list of known keys all walk this table, so
 * a key is named, typed, bounded and documented in one row.
 */
#pragma once

#include "pt-conf-types.h"
#include "pt-conf-units.h"

/* A key's syntax: how it is parsed, validated and written back. */
typedef enum {
    PT_CONF_TYPE_BOOL,          /* true/yes/1, false/no/0 */
    PT_CONF_TYPE_MODE,          /* PtMode by name */
    PT_CONF_TYPE_RESTART,       /* PtRestart by name */
    PT_CONF_TYPE_DURATION,      /* pt_parse_duration(), ms in min..max */
    PT_CONF_TYPE_SIZE,          /* pt_parse_size(), bytes, at least min */
    PT_CONF_TYPE_STRING,        /* non-empty */
    PT_CONF_TYPE_STRING_EMPTY,  /* empty: unset (NULL) */
    PT_CONF_TYPE_PATH,          /* absolute */
    PT_CONF_TYPE_DATABASE,      /* absolute, or ":memory:" */
    PT_CONF_TYPE_LISTEN,        /* pt_parse_listen(), or empty: off */
    PT_CONF_TYPE_EXITS,         /* auto, debugfs, perf, off */
    PT_CONF_TYPE_UINT,          /* whole number in min..max */
    PT_CONF_TYPE_DOUBLE,        /* decimal number in min..max */
    PT_CONF_TYPE_PATHS,         /* ;-separated absolute paths (char **) */
    PT_CONF_TYPE_SPEC,          /* a PolicySpec by name */
    PT_CONF_TYPE_MAX,
} PtConfType;

typedef struct {
    const char *group;
    const char *key;
    PtConfType type;
    gboolean in_policy;         /* lands in PtConf.policy, not PtConf itself */
    gsize offset;               /* of the field in its struct */
    gsize size;                 /* of the field: integers are 32 or 64 bits */
    double min, max;            /* exact for every bound the table holds */
    gboolean restart;           /* read only at start: a reload may not change it */
    const char *doc;
} PtConfKey;

/* Every key, in the file's group order and --check-config's order. */
extern const PtConfKey pt_conf_keys[];
extern const gsize pt_conf_n_keys;

/* The fixed groups, in the file's order. */
extern const char *const pt_conf_groups[];

/* The row of [@group] @key, or NULL. */
const PtConfKey *pt_conf_key_lookup(const char *group, const char *key);

/* Where @k lands in @c. */
gpointer pt_conf_key_field(const PtConfKey *k, PtConf *c);
gconstpointer pt_conf_key_field_const(const PtConfKey *k, const PtConf *c);
/* An integer field (DURATION, SIZE, UINT) of either width. */
gint64 pt_conf_key_get_int(const PtConfKey *k, const PtConf *c);
void pt_conf_key_set_int(const PtConfKey *k, PtConf *c, gint64 v);

/* @k's value in @c in the file's syntax, durations and sizes in their
 * largest exact unit; NULL for an unset string; a PATHS value joined by
 * ";". */
char *pt_conf_key_format(const PtConfKey *k, const PtConf *c);
/* Whether @k's field is one string (char *). */
gboolean pt_conf_key_is_string(const PtConfKey *k);
/* Whether @k's value reads as text (quoted in messages, empty when unset). */
gboolean pt_conf_key_is_text(const PtConfKey *k);

/* Sets PtConf's own keys to their defaults (policy_config_new() sets the
 * PolicyConfig ones from the same rows); strings and lists are owned. */
void pt_conf_keys_set_defaults(PtConf *c);
