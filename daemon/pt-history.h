/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-history: the store's per-tick deltas from two probe snapshots.
 */
#pragma once

#include "probe-snap.h"
#include "store.h"

/* Fill @s (target and iothread names left to the caller) with what iothread
 * @id did between @prev (may be NULL) and @cur.  FALSE if @cur lacks @id. */
gboolean pt_history_sample(const ProbeTargetSnap *prev, const ProbeTargetSnap *cur,
                           const char *id, StoreSample *s);
void pt_history_psi(const ProbeHostSnap *prev, const ProbeHostSnap *cur, StorePsi *psi);
/* The host's busy and total CPU time between @prev and @cur (/proc/stat). */
void pt_history_host_cpu(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                         StoreHostCpu *cpu);
