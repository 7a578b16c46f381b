#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Install, build and run polltune's whole test suite.
#
# Three builds, each from scratch in its own folder under the source tree:
#   build       gcc, -Werror: every suite but chaos
#   build-san   gcc with ASan+UBSan, -Werror: every suite but the slow e2e
#               and fault; chaos runs here only, so its daemon is sanitized
#   build-fuzz  clang with libFuzzer, -Werror, every library instrumented: the
#               fuzz targets, bounded in time, each held to its coverage floor
#               (tests/fuzz/coverage-floor.txt)
# The last line printed is "N passed, N failed, N skipped", summed over all
# three from meson's testlog.json files.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

"$top/scripts/install-deps.sh" || { echo "install-deps failed"; echo "0 passed, 1 failed"; exit 1; }

logs=()
status=0
broken_log=$(mktemp)    # one line per build that failed before any test ran
trap 'rm -f "$broken_log"' EXIT

# "DIR: STEP failed: the first error line" for the summary.
build_broken() {
    local dir=$1 step=$2 log=$3 first
    first=$(grep -m1 -E 'error:|ERROR|Error' "$log" || tail -n1 "$log")
    echo "$dir: $step failed: $first" >>"$broken_log"
    status=1
}

run_build() {
    local dir=$1; shift
    local setup_args=() test_args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup_args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    test_args=("$@")

    echo "=== $dir: meson setup ${setup_args[*]}"
    rm -rf "$dir"
    if ! meson setup "$dir" "${setup_args[@]}" >"$dir.setup.log" 2>&1; then
        cat "$dir.setup.log"; build_broken "$dir" "meson setup" "$dir.setup.log"; return
    fi
    if ! meson compile -C "$dir" 2>&1 | tee "$dir.compile.log"; then
        build_broken "$dir" "meson compile" "$dir.compile.log"; return
    fi
    echo "=== $dir: meson test ${test_args[*]}"
    meson test -C "$dir" --print-errorlogs "${test_args[@]}" || status=1
    logs+=("$dir/meson-logs/testlog.json")
}

run_build build -Dwerror=true -- --no-suite chaos
run_build build-san -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false \
    -- --no-suite e2e --no-suite fault --no-suite debian
if command -v clang >/dev/null; then
    CC=clang run_build build-fuzz -Dwerror=true -Dfuzzing=true -Dfuzz-seconds="${PT_FUZZ_SECONDS:-20}" \
        -- --suite fuzz
fi

# The closing lines: every failed test by name with its first error line,
# then "N passed, N failed, N skipped", summed over the builds from meson's
# testlog.json files; a build that did not compile counts as one failure.
python3 - "$broken_log" "${logs[@]}" <<'PY'
import json, re, sys
passed = skipped = 0
failures = [l.rstrip("\n") for l in open(sys.argv[1]) if l.strip()]
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
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                res = r.get("result")
                if res in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif res == "SKIP":
                    skipped += 1
                else:
                    failures.append(f"{build}: {r.get('name')}: {res}: {first_line(r)}")
    except OSError as e:
        failures.append(f"{path}: {e.strerror}")
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
