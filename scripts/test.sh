#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install, build and run polltune's whole test suite.
#
# Three builds, each from scratch in its own folder under the source tree:
#   build       gcc, -Werror: every suite but chaos; bench-smoke runs every
#               benchmark once at a tiny size, so one that no longer runs fails
#   build-san   gcc with ASan+UBSan, -Werror: every suite but the slow e2e
#               and fault, and bench-smoke; chaos runs here only, so its
#               daemon is sanitized: its kept seeds and a few drawn from the
#               commit (printed)
#   build-fuzz  clang with libFuzzer, -Werror, every library instrumented: the
#               fuzz targets, bounded in time, each held to its coverage floor
#               (tests/fuzz/coverage-floor.txt)
# Two QEMU generations: the runs above use the host's QEMU 7.2 and libvirt 9
# (Debian 12); then the suites that start a real QEMU or libvirtd run again
# on QEMU 10.0 and libvirt 11 from a Debian 13 root (tests/qemu10/), in
# build (qmp, probe, daemon, fault, libvirt, test-e2e-qmp, test-e2e-libvirt,
# test-e2e-qemu10) and build-san (chaos, one seed), through the meson test setup "qemu10", whose
# results are DIR/meson-logs/testlog-qemu10.json.
# In each build the tests declared is_parallel: false (a real QEMU,
# libvirtd, the package's container, a timed chaos run) run one after
# another beside the rest, which meson runs two at a time (run_tests).
# The last line printed is "N passed, N failed, N skipped", summed over all
# runs from meson's testlog files; each failure is named with its build and
# the QEMU it ran on.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

"$top/scripts/install-deps.sh" || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }
t_deps=$SECONDS

logs=()
status=0
broken_log=$(mktemp)    # one line per build that failed before any test ran
times_log=$(mktemp)     # wall time of each step, printed with the summary
trap 'rm -f "$broken_log" "$times_log"' EXIT


# "DIR: STEP failed: the first error line" for the summary.
build_broken() {
    local dir=$1 step=$2 log=$3 first
    first=$(grep -m1 -E 'error:|ERROR|Error' "$log" || tail -n1 "$log")
    echo "$dir: $step failed: $first" >>"$broken_log"
    status=1
}

# run_tests DIR [SETUP_ARG ...] -- TEST ...: the tests named, in two
# streams side by side.  Meson runs a test declared is_parallel: false
# alone: it first waits for every running test, so one behind a
# four-minute matrix left a core idle for those four minutes.  Here those
# tests (a real QEMU, libvirtd, a container, a timed chaos run) run one
# after another in a stream of their own, beside the others, which meson
# runs two at a time.  Each stream has its own log: testlog[-SETUP].json
# and testlog-alone[-SETUP].json.
run_tests() {
    local dir=$1; shift
    local setup=() names=() alone=() others=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    names=("$@")
    [ ${#names[@]} -gt 0 ] || return
    mapfile -t alone < <(meson introspect --tests "$dir" | python3 -c '
import json, sys
want = set(sys.argv[1:])
for t in json.load(sys.stdin):
    if t["name"] in want and not t["is_parallel"]:
        print(t["name"])' "${names[@]}")
    mapfile -t others < <(printf '%s\n' "${names[@]}" | grep -vxF -f <(printf '%s\n' "${alone[@]}" ""))
    local pid=
    if [ ${#alone[@]} -gt 0 ]; then
        meson test -C "$dir" --no-rebuild --print-errorlogs --logbase testlog-alone \
            "${setup[@]}" "${alone[@]}" >"$dir.alone.log" 2>&1 &
        pid=$!
    fi
    if [ ${#others[@]} -gt 0 ]; then
        meson test -C "$dir" --no-rebuild --print-errorlogs "${setup[@]}" "${others[@]}" || status=1
    fi
    if [ -n "$pid" ]; then
        wait "$pid" || status=1
        echo "=== $dir: the tests that run alone: ${alone[*]}"
        cat "$dir.alone.log"
    fi
    local suffix=
    [ ${#setup[@]} -gt 0 ] && suffix=-${setup[-1]}
    [ ${#others[@]} -gt 0 ] && logs+=("$dir/meson-logs/testlog$suffix.json")
    [ ${#alone[@]} -gt 0 ] && logs+=("$dir/meson-logs/testlog-alone$suffix.json")
}

# The names of the tests `meson test ARGS` would run in built DIR.
test_names() {
    local dir=$1; shift
    meson test -C "$dir" --no-rebuild --list "$@" 2>/dev/null | sed -n 's|^.* / ||p'
}

run_build() {
    local dir=$1; shift
    local setup_args=() test_args=() names=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup_args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    test_args=("$@")

    echo "=== $dir: meson setup ${setup_args[*]}"
    rm -rf "$dir"
    if ! meson setup "$dir" "${setup_args[@]}" >"$dir.setup.log" 2>&1; then
        cat "$dir.setup.log"; build_broken "$dir" "meson setup" "$dir.setup.log"; return
    fi
    local t0=$SECONDS
    if ! meson compile -C "$dir" 2>&1 | tee "$dir.compile.log"; then
        build_broken "$dir" "meson compile" "$dir.compile.log"; return
    fi
    local t1=$SECONDS
    echo "=== $dir: meson test ${test_args[*]}"
    mapfile -t names < <(test_names "$dir" "${test_args[@]}")
    run_tests "$dir" -- "${names[@]}"
    echo "$dir: compile $((t1 - t0)) s, tests $((SECONDS - t1)) s" >>"$times_log"
}

# The chaos suite replays its kept seeds and PT_CHAOS_RUNS (default 3) more
# drawn from the commit, 8 hex digits each: the same commit runs the same
# schedules, a new one tries new ones, and a failure names its seed.
chaos_seeds=${PT_CHAOS_SEEDS:-}
if [ -z "$chaos_seeds" ]; then
    rev=$(git -C "$top" rev-parse HEAD 2>/dev/null || od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
    for i in $(seq 0 $((${PT_CHAOS_RUNS:-3} - 1))); do
        chaos_seeds+="${chaos_seeds:+,}$((16#${rev:$((i * 8 % 40)):8}))"
    done
fi
echo "=== chaos seeds: $chaos_seeds (from ${rev:-PT_CHAOS_SEEDS}); replay one with" \
     "PT_CHAOS_SEED=N meson test -C build-san test-chaos, or -Dchaos-seeds=N"

run_build build -Dwerror=true -- --no-suite chaos
run_build build-san -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
    -Dchaos-seeds="$chaos_seeds" -- --no-suite e2e --no-suite fault --no-suite debian \
    --no-suite bench-smoke
if command -v clang >/dev/null; then
    CC=clang run_build build-fuzz -Dwerror=true -Dfuzzing=true -Dfuzz-seconds="${PT_FUZZ_SECONDS:-20}" \
        -- --suite fuzz
fi

# --- the second QEMU generation ------------------------------------------
# The Debian 13 root (made once, cached in /var/cache/polltune, checked each
# run); its versions label the results.  Without root privileges it cannot
# be made or entered: the run is then reported skipped, saying why.
qemu10_skipped=0
qemu10_label=
qemu10_root() {
    local out
    if [ "$(id -u)" -ne 0 ]; then
        echo "=== QEMU 10 run skipped: the Debian 13 root needs root privileges"
        qemu10_skipped=1
        return 1
    fi
    echo "=== QEMU 10: tests/qemu10/make-root.sh"
    if ! out=$("$top/tests/qemu10/make-root.sh" 2>&1); then
        echo "$out"
        echo "qemu10 root: tests/qemu10/make-root.sh failed: $(echo "$out" | grep -m1 'make-root.sh:')" >>"$broken_log"
        status=1
        return 1
    fi
    echo "$out" | tail -n 3
    qemu10_label="QEMU $(echo "$out" | sed -n 's/^QEMU=//p'), libvirt $(echo "$out" | sed -n 's/^LIBVIRT=//p')"
}

# run_qemu10 DIR [--suite S ...] [-- TEST ...]: the tests of those suites,
# and the tests named, once more under the qemu10 setup in a built DIR.
run_qemu10() {
    local dir=$1; shift
    local select=() names=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do select+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    names=("$@")
    [ -f "$dir/build.ninja" ] && compgen -G "$dir/meson-logs/testlog*.json" >/dev/null || return
    if [ ${#select[@]} -gt 0 ]; then
        mapfile -t -O ${#names[@]} names < <(test_names "$dir" "${select[@]}")
    fi
    echo "=== $dir: meson test --setup qemu10 (${qemu10_label}): ${names[*]}"
    local t0=$SECONDS
    run_tests "$dir" --setup qemu10 -- "${names[@]}"
    echo "$dir on QEMU 10: tests $((SECONDS - t0)) s" >>"$times_log"
}

if qemu10_root; then
    run_qemu10 build --suite qmp --suite probe --suite daemon --suite fault --suite libvirt \
        -- test-e2e-qmp test-e2e-libvirt test-e2e-qemu10
    # One chaos run there, as before, on the commit's first seed: the kept
    # and the other seeds ran on the host's QEMU above.
    run_qemu10 build-san -- "test-chaos-seed-${chaos_seeds%%,*}"
fi
host_label="QEMU $(qemu-system-x86_64 --version 2>/dev/null | sed -n 's/^QEMU emulator version \([0-9.]*\).*/\1/p'),\
 libvirt $(libvirtd --version 2>/dev/null | sed -n 's/.* \([0-9][0-9.]*\)$/\1/p')"

# The closing lines: every failed test by name with its first error line,
# then "N passed, N failed, N skipped", summed over the builds from meson's
# testlog.json files; a build that did not compile counts as one failure.
echo "dependencies $t_deps s; whole run $SECONDS s" >>"$times_log"
PT_TIMES=$times_log PT_HOST_LABEL=$host_label PT_QEMU10_LABEL=$qemu10_label PT_QEMU10_SKIPPED=$qemu10_skipped \
python3 - "$broken_log" "${logs[@]}" <<'PY'
import json, os, re, sys
passed = skipped = 0
failures = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
# Results are labelled with the QEMU generation they ran on: a testlog of
# the qemu10 setup ran on the Debian 13 root, the others on the host's.
labels = {"": os.environ.get("PT_HOST_LABEL", ""), "qemu10": os.environ.get("PT_QEMU10_LABEL", "")}
per_run = {}     # run -> [passed, failed, skipped], both streams of a run together
per_suite = {}   # run -> suite -> test seconds
slowest = []
if os.environ.get("PT_QEMU10_SKIPPED") == "1":
    skipped += 1
first_error = re.compile(r"Bail out!|ERROR|FAIL|not ok|error:|Error|Traceback|AssertionError")

def first_line(r):
    text = (r.get("stdout") or "") + "\n" + (r.get("stderr") or "")
    lines = [l.strip() for l in text.splitlines() if l.strip()]
    for l in lines:
        if first_error.search(l):
            return l[:300]
    return lines[-1][:300] if lines else r.get("result", "?")

for path in sys.argv[2:]:
    build = path.split("/meson-logs/")[0]
    setup = re.sub(r"^testlog(-alone)?-?|\.json$", "", os.path.basename(path))
    # The fuzz build starts no QEMU: its name alone says what it is.
    run = build if build == "build-fuzz" else f"{build} on {labels.get(setup) or setup}"
    counts = per_run.setdefault(run, [0, 0, 0])
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                res = r.get("result")
                # Where the time goes: test seconds per suite (the first
                # one a test names, e.g. "daemon") and the slowest tests.
                suite = (r.get("name", "").split(" / ")[0].split(":")[-1].split("+")[0]) or "?"
                secs = r.get("duration") or 0.0
                per_suite.setdefault(run, {}).setdefault(suite, 0.0)
                per_suite[run][suite] += secs
                slowest.append((secs, f"{run}: {r.get('name', '?').split(' / ')[-1]}"))
                if res in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                    counts[0] += 1
                elif res == "SKIP":
                    skipped += 1
                    counts[2] += 1
                else:
                    counts[1] += 1
                    failures.append(f"{run}: {r.get('name')}: {res}: {first_line(r)}")
    except OSError as e:
        failures.append(f"{path}: {e.strerror}")
print("Test seconds per suite (the streams of a run overlap, so these add to more than its wall time):")
for run, suites in per_suite.items():
    print(f"  {run}: " + ", ".join(f"{k} {v:.0f}" for k, v in sorted(suites.items(), key=lambda kv: -kv[1])))
print("Slowest tests: " + ", ".join(f"{n} {t:.0f}s" for t, n in sorted(slowest, reverse=True)[:8]))
if os.environ.get("PT_TIMES"):
    print("Wall time: " + "; ".join(l.strip() for l in open(os.environ["PT_TIMES"]) if l.strip()))
print("Per run:")
for run, counts in per_run.items():
    print(f"  {run}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped")
if failures:
    print("Failed:")
    for f in failures:
        print(f"  {f}")
print(f"{passed} passed, {len(failures)} failed, {skipped} skipped")
sys.exit(1 if failures else 0)
PY
py=$?
[ $status -eq 0 ] && status=$py
exit $status
