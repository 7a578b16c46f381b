/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy-memory: workload signatures, the per-iothread memory of what
 * explorations found, and the rule that an exploration must pay for
 * itself.  The contract and the constants' reasons are in the header;
 * docs/POLICY.md, "Memory", the design.
 *
 * The bands of a signature, and why they sit where they do:
 *
 *  - Queue depth.  A closed-loop guest at iodepth N keeps N requests out,
 *    part of each cycle in the guest itself, so the in-flight count QEMU
 *    sees (Little's law: the operations' summed latency over the time) is
 *    below N: at QD1 about 0.69 without polling and 0.83 with it (seed
 *    001's 31k and 47k IOPS on a 16-18 us device), at QD16 about 14 to 16,
 *    the guest's share shrinking as the device queues.  A band of a factor
 *    of 2 whose edges sit at 2^(k + 1/4) leaves both ends the same room, a
 *    factor of about 1.16 (ln 0.15): ticks carry +-50% noise, so their
 *    mean over eight ticks (10% standard deviation) crosses an edge only
 *    from the ends of those ranges, and rarely.  Edges at the powers of two
 *    would split QD16 (15.x against 16.x) down the middle.
 *  - Request size: bytes per read or write, log2 rounded, since guests
 *    issue powers of two (4k, 64k); polling does not change it.
 *  - Mix: the write share in quarters (a 70/30 mix is "r75"), and whether
 *    flushes are an eighth of the operations or more ("+f": a database's
 *    fsync), which polling does not change either.
 *  - IOPS: polling moves a QD1 guest's IOPS by up to 50% (seed 001) and a
 *    deep one's hardly (DESIGN.md: no IOPS difference at QD16), so the band
 *    must be wide.  A factor of 1.5 is 0.29 of a band of a factor of 4
 *    (ln 1.5 / ln 4): for a QD1 workload placed anywhere in a band, polling
 *    on and off fall in the same band 71% of the time, and deeper ones
 *    nearly always; the mean of eight ticks of +-50% noise (10%) crosses an
 *    edge far less often.  A factor of 8 would reach 80% but no longer tell
 *    an idle-ish 200 IOPS from 1500.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "policy-memory.h"
#include "policy.h"

struct _PolicyMemory {
    gint64 ttl_ms;
    GPtrArray *entries;         /* PolicyMemoryEntry * */
};

/* ---- signatures --------------------------------------------------------- */

/* Requests in flight during @m: its queue depth, or IOPS x latency when the
 * sampler gave only those. */
static double
tick_in_flight(const PolicyMetrics *m)
{
    if (m->queue_depth > 0)
        return m->queue_depth;
    return policy_metrics_iops(m) * m->lat_mean_ns / 1e9;
}

static gint8
band_clamp(double v, int lo, int hi)
{
    if (!(v >= lo))             /* also NaN and -inf: no such figure */
        return (gint8)lo;
    return (gint8)(v > hi ? hi : v);
}

static void
signature_set_device(PolicySignature *sig, const char *key)
{
    if (!key)
        key = "";
    if (strlen(key) <= POLICY_SIGNATURE_DEVICE_MAX) {
        g_strlcpy(sig->device, key, sizeof(sig->device));
        return;
    }
    g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);

    g_snprintf(sig->device, sizeof(sig->device), "sha256:%.32s", sum);
}

gboolean
policy_signature_compute(const PolicyMetrics *ticks, guint n, guint32 qemu_version,
                         const char *device_key, PolicySignature *out)
{
    return policy_signature_compute_min(ticks, n, POLICY_SIGNATURE_MIN_TICKS, qemu_version,
                                        device_key, out);
}

gboolean
policy_signature_compute_min(const PolicyMetrics *ticks, guint n, guint min_ticks,
                             guint32 qemu_version, const char *device_key, PolicySignature *out)
{
    double secs = 0, ops = 0, rw_ops = 0, bytes = 0, writes = 0, flushes = 0, busy = 0;
    guint used = 0;
    PolicySignature sig = { 0 };

    for (guint i = 0; i < n; i++) {
        const PolicyMetrics *m = &ticks[i];
        double s = m->interval_ns / 1e9;

        if (!m->have_io || s <= 0 || policy_metrics_iops(m) <= 0)
            continue;
        secs += s;
        ops += policy_metrics_iops(m) * s;
        rw_ops += (m->rd_iops + m->wr_iops) * s;
        bytes += (m->rd_mbps + m->wr_mbps) * 1e6 * s;
        writes += m->wr_iops * s;
        flushes += m->flush_iops * s;
        busy += tick_in_flight(m) * s;
        used++;
    }
    if (used < MAX(min_ticks, 1))
        return FALSE;
    sig.qd_log2 = log2(busy / secs);
    sig.iops_log4 = log2(ops / secs) / 2;
    sig.qd = band_clamp(ceil(sig.qd_log2 - 0.25), POLICY_SIG_QD_FLOOR, POLICY_SIG_QD_MAX);
    sig.size = rw_ops > 0 && bytes > 0 ?
        band_clamp(round(log2(bytes / rw_ops)), POLICY_SIG_SIZE_MIN, POLICY_SIG_SIZE_MAX) : 0;
    sig.write_quarters = (gint8)round(4 * writes / ops);
    sig.flush = flushes * 8 >= ops;
    sig.iops = band_clamp(floor(log2(ops / secs) / 2), 0, POLICY_SIG_IOPS_MAX);
    sig.qemu_major = (guint16)MIN(qemu_version / 1000000, G_MAXUINT16);
    sig.qemu_minor = (guint16)(qemu_version / 1000 % 1000);
    signature_set_device(&sig, device_key);
    *out = sig;
    return TRUE;
}

static int
compare_strings(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Characters of a source kept as they are: the unreserved ones and the
 * punctuation of paths and URIs.  The rest ("," above all, which joins
 * devices, "%", spaces and control characters) are percent-escaped, so
 * that no source can make one key read as another and the key stays one
 * printable line in the store and the memory listing.
 */
#define DEVICE_IDENTITY_KEPT "!$&'()*+;=:@/"

char *
policy_signature_device_key(const char *const *names, const char *const *identities)
{
    g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) key = g_string_new(NULL);

    for (guint i = 0; names && names[i]; i++) {
        const char *id = identities ? identities[i] : NULL;
        g_autofree char *escaped = id && *id ?
            g_uri_escape_string(id, DEVICE_IDENTITY_KEPT, TRUE) : NULL;

        g_ptr_array_add(entries, escaped ? g_strconcat(names[i], "=", escaped, NULL)
                                         : g_strdup(names[i]));
    }
    g_ptr_array_sort(entries, compare_strings);
    for (guint i = 0; i < entries->len; i++) {
        if (i > 0 && strcmp(entries->pdata[i], entries->pdata[i - 1]) == 0)
            continue;
        if (key->len)
            g_string_append_c(key, ',');
        g_string_append(key, entries->pdata[i]);
    }
    return g_string_free(g_steal_pointer(&key), FALSE);
}

gboolean
policy_signature_same_device(const PolicySignature *a, const PolicySignature *b)
{
    return a->qemu_major == b->qemu_major && a->qemu_minor == b->qemu_minor &&
           strcmp(a->device, b->device) == 0;
}

gboolean
policy_signature_equal(const PolicySignature *a, const PolicySignature *b)
{
    return a->qd == b->qd && a->size == b->size && a->write_quarters == b->write_quarters &&
           !a->flush == !b->flush && a->iops == b->iops && policy_signature_same_device(a, b);
}

/* 2^@k as "0.125" .. "1024": a queue depth. */
static void
append_power2(GString *out, int k)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];

    if (k >= 0)
        g_string_append_printf(out, "%u", 1u << k);
    else
        g_string_append(out, g_ascii_formatd(buf, sizeof(buf), "%g", ldexp(1, k)));
}

/* 2^@k as "512", "4k", "1m"; a size or a rate. */
static void
append_binary(GString *out, int k)
{
    if (k < 10)
        g_string_append_printf(out, "%u", 1u << k);
    else if (k < 20)
        g_string_append_printf(out, "%uk", 1u << (k - 10));
    else
        g_string_append_printf(out, "%um", 1u << (k - 20));
}

/* The IOPS band @k: "16k-64k", [4^k, 4^(k + 1)). */
static void
append_iops_band(GString *out, int k)
{
    append_binary(out, 2 * k);
    g_string_append_c(out, '-');
    append_binary(out, 2 * (k + 1));
}

char *
policy_signature_to_string(const PolicySignature *sig)
{
    GString *s = g_string_new("qd");

    append_power2(s, sig->qd);
    g_string_append_c(s, '/');
    if (sig->size)
        append_binary(s, sig->size);
    else
        g_string_append_c(s, '0');
    g_string_append_printf(s, "/r%d%s/iops", 25 * (4 - sig->write_quarters),
                           sig->flush ? "+f" : "");
    append_iops_band(s, sig->iops);
    g_string_append_printf(s, "/qemu%u.%u/dev=%s", sig->qemu_major, sig->qemu_minor,
                           sig->device);
    return g_string_free(s, FALSE);
}

/* The band in [@lo, @hi] whose text (@append's) is @text; FALSE: none. */
static gboolean
band_parse(const char *text, const char *prefix, int lo, int hi,
           void (*append)(GString *, int), gint8 *out)
{
    g_autoptr(GString) s = g_string_new(NULL);

    for (int k = lo; k <= hi; k++) {
        g_string_assign(s, prefix);
        append(s, k);
        if (strcmp(s->str, text) == 0) {
            *out = (gint8)k;
            return TRUE;
        }
    }
    return FALSE;
}

gboolean
policy_signature_parse(const char *s, PolicySignature *out, GError **error)
{
    g_auto(GStrv) part = g_strsplit(s ? s : "", "/", 6);
    PolicySignature sig = { .qd_log2 = NAN, .iops_log4 = NAN };
    unsigned major, minor, reads;
    char plus[3] = "";

    if (g_strv_length(part) != 6 ||
        !band_parse(part[0], "qd", POLICY_SIG_QD_MIN, POLICY_SIG_QD_MAX, append_power2,
                    &sig.qd) ||
        (strcmp(part[1], "0") != 0 &&
         !band_parse(part[1], "", POLICY_SIG_SIZE_MIN, POLICY_SIG_SIZE_MAX, append_binary,
                     &sig.size)) ||
        sscanf(part[2], "r%u%2s", &reads, plus) < 1 || reads > 100 || reads % 25 ||
        !band_parse(part[3], "iops", 0, POLICY_SIG_IOPS_MAX, append_iops_band, &sig.iops) ||
        sscanf(part[4], "qemu%u.%u", &major, &minor) != 2 || major > G_MAXUINT16 ||
        minor > 999 || !g_str_has_prefix(part[5], "dev=") ||
        strlen(part[5] + 4) > POLICY_SIGNATURE_DEVICE_MAX)
        goto invalid;
    /* sscanf is lenient (spaces, signs): the text the fields make again
     * must be the one given. */
    sig.write_quarters = (gint8)(4 - reads / 25);
    sig.flush = strcmp(plus, "+f") == 0;
    sig.qemu_major = (guint16)major;
    sig.qemu_minor = (guint16)minor;
    g_strlcpy(sig.device, part[5] + 4, sizeof(sig.device));
    {
        g_autofree char *again = policy_signature_to_string(&sig);

        if (strcmp(again, s) != 0)
            goto invalid;
    }
    *out = sig;
    return TRUE;

invalid:
    g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "workload signature '%s': expected "
                "QD/SIZE/rREADS[+f]/iopsLO-HI/qemuMAJOR.MINOR/dev=DEVICES, e.g. "
                "qd1/4k/r100/iops16k-64k/qemu7.2/dev=virtio-disk0", s ? s : "");
    return FALSE;
}

/* ---- the memory --------------------------------------------------------- */

PolicyMemory *
policy_memory_new(gint64 ttl_ms)
{
    PolicyMemory *mem = g_new0(PolicyMemory, 1);

    mem->ttl_ms = ttl_ms > 0 ? ttl_ms : POLICY_MEMORY_TTL_MS;
    mem->entries = g_ptr_array_new_with_free_func(g_free);
    return mem;
}

void
policy_memory_free(PolicyMemory *mem)
{
    if (!mem)
        return;
    g_ptr_array_unref(mem->entries);
    g_free(mem);
}

guint
policy_memory_size(const PolicyMemory *mem)
{
    return mem->entries->len;
}

gint64
policy_memory_ttl(const PolicyMemory *mem)
{
    return mem->ttl_ms;
}

static PolicyMemoryEntry *
memory_find(const PolicyMemory *mem, const PolicySignature *sig)
{
    for (guint i = 0; i < mem->entries->len; i++) {
        PolicyMemoryEntry *e = mem->entries->pdata[i];

        if (policy_signature_equal(&e->sig, sig))
            return e;
    }
    return NULL;
}

/* Drops the least recently seen entries until @room more fit. */
static void
memory_make_room(PolicyMemory *mem, guint room)
{
    while (mem->entries->len + room > POLICY_MEMORY_MAX_ENTRIES && mem->entries->len) {
        guint oldest = 0;

        for (guint i = 1; i < mem->entries->len; i++) {
            const PolicyMemoryEntry *e = mem->entries->pdata[i];

            if (e->seen_ms < ((PolicyMemoryEntry *)mem->entries->pdata[oldest])->seen_ms)
                oldest = i;
        }
        g_ptr_array_remove_index(mem->entries, oldest);
    }
}

static PolicyMemoryEntry *
memory_get(PolicyMemory *mem, const PolicySignature *sig, gint64 now_ms)
{
    PolicyMemoryEntry *e = memory_find(mem, sig);

    if (e)
        return e;
    memory_make_room(mem, 1);
    e = g_new0(PolicyMemoryEntry, 1);
    e->sig = *sig;
    e->learned_ms = e->confirmed_ms = G_MININT64;
    e->seen_ms = now_ms;
    g_ptr_array_add(mem->entries, e);
    return e;
}

const PolicyMemoryEntry *
policy_memory_peek(const PolicyMemory *mem, const PolicySignature *sig)
{
    return memory_find(mem, sig);
}

const PolicyMemoryEntry *
policy_memory_lookup(const PolicyMemory *mem, const PolicySignature *sig, gint64 now_ms)
{
    const PolicyMemoryEntry *e = memory_find(mem, sig);

    if (!e || !e->have_winner || now_ms - e->confirmed_ms >= mem->ttl_ms)
        return NULL;
    return e;
}

/*
 * Is band @to next to @v's band @from, across an edge @v lies within
 * POLICY_SIGNATURE_NEAR_EDGE of?  @lower_edge: where band @from begins,
 * in @v's units (bands are 1 wide).  NaN: no.
 */
static gboolean
band_near(double v, int from, int to, double lower_edge)
{
    if (to == from)
        return TRUE;
    if (to == from + 1)
        return v > lower_edge + 1 - POLICY_SIGNATURE_NEAR_EDGE;
    if (to == from - 1)
        return v < lower_edge + POLICY_SIGNATURE_NEAR_EDGE;
    return FALSE;
}

/* Bands apart in queue depth and IOPS of entry @e from lookup @s; -1:
 * not neighbours. */
static int
signature_distance(const PolicySignature *e, const PolicySignature *s)
{
    if (!band_near(s->qd_log2, s->qd, e->qd, s->qd - 0.75) ||
        !band_near(s->iops_log4, s->iops, e->iops, s->iops) || e->size != s->size ||
        e->write_quarters != s->write_quarters || !e->flush != !s->flush ||
        !policy_signature_same_device(e, s))
        return -1;
    return ABS(e->qd - s->qd) + ABS(e->iops - s->iops);
}

const PolicyMemoryEntry *
policy_memory_lookup_near(const PolicyMemory *mem, const PolicySignature *sig, gint64 now_ms)
{
    const PolicyMemoryEntry *best = policy_memory_lookup(mem, sig, now_ms);
    int best_d = G_MAXINT;

    if (best)
        return best;
    for (guint i = 0; i < mem->entries->len; i++) {
        const PolicyMemoryEntry *e = mem->entries->pdata[i];
        int d = signature_distance(&e->sig, sig);

        if (d < 0 || !e->have_winner || now_ms - e->confirmed_ms >= mem->ttl_ms)
            continue;
        /* The nearest; of two as near, the one confirmed last. */
        if (d < best_d || (d == best_d && e->confirmed_ms > best->confirmed_ms)) {
            best = e;
            best_d = d;
        }
    }
    return best;
}

/* The bar a drop below a remembered score must clear: two standard errors
 * of @n_ticks ticks against the winner's, and at least the margin. */
static double
surprise_bar(const PolicyMemoryEntry *e, guint n_ticks)
{
    double se = e->last.noise * sqrt(1.0 / MAX(n_ticks, 1) + 1.0 / MAX(e->last.winner_ticks, 1));

    return MAX(2 * se, POLICY_MEMORY_SURPRISE_MARGIN);
}

gboolean
policy_memory_surprised(const PolicyMemoryEntry *e, double score, guint n_ticks)
{
    return score < e->last.winner_score - surprise_bar(e, n_ticks);
}

/*
 * A recalled winner has lost its place when it scores clearly below both
 * its own remembered score and the score of the triple it beat.  Below its
 * own score alone is no evidence against it: a host's load moves a guest's
 * whole level between phases (10-20% of IOPS on the test guest, more than
 * the margin), and every triple moves with it, so a winner that led by
 * less than the drift was forgotten and the workload explored at each
 * return, to find the same near tie.  Below what the anchor scored, the
 * winner now does worse than the triple the iothread had without it.
 */
static gboolean
memory_winner_lost(const PolicyMemoryEntry *e, double score, guint n_ticks)
{
    double bar = surprise_bar(e, n_ticks);

    return score < MIN(e->last.winner_score, e->last.anchor_score) - bar;
}

void
policy_memory_learn(PolicyMemory *mem, const PolicySignature *sig, const PolicyExploration *x,
                    gint64 now_ms)
{
    PolicyMemoryEntry *e = memory_get(mem, sig, now_ms);
    gboolean anchor_won = policy_triple_equal(&x->winner, &x->anchor);

    e->have_winner = TRUE;
    e->last = *x;
    e->learned_ms = e->confirmed_ms = e->seen_ms = now_ms;
    e->n_confirmed = 0;
    e->n_explorations++;
    e->n_default_wins = anchor_won ? e->n_default_wins + 1 : 0;
    /* The anchor winning is a gain of nothing, whatever the scores say. */
    e->gain_sum += anchor_won ? 0 : MAX(0, x->winner_score - x->anchor_score);
    e->probe_ticks += x->probe_ticks;
    e->probe_loss_sum += MAX(0, x->probe_loss);
}

gboolean
policy_memory_confirm(PolicyMemory *mem, const PolicySignature *sig, double score,
                      guint n_ticks, gint64 now_ms)
{
    PolicyMemoryEntry *e = memory_find(mem, sig);

    if (!e || !e->have_winner)
        return FALSE;
    e->seen_ms = now_ms;
    if (memory_winner_lost(e, score, n_ticks)) {
        e->have_winner = FALSE;
        return TRUE;
    }
    e->confirmed_ms = now_ms;
    e->n_confirmed++;
    return FALSE;
}

void
policy_memory_record_phase_end(PolicyMemory *mem, const PolicySignature *sig,
                               gint64 length_ms, gint64 now_ms)
{
    PolicyMemoryEntry *e;
    double ln;

    if (length_ms <= 0)
        return;
    e = memory_get(mem, sig, now_ms);
    ln = log((double)length_ms);
    e->n_phases++;
    e->phase_ln_sum += ln;
    e->phase_ln_sumsq += ln * ln;
    e->seen_ms = MAX(e->seen_ms, now_ms);
}

void
policy_memory_forget(PolicyMemory *mem)
{
    g_ptr_array_set_size(mem->entries, 0);
}

/* ---- what exploring is worth -------------------------------------------- */

/* P(Z > z) of the standard normal. */
static double
normal_upper(double z)
{
    return 0.5 * erfc(z / G_SQRT2);
}

double
policy_memory_expected_remaining_ms(const PolicyMemory *mem, const PolicySignature *sig,
                                    gint64 elapsed_ms)
{
    const PolicyMemoryEntry *own = memory_find(mem, sig);
    double n = 0, sum = 0, sumsq = 0, x0 = log(POLICY_MEMORY_PRIOR_PHASE_MS);
    double mu, var, sd, mean_all, z;

    if (own && own->n_phases >= 2) {
        n = own->n_phases;
        sum = own->phase_ln_sum;
        sumsq = own->phase_ln_sumsq;
    } else {
        for (guint i = 0; i < mem->entries->len; i++) {
            const PolicyMemoryEntry *e = mem->entries->pdata[i];

            if (!policy_signature_same_device(&e->sig, sig))
                continue;
            n += e->n_phases;
            sum += e->phase_ln_sum;
            sumsq += e->phase_ln_sumsq;
        }
    }
    /* One phase of the prior's length, with the prior's spread. */
    mu = (sum + x0) / (n + 1);
    var = (sumsq + x0 * x0 + POLICY_MEMORY_PRIOR_PHASE_SD * POLICY_MEMORY_PRIOR_PHASE_SD) /
          (n + 1) - mu * mu;
    sd = sqrt(MAX(var, 0.01));
    mean_all = exp(mu + sd * sd / 2);
    if (elapsed_ms <= 0)
        return mean_all;
    /* E[L | L > t] of a log-normal: its mean times P(Z > z - sd) / P(Z > z).
     * Beyond z = 30 the tail is below double precision; a phase that long
     * is taken to go on as one at z = 30 would. */
    z = MIN((log((double)elapsed_ms) - mu) / sd, 30);
    return MAX(0, mean_all * normal_upper(z - sd) / normal_upper(z) - elapsed_ms);
}

void
policy_memory_stats(const PolicyMemory *mem, const PolicySignature *sig,
                    PolicyMemoryStats *out)
{
    const double w = POLICY_MEMORY_PRIOR_WEIGHT;
    double gain = 0, ticks = 0, loss = 0, dev_gain;
    guint n = 0, streak = 0;
    gint64 last = G_MININT64;
    g_autoptr(GPtrArray) explored = g_ptr_array_new();
    const PolicyMemoryEntry *own = memory_find(mem, sig);

    for (guint i = 0; i < mem->entries->len; i++) {
        const PolicyMemoryEntry *e = mem->entries->pdata[i];

        if (!policy_signature_same_device(&e->sig, sig) || !e->n_explorations)
            continue;
        n += e->n_explorations;
        gain += e->gain_sum;
        ticks += e->probe_ticks;
        loss += e->probe_loss_sum;
        last = MAX(last, e->learned_ms);
        g_ptr_array_add(explored, (gpointer)e);
    }
    /* The device's default wins in a row, newest exploration first: each
     * entry knows its own run; one that had a winner before its run ends
     * the device's. */
    while (explored->len) {
        guint newest = 0;

        for (guint i = 1; i < explored->len; i++)
            if (((PolicyMemoryEntry *)explored->pdata[i])->learned_ms >
                ((PolicyMemoryEntry *)explored->pdata[newest])->learned_ms)
                newest = i;
        const PolicyMemoryEntry *e = g_ptr_array_steal_index(explored, newest);

        streak += e->n_default_wins;
        if (e->n_default_wins < e->n_explorations)
            break;
    }
    /* The device's mean gain, the prior its prior; the workload's own
     * explorations then weigh against the device's as the prior does. */
    dev_gain = (POLICY_MEMORY_PRIOR_GAIN * w + gain) / (w + n);
    out->gain_per_tick = own && own->n_explorations ?
        (dev_gain * w + own->gain_sum) / (w + own->n_explorations) : dev_gain;
    out->probe_ticks = (POLICY_MEMORY_PRIOR_PROBE_TICKS * w + ticks) / (w + n);
    out->loss_per_tick = (POLICY_MEMORY_PRIOR_LOSS * POLICY_MEMORY_PRIOR_PROBE_TICKS * w + loss) /
                         (POLICY_MEMORY_PRIOR_PROBE_TICKS * w + ticks);
    out->n_explorations = n;
    out->default_streak = streak;
    out->last_explored_ms = last;
}

gboolean
policy_memory_exploration_pays(const PolicyMemoryStats *st, double remaining_ms,
                               gint64 tick_ms, gint64 slow_ms, gint64 now_ms, char **reason)
{
    double ticks_left = MAX(0, remaining_ms) / (tick_ms > 0 ? tick_ms : 1000);
    /* The gain starts when the probes end; they cost what they lose. */
    double benefit = st->gain_per_tick * MAX(0, ticks_left - st->probe_ticks);
    double cost = st->probe_ticks * st->loss_per_tick;
    gboolean pays;

    if (st->default_streak >= POLICY_MEMORY_DEFAULT_STREAK) {
        gint64 since = st->last_explored_ms == G_MININT64 ? G_MAXINT64
                                                          : now_ms - st->last_explored_ms;

        pays = since >= slow_ms;
        if (reason && pays)
            *reason = g_strdup_printf("the anchor won the device's last %u explorations: "
                                      "exploring again on the slow schedule, once per %"
                                      G_GINT64_FORMAT " s", st->default_streak, slow_ms / 1000);
        else if (reason)
            *reason = g_strdup_printf("the anchor won the device's last %u explorations: "
                                      "the next in %" G_GINT64_FORMAT " s", st->default_streak,
                                      (slow_ms - since) / 1000);
        return pays;
    }
    pays = benefit > cost;
    if (reason)
        *reason = g_strdup_printf("exploring %s: an expected gain of %.4f a tick over %.0f "
                                  "ticks after the probes (%.3f) %s their cost (%.1f ticks at "
                                  "%.3f: %.3f), from %u explorations of the device",
                                  pays ? "pays" : "does not pay", st->gain_per_tick,
                                  MAX(0, ticks_left - st->probe_ticks), benefit,
                                  pays ? "exceeds" : "does not exceed", st->probe_ticks,
                                  st->loss_per_tick, cost, st->n_explorations);
    return pays;
}

/* ---- rows for the store ------------------------------------------------- */

static void
triple_to_row(const PolicyTriple *t, gint64 *max_ns, gint64 *grow, gint64 *shrink)
{
    *max_ns = (gint64)t->poll_max_ns;
    *grow = (gint64)t->poll_grow;
    *shrink = (gint64)t->poll_shrink;
}

static gboolean
triple_from_row(gint64 max_ns, gint64 grow, gint64 shrink, PolicyTriple *t)
{
    if (max_ns < 0 || grow < 0 || shrink < 0)
        return FALSE;
    *t = (PolicyTriple){ (guint64)max_ns, (guint64)grow, (guint64)shrink };
    return TRUE;
}

GPtrArray *
policy_memory_to_rows(const PolicyMemory *mem)
{
    GPtrArray *rows = g_ptr_array_new_with_free_func((GDestroyNotify)pt_memory_row_free);

    for (guint i = 0; i < mem->entries->len; i++) {
        const PolicyMemoryEntry *e = mem->entries->pdata[i];
        PtMemoryRow *r = g_new0(PtMemoryRow, 1);

        r->signature = policy_signature_to_string(&e->sig);
        r->have_winner = e->have_winner;
        triple_to_row(&e->last.winner, &r->winner_max_ns, &r->winner_grow, &r->winner_shrink);
        r->winner_score = e->last.winner_score;
        r->winner_ticks = e->last.winner_ticks;
        triple_to_row(&e->last.anchor, &r->anchor_max_ns, &r->anchor_grow, &r->anchor_shrink);
        r->anchor_score = e->last.anchor_score;
        r->noise = e->last.noise;
        r->last_probe_ticks = e->last.probe_ticks;
        r->last_probe_loss = e->last.probe_loss;
        r->learned_ms = e->learned_ms;
        r->confirmed_ms = e->confirmed_ms;
        r->seen_ms = e->seen_ms;
        r->n_confirmed = e->n_confirmed;
        r->n_explorations = e->n_explorations;
        r->n_default_wins = e->n_default_wins;
        r->gain_sum = e->gain_sum;
        r->probe_ticks = (gint64)e->probe_ticks;
        r->probe_loss_sum = e->probe_loss_sum;
        r->n_phases = e->n_phases;
        r->phase_ln_sum = e->phase_ln_sum;
        r->phase_ln_sumsq = e->phase_ln_sumsq;
        r->contended = e->last.contended;
        g_ptr_array_add(rows, r);
    }
    return rows;
}

static gboolean
count_ok(gint64 v)
{
    return v >= 0 && v <= G_MAXUINT;
}

static PolicyMemoryEntry *
entry_from_row(const PtMemoryRow *r, GError **error)
{
    g_autofree PolicyMemoryEntry *e = g_new0(PolicyMemoryEntry, 1);

    if (!policy_signature_parse(r->signature, &e->sig, error))
        return NULL;
    if (!triple_from_row(r->winner_max_ns, r->winner_grow, r->winner_shrink, &e->last.winner) ||
        !triple_from_row(r->anchor_max_ns, r->anchor_grow, r->anchor_shrink, &e->last.anchor) ||
        !count_ok(r->winner_ticks) || !count_ok(r->n_confirmed) ||
        !count_ok(r->n_explorations) || !count_ok(r->n_default_wins) ||
        !count_ok(r->n_phases) || !count_ok(r->last_probe_ticks) || r->probe_ticks < 0) {
        g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "workload memory %s: a triple "
                    "or a count is out of range", r->signature);
        return NULL;
    }
    e->have_winner = r->have_winner != 0;
    e->last.winner_score = r->winner_score;
    e->last.winner_ticks = (guint)r->winner_ticks;
    e->last.anchor_score = r->anchor_score;
    e->last.noise = r->noise;
    e->last.probe_ticks = (guint)r->last_probe_ticks;
    e->last.probe_loss = r->last_probe_loss;
    e->last.contended = r->contended > 0;
    e->learned_ms = r->learned_ms;
    e->confirmed_ms = r->confirmed_ms;
    e->seen_ms = r->seen_ms;
    e->n_confirmed = (guint)r->n_confirmed;
    e->n_explorations = (guint)r->n_explorations;
    e->n_default_wins = (guint)r->n_default_wins;
    e->gain_sum = r->gain_sum;
    e->probe_ticks = (guint64)r->probe_ticks;
    e->probe_loss_sum = r->probe_loss_sum;
    e->n_phases = (guint)r->n_phases;
    e->phase_ln_sum = r->phase_ln_sum;
    e->phase_ln_sumsq = r->phase_ln_sumsq;
    return g_steal_pointer(&e);
}

gboolean
policy_memory_load_rows(PolicyMemory *mem, PtMemoryRow *const *rows, guint n, GError **error)
{
    g_autoptr(GPtrArray) entries = g_ptr_array_new_with_free_func(g_free);
    PolicyMemory loaded = { mem->ttl_ms, entries };

    for (guint i = 0; i < n; i++) {
        PolicyMemoryEntry *e = entry_from_row(rows[i], error);

        if (!e)
            return FALSE;
        if (memory_find(&loaded, &e->sig)) {
            g_set_error(error, POLICY_ERROR, POLICY_ERROR_INVALID, "workload memory %s: "
                        "given twice", rows[i]->signature);
            g_free(e);
            return FALSE;
        }
        g_ptr_array_add(entries, e);
    }
    memory_make_room(&loaded, 0);
    g_ptr_array_unref(mem->entries);
    mem->entries = g_steal_pointer(&entries);
    return TRUE;
}
