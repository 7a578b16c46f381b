/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chaos run's abusive clients of the control socket and the metrics
 * endpoint.  None of them waits for the daemon: they are non-blocking and
 * either act at once (connect and close, flood) or stay in Chaos.clients
 * until their time is up.  The non-root one is a forked child that drops to
 * uid/gid 65534 (a member of the control group the run configures) and holds
 * as many connections as the daemon lets it.
 */
#include "chaos.h"

#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static const char chaos_slow_request[] = "{\"execute\": \"status\", \"id\": \"slow\"}\n";

/* Most connections one abuser holds.  Above the daemon's 64-connection
 * control cap, so a cap without a reserve for root shows. */
#define CHAOS_HOG_CONNECTIONS 80

static void
chaos_client_add(Chaos *ch, ChaosClientKind kind, int fd, guint min_s, guint max_s)
{
    ChaosClient *c = g_new0(ChaosClient, 1);

    c->kind = kind;
    c->fd = fd;
    c->until = g_get_monotonic_time() +
               (gint64)g_rand_int_range(ch->rng, min_s, max_s + 1) * G_USEC_PER_SEC;
    c->next_byte = g_get_monotonic_time();
    g_ptr_array_add(ch->clients, c);
}

void
chaos_abuse_connect_close(Chaos *ch)
{
    guint n = g_rand_int_range(ch->rng, 20, 201);

    for (guint i = 0; i < n; i++) {
        int fd = chaos_unix_connect(ch->d->socket_path);

        if (fd >= 0)
            close(fd);
    }
}

/* Requests as fast as the socket takes them for a second, never reading a
 * reply, then a hang-up. */
void
chaos_abuse_flood(Chaos *ch)
{
    gint64 end = g_get_monotonic_time() + G_USEC_PER_SEC;
    int fd = chaos_unix_connect(ch->d->socket_path);
    guint n = 0;

    while (fd >= 0 && g_get_monotonic_time() < end) {
        g_autofree char *req = g_strdup_printf("{\"execute\": \"version\", \"id\": %u}\n", n++);
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };

        if (poll(&pfd, 1, 50) <= 0)
            continue;
        if (send(fd, req, strlen(req), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 && errno != EAGAIN)
            break;
    }
    if (fd >= 0)
        close(fd);
}

void
chaos_abuse_garbage(Chaos *ch)
{
    static const char junk[] = "{not json\n\x01\x02\xff\xfe]]]}\n{\"execute\": 12}\n"
                               "{\"execute\": \"status\", \"arguments\": [1, 2]}\n";
    int fd = chaos_unix_connect(ch->d->socket_path);

    if (fd < 0)
        return;
    (void)!send(fd, junk, sizeof(junk) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    chaos_client_add(ch, CHAOS_CLIENT_GARBAGE, fd, 5, 20);
}

void
chaos_abuse_slow(Chaos *ch)
{
    int fd = chaos_unix_connect(ch->d->socket_path);

    if (fd >= 0)
        chaos_client_add(ch, CHAOS_CLIENT_SLOW, fd, 10, 45);
}

void
chaos_abuse_metrics(Chaos *ch)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(ch->metrics_port),
                               .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    guint n = g_rand_int_range(ch->rng, 50, 301);
    gint64 end = g_get_monotonic_time() + 3 * G_USEC_PER_SEC;
    guint open_now = 0;

    for (guint i = 0; i < ch->clients->len; i++)
        open_now += ((ChaosClient *)ch->clients->pdata[i])->kind == CHAOS_CLIENT_METRICS;
    /* The harness's own descriptors stay well inside its limit. */
    n = MIN(n, 900 - MIN(open_now, 900));
    /* One at a time, each until the daemon's backlog took it, as a client
     * that blocks in connect() would: a burst of non-blocking connects
     * overflows the backlog and most of them never arrive.  At most 3 s. */
    for (guint i = 0; i < n && g_get_monotonic_time() < end; i++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        struct pollfd pfd = { .fd = fd, .events = POLLOUT };

        if (fd < 0)
            break;
        if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 && errno != EINPROGRESS) {
            close(fd);
            continue;
        }
        (void)poll(&pfd, 1, 100);
        chaos_client_add(ch, CHAOS_CLIENT_METRICS, fd, 10, 40);
    }
}

/* In the child only: async-signal-safe calls, then _exit. */
static void G_GNUC_NORETURN
chaos_nonroot_child(const char *socket_path, guint seconds)
{
    static const char mutate[] = "{\"execute\": \"mode-set\", \"arguments\": {\"mode\": \"observe\"}}\n";
    int fds[CHAOS_HOG_CONNECTIONS];

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
        setresuid(65534, 65534, 65534) < 0)
        _exit(3);
    for (guint i = 0; i < G_N_ELEMENTS(fds); i++)
        fds[i] = chaos_unix_connect(socket_path);
    if (fds[0] >= 0)
        (void)!send(fds[0], mutate, sizeof(mutate) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    sleep(seconds);
    _exit(0);
}

void
chaos_abuse_nonroot(Chaos *ch)
{
    static gboolean said;
    guint seconds = g_rand_int_range(ch->rng, 10, 31);
    ChaosChild c;

    if (geteuid() != 0) {
        if (!said)
            g_printerr("# skipping the non-root control client: it needs root to change uid\n");
        said = TRUE;
        return;
    }
    c.pid = fork();
    g_assert_cmpint(c.pid, >=, 0);
    if (c.pid == 0)
        chaos_nonroot_child(ch->d->socket_path, seconds + 5);
    c.until = g_get_monotonic_time() + (gint64)seconds * G_USEC_PER_SEC;
    g_array_append_val(ch->children, c);
}

void
chaos_abuse_step(Chaos *ch, gboolean all)
{
    gint64 now = g_get_monotonic_time();

    for (guint i = 0; i < ch->clients->len;) {
        ChaosClient *c = ch->clients->pdata[i];

        if (all || now >= c->until) {
            close(c->fd);
            g_ptr_array_remove_index_fast(ch->clients, i);
            g_free(c);
            continue;
        }
        if (c->kind == CHAOS_CLIENT_SLOW && now >= c->next_byte &&
            c->pos < sizeof(chaos_slow_request) - 1) {
            if (send(c->fd, chaos_slow_request + c->pos, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                c->pos++;
            c->next_byte = now + G_USEC_PER_SEC;
        }
        i++;
    }
    for (guint i = 0; i < ch->children->len;) {
        ChaosChild *c = &g_array_index(ch->children, ChaosChild, i);

        if (all || now >= c->until) {
            kill(c->pid, SIGKILL);
            waitpid(c->pid, NULL, 0);
            g_array_remove_index_fast(ch->children, i);
            continue;
        }
        i++;
    }
}
