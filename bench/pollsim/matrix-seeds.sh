#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# The reduced scenario matrix over several seeds, one row per seed and a
# mean row, from the closing "matrix:" line of each run.  One seed's
# figures move by several points with the noise draw (docs/BENCHMARKS.md),
# so a policy change is judged here, not on one run.
#
#   bench/pollsim/matrix-seeds.sh [POLLSIM [SEEDS]]
#
# POLLSIM defaults to build/bench/pollsim/pollsim, SEEDS to "1 2 3 4".
# Extra pollsim options can be passed in $POLLSIM_OPTS (e.g.
# "--qemu-model=10"); POLLSIM_PHASE_S and the other POLLSIM_ variables
# reach pollsim as they are.  Exits 1 if a run could not be parsed.
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

echo "| seed | within 3% of the bound | below never-write (at <= 10%) | gain captured | within 3% of the oracle | mean objective | never-write | worst | p95 writes per change at +-50% | most in a phase |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in $seeds; do
    # pollsim exits 1 while a goal fails: that is the normal case here.
    # shellcheck disable=SC2086
    "$pollsim" --matrix --seed="$s" $opts >"$out" 2>&1 || true
    row=$(awk -v seed="$s" '
        function after(re, len) { return match($0, re) ? substr($0, RSTART + len, RLENGTH - len) : "" }
        /^matrix: / {
            bound = after("[0-9.]+% within 3% of the bound", 0); sub(/%.*/, "%", bound)
            below = after("[0-9]+ below never-write", 0); sub(/ .*/, "", below)
            low = after("\\([0-9]+ at noise", 1); sub(/ .*/, "", low)
            gain = after("[0-9.]+% of the gain", 0); sub(/ .*/, "", gain)
            oracle = after("[0-9.]+% within 3% of oracle", 0); sub(/ .*/, "", oracle)
            obj = after("mean objective [0-9.]+", 15)
            nw = after("never-write [0-9.]+\\)", 12); sub(/\)/, "", nw)
            worst = after("worst [0-9.]+%", 6)
            p95 = after("p95 writes per change [0-9]+", 22)
            most = after("most in a phase [0-9]+", 16)
        }
        END {
            if (bound == "" || obj == "" || p95 == "")
                exit 1
            printf "| %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n", seed, bound,
                   below, low, gain, oracle, obj, nw, worst, p95, most
        }' "$out") || {
        echo "matrix-seeds: seed $s: could not read pollsim's summary; its output:" >&2
        tail -5 "$out" >&2
        exit 1
    }
    echo "$row"
    echo "$row" >>"$rows"
done
awk -F'|' '
    function num(x) { gsub(/[ %]/, "", x); sub(/\(.*/, "", x); return x + 0 }
    { n++; b += num($3); h += num($4); g += num($5); o += num($6); ob += num($7); nw += num($8)
      w += num($9); if (n == 1 || num($9) < lo) lo = num($9) }
    END { printf "| mean | %.1f%% | %.1f | %.1f%% | %.1f%% | %.4f | %.4f | %.1f%% (lowest %.1f%%) | | |\n",
          b / n, h / n, g / n, o / n, ob / n, nw / n, w / n, lo }' "$rows"
