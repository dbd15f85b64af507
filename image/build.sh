#!/usr/bin/env bash
# Builds an SD-card image for a board, as root, without mounting anything:
# a Debian bookworm root filesystem from mmdebstrap (foreign stages through
# qemu-user binfmt), nasd's .deb inside, a FAT boot partition made with
# mkfs.vfat -C and mtools, an ext4 root made with mkfs.ext4 -d, both
# written at their offsets behind an sfdisk table starting at 16 MiB.
# Usage: image/build.sh hc4|xu4 [OUTDIR]   (XU4: BLOBS=DIR with Hardkernel's boot loaders)
set -euo pipefail
board=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${2:-$repo/image/out}
mirror=${MIRROR:-http://deb.debian.org/debian}
case $board in
  hc4) arch=arm64 kernel=linux-image-arm64 dtb=amlogic/meson-sm1-odroid-hc4.dtb console=ttyAML0,115200
       # The SD card's supplies (fixed and GPIO regulators) come before its
       # controller; SATA sits behind the SoC's PCIe.
       modules="virtio_blk virtio_pci virtio_net virtio_mmio ext4 fixed gpio_regulator mmc_block meson_gx_mmc pci_meson ahci xhci_plat_hcd xhci_pci uas usb_storage sd_mod" ;;
  xu4) arch=armhf kernel=linux-image-armmp dtb=exynos5422-odroidxu4.dtb console=ttySAC2,115200
       # The SD card's supplies come from the S2MPS11 PMIC on the I2C bus.
       modules="virtio_blk virtio_pci virtio_net virtio_mmio ext4 i2c_exynos5 s2mps11 clk_s2mps11 mmc_block dw_mmc_exynos xhci_plat_hcd uas usb_storage sd_mod r8152"
       # The Exynos boot ROM's layout, as Hardkernel's sd_fusing.sh writes
       # it: file, first 512-byte sector, room before the next one (bytes).
       blobs="bl1.bin.hardkernel 1 15360
bl2.bin.hardkernel.720k_uboot 31 16384
u-boot-dtb.bin 63 737280
tzsw.bin.hardkernel 1503 262144"
       while read -r blob sector room; do
         file=${BLOBS:-/nonexistent}/$blob
         if [ ! -f "$file" ]; then
           echo "image: the XU4 boots through Hardkernel's signed boot loaders, which Debian cannot ship:" >&2
           echo "image: bl1.bin.hardkernel, bl2.bin.hardkernel.720k_uboot, tzsw.bin.hardkernel (sd_fuse/ of" >&2
           echo "image: https://github.com/hardkernel/u-boot, branch odroidxu4-v2017.05) and the u-boot-dtb.bin" >&2
           echo "image: built from that branch (odroid-xu4_defconfig). Put them in one folder and set BLOBS=DIR." >&2
           exit 1
         fi
         size=$(stat -c %s "$file")
         [ "$size" -le "$room" ] || { echo "image: $blob is $size bytes; sector $sector has room for $room" >&2; exit 1; }
       done <<<"$blobs" ;;
  *) echo "image: board must be hc4 or xu4" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "image: run as root (mmdebstrap's chroot)" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$repo/daemon/Cargo.toml" | head -1)
work=$(mktemp -d /var/tmp/nasd-image.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
deb=$("$repo/image/deb.sh" "$arch" "$work")

# The armhf security index on some mirrors lags behind its packages; the
# armhf image is built from bookworm and bookworm-updates then, and says
# so; the board's sources list has bookworm-security all the same.
security="deb http://deb.debian.org/debian-security bookworm-security main"
suites="deb $mirror bookworm main
deb $mirror bookworm-updates main"
if [ "$arch" = arm64 ]; then
  suites="$suites
$security"
else
  echo "image: armhf: building without bookworm-security (its index is often stale on mirrors); apt upgrade on the board brings it" >&2
fi

packages=systemd-sysv,udev,kmod,initramfs-tools,$kernel,dbus,iproute2,netbase,systemd-timesyncd,openssh-server,avahi-daemon,samba,smbclient,nfs-kernel-server,ntfs-3g,exfatprogs,xfsprogs,btrfs-progs,e2fsprogs,dosfstools,smartmontools,hdparm,tzdata,ca-certificates,cloud-guest-utils,fdisk,less
mmdebstrap --arch="$arch" --variant=minbase --include="$packages" \
  --essential-hook='chroot "$1" dpkg-divert --local --rename --add /usr/sbin/update-initramfs && ln -s /bin/true "$1/usr/sbin/update-initramfs"' \
  --customize-hook="copy-in $deb /tmp" \
  --customize-hook='chroot "$1" sh -c "dpkg -i /tmp/nasd_*.deb && rm /tmp/nasd_*.deb"' \
  --customize-hook="upload $repo/image/rootfs/nasd-firstboot /usr/local/sbin/nasd-firstboot" \
  --customize-hook="upload $repo/image/rootfs/nasd-firstboot.service /etc/systemd/system/nasd-firstboot.service" \
  --customize-hook="upload $repo/image/rootfs/nasd-announce.service /etc/systemd/system/nasd-announce.service" \
  --customize-hook='mkdir -p "$1/etc/systemd/journald.conf.d" "$1/etc/initramfs/post-update.d"' \
  --customize-hook="upload $repo/image/rootfs/nasd-boot-files /etc/initramfs/post-update.d/nasd-boot-files" \
  --customize-hook="upload $repo/image/rootfs/journald.conf /etc/systemd/journald.conf.d/nasd.conf" \
  --customize-hook="upload $repo/image/rootfs/network.network /etc/systemd/network/50-dhcp.network" \
  --customize-hook="upload $repo/image/rootfs/sshd.conf /etc/ssh/sshd_config.d/nasd.conf" \
  --customize-hook='chroot "$1" sh -c "chmod 755 /usr/local/sbin/nasd-firstboot /etc/initramfs/post-update.d/nasd-boot-files && systemctl enable nasd-firstboot.service nasd-announce.service systemd-networkd systemd-timesyncd && rm -f /etc/ssh/ssh_host_* && : > /etc/machine-id && echo nasd > /etc/hostname"' \
  --customize-hook="chroot \"\$1\" sh -c 'printf \"LABEL=root / ext4 noatime,errors=remount-ro 0 1\nLABEL=BOOT /boot/firmware vfat noatime,nofail,x-systemd.device-timeout=30s 0 2\n\" > /etc/fstab && mkdir -p /boot/firmware'" \
  --customize-hook="chroot \"\$1\" sh -c 'echo MODULES=list > /etc/initramfs-tools/conf.d/nasd.conf && for m in $modules; do echo \$m; done >> /etc/initramfs-tools/modules'" \
  --customize-hook='chroot "$1" sh -c "rm /usr/sbin/update-initramfs && dpkg-divert --local --rename --remove /usr/sbin/update-initramfs && update-initramfs -c -k all"' \
  --customize-hook="chroot \"\$1\" sh -c 'grep -qF \"$security\" /etc/apt/sources.list || echo \"$security\" >> /etc/apt/sources.list'" \
  --customize-hook="sync-out /boot $work/boot" \
  bookworm "$work/rootfs" - <<<"$suites"

kver=$(ls "$work/boot" | sed -n 's/^vmlinuz-//p' | sort -V | tail -1)
mkdir -p "$work/fat/extlinux" "$work/fat/dtbs"
cp "$work/boot/vmlinuz-$kver" "$work/fat/vmlinuz"
cp "$work/boot/initrd.img-$kver" "$work/fat/initrd.img"
dtbdir=$(ls -d "$work/rootfs/usr/lib/linux-image-$kver" 2>/dev/null || true)
[ -n "$dtbdir" ] || { echo "image: the kernel package has no device trees in /usr/lib/linux-image-$kver" >&2; exit 1; }
install -D "$dtbdir/$dtb" "$work/fat/dtbs/$dtb"
cat > "$work/fat/extlinux/extlinux.conf" <<CONF
# Read by the HC4's SPI Petitboot (or any u-boot with distro boot).
DEFAULT nasd
TIMEOUT 10
LABEL nasd
  KERNEL /vmlinuz
  INITRD /initrd.img
  FDT /dtbs/$dtb
  APPEND root=LABEL=root rootwait rw console=$console console=tty1 panic=10
CONF

if [ "$board" = xu4 ]; then
  # Hardkernel's u-boot reads boot.ini; the HC1 and HC2 use the HC1 tree.
  install -D "$dtbdir/exynos5422-odroidhc1.dtb" "$work/fat/dtbs/exynos5422-odroidhc1.dtb"
  cat > "$work/fat/boot.ini" <<INI
ODROIDXU-UBOOT-CONFIG
# For an HC1 or HC2, change odroidxu4 to odroidhc1 on the fdt line.
setenv bootargs "root=LABEL=root rootwait rw console=$console console=tty1 panic=10"
load mmc 0:1 0x40008000 vmlinuz
load mmc 0:1 0x44000000 dtbs/exynos5422-odroidxu4.dtb
load mmc 0:1 0x42000000 initrd.img
bootz 0x40008000 0x42000000:\${filesize} 0x44000000
INI
fi

# Layout: 16 MiB for boot blobs, 256 MiB FAT, then the root (grown to the
# card at first boot).
boot_mib=256
root_bytes=$(( $(du -sb "$work/rootfs" | cut -f1) * 13 / 10 + (256 << 20) ))
root_mib=$(( root_bytes >> 20 ))
rm -f "$work/boot.img"
mkfs.vfat -n BOOT -C "$work/boot.img" $((boot_mib * 1024)) >/dev/null
(cd "$work/fat" && mcopy -s -i "$work/boot.img" ./* ::/)
mkfs.ext4 -q -L root -d "$work/rootfs" "$work/root.img" "${root_mib}M"
img=$work/disk.img
truncate -s $(( (16 + boot_mib + root_mib + 1) << 20 )) "$img"
sfdisk -q "$img" <<TABLE
label: dos
start=16MiB, size=${boot_mib}MiB, type=c, bootable
start=$((16 + boot_mib))MiB, type=83
TABLE
dd if="$work/boot.img" of="$img" bs=1M seek=16 conv=notrunc,sparse status=none
dd if="$work/root.img" of="$img" bs=1M seek=$((16 + boot_mib)) conv=notrunc,sparse status=none
if [ "$board" = xu4 ]; then
  while read -r blob sector _; do
    dd if="$BLOBS/$blob" of="$img" seek="$sector" conv=notrunc status=none
  done <<<"$blobs"
fi
name=nasd-$version-$board
cp "$work/fat/vmlinuz" "$out/$name.vmlinuz"
cp "$work/fat/initrd.img" "$out/$name.initrd.img"
cp --sparse=always "$img" "$out/$name.img"
xz -T0 -3 -k -f "$out/$name.img"
(cd "$out" && sha256sum "$name.img.xz" > "$name.img.xz.sha256")
echo "$out/$name.img.xz"
