#!/usr/bin/env bash
# The arm64 image's smoke test, from the host, on a copy of the image booted
# in qemu-system-aarch64 (its own kernel and initrd, user networking with
# nasd's HTTP, SMB and SSH ports forwarded, one extra 1 GiB disk):
#  - nasd is set up with the token read from the serial console;
#  - the extra disk is listed, partitioned, formatted ext4 and mounted;
#  - a Samba user and a share (also exported over NFS to the VM itself) are
#    made; smbclient on the host writes a file and reads it back;
#  - inside the VM the NFS export is mounted over loopback and the file is
#    there; a disk's read-ahead is tuned;
#  - the .deb is installed again in place: the service restarts on it and
#    the database stays;
#  - the VM reboots through the API, and the mount, share, user, tuning and
#    file are all still there.
# The test's way in is an SSH key written into the copy's /root/.ssh with
# debugfs (the image itself takes no password and carries no key). Serial
# logs are kept beside the image.
# Usage: image/smoke-test.sh OUT/nasd-VERSION-hc4
set -euo pipefail
base=$1
repo=$(cd "$(dirname "$0")/.." && pwd)
http=${HTTP_PORT:-18081} smb=${SMB_PORT:-18445} sshp=${SSH_PORT:-18022}
work=$(mktemp -d /var/tmp/nasd-smoke.XXXXXX)
cleanup() { kill "$(cat "$work/pid" 2>/dev/null)" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
started=$(date +%s)
cp --sparse=always "$base.img" "$work/disk.img"
truncate -s 1G "$work/extra.img"

# The test's SSH key, in the copy only.
ssh-keygen -q -t ed25519 -N '' -C nasd-smoke-test -f "$work/key"
read -r root_offset root_bytes < <(sfdisk -J "$work/disk.img" | python3 -c 'import json,sys; t=json.load(sys.stdin)["partitiontable"]; p=t["partitions"][1]; s=t.get("sectorsize", 512); print(p["start"] * s, p["size"] * s)')
# A card larger than the image, as a real one is: first boot grows the root.
truncate -s +1G "$work/disk.img"
debugfs -w -f - "$work/disk.img?offset=$root_offset" >/dev/null 2>"$work/debugfs.log" <<CMDS
mkdir /root/.ssh
write $work/key.pub /root/.ssh/authorized_keys
sif /root/.ssh mode 040700
sif /root/.ssh/authorized_keys mode 0100600
sif /root/.ssh/authorized_keys uid 0
sif /root/.ssh/authorized_keys gid 0
CMDS
vm() { # command...: runs in the VM as root
  ssh -q -i "$work/key" -p "$sshp" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null -o ConnectTimeout=10 root@127.0.0.1 "$@"
}

boot() { # serial-log-name
  qemu-system-aarch64 -M virt -cpu cortex-a53 -smp 2 -m 1024 -nographic -no-reboot \
    -kernel "$base.vmlinuz" -initrd "$base.initrd.img" \
    -append "root=LABEL=root rootwait rw console=ttyAMA0 panic=-1" \
    -drive "file=$work/disk.img,format=raw,if=none,id=hd0" -device virtio-blk-pci,drive=hd0 \
    -drive "file=$work/extra.img,format=raw,if=none,id=hd1" -device virtio-blk-pci,drive=hd1,serial=EXTRA1 \
    -netdev "user,id=n0,hostfwd=tcp:127.0.0.1:$http-:80,hostfwd=tcp:127.0.0.1:$smb-:445,hostfwd=tcp:127.0.0.1:$sshp-:22" \
    -device virtio-net-pci,netdev=n0,romfile= > "$base.$1.serial.log" 2>&1 &
  echo $! > "$work/pid"
  local start; start=$(date +%s)
  # The answer must come from this VM: it is alive when it comes.
  until curl -fsS "http://127.0.0.1:$http/api/v1/health" >/dev/null 2>&1 && kill -0 "$(cat "$work/pid")" 2>/dev/null; do
    sleep 2
    kill -0 "$(cat "$work/pid")" 2>/dev/null || { tail -30 "$base.$1.serial.log"; echo "smoke: qemu exited" >&2; exit 1; }
    [ $(( $(date +%s) - start )) -lt 600 ] || { tail -30 "$base.$1.serial.log"; echo "smoke: no API after 600 s" >&2; exit 1; }
  done
  echo "smoke: $1 boot: API answered after $(( $(date +%s) - start )) s"
}
api() { # METHOD PATH [JSON]: the answer on stdout; a failure says why and stops
  local out
  if ! out=$(curl -sS --fail-with-body -X "$1" -b "$work/cookies" -c "$work/cookies" \
      -H "origin: http://127.0.0.1:$http" -H 'content-type: application/json' ${3:+--data "$3"} \
      "http://127.0.0.1:$http/api/v1/$2"); then
    echo "smoke: FAILED: $1 $2: $out; nasd's log:" >&2
    vm journalctl -u nasd -n 40 --no-pager >&2 || true
    exit 1
  fi
  printf '%s' "$out"
}
field() { # python expression on `d`, the JSON on stdin
  python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"
}
check() { # what command...
  local what=$1; shift
  if "$@"; then echo "smoke: ok: $what"; else echo "smoke: FAILED: $what" >&2; exit 1; fi
}
smb() { # smbclient command string, as alice
  local tries=0
  until smbclient "//127.0.0.1/media" -p "$smb" -U "alice%alice secret pw" -c "$1" > "$work/smb.log" 2>&1; do
    # Right after a boot smbd may not listen yet (QEMU's forward then
    # resets the connection): only that is waited for, up to a minute.
    tries=$((tries + 1))
    if [ $tries -lt 30 ] && grep -q 'NT_STATUS_CONNECTION_\(RESET\|REFUSED\)' "$work/smb.log"; then
      sleep 2
      continue
    fi
    cat "$work/smb.log" >&2
    echo "smoke: FAILED: smbclient -c '$1'" >&2
    exit 1
  done
}

boot first
for _ in $(seq 60); do grep -qa "setup token" "$base.first.serial.log" && break; sleep 1; done
token=$(grep -ao 'setup token [0-9a-f]*' "$base.first.serial.log" | tail -1 | awk '{print $3}')
check "the console shows the setup token" test -n "$token"
api POST setup "{\"token\":\"$token\",\"username\":\"admin\",\"password\":\"correct horse battery\"}" >/dev/null
name=$(vm hostname)
check "first boot named the box from its MAC ($name) and made SSH host keys" \
  grep -qx 'nasd-[0-9a-f]\{4\}' <<<"$name"
check "first boot grew the root filesystem to the card" \
  test "$(vm df -B1 --output=size / | tail -1)" -gt $(( root_bytes + (768 << 20) ))
check "avahi-daemon, which announces it over mDNS, is running" test "$(vm systemctl is-active avahi-daemon)" = active
check "the root is mounted noatime" grep -q noatime <<<"$(vm findmnt -no OPTIONS /)"
journals=$(vm journalctl --header | sed -n 's/^File path: //p')
check "the journal is kept in RAM" test -n "$journals" -a -z "$(grep -v '^/run/log/journal/' <<<"$journals")"
disk=$(api GET disks | field 'next(x["name"] for x in d["disks"] if x["serial"] == "EXTRA1")')
check "the extra disk is listed ($disk)" test -n "$disk"
volume=$(api POST "disks/$disk/format" '{"fs":"ext4","label":"data"}' | field 'd["name"]')
mount=$(api POST "disks/$volume/mount" '{}' | field 'd["mountpoint"]')
check "it is partitioned, formatted ext4 ($volume) and mounted at $mount" test -n "$mount"
api POST users '{"username":"alice","password":"alice secret pw"}' >/dev/null
share=$(api POST shares "{\"name\":\"media\",\"path\":\"$mount/family/media\",\"users\":[\"alice\"],\"nfs\":{\"clients\":[\"127.0.0.1\"]}}")
check "the share is made with its folders and no warning" test "$(field 'd["warnings"]' <<<"$share")" = "[]"

head -c 3000000 /dev/urandom > "$work/up.bin"
smb "put $work/up.bin photo.bin; get photo.bin $work/down.bin"
check "smbclient writes a 3 MB file as alice and reads it back byte-identical" cmp -s "$work/up.bin" "$work/down.bin"
sum=$(sha256sum < "$work/up.bin" | cut -d' ' -f1)
check "inside the VM, the NFS export mounted over loopback holds the file" \
  test "$(vm "mkdir -p /mnt/nfs && mount -t nfs 127.0.0.1:$mount/family/media /mnt/nfs && sha256sum < /mnt/nfs/photo.bin && umount /mnt/nfs" | cut -d' ' -f1)" = "$sum"

api PUT tuning "{\"disk\":\"$disk\",\"read_ahead_kb\":2048}" >/dev/null
check "the read-ahead of $disk is tuned to 2048 KiB" test "$(vm cat "/sys/block/$disk/queue/read_ahead_kb")" = 2048
check "a kernel upgrade's files reach the boot partition" test "$(vm 'v=$(uname -r); rm /boot/firmware/vmlinuz /boot/firmware/initrd.img &&
  /etc/initramfs/post-update.d/nasd-boot-files "$v" "/boot/initrd.img-$v" &&
  cmp /boot/vmlinuz-$v /boot/firmware/vmlinuz && cmp /boot/initrd.img-$v /boot/firmware/initrd.img && echo copied')" = copied
check "writes to the system disk are reported" test "$(api GET metrics/card-writes | field 'd["disk"]')" = vda

# Upgrade in place: the same .deb installed again goes through the
# upgrade path of its maintainer scripts.
"$repo/image/deb.sh" arm64 "$work/deb" >/dev/null
pid_before=$(vm systemctl show -P MainPID nasd)
vm 'cat > /tmp/nasd.deb' < "$work/deb/"nasd_*_arm64.deb
vm 'dpkg -i /tmp/nasd.deb >/dev/null && rm /tmp/nasd.deb'
for _ in $(seq 30); do curl -fsS "http://127.0.0.1:$http/api/v1/health" >/dev/null 2>&1 && break; sleep 1; done
pid_after=$(vm systemctl show -P MainPID nasd)
check "dpkg -i restarts nasd on the package (pid $pid_before, then $pid_after)" test "$pid_after" != "$pid_before" -a "$pid_after" != 0
check "the session and database survive the upgrade" test "$(api GET shares | field '[s["name"] for s in d["shares"]]')" = "['media']"

# Reboot through the API: QEMU (-no-reboot) stops; start it again on the
# same disk.
api POST system/power '{"action":"reboot","confirm":"reboot"}' >/dev/null
for _ in $(seq 120); do kill -0 "$(cat "$work/pid")" 2>/dev/null || break; sleep 1; done
check "the VM went down for the reboot" sh -c "! kill -0 $(cat "$work/pid") 2>/dev/null"
boot second
rm -f "$work/cookies"
api POST login '{"username":"admin","password":"correct horse battery"}' >/dev/null
contains() { grep -qF -- "$1" <<<"$2"; }
check "the disk is mounted again after the reboot" contains "\"mountpoint\":\"$mount\"" "$(api GET disks)"
check "the share is still there" test "$(api GET shares | field '[s["name"] for s in d["shares"]]')" = "['media']"
check "the user is still there" contains '"name":"alice"' "$(api GET users)"
check "the read-ahead is applied again" test "$(vm cat "/sys/block/$disk/queue/read_ahead_kb")" = 2048
smb "get photo.bin $work/again.bin"
check "the file comes back over SMB after the reboot" cmp -s "$work/up.bin" "$work/again.bin"
check "and over NFS inside the VM" \
  test "$(vm "for _ in \$(seq 60); do systemctl -q is-active nfs-server && break; sleep 1; done
    mount -t nfs 127.0.0.1:$mount/family/media /mnt/nfs && sha256sum < /mnt/nfs/photo.bin && umount /mnt/nfs" | cut -d' ' -f1)" = "$sum"
echo "smoke: all checks passed in $(( $(date +%s) - started )) s"
