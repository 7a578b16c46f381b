#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The chaos run (tests/chaos) over many seeds, one after the other, with a
# row per seed and the totals docs/BENCHMARKS.md records: seeds run, seeds
# failed, restore mismatches (a QEMU holding a triple that is neither its
# own original nor, while the daemon runs, a policy's: the invariant
# qemu-triple; originals-own, status showing another instance's original,
# is counted beside it), every other invariant that failed, and the time.
#
#   bench/chaos/chaos-seeds.sh [TEST_CHAOS [N [FIRST_SEED]]]
#
# TEST_CHAOS defaults to build-san/tests/chaos/test-chaos (the sanitized
# daemon, as in CI), N to 30 seeds, FIRST_SEED to a random one; the seeds
# are FIRST_SEED, FIRST_SEED+1, ...  PT_CHAOS_SECONDS sets each run's
# length (default 120).  The log of each failed seed is kept in
# $PT_CHAOS_BENCH_LOGS (default: a temporary folder, printed at the end).
# Exits 1 if any seed failed.
set -u

exe=${1:-build-san/tests/chaos/test-chaos}
n=${2:-30}
first=${3:-$(( (RANDOM << 16 | RANDOM) & 0x7fffffff ))}
secs=${PT_CHAOS_SECONDS:-120}
logs=${PT_CHAOS_BENCH_LOGS:-$(mktemp -d /tmp/pt-chaos-bench-XXXXXX)}

if [ ! -x "$exe" ]; then
    echo "chaos-seeds: $exe: not an executable; build build-san first or pass its path" >&2
    exit 2
fi
exe=$(cd "$(dirname "$exe")" && pwd)/$(basename "$exe")
# The test finds polltuned and its helpers from the build folder.
build=$(cd "$(dirname "$exe")/../.." && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$logs"

echo "chaos: $n seeds from $first, $secs s each, $exe"
echo "| seed | result | s | actions | qemu-triple | originals-own | other invariants failed |"
echo "|---:|---|---:|---:|---:|---:|---|"
start=$(date +%s)
failed=0
triple=0
own=0
declare -A other
for i in $(seq 0 $((n - 1))); do
    seed=$(( (first + i) & 0xffffffff ))
    log="$logs/seed-$seed.log"
    t0=$(date +%s)
    (cd "$build" && G_DEBUG=fatal-warnings PT_BUILD_ROOT="$build" PT_SOURCE_ROOT="$src" \
        G_TEST_SRCDIR="$src/tests" G_TEST_BUILDDIR="$build/tests" MALLOC_PERTURB_=0 \
        PT_CHAOS_SECONDS="$secs" "$exe" --tap --chaos-seed="$seed") >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    actions=$(sed -n 's/^# seed [0-9]*, [0-9]* s, \([0-9]*\) actions.*/\1/p' "$log")
    # "# FAILED invariant (N times), first at ..."
    nt=$(sed -n 's/^# FAILED qemu-triple (\([0-9]*\) times.*/\1/p' "$log")
    no=$(sed -n 's/^# FAILED originals-own (\([0-9]*\) times.*/\1/p' "$log")
    rest=$(sed -n 's/^# FAILED \([a-z-]*\) (\([0-9]*\) times.*/\1 \2/p' "$log" |
           grep -v -E '^(qemu-triple|originals-own) ' || true)
    while read -r inv cnt; do
        [ -n "$inv" ] && other[$inv]=$(( ${other[$inv]:-0} + cnt ))
    done <<<"$rest"
    triple=$((triple + ${nt:-0}))
    own=$((own + ${no:-0}))
    if [ $rc -eq 0 ]; then
        result=ok
        rm -f "$log"
    else
        failed=$((failed + 1))
        result="FAIL (exit $rc)"
        # A run that died early names why in its last error line.
        [ -z "$actions" ] && rest="${rest:+$rest; }$(grep -m1 -E 'ERROR|Bail out|No such|not found' "$log" | cut -c1-120)"
    fi
    echo "| $seed | $result | $((t1 - t0)) | ${actions:-?} | ${nt:-0} | ${no:-0} | $(echo "$rest" | paste -sd, -) |"
done
end=$(date +%s)
echo
echo "seeds run: $n"
echo "seeds failed: $failed"
echo "restore mismatches (qemu-triple): $triple"
echo "originals-own: $own"
for inv in "${!other[@]}"; do
    echo "$inv: ${other[$inv]}"
done
echo "duration: $(( (end - start) / 60 )) min $(( (end - start) % 60 )) s"
[ $failed -gt 0 ] && echo "logs of the failed seeds: $logs"
[ $failed -eq 0 ] && rmdir "$logs" 2>/dev/null
exit $(( failed > 0 ))
