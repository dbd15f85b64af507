#!/usr/bin/env bash
# The XU4 image's test: without Hardkernel's boot loaders the build stops
# and names them; with stand-ins of their sizes (random bytes: the real ones
# are signed and cannot be shipped) it writes each at its sector, before the
# first partition at 16 MiB; then the image boots in qemu-system-arm (its own
# kernel and initrd; the stand-ins are never run) until nasd answers.
# Usage: image/test-xu4.sh   (root; output in image/out/xu4-stand-in-blobs)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=$repo/image/out/xu4-stand-in-blobs
blobs=$(mktemp -d)
trap 'rm -rf "$blobs"' EXIT

if BLOBS=$blobs "$repo/image/build.sh" xu4 "$out" 2> "$blobs/refusal"; then
  echo "test-xu4: FAILED: the build went on without boot loaders" >&2; exit 1
fi
grep -q "bl1.bin.hardkernel, bl2.bin.hardkernel.720k_uboot, tzsw.bin.hardkernel" "$blobs/refusal" \
  || { cat "$blobs/refusal"; echo "test-xu4: FAILED: the refusal does not name the files" >&2; exit 1; }
echo "test-xu4: ok: without boot loaders the build stops and names them"

layout="bl1.bin.hardkernel 1 15360
bl2.bin.hardkernel.720k_uboot 31 14592
u-boot-dtb.bin 63 614400
tzsw.bin.hardkernel 1503 262144"
while read -r blob _ size; do head -c "$size" /dev/urandom > "$blobs/$blob"; done <<<"$layout"
image_xz=$(BLOBS=$blobs "$repo/image/build.sh" xu4 "$out" | tail -1)
img=${image_xz%.xz}
while read -r blob sector size; do
  cmp -s -n "$size" "$blobs/$blob" <(dd if="$img" bs=512 skip="$sector" count=$(( (size + 511) / 512 )) status=none) \
    || { echo "test-xu4: FAILED: $blob is not at sector $sector" >&2; exit 1; }
done <<<"$layout"
first=$(sfdisk -J "$img" | python3 -c 'import json,sys; print(json.load(sys.stdin)["partitiontable"]["partitions"][0]["start"])')
[ "$first" = 32768 ] || { echo "test-xu4: FAILED: the first partition starts at sector $first" >&2; exit 1; }
echo "test-xu4: ok: each boot loader is at its sector, the first partition at 16 MiB"
mdir -i "$img@@16M" ::/boot.ini >/dev/null && mtype -i "$img@@16M" ::/boot.ini | grep -q '^ODROIDXU-UBOOT-CONFIG' \
  || { echo "test-xu4: FAILED: no boot.ini for Hardkernel's u-boot" >&2; exit 1; }
echo "test-xu4: ok: boot.ini on the boot partition"
root_offset=$(sfdisk -J "$img" | python3 -c 'import json,sys; print(json.load(sys.stdin)["partitiontable"]["partitions"][1]["start"] * 512)')
debugfs -R "cat /etc/apt/sources.list" "$img?offset=$root_offset" 2>/dev/null | grep -q "bookworm-security" \
  || { echo "test-xu4: FAILED: the board's sources list lacks bookworm-security" >&2; exit 1; }
echo "test-xu4: ok: the board gets security updates"
PORT=${PORT:-18082} "$repo/image/boot-check.sh" "${img%.img}"
