/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-qmp-sync: the typed QMP commands of qmp-commands.h in a
 * synchronous form, for tests and benchmarks.  The daemon sends every
 * command asynchronously and never needs these; a test reads better one
 * call at a time.
 *
 * Each runs the command to completion on the caller's thread-default main
 * context, where the client must run (qmp_client_new(NULL, ...), as every
 * test's client does), and returns what the _finish function of the
 * command would, or NULL/FALSE with @error set.  Never call one from
 * inside a callback of the client's.
 */
#pragma once

#include "qmp-commands.h"

GPtrArray *qmp_query_iothreads_sync(QmpClient *c, GError **error);

gboolean qmp_iothread_set_sync(QmpClient *c, const char *iothread_id, QmpIothreadProp prop,
                               gint64 value, gint64 max, GError **error);
gboolean qmp_iothread_get_sync(QmpClient *c, const char *iothread_id, QmpIothreadProp prop,
                               gint64 *value, GError **error);

GPtrArray *qmp_query_blockstats_sync(QmpClient *c, GError **error);
GPtrArray *qmp_query_block_sync(QmpClient *c, GError **error);
gboolean qmp_device_iothreads_sync(QmpClient *c, const char *qdev, char ***iothreads,
                                   GError **error);

QmpStats *qmp_query_stats_sync(QmpClient *c, QmpStatsTarget target, GError **error);
/* Result: GPtrArray of QmpStatSchema, one per statistic. */
GPtrArray *qmp_query_stats_schemas_sync(QmpClient *c, GError **error);

QmpStatus *qmp_query_status_sync(QmpClient *c, GError **error);
/* The VM's -name, or "" when it has none. */
char *qmp_query_name_sync(QmpClient *c, GError **error);
QmpVersion *qmp_query_version_sync(QmpClient *c, GError **error);
