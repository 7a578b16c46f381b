/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hostile monitors: the fake QEMU (qmp-fake-qemu.h) scripted to misbehave
 * in one way on every connection, on a thread of its own, for the fault
 * and chaos tests that run the real daemon against it.  Nothing of the
 * huge line is held in memory.
 */
#pragma once

#include "qmp-fake-qemu.h"

typedef enum {
    QMP_FAKE_HOSTILE_GARBAGE,       /* binary junk and broken JSON, no greeting */
    QMP_FAKE_HOSTILE_HUGE_LINE,     /* a 100 MB greeting line */
    QMP_FAKE_HOSTILE_DRIP,          /* the greeting, one byte per second */
    QMP_FAKE_HOSTILE_WRONG_SHAPE,   /* valid JSON, never what was asked */
    QMP_FAKE_HOSTILE_BAD_GREETING,  /* valid JSON that is no greeting, then silence */
    QMP_FAKE_HOSTILE_SILENCE,       /* accepts, then says nothing at all */
    QMP_FAKE_HOSTILE_MAX,
} QmpFakeHostile;

/* "garbage", "huge-line", ...: for messages and replayable logs. */
const char *qmp_fake_hostile_name(QmpFakeHostile kind);

/* A monitor listening at @path that misbehaves as @kind with each client,
 * already serving from its thread. */
QmpFakeQemu *qmp_fake_qemu_new_hostile(const char *path, QmpFakeHostile kind);
