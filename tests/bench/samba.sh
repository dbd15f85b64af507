#!/usr/bin/env bash
# Samba, measured: smbclient put and get of the same 1 GiB file over
# loopback, against an smbd running nasd's smb.conf and one running Debian's
# stock smb.conf (/usr/share/samba/smb.conf), side by side in one run,
# alternating rounds. Both share a guest read-write folder; each smbd gets
# its own port and state directories. Needs root and Samba.
set -euo pipefail
nasd=${NASD:-target/release/nasd}
ROUNDS=${ROUNDS:-3}
work=${WORK:-$(mktemp -d)}
cleanup() {
  for pid in "$work"/*/pid/*.pid; do [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null; done
  pkill -f "$work/" 2>/dev/null || true
  rm -rf "$work"
}
[ -n "${KEEP:-}" ] || trap cleanup EXIT
# Guests (nobody) must be able to walk into the shared folders.
chmod 0755 "$work"
[ -x "$nasd" ] || { echo "build first: $nasd missing" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# Private state for one smbd: the same overrides the tests use.
site() { # dir port
  mkdir -p "$1"/{state,lock,cache,private,pid,share}
  chmod 0777 "$1/share"
  printf '[global]\n   smb ports = %s\n   interfaces = 127.0.0.1\n   bind interfaces only = yes\n   state directory = %s/state\n   lock directory = %s/lock\n   cache directory = %s/cache\n   private dir = %s/private\n   pid directory = %s/pid\n   ncalrpc dir = %s/state/ncalrpc\n' "$2" "$1" "$1" "$1" "$1" "$1" "$1"
}

# nasd's: rendered and started by nasd itself, on a folder of a
# filesystem that counts as data (forced: the bench has no data disk).
nasd_port=$(free_port)
mkdir -p "$work/nasd/etc/samba"
site "$work/nasd" "$nasd_port" > "$work/nasd/etc/samba/nasd-site.conf"
printf 'data_dir = "%s/nasd/data"\n' "$work" > "$work/nasd/nasd.toml"
"$nasd" --config "$work/nasd/nasd.toml" --etc-dir "$work/nasd/etc" \
  shares add bench --path "$work/nasd/share" --guest --force >/dev/null 2>&1
nasd_conf=$work/nasd/etc/samba/smb.conf

# Debian's stock file, with the same private overrides and the same share.
debian_port=$(free_port)
debian_conf=$work/debian/smb.conf
site "$work/debian" "$debian_port" > "$work/debian-site.conf"
awk -v inc="   include = $work/debian-site.conf" '
  /^\[/ && seen_global && !done { print inc; done = 1 }
  /^\[global\]/ { seen_global = 1 }
  { print }
  END { if (!done) print inc }' /usr/share/samba/smb.conf > "$debian_conf"
printf '\n[bench]\n   path = %s/debian/share\n   guest ok = yes\n   read only = no\n' "$work" >> "$debian_conf"
smbd -D -s "$debian_conf"

head -c 1G /dev/zero | tr '\0' 'n' > "$work/big.bin"
seconds() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1; t1=$(date +%s.%N); echo "$t1 - $t0" | bc; }
transfer() { # conf port op ; prints MiB/s
  local conf=$1 port=$2 op=$3 cmd secs
  if [ "$op" = put ]; then cmd="put $work/big.bin big.bin"; else cmd="get big.bin /dev/null"; fi
  secs=$(seconds smbclient //127.0.0.1/bench -N -p "$port" -s "$conf" -c "$cmd")
  echo "scale=1; 1024 / $secs" | bc
}
summary() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{ v[NR] = $1 } END { printf "%s (%s-%s)", v[int((NR + 1) / 2)], v[1], v[NR] }'; }

# Wait for both servers.
for _ in $(seq 50); do
  smbclient -N -L //127.0.0.1 -p "$debian_port" -s "$debian_conf" >/dev/null 2>&1 && break; sleep 0.2
done
declare -A results
for _ in $(seq "$ROUNDS"); do
  for op in put get; do
    results[nasd_$op]+="$(transfer "$nasd_conf" "$nasd_port" $op) "
    results[debian_$op]+="$(transfer "$debian_conf" "$debian_port" $op) "
  done
done
printf '%-5s %26s %26s %7s\n' op "Debian stock MiB/s" "nasd MiB/s" ratio
for op in put get; do
  d=$(echo "${results[debian_$op]}" | summary)
  n=$(echo "${results[nasd_$op]}" | summary)
  ratio=$(echo "scale=2; ${n%% *} / ${d%% *}" | bc)
  printf '%-5s %26s %26s %6sx\n' "$op" "$d" "$n" "$ratio"
done
echo "(medians of $ROUNDS alternating rounds, 1 GiB each way over loopback, smbclient $(smbclient --version | cut -d' ' -f2))"
