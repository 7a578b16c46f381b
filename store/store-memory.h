/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * store-memory: the adaptive policy's workload memory (policy/policy-memory.h)
 * kept across restarts, in table policy_memory (docs/STORE.md).
 *
 * Contract, as store.h's: GError last, FALSE or NULL on failure, no
 * logging, time passed in.  Rows are keyed by the name the VM goes by (as
 * the daemon shows it, so that a VM started again, on another socket or
 * with another domain id, finds what it learned), the iothread's QOM id
 * and the signature's text; the store does not read the row's figures.
 * These tables are written outside the per-tick queue: a locked or full
 * database fails the call (STORE_ERROR_BUSY, STORE_ERROR_FULL) and the
 * caller decides whether to retry.
 */
#pragma once

#include <glib.h>

#include "common/pt-memory-row.h"
#include "store.h"

G_BEGIN_DECLS

/*
 * Replaces every row of @vm/@iothread with @rows (@n of them, @n 0:
 * none) in one transaction: the old rows stay when any new one fails.
 */
gboolean store_memory_save(StoreDb *db, const char *vm, const char *iothread,
                           PtMemoryRow *const *rows, guint n, gint64 now_ms, GError **error);
/* The rows of @vm/@iothread (PtMemoryRow *, freed with the array),
 * ordered by signature; an empty array when none. */
GPtrArray *store_memory_load(StoreDb *db, const char *vm, const char *iothread,
                             GError **error);
/* The iothread ids @vm has rows for (char *, freed with the array), sorted. */
GPtrArray *store_memory_iothreads(StoreDb *db, const char *vm, GError **error);
/* Forgets the rows of @vm/@iothread, or of every iothread of @vm when
 * @iothread is NULL; @dropped (optional) gets how many. */
gboolean store_memory_forget(StoreDb *db, const char *vm, const char *iothread,
                             gint64 now_ms, guint *dropped, GError **error);

/*
 * @row as an entry of the `memory` reply (docs/CONTROL.md, a new object),
 * the one builder the daemon and polltunectl's offline form share:
 * signature, winner and anchor triples with their scores (null without a
 * winner), learned/confirmed/seen times, whether the winner has gone
 * unconfirmed for @ttl_ms at @now_ms, and the counts.
 */
json_object *store_memory_row_to_json(const PtMemoryRow *row, gint64 ttl_ms, gint64 now_ms);

G_END_DECLS
