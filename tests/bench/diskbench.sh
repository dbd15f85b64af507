#!/usr/bin/env bash
# The disk engine against fio 3.33 (libaio), one run each, from the same job
# file, each tool laying out (in full) its own 1 GiB file in the same
# directory of a loop-mounted ext4 image: 4K random read
# at queue depth 32 and 64K sequential read, direct I/O, one job. Caches are
# dropped before every run; the loop device uses direct I/O on its backing
# file so the host's page cache does not serve the reads.
set -euo pipefail
nasd=${NASD:-target/release/nasd}
RUNTIME=${RUNTIME:-20}
[ -x "$nasd" ] || { echo "build first: $nasd missing" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "diskbench needs root (loop devices, mount)" >&2; exit 1; }
command -v fio >/dev/null || { echo "fio missing: run tests/install-deps.sh" >&2; exit 1; }

work=$(mktemp -d /var/tmp/nasd-diskbench.XXXXXX)
loop=""
cleanup() {
  mountpoint -q "$work/mnt" && umount "$work/mnt"
  [ -n "$loop" ] && losetup -d "$loop"
  rm -rf "$work"
}
trap cleanup EXIT
truncate -s 3G "$work/disk.img"
loop=$(losetup --find --show --direct-io=on "$work/disk.img")
mkfs.ext4 -q -F "$loop"
mkdir "$work/mnt"
mount -o noatime "$loop" "$work/mnt"
mkdir "$work/mnt/bench"
# nasd records each run: its database goes to the work directory.
printf 'data_dir = "%s/state"\n' "$work" > "$work/nasd.toml"

jobfile() { # name rw bs
  cat <<JOB
[global]
ioengine=libaio
direct=1
size=1g
numjobs=1
time_based=1
runtime=${RUNTIME}
ramp_time=2

[$1]
rw=$2
bs=$3
iodepth=$4
JOB
}

# iops bw_bytes_per_s p50_us. fio's latency is its total (submission to
# completion, lat_percentiles), which is what nasd times.
# nasd prints fio's JSON shape too (--fio-json), so one parser reads both.
fio_figures() {
  python3 -c 'import json,sys; r=json.load(sys.stdin)["jobs"][0]["read"]; p=r["lat_ns"]["percentile"]; print("%.0f %.0f %.1f" % (r["iops"], r["bw_bytes"], p["50.000000"]/1000))'
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

printf '%-14s %12s %12s %8s | %12s %12s %8s | %6s %6s %6s\n' job "fio IOPS" "fio MiB/s" "p50 us" "nasd IOPS" "nasd MiB/s" "p50 us" IOPS BW p50
for spec in "randread-4k-qd32 randread 4k 32" "read-64k-qd32 read 64k 32"; do
  set -- $spec
  jobfile "$@" > "$work/$1.fio"
  sync; echo 3 > /proc/sys/vm/drop_caches
  read -r f_iops f_bw f_p50 < <(cd "$work/mnt/bench" && fio --output-format=json --lat_percentiles=1 "$work/$1.fio" | fio_figures)
  rm -f "$work/mnt/bench/$1".*
  sync; echo 3 > /proc/sys/vm/drop_caches
  read -r n_iops n_bw n_p50 < <("$nasd" --config "$work/nasd.toml" bench disk --fio "$work/$1.fio" --target "$work/mnt/bench" --fio-json | fio_figures)
  printf '%-14s %12s %12.1f %8s | %12s %12.1f %8s | %6s %6s %6s\n' "$1" \
    "$f_iops" "$(python3 -c "print($f_bw/1048576)")" "$f_p50" \
    "$n_iops" "$(python3 -c "print($n_bw/1048576)")" "$n_p50" \
    "$(ratio "$n_iops" "$f_iops")" "$(ratio "$n_bw" "$f_bw")" "$(ratio "$n_p50" "$f_p50")"
done
echo "target: nasd IOPS and bandwidth >= 0.95x fio's, p50 latency within 10 % (ratio 0.90-1.10)"
