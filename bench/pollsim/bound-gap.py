#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Where does the adaptive policy fall short of etc-bound.py's bound?

etc-bound.py --cells FILE writes, per cell, the bound's chance that the
cell ends within 3% of the oracle; pollsim's POLLSIM_CELLS=1 table gives
adaptive's share of the oracle per cell.  This puts them side by side:
per slice (noise level and each coordinate of the cell's name) the
bound's expected share, adaptive's share, and the gap in cells, largest
first; then the cells adaptive misses that the bound reaches most often.
The table gives adaptive's share to a tenth of a point, so a cell shown
at 97.0% may be just below 97% and count as missed in pollsim's own
figure: adaptive's shares here can read a few tenths of a point high.

    POLLSIM_ORACLE=/tmp/oracle.tsv pollsim --matrix=full
    POLLSIM_CELLS=1 pollsim --matrix=full > /tmp/cells.txt
    python3 bench/pollsim/etc-bound.py /tmp/oracle.tsv --must-probe --narrow \\
        --runs 100 --cells /tmp/bound.tsv
    python3 bench/pollsim/bound-gap.py /tmp/bound.tsv /tmp/cells.txt [--worst N]
"""
import argparse
import collections
import re
import sys

NOISE = re.compile(r" noise=(\d+)%")


def load_bound(path):
    bound = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 3:
                sys.exit(f"bound-gap: {path}:{n}: not WORKLOAD NOISE CHANCE")
            bound[(parts[0], parts[1])] = float(parts[2])
    return bound


def load_cells(path):
    """{(workload, noise): adaptive's % of the oracle} from the cells table."""
    cells = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("| ") or not NOISE.search(line):
                continue
            fields = [x.strip() for x in line.strip().strip("|").split("|")]
            name = fields[0]
            cells[(NOISE.sub("", name), NOISE.search(name).group(1))] = \
                float(fields[1].rstrip("%"))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("bound", help="etc-bound.py --cells output")
    ap.add_argument("cells", help="pollsim --matrix output with POLLSIM_CELLS=1")
    ap.add_argument("--worst", type=int, default=20)
    a = ap.parse_args()
    bound, cells = load_bound(a.bound), load_cells(a.cells)
    missing = [k for k in bound if k not in cells]
    if missing:
        sys.exit(f"bound-gap: {len(missing)} cells of {a.bound} are not in {a.cells}, "
                 f"e.g. {missing[0][0]} noise={missing[0][1]}%: not the same grid")
    slices = collections.defaultdict(lambda: [0.0, 0, 0])
    rows = []
    for (w, noise), chance in bound.items():
        within = cells[(w, noise)] >= 97.0
        rows.append((chance - within, w, noise, chance, cells[(w, noise)]))
        for key in [f"noise={noise}%", "all"] + \
                [t for t in w.split() if not t.startswith("qemu=")]:
            s = slices[key]
            s[0] += chance
            s[1] += within
            s[2] += 1
    print("| slice | cells | bound | adaptive | gap (cells) |")
    print("|---|---:|---:|---:|---:|")
    for key, (c, w, n) in sorted(slices.items(), key=lambda kv: kv[1][1] - kv[1][0]):
        print(f"| {key} | {n} | {100 * c / n:.1f}% | {100 * w / n:.1f}% | {c - w:.1f} |")
    rows.sort(key=lambda r: (-r[0], r[4]))
    print(f"\n| cell the bound reaches and adaptive misses | bound's chance | adaptive |")
    print("|---|---:|---:|")
    for gap, w, noise, chance, share in rows[:a.worst]:
        if gap <= 0:
            break
        print(f"| {w} noise={noise}% | {chance:.2f} | {share:.1f}% |")


if __name__ == "__main__":
    main()
