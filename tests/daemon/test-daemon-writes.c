/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * polltuned against three QMP peers that misbehave on the write path, which
 * no real QEMU can be made to do: one refuses every qom-set, one answers
 * every qom-set and keeps its old values, one reports new iothread ids at
 * every query.  Each is the fake QEMU of tests/qmp on a thread of its own
 * (the first two its iothread model, the third a responder), while the
 * real daemon (a child process) finds the three sockets through its glob.
 *
 * The daemon must read back what it wrote, back off on a write that failed
 * or did not take (pt-target.h: 2 s, doubling), say so once, and bound the
 * iothreads one QEMU process may bring: counted here in qom-sets, log
 * lines and store rows.
 */
#include <json-c/json.h>
#include <sqlite3.h>
#include <string.h>
#include <glib/gstdio.h>

#include "pt-test-daemon.h"
#include "pt-test-fixture.h"
#include "qmp-fake-qemu.h"
#include "qmp-json.h"

/* How long the daemon runs against the peers: the backoff allows writes at
 * about 0, 2, 6 and 14 s of it. */
#define RUN_S 20

typedef enum {
    PEER_REFUSES,               /* every qom-set is an error */
    PEER_IGNORES,               /* every qom-set succeeds and changes nothing */
    PEER_CHURNS,                /* new iothread ids at every query-iothreads */
    PEER_MAX,
} PeerKind;

static const char *const peer_names[PEER_MAX] = { "refuses", "ignores", "churns" };

typedef struct {
    QmpFakeQemu *fake;
    gint queries;               /* query-iothreads answered (churns; atomic) */
} Peer;

/* New iothread ids at every query, at QEMU's defaults: the fake's
 * iothread model answers the other two peers. */
static char *
churn_respond(const char *command, json_object *args, gpointer data)
{
    Peer *p = data;
    guint n;

    if (!g_str_equal(command, "query-iothreads"))
        return NULL;
    n = (guint)g_atomic_int_add(&p->queries, 1);
    return g_strdup_printf("{\"return\": [{\"id\": \"c%u\", \"thread-id\": %d, \"poll-max-ns\": "
                           "32768, \"poll-grow\": 0, \"poll-shrink\": 0, \"aio-max-batch\": 0}, "
                           "{\"id\": \"c%u\", \"thread-id\": %d, \"poll-max-ns\": 32768, "
                           "\"poll-grow\": 0, \"poll-shrink\": 0, \"aio-max-batch\": 0}]}",
                           2 * n, (int)getpid(), 2 * n + 1, (int)getpid());
}

/* Rows the store keeps for @target: iothreads, and originals. */
static void
store_rows(PtTestDaemon *d, const char *target, gint64 *iothreads, gint64 *originals)
{
    static const char *const sql[] = {
        "SELECT count(*) FROM iothreads i JOIN targets t ON t.id = i.target_id"
        " WHERE t.name = ?",
        "SELECT count(*) FROM originals o JOIN iothreads i ON i.id = o.iothread_id"
        " JOIN targets t ON t.id = i.target_id WHERE t.name = ?",
    };
    gint64 *out[] = { iothreads, originals };
    sqlite3 *db = NULL;

    g_assert_cmpint(sqlite3_open_v2(d->db_path, &db, SQLITE_OPEN_READONLY, NULL), ==, SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    for (guint i = 0; i < G_N_ELEMENTS(sql); i++) {
        sqlite3_stmt *st = NULL;

        g_assert_cmpint(sqlite3_prepare_v2(db, sql[i], -1, &st, NULL), ==, SQLITE_OK);
        sqlite3_bind_text(st, 1, target, -1, SQLITE_STATIC);
        g_assert_cmpint(sqlite3_step(st), ==, SQLITE_ROW);
        *out[i] = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    sqlite3_close(db);
}

static void
test_write_backoff(void)
{
    g_autofree char *dir = g_dir_make_tmp("pt-writes-XXXXXX", NULL);
    g_autoptr(PtTestDaemon) d = NULL;
    g_autofree char *churn_sock = g_strdup_printf("%s/churns.qmp", dir);
    Peer peers[PEER_MAX] = { 0 };
    gint64 rows[2], later[2];

    for (guint k = 0; k < PEER_MAX; k++) {
        g_autofree char *sock = g_strdup_printf("%s/%s.qmp", dir, peer_names[k]);

        peers[k].fake = qmp_fake_qemu_new_listen(sock);
        qmp_fake_handshake(peers[k].fake);
        qmp_fake_answer_idle(peers[k].fake);
        if (k == PEER_CHURNS) {
            qmp_fake_qemu_set_responder(peers[k].fake, churn_respond, &peers[k]);
        } else {
            /* QEMU's defaults, whatever was written: no write ever takes. */
            qmp_fake_qemu_add_iothreads(peers[k].fake, "iot", 2, (guint)getpid());
            qmp_fake_qemu_set_writes(peers[k].fake, k == PEER_REFUSES ? QMP_FAKE_WRITES_REFUSED :
                                     QMP_FAKE_WRITES_IGNORED, "Property is not writable");
        }
        qmp_fake_qemu_start_thread(peers[k].fake);
    }
    d = pt_test_daemon_up(PT_TEST_CONF_BASE, "interval = 100ms\nqmp-timeout = 2s\n"
                          "[targets]\nqmp-globs = %s/*.qmp\n[policy]\ndefault = static:40000/2/2\n"
                          "[rule churns]\npolicy = observe\n", dir);
    g_assert_cmpint(pt_test_wait_target(d, "refuses", 2, TRUE, 10000), >=, 0);
    g_assert_cmpint(pt_test_wait_target(d, "ignores", 2, TRUE, 10000), >=, 0);
    g_usleep(RUN_S * G_USEC_PER_SEC);

    for (guint k = PEER_REFUSES; k <= PEER_IGNORES; k++)
        for (guint i = 0; i < 2; i++)
            g_test_message("%s/iot%u: %u qom-sets in %d s", peer_names[k], i,
                           qmp_fake_qemu_iothread_sets(peers[k].fake, i), RUN_S);
    /* A refused write is its three qom-sets, sent together: at most 5
     * attempts (0, 2, 6, 14 s and a slow start), where every tick or two
     * tried again. */
    for (guint i = 0; i < 2; i++) {
        g_assert_cmpint(qmp_fake_qemu_iothread_sets(peers[PEER_REFUSES].fake, i), >=, 3);
        g_assert_cmpint(qmp_fake_qemu_iothread_sets(peers[PEER_REFUSES].fake, i), <=, 15);
        /* A write answered but not taken is three qom-sets (grow, shrink,
         * poll-max-ns), read back the next tick, then backed off alike. */
        g_assert_cmpint(qmp_fake_qemu_iothread_sets(peers[PEER_IGNORES].fake, i), >=, 3);
        g_assert_cmpint(qmp_fake_qemu_iothread_sets(peers[PEER_IGNORES].fake, i), <=, 15);
    }
    /* One line per iothread when its writes start failing, and nothing for
     * each attempt after. */
    g_assert_cmpuint(pt_test_daemon_log_count(d, "refuses.qmp/iot0: writes fail: "), ==, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "refuses.qmp/iot1: writes fail: "), ==, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "ignores.qmp/iot0: writes fail: QEMU answered "
                                                 "the write of 40000/2/2 but still reports "
                                                 "32768/0/0"), ==, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "ignores.qmp/iot1: writes fail: "), ==, 1);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "refuses.qmp/iot0: static:40000/2/2 failed"),
                     ==, 0);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "ignores.qmp/iot0: static:40000/2/2 applied"),
                     ==, 1);
    /* status shows a write that did not take as such, not as applied. */
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);
        json_object *tl = pt_json_path(st, "targets");
        guint seen = 0;

        for (size_t i = 0; i < json_object_array_length(tl); i++) {
            json_object *t = json_object_array_get_idx(tl, i);
            json_object *ios = pt_json_path(t, "iothreads");

            if (!g_str_has_suffix(pt_json_path_str(t, "name"), "/ignores.qmp"))
                continue;
            for (size_t k = 0; k < json_object_array_length(ios); k++) {
                json_object *io = json_object_array_get_idx(ios, k);

                g_assert_true(g_str_has_prefix(pt_json_path_str(io, "last_decision/outcome"),
                                               "not taken: QEMU answered the write of "
                                               "40000/2/2 but still reports 32768/0/0"));
                g_assert_false(json_object_get_boolean(pt_json_path(io,
                                                                    "last_decision/applied")));
                seen++;
            }
        }
        g_assert_cmpuint(seen, ==, 2);
    }

    /* New ids at every query: 2 reported at once, so room for 2 x 2 + 64
     * ids, said once, and the store stops growing there. */
    g_assert_cmpint(g_atomic_int_get(&peers[PEER_CHURNS].queries), >, 68 / 2 + 10);
    g_assert_cmpuint(pt_test_daemon_log_count(d, "churns.qmp: iothread c68 and any other new "
                                                 "id are left out: this QEMU process brought "
                                                 "68 iothread ids already"), ==, 1);
    g_assert_true(pt_test_wait_stored(d, "refuses", "iot0", 0, 5000));
    store_rows(d, churn_sock, &rows[0], &rows[1]);
    g_test_message("churns: %" G_GINT64_FORMAT " iothread rows, %" G_GINT64_FORMAT
                   " originals after %d queries", rows[0], rows[1],
                   g_atomic_int_get(&peers[PEER_CHURNS].queries));
    g_assert_cmpint(rows[0], <=, 68);
    g_assert_cmpint(rows[1], <=, 68);
    {
        g_autoptr(json_object) st = pt_test_daemon_ok(d, "status", NULL);

        g_assert_true(pt_test_wait_ticks(d, pt_json_path_int(st, "ticks") + 20, 10000));
    }
    g_assert_true(pt_test_wait_stored(d, "refuses", "iot0", 0, 5000));
    store_rows(d, churn_sock, &later[0], &later[1]);
    g_assert_cmpint(later[0], ==, rows[0]);
    g_assert_cmpint(later[1], ==, rows[1]);

    g_assert_cmpint(pt_test_daemon_stop(d), ==, 0);
    for (guint k = 0; k < PEER_MAX; k++)
        qmp_fake_qemu_free(peers[k].fake);
    g_rmdir(dir);
}

int
main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/daemon/writes/backoff", test_write_backoff);
    return g_test_run();
}
