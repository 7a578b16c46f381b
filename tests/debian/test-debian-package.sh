#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
#
# Builds polltune's Debian package from this tree and proves it under a
# real systemd: a Debian 12 container booted with systemd-nspawn, where
#   - apt-get installs the .deb (and its dependencies),
#   - a QEMU runs as its own unit (-machine none, an iothread started with
#     poll-max-ns=20000, a QMP socket under /run for polltuned and one for
#     this test),
#   - polltuned.service reaches READY under the shipped sandbox, attaches,
#     samples and writes (a static policy), and answers polltunectl status
#     as root and as a member of the polltune group,
#   - systemctl reload re-reads the configuration, and fails (exit 1, the
#     reason in the journal, the daemon and its configuration unchanged)
#     on one polltuned refuses,
#   - the watchdog restarts a hung (SIGSTOPped) daemon,
#   - systemctl stop puts QEMU's original values back,
#   - apt-get purge leaves none of the package's files, state or group.
# lintian must report no errors on the package; it has one conffile (the
# configuration), and ships the manual its manual pages point to, the
# example configuration and contrib/prometheus's files under
# /usr/share/doc/polltune, uncompressed.
#
# Exit 77 (skip) with the reason when a facility is missing: not root, no
# dpkg-buildpackage, debootstrap or systemd-nspawn, or no network to the
# Debian archive.  PT_DEB_KEEP=1 keeps the work directory.
set -uo pipefail

src=${PT_SOURCE_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
here=$(cd "$(dirname "$0")" && pwd)
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; dump; exit 1; }
step() { echo "== $(date +%T) $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root (debootstrap, systemd-nspawn)"
for t in dpkg-buildpackage debootstrap systemd-nspawn nsenter lintian python3; do
    command -v "$t" >/dev/null || skip "$t is not installed"
done
mirror=$(sed -n 's/^deb \(http[^ ]*\) bookworm main.*/\1/p' /etc/apt/sources.list 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(sed -n 's/^URIs: *\(http[^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=http://deb.debian.org/debian

work=$(mktemp -d /var/tmp/pt-deb-XXXXXX)
root=$work/root
nspawn_pid=
cleanup() {
    if [ -n "$nspawn_pid" ] && kill -0 "$nspawn_pid" 2>/dev/null; then
        kill -s SIGRTMIN+4 "$(init_pid)" 2>/dev/null      # poweroff
        for _ in $(seq 1 30); do kill -0 "$nspawn_pid" 2>/dev/null || break; sleep 1; done
        kill -9 "$nspawn_pid" 2>/dev/null
    fi
    [ "${PT_DEB_KEEP:-0}" = 1 ] && { echo "kept $work"; return; }
    rm -rf "$work"
}
trap cleanup EXIT

init_pid() { pgrep -P "$nspawn_pid" | head -1; }
inside() { nsenter -t "$(init_pid)" -a -- "$@"; }
dump() {
    [ -n "$nspawn_pid" ] || return
    echo "--- journal of polltuned.service and pt-qemu.service:"
    inside journalctl --no-pager -n 60 -u polltuned.service -u pt-qemu.service 2>&1 | tail -60
}
# Poll @cmd for up to @1 seconds.
wait_for() {
    local secs=$1; shift
    for _ in $(seq 1 "$secs"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
    return 1
}

# ---- the package ------------------------------------------------------
# PT_DEB_PACKAGE=FILE tests a package built before instead of building one.
if [ -n "${PT_DEB_PACKAGE:-}" ]; then
    mkdir -p "$work/src"
    cp "$PT_DEB_PACKAGE" "$work/src/polltune_prebuilt.deb" || fail "$PT_DEB_PACKAGE: cannot copy"
else
    step "building the package"
    mkdir -p "$work/src/polltune"
    if [ -d "$src/.git" ] || git -C "$src" rev-parse >/dev/null 2>&1; then
        (cd "$src" && git ls-files -z --cached --others --exclude-standard) |
            (cd "$src" && xargs -0 cp --parents -t "$work/src/polltune" 2>/dev/null)
    else
        (cd "$src" && tar --exclude='./build*' --exclude='./obj-*' -cf - .) | tar -C "$work/src/polltune" -xf -
    fi
    # nocheck: the tests debian/rules would run at build time run in the
    # suite's own builds; without them the package builds only its
    # programs, in half the time.
    (cd "$work/src/polltune" && DEB_BUILD_OPTIONS="nocheck ${DEB_BUILD_OPTIONS:-}" \
        dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) ||
        { tail -40 "$work/build.log"; fail "dpkg-buildpackage failed"; }
fi
deb=$(ls "$work"/src/polltune_*.deb 2>/dev/null | head -1)
[ -n "$deb" ] || fail "no polltune_*.deb was built"
echo "built $(basename "$deb"): $(dpkg-deb -f "$deb" Version), $(du -k "$deb" | cut -f1) KiB"

step "lintian"
lintian --fail-on error --tag-display-limit 0 "$deb" >"$work/lintian.log" 2>&1
lint=$?
cat "$work/lintian.log"
[ $lint -eq 0 ] || fail "lintian reports errors"
# The shipped configuration is the one conffile: the example is
# documentation, not a second copy of it under /etc.
dpkg-deb -e "$deb" "$work/ctrl"
grep -qx /etc/polltune/polltuned.conf "$work/ctrl/conffiles" ||
    fail "/etc/polltune/polltuned.conf is not a conffile"
[ "$(grep -c . "$work/ctrl/conffiles")" = 1 ] ||
    fail "conffiles other than /etc/polltune/polltuned.conf: $(tr '\n' ' ' <"$work/ctrl/conffiles")"

step "the manual and the examples"
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | grep -v '^/$' >"$work/files"
doc=/usr/share/doc/polltune
shipped() { grep -qx "$1" "$work/files"; }
missing=""
# Every page of the manual, as it is named (not .md.gz).
for page in "$src"/docs/*.md "$src"/README.md; do
    shipped "$doc/$(basename "$page")" || missing="$missing $doc/$(basename "$page")"
done
for f in examples/polltuned.conf.example examples/prometheus/prometheus.yml \
         examples/prometheus/polltune.rules.yml examples/prometheus/polltune.rules.test.yml \
         examples/prometheus/polltune-dashboard.json; do
    shipped "$doc/$f" || missing="$missing $doc/$f"
done
# Every file of the package's that a manual page names.
for f in $(sed 's/\\-/-/g' "$src"/docs/man/* | grep -o "$doc/[A-Za-z0-9_./-]*[A-Za-z0-9_]" | sort -u); do
    shipped "$f" || missing="$missing $f (named in a manual page)"
done
[ -z "$missing" ] || fail "not in the package:$missing"
shipped /etc/polltune/polltuned.conf.example && fail "the example is shipped under /etc too"
echo "$(grep -c "^$doc/" "$work/files") files under $doc, one conffile"

# ---- the container ----------------------------------------------------
# Debian 12 with systemd and QEMU.  The first run debootstraps it and keeps
# a tarball under $cache (refreshed after a week): later runs unpack that
# instead of downloading again.  nspawn runs with --keep-unit: the host's
# PID 1 need not be systemd, so there is no bus to register a scope on.
cache=${PT_DEB_CACHE:-/var/cache/polltune-tests}
base=$cache/bookworm-qemu.tar
nspawn() { systemd-nspawn -q --keep-unit --register=no --console=pipe -D "$root" "$@" </dev/null; }
mkdir -p "$cache"
if [ -f "$base" ] && [ -n "$(find "$base" -mtime -7)" ]; then
    step "unpacking the cached base system $base"
    mkdir -p "$root" && tar -C "$root" -xf "$base" || fail "$base: cannot unpack"
else
    step "debootstrap bookworm from $mirror"
    # The host's package cache is shared, so a second run downloads less.
    mkdir -p /var/cache/apt/archives/partial
    debootstrap --variant=minbase --include=systemd,systemd-sysv,dbus,passwd \
        --cache-dir=/var/cache/apt/archives bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
        tail -20 "$work/debootstrap.log"
        grep -qiE "could not resolve|failed to fetch|unable to connect|couldn't download" \
            "$work/debootstrap.log" && skip "the Debian archive is not reachable from here"
        fail "debootstrap failed"
    }
    echo "deb $mirror bookworm main" >"$root/etc/apt/sources.list"
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null
    nspawn --bind=/var/cache/apt/archives sh -c "apt-get update -q && \
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends qemu-system-x86" \
        >"$work/qemu.log" 2>&1 || { tail -30 "$work/qemu.log"; fail "apt-get install qemu-system-x86 failed"; }
    tar -C "$root" -cf "$base.new" . && mv "$base.new" "$base"
fi
# nspawn mounts a fresh /tmp; /var/tmp is the container's own.
cp "$deb" "$root/var/tmp/"
step "installing the package in the container"
nspawn --bind=/var/cache/apt/archives sh -c "apt-get update -q && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends /var/tmp/$(basename "$deb")" \
    >"$work/install.log" 2>&1 || { tail -30 "$work/install.log"; fail "apt-get install ./$(basename "$deb") failed"; }
nspawn systemctl is-enabled polltuned.service |
    grep -qx enabled || fail "polltuned.service is not enabled after install"
grep -q '^polltune:' "$root/etc/group" || fail "postinst did not create the polltune group"

# A QEMU of its own, and polltuned configured for it: static policy so
# that the write is known; libvirt is not in this container.
cat >"$root/etc/systemd/system/pt-qemu.service" <<'EOF'
[Unit]
Description=QEMU for the package test
[Service]
RuntimeDirectory=pt-qemu
ExecStart=/usr/bin/qemu-system-x86_64 -machine none -nodefaults -display none \
    -object iothread,id=iot0,poll-max-ns=20000 \
    -qmp unix:/run/pt-qemu/vm.qmp,server=on,wait=off \
    -qmp unix:/run/pt-qemu/check.sock,server=on,wait=off
[Install]
WantedBy=multi-user.target
EOF
ln -sf /etc/systemd/system/pt-qemu.service "$root/etc/systemd/system/multi-user.target.wants/pt-qemu.service"
conf=$root/etc/polltune/polltuned.conf
sed -i 's|^libvirt = true|libvirt = false|; s|^qmp-globs =.*|qmp-globs = /run/pt-qemu/*.qmp|;
        s|^default = .*|default = static:50000/2/2|' "$conf"
grep -q '^qmp-globs = /run/pt-qemu/\*.qmp' "$conf" || fail "could not edit $conf"
# The unit's watchdog is 30 s; a shorter one keeps this test short.  The
# sandbox itself is the shipped one.
mkdir -p "$root/etc/systemd/system/polltuned.service.d"
printf '[Service]\nWatchdogSec=6s\n' >"$root/etc/systemd/system/polltuned.service.d/watchdog.conf"
chroot "$root" useradd -m -G polltune alice || fail "useradd alice"

step "booting the container"
# A private network: the container's metrics listener must not meet the
# host's on 127.0.0.1:9563.
systemd-nspawn -q --keep-unit --register=no -D "$root" --private-network -b \
    >"$work/boot.log" 2>&1 &
nspawn_pid=$!
has_init() { [ -n "$(init_pid)" ]; }
wait_for 60 has_init || fail "the container did not start"
wait_for 90 inside systemctl is-active -q pt-qemu.service || fail "pt-qemu.service is not active"
check_sock() { echo "/proc/$(init_pid)/root/run/pt-qemu/check.sock"; }
qemu_triple() { python3 "$here/qmp-query.py" "$(check_sock)" | awk '$1 == "iot0" {print $2 "/" $3 "/" $4}'; }
triple_is() { [ "$(qemu_triple)" = "$1" ]; }
main_pid() { inside systemctl show -P MainPID polltuned.service; }
# The running tick interval in ms, from polltunectl --json status.  One
# call can fail on a loaded machine (nsenter, the control timeout) with
# nothing wrong in the daemon, so a call that fails, or whose output is
# not a status, is made again until $1 seconds have passed; the first
# status that answers decides.  Prints the interval, or returns 1 with the
# last failure in $work/interval.err.
running_interval() {
    local deadline=$((SECONDS + $1)) out
    while :; do
        if out=$(inside polltunectl --json status 2>"$work/interval.err") &&
           printf '%s' "$out" |
               python3 -c 'import json, sys; print(json.load(sys.stdin)["interval_ms"])' \
                   2>>"$work/interval.err"; then
            return 0
        fi
        [ "$SECONDS" -lt "$deadline" ] || return 1
        sleep 1
    done
}
interval_is_500() { [ "$(running_interval 0)" = 500 ]; }
restarted() { local p; p=$(main_pid); [ -n "$p" ] && [ "$p" != 0 ] && [ "$p" != "$pid_before" ]; }
check_sock_ready() { [ -S "$(check_sock)" ]; }
wait_for 30 check_sock_ready || fail "QEMU's check monitor did not appear"

# ---- the service ------------------------------------------------------
step "polltuned.service"
wait_for 90 inside systemctl is-active -q polltuned.service ||
    fail "polltuned.service did not become active (READY) under its sandbox"
wait_for 30 triple_is 50000/2/2 ||
    fail "QEMU's iot0 is $(qemu_triple), not the policy's 50000/2/2"
echo "QEMU iot0 after attach: $(qemu_triple)"
# Attached, two ticks and a sample of the iothread: the write above can
# come from the first tick, before the second sample.
status_ok() {
    inside polltunectl --json status >"$work/status.json" 2>"$work/status.err" &&
        python3 "$here/status-check.py" <"$work/status.json"
}
wait_for 30 status_ok || { cat "$work/status.err"; python3 "$here/status-check.py" <"$work/status.json";
                           fail "status as root does not show vm attached and sampled"; }
python3 "$here/status-check.py" -v <"$work/status.json"
inside runuser -u alice -- polltunectl status >"$work/alice.txt" 2>&1 ||
    { cat "$work/alice.txt"; fail "polltunectl status as a member of group polltune failed"; }
grep -q 'vm/iot0' "$work/alice.txt" || fail "alice's status does not list vm/iot0"

step "systemctl reload"
pid_before=$(main_pid)
sed -i 's|^interval = .*|interval = 500ms|' "$conf"
grep -q '^interval = 500ms' "$conf" || echo 'interval = 500ms' >>"$conf"
inside systemctl reload polltuned.service || fail "systemctl reload failed"
wait_for 20 interval_is_500 ||
    fail "the reload did not take interval = 500ms"
[ "$(main_pid)" = "$pid_before" ] ||
    fail "reload restarted the daemon"

step "systemctl reload of a configuration polltuned refuses"
cp "$conf" "$work/good.conf"
sed -i 's|^interval = .*|interval = 5 parsecs|' "$conf"
grep -q '^interval = 5 parsecs' "$conf" || fail "could not edit $conf"
if inside systemctl reload polltuned.service >"$work/reload.out" 2>&1; then
    cat "$work/reload.out"
    fail "systemctl reload exited 0 on a configuration polltuned refuses"
fi
cat "$work/reload.out"
inside journalctl --no-pager -u polltuned.service -n 40 >"$work/reload.journal" 2>&1
grep -q "interval: '5 parsecs' has an unknown unit" "$work/reload.journal" || {
    tail -20 "$work/reload.journal"; fail "the journal does not say why the reload failed"; }
inside systemctl is-active -q polltuned.service || fail "a refused reload stopped polltuned"
[ "$(main_pid)" = "$pid_before" ] || fail "a refused reload restarted the daemon"
interval=$(running_interval 60) || {
    cat "$work/interval.err"; fail "polltunectl --json status did not answer for 60 s after a refused reload"; }
[ "$interval" = 500 ] ||
    fail "a refused reload changed the running configuration: interval ${interval} ms, not 500"
cp "$work/good.conf" "$conf"
inside systemctl reload polltuned.service || fail "systemctl reload of the good file again failed"
echo "refused: systemctl reload failed, polltuned $pid_before kept interval 500ms"

step "watchdog"
inside kill -STOP "$pid_before"
wait_for 60 restarted ||
    fail "the watchdog did not restart a SIGSTOPped polltuned"
wait_for 60 inside systemctl is-active -q polltuned.service || fail "polltuned.service did not come back"
echo "restarted: pid $pid_before -> $(main_pid)"

step "systemctl stop restores"
wait_for 30 triple_is 50000/2/2 ||
    fail "the restarted daemon did not write 50000/2/2 again"
inside systemctl stop polltuned.service || fail "systemctl stop failed"
[ "$(qemu_triple)" = 20000/0/0 ] || fail "after stop QEMU's iot0 is $(qemu_triple), not its original 20000/0/0"
echo "QEMU iot0 after stop: $(qemu_triple)"

step "apt-get purge"
inside env DEBIAN_FRONTEND=noninteractive apt-get purge -y -q polltune >"$work/purge.log" 2>&1 ||
    { tail -20 "$work/purge.log"; fail "apt-get purge failed"; }
left=""
while read -r f; do
    [ -e "$root$f" ] && [ ! -d "$root$f" ] && left="$left $f"
done <"$work/files"
for d in /etc/polltune /var/lib/polltune /run/polltune; do
    inside test -e "$d" && left="$left $d"
done
[ -z "$left" ] || fail "left behind after purge:$left"
grep -q '^polltune:' "$root/etc/group" && fail "the polltune group is left after purge"
inside systemctl cat polltuned.service >/dev/null 2>&1 && fail "polltuned.service is still known"
echo "purged: nothing left"
echo "PASS"
exit 0
