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

/* The runtime directory polltuned may create (systemd's RuntimeDirectory=
 * creates it under the unit); the default control socket and pidfile live
 * in it. */
#define PT_RUNTIME_DIR "/run/polltune"
#define PT_STATE_DIR "/var/lib/polltune"

#include <glib.h>

#include "policy.h"
#include "pt-enum.h"

typedef enum {
    PT_MODE_OBSERVE,        /* measure and record; write nothing, restore originals */
    PT_MODE_RECOMMEND,      /* decide and record; write nothing */
    PT_MODE_ENFORCE,        /* decide and write */
    PT_MODE_MAX,
    PT_MODE_INVALID = -1,
} PtMode;

PT_ENUM_DECL(pt_mode, PtMode);

typedef enum {
    PT_RESTART_RESTORE,     /* after an unclean exit, restore originals */
    PT_RESTART_RESUME,      /* keep what the last run's policy chose */
    PT_RESTART_MAX,
    PT_RESTART_INVALID = -1,
} PtRestart;

PT_ENUM_DECL(pt_restart, PtRestart);

/* Settings from polltuned's command line: they stand in front of the
 * file's, at start and across every reload. */
typedef struct {
    char *database;             /* --db, or NULL */
    char *control_socket;       /* --socket, or NULL */
    PtMode mode;                /* --mode, or PT_MODE_INVALID */
    guint interval_ms;          /* --interval, or 0 */
} PtConfOverrides;

typedef struct {
    char *path;                 /* the file this came from, or NULL */
    gboolean from_file;         /* read from @path, not defaults for its absence */
    PtConfOverrides overrides;  /* what the command line put in front */

    guint interval_ms;
    PtMode mode;
    gboolean restore_on_exit;
    PtRestart on_restart;
    guint qmp_timeout_ms;
    char *exits_source;         /* auto, debugfs, perf, off */

    gboolean libvirt;
    char *libvirt_uri;
    char *libvirt_pid_dir;      /* where libvirt keeps QEMU pid files */
    char **qmp_sockets;         /* NULL-terminated */
    char **qmp_globs;

    char *database;
    gint64 raw_retention_ms;
    gint64 rollup_1m_retention_ms;
    gint64 rollup_1h_retention_ms;
    gint64 max_size_bytes;

    char *control_socket;
    char *control_group;
    char *admin_group;          /* NULL: only root mutates */
    char *metrics_listen;       /* "HOST:PORT"; NULL: off */
    guint metrics_max_conns;    /* open HTTP connections at once */
    guint metrics_idle_ms;      /* a connection is closed this long after accept */

    PolicyConfig *policy;

    /* "group/key" -> a duration or size as the file wrote it ("48h"), so
     * that --check-config shows it so. */
    GHashTable *written;
} PtConf;

/* The built-in defaults, as a file with no keys gives them. */
PtConf *pt_conf_new_default(void);
void pt_conf_free(PtConf *conf);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtConf, pt_conf_free)

/*
 * The largest configuration file read.  The largest legitimate one holds
 * the fixed groups (about 60 keys, under 8 KiB with the shipped example's
 * comments) and a rule per iothread of the largest host: 1024 VMs of 8
 * iothreads each is 8192 [rule] groups, at about 100 bytes each with a
 * long VM name and a comment line, some 800 KiB.  4 MiB leaves five times
 * that; a file at the limit (143k short rules) loads in about 0.7 s of
 * CPU, so a reload at the limit holds the main loop about that long, far
 * inside the watchdog's 30 s, and a stop not at all (pt_conf_load_until()).
 */
#define PT_CONF_MAX_BYTES (4u << 20)

/* @path's text, NUL-terminated: opened without blocking (a FIFO at @path
 * does not hold the caller), refused unless a regular file of at most
 * PT_CONF_MAX_BYTES; the error names @path and the cause.  @len may be
 * NULL. */
gboolean pt_conf_read_file(const char *path, char **data, gsize *len, GError **error);
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

/* "1s", "250ms", "48h", "30d", "2w"; a bare number is milliseconds. */
gboolean pt_parse_duration(const char *text, gint64 *ms, GError **error);
/* "2GiB", "512MiB", "100M", "4096"; a bare number is bytes. */
gboolean pt_parse_size(const char *text, gint64 *bytes, GError **error);
/* @ms in the largest unit that holds it exactly: "48h", "250ms", "3d". */
char *pt_format_duration(gint64 ms);
/* @bytes in the largest binary unit that holds it exactly: "2GiB". */
char *pt_format_size(gint64 bytes);
/* metrics-listen: "IPV4:PORT" or "[IPV6]:PORT", PORT in 1..65535.  Sets
 * @host (the address without brackets) and @port. */
gboolean pt_parse_listen(const char *text, char **host, guint16 *port, GError **error);
