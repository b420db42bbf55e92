#!/usr/bin/env bash
# One computation of verbs processes, as a user runs them: a pingpong tool's server in the
# background and its client against 127.0.0.1, over softib (IB_PINGPONG_PAIRS such pairs at once,
# default 1). Prints only what does not depend on timing or on the identifiers the fabric hands
# out (so a run under Stasis compares byte for byte with one without): a line once every pair has
# exchanged its addresses, then each side's exit status and iteration count.
# Usage: pingpong_pair.sh TOOL SOFTIB_LIBDIR WORKDIR ITERS [more TOOL options]
#   TOOL: ibv_rc_pingpong, ibv_srq_pingpong or ibv_ud_pingpong
set -u
tool=$1 libdir=$2 work=$3 iters=$4
shift 4
pairs=${IB_PINGPONG_PAIRS:-1}
command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (apt-get install ibverbs-utils)"; exit 77; }
mkdir -p "$work/fabric"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SOFTIB_FABRIC_DIR=$work/fabric

# Starts pair $1's server and then its client, until the client is connected (it has printed
# the server's address; a refused connection ends it while the server is not listening yet).
start_pair() {
  local n=$1 port
  shift
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  # Line-buffered output (stdbuf), so the client's "remote address" shows once it is connected.
  stdbuf -oL "$tool" -p "$port" -n "$iters" "$@" >"$work/server$n.out" 2>&1 &
  servers[n]=$!
  for _ in $(seq 1 200); do
    : >"$work/client$n.out"
    stdbuf -oL "$tool" -p "$port" -n "$iters" "$@" 127.0.0.1 >"$work/client$n.out" 2>&1 &
    clients[n]=$!
    while kill -0 "${clients[n]}" 2>/dev/null && ! grep -q "remote address" "$work/client$n.out"; do sleep 0.05; done
    grep -q "remote address" "$work/client$n.out" && return
    wait "${clients[n]}"
    sleep 0.1
  done
}

servers=() clients=()
for n in $(seq 1 "$pairs"); do start_pair "$n" "$@"; done
echo "pingpong running"
iters_of() { sed -n 's/^\([0-9]*\) iters in .*/\1/p' "$1"; }
for n in $(seq 1 "$pairs"); do
  wait "${clients[n]}"; client_rc=$?
  wait "${servers[n]}"; server_rc=$?
  label=; [ "$pairs" = 1 ] || label="pair $n "
  echo "${label}server: exit $server_rc, $(iters_of "$work/server$n.out") iterations"
  echo "${label}client: exit $client_rc, $(iters_of "$work/client$n.out") iterations"
done
