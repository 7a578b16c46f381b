/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-metrics: the Prometheus endpoint.  GET /metrics returns
 * pt_daemon_render_metrics() as OpenMetrics text (pt-metrics.c renders,
 * pt-metrics-http.c serves).
 */
#pragma once

#include "pt-daemon.h"

typedef struct PtMetricsServer PtMetricsServer;

/* Render the exposition (pt-metrics.c): OpenMetrics 1.0, or the Prometheus
 * text format 0.0.4 when @openmetrics is FALSE. */
char *pt_daemon_render_metrics(PtDaemon *d, gboolean openmetrics);

/* @listen is "HOST:PORT" (IPv6 as "[::1]:9563").  At most @max_conns
 * connections are open at once (a new one evicts the oldest), and each is
 * closed @idle_ms after it was accepted if the peer has not finished by
 * then.  Only a request head is read, never a body. */
PtMetricsServer *pt_metrics_server_new(PtDaemon *d, const char *listen, guint max_conns,
                                       guint idle_ms, GError **error);
/* The connection cap to use under a descriptor limit of @nofile: the
 * configured one, lowered so the listener can never take the descriptors
 * the control socket, the database and the targets need. */
guint pt_metrics_conn_cap(guint configured, guint64 nofile);
void pt_metrics_server_free(PtMetricsServer *m);
/* The status to answer the request head @head (@len bytes, up to and
 * including its blank line): 200 for GET or HEAD of /metrics without a
 * body (@openmetrics: it accepts OpenMetrics; @head_only: HEAD), 405 for
 * another method, 413 for a request with a body, 404 for another path,
 * 400 for what does not parse.  Pure: the head is all it reads. */
guint pt_http_head_parse(const char *head, gsize len, gboolean *openmetrics,
                         gboolean *head_only);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtMetricsServer, pt_metrics_server_free)
