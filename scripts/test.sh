#!/bin/bash
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
broken=0     # builds that failed before any test could run

run_build() {
    local dir=$1; shift
    local setup_args=() test_args=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do setup_args+=("$1"); shift; done
    [ $# -gt 0 ] && shift
    test_args=("$@")

    echo "=== $dir: meson setup ${setup_args[*]}"
    rm -rf "$dir"
    if ! meson setup "$dir" "${setup_args[@]}" >"$dir.setup.log" 2>&1; then
        cat "$dir.setup.log"; status=1; broken=$((broken + 1)); return
    fi
    if ! meson compile -C "$dir"; then
        status=1; broken=$((broken + 1)); return
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

PT_BROKEN_BUILDS=$broken python3 - "${logs[@]}" <<'PY'
import json, os, sys
passed = skipped = 0
failed = int(os.environ.get("PT_BROKEN_BUILDS", "0"))
for path in sys.argv[1:]:
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line).get("result")
                if r in ("OK", "EXPECTEDFAIL"):
                    passed += 1
                elif r == "SKIP":
                    skipped += 1
                else:
                    failed += 1
    except OSError as e:
        print(f"{path}: {e.strerror}")
        failed += 1
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
PY
py=$?
[ $status -eq 0 ] && status=$py
exit $status
