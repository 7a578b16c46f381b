#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Boots the test guest directly with qemu-system-x86_64 under TCG, with its
# virtio-blk disk on an iothread and a QMP socket for polltuned to find.
#
# Usage: tests/guest/run-guest.sh [options] [-- extra qemu arguments]
#   -p PHASES   load schedule (default idle:5,qd1:10,qd16:10), see loadgen.c
#   -d DISK     backing: "null" (default, null-co, no file) or a raw image
#               path, created as a sparse 1 GiB file when missing; the
#               default comes from $PT_GUEST_DISK when set
#   -s FILE     serial console to FILE (default: stdout)
#   -q PATH     QMP socket (default $PT_GUEST_QMP or /tmp/pt-guest-PID.qmp)
#   -i N        number of iothreads iot0..iotN-1; the disk uses iot0 (default 1)
#   -P NS       initial poll-max-ns of the iothreads (default: QEMU's)
#   -a AFTER    after the schedule: poweroff (default) or idle
#   -n NAME     guest name, shown in QMP and in thread names (default pt-guest)
#   -A ACCEL    accelerator (default tcg); kvm only where a stock guest
#               boots under it, which nested KVM without hardware
#               virtualisation does not
#   -c CPUS     vCPUs (default 1)
#   -M MAXCPUS  vCPU slots, online or not (default: 2 under tcg, else CPUS;
#               $PT_GUEST_MAXCPUS when set).  Under TCG before QEMU 8.1 a
#               guest with one slot runs without its memory barriers, which
#               loses virtio interrupts against the iothread (docs/GUEST.md)
#   -m MIB      memory (default 256)
#   -k ARGS     extra kernel command-line arguments
#   -N          dry run: print the QEMU command instead of running it
#
# QEMU replaces this shell (exec), so the caller's PID is QEMU's and
# signals reach it directly.  With the default "poweroff" QEMU exits by
# itself when the schedule ends; the exit status is QEMU's.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

phases=idle:5,qd1:10,qd16:10
disk=${PT_GUEST_DISK:-null}
serial=
qmp=${PT_GUEST_QMP:-}
niothreads=1
poll_max_ns=
after=poweroff
name=pt-guest
accel=tcg
cpus=1
maxcpus=${PT_GUEST_MAXCPUS:-}
mem=256
kargs=
dry=0

usage() {
    sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

while getopts p:d:s:q:i:P:a:n:A:c:M:m:k:Nh opt; do
    case $opt in
    p) phases=$OPTARG ;;
    d) disk=$OPTARG ;;
    s) serial=$OPTARG ;;
    q) qmp=$OPTARG ;;
    i) niothreads=$OPTARG ;;
    P) poll_max_ns=$OPTARG ;;
    a) after=$OPTARG ;;
    n) name=$OPTARG ;;
    A) accel=$OPTARG ;;
    c) cpus=$OPTARG ;;
    M) maxcpus=$OPTARG ;;
    m) mem=$OPTARG ;;
    k) kargs=$OPTARG ;;
    N) dry=1 ;;
    *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ "${1:-}" = -- ] && shift

command -v qemu-system-x86_64 >/dev/null 2>&1 || {
    echo "run-guest.sh: qemu-system-x86_64 not found" >&2
    exit 1
}

# build.sh is a no-op when its cache is current; its last lines name the
# kernel and initramfs.
eval "$("$here/build.sh" | grep '^PT_GUEST_[A-Z]*=/')"

# After exec, $$ is QEMU's PID, which makes the default path unique.
[ -n "$qmp" ] || qmp=${TMPDIR:-/tmp}/pt-guest-$$.qmp

if [ "$disk" = null ]; then
    # read-zeroes: otherwise null-co returns whatever the buffer held,
    # and nothing here should depend on that.
    blockdev="driver=null-co,node-name=disk0,size=1073741824,read-zeroes=on"
else
    [ -e "$disk" ] || truncate -s 1G "$disk"
    # The host page cache is left on (cache.direct=off): a sparse file on
    # tmpfs or overlayfs cannot do O_DIRECT, and the guest's O_DIRECT is
    # what matters for the request rate the iothread sees.
    blockdev="driver=raw,node-name=disk0,file.driver=file,file.filename=$disk,file.cache.direct=off"
fi

# QEMU 7.2's TCG drops every guest barrier (mfence, lock-prefixed ops)
# unless the machine can have more than one vCPU ("tcg: Do not elide
# memory barriers for !CF_PARALLEL in system mode", QEMU 8.1).  A second,
# offline slot costs nothing and keeps them.
if [ -z "$maxcpus" ]; then
    maxcpus=$cpus
    [ "$accel" = tcg ] && [ "$cpus" -lt 2 ] && maxcpus=2
fi
poll=
[ -n "$poll_max_ns" ] && poll=",poll-max-ns=$poll_max_ns"

# no_timer_check: on a host loaded enough to stall TCG for tens of
# milliseconds the kernel's early check that the IO-APIC timer ticks can
# miss its ticks and panic ("IO-APIC + timer doesn't work!", seen with a
# load average of 19 on two cores).  Virtual machines skip that check as a
# rule; the guest's timer works either way.
set -- -name "$name,debug-threads=on" \
    -machine q35 -accel "$accel" -cpu max -smp "$cpus,maxcpus=$maxcpus" -m "$mem" \
    -nodefaults -no-user-config -display none -no-reboot \
    -kernel "$PT_GUEST_KERNEL" -initrd "$PT_GUEST_INITRD" \
    -append "console=ttyS0 quiet panic=-1 no_timer_check pt.phases=$phases pt.after=$after $kargs" \
    -qmp "unix:$qmp,server=on,wait=off" \
    -blockdev "$blockdev" \
    -device virtio-blk-pci,drive=disk0,iothread=iot0,id=vblk0 \
    -serial "${serial:+file:}${serial:-stdio}" \
    "$@"

# The iothreads, prepended so the command reads in dependency order.
i=$niothreads
while [ "$i" -gt 0 ]; do
    i=$((i - 1))
    set -- -object "iothread,id=iot$i$poll" "$@"
done

echo "run-guest.sh: QMP socket $qmp" >&2
if [ $dry = 1 ]; then
    echo qemu-system-x86_64 "$@"
    exit 0
fi
exec qemu-system-x86_64 "$@"
