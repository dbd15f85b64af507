#!/usr/bin/env bash
# Mount options, measured: 1 GiB written with `dd conv=fdatasync` to an
# ntfs-3g loop mount and to an ext4 loop mount, each first with the
# driver's defaults and then with the options nasd applies (mounted through
# `nasd disks mount`), side by side in one run. Needs root.
set -euo pipefail
nasd=${NASD:-target/release/nasd}
work=$(mktemp -d)
cleanup() {
  for mp in "$work"/mnt/* "$work"/srv/*; do mountpoint -q "$mp" 2>/dev/null && umount -l "$mp"; done
  # Loops still attached to this run's images (after a failure midway).
  for img in "$work"/*.img; do
    losetup -j "$img" 2>/dev/null | cut -d: -f1 | xargs -r -n1 losetup -d 2>/dev/null
  done
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/etc" "$work/srv" "$work/mnt" "$work/data"
: > "$work/etc/fstab"
printf 'mount_base = "%s/srv"\ndata_dir = "%s/data"\n' "$work" "$work" > "$work/nasd.toml"
run_nasd() { "$nasd" --config "$work/nasd.toml" --etc-dir "$work/etc" "$@" 2>/dev/null; }

ROUNDS=${ROUNDS:-3}

# MiB/s of writing 1 GiB with dd, flushed to the device before dd exits.
write_speed() {
  sync
  echo 3 > /proc/sys/vm/drop_caches
  local file=$1/bench.bin
  local out
  out=$(LC_ALL=C dd if=/dev/zero of="$file" bs=1M count=1024 conv=fdatasync 2>&1 | tail -n 1)
  rm -f "$file"
  awk -v line="$out" 'BEGIN { split(line, f, " "); for (i = 1; i <= length(f); i++) if (f[i] == "s,") secs = f[i-1]; printf "%.1f", f[1] / secs / 1048576 }'
}

# Median and range of a list of numbers.
summary() { tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { printf "%s %s-%s", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

measure() { # fs mkfs-command... ; prints "defaults-median range nasd-median range options"
  local fs=$1; shift
  truncate -s 1536M "$work/$fs.img"
  local lo
  lo=$(losetup --find --show "$work/$fs.img")
  "$@" "$lo" >/dev/null 2>&1
  local plain=$work/mnt/$fs defaults_type=$fs name=${lo#/dev/} mp options
  [ "$fs" = ntfs ] && defaults_type=ntfs-3g
  mkdir -p "$plain"
  local defaults=() tuned=()
  # Alternate the two so that drift (a warming disk, a busy host) hits both.
  for _ in $(seq "$ROUNDS"); do
    mount -t "$defaults_type" "$lo" "$plain"
    defaults+=("$(write_speed "$plain")")
    umount "$plain"
    mp=$(run_nasd disks mount "$name" | awk '/mounted at/ { print $NF }')
    options=$(awk -v mp="$mp" '$2 == mp { print $4 }' /proc/mounts)
    tuned+=("$(write_speed "$mp")")
    run_nasd disks unmount "$name" >/dev/null
  done
  # measure runs in a subshell (process substitution): detach here, the
  # parent's cleanup never sees this loop.
  losetup -d "$lo"
  echo "$(echo "${defaults[*]}" | summary) $(echo "${tuned[*]}" | summary) $options"
}

[ -x "$nasd" ] || { echo "build first: $nasd missing" >&2; exit 1; }
printf '%-6s %22s %22s %7s  %s\n' fs "defaults MiB/s (range)" "nasd MiB/s (range)" ratio "nasd's options as mounted"
for spec in "ntfs mkfs.ntfs -Q -F -q -L bench" "ext4 mkfs.ext4 -q -F -L bench"; do
  set -- $spec
  fs=$1; shift
  read -r defaults d_range tuned t_range options < <(measure "$fs" "$@")
  ratio=$(awk -v a="$tuned" -v b="$defaults" 'BEGIN { printf "%.2f", a / b }')
  printf '%-6s %22s %22s %7s  %s\n' "$fs" "$defaults ($d_range)" "$tuned ($t_range)" "${ratio}x" "$options"
done
echo "(medians of $ROUNDS alternating rounds; 1 GiB each, dd bs=1M conv=fdatasync after dropping caches;"
echo " loop devices on $(df --output=source / | tail -1); ntfs-3g's big_writes is not listed in /proc/mounts but is passed by nasd)"
