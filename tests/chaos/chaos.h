/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * chaos: the daemon under everything at once, checked all the time.
 *
 * One run starts polltuned (under ASan in the sanitizer build) on a glob
 * directory holding two real QEMUs, then fires actions from a schedule that
 * a seeded GRand draws: hostile QMP peers, abusive control and metrics
 * clients, SIGSTOP and SIGKILL of a QEMU, a full disk under the database,
 * good and broken reloads, kill -9 of the daemon.  The actions overlap; the
 * main loop runs them, ends them when their time is up, and between two
 * steps checks the invariants listed in docs/BENCHMARKS.md ("Chaos run").
 *
 * A violated invariant is recorded with the seed and the time and the run
 * goes on, so that one run names every invariant that fails; the test
 * fails at the end if any was recorded.  Only a dead daemon ends it early.
 */
#pragma once

#include "qmp-client.h"

#include <glib.h>
#include <sys/types.h>
#include <json-c/json.h>
#include "qmp-fake-hostile.h"
#include "pt-test-daemon.h"
#include "pt-test-qemu.h"

#define CHAOS_N_VMS 2
#define CHAOS_N_IOTHREADS 2

typedef struct {
    guint64 max_ns, grow, shrink;
} ChaosTriple;

typedef struct {
    char *name;                 /* vmN: its daemon monitor is DIR/vmN.qmp */
    PtTestQemu *q;              /* q->qmp_path is the test's own monitor */
    ChaosTriple original;       /* what this instance was started with */
    guint instance;             /* unique over the run */
    guint starts;               /* instances of this VM */
    gint64 stopped_until;       /* monotonic µs; 0 when running */
    /* Sample cadence, in the daemon's ticks (see chaos_check_samples). */
    gboolean tracking;
    gint64 last_ts_ms;
    gint64 ticks_at_ts;
    gint64 followed_ticks;      /* ticks over which the cadence was checked */
    gint64 eligible_since;      /* monotonic µs: running, daemon up */
    gint64 eligible_real_ms;    /* the same moment in the daemon's clock */
    const char *since_what;     /* what made it ineligible last */
    gboolean triple_check_due;  /* after a stop or restart */
} ChaosVm;

typedef struct {
    QmpFakeQemu *peer;
    gint64 until;
} ChaosPeer;

typedef enum {
    CHAOS_CLIENT_GARBAGE,       /* sent junk, then idles */
    CHAOS_CLIENT_SLOW,          /* a request, one byte a second */
    CHAOS_CLIENT_METRICS,       /* a TCP connection to /metrics, idle */
} ChaosClientKind;

typedef struct {
    ChaosClientKind kind;
    int fd;
    gint64 until;
    gint64 next_byte;
    guint pos;
} ChaosClient;

typedef struct {
    pid_t pid;
    gint64 until;
} ChaosChild;

typedef struct {
    GHashTable *first;          /* invariant -> first message */
    GHashTable *count;          /* invariant -> GUINT_TO_POINTER(n) */
} ChaosViolations;

typedef struct {
    guint32 seed;
    GRand *rng;
    gint64 start;               /* monotonic µs */
    gint64 end;
    char *dir;                  /* glob directory */
    char *mnt;                  /* private tmpfs for the database, or NULL */
    char *filler;               /* MNT/filler while the disk is full */
    gint64 disk_full_until;
    gint64 disk_freed_at;       /* 0 when not waiting for recovery */
    guint metrics_port;
    const char *policy;         /* the configured default */
    GPtrArray *policy_triples;  /* ChaosTriple*: every static one used */
    PtTestDaemon *d;
    gboolean daemon_down;
    ChaosVm vms[CHAOS_N_VMS];
    guint next_instance;
    GPtrArray *peers;           /* ChaosPeer* */
    guint next_peer;
    GPtrArray *clients;         /* ChaosClient* */
    GArray *children;           /* ChaosChild: uid 65534 clients */
    /* Bounds and what was measured against them. */
    guint64 rss_base_kb, rss_max_kb;
    guint fd_max;
    guint log_max_per_min;
    goffset log_read;
    GArray *log_stamps;         /* gint64 monotonic µs of each log line */
    guint actions;
    GHashTable *action_counts;  /* name -> n */
    ChaosViolations v;
} Chaos;

/* Bounds; docs/BENCHMARKS.md gives the reasoning for each. */
#define CHAOS_DAEMON_NOFILE 256
#define CHAOS_FD_BOUND 160
/* The daemon's own growth (ASan's 16 MB quarantine, sqlite's cache, two
 * minutes of history) within 64 MiB, plus what the hostile peers may make
 * it hold by design: a huge-line peer is read up to the QMP message limit
 * (sized for large legitimate VMs, qmp-client.h), which a doubling buffer
 * may hold twice while it grows, and up to CHAOS_MAX_PEERS of them run at
 * once; the heap need not shrink back after they are gone. */
#define CHAOS_MAX_PEERS 3
#define CHAOS_RSS_GROWTH_KB (64 * 1024 + CHAOS_MAX_PEERS * 2 * (QMP_DEFAULT_MAX_MESSAGE / 1024))
#define CHAOS_LOG_LINES_PER_MIN 200
#define CHAOS_GAP_TICKS 2
#define CHAOS_RECOVER_S 45
#define CHAOS_STORE_RECOVER_S 30
#define CHAOS_CONTROL_TIMEOUT_MS 5000

/* chaos-check.c */
void chaos_violation(Chaos *ch, const char *invariant, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
json_object *chaos_control_call(Chaos *ch, const char *command, const char *args_json,
                                guint timeout_ms, GError **error);
void chaos_check_all(Chaos *ch);
/* @when names what came before ("a clean stop"); @strict allows the own
 * original only, else a policy's triple too. */
void chaos_check_triples(Chaos *ch, ChaosVm *vm, gboolean strict, const char *when);
void chaos_check_integrity(Chaos *ch, const char *when);
void chaos_check_log(Chaos *ch);
void chaos_vm_ineligible(Chaos *ch, ChaosVm *vm, const char *why);
void chaos_vm_eligible(Chaos *ch, ChaosVm *vm);
gboolean chaos_daemon_alive(Chaos *ch);

/* chaos-abuse.c: control and metrics clients */
void chaos_abuse_connect_close(Chaos *ch);
void chaos_abuse_flood(Chaos *ch);
void chaos_abuse_garbage(Chaos *ch);
void chaos_abuse_slow(Chaos *ch);
void chaos_abuse_nonroot(Chaos *ch);
void chaos_abuse_metrics(Chaos *ch);
/* Drip bytes, end clients whose time is up; @all ends every one. */
void chaos_abuse_step(Chaos *ch, gboolean all);
int chaos_unix_connect(const char *path);
