#!/bin/sh
# Run one libFuzzer binary for a bounded time over a scratch copy of its seed
# corpus, so the source tree is never written.  A crash leaves its input in
# the build directory, to be kept under tests/fuzz/corpus/ once fixed.
set -eu
exe=$1 corpus=$2 seconds=$3 out=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$out"
cp "$corpus"/* "$work/corpus/"
"$exe" -max_total_time="$seconds" -rss_limit_mb=1024 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$out/" "$work/corpus"
