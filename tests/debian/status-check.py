#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# status-check.py [-v] < STATUS.json: exit 0 when polltunectl's status shows
# target "vm" attached, at least two ticks and a sample of its iothread;
# otherwise say what is missing on stderr and exit 1.
import json, sys

try:
    s = json.load(sys.stdin)
    # A QMP target is its socket path; "vm" is the name it goes by (the
    # socket's file name, QEMU having no -name here).
    t = [t for t in s["targets"] if "vm" in (t["name"], t.get("display_name"))]
    assert t, "target vm not listed: %s" % [x["name"] for x in s["targets"]]
    assert t[0]["state"] == "attached", "vm is %s" % t[0]["state"]
    assert s["ticks"] >= 2, "%d ticks" % s["ticks"]
    io = t[0]["iothreads"][0]
    assert io.get("metrics"), "no sample of vm/%s yet" % io["id"]
except (AssertionError, ValueError, KeyError, IndexError) as e:
    print("status: %s" % (e or type(e).__name__), file=sys.stderr)
    sys.exit(1)
if "-v" in sys.argv:
    print("status: %d ticks, vm/%s attached, sampled" % (s["ticks"], io["id"]))
