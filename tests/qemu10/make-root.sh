#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Makes, checks and caches the Debian 13 (trixie) root that the second test
# generation runs in: QEMU 10.0 and libvirt 11 from Debian's own packages,
# run from the host through tests/qemu10/bin/qemu-system-x86_64 (QEMU in a
# chroot) and pt-test-libvirt (libvirtd in the same chroot).
#
# Usage: tests/qemu10/make-root.sh [-f]
#   -f  rebuild even if the cached root passes its check
# Environment:
#   PT_QEMU10_ROOT    where the root lives (default /var/cache/polltune/trixie)
#   PT_QEMU10_MIRROR  Debian mirror (default: the one apt uses on this host)
#
# The root is made once (about 410 MB, plus 80 MB of packages kept for a
# rebuild; 7 to 8 minutes on a loaded two-core machine, most of it
# debootstrap unpacking and configuring) and kept outside any clone,
# so that every clone and every CI run on the machine shares it.  Each run
# checks it: the stamp must name this script's package list, and the root's
# own qemu-system-x86_64 and libvirtd must say they are 10.x and 11.x.  A
# root that fails the check is made again from scratch.  Only Debian
# packages are downloaded.  Needs root (debootstrap, chroot).
#
# Prints "PT_QEMU10_ROOT=<path>" and the two versions on its last lines.
set -eu

root=${PT_QEMU10_ROOT:-/var/cache/polltune/trixie}
force=0
[ "${1:-}" = -f ] && force=1

# What the tests run inside the root: QEMU and qemu-img (debootstrap's
# --include), and a libvirtd with its QEMU driver, virtlogd, virsh and the
# libvirt-qemu user it runs QEMU as (apt, inside the root: they pull in
# systemd, whose pre-dependencies Debian 12's debootstrap cannot order).
base_packages="qemu-system-x86,qemu-utils"
apt_packages="libvirt-daemon libvirt-daemon-driver-qemu libvirt-daemon-log libvirt-clients"

die() {
    echo "make-root.sh: $*" >&2
    exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (debootstrap and chroot)"
command -v debootstrap >/dev/null 2>&1 || die "debootstrap is not installed"

# The mirror apt already uses here: the network reaches Debian's package
# registries and nothing else, so no other host is worth trying.
mirror() {
    if [ -n "${PT_QEMU10_MIRROR:-}" ]; then
        echo "$PT_QEMU10_MIRROR"
        return
    fi
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        m=$(sed -n -e 's|^URIs:[[:space:]]*\([^[:space:]]*/debian\)/*[[:space:]]*$|\1|p' \
                   -e 's|^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*/debian\)/*[[:space:]].*|\2|p' \
                   "$f" | head -n 1)
        if [ -n "$m" ]; then
            echo "$m"
            return
        fi
    done
    echo http://deb.debian.org/debian
}

stamp_text() {
    printf 'suite trixie\npackages %s %s\n' "$base_packages" "$apt_packages"
}

# The versions a root's binaries report; empty when they do not run.
qemu_version() {
    chroot "$1" /usr/bin/qemu-system-x86_64 --version 2>/dev/null |
        sed -n 's/^QEMU emulator version \([0-9][0-9.]*\).*/\1/p'
}
libvirt_version() {
    chroot "$1" /usr/sbin/libvirtd --version 2>/dev/null |
        sed -n 's/.* \([0-9][0-9]*\.[0-9][0-9.]*\)$/\1/p'
}

root_ok() {
    [ -f "$1/.pt-stamp" ] && [ "$(cat "$1/.pt-stamp")" = "$(stamp_text)" ] || return 1
    case $(qemu_version "$1") in 10.*) ;; *) return 1 ;; esac
    case $(libvirt_version "$1") in 11.*) ;; *) return 1 ;; esac
}

debs=$root.debs           # downloaded packages, kept for a rebuild
log=$root.make.log
mkdir -p "$(dirname "$root")"
# Two CI runs (or two tests) may come here at once: one makes the root,
# the other then finds it made.
exec 9>"$root.lock"
flock 9

if [ $force -eq 1 ] || ! root_ok "$root"; then
    [ -d "$root" ] && echo "make-root.sh: $root fails its check; making it again" >&2
    new="$root.new"
    rm -rf "$new" "$root.old"
    m=$(mirror)
    # Packages downloaded by an earlier run are offered to debootstrap and
    # apt again (both reuse a file of the right version and checksum).
    mkdir -p "$debs" "$new/var/cache/apt/archives"
    cp -l "$debs"/*.deb "$new/var/cache/apt/archives/" 2>/dev/null || true
    echo "make-root.sh: debootstrap trixie from $m into $new" >&2
    if ! debootstrap --variant=minbase --include="$base_packages" trixie "$new" "$m" \
            >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "debootstrap failed (whole log: $log)"
    fi
    echo "make-root.sh: apt-get install $apt_packages" >&2
    # /proc for the packages' scripts, in a mount namespace of its own so
    # that nothing stays mounted in the root when it ends.
    if ! unshare --mount --propagation private -- sh -c '
            mount -t proc proc "$1/proc" &&
            chroot "$1" apt-get update -q &&
            DEBIAN_FRONTEND=noninteractive chroot "$1" apt-get install -y -q \
                --no-install-recommends $2' sh "$new" "$apt_packages" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        die "apt-get install in the root failed (whole log: $log)"
    fi
    cp -l "$new"/var/cache/apt/archives/*.deb "$debs/" 2>/dev/null || true
    chroot "$new" apt-get clean
    stamp_text >"$new/.pt-stamp"
    root_ok "$new" || die "the new root's QEMU or libvirtd does not run or is not 10.x / 11.x"
    [ -d "$root" ] && mv "$root" "$root.old"
    mv "$new" "$root"
    rm -rf "$root.old"
fi

echo "PT_QEMU10_ROOT=$root"
echo "QEMU=$(qemu_version "$root")"
echo "LIBVIRT=$(libvirt_version "$root")"
