#!/usr/bin/env bash
# Packages nasd as a .deb for one architecture: the cross-built release
# binary (web UI embedded), the systemd unit and the default config.
# Usage: image/deb.sh arm64|armhf OUTDIR
set -euo pipefail
arch=$1 out=$2
case $arch in
  arm64) triple=aarch64-unknown-linux-gnu ;;
  armhf) triple=armv7-unknown-linux-gnueabihf ;;
  *) echo "deb.sh: arch must be arm64 or armhf" >&2; exit 2 ;;
esac
repo=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/daemon/Cargo.toml" | head -1)
bin=$repo/target/$triple/release/nasd
[ -x "$bin" ] || { echo "deb.sh: $bin missing: run make cross" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$bin" "$stage/usr/bin/nasd"
install -D -m 0644 "$repo/etc/nasd.service" "$stage/lib/systemd/system/nasd.service"
install -D -m 0644 "$repo/etc/nasd.toml" "$stage/etc/nasd/nasd.toml"
install -D -m 0644 "$repo/README.md" "$stage/usr/share/doc/nasd/README.md"
mkdir -p "$stage/DEBIAN"
cat > "$stage/DEBIAN/control" <<CONTROL
Package: nasd
Version: $version
Architecture: $arch
Maintainer: nasd <nasd@localhost>
Depends: systemd, util-linux, e2fsprogs, smartmontools, hdparm, tzdata, ca-certificates
Recommends: samba, samba-common-bin, smbclient, nfs-kernel-server, ntfs-3g, exfatprogs, xfsprogs, btrfs-progs, avahi-daemon
Section: admin
Priority: optional
Description: NAS service for ODROID boards
 Disks, tuning, Samba and NFS shares, monitoring, benchmarks and
 scheduled self-tests behind one web page.
CONTROL
echo /etc/nasd/nasd.toml > "$stage/DEBIAN/conffiles"
# The database in /var/lib/nasd is never touched by an upgrade; the
# service restarts on the new binary.
cat > "$stage/DEBIAN/postinst" <<'POSTINST'
#!/bin/sh
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  # An upgrade restarts nasd and leaves it enabled or not, as its owner set it.
  if [ "$1" = configure ] && [ -n "$2" ]; then
    systemctl try-restart nasd.service
  else
    systemctl enable nasd.service >/dev/null
    systemctl start nasd.service || true
  fi
else
  # Image build (chroot): enable only.
  mkdir -p /etc/systemd/system/multi-user.target.wants
  ln -sf /lib/systemd/system/nasd.service /etc/systemd/system/multi-user.target.wants/nasd.service
fi
POSTINST
cat > "$stage/DEBIAN/prerm" <<'PRERM'
#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then systemctl stop nasd.service || true; fi
PRERM
chmod 0755 "$stage/DEBIAN/postinst" "$stage/DEBIAN/prerm"
mkdir -p "$out"
dpkg-deb --root-owner-group -Zxz --build "$stage" "$out/nasd_${version}_${arch}.deb" >/dev/null
echo "$out/nasd_${version}_${arch}.deb"
