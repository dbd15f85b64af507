#!/usr/bin/env bash
# Installs what `make test` and `make cross` need on a fresh Debian 12
# machine, and nothing that is already there. Run as root (CI is root).
set -euo pipefail

apt_packages=(
  gcc-aarch64-linux-gnu gcc-arm-linux-gnueabihf        # cross linkers (HC4, XU4)
  libc6-dev-arm64-cross libc6-dev-armhf-cross          # their sysroots, also for qemu-user -L
  qemu-user-static                                     # runs the ARM test binaries
  systemd                                              # systemd-analyze verifies the unit
  chromium                                             # browser tests of the web UI
  util-linux fdisk psmisc                              # losetup, blkid, wipefs, mount; sfdisk
  e2fsprogs xfsprogs btrfs-progs ntfs-3g exfatprogs dosfstools  # mkfs.* and ntfs-3g over FUSE
  smartmontools hdparm                                 # SMART, spindown
  samba smbclient samba-common-bin nfs-kernel-server   # smbd, testparm, smbcontrol, pdbedit, exportfs
  iperf3 fio                                           # the peers of the network and disk benchmarks
  collectd-core rrdtool                                # loads the nasd collectd plugin; the monitoring bench's peer
  curl                                                 # the monitoring bench's HTTP client
  bc                                                   # arithmetic in the benchmark scripts
  tzdata                                               # time zones for schedules (DST tests use Europe/Berlin)
  mmdebstrap arch-test binfmt-support                  # the images' root filesystems, foreign stages under qemu-user
  mtools xz-utils                                      # the images' FAT partition without mounting; .img.xz
  qemu-system-arm                                      # boots the images (qemu-system-aarch64 and -arm)
  openssh-client                                       # the image smoke test's way into the VM
)
rust_targets=(aarch64-unknown-linux-gnu armv7-unknown-linux-gnueabihf)
rust_components=(rustfmt clippy)

missing=()
# Node.js may come from elsewhere with npm bundled; Debian's npm package
# would conflict with that, so only a machine without npm gets Debian's.
command -v npm >/dev/null || missing+=(nodejs npm)
for pkg in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "install-deps: apt packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# mmdebstrap runs the images' ARM packages' scripts through qemu-user's
# binfmt handlers: the filesystem must be mounted and both handlers on.
[ -e /proc/sys/fs/binfmt_misc/register ] || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
for handler in qemu-aarch64 qemu-arm; do
  grep -qx enabled "/proc/sys/fs/binfmt_misc/$handler" 2>/dev/null || update-binfmts --enable "$handler"
done

installed_targets=$(rustup target list --installed)
for target in "${rust_targets[@]}"; do
  grep -qx "$target" <<<"$installed_targets" || rustup target add "$target"
done
installed_components=$(rustup component list --installed)
for component in "${rust_components[@]}"; do
  grep -q "^$component" <<<"$installed_components" || rustup component add "$component"
done

# The browser tests' driver, at the version package-lock.json pins.
(cd "$(dirname "$0")/browser" && npm ci --no-audit --no-fund --loglevel=error)
