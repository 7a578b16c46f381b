#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""daemon/ stands in layers: a file takes names (functions, data) and
headers only from files of its own layer or of a layer below it, never
from one above.  The layers are LAYERS, from the ground up; a header
belongs to the file of its name (pt-tick.h to pt-tick.c) or stands alone
in the list.  Names are read from the library's objects (nm), includes
from the sources.

Usage: test-daemon-layers.py DAEMON-SOURCE-DIR LIBPT_DAEMON.a
"""
import os
import re
import subprocess
import sys

LAYERS = [
    # helpers, and what every room below the control may name
    "pt-log pt-lock pt-fd-send pt-stop pt-enum.h pt-history pt-control-error "
    "pt-control-limits.h pt-daemon-stats.h",
    # the configuration
    "pt-access pt-conf-types pt-conf-units pt-conf-read",
    "pt-conf-keys",
    "pt-conf",
    "pt-conf-format pt-conf-load",
    # a target and its channel
    "pt-target",
    "pt-target-qmp",
    # the daemon's state
    "pt-daemon-types.h",
    "pt-daemon-private.h",
    "pt-tick pt-tick-private.h",
    # writes, the table of targets, what the policy is told
    "pt-daemon-record pt-daemon-targets pt-daemon-memory pt-daemon-metadata",
    "pt-daemon-originals",
    "pt-daemon-mode pt-daemon-overrides pt-daemon-rules pt-daemon-qmp pt-daemon-libvirt",
    # the targets' coming and going, the tick
    "pt-daemon-attach pt-daemon-step",
    "pt-daemon-tick pt-daemon-explain",
    # the lifecycle
    "pt-daemon-shutdown",
    "pt-daemon",
    # what reads the daemon from outside
    "pt-metrics pt-control-private.h",
    "pt-metrics-http pt-control-args pt-control-conn pt-control-json",
    "pt-control-explain",
    "pt-control-status pt-control-history pt-control-policy pt-control-memory",
    "pt-control-export",
    "pt-control-cmds",
    "pt-control",
    "polltuned",
]


def main():
    src, lib = sys.argv[1], sys.argv[2]
    rank = {}
    for i, layer in enumerate(LAYERS):
        for room in layer.split():
            rank[room] = i

    def room_of(name):
        """The room a file or header belongs to, or None."""
        if name in rank:
            return name
        base = re.sub(r"\.[ch]$", "", name)
        return base if base in rank else None

    checks = []
    # Every source of daemon/ is placed.
    files = sorted(f for f in os.listdir(src) if f.endswith((".c", ".h")))
    unplaced = [f for f in files if room_of(f) is None]
    checks.append(("every file of daemon/ stands in a layer", unplaced))

    # Includes run down or sideways only.
    up = []
    for f in files:
        me = room_of(f)
        with open(os.path.join(src, f), encoding="utf-8") as fh:
            for inc in re.findall(r'^#include "([^"/]+)"', fh.read(), re.M):
                them = room_of(inc)
                if me and them and rank[them] > rank[me]:
                    up.append(f"{f} includes {inc}")
    checks.append(("no include runs up", up))

    # Names run down or sideways only.
    try:
        out = subprocess.run(["nm", "-A", lib], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print("1..0 # SKIP nm: %s" % e)
        return 0
    defined, wanted = {}, []
    for line in out.splitlines():
        m = re.match(r"^[^:]*:([^:]+)\.c\.o:\s*(?:[0-9a-f]+)?\s+([A-Za-z])\s+(\S+)$", line)
        if not m:
            continue
        obj, kind, sym = m.groups()
        obj = os.path.basename(obj)
        if kind == "U":
            wanted.append((obj, sym))
        elif kind in "TDBR":
            defined[sym] = obj
    up = sorted({f"{obj}.c takes {sym} from {defined[sym]}.c" for obj, sym in wanted
                 if sym in defined and obj in rank and defined[sym] in rank
                 and rank[defined[sym]] > rank[obj]})
    checks.append(("no name is taken from a file above", up))
    unknown = sorted({obj for obj, _ in wanted if obj not in rank})
    checks.append(("every object of the library stands in a layer", unknown))

    print("1..%d" % len(checks))
    failed = 0
    for i, (what, bad) in enumerate(checks, 1):
        if bad:
            failed += 1
            print("not ok %d - %s" % (i, what))
            for b in bad:
                print("# %s" % b)
        else:
            print("ok %d - %s" % (i, what))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
