#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The reduced scenario matrix over several seeds, one row per seed and a
# mean row.  One seed's share of cells within 3% of the oracle moves by up
# to 5 points with the noise draw (docs/BENCHMARKS.md), so a policy change
# is judged here, not on one run.
#
#   bench/pollsim/matrix-seeds.sh [POLLSIM [SEEDS]]
#
# POLLSIM defaults to build/bench/pollsim/pollsim, SEEDS to "1 2 3 4".
# Extra pollsim options can be passed in $POLLSIM_OPTS (e.g.
# "--qemu-model=10").  Exits 1 if a run could not be parsed.
set -eu

pollsim=${1:-build/bench/pollsim/pollsim}
seeds=${2:-1 2 3 4}
opts=${POLLSIM_OPTS:-}
out=$(mktemp)
rows=$(mktemp)
trap 'rm -f "$out" "$rows"' EXIT

if [ ! -x "$pollsim" ]; then
    echo "matrix-seeds: $pollsim: not an executable; build first or pass its path" >&2
    exit 1
fi

echo "| seed | within 3% | p5 | worst | cells > 3% below the better baseline | mean objective | qemu-default | p95 writes per change at +-50% |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in $seeds; do
    # pollsim exits 1 while a goal fails: that is the normal case here.
    # shellcheck disable=SC2086
    "$pollsim" --matrix --seed="$s" $opts >"$out" 2>&1 || true
    row=$(awk -v seed="$s" '
        /^adaptive: .* of cells within 3% of the oracle/ {
            for (i = 1; i <= NF; i++) {
                if ($i == "adaptive:") share = $(i + 1)
                if ($i == "p5") p5 = $(i + 1)
                if ($i == "worst") worst = $(i + 1)
            }
        }
        /no cell > 3% below the better trivial baseline/ {
            if (match($0, /cells below: adaptive [0-9]+/))
                below = substr($0, RSTART + 22, RLENGTH - 22)
        }
        /beats both trivial baselines in aggregate/ {
            if (match($0, /mean objective: adaptive [0-9.]+/))
                obj = substr($0, RSTART + 25, RLENGTH - 25)
            if (match($0, /qemu-default [0-9.]+/))
                def = substr($0, RSTART + 13, RLENGTH - 13)
        }
        /p95 writes per workload change <= 3 at/ {
            if (match($0, /p95 at \+-50%: adaptive [0-9]+/))
                p95 = substr($0, RSTART + 23, RLENGTH - 23)
        }
        END {
            gsub(/[,;]/, "", share); gsub(/[,;]/, "", p5); gsub(/[,;]/, "", worst)
            if (share == "" || worst == "" || obj == "" || p95 == "")
                exit 1
            printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", seed, share, p5, worst, below, obj, def, p95
        }' "$out") || {
        echo "matrix-seeds: seed $s: could not read pollsim's summary; its output:" >&2
        tail -5 "$out" >&2
        exit 1
    }
    echo "$row"
    echo "$row" >>"$rows"
done
awk -F'|' '
    function num(x) { gsub(/[ %]/, "", x); return x + 0 }
    { n++; sh += num($3); p5 += num($4); w += num($5); b += num($6); o += num($7)
      if (n == 1 || num($5) < lo) lo = num($5) }
    END { printf "| mean | %.1f%% | %.1f%% | %.1f%% (lowest %.1f%%) | %.1f | %.4f | | |\n",
          sh / n, p5 / n, w / n, lo, b / n, o / n }' "$rows"
