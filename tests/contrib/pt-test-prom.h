/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-test-prom: a real Prometheus server for the contrib tests.
 *
 * Debian's prometheus runs on 127.0.0.1 on a free port with a private data
 * directory and the configuration the test writes; it dies with the test
 * process however that ends.  Queries go through its HTTP API.
 */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "pt-test-daemon.h"
#include "pt-test-qemu.h"

typedef struct {
    GPid pid;
    guint port;
    char *dir;              /* prometheus.yml, tsdb/, prometheus.log */
} PtTestProm;

/* A TCP port on 127.0.0.1 free when asked. */
guint pt_test_free_port(void);

/* TRUE if the prometheus server is installed; else FALSE and *why says why. */
gboolean pt_test_have_prometheus(char **why);

/* Write @config (the whole prometheus.yml) to @dir and start the server
 * there; returns once it answers its readiness check, or NULL after 60 s. */
PtTestProm *pt_test_prom_start(const char *dir, const char *config, GError **error);
/* Stop it and wait for it. */
void pt_test_prom_free(PtTestProm *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestProm, pt_test_prom_free)

/* GET @path_query ("/api/v1/rules") and return the reply's JSON, or NULL
 * with @error on a transport failure or a body that is not JSON. */
json_object *pt_test_prom_get(PtTestProm *p, const char *path_query, GError **error);

/*
 * An instant query: data.result (a new reference), or NULL with @error set
 * to the server's error ("many-to-many matching not allowed: ...") or the
 * transport's.
 */
json_object *pt_test_prom_query(PtTestProm *p, const char *promql, GError **error);

/*
 * A host as these tests stand one up: a QEMU with @qemu_args (its iothreads)
 * and a QMP socket @dir/@vm.qmp, and a polltuned that finds it by a glob,
 * ticks every 250 ms and serves metrics on a free port.  @targets_extra
 * goes into [targets] (libvirt = false when NULL), @policy is the default
 * policy.  The target is attached when this returns.
 */
typedef struct {
    char *dir;
    PtTestQemu *qemu;
    PtTestDaemon *d;
    guint port;
} PtTestPromHost;

PtTestPromHost *pt_test_prom_host_start(const char *dir, const char *vm,
                                        const char *const *qemu_args,
                                        const char *targets_extra, const char *policy,
                                        GError **error);
void pt_test_prom_host_free(PtTestPromHost *h);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtTestPromHost, pt_test_prom_host_free)
