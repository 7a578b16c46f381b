# SPDX-License-Identifier: GPL-2.0-or-later
# Sourced by the QEMU 10 shim and by pt-test-libvirt's start script: the
# host folders a process in the Debian 13 root must see at their own paths,
# and the function that bind-mounts them.  POSIX sh.
#
# The sockets, images and logs a test makes are in temporary folders; the
# guest's kernel and initramfs are under the source tree; the daemon and its
# test helpers are in the build tree.  A folder named in PT_QEMU10_BIND
# (colon-separated) is added.

pt_qemu10_dirs() {
    printf '%s\n' /dev /proc /sys /tmp /var/tmp "${TMPDIR:-}" "${PT_SOURCE_ROOT:-}" \
        "${PT_BUILD_ROOT:-}" "${PT_GUEST_CACHE:-}" "${PT_GUEST_RUNDIR:-}"
    if [ -n "${PT_QEMU10_BIND:-}" ]; then
        printf '%s\n' "$PT_QEMU10_BIND" | tr ':' '\n'
    fi
}

# Bind-mount each of those folders that exists into root $1 at the same
# path, parents first, a folder inside one already bound skipped.  Run it
# in a private mount namespace (unshare --mount --propagation private):
# the mounts then vanish with the last process in it.  The root itself is
# bound onto itself first, so that "/" inside is a mount point, as in any
# container: libvirt makes "/" a slave mount for QEMU's own namespace and
# fails ("Failed disable mount propagation") on a plain directory.
pt_qemu10_bind() {
    _root=$1
    _done=
    mount --bind "$_root" "$_root" || return 1
    for _d in $(pt_qemu10_dirs | grep '^/' | sed 's|/*$||' | grep . | sort -u); do
        [ -d "$_d" ] || continue
        _d=$(cd "$_d" && pwd -P)
        _skip=0
        for _p in $_done; do
            case $_d/ in "$_p"/*) _skip=1 ;; esac
        done
        [ $_skip = 0 ] || continue
        mkdir -p "$_root$_d" && mount --rbind "$_d" "$_root$_d" || return 1
        _done="$_done $_d"
    done
}
