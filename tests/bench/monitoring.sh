#!/usr/bin/env bash
# Monitoring cost, measured: nasd with every collector at 10 s against
# collectd 5.12 with the equivalent plugins (cpu, cpufreq, thermal, load,
# memory, disk, interface, df) writing through rrdtool, side by side for
# DURATION seconds (600 by default): CPU seconds, peak RSS and bytes
# written, with ratios. Then a one-year query at 800 points on a year of
# 15-minute buckets. Needs root (for /proc/<pid>/io) and collectd.
set -euo pipefail
nasd=${NASD:-target/release/nasd}
DURATION=${DURATION:-600}
work=$(mktemp -d -p /tmp nasd-bench-XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
[ -x "$nasd" ] || { echo "build first: $nasd missing" >&2; exit 1; }
tck=$(getconf CLK_TCK)

cpu_secs() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
peak_kib() { awk '/VmHWM/ { print $2 }' "/proc/$1/status"; }
written() { awk '/^write_bytes/ { print $2 }' "/proc/$1/io"; }

"$nasd" --config /dev/null serve --listen 127.0.0.1:0 --data-dir "$work/nasd" \
  --iperf3-port 0 --sample-interval 10 2>"$work/nasd.log" &
nasd_pid=$!; pids+=("$nasd_pid")

mkdir -p "$work/collectd/rrd"
cat > "$work/collectd/collectd.conf" <<CONF
Hostname "bench"
FQDNLookup false
Interval 10
BaseDir "$work/collectd"
PIDFile "$work/collectd/collectd.pid"
PluginDir "/usr/lib/collectd"
TypesDB "/usr/share/collectd/types.db"
LoadPlugin cpu
LoadPlugin cpufreq
LoadPlugin thermal
LoadPlugin load
LoadPlugin memory
LoadPlugin disk
LoadPlugin interface
LoadPlugin df
LoadPlugin rrdtool
<Plugin rrdtool>
  DataDir "$work/collectd/rrd"
</Plugin>
CONF
collectd -f -C "$work/collectd/collectd.conf" >"$work/collectd.log" 2>&1 &
collectd_pid=$!; pids+=("$collectd_pid")

sleep "$DURATION"
n_cpu=$(cpu_secs "$nasd_pid"); c_cpu=$(cpu_secs "$collectd_pid")
n_rss=$(peak_kib "$nasd_pid"); c_rss=$(peak_kib "$collectd_pid")
n_w=$(written "$nasd_pid"); c_w=$(written "$collectd_pid")
ratio() { python3 -c "a, b = $1, $2; print('%.3f' % (a / b) if b else 'n/a')"; }
printf '%-22s %14s %14s %8s  %s\n' measure nasd collectd ratio target
printf '%-22s %14s %14s %8s  %s\n' "CPU seconds" "$n_cpu" "$c_cpu" "$(ratio "$n_cpu" "$c_cpu")" "<= 0.5"
printf '%-22s %11s KiB %10s KiB %8s  %s\n' "peak RSS" "$n_rss" "$c_rss" "$(ratio "$n_rss" "$c_rss")" "nasd <= 20 MiB"
printf '%-22s %14s %14s %8s  %s\n' "bytes written" "$n_w" "$c_w" "$(ratio "$n_w" "$c_w")" "<= 0.1"
echo "(${DURATION} s, both sampling every 10 s; nasd commits every 300 s)"

# A year of 15-minute buckets for one series, then the query.
kill "$nasd_pid"; wait "$nasd_pid" 2>/dev/null || true
python3 - "$work/nasd/nasd.db" <<'PY'
import sqlite3, sys, time, math
db = sqlite3.connect(sys.argv[1])
db.execute("INSERT OR IGNORE INTO metric_series (key) VALUES ('bench_year')")
sid = db.execute("SELECT id FROM metric_series WHERE key = 'bench_year'").fetchone()[0]
now = int(time.time()) // 900 * 900
rows = [(sid, now - i * 900, 40 + 10 * math.sin(i / 96), 30.0, 60.0, 90) for i in range(365 * 96)]
db.executemany("INSERT OR REPLACE INTO metric_15m (series, t, avg, min, max, n) VALUES (?, ?, ?, ?, ?, ?)", rows)
db.commit()
PY
"$nasd" --config /dev/null serve --listen 127.0.0.1:0 --data-dir "$work/nasd" --iperf3-port 0 2>"$work/nasd2.log" &
pids+=($!)
for _ in $(seq 50); do grep -q "listening on" "$work/nasd2.log" && break; sleep 0.1; done
url=$(grep -o 'http://[0-9.:]*' "$work/nasd2.log" | head -1)
token=$(cat "$work/nasd/setup-token")
curl -s -c "$work/cookies" -H 'Content-Type: application/json' -H "Origin: $url" \
  -d "{\"token\":\"$token\",\"username\":\"admin\",\"password\":\"benchmark password\"}" "$url/api/v1/setup" >/dev/null
from=$(( $(date +%s) - 365 * 86400 )); to=$(date +%s)
q="$url/api/v1/metrics/query?series=bench_year&from=$from&to=$to&points=800"
curl -s -b "$work/cookies" "$q" >/dev/null  # warm
best=$(for _ in 1 2 3 4 5; do curl -s -o /dev/null -w '%{time_total}\n' -b "$work/cookies" "$q"; done | sort -n | head -1)
points=$(curl -s -b "$work/cookies" "$q" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["t"]))')
echo "one-year query, 800 points asked, $points returned: $(python3 -c "print('%.1f' % ($best * 1000))") ms (best of 5, over HTTP; target < 50 ms)"
