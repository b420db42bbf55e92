#!/usr/bin/env bash
# One computation of two verbs processes, as a user runs them: ibv_rc_pingpong's server in the
# background and its client against 127.0.0.1, over softib. Prints only what does not depend on
# timing or on the identifiers the fabric hands out (so a run under Stasis compares byte for byte
# with one without): a line once both sides exchanged their addresses, then each side's exit
# status and iteration count.
# Usage: rc_pingpong_pair.sh SOFTIB_LIBDIR WORKDIR ITERS [more ibv_rc_pingpong options]
set -u
libdir=$1 work=$2 iters=$3
shift 3
command -v ibv_rc_pingpong >/dev/null || { echo "SKIP: ibv_rc_pingpong not installed (apt-get install ibverbs-utils)"; exit 77; }
mkdir -p "$work/fabric"
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SOFTIB_FABRIC_DIR=$work/fabric
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# Line-buffered output (stdbuf), so the client's "remote address" shows once it is connected.
stdbuf -oL ibv_rc_pingpong -p "$port" -n "$iters" "$@" >"$work/server.out" 2>&1 &
server=$!
client_rc=1
for _ in $(seq 1 200); do  # the server needs a moment before it listens
  : >"$work/client.out"
  stdbuf -oL ibv_rc_pingpong -p "$port" -n "$iters" "$@" 127.0.0.1 >"$work/client.out" 2>&1 &
  client=$!
  # Connected once the client has printed the server's address; a refused connection ends it.
  while kill -0 "$client" 2>/dev/null && ! grep -q "remote address" "$work/client.out"; do sleep 0.05; done
  grep -q "remote address" "$work/client.out" && break
  wait "$client"
  sleep 0.1
done
echo "pingpong running"
wait "$client"; client_rc=$?
wait "$server"; server_rc=$?
iters_of() { sed -n 's/^\([0-9]*\) iters in .*/\1/p' "$1"; }
echo "server: exit $server_rc, $(iters_of "$work/server.out") iterations"
echo "client: exit $client_rc, $(iters_of "$work/client.out") iterations"
