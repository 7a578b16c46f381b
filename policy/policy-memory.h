/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-memory: what the adaptive policy learned about each workload of
 * one iothread, and whether exploring a workload pays for itself.
 *
 * Contract:
 *  - Pure, as all of policy/: no I/O, no clock; @now_ms comes in.
 *  - A workload is known by its PolicySignature: bands of what the guest
 *    asks for (queue depth, request size, read/write/flush mix, a coarse
 *    IOPS band) that the polling triple in force hardly moves, and the
 *    QEMU release and devices behind the iothread, so that an upgrade or
 *    a new disk learns again.
 *  - A PolicyMemory holds one iothread's entries, at most
 *    POLICY_MEMORY_MAX_ENTRIES.  An entry keeps an exploration's winner and
 *    anchor with their scores, the noise, when it was learned and last
 *    confirmed, and how long this workload's phases last.  It decays: an
 *    entry not confirmed for the memory's ttl is not returned by lookup, and
 *    a measured surprise (the winner clearly below its remembered score)
 *    clears its winner.
 *  - The store keeps entries as PtMemoryRow (common/pt-memory-row.h).
 *
 * docs/POLICY.md, "Memory", explains the bands, the decay and the rule that
 * an exploration must pay for itself.
 */
#pragma once

#include <glib.h>

#include "common/pt-memory-row.h"
#include "policy-metrics.h"

/*
 * A signature is computed from at least this many ticks with I/O: one tick
 * swings +-50% (the simulator's noise, DESIGN.md), a mean of four has a
 * standard deviation of about 14% and of eight about 10%, well inside the
 * bands below (docs/POLICY.md, "Memory").
 */
#define POLICY_SIGNATURE_MIN_TICKS 4
/*
 * A lookup may use as few as this many ticks: a workload met before should
 * get its winner by its second tick (docs/POLICY.md, "Memory"), and the
 * change detectors and the idle rule see a new workload on its second
 * tick at the earliest.  The mean of two ticks of +-50% noise has a
 * standard deviation of about 20%, so a band edge is crossed more often
 * than from eight ticks: a miss costs the exploration the memory would
 * have saved, and a wrong match is a surprise once its winner is measured.
 * What is learnt is keyed from every tick of the phase.
 */
#define POLICY_SIGNATURE_LOOKUP_TICKS 2
/*
 * A device key longer than this is kept as "sha256:" and the first 32 hex
 * digits (128 bits) of its hash, which no two real keys share.
 * The largest legitimate key names POLICY_MAX_DEVICES devices, each by a
 * QOM path of about 40 characters and a source of up to PATH_MAX (4096),
 * or a network URI as long: some 66,000 characters, which the store would
 * repeat in each of an iothread's POLICY_MEMORY_MAX_ENTRIES rows (its
 * policy_memory table takes TEXT of any length, as the primary key).
 * Kept readable up to 96: one disk in libvirt's default pool,
 * "vda=/var/lib/libvirt/images/" and a 40-character file name, or six
 * names of "virtio-disk12"'s length without sources; a signature's text
 * stays under 150 characters.
 */
#define POLICY_SIGNATURE_DEVICE_MAX 96

/*
 * How near a band's edge (in bands) a lookup's figure must fall for the
 * neighbouring band's entry to be taken: the mean of two ticks of +-50%
 * noise has a standard deviation of about 20%, 0.27 of a queue-depth
 * band (log2) and 0.13 of an IOPS band (log4); 0.35 covers 1.3 and 2.7
 * of those, and leaves the middle 30% of a band to its own entry.
 */
#define POLICY_SIGNATURE_NEAR_EDGE 0.35

/* The bands' ranges; values beyond them are clamped to the end bands. */
#define POLICY_SIG_QD_MIN (-3)  /* in-flight of a guest at 1/8 of iodepth 1 */
/*
 * Computed signatures stop at the band of 0.3 to 0.59 in flight: below it
 * the count is the guest's think time, not its depth, and moves with the
 * triple (the test guest's iodepth 1 under TCG: 0.04 in flight with
 * polling off, 0.22 with the wide window, read as qd0.125 and qd0.25 of
 * one workload).  Rows written before keep their lower bands and parse.
 */
#define POLICY_SIG_QD_FLOOR (-1)
#define POLICY_SIG_QD_MAX 10    /* 1024: virtio-blk's largest queue */
#define POLICY_SIG_SIZE_MIN 9   /* 512 bytes, a sector */
#define POLICY_SIG_SIZE_MAX 22  /* 4 MiB, beyond Linux's largest request */
#define POLICY_SIG_IOPS_MAX 11  /* [4M, 16M) operations per second */

typedef struct {
    /* In-flight requests (Little's law over the ticks) in
     * (2^(qd - 3/4), 2^(qd + 1/4)]: the band of a guest at iodepth 2^qd. */
    gint8 qd;
    /* Bytes per read or write, log2 rounded; 0: no reads or writes. */
    gint8 size;
    /* Writes among reads, writes and flushes, in quarters (0 to 4). */
    gint8 write_quarters;
    /* Flushes are at least an eighth of the operations. */
    gboolean flush;
    /* IOPS in [4^iops, 4^(iops + 1)). */
    gint8 iops;
    guint16 qemu_major, qemu_minor;     /* 0.0: unknown */
    char device[POLICY_SIGNATURE_DEVICE_MAX + 1];
    /*
     * Where in their bands the figures fell (log2 of the in-flight count,
     * log4 of the IOPS), for policy_memory_lookup_near(); NAN in a parsed
     * signature.  Not part of the key.
     */
    double qd_log2, iops_log4;
} PolicySignature;

/*
 * The signature of @n ticks of one iothread (oldest first; those without
 * I/O are skipped), from their means weighted by tick length, never one
 * tick's figures.  @qemu_version as PolicyIothreadInput's (0: unknown);
 * @device_key: the caller's name for the devices behind the iothread (NULL:
 * none), e.g. from policy_signature_device_key().  FALSE, @out untouched,
 * when fewer than POLICY_SIGNATURE_MIN_TICKS ticks had I/O.
 */
gboolean policy_signature_compute(const PolicyMetrics *ticks, guint n, guint32 qemu_version,
                                  const char *device_key, PolicySignature *out);
/* The same from at least @min_ticks (>= 1) ticks with I/O: a lookup's
 * (POLICY_SIGNATURE_LOOKUP_TICKS). */
gboolean policy_signature_compute_min(const PolicyMetrics *ticks, guint n, guint min_ticks,
                                      guint32 qemu_version, const char *device_key,
                                      PolicySignature *out);
/*
 * The key of the devices behind an iothread: for each of @names
 * (NULL-terminated) "NAME=IDENTITY", or "NAME" alone where @identities
 * (NULL, or one per name) has NULL or "" for it, sorted, without repeats,
 * joined by ",".  IDENTITY is what backs the device (its image file, host
 * block device or network URI), with ",", "%", spaces and control
 * characters percent-escaped: the same name on another disk is another
 * key, so a replaced disk learns again, and a device whose backing is
 * unknown keys as before.  "vda=/img/a.qcow2,vdb".  No length limit here:
 * the signature keeps at most POLICY_SIGNATURE_DEVICE_MAX of it.
 */
char *policy_signature_device_key(const char *const *names, const char *const *identities);
gboolean policy_signature_equal(const PolicySignature *a, const PolicySignature *b);
/* The same QEMU release and devices: what one device has taught applies. */
gboolean policy_signature_same_device(const PolicySignature *a, const PolicySignature *b);
/*
 * "qd1/4k/r100/iops16k-64k/qemu7.2/dev=virtio-disk0": queue depth, request
 * size, reads in percent ("+f": flush-heavy), the IOPS band, the QEMU
 * release, and the device key to the end of the text (it may hold "/").
 */
char *policy_signature_to_string(const PolicySignature *sig);
gboolean policy_signature_parse(const char *s, PolicySignature *out, GError **error);

/*
 * Entries per iothread.  A VM's iothread sees a handful of workloads (boot,
 * its service's load levels, backups, nightly jobs), each a signature or
 * two as it crosses a band edge; a QEMU upgrade or a disk swap starts a
 * second set while the first ages out.  32 holds three such sets of ten;
 * an entry is about 200 bytes here and in the store, so a host of 1000
 * iothreads keeps 6 MB.  The least recently seen entry goes first.
 */
#define POLICY_MEMORY_MAX_ENTRIES 32
/* An entry not confirmed for this long is explored again (7 days: a weekly
 * job's workload is still remembered the next week). */
#define POLICY_MEMORY_TTL_MS (7 * 24 * 3600 * G_GINT64_CONSTANT(1000))
/* A winner scoring this far below its remembered score, and beyond two
 * standard errors, is a surprise: 0.10, the IOPS share a polling core must
 * buy under the balanced objective (docs/POLICY.md, "Objectives"). */
#define POLICY_MEMORY_SURPRISE_MARGIN 0.10

/* What one exploration found, as the adaptive policy hands it over. */
typedef struct {
    PolicyTriple winner;
    double winner_score;        /* mean objective score of its ticks */
    guint winner_ticks;
    PolicyTriple anchor;        /* the baseline's measurement, or the start's */
    double anchor_score;
    double noise;               /* per-tick standard deviation of the score */
    guint probe_ticks;          /* ticks measured under triples that lost */
    double probe_loss;          /* their summed score below the winner's (>= 0) */
    gboolean contended;         /* measured on a contended host, the guard letting it */
} PolicyExploration;

typedef struct {
    PolicySignature sig;
    gboolean have_winner;       /* FALSE: only phase statistics */
    PolicyExploration last;     /* the last exploration's result */
    gint64 learned_ms;          /* the last exploration */
    gint64 confirmed_ms;        /* learned, or the winner last confirmed */
    gint64 seen_ms;             /* confirmed, or a phase of it ended */
    guint n_confirmed;          /* since learned */
    guint n_explorations;
    guint n_default_wins;       /* explorations in a row the anchor won */
    double gain_sum;            /* winner over anchor, summed over explorations */
    guint64 probe_ticks;        /* summed over explorations */
    double probe_loss_sum;
    guint n_phases;
    double phase_ln_sum, phase_ln_sumsq;    /* ln(phase length in ms) */
} PolicyMemoryEntry;

typedef struct _PolicyMemory PolicyMemory;

/* @ttl_ms <= 0: POLICY_MEMORY_TTL_MS. */
PolicyMemory *policy_memory_new(gint64 ttl_ms);
void policy_memory_free(PolicyMemory *mem);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(PolicyMemory, policy_memory_free)

guint policy_memory_size(const PolicyMemory *mem);
gint64 policy_memory_ttl(const PolicyMemory *mem);
/* The entry with a winner for @sig, confirmed within the ttl; else NULL.
 * Valid until the memory next changes. */
const PolicyMemoryEntry *policy_memory_lookup(const PolicyMemory *mem,
                                              const PolicySignature *sig, gint64 now_ms);
/*
 * As policy_memory_lookup(), or where @sig has no such entry and its
 * figures fell within POLICY_SIGNATURE_NEAR_EDGE of a band's edge, the
 * entry across that edge (of queue depth, IOPS or both), the rest alike:
 * the mean of a lookup's two ticks under +-50% noise crosses an edge in
 * about a quarter of the windows of a workload placed near it, which was
 * then explored again.  A workload twice as deep, placed in the middle
 * of its band, is still a new one.  The caller tells an exact entry by
 * its signature.
 */
const PolicyMemoryEntry *policy_memory_lookup_near(const PolicyMemory *mem,
                                                   const PolicySignature *sig, gint64 now_ms);
/* Is @score over @n_ticks clearly below @e's winner's remembered score?  The
 * test that a neighbour's workload is not @e's (a level, not a ranking). */
gboolean policy_memory_surprised(const PolicyMemoryEntry *e, double score, guint n_ticks);
/* Any entry for @sig, expired or without a winner; NULL: none. */
const PolicyMemoryEntry *policy_memory_peek(const PolicyMemory *mem, const PolicySignature *sig);
/* Keeps @x as @sig's winner, learned and confirmed at @now_ms. */
void policy_memory_learn(PolicyMemory *mem, const PolicySignature *sig,
                         const PolicyExploration *x, gint64 now_ms);
/*
 * The remembered winner of @sig was written back and scored @score, the
 * mean of @n_ticks ticks.  TRUE when that is a surprise: below both the
 * remembered score and the anchor's (the triple it beat) by more than
 * max(2 standard errors, POLICY_MEMORY_SURPRISE_MARGIN); the winner is
 * then forgotten.  Else the
 * entry is confirmed at @now_ms.  FALSE without a winner to confirm.
 */
gboolean policy_memory_confirm(PolicyMemory *mem, const PolicySignature *sig, double score,
                               guint n_ticks, gint64 now_ms);
/* A phase of @sig lasted @length_ms (> 0). */
void policy_memory_record_phase_end(PolicyMemory *mem, const PolicySignature *sig,
                                    gint64 length_ms, gint64 now_ms);
void policy_memory_forget(PolicyMemory *mem);

/*
 * The expected rest of a phase of @sig that has lasted @elapsed_ms: phase
 * lengths taken as log-normal, fitted to @sig's phases, or while it has
 * fewer than two to those of every signature of its device, each with a
 * prior worth one phase of POLICY_MEMORY_PRIOR_PHASE_MS.
 */
double policy_memory_expected_remaining_ms(const PolicyMemory *mem, const PolicySignature *sig,
                                           gint64 elapsed_ms);

/*
 * What this iothread learned of explorations on @sig's device, for the
 * rule below.  The priors make an unknown device worth exploring, and
 * decay as explorations find nothing:
 *  - gain: POLICY_MEMORY_PRIOR_GAIN (3%, the value goals' threshold of a
 *    gain worth having) worth POLICY_MEMORY_PRIOR_WEIGHT explorations;
 *  - probe cost: POLICY_MEMORY_PRIOR_PROBE_TICKS ticks (two probes of up to
 *    three ticks, docs/POLICY.md step 4) at POLICY_MEMORY_PRIOR_LOSS each
 *    (the wrong side of polling at QD1 costs a third of the IOPS, seed
 *    001; a probe that changes nothing costs nothing), worth as much.
 */
#define POLICY_MEMORY_PRIOR_GAIN 0.03
#define POLICY_MEMORY_PRIOR_WEIGHT 2.0
#define POLICY_MEMORY_PRIOR_PROBE_TICKS 6.0
#define POLICY_MEMORY_PRIOR_LOSS 0.10
/* A phase's prior length: revalidate_ms, which the policy already
 * takes for how long a workload holds; its spread a factor of e^1.5. */
#define POLICY_MEMORY_PRIOR_PHASE_MS 300000.0
#define POLICY_MEMORY_PRIOR_PHASE_SD 1.5
/* This many explorations in a row on one device that the anchor (the
 * triple the VM would have anyway) won: the device gains nothing from
 * polltune, and is explored again once per ttl only. */
#define POLICY_MEMORY_DEFAULT_STREAK 3

typedef struct {
    double gain_per_tick;       /* expected winner's lead over the anchor */
    double probe_ticks;         /* expected ticks under losing probes */
    double loss_per_tick;       /* expected score they lose */
    guint n_explorations;       /* on the device, behind the figures */
    guint default_streak;       /* the device's last explorations the anchor won */
    gint64 last_explored_ms;    /* on the device; G_MININT64: never */
} PolicyMemoryStats;

void policy_memory_stats(const PolicyMemory *mem, const PolicySignature *sig,
                         PolicyMemoryStats *out);

/*
 * Whether an exploration pays for itself: the expected gain per tick over
 * the rest of the phase (@remaining_ms at @tick_ms a tick) must exceed
 * the probes' expected loss.  After POLICY_MEMORY_DEFAULT_STREAK default
 * wins it pays only once @slow_ms have passed since the device's last
 * exploration.  @reason (may be NULL) gets one sentence with the figures.
 */
gboolean policy_memory_exploration_pays(const PolicyMemoryStats *stats, double remaining_ms,
                                        gint64 tick_ms, gint64 slow_ms, gint64 now_ms,
                                        char **reason);

/* Every entry as a row (PtMemoryRow *, freed with the array), for the store. */
GPtrArray *policy_memory_to_rows(const PolicyMemory *mem);
/*
 * Replaces the memory's entries with @rows (a row that does not parse
 * fails the whole load, naming it; the memory is then unchanged).  Beyond
 * POLICY_MEMORY_MAX_ENTRIES the least recently seen are dropped.
 */
gboolean policy_memory_load_rows(PolicyMemory *mem, PtMemoryRow *const *rows, guint n,
                                 GError **error);
