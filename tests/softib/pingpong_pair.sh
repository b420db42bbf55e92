#!/usr/bin/env bash
# One computation of verbs processes, as a user runs them: a pingpong tool's server in the
# background and its client against 127.0.0.1, over softib (IB_PINGPONG_PAIRS such pairs at once,
# default 1). Prints only what does not depend on timing or on the identifiers the fabric hands
# out (so a run under Stasis compares byte for byte with one without): a line once every pair has
# exchanged its addresses, then each side's exit status and iteration count. With SOFTIB_TRACE set,
# that line waits until both sides of every pair have connected through softib too (their trace
# says so), so that a checkpoint taken after it finds them talking.
# With IB_PINGPONG_REMOTE="LAUNCHER SERVER_ADDRESS CLIENT_HOST", each client runs on CLIENT_HOST
# through LAUNCHER (ssh or a stand-in: it passes no environment, so the command names softib's
# library and fabric directory) against the server at SERVER_ADDRESS.
# Usage: pingpong_pair.sh TOOL SOFTIB_LIBDIR WORKDIR ITERS [more TOOL options]
#   TOOL: ibv_rc_pingpong, ibv_srq_pingpong or ibv_ud_pingpong
set -u
tool=$1 libdir=$2 work=$3 iters=$4
shift 4
pairs=${IB_PINGPONG_PAIRS:-1}
command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (apt-get install ibverbs-utils)"; exit 77; }
mkdir -p "$work/fabric"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SOFTIB_FABRIC_DIR=$work/fabric
read -r launcher server_address client_host <<<"${IB_PINGPONG_REMOTE:-}"

# Pair $1's client, its output in WORKDIR/client$1.out; the rest: TOOL's arguments.
start_client() {
  local n=$1
  shift
  if [ -z "$launcher" ]; then
    stdbuf -oL "$tool" "$@" 127.0.0.1 >"$work/client$n.out" 2>&1 &
  else
    # Through sh: Stasis rewrites a launcher's command when sh execs it, not when bash does.
    sh -c 'exec "$@"' sh "$launcher" "$client_host" \
      "exec env LD_LIBRARY_PATH=$libdir SOFTIB_FABRIC_DIR=$work/fabric" \
      "stdbuf -oL $tool $* $server_address >$work/client$n.out 2>&1" &
  fi
  clients[n]=$!
}

# Starts pair $1's server and then its client, until the client is connected (it has printed
# the server's address; a refused connection ends it while the server is not listening yet).
start_pair() {
  local n=$1 port
  shift
  port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
  # Line-buffered output (stdbuf), so the client's "remote address" shows once it is connected.
  stdbuf -oL "$tool" -p "$port" -n "$iters" "$@" >"$work/server$n.out" 2>&1 &
  servers[n]=$!
  for _ in $(seq 1 200); do
    : >"$work/client$n.out"
    start_client "$n" -p "$port" -n "$iters" "$@"
    while kill -0 "${clients[n]}" 2>/dev/null && ! grep -q "remote address" "$work/client$n.out"; do sleep 0.05; done
    if grep -q "remote address" "$work/client$n.out"; then
      [ -n "${SOFTIB_TRACE:-}" ] && wait_for_softib_connections "$n"
      return
    fi
    wait "${clients[n]}"
    sleep 0.1
  done
}

wait_for_softib_connections() {
  local n=$1
  while kill -0 "${clients[n]}" 2>/dev/null &&
    ! { grep -q "softib.*connected to" "$work/server$n.out" && grep -q "softib.*connected to" "$work/client$n.out"; }; do
    sleep 0.05
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
