/*
 * pt-metrics: the Prometheus endpoint.  GET /metrics returns
 * pt_daemon_render_metrics() as OpenMetrics text.
 */
#pragma once

#include "pt-daemon.h"

typedef struct PtMetricsServer PtMetricsServer;

/* @listen is "HOST:PORT" (IPv6 as "[::1]:9563"). */
PtMetricsServer *pt_metrics_server_new(PtDaemon *d, const char *listen, GError **error);
void pt_metrics_server_free(PtMetricsServer *m);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtMetricsServer, pt_metrics_server_free)
