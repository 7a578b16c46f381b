#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# capture-schema.py QEMU-BINARY OUT.json.gz: start QEMU with nothing but a
# QMP monitor, ask it for query-version and query-qmp-schema, and write
#
#   {"version": <query-version's return>, "schema": [<SchemaInfo>, ...]}
#
# gzipped, with the schema trimmed to the commands polltune's tests script
# (COMMANDS below), every event, and the types those reach.  The scripted
# QEMU (tests/qmp/qmp-fake-qemu.c) checks its canned replies against it.
#
# Re-run after a QEMU upgrade:
#   tests/qmp/capture-schema.py qemu-system-x86_64 tests/qmp/schema/qemu-7.2.json.gz
#   tests/qmp/capture-schema.py tests/qemu10/bin/qemu-system-x86_64 \
#       tests/qmp/schema/qemu-10.0.json.gz       (as root: it chroots)
import gzip, json, os, socket, subprocess, sys, tempfile, time

# What polltuned sends (qmp/qmp-commands.c, daemon/pt-target-qmp.c), what
# the tests send to a real QEMU (tests/common/pt-test-qmp-sync.c), and the
# handshake.
COMMANDS = [
    "qmp_capabilities", "query-version", "query-status", "query-name",
    "query-kvm", "query-iothreads", "query-blockstats", "query-block",
    "query-stats", "query-stats-schemas", "qom-get", "qom-set", "qom-list",
    "query-cpus-fast", "object-add", "object-del",
]


def qmp_talk(path, commands, deadline):
    s = socket.socket(socket.AF_UNIX)
    while True:
        try:
            s.connect(path)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
    s.settimeout(max(1.0, deadline - time.monotonic()))
    f = s.makefile("rw")
    json.loads(f.readline())                        # the greeting
    replies = {}
    for cmd in commands:
        f.write(json.dumps({"execute": cmd, "id": cmd}) + "\n")
        f.flush()
        while True:
            msg = json.loads(f.readline())
            if msg.get("id") == cmd:
                break
        if "error" in msg:
            sys.exit(f"{cmd}: {msg['error']}")
        replies[cmd] = msg["return"]
    s.close()
    return replies


def trim(schema):
    """The commands above, every event, and what they reach by name."""
    by_name = {e["name"]: e for e in schema}
    keep = set()
    todo = [e["name"] for e in schema
            if e["meta-type"] == "event" or
            (e["meta-type"] == "command" and e["name"] in COMMANDS)]
    while todo:
        name = todo.pop()
        if name in keep or name not in by_name:
            continue
        keep.add(name)
        e = by_name[name]
        mt = e["meta-type"]
        if mt == "command":
            todo += [e["arg-type"], e["ret-type"]]
        elif mt == "event":
            todo.append(e["arg-type"])
        elif mt == "array":
            todo.append(e["element-type"])
        elif mt == "object":
            todo += [m["type"] for m in e["members"]]
            todo += [v["type"] for v in e.get("variants", [])]
        elif mt == "alternate":
            todo += [m["type"] for m in e["members"]]
    missing = [c for c in COMMANDS if c not in by_name]
    if missing:
        print(f"note: this QEMU lacks {', '.join(missing)}", file=sys.stderr)
    return [e for e in schema if e["name"] in keep]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: capture-schema.py QEMU-BINARY OUT.json.gz")
    qemu, out = sys.argv[1], sys.argv[2]
    # /tmp: the QEMU 10 shim binds it into its root, so the path holds inside.
    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        sock = os.path.join(d, "qmp.sock")
        proc = subprocess.Popen([qemu, "-machine", "none", "-nodefaults",
                                 "-display", "none",
                                 "-qmp", f"unix:{sock},server=on,wait=off"])
        try:
            replies = qmp_talk(sock, ["qmp_capabilities", "query-version",
                                      "query-qmp-schema"],
                               time.monotonic() + 60)
        finally:
            proc.kill()
            proc.wait()
    doc = {"version": replies["query-version"],
           "schema": trim(replies["query-qmp-schema"])}
    text = json.dumps(doc, separators=(",", ":")) + "\n"
    # mtime 0: the same schema gives the same bytes, so a re-run shows no diff.
    with open(out, "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(text.encode())
    print(f"{out}: {len(doc['schema'])} entries, QEMU "
          f"{doc['version']['qemu']}", file=sys.stderr)


if __name__ == "__main__":
    main()
