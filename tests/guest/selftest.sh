#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Self-test of the test guest: builds it (cached), boots it with a short
# schedule and checks that every phase reported, parsed and did I/O.
#
# Usage: tests/guest/selftest.sh [-l] [-p PHASES] [-d DISK]
#   -l          boot through libvirt (libvirt-guest.sh) instead of directly,
#               and check virsh domstats and iothreadset against the guest
#   -p PHASES   schedule (default idle:2,qd1:5,qd16:5); every I/O phase must
#               report iops > 0 and every idle phase ops = 0
#   -d DISK     backing for the direct boot: null (default) or a raw image
# Exit status: 0 pass, 1 fail, 77 skip (something needed is missing; the
# reason is printed).
#
# Besides pass/fail it prints what a reader of the figures wants: boot time
# as seen from the host, IOPS per phase, and how far the guest's clock ran
# from the host's, measured from host arrival times of the serial lines.
set -u

here=$(cd "$(dirname "$0")" && pwd)
phases=idle:2,qd1:5,qd16:5
disk=null
use_libvirt=0
while getopts lp:d: opt; do
    case $opt in
    l) use_libvirt=1 ;;
    p) phases=$OPTARG ;;
    d) disk=$OPTARG ;;
    *) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
    esac
done

skip() {
    echo "SKIP: $*"
    exit 77
}
fail() {
    echo "FAIL: $*"
    [ -s "${log:-}" ] && sed 's/^/  serial: /' "$log" | tail -n 40
    exit 1
}

command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not installed"
command -v timeout >/dev/null || skip "timeout (coreutils) not installed"
# Without a built guest, building one needs these; a current cache does not.
if ! "$here/build.sh" >/dev/null 2>&1; then
    for tool in apt-get apt-cache dpkg-deb gcc cpio gzip; do
        command -v $tool >/dev/null || skip "$tool not installed, cannot build the guest"
    done
    [ -x /bin/busybox ] || skip "busybox-static not installed"
    "$here/build.sh" >/dev/null || fail "build.sh failed"
fi
if [ $use_libvirt = 1 ]; then
    [ "$(id -u)" = 0 ] || skip "the libvirt path needs root (qemu:///system)"
    command -v virsh >/dev/null || skip "virsh not installed"
    virsh -q -c qemu:///system version >/dev/null 2>&1 || skip "libvirtd not running (libvirt-guest.sh daemons)"
fi

# Seconds the schedule lasts, to bound the run.
total=0
IFS=, read -ra plist <<<"$phases"
for p in "${plist[@]}"; do total=$((total + ${p#*:})); done
limit=$((total + 120))

tmp=$(mktemp -d)
dom=pt-selftest-$$
cleanup() {
    [ $use_libvirt = 1 ] && PT_GUEST_RUNDIR=$tmp "$here/libvirt-guest.sh" stop -n "$dom"
    rm -rf "$tmp"
}
trap cleanup EXIT
log=$tmp/serial.log

# Host receive time in ms (bash's EPOCHREALTIME, no fork per line).
host_ms() {
    local t=${EPOCHREALTIME/./}
    echo $((t / 1000))
}

t0=$(host_ms)
if [ $use_libvirt = 0 ]; then
    # Each serial line is stamped on arrival: "HOST_MS LINE".
    timeout $limit "$here/run-guest.sh" -q "$tmp/qmp" -d "$disk" -p "$phases" 2>"$tmp/qemu.err" |
        while IFS= read -r line; do
            line=${line%$'\r'}
            t=${EPOCHREALTIME/./}
            echo "$((t / 1000)) $line"
        done >"$log"
    rc=${PIPESTATUS[0]}
    [ "$rc" != 124 ] || fail "no PT-DONE within $limit s"
    [ "$rc" = 0 ] || { cat "$tmp/qemu.err"; fail "QEMU exited with status $rc"; }
else
    serial=$tmp/serial.raw
    chmod 755 "$tmp"
    # -a idle keeps the domain up for the virsh checks after the load.
    PT_GUEST_RUNDIR=$tmp "$here/libvirt-guest.sh" start -n "$dom" -a idle -p "$phases" -s "$serial" ||
        fail "libvirt-guest.sh start failed"
    # libvirt writes the serial log itself; follow it and stamp lines as
    # they appear, as for the direct boot.
    while IFS= read -r line; do
        line=${line%$'\r'}
        t=${EPOCHREALTIME/./}
        echo "$((t / 1000)) $line"
        [[ $line == PT-DONE* ]] && break
    done < <(timeout $limit tail -n +1 -F "$serial" 2>/dev/null) >"$log"
    kill $! 2>/dev/null
    grep -q ' PT-DONE ' "$log" || fail "no PT-DONE within $limit s"
fi

# --- checks ---------------------------------------------------------------
# field LINE KEY prints the value of KEY=VALUE in LINE.
field() {
    local kv
    for kv in $1; do
        [ "${kv%%=*}" = "$2" ] && { echo "${kv#*=}"; return 0; }
    done
    return 1
}

start=$(grep -m1 ' PT-START ' "$log") || fail "no PT-START line"
done_line=$(grep -m1 ' PT-DONE ' "$log") || fail "no PT-DONE line"
[ "$(field "$done_line" status)" = ok ] || fail "guest reported: $done_line"
[ "$(grep -c ' PT-PHASE ' "$log")" = ${#plist[@]} ] || fail "expected ${#plist[@]} PT-PHASE lines"

boot_host_ms=$((${start%% *} - t0))
guest_boot_ms=$(field "$start" t_ms)
echo "boot: PT-START ${boot_host_ms} ms after launch (host), guest t_ms=$guest_boot_ms"
# The guest's clock starts with its kernel, after firmware and loading, so
# it should trail the host's.  Once, on a loaded host, it led by 20 s: its
# early boot clock is not to be trusted against the host's (docs/GUEST.md).
[ "$guest_boot_ms" -le "$boot_host_ms" ] ||
    echo "note: guest clock at PT-START is ahead of the host's elapsed time"

status=0
idx=0
while read -r line; do
    pname=$(field "$line" name) || fail "PT-PHASE without name: $line"
    for k in idx start_ms end_ms dur_ms ops reads writes errors iops avg_lat_us; do
        v=$(field "$line" $k) || fail "PT-PHASE without $k: $line"
        [[ $v =~ ^[0-9]+(\.[0-9]+)?$ ]] || fail "PT-PHASE $k=$v is not a number"
    done
    [ "$(field "$line" idx)" = $idx ] || fail "phase out of order: $line"
    [ "$pname" = "${plist[idx]%%:*}" ] || fail "phase $idx is $pname, scheduled ${plist[idx]}"
    ops=$(field "$line" ops)
    iops=$(field "$line" iops)
    errors=$(field "$line" errors)
    [ "$errors" = 0 ] || { echo "phase $idx $pname: $errors I/O errors"; status=1; }
    if [ "$pname" = idle ]; then
        [ "$ops" = 0 ] || { echo "phase $idx idle did $ops ops"; status=1; }
    elif [ "$ops" = 0 ]; then
        echo "phase $idx $pname: no I/O completed"
        status=1
    fi

    # Drift: guest duration against host arrival of BEGIN and end lines.
    host_end=${line%% *}
    begin=$(grep -m1 " PT-PHASE-BEGIN idx=$idx " "$log")
    host_dur=$((host_end - ${begin%% *}))
    guest_dur=$(field "$line" dur_ms)
    echo "phase $idx $pname: iops=$iops ops=$ops avg_lat_us=$(field "$line" avg_lat_us)" \
        "guest_ms=$guest_dur host_ms=$host_dur"
    # The guest's IOPS are only as good as its clock's rate; 10% is the
    # tolerance the end-to-end checks allow between guest and host figures.
    diff=$((guest_dur - host_dur))
    if [ $((${diff#-} * 10)) -gt "$host_dur" ]; then
        echo "phase $idx $pname: guest clock ran ${guest_dur} ms while the host saw ${host_dur} ms"
        status=1
    fi
    idx=$((idx + 1))
done < <(grep ' PT-PHASE ' "$log")

# What the end-to-end suite relies on libvirt for: block counters that see
# the guest's requests, both iothreads, and live poll-max-ns changes.
if [ $use_libvirt = 1 ]; then
    virsh=(virsh -q -c qemu:///system)
    stats=$("${virsh[@]}" domstats --iothread --block "$dom") || fail "virsh domstats failed"
    reads=0
    while read -r line; do reads=$((reads + $(field "$line" reads))); done < <(grep ' PT-PHASE ' "$log")
    rd_reqs=$(sed -n 's/^ *block\.0\.rd\.reqs=//p' <<<"$stats")
    echo "libvirt: block.0.rd.reqs=$rd_reqs, guest reads=$reads"
    [ "${rd_reqs:-0}" -ge "$reads" ] || { echo "block.0.rd.reqs below the guest's reads"; status=1; }
    grep -q '^ *iothread\.count=2$' <<<"$stats" || { echo "domstats lacks iothread.count=2"; status=1; }
    "${virsh[@]}" iothreadset "$dom" 1 --poll-max-ns 0 --live || { echo "iothreadset failed"; status=1; }
    stats=$("${virsh[@]}" domstats --iothread "$dom")
    if grep -q '^ *iothread\.1\.poll-max-ns=0$' <<<"$stats"; then
        echo "libvirt: iothreadset 1 --poll-max-ns 0 applied live"
    else
        echo "iothread 1 poll-max-ns not 0 after iothreadset"
        status=1
    fi
fi

[ $status = 0 ] && echo "PASS" || echo "FAIL"
exit $status
