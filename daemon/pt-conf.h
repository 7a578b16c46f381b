/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-conf: polltuned's configuration, /etc/polltune/polltuned.conf.
 *
 * The file is a GKeyFile.  Loading parses and validates everything before
 * anything is used, so a bad file (at start or on reload) changes nothing:
 * the error names the file, the line and the key.  docs/CONFIG.md is the
 * reference and docs/polltuned.conf.example a fully commented example.
 *
 * Policy settings are turned straight into a PolicyConfig, so the policy
 * library validates its own bounds; rule groups are "[rule NAME-GLOB]".
 * Every key of the fixed groups is one row of common/pt-conf-keys.def
 * (pt-conf-keys.h): its name, type, field, default, range and whether a
 * reload may change it.
 */
#pragma once

#include <glib.h>

#include "pt-conf-read.h"
#include "pt-conf-types.h"
#include "pt-conf-units.h"

/* The built-in defaults, as a file with no keys gives them. */
PtConf *pt_conf_new_default(void);
void pt_conf_free(PtConf *conf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtConf, pt_conf_free)

/* Parse and validate @path.  A missing file is an error only if @must_exist. */
PtConf *pt_conf_load(const char *path, gboolean must_exist, GError **error);
/* The same in a thread of its own, waited for until it ends or @stop
 * returns TRUE (asked every 10 ms); then it fails with
 * G_IO_ERROR_CANCELLED at once, and the thread finishes alone. */
PtConf *pt_conf_load_until(const char *path, gboolean must_exist, gboolean (*stop)(void),
                           GError **error);
/* The same from text, for tests and the fuzzer; @name labels errors. */
PtConf *pt_conf_load_data(const char *data, gsize len, const char *name,
                          GError **error);

/* Put @ov in front of @conf's own settings, and keep a copy in
 * conf->overrides so that the next reload puts them in front again. */
/* Every key with its effective value, in the file's syntax (loads back to
 * the same configuration). */
char *pt_conf_format(const PtConf *conf);
void pt_conf_apply_overrides(PtConf *conf, const PtConfOverrides *ov);

/* Whether @next may replace @running without a restart: FALSE, naming the
 * file, group and key, if a key that is read only at start differs (the
 * database, the control socket and its groups, the metrics listener,
 * libvirt, the fixed QMP sockets, retention). */
gboolean pt_conf_check_reload(const PtConf *running, const PtConf *next, GError **error);

/* The keys the parser accepts in @group: "daemon", "targets", "retention",
 * "policy", or "rule" for every [rule GLOB] group; NULL for any other
 * name.  The manual page test reads them, so polltuned.conf(5) cannot
 * miss a key. */
const char *const *pt_conf_known_keys(const char *group);
