/*
 * libvirt-managed targets.  (Wired to pt-libvirt once that lands.)
 */
#include "pt-daemon-private.h"

void
pt_daemon_libvirt_start(PtDaemon *d)
{
}

void
pt_daemon_libvirt_stop(PtDaemon *d)
{
}
