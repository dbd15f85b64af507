#!/usr/bin/env bash
# Boots a built image in QEMU's virt machine (arm64: qemu-system-aarch64;
# armhf: qemu-system-arm with highmem off; its own kernel and initrd,
# snapshot=on, user networking with nasd's port forwarded, one extra 1 GiB
# disk) and waits for nasd's API and the setup token on the serial console.
# Usage: image/boot-check.sh OUT/nasd-VERSION-BOARD[-qemu-only]
set -euo pipefail
base=$1
port=${PORT:-18080}
case $(basename "$base") in
  *-hc4) qemu=(qemu-system-aarch64 -M virt -cpu cortex-a53) ;;
  *-xu4*) qemu=(qemu-system-arm -M virt,highmem=off -cpu cortex-a15) ;;
  *) echo "boot-check: $base names no board" >&2; exit 2 ;;
esac
work=$(mktemp -d)
trap 'kill $(cat "$work/pid" 2>/dev/null) 2>/dev/null || true; rm -rf "$work"' EXIT
truncate -s 1G "$work/extra.img"
timeout 900 "${qemu[@]}" -smp 2 -m 1024 -nographic -no-reboot \
  -kernel "$base.vmlinuz" -initrd "$base.initrd.img" \
  -append "root=LABEL=root rootwait rw console=ttyAMA0 panic=-1" \
  -drive "file=$base.img,format=raw,if=none,id=hd0,snapshot=on" -device virtio-blk-pci,drive=hd0 \
  -drive "file=$work/extra.img,format=raw,if=none,id=hd1" -device virtio-blk-pci,drive=hd1 \
  -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$port-:80" -device virtio-net-pci,netdev=n0,romfile= \
  > "$work/serial.log" 2>&1 &
echo $! > "$work/pid"
start=$(date +%s)
until curl -fsS "http://127.0.0.1:$port/api/v1/health" >/dev/null 2>&1; do
  sleep 2
  kill -0 "$(cat "$work/pid")" 2>/dev/null || { cp "$work/serial.log" "$base.serial.log"; tail -40 "$work/serial.log"; echo "boot-check: qemu exited" >&2; exit 1; }
  if [ $(( $(date +%s) - start )) -gt 600 ]; then cp "$work/serial.log" "$base.serial.log"; tail -40 "$work/serial.log"; echo "boot-check: no API after 600 s" >&2; exit 1; fi
done
echo "boot-check: API answered after $(( $(date +%s) - start )) s"
curl -fsS "http://127.0.0.1:$port/api/v1/health"; echo
for _ in $(seq 60); do grep -qa "setup token" "$work/serial.log" && break; sleep 1; done
cp "$work/serial.log" "${base}.serial.log"
grep -a "setup token" "$work/serial.log" | tail -1 | grep . || { echo "boot-check: no setup token on the console" >&2; exit 1; }
