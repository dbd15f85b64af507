#!/usr/bin/env bash
# iperf3 compatibility, measured on loopback, 10 s each, one run: the stock
# client against the stock server (the reference), the stock client against
# nasd's server, and nasd's client against the stock server; forward and
# reverse (-R). Ratios are against the reference of the same direction.
set -euo pipefail
nasd=${NASD:-target/release/nasd}
SECONDS_EACH=${SECONDS_EACH:-10}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
[ -x "$nasd" ] || { echo "build first: $nasd missing" >&2; exit 1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

stock_port=$(free_port)
iperf3 -s -p "$stock_port" >/dev/null 2>&1 & pids+=($!)
nasd_port=$(free_port)
"$nasd" --config /dev/null serve --listen 127.0.0.1:0 --data-dir "$work/server" --iperf3-port "$nasd_port" 2>/dev/null & pids+=($!)
printf 'data_dir = "%s/client"\n' "$work" > "$work/client.toml"
sleep 1

# Gbit/s of the receiving side.
stock_client() { # port [-R]
  iperf3 -c 127.0.0.1 -p "$1" -t "$SECONDS_EACH" -J ${2:-} |
    python3 -c 'import json,sys; print("%.2f" % (json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9))'
}
nasd_client() { # port [--reverse]
  "$nasd" --config "$work/client.toml" bench net --peer "127.0.0.1:$1" --time "$SECONDS_EACH" --json ${2:-} 2>/dev/null |
    python3 -c 'import json,sys; r=json.load(sys.stdin); f=r["client_to_server"] or r["server_to_client"]; print("%.2f" % (f["bits_per_second"] / 1e9))'
}
ratio() { python3 -c "print('%.2f' % ($1 / $2))"; }

printf '%-9s %22s %22s %22s\n' direction "iperf3 -> iperf3" "iperf3 -> nasd" "nasd -> iperf3"
for dir in forward reverse; do
  stock_flag=""; nasd_flag=""
  [ "$dir" = reverse ] && stock_flag="-R" && nasd_flag="--reverse"
  ref=$(stock_client "$stock_port" "$stock_flag")
  to_nasd=$(stock_client "$nasd_port" "$stock_flag")
  from_nasd=$(nasd_client "$stock_port" "$nasd_flag")
  printf '%-9s %16s Gbit/s %11s (%sx) %11s (%sx)\n' "$dir" "$ref" "$to_nasd" "$(ratio "$to_nasd" "$ref")" "$from_nasd" "$(ratio "$from_nasd" "$ref")"
done
echo "(loopback, ${SECONDS_EACH} s each, one stream, receiver's figure; target: 0.95x or better)"
