#!/usr/bin/env bash
# softib throughput with Debian's unmodified ibv_rc_pingpong, server and client on this host:
# message rate with small messages and bandwidth with large ones, each the median of 3 runs, over
# the local transport (Unix sockets) and over TCP (SOFTIB_TRANSPORT=tcp, loopback).
# Usage: bench/softib_bench.sh [dir with softib's libibverbs.so.1]   (default build-softib/lib/softib)
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
libdir=${1:-$here/build-softib/lib/softib}
[ -e "$libdir/libibverbs.so.1" ] || { echo "no softib library in $libdir (build target softib_verbs)" >&2; exit 1; }
command -v ibv_rc_pingpong >/dev/null || { echo "install ibverbs-utils" >&2; exit 1; }
fabric=$(mktemp -d /tmp/softib-bench.XXXXXX)
trap 'rm -rf "$fabric"' EXIT
export LD_LIBRARY_PATH=$libdir SOFTIB_FABRIC_DIR=$fabric

# Prints the client's "N iters in T seconds" line's T for one run.
one_run() {  # size iters
  local port; port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  timeout 60 ibv_rc_pingpong -g 0 -p "$port" -s "$1" -n "$2" >"$fabric/server.out" 2>&1 &
  local spid=$!
  for _ in $(seq 1 100); do
    timeout 60 ibv_rc_pingpong -g 0 -p "$port" -s "$1" -n "$2" 127.0.0.1 >"$fabric/client.out" 2>&1 || true
    grep -q "Couldn't connect" "$fabric/client.out" || break
    sleep 0.05
  done
  wait "$spid"
  awk '/iters in/ {print $4}' "$fabric/client.out"
}

median3() { printf '%s\n' "$@" | sort -g | sed -n 2p; }

small=64 small_iters=20000
large=1048576 large_iters=500
for transport in auto tcp; do
  export SOFTIB_TRANSPORT=$transport
  t=(); for _ in 1 2 3; do t+=("$(one_run $small $small_iters)"); done
  ts=$(median3 "${t[@]}")
  t=(); for _ in 1 2 3; do t+=("$(one_run $large $large_iters)"); done
  tl=$(median3 "${t[@]}")
  # Each iteration of ibv_rc_pingpong moves one message in each direction.
  awk -v n=$small_iters -v t="$ts" -v s=$small -v via=$transport 'BEGIN {
    printf "SOFTIB_TRANSPORT=%s: message rate (%d B, RC send, median of 3): %.0f msg/s per direction, %.1f us round trip\n", via, s, n/t, t/n*1e6 }'
  awk -v n=$large_iters -v t="$tl" -v s=$large -v via=$transport 'BEGIN {
    printf "SOFTIB_TRANSPORT=%s: bandwidth (%d B, RC send, median of 3): %.0f MB/s per direction (%.2f Gbit/s)\n", via, s, n*s/t/1e6, n*s*8/t/1e9 }'
done
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
