/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-history: the store's rows of a tick: an iothread's from its delta,
 * the host's from two probe snapshots.
 */
#pragma once

#include "probe-snap.h"
#include "store.h"

/* Fill @s (target and iothread names left to the caller) with the tick's
 * delta @d of one iothread (probe_derive_delta()). */
void pt_history_sample(const PolicyDelta *d, StoreSample *s);
void pt_history_psi(const ProbeHostSnap *prev, const ProbeHostSnap *cur, StorePsi *psi);
/* The host's busy and total CPU time between @prev and @cur (/proc/stat). */
void pt_history_host_cpu(const ProbeHostSnap *prev, const ProbeHostSnap *cur,
                         StoreHostCpu *cpu);
