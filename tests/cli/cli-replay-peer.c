/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * cli-replay-peer: a stand-in control socket for measuring polltunectl's
 * own cost (not polltuned's).  It serves one connection after another,
 * answering every request with a canned reply, until killed:
 *   cli-replay-peer SOCKET --status-vms N     status of N VMs, 2 iothreads each
 *   cli-replay-peer SOCKET --export-mb N      an export of N MiB of CSV lines in
 *                                             48 KiB EXPORT_DATA chunks
 * Replies are shaped as docs/CONTROL.md shows; the figures are invented.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <glib.h>

#define GREETING "{\"QMP\": {\"version\": {\"polltune\": {\"major\": 0, \"minor\": 1, " \
                 "\"micro\": 0}, \"protocol\": 1}, \"capabilities\": []}}\n"

static char *
status_reply(guint vms)
{
    GString *s = g_string_new("{\"return\": {\"mode\": \"enforce\", \"interval_ms\": 1000, "
                              "\"uptime_s\": 3600, \"ticks\": 3600, \"overruns\": 0, "
                              "\"last_tick_ms\": 3.2, \"store\": {\"path\": \"/var/lib/polltune/"
                              "history.db\", \"health\": \"ok\", \"pending\": 0, \"dropped\": 0}"
                              ", \"host\": {\"psi_some_avg10\": 0.5, \"cpu_busy_pct\": 37.0, "
                              "\"polling_cores\": 0.21, \"budget_cores\": 1.0}, \"targets\": [");

    for (guint v = 0; v < vms; v++) {
        g_string_append_printf(s, "%s{\"name\": \"vm-%u\", \"kind\": \"libvirt\", \"state\": "
                               "\"attached\", \"pid\": %u, \"policy\": \"adaptive:balanced\", "
                               "\"iothreads\": [", v ? ", " : "", v, 1000 + v);
        for (guint i = 0; i < 2; i++)
            g_string_append_printf(s, "%s{\"id\": \"iothread%u\", \"tid\": %u, \"triple\": "
                                   "{\"poll-max-ns\": 32768, \"poll-grow\": 0, \"poll-shrink\":"
                                   " 0}, \"policy\": \"adaptive:balanced\", \"override\": null,"
                                   " \"metrics\": {\"ts_ms\": 1764690000000, \"iops\": %u.0, "
                                   "\"lat_us\": 402.1, \"queue_depth\": 0.97, \"cpu_pct\": 14.2,"
                                   " \"blocks_per_op\": 0.99, \"exits_per_op\": 1.04}, "
                                   "\"last_decision\": {\"ts_ms\": 1764690000000, \"policy\": "
                                   "\"adaptive:balanced\", \"cause\": \"probe\", \"old\": "
                                   "{\"poll-max-ns\": 16384, \"poll-grow\": 0, \"poll-shrink\": "
                                   "0}, \"new\": {\"poll-max-ns\": 32768, \"poll-grow\": 0, "
                                   "\"poll-shrink\": 0}, \"applied\": true, \"outcome\": "
                                   "\"applied\", \"reason\": \"probe: IOPS +31%% for 2%% CPU\"}}",
                                   i ? ", " : "", i, 2000 + v * 2 + i, 1000 + v * 37 % 5000);
        g_string_append(s, "]}");
    }
    g_string_append(s, "]}, \"id\": 1}\n");
    return g_string_free(s, FALSE);
}

static void
send_all(int fd, const char *p, gsize len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n <= 0)
            return;
        p += n;
        len -= (gsize)n;
    }
}

/* The request's line; only its end matters here (one request each). */
static gboolean
read_request(int fd)
{
    char c;

    while (recv(fd, &c, 1, 0) == 1)
        if (c == '\n')
            return TRUE;
    return FALSE;
}

static void
serve_export(int fd, guint64 bytes)
{
    /* A chunk of whole CSV lines, escaped once and sent again and again. */
    GString *chunk = g_string_new(NULL);
    g_autofree char *event = NULL;
    guint64 sent = 0, lines = 0;
    g_autofree char *reply = NULL;

    while (chunk->len < 48 * 1024 - 160) {
        g_string_append_printf(chunk, "2026-12-01T10:00:%02u.000Z,vm-%u,iothread0,1000000000,"
                               "32768,0,0,350000000,18000,40,2000000,9000,36864000,765000000,"
                               "3000,12288000,360000000,20,8000000,,,,\\r\\n",
                               (guint)(lines % 60), (guint)(lines % 100));
        lines++;
    }
    event = g_strdup_printf("{\"event\": \"EXPORT_DATA\", \"data\": {\"chunk\": \"%s\"}}\n",
                            chunk->str);
    g_string_free(chunk, TRUE);
    for (; sent < bytes; sent += 48 * 1024)
        send_all(fd, event, strlen(event));
    reply = g_strdup_printf("{\"return\": {\"rows\": %" G_GUINT64_FORMAT ", \"bytes\": %"
                            G_GUINT64_FORMAT "}, \"id\": 1}\n", lines * (bytes / (48 * 1024)),
                            sent);
    send_all(fd, reply, strlen(reply));
}

int
main(int argc, char **argv)
{
    struct sockaddr_un addr = { .sun_family = AF_UNIX };
    g_autofree char *status = NULL;
    guint64 export_bytes = 0;
    int lfd;

    if (argc != 4 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
        fprintf(stderr, "usage: cli-replay-peer SOCKET --status-vms N | --export-mb N\n");
        return 2;
    }
    if (g_str_equal(argv[2], "--status-vms"))
        status = status_reply((guint)atoi(argv[3]));
    else
        export_bytes = g_ascii_strtoull(argv[3], NULL, 10) << 20;
    strcpy(addr.sun_path, argv[1]);
    unlink(argv[1]);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 16) < 0) {
        perror(argv[1]);
        return 1;
    }
    for (;;) {
        int fd = accept(lfd, NULL, NULL);

        if (fd < 0)
            continue;
        send_all(fd, GREETING, strlen(GREETING));
        if (read_request(fd)) {
            if (status)
                send_all(fd, status, strlen(status));
            else
                serve_export(fd, export_bytes);
        }
        close(fd);
    }
}
