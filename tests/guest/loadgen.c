/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * loadgen: the test guest's block load generator.
 *
 * Runs a schedule of phases against one block device and reports each
 * phase on stdout (the serial console inside the guest) as one line of
 * space-separated key=value pairs, so the host can compare what the guest
 * did with what polltuned measured from outside.
 *
 * Usage: loadgen [-d DEVICE] [-t TICK_MS] [-s SEED] PHASES
 *   PHASES is a comma-separated list of KIND:SECONDS, where KIND is
 *     idle    no I/O
 *     qdN     random 4 KiB reads, N requests in flight
 *     wqdN    random 4 KiB writes, N in flight
 *     rwqdN   random 4 KiB reads and writes (half each), N in flight
 *   e.g. idle:10,qd1:20,qd16:20,idle:5
 *
 * Output contract (one line each, always starting at column 0):
 *   PT-START dev=... size_bytes=... phases=... t_ms=...
 *   PT-PHASE-BEGIN idx=I name=KIND kind=... qd=N t_ms=...
 *   PT-TICK idx=I name=KIND t_ms=... ops=...            (cumulative, per tick)
 *   PT-PHASE idx=I name=KIND kind=... qd=N start_ms=... end_ms=... dur_ms=...
 *            ops=... reads=... writes=... errors=... iops=... avg_lat_us=...
 *   PT-DONE status=ok|error phases=N t_ms=...
 *   PT-ERROR msg="..."                                  (before a failed DONE)
 * All times are the guest's CLOCK_MONOTONIC in milliseconds.  The guest's
 * clock is not the host's, so the host should align on the arrival time of
 * PT-PHASE-BEGIN and PT-TICK lines rather than on the t_ms values alone.
 *
 * I/O uses the kernel's native AIO through raw syscalls (no libaio in the
 * initramfs) and O_DIRECT, so every request reaches the virtio queue
 * instead of being absorbed by the guest page cache.
 */
/* O_DIRECT is a GNU extension. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define IO_SIZE 4096u
#define MAX_QD 256u
#define MAX_PHASES 64u
#define MAX_SECONDS 86400u
/* How long a drain may take before the device is declared stuck. */
#define DRAIN_TIMEOUT_NS (30ull * 1000000000ull)

typedef enum {
    KIND_IDLE,
    KIND_READ,
    KIND_WRITE,
    KIND_MIXED,
} PhaseKind;

static const char *const kind_names[] = {
    [KIND_IDLE] = "idle",
    [KIND_READ] = "read",
    [KIND_WRITE] = "write",
    [KIND_MIXED] = "rw",
};

typedef struct {
    char name[16];
    PhaseKind kind;
    unsigned qd;
    unsigned seconds;
} Phase;

typedef struct {
    uint64_t ops, reads, writes, errors;
    uint64_t lat_ns_sum;
} PhaseStats;

typedef struct {
    int fd;
    uint64_t nblocks;
    aio_context_t ctx;
    struct iocb iocbs[MAX_QD];
    uint64_t submit_ns[MAX_QD];
    void *bufs[MAX_QD];
    uint64_t rng;
    unsigned tick_ms;
} Gen;

/* Every report goes out in one write() so a line is never split by
 * kernel messages that share the serial console. */
static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    char line[2048]; /* PT-START echoes a schedule of up to 64 phases */
    va_list ap;

    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof(line) - 2)
        n = sizeof(line) - 2;
    line[n++] = '\n';
    for (char *p = line; n > 0;) {
        ssize_t w = write(STDOUT_FILENO, p, (size_t)n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        p += w;
        n -= (int)w;
    }
}

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t ns_to_ms(uint64_t ns)
{
    return ns / 1000000ull;
}

/* The phase name is echoed into every report, so it is kept to a safe
 * alphabet; parsing it here rather than trusting it keeps the output
 * machine-parsable whatever the kernel command line says. */
static bool phase_parse(const char *tok, size_t len, Phase *ph)
{
    const char *colon = memchr(tok, ':', len);
    if (!colon || colon == tok || (size_t)(colon - tok) >= sizeof(ph->name))
        return false;

    size_t nlen = (size_t)(colon - tok);
    memcpy(ph->name, tok, nlen);
    ph->name[nlen] = '\0';

    char secs[16];
    size_t slen = len - nlen - 1;
    if (slen == 0 || slen >= sizeof(secs))
        return false;
    memcpy(secs, colon + 1, slen);
    secs[slen] = '\0';
    char *end;
    unsigned long s = strtoul(secs, &end, 10);
    if (*end || s == 0 || s > MAX_SECONDS)
        return false;
    ph->seconds = (unsigned)s;

    const char *qd;
    if (strcmp(ph->name, "idle") == 0) {
        ph->kind = KIND_IDLE;
        ph->qd = 0;
        return true;
    } else if (strncmp(ph->name, "rwqd", 4) == 0) {
        ph->kind = KIND_MIXED;
        qd = ph->name + 4;
    } else if (strncmp(ph->name, "wqd", 3) == 0) {
        ph->kind = KIND_WRITE;
        qd = ph->name + 3;
    } else if (strncmp(ph->name, "qd", 2) == 0) {
        ph->kind = KIND_READ;
        qd = ph->name + 2;
    } else {
        return false;
    }
    if (*qd < '1' || *qd > '9')
        return false;
    unsigned long q = strtoul(qd, &end, 10);
    if (*end || q == 0 || q > MAX_QD)
        return false;
    ph->qd = (unsigned)q;
    return true;
}

static int phases_parse(const char *spec, Phase *phases)
{
    int n = 0;

    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        if ((unsigned)n >= MAX_PHASES || !phase_parse(p, len, &phases[n]))
            return -1;
        n++;
        p += len;
        if (*p == ',')
            p++;
    }
    return n;
}

/* xorshift64*: cheap, and a fixed seed makes runs repeatable. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static void iocb_prep(Gen *g, unsigned slot, PhaseKind kind)
{
    struct iocb *cb = &g->iocbs[slot];
    uint64_t r = rng_next(&g->rng);
    bool write = kind == KIND_WRITE || (kind == KIND_MIXED && (r & 1));

    memset(cb, 0, sizeof(*cb));
    cb->aio_data = slot;
    cb->aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
    cb->aio_fildes = (uint32_t)g->fd;
    cb->aio_buf = (uint64_t)(uintptr_t)g->bufs[slot];
    cb->aio_nbytes = IO_SIZE;
    cb->aio_offset = (int64_t)(((r >> 1) % g->nblocks) * IO_SIZE);
}

/* io_submit may take fewer than offered; keep offering the rest. */
static bool submit_all(Gen *g, struct iocb **list, long n, uint64_t t)
{
    for (long i = 0; i < n; i++)
        g->submit_ns[list[i]->aio_data] = t;
    while (n > 0) {
        long r = syscall(SYS_io_submit, g->ctx, n, list);
        if (r < 0 && (errno == EINTR || errno == EAGAIN))
            continue;
        if (r <= 0) {
            emit("PT-ERROR msg=\"io_submit: %s\"", r < 0 ? strerror(errno) : "submitted nothing");
            return false;
        }
        list += r;
        n -= r;
    }
    return true;
}

static void tick_emit(unsigned idx, const Phase *ph, uint64_t t, uint64_t ops)
{
    emit("PT-TICK idx=%u name=%s t_ms=%" PRIu64 " ops=%" PRIu64, idx, ph->name, ns_to_ms(t), ops);
}

static void phase_idle(Gen *g, unsigned idx, const Phase *ph, uint64_t start)
{
    uint64_t deadline = start + (uint64_t)ph->seconds * 1000000000ull;
    uint64_t tick = (uint64_t)g->tick_ms * 1000000ull;
    uint64_t next_tick = tick ? start + tick : UINT64_MAX;

    for (uint64_t t = now_ns(); t < deadline; t = now_ns()) {
        if (t >= next_tick) {
            tick_emit(idx, ph, t, 0);
            next_tick += tick;
        }
        uint64_t until = next_tick < deadline ? next_tick : deadline;
        struct timespec ts = {
            .tv_sec = (time_t)(until / 1000000000ull),
            .tv_nsec = (long)(until % 1000000000ull),
        };
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
    }
}

/*
 * Keeps exactly ph->qd requests in flight until the deadline, then drains.
 * Requests completing during the drain count too: they were issued inside
 * the phase, and end_ms is taken after the drain so iops stays ops/time.
 */
static bool phase_io(Gen *g, unsigned idx, const Phase *ph, uint64_t start, PhaseStats *st)
{
    uint64_t deadline = start + (uint64_t)ph->seconds * 1000000000ull;
    uint64_t tick = (uint64_t)g->tick_ms * 1000000ull;
    uint64_t next_tick = tick ? start + tick : UINT64_MAX;
    struct iocb *list[MAX_QD];
    struct io_event events[MAX_QD];
    unsigned inflight = 0;
    bool draining = false;

    for (unsigned i = 0; i < ph->qd; i++) {
        iocb_prep(g, i, ph->kind);
        list[i] = &g->iocbs[i];
    }
    if (!submit_all(g, list, ph->qd, start))
        return false;
    inflight = ph->qd;

    while (inflight > 0) {
        uint64_t t = now_ns();
        if (!draining && t >= deadline)
            draining = true;
        if (t >= next_tick) {
            tick_emit(idx, ph, t, st->ops);
            next_tick += tick;
        }

        uint64_t wake = draining ? t + DRAIN_TIMEOUT_NS : (next_tick < deadline ? next_tick : deadline);
        uint64_t wait = wake > t ? wake - t : 0;
        struct timespec ts = {
            .tv_sec = (time_t)(wait / 1000000000ull),
            .tv_nsec = (long)(wait % 1000000000ull),
        };
        long n = syscall(SYS_io_getevents, g->ctx, 1L, (long)ph->qd, events, &ts);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            emit("PT-ERROR msg=\"io_getevents: %s\"", strerror(errno));
            return false;
        }
        if (n == 0 && draining) {
            emit("PT-ERROR msg=\"%u requests still in flight %llu s after the phase\"", inflight,
                 DRAIN_TIMEOUT_NS / 1000000000ull);
            return false;
        }

        t = now_ns();
        long again = 0;
        for (long i = 0; i < n; i++) {
            unsigned slot = (unsigned)events[i].data;
            struct iocb *cb = &g->iocbs[slot];
            st->ops++;
            if (cb->aio_lio_opcode == IOCB_CMD_PWRITE)
                st->writes++;
            else
                st->reads++;
            if (events[i].res != (int64_t)IO_SIZE)
                st->errors++;
            st->lat_ns_sum += t - g->submit_ns[slot];
            inflight--;
            if (!draining && t < deadline) {
                iocb_prep(g, slot, ph->kind);
                list[again++] = cb;
            }
        }
        if (again > 0) {
            if (!submit_all(g, list, again, t))
                return false;
            inflight += (unsigned)again;
        }
    }
    return true;
}

static bool gen_open(Gen *g, const char *dev, bool need_write)
{
    g->fd = open(dev, (need_write ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
    if (g->fd < 0) {
        emit("PT-ERROR msg=\"open %s: %s\"", dev, strerror(errno));
        return false;
    }

    /* A regular file works too, which lets the generator be tried on the
     * host without a guest. */
    struct stat sb;
    uint64_t size = 0;
    if (fstat(g->fd, &sb) == 0 && S_ISREG(sb.st_mode))
        size = (uint64_t)sb.st_size;
    else if (ioctl(g->fd, BLKGETSIZE64, &size) < 0) {
        emit("PT-ERROR msg=\"%s: BLKGETSIZE64: %s\"", dev, strerror(errno));
        return false;
    }
    g->nblocks = size / IO_SIZE;
    if (g->nblocks == 0) {
        emit("PT-ERROR msg=\"%s: smaller than one %u-byte block\"", dev, IO_SIZE);
        return false;
    }

    for (unsigned i = 0; i < MAX_QD; i++) {
        if (posix_memalign(&g->bufs[i], IO_SIZE, IO_SIZE) != 0) {
            emit("PT-ERROR msg=\"out of memory for I/O buffers\"");
            return false;
        }
        /* Non-zero payload so a write is never a candidate for zero
         * detection anywhere below the guest. */
        memset(g->bufs[i], 0xa5 ^ (int)i, IO_SIZE);
    }

    if (syscall(SYS_io_setup, MAX_QD, &g->ctx) < 0) {
        emit("PT-ERROR msg=\"io_setup: %s\"", strerror(errno));
        return false;
    }
    return true;
}

/* Tolerates a half-opened Gen, so every exit path can call it. */
static void gen_close(Gen *g)
{
    if (g->ctx)
        syscall(SYS_io_destroy, g->ctx);
    for (unsigned i = 0; i < MAX_QD; i++)
        free(g->bufs[i]);
    if (g->fd >= 0)
        close(g->fd);
}

static void usage(void)
{
    fprintf(stderr, "usage: loadgen [-d DEVICE] [-t TICK_MS] [-s SEED] KIND:SECONDS[,...]\n"
                    "  KIND: idle, qdN (reads), wqdN (writes), rwqdN (mixed); N in 1..%u\n",
            MAX_QD);
}

int main(int argc, char **argv)
{
    const char *dev = "/dev/vda";
    Gen g = { .fd = -1, .rng = 0x9e3779b97f4a7c15ull, .tick_ms = 1000 };
    Phase phases[MAX_PHASES];
    int opt;

    while ((opt = getopt(argc, argv, "d:t:s:h")) != -1) {
        switch (opt) {
        case 'd':
            dev = optarg;
            break;
        case 't':
            g.tick_ms = (unsigned)strtoul(optarg, NULL, 10);
            break;
        case 's':
            g.rng = strtoull(optarg, NULL, 0) | 1; /* xorshift state must not be 0 */
            break;
        default:
            usage();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (optind != argc - 1) {
        usage();
        return 2;
    }

    const char *spec = argv[optind];
    int nphases = phases_parse(spec, phases);
    if (nphases <= 0) {
        emit("PT-ERROR msg=\"bad phase schedule (want KIND:SECONDS,...)\"");
        emit("PT-DONE status=error phases=0 t_ms=%" PRIu64, ns_to_ms(now_ns()));
        return 2;
    }

    bool need_write = false;
    for (int i = 0; i < nphases; i++)
        need_write |= phases[i].kind == KIND_WRITE || phases[i].kind == KIND_MIXED;

    if (!gen_open(&g, dev, need_write)) {
        emit("PT-DONE status=error phases=0 t_ms=%" PRIu64, ns_to_ms(now_ns()));
        gen_close(&g);
        return 1;
    }
    emit("PT-START dev=%s size_bytes=%" PRIu64 " phases=%s t_ms=%" PRIu64, dev,
         g.nblocks * IO_SIZE, spec, ns_to_ms(now_ns()));

    for (int i = 0; i < nphases; i++) {
        const Phase *ph = &phases[i];
        PhaseStats st = { 0 };
        uint64_t start = now_ns();

        emit("PT-PHASE-BEGIN idx=%d name=%s kind=%s qd=%u t_ms=%" PRIu64, i, ph->name,
             kind_names[ph->kind], ph->qd, ns_to_ms(start));
        if (ph->kind == KIND_IDLE) {
            phase_idle(&g, (unsigned)i, ph, start);
        } else if (!phase_io(&g, (unsigned)i, ph, start, &st)) {
            emit("PT-DONE status=error phases=%d t_ms=%" PRIu64, i, ns_to_ms(now_ns()));
            gen_close(&g);
            return 1;
        }
        uint64_t end = now_ns();
        uint64_t dur = end - start;
        emit("PT-PHASE idx=%d name=%s kind=%s qd=%u start_ms=%" PRIu64 " end_ms=%" PRIu64
             " dur_ms=%" PRIu64 " ops=%" PRIu64 " reads=%" PRIu64 " writes=%" PRIu64
             " errors=%" PRIu64 " iops=%.1f avg_lat_us=%.1f",
             i, ph->name, kind_names[ph->kind], ph->qd, ns_to_ms(start), ns_to_ms(end),
             ns_to_ms(dur), st.ops, st.reads, st.writes, st.errors,
             dur ? (double)st.ops * 1e9 / (double)dur : 0.0,
             st.ops ? (double)st.lat_ns_sum / (double)st.ops / 1e3 : 0.0);
    }
    emit("PT-DONE status=ok phases=%d t_ms=%" PRIu64, nphases, ns_to_ms(now_ns()));
    gen_close(&g);
    return 0;
}
