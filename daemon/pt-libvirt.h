/*
 * pt-libvirt: polltune's libvirt connection.  (Placeholder; see the
 * libvirt target work.)
 */
#pragma once
