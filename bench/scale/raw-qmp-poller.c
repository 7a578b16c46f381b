/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * raw-qmp-poller: the reference for the scale benchmark.
 *
 * The least a monitoring tool can do to get what polltuned gets each tick:
 * for every VM, once a second, send query-iothreads, query-blockstats and
 * query-stats over a QMP socket, parse the replies, and read the same /proc
 * files (each iothread's stat, status and schedstat, plus the host's
 * /proc/stat and CPU pressure).  No store, no policy, no event loop.  Like
 * the daemon, it stops asking query-stats of a VM whose first answer was
 * empty (no KVM: QEMU has no statistics provider for vCPUs).
 *
 * Two ways of doing a round:
 *  - sequential (default): one VM after the other over blocking sockets;
 *  - --concurrent: every VM's queries are written first, then the replies
 *    are collected with poll() as they come, which is what the daemon's
 *    tick does, minus everything else the daemon does.
 *
 * Usage: raw-qmp-poller [--concurrent] SECONDS PID:SOCKET...
 * Prints "ready" once connected, and at the end
 * "ok VMS ROUNDS P50_MS P99_MS PCT_UNDER_100MS SINK" with the duration of
 * one round over all VMs (the raw tick time).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>

#define MIN(a, b) ((a) < (b) ? (a) : (b))

typedef struct {
    int pid;
    int fd;
    char *buf;
    size_t len, cap;
    int no_stats;           /* query-stats answered with nothing */
    int want;               /* replies still expected this round */
    json_object *reply[3];
} RawVm;

static void
die(const char *what, const char *detail)
{
    fprintf(stderr, "raw-qmp-poller: %s: %s\n", what, detail);
    exit(1);
}

/* Next complete line, without the newline, valid until the next call. */
static char *
raw_read_line(RawVm *vm)
{
    static char line[1 << 20];

    for (;;) {
        char *nl = memchr(vm->buf, '\n', vm->len);

        if (nl) {
            size_t n = (size_t)(nl - vm->buf);

            if (n >= sizeof(line))
                die("reply", "longer than 1 MiB");
            memcpy(line, vm->buf, n);
            line[n] = '\0';
            memmove(vm->buf, nl + 1, vm->len - n - 1);
            vm->len -= n + 1;
            return line;
        }
        if (vm->cap - vm->len < 65536) {
            vm->cap = vm->cap * 2 + 65536;
            vm->buf = realloc(vm->buf, vm->cap);
        }
        ssize_t r = read(vm->fd, vm->buf + vm->len, vm->cap - vm->len);

        if (r <= 0)
            die("monitor read", r < 0 ? strerror(errno) : "closed");
        vm->len += (size_t)r;
    }
}

/* The reply to the last command, skipping asynchronous events. */
static json_object *
raw_reply(RawVm *vm)
{
    for (;;) {
        json_object *o = json_tokener_parse(raw_read_line(vm));
        json_object *ret;

        if (!o)
            die("monitor", "unparsable reply");
        if (json_object_object_get_ex(o, "return", &ret))
            return o;
        if (json_object_object_get_ex(o, "error", NULL))
            die("monitor", json_object_to_json_string(o));
        json_object_put(o);
    }
}

static void
raw_send(RawVm *vm, const char *cmd)
{
    size_t n = strlen(cmd);

    if (write(vm->fd, cmd, n) != (ssize_t)n)
        die("monitor write", strerror(errno));
}

static void
raw_connect(RawVm *vm, const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };

    vm->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
    if (connect(vm->fd, (struct sockaddr *)&sun, sizeof(sun)) < 0)
        die(path, strerror(errno));
    json_object_put(json_tokener_parse(raw_read_line(vm)));    /* greeting */
    raw_send(vm, "{\"execute\":\"qmp_capabilities\"}\n");
    json_object_put(raw_reply(vm));
}

static size_t
raw_read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return 0;
    n = read(fd, buf, cap - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return n > 0 ? (size_t)n : 0;
}

/* Three in flight at once (two once query-stats proved empty), as the
 * daemon does. */
static void
raw_sample_send(RawVm *vm)
{
    raw_send(vm, vm->no_stats ?
                 "{\"execute\":\"query-iothreads\",\"id\":1}\n"
                 "{\"execute\":\"query-blockstats\",\"id\":2}\n" :
                 "{\"execute\":\"query-iothreads\",\"id\":1}\n"
                 "{\"execute\":\"query-blockstats\",\"id\":2}\n"
                 "{\"execute\":\"query-stats\",\"arguments\":{\"target\":\"vcpu\"},\"id\":3}\n");
    vm->want = vm->no_stats ? 2 : 3;
}

/* Use the replies in vm->reply[] and read the /proc files they name. */
static void
raw_sample_finish(RawVm *vm, unsigned long long *sink)
{
    static char file[8192];
    json_object *list;

    if (json_object_object_get_ex(vm->reply[0], "return", &list)) {
        for (size_t i = 0; i < json_object_array_length(list); i++) {
            json_object *tid;
            char path[128];
            static const char *const names[] = { "stat", "status", "schedstat" };

            if (!json_object_object_get_ex(json_object_array_get_idx(list, i), "thread-id", &tid))
                continue;
            for (int k = 0; k < 3; k++) {
                snprintf(path, sizeof(path), "/proc/%d/task/%d/%s", vm->pid,
                         json_object_get_int(tid), names[k]);
                *sink += raw_read_file(path, file, sizeof(file));
            }
        }
    }
    if (json_object_object_get_ex(vm->reply[1], "return", &list))
        *sink += json_object_array_length(list);
    if (vm->reply[2] && json_object_object_get_ex(vm->reply[2], "return", &list) &&
        json_object_array_length(list) == 0)
        vm->no_stats = 1;
    for (int k = 0; k < 3; k++) {
        json_object_put(vm->reply[k]);
        vm->reply[k] = NULL;
    }
}

static void
raw_sample(RawVm *vm, unsigned long long *sink)
{
    raw_sample_send(vm);
    for (int k = 0; k < vm->want; k++)
        vm->reply[k] = raw_reply(vm);
    raw_sample_finish(vm, sink);
}

/* Every VM's queries out first, then the replies as they arrive. */
static void
raw_round_concurrent(RawVm *vms, int n, struct pollfd *pfd, unsigned long long *sink)
{
    int left = n;

    for (int i = 0; i < n; i++)
        raw_sample_send(&vms[i]);
    while (left > 0) {
        for (int i = 0; i < n; i++) {
            pfd[i].fd = vms[i].want ? vms[i].fd : -1;
            pfd[i].events = POLLIN;
        }
        if (poll(pfd, (nfds_t)n, -1) < 0)
            die("poll", strerror(errno));
        for (int i = 0; i < n; i++) {
            RawVm *vm = &vms[i];

            if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            /* Replies come in order; read whatever is complete. */
            do {
                int k = (vm->no_stats ? 2 : 3) - vm->want;

                vm->reply[k] = raw_reply(vm);
                vm->want--;
            } while (vm->want && memchr(vm->buf, '\n', vm->len));
            if (!vm->want) {
                raw_sample_finish(vm, sink);
                left--;
            }
        }
    }
}

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int
main(int argc, char **argv)
{
    static char host[65536];
    unsigned long long sink = 0;
    struct timespec next;
    struct pollfd *pfd;
    double *round_ms;
    int seconds, n, concurrent = 0, under = 0;
    RawVm *vms;

    if (argc > 1 && strcmp(argv[1], "--concurrent") == 0) {
        concurrent = 1;
        argv++;
        argc--;
    }
    if (argc < 3)
        die("usage", "raw-qmp-poller [--concurrent] SECONDS PID:SOCKET...");
    seconds = atoi(argv[1]);
    if (seconds < 1)
        die("usage", "SECONDS must be at least 1");
    round_ms = calloc((size_t)seconds, sizeof(*round_ms));
    n = argc - 2;
    vms = calloc((size_t)n, sizeof(*vms));
    pfd = calloc((size_t)n, sizeof(*pfd));
    for (int i = 0; i < n; i++) {
        char *colon = strchr(argv[i + 2], ':');

        if (!colon)
            die(argv[i + 2], "expected PID:SOCKET");
        vms[i].pid = atoi(argv[i + 2]);
        raw_connect(&vms[i], colon + 1);
    }
    /* Tell the caller the connections are up; it starts the clock now. */
    printf("ready\n");
    fflush(stdout);
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (int tick = 0; tick < seconds; tick++) {
        double t0 = now_ms();

        sink += raw_read_file("/proc/stat", host, sizeof(host));
        sink += raw_read_file("/proc/pressure/cpu", host, sizeof(host));
        if (concurrent)
            raw_round_concurrent(vms, n, pfd, &sink);
        else
            for (int i = 0; i < n; i++)
                raw_sample(&vms[i], &sink);
        round_ms[tick] = now_ms() - t0;
        next.tv_sec++;
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    qsort(round_ms, (size_t)seconds, sizeof(*round_ms), cmp_double);
    for (int i = 0; i < seconds && round_ms[i] <= 100.0; i++)
        under++;
    printf("ok %d %d %.2f %.2f %.1f %llu\n", n, seconds, round_ms[seconds / 2],
           round_ms[MIN(seconds - 1, seconds * 99 / 100)], 100.0 * under / seconds, sink);
    free(round_ms);
    for (int i = 0; i < n; i++) {
        close(vms[i].fd);
        free(vms[i].buf);
    }
    free(vms);
    free(pfd);
    return 0;
}
