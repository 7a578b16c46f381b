/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pt-libvirt-event: libvirt's event loop on a private GMainContext, run by
 * one process-wide thread.
 *
 * libvirt needs an event loop for keepalive, close detection and domain
 * events.  Its default implementation attaches to the process-wide default
 * GMainContext, which the daemon's own loop uses: libvirt's work would then
 * run on whichever thread iterates that context, a thread running
 * virEventRunDefaultImpl() could dispatch the daemon's sources, and joining
 * it from inside the daemon's loop would deadlock.  So this module registers
 * its own implementation (virEventRegisterImpl) over a private context.
 *
 * The first pt_libvirt_event_acquire() also initialises libvirt for the
 * process and silences its default error printing (virSetErrorFunc).
 * The thread runs while at least one user holds it; the last
 * pt_libvirt_event_release() lets pending removals finish, then joins it.
 */
#pragma once

#include <glib.h>

void pt_libvirt_event_acquire(void);
void pt_libvirt_event_release(void);
