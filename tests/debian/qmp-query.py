#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# qmp-query.py SOCKET: print "ID MAX GROW SHRINK" per iothread, from QEMU's
# own monitor, for the package test to read QEMU's view independently of
# polltuned.
import json, socket, sys

s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
f = s.makefile("rw")
json.loads(f.readline())                       # greeting
for cmd in ("qmp_capabilities", "query-iothreads"):
    f.write(json.dumps({"execute": cmd, "id": cmd}) + "\n")
    f.flush()
    while True:
        msg = json.loads(f.readline())
        if msg.get("id") == cmd:
            break
    if "error" in msg:
        sys.exit(f"{cmd}: {msg['error']}")
for it in msg["return"]:
    print(it["id"], it["poll-max-ns"], it["poll-grow"], it["poll-shrink"])
