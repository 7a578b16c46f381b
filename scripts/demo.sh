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
# Everything it started (QEMU, polltuned, the temporary directory with the
# database) is cleaned up when it ends, also on Ctrl-C.  The report stays,
# and so do the logs of the last run (each step's output, polltuned's,
# QEMU's and the guest's serial console), in BUILDDIR-logs: when a step
# fails, the demo says which, the command and its exit status, shows the
# end of that step's logs and where they all are.
#
# Environment:
#   PT_DEMO_SHORT=1      a 20-second schedule instead of 90 seconds
#   PT_DEMO_BUILDDIR=D   build directory (default build-demo; "build"
#                        reuses an existing developer build)
#   PT_DEMO_REPORT=FILE  where the report goes (default BUILDDIR/demo-report.html)
#   PT_DEMO_LOGS=D       where the logs go (default BUILDDIR-logs); the last
#                        run's are replaced at the start
set -eEuo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
builddir=${PT_DEMO_BUILDDIR:-build-demo}
case $builddir in /*) ;; *) builddir=$top/$builddir ;; esac
report=${PT_DEMO_REPORT:-$builddir/demo-report.html}
logs=${PT_DEMO_LOGS:-$builddir-logs}
case $logs in /*) ;; *) logs=$top/$logs ;; esac

if [ "${PT_DEMO_SHORT:-0}" = 1 ]; then
    phases=idle:3,qd1:7,qd16:7,idle:3
else
    phases=idle:10,qd1:35,qd16:35,idle:10
fi

# The step under way, and the logs that tell how it went.
step=starting
step_logs=()
say() { printf '\n==> %s\n' "$*"; }
begin() {
    step=$1; shift
    step_logs=("$@")
    say "$step${step_logs[*]:+ (log: ${step_logs[*]})}"
}
# What failed, the end of the step's logs, and where all the logs are.
report_failure() {
    local what=$1 f
    printf '\ndemo.sh: step "%s" failed: %s\n' "$step" "$what" >&2
    for f in "${step_logs[@]}"; do
        [ -s "$f" ] || { printf 'demo.sh: %s is empty\n' "$f" >&2; continue; }
        printf -- '--- last lines of %s:\n' "$f" >&2
        tail -n 15 "$f" | tr -d '\r' >&2
    done
    printf 'demo.sh: the logs of this run are kept in %s\n' "$logs" >&2
}
die() { report_failure "$*"; exit 1; }
trap 'rc=$?; report_failure "\`$BASH_COMMAND\` exited with status $rc"; exit $rc' ERR

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
    trap - INT TERM EXIT ERR
    # QEMU first, so that the daemon's last act is to find it gone, not to
    # restore values on a VM about to be killed anyway.
    stop "$qemu_pid" 3
    stop "$daemon_pid" 10
    # The database and the sockets go; the logs stay (report_failure and
    # the last lines say where).
    [ -n "$tmp" ] && rm -rf "$tmp"
    exit $rc
}
trap cleanup EXIT
trap 'trap - ERR; echo; echo "demo.sh: interrupted in step \"$step\"; cleaning up; logs in $logs"; exit 130' INT TERM

# The last run's logs, not a folder of some other use.
mkdir -p "$logs"
rm -f "$logs"/{install-deps,build,guest-build,polltuned,qemu,serial}.log

# --- 1. dependencies --------------------------------------------------------
begin "Installing dependencies (scripts/install-deps.sh)" "$logs/install-deps.log"
"$top/scripts/install-deps.sh" >"$logs/install-deps.log" 2>&1

# --- 2. build ---------------------------------------------------------------
begin "Building polltuned and polltunectl in $builddir" "$logs/build.log"
if [ ! -f "$builddir/build.ninja" ]; then
    meson setup "$builddir" "$top" >"$logs/build.log" 2>&1
fi
meson compile -C "$builddir" polltuned polltunectl >>"$logs/build.log" 2>&1
polltuned=$builddir/daemon/polltuned
polltunectl=$builddir/cli/polltunectl

# --- 3. guest ---------------------------------------------------------------
begin "Building the test guest (tests/guest/build.sh; cached)" "$logs/guest-build.log"
"$top/tests/guest/build.sh" >"$logs/guest-build.log" 2>&1

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

begin "Starting polltuned (database $tmp/history.db)" "$logs/polltuned.log"
"$polltuned" --foreground --config "$tmp/polltuned.conf" >"$logs/polltuned.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do
    [ -S "$sock" ] && break
    if ! kill -0 "$daemon_pid" 2>/dev/null; then
        rc=0
        wait "$daemon_pid" || rc=$?
        daemon_pid=
        die "polltuned exited with status $rc before it opened $sock"
    fi
    sleep 0.1
done
[ -S "$sock" ] || die "polltuned did not open $sock within 10 s"

begin "Running the guest: phases $phases" "$logs/qemu.log" "$logs/serial.log" "$logs/polltuned.log"
"$top/tests/guest/run-guest.sh" -n demo-vm -p "$phases" -q "$tmp/demo-vm.qmp" \
    -s "$logs/serial.log" 2>"$logs/qemu.log" &
qemu_pid=$!

# --- 6. status while the load runs ------------------------------------------
# The latest line the guest's load generator printed, as a progress note.
guest_progress() {
    local l
    # A failure in here is no step's: the guest has not printed yet.
    l=$(grep -a '^PT-' "$logs/serial.log" 2>/dev/null | tr -d '\r' | tail -n 1 || true)
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
rc=0
wait "$qemu_pid" || rc=$?
qemu_pid=
[ "$rc" = 0 ] || die "QEMU (tests/guest/run-guest.sh) exited with status $rc"

if grep -qa '^PT-PHASE ' "$logs/serial.log"; then
    grep -a '^PT-PHASE ' "$logs/serial.log" | tr -d '\r' |
        awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
               printf "guest phase %-5s %8s IOPS  avg latency %s us\n", f["name"], f["iops"], f["avg_lat_us"] }'
else
    echo "guest: no phase results in $logs/serial.log"
fi

# --- 7. report --------------------------------------------------------------
begin "Writing the report" "$logs/polltuned.log"
mkdir -p "$(dirname "$report")"
# No --since: the page spans the demo's history, not an hour with it in a sliver.
"$polltunectl" --socket "$sock" report -o "$report"
"$polltunectl" --socket "$sock" status | tail -n +1 | sed -n '/^Last decisions/,$p'
echo
echo "Report: $report"
echo "Logs:   $logs"
