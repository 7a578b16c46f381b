/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-history: the store's rows of a tick: an iothread's from its delta,
 * the host's from the host's delta.
 */
#pragma once

#include "policy-counters.h"
#include "probe-snap.h"
#include "store.h"

/* Fill @s (target and iothread names left to the caller) with the tick's
 * delta @d of one iothread (probe_derive_delta()). */
void pt_history_sample(const PolicyDelta *d, StoreSample *s);
/* The host's rows of the tick's host delta @d (probe_derive_host_delta()):
 * the PSI total's increase, and the busy and total CPU time (/proc/stat). */
void pt_history_psi(const PolicyHostDelta *d, StorePsi *psi);
void pt_history_host_cpu(const PolicyHostDelta *d, StoreHostCpu *cpu);
