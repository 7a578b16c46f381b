#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Install everything polltune needs to build, test and demo on Debian 12.
# Idempotent: packages already present are left alone.
set -eu

PKGS="
build-essential meson ninja-build pkg-config git
libglib2.0-dev libjson-c-dev libvirt-dev libsqlite3-dev libsoup-3.0-dev
libsystemd-dev
sqlite3 valgrind clang libclang-rt-14-dev
qemu-system-x86 qemu-utils libvirt-daemon-system libvirt-clients
prometheus python3-prometheus-client
chromium chromium-driver libxml2-utils
busybox-static cpio
debhelper dpkg-dev lintian debootstrap systemd-container bash-completion
"

missing=""
for p in $PKGS; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then
        missing="$missing $p"
    fi
done

if [ -n "$missing" ]; then
    if [ "$(id -u)" -ne 0 ]; then
        echo "install-deps: need root to install:$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # --no-install-recommends keeps the prometheus server from pulling a
    # desktop's worth of packages; we only need promtool from it (and the
    # OpenMetrics parser of the Python client, to check that format too).
    apt-get install -y -q --no-install-recommends $missing
fi
