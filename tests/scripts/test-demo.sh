#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# scripts/demo.sh when a step fails: it says which step, the command and
# its exit status, shows the end of that step's log, and keeps the logs
# (the step's output; polltuned's, QEMU's and the serial console's)
# where it says, while the rest of what it started is cleaned up.
#
# The demo runs from a copy of the tree whose installer, guest build and
# guest runner are stubs that fail on demand, with this build's polltuned
# and polltunectl and a meson that does nothing: the real ones take
# minutes and need the network.
set -uo pipefail

build=${PT_BUILD_ROOT:?}
src=${PT_SOURCE_ROOT:?}
work=$(mktemp -d "${TMPDIR:-/tmp}/pt-demo-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
check() {   # check DESCRIPTION COMMAND...
    local what=$1; shift
    if "$@"; then ok "$what"; else not_ok "$what"; fi
}

# The tree: demo.sh and stubs where the slow parts were.
top=$work/top
mkdir -p "$top/scripts" "$top/tests/guest" "$work/bin" "$work/build/daemon" "$work/build/cli"
cp "$src/scripts/demo.sh" "$top/scripts/"
cat >"$top/scripts/install-deps.sh" <<'STUB'
#!/bin/sh
echo "all dependencies present"
STUB
cat >"$top/tests/guest/build.sh" <<'STUB'
#!/bin/sh
echo "fetching linux-image-cloud-amd64"
if [ "${PT_STUB_FAIL:-}" = guest-build ]; then
    echo "E: Failed to fetch linux-image-cloud-amd64: 404  Not Found" >&2
    exit 3
fi
STUB
# Like run-guest.sh: -s the serial console, -q the QMP socket; QEMU's
# errors on stderr.  It fails the way a QEMU refusing its disk does.
cat >"$top/tests/guest/run-guest.sh" <<'STUB'
#!/bin/sh
serial=
while getopts p:d:s:q:i:P:a:n:A:c:M:m:k:N opt; do
    case $opt in s) serial=$OPTARG ;; esac
done
echo "SeaBIOS (version 1.16.2-debian-1.16.2-1)" >"$serial"
echo "Booting from ROM..." >>"$serial"
echo "qemu-system-x86_64: -drive file=guest.img: Could not open 'guest.img': Permission denied" >&2
exit 1
STUB
chmod +x "$top/scripts/"*.sh "$top/tests/guest/"*.sh
printf '#!/bin/sh\nexit 0\n' >"$work/bin/meson"
chmod +x "$work/bin/meson"
touch "$work/build/build.ninja"
ln -s "$build/daemon/polltuned" "$work/build/daemon/polltuned"
ln -s "$build/cli/polltunectl" "$work/build/cli/polltunectl"

run_demo() {   # run_demo OUT [VAR=VALUE...]
    local out=$1; shift
    env PATH="$work/bin:$PATH" PT_DEMO_BUILDDIR="$work/build" TMPDIR="$work" "$@" \
        "$top/scripts/demo.sh" >"$out" 2>&1 </dev/null
}
has() { grep -qF -- "$2" "$1" || { echo "# $1 lacks: $2"; sed 's/^/#   /' "$1"; return 1; }; }
logs=$work/build-logs

echo "1..12"

# A step before any daemon: the guest's build fails with status 3.
run_demo "$work/guest.out" PT_STUB_FAIL=guest-build
rc=$?
check "a failed guest build exits with its status ($rc)" test "$rc" = 3
check "it names the step, the command and the status" \
    has "$work/guest.out" 'step "Building the test guest (tests/guest/build.sh; cached)" failed: `"$top/tests/guest/build.sh" > "$logs/guest-build.log" 2>&1` exited with status 3'
check "it shows the end of the step's log" \
    has "$work/guest.out" "E: Failed to fetch linux-image-cloud-amd64: 404  Not Found"
check "it says where the logs are" \
    has "$work/guest.out" "the logs of this run are kept in $logs"
check "the guest build's log is kept" has "$logs/guest-build.log" "404  Not Found"

# QEMU fails once polltuned runs.
run_demo "$work/qemu.out"
rc=$?
check "a failed QEMU exits 1 ($rc)" test "$rc" = 1
check "it names the step and QEMU's status" \
    has "$work/qemu.out" 'failed: QEMU (tests/guest/run-guest.sh) exited with status 1'
check "it shows the end of QEMU's log and the serial console" \
    has "$work/qemu.out" "Could not open 'guest.img': Permission denied"
check "QEMU's log, the serial console and polltuned's log are kept" \
    test -s "$logs/qemu.log" -a -s "$logs/serial.log" -a -s "$logs/polltuned.log"
check "polltuned's log is the daemon's" has "$logs/polltuned.log" "running: mode enforce"
# The rest is cleaned up: no daemon left, no temporary folder.
# ("polltune[d]" matches the daemon's command line, not pgrep's own.)
no_daemon() { ! pgrep -f "polltune[d] --foreground --config $work/" >/dev/null; }
no_tmp() { ! ls -d "$work"/polltune-demo.* >/dev/null 2>&1; }
check "polltuned was stopped" no_daemon
check "the temporary folder is gone" no_tmp
exit $failed
