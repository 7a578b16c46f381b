/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-memory-row: one entry of the policy's workload memory as a flat row
 * (header only, GLib only).
 *
 * The policy keeps what each exploration found per workload signature
 * (policy/policy-memory.h); the store keeps it across restarts
 * (store/store-memory.h).  Neither component may include the other, so
 * the row both speak is declared once, here: the policy serialises an
 * entry into it (policy_memory_to_rows()) and reads it back
 * (policy_memory_load_rows()), the store writes and reads its columns
 * (table policy_memory, docs/STORE.md).  Every field is a number but the
 * signature's text form; times are UTC milliseconds since the epoch.
 */
#pragma once

#include <glib.h>

typedef struct {
    char *signature;            /* policy_signature_to_string() */
    gint64 have_winner;         /* 0: the phase statistics alone are known */
    gint64 winner_max_ns, winner_grow, winner_shrink;
    double winner_score;        /* objective units, the mean of winner_ticks ticks */
    gint64 winner_ticks;
    gint64 anchor_max_ns, anchor_grow, anchor_shrink;
    double anchor_score;        /* the baseline measured in the same exploration */
    double noise;               /* per-tick standard deviation of the score */
    gint64 last_probe_ticks;    /* the last exploration's ticks under losing triples */
    double last_probe_loss;     /* their summed score below the winner's */
    gint64 learned_ms, confirmed_ms, seen_ms;
    gint64 n_confirmed, n_explorations, n_default_wins;
    double gain_sum;            /* winner's lead over the anchor, summed over explorations */
    gint64 probe_ticks;         /* ticks spent on probes that lost, summed */
    double probe_loss_sum;      /* their score below the winner's, summed over those ticks */
    gint64 n_phases;
    double phase_ln_sum, phase_ln_sumsq;    /* ln(phase length in ms) */
    gint64 contended;           /* 1: the last exploration ran on a contended host */
} PtMemoryRow;

static inline void
pt_memory_row_free(PtMemoryRow *row)
{
    if (!row)
        return;
    g_free(row->signature);
    g_free(row);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(PtMemoryRow, pt_memory_row_free)
