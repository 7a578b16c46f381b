#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
#
# contrib/prometheus: the scrape configuration and the rules load, the
# rules' unit tests pass, and the dashboard queries nothing but recorded
# series.  Exit 77 (skip) without promtool, saying so.
set -u
dir="$PT_SOURCE_ROOT/contrib/prometheus"
if ! command -v promtool >/dev/null 2>&1; then
    echo "SKIP: promtool is not installed (Debian package prometheus)"
    exit 77
fi
fail=0
cd "$dir" || exit 1
promtool check config prometheus.yml || fail=1
# A label under a target list's "labels:" is the same for every target in
# it; a host label there names every host alike and merges them all.
python3 - prometheus.yml <<'PY' || fail=1
import re, sys
text = open(sys.argv[1]).read()
for m in re.finditer(r"^(\s*)labels:\s*\n((?:\1\s+.*\n?)*)", text, re.M):
    for line in m.group(2).splitlines():
        key = line.split(":")[0].strip()
        if key in ("host", "hostname", "node"):
            print(f"prometheus.yml: the label {key} is set on a whole target list: "
                  "every host in it gets the same name")
            sys.exit(1)
print("prometheus.yml: no shared host label")
PY
promtool check rules polltune.rules.yml || fail=1
promtool test rules polltune.rules.test.yml || fail=1
python3 - polltune.rules.yml polltune-dashboard.json <<'PY' || fail=1
import json, re, sys
rules = open(sys.argv[1]).read()
recorded = set(re.findall(r"^\s*- record:\s*(\S+)", rules, re.M))
dash = json.load(open(sys.argv[2]))
bad = []
queries = [t["expr"] for p in dash["panels"] for t in p["targets"]]
queries += [v["query"] for v in dash["templating"]["list"] if v["type"] == "query"]
for q in queries:
    names = set(re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*(?=\s*[{\[),]|\s*$)", q))
    names -= {"label_values", "instance", "by", "without", "sum", "rate"}
    for n in names:
        if n not in recorded:
            bad.append((q, n))
for q, n in bad:
    print(f"dashboard query uses {n}, which no recording rule defines: {q}")
if not queries:
    print("dashboard has no queries")
    sys.exit(1)
print(f"dashboard: {len(queries)} queries, all on recorded series")
sys.exit(1 if bad else 0)
PY
exit $fail
