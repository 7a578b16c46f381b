#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# polltune in two minutes: install, build, and tune a real VM.
#
# On a fresh Debian 12 machine, as root, from the checkout:
#   ./scripts/demo.sh
#
# 1. installs the dependencies (scripts/install-deps.sh);
# 2. builds polltuned and polltunectl (meson, in build-demo/);
# 3. builds the test guest (tests/guest/build.sh: a Debian kernel and a
#    small initramfs with a load generator; cached after the first run);
# 4. boots it under QEMU with its disk on an iothread and a load schedule:
#    idle, then random 4 KiB reads at queue depth 1, then at 16, then idle;
# 5. starts polltuned on a sqlite database in a temporary directory,
#    watching the guest's QMP socket;
# 6. shows `polltunectl status` every 2 seconds while the load runs;
# 7. writes the HTML report and prints where it is.
#
# Everything it started (QEMU, polltuned, the temporary directory) is
# cleaned up when it ends, also on Ctrl-C; only the report stays.
#
# Environment:
#   PT_DEMO_SHORT=1      a 20-second schedule instead of 90 seconds
#   PT_DEMO_BUILDDIR=D   build directory (default build-demo; "build"
#                        reuses an existing developer build)
#   PT_DEMO_REPORT=FILE  where the report goes (default BUILDDIR/demo-report.html)
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${PT_DEMO_BUILDDIR:-build-demo}
case $builddir in /*) ;; *) builddir=$top/$builddir ;; esac
report=${PT_DEMO_REPORT:-$builddir/demo-report.html}

if [ "${PT_DEMO_SHORT:-0}" = 1 ]; then
    phases=idle:3,qd1:7,qd16:7,idle:3
else
    phases=idle:10,qd1:35,qd16:35,idle:10
fi

say() { printf '\n==> %s\n' "$*"; }
die() { printf 'demo.sh: %s\n' "$*" >&2; exit 1; }

tmp=
qemu_pid=
daemon_pid=
# SIGTERM, then SIGKILL after @2 seconds.  QEMU 7.2 under TCG has been seen
# to hang for good in its shutdown when SIGTERM arrives in mid-I/O.
stop() {
    local pid=$1 grace=$2 i=0
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
    kill "$pid" 2>/dev/null || true
    while kill -0 "$pid" 2>/dev/null && [ $i -lt $((grace * 10)) ]; do
        sleep 0.1
        i=$((i + 1))
    done
    kill -9 "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}
cleanup() {
    local rc=$?
    trap - INT TERM EXIT
    # QEMU first, so that the daemon's last act is to find it gone, not to
    # restore values on a VM about to be killed anyway.
    stop "$qemu_pid" 3
    stop "$daemon_pid" 10
    [ -n "$tmp" ] && rm -rf "$tmp"
    exit $rc
}
trap cleanup EXIT
trap 'echo; echo "demo.sh: interrupted, cleaning up"; exit 130' INT TERM

# --- 1. dependencies --------------------------------------------------------
say "Installing dependencies (scripts/install-deps.sh)"
"$top/scripts/install-deps.sh"

# --- 2. build ---------------------------------------------------------------
say "Building polltuned and polltunectl in $builddir"
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" "$top" >/dev/null
fi
meson compile -C "$builddir" polltuned polltunectl >/dev/null
polltuned=$builddir/daemon/polltuned
polltunectl=$builddir/cli/polltunectl

# --- 3. guest ---------------------------------------------------------------
say "Building the test guest (tests/guest/build.sh; cached)"
"$top/tests/guest/build.sh" >/dev/null

# --- 4 and 5. daemon and guest ----------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/polltune-demo.XXXXXX")
sock=$tmp/control.sock
cat >"$tmp/polltuned.conf" <<EOF
[daemon]
interval = 1s
database = $tmp/history.db
control-socket = $sock
# No HTTP metrics endpoint: the demo must not take a port.
metrics-listen =

[targets]
# Direct QMP only, so the demo does not depend on libvirtd.
libvirt = false
qmp-globs = $tmp/*.qmp

[policy]
default = adaptive:balanced
EOF

say "Starting polltuned (database $tmp/history.db)"
"$polltuned" --foreground --config "$tmp/polltuned.conf" >"$tmp/polltuned.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
    [ -S "$sock" ] && break
    kill -0 "$daemon_pid" 2>/dev/null || { cat "$tmp/polltuned.log"; die "polltuned exited"; }
    sleep 0.1
done
[ -S "$sock" ] || die "polltuned did not open $sock"

say "Booting the guest: phases $phases"
"$top/tests/guest/run-guest.sh" -n demo-vm -p "$phases" -q "$tmp/demo-vm.qmp" \
    -s "$tmp/serial.log" 2>"$tmp/qemu.log" &
qemu_pid=$!

# --- 6. status while the load runs ------------------------------------------
# The latest line the guest's load generator printed, as a progress note.
guest_progress() {
    local l
    l=$(grep -a '^PT-' "$tmp/serial.log" 2>/dev/null | tr -d '\r' | tail -n 1) || true
    case $l in
    PT-PHASE-BEGIN*) echo "guest: phase ${l#*name=}" | cut -d' ' -f1-3 ;;
    PT-TICK*) echo "guest: ${l#PT-TICK }" ;;
    PT-PHASE\ *) echo "guest: finished ${l#PT-PHASE }" | cut -d' ' -f1-4 ;;
    '') echo "guest: booting" ;;
    *) echo "guest: ${l%% *}" ;;
    esac
}

start=$(date +%s)
while kill -0 "$qemu_pid" 2>/dev/null; do
    if [ -t 1 ]; then printf '\033[H\033[2J'; else echo; echo "----"; fi
    echo "polltune demo · $(($(date +%s) - start)) s · schedule $phases · Ctrl-C stops"
    guest_progress
    echo
    "$polltunectl" --socket "$sock" status 2>&1 || true
    sleep 2
done
wait "$qemu_pid" || die "QEMU failed: $(tail -n 5 "$tmp/qemu.log")"
qemu_pid=

grep -a '^PT-PHASE ' "$tmp/serial.log" | tr -d '\r' |
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
           printf "guest phase %-5s %8s IOPS  avg latency %s us\n", f["name"], f["iops"], f["avg_lat_us"] }'

# --- 7. report --------------------------------------------------------------
say "Writing the report"
mkdir -p "$(dirname "$report")"
# No --since: the page spans the demo's history, not an hour with it in a sliver.
"$polltunectl" --socket "$sock" report -o "$report"
"$polltunectl" --socket "$sock" status | tail -n +1 | sed -n '/^Last decisions/,$p'
echo
echo "Report: $report"
