#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs the test guest as a libvirt domain (type='qemu', i.e. TCG) built from
# domain.xml.in: two iothreads, the virtio-blk disk on iothread 1.
#
# Usage: tests/guest/libvirt-guest.sh COMMAND [options]
#   daemons   start virtlogd and libvirtd (-d) unless already running;
#             for machines without systemd, needs root
#   xml       print the domain XML
#   start     define and start the domain
#   stop      destroy and undefine the domain, remove its default disk
# Options:
#   -n NAME     domain name (default pt-guest)
#   -p PHASES   load schedule (default idle:5,qd1:10,qd16:10), see loadgen.c
#   -a AFTER    after the schedule: poweroff (default) or idle
#   -d DISK     raw disk image, created sparse (1 GiB) when missing
#               (default RUNDIR/NAME.img)
#   -s FILE     serial log (default RUNDIR/NAME.serial)
#   -m MIB      memory (default 256)
#   -k ARGS     extra kernel command-line arguments
#   -c URI      libvirt URI (default $LIBVIRT_DEFAULT_URI or qemu:///system)
# With PT_QEMU=10 the emulator is /usr/bin/qemu-system-x86_64 as a libvirtd
# in the Debian 13 root sees it (tests/common/pt-test-libvirt.h).
# RUNDIR is $PT_GUEST_RUNDIR, default /var/tmp/pt-guest.  It is not under
# /tmp because libvirt may give QEMU a private /tmp.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

die() {
    echo "libvirt-guest.sh: $*" >&2
    exit 1
}

[ $# -ge 1 ] || die "usage: libvirt-guest.sh daemons|xml|start|stop [options]"
cmd=$1
shift

name=pt-guest
phases=idle:5,qd1:10,qd16:10
after=poweroff
disk=
serial=
mem=256
kargs=
uri=${LIBVIRT_DEFAULT_URI:-qemu:///system}
rundir=${PT_GUEST_RUNDIR:-/var/tmp/pt-guest}

while getopts n:p:a:d:s:m:k:c: opt; do
    case $opt in
    n) name=$OPTARG ;;
    p) phases=$OPTARG ;;
    a) after=$OPTARG ;;
    d) disk=$OPTARG ;;
    s) serial=$OPTARG ;;
    m) mem=$OPTARG ;;
    k) kargs=$OPTARG ;;
    c) uri=$OPTARG ;;
    *) die "unknown option" ;;
    esac
done
own_disk=0
[ -n "$disk" ] || { disk=$rundir/$name.img; own_disk=1; }
[ -n "$serial" ] || serial=$rundir/$name.serial

daemons() {
    # libvirtd reaches QEMU's log through virtlogd, so that one goes first.
    if ! pgrep -x virtlogd >/dev/null; then
        virtlogd -d || die "cannot start virtlogd"
    fi
    if ! pgrep -x libvirtd >/dev/null; then
        libvirtd -d || die "cannot start libvirtd"
    fi
    # libvirtd answers only once its socket exists.
    i=0
    until virsh -q -c "$uri" version >/dev/null 2>&1; do
        i=$((i + 1))
        [ $i -lt 50 ] || die "libvirtd does not answer on $uri"
        sleep 0.2
    done
}

# Values are substituted with sed; '|' is the delimiter, so a path holding
# one is refused rather than silently mangled.
xml() {
    eval "$("$here/build.sh" | grep '^PT_GUEST_[A-Z]*=/')"
    if [ "${PT_QEMU:-}" = 10 ]; then
        # libvirt 11 runs in the Debian 13 root (tests/qemu10/make-root.sh):
        # the emulator is that root's own, named as libvirtd sees it.
        emulator=/usr/bin/qemu-system-x86_64
    else
        emulator=$(command -v qemu-system-x86_64) || die "qemu-system-x86_64 not found"
    fi
    # no_timer_check: as in run-guest.sh, for a host too loaded for the
    # kernel's early timer check.
    cmdline="console=ttyS0 quiet panic=-1 no_timer_check pt.phases=$phases pt.after=$after $kargs"
    for v in "$name" "$PT_GUEST_KERNEL" "$PT_GUEST_INITRD" "$cmdline" "$disk" "$serial"; do
        case $v in *'|'* | *'&'* | *'<'* | *"'"*) die "unsupported character in: $v" ;; esac
    done
    sed -e "s|@NAME@|$name|g" \
        -e "s|@MEMORY_MIB@|$mem|g" \
        -e "s|@KERNEL@|$PT_GUEST_KERNEL|g" \
        -e "s|@INITRD@|$PT_GUEST_INITRD|g" \
        -e "s|@CMDLINE@|$cmdline|g" \
        -e "s|@EMULATOR@|$emulator|g" \
        -e "s|@DISK@|$disk|g" \
        -e "s|@SERIAL_LOG@|$serial|g" \
        "$here/domain.xml.in"
}

case $cmd in
daemons)
    daemons
    ;;
xml)
    xml
    ;;
start)
    mkdir -p "$rundir" "$(dirname "$disk")" "$(dirname "$serial")"
    [ -e "$disk" ] || truncate -s 1G "$disk"
    tmp=$(mktemp "$rundir/$name.xml.XXXXXX")
    trap 'rm -f "$tmp"' EXIT
    xml >"$tmp"
    virsh -q -c "$uri" define "$tmp" >/dev/null
    virsh -q -c "$uri" start "$name" >/dev/null
    echo "libvirt-guest.sh: started $name, serial log $serial" >&2
    ;;
stop)
    virsh -q -c "$uri" destroy "$name" >/dev/null 2>&1 || true
    virsh -q -c "$uri" undefine "$name" >/dev/null 2>&1 || true
    # A disk given with -d belongs to the caller.
    [ $own_disk = 0 ] || rm -f "$disk"
    ;;
*)
    die "unknown command $cmd"
    ;;
esac
