#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the test guest: a Debian cloud kernel and an initramfs holding
# busybox-static, the virtio-blk modules and loadgen.
#
# Usage: tests/guest/build.sh [-f]
#   -f  rebuild even if the cache looks current
# Environment:
#   PT_GUEST_CACHE       output directory (default tests/guest/cache)
#   PT_GUEST_KERNEL_DEB  use this kernel .deb instead of downloading one
#   PT_GUEST_BUSYBOX     static busybox to embed (default: busybox-static's)
#
# Prints the paths of the kernel and initramfs on its last two lines as
#   PT_GUEST_KERNEL=...
#   PT_GUEST_INITRD=...
# Running it again is cheap: the outputs are rebuilt only when an input
# (kernel package, busybox, loadgen.c, init, this script) changed.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
cache=${PT_GUEST_CACHE:-$here/cache}
force=0
[ "${1:-}" = -f ] && force=1

# What virtio-blk over virtio-pci needs; dependencies are added from each
# module's own "depends=" list, so only the leaves are named here.
wanted_modules="virtio_pci virtio_blk"

die() {
    echo "build.sh: $*" >&2
    exit 1
}

mkdir -p "$cache/deb"
cache=$(cd "$cache" && pwd)

# Tests may call this concurrently; one builds, the others then find the
# cache current.  flock is util-linux, present wherever apt is.
if command -v flock >/dev/null 2>&1; then
    exec 9>"$cache/lock"
    flock 9
fi

for tool in dpkg-deb cpio gzip gcc sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "missing $tool"
done

busybox=${PT_GUEST_BUSYBOX:-/bin/busybox}
[ -x "$busybox" ] || die "no static busybox at $busybox (install busybox-static)"
# A dynamic busybox would need a libc in the initramfs.
if command -v file >/dev/null 2>&1; then
    file -L "$busybox" | grep -q 'statically linked' ||
        die "$busybox is not statically linked (install busybox-static)"
fi

# --- kernel package -------------------------------------------------------
# linux-image-cloud-amd64 is a metapackage; the kernel itself is in the
# versioned package it depends on, which changes with every Debian update.
find_cached_deb() {
    ls -t "$cache"/deb/linux-image-*-cloud-amd64_*.deb 2>/dev/null | head -n 1
}

# apt-cache alone takes about a second; the package it names can only have
# changed if the package lists did since the last build.
lists=/var/lib/apt/lists
if [ -n "${PT_GUEST_KERNEL_DEB:-}" ]; then
    deb=$PT_GUEST_KERNEL_DEB
    [ -f "$deb" ] || die "PT_GUEST_KERNEL_DEB=$deb does not exist"
elif [ $force = 0 ] && [ -f "$cache/stamp" ] && [ -f "$cache/deb-path" ] &&
    [ -f "$(cat "$cache/deb-path")" ] && [ -z "$(find "$lists" -prune -newer "$cache/stamp")" ]; then
    deb=$(cat "$cache/deb-path")
else
    pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9].*-cloud-amd64$/ { print $2; exit }')
    deb=
    if [ -n "$pkg" ]; then
        deb=$(ls -t "$cache"/deb/"${pkg}"_*.deb 2>/dev/null | head -n 1)
        if [ -z "$deb" ]; then
            echo "build.sh: downloading $pkg" >&2
            # apt-get download writes into the current directory.
            if (cd "$cache/deb" && apt-get download "$pkg" >&2); then
                deb=$(ls -t "$cache"/deb/"${pkg}"_*.deb | head -n 1)
                # Superseded kernels are 27 MB each; keep only the current.
                for old in "$cache"/deb/linux-image-*.deb; do
                    [ "$old" = "$deb" ] || rm -f "$old"
                done
            fi
        fi
    fi
    # Offline, or the package index moved on: an older cached kernel still
    # makes a working guest.
    if [ -z "$deb" ]; then
        deb=$(find_cached_deb)
        [ -n "$deb" ] || die "cannot resolve or download the Debian cloud kernel (apt-cache depends linux-image-cloud-amd64)"
        echo "build.sh: using cached $(basename "$deb")" >&2
    fi
fi

# --- is the cache current? ------------------------------------------------
# A Debian package file name carries its version, so name and size stand
# in for hashing 27 MB on every run.
stamp_now=$(
    {
        basename "$deb"
        wc -c <"$deb"
        sha256sum "$busybox" "$here/loadgen.c" "$here/init" "$0" | cut -d' ' -f1
        gcc --version | head -n 1
    } | sha256sum | cut -d' ' -f1
)
if [ $force = 0 ] && [ -f "$cache/stamp" ] && [ "$(cat "$cache/stamp")" = "$stamp_now" ] &&
    [ -f "$cache/vmlinuz" ] && [ -f "$cache/initramfs.gz" ]; then
    # Remember that the package lists were checked against this build.
    touch "$cache/stamp"
    echo "$deb" >"$cache/deb-path"
    echo "build.sh: up to date" >&2
    echo "PT_GUEST_KERNEL=$cache/vmlinuz"
    echo "PT_GUEST_INITRD=$cache/initramfs.gz"
    exit 0
fi

# Everything below is built in a scratch directory and moved into place at
# the end, so an interrupted build never leaves a half-written guest.
work=$(mktemp -d "$cache/build.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

echo "build.sh: unpacking $(basename "$deb")" >&2
dpkg-deb -x "$deb" "$work/pkg"
vmlinuz=$(ls "$work"/pkg/boot/vmlinuz-* | head -n 1)
[ -f "$vmlinuz" ] || die "no vmlinuz in $deb"
kver=${vmlinuz##*/vmlinuz-}
moddir=$work/pkg/lib/modules/$kver
config=$work/pkg/boot/config-$kver

# --- modules --------------------------------------------------------------
root=$work/root
mkdir -p "$root/bin" "$root/lib/modules"

# depends= names modules with '_', while some files use '-' (virtio-rng.ko
# is module virtio_rng), so the pattern accepts either.
module_path() {
    pat=$(echo "$1" | sed 's/_/[_-]/g')
    find "$moddir/kernel" -name "$pat.ko" -o -name "$pat.ko.xz" -o -name "$pat.ko.zst" -o -name "$pat.ko.gz" |
        head -n 1
}

# Some kernels ship compressed modules; busybox insmod cannot read every
# compression, so they go into the initramfs plain.
module_install() {
    case "$1" in
    *.ko) cp "$1" "$2" ;;
    *.ko.xz) xz -dc "$1" >"$2" ;;
    *.ko.zst) zstd -qdc "$1" >"$2" ;;
    *.ko.gz) gzip -dc "$1" >"$2" ;;
    esac
}

# Depth-first over "depends=" in each module's .modinfo section, emitting a
# module after its dependencies: that is the insmod order.  No modinfo or
# depmod needed, and a module built into this kernel is simply skipped.
module_visit() {
    grep -qx "$1" "$work/seen" 2>/dev/null && return 0
    echo "$1" >>"$work/seen"
    if grep -q "/$(echo "$1" | sed 's/_/[_-]/g')\.ko\$" "$moddir/modules.builtin" 2>/dev/null; then
        return 0
    fi
    src=$(module_path "$1")
    [ -n "$src" ] || die "module $1 is neither built in nor shipped in $kver"
    module_install "$src" "$root/lib/modules/$1.ko"
    deps=$(tr '\0' '\n' <"$root/lib/modules/$1.ko" | sed -n 's/^depends=//p' | tr ',' ' ')
    for dep in $deps; do
        module_visit "$dep"
    done
    echo "$1" >>"$root/modules.order"
}

: >"$root/modules.order"
for m in $wanted_modules; do
    module_visit "$m"
done
echo "build.sh: $kver modules: $(tr '\n' ' ' <"$root/modules.order")" >&2
grep -q '^CONFIG_AIO=y' "$config" || die "$kver lacks CONFIG_AIO, loadgen needs it"
grep -q '^CONFIG_DEVTMPFS=y' "$config" || die "$kver lacks CONFIG_DEVTMPFS, init needs it"

# --- userland -------------------------------------------------------------
cp "$busybox" "$root/bin/busybox"
gcc -static -O2 -Wall -Wextra -Werror -o "$root/bin/loadgen" "$here/loadgen.c"
strip "$root/bin/loadgen" 2>/dev/null || true
cp "$here/init" "$root/init"
chmod 755 "$root/init" "$root/bin/busybox" "$root/bin/loadgen"

# Sorted names, fixed owner and times: the same inputs give the same bytes.
find "$root" -exec touch -h -d @0 {} +
(cd "$root" && find . | LC_ALL=C sort | cpio --quiet --reproducible -o -H newc -R 0:0) |
    gzip -9n >"$work/initramfs.gz"
cp "$vmlinuz" "$work/vmlinuz"
cp "$config" "$work/config"

mv -f "$work/vmlinuz" "$cache/vmlinuz"
mv -f "$work/initramfs.gz" "$cache/initramfs.gz"
mv -f "$work/config" "$cache/config"
echo "$kver" >"$cache/kernel-version"
echo "$deb" >"$cache/deb-path"
echo "$stamp_now" >"$cache/stamp"

echo "build.sh: built guest for $kver in $cache" >&2
echo "PT_GUEST_KERNEL=$cache/vmlinuz"
echo "PT_GUEST_INITRD=$cache/initramfs.gz"
