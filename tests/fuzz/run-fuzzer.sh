#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Run one libFuzzer binary for a bounded time over a scratch copy of its seed
# corpora, so the source tree is never written, and check the edge coverage
# it reached against the target's floor in coverage-floor.txt.  A crash
# leaves its input in the build directory, to be kept under
# tests/fuzz/corpus/ once fixed.
#
#   run-fuzzer.sh EXE NAME SECONDS ARTIFACT-DIR FLOOR-FILE CORPUS...
#
# A CORPUS written stream:DIR holds raw QMP streams: each file is copied
# with a leading zero byte, the chunk-size byte the stream harnesses read
# first (zero: feed the whole input at once).
set -eu
exe=$1 name=$2 seconds=$3 out=$4 floors=$5
shift 5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$out"
n=0
for dir in "$@"; do
    n=$((n + 1))
    case $dir in
    stream:*)
        dir=${dir#stream:}
        for f in "$dir"/*; do
            [ -f "$f" ] || continue
            { printf '\000'; cat "$f"; } >"$work/corpus/s$n-$(basename "$f")"
        done ;;
    *)
        for f in "$dir"/*; do
            [ -f "$f" ] || continue
            cp "$f" "$work/corpus/c$n-$(basename "$f")"
        done ;;
    esac
done

floor=$(awk -v t="$name" '$1 == t { print $2 }' "$floors")
floor_seconds=$(awk '$1 == "seconds" { print $2 }' "$floors")
if [ -z "$floor" ] || [ -z "$floor_seconds" ]; then
    echo "fuzz-$name: no coverage floor for $name, or no seconds line, in $floors" >&2
    exit 1
fi

rc=0
"$exe" -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/" "$work/corpus" \
    2>"$work/log" || rc=$?
cat "$work/log" >&2
[ $rc -eq 0 ] || exit $rc

# libFuzzer's status lines carry "cov: N", the edges covered so far; the
# last one is what the run reached.
cov=$(sed -n 's/.* cov: \([0-9][0-9]*\) .*/\1/p' "$work/log" | tail -n 1)
if [ -z "$cov" ]; then
    echo "fuzz-$name: no cov: figure in libFuzzer's output" >&2
    exit 1
fi
# The floors are what a run of floor_seconds reaches; a shorter run is not
# held to them, and says so.
if [ "$seconds" -lt "$floor_seconds" ]; then
    echo "fuzz-$name: coverage $cov; floor $floor not checked: the run lasted $seconds s, the floor is for $floor_seconds s or more"
    exit 0
fi
if [ "$cov" -lt "$floor" ]; then
    echo "fuzz-$name: coverage $cov is under the floor $floor ($floors)" >&2
    exit 1
fi
echo "fuzz-$name: coverage $cov, floor $floor"
