/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * fault-peer: a misbehaving QMP server on a listening unix socket.
 *
 * polltuned finds it through its glob like any QEMU and connects; a thread
 * accepts every connection in turn and misbehaves in one way until the
 * daemon hangs up or the peer is freed.  Nothing of the huge line is held
 * in memory: it is written from one reused chunk.
 */
#pragma once

#include <glib.h>

typedef enum {
    FAULT_PEER_GARBAGE,         /* binary junk and broken JSON, no greeting */
    FAULT_PEER_HUGE_LINE,       /* a 100 MB greeting line */
    FAULT_PEER_DRIP,            /* the greeting, one byte per second */
    FAULT_PEER_WRONG_SHAPE,     /* valid JSON, never what was asked */
    FAULT_PEER_BAD_GREETING,    /* valid JSON that is no greeting, then silence */
    FAULT_PEER_SILENCE,         /* accepts, then says nothing at all */
    FAULT_PEER_KIND_MAX,
} FaultPeerKind;

/* "garbage", "huge-line", ...: for messages and replayable logs. */
const char *fault_peer_kind_name(FaultPeerKind kind);

typedef struct FaultPeer FaultPeer;

FaultPeer *fault_peer_start(const char *path, FaultPeerKind kind);
/* Connections accepted so far; bytes the peer managed to send. */
guint fault_peer_connections(FaultPeer *p);
guint64 fault_peer_bytes_sent(FaultPeer *p);
void fault_peer_free(FaultPeer *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(FaultPeer, fault_peer_free)
