#!/usr/bin/env bash
# Runs an unmodified Debian verbs tool against softib: server and client on this host, or with
# --netns in two network-namespace hosts joined by a veth pair.
# Usage: pingpong.sh <dir with softib's libibverbs.so.1> [--netns] <tool> [tool args...]
# Exit 77 (ctest SKIP) when the tool or, for --netns, namespaces are unavailable.
set -u
libdir=$1; shift
netns=0
if [ "${1:-}" = --netns ]; then netns=1; shift; fi
tool=$1; shift
command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed (apt-get install ibverbs-utils)"; exit 77; }

fabric=$(mktemp -d /tmp/softib-test.XXXXXX)
suffix=$$
ns1=softib_t1_$suffix ns2=softib_t2_$suffix
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  if [ $netns = 1 ]; then ip netns del "$ns1" 2>/dev/null; ip netns del "$ns2" 2>/dev/null; fi
  rm -rf "$fabric"
}
trap cleanup EXIT

server_addr=127.0.0.1
in_server=() in_client=()
if [ $netns = 1 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! ip netns add "$ns1" 2>/dev/null; then
    echo "SKIP: needs root and iproute2 network namespaces"; exit 77
  fi
  ip netns add "$ns2" || exit 1
  ip -n "$ns1" link set lo up && ip -n "$ns2" link set lo up
  ip link add "sib1_$suffix" netns "$ns1" type veth peer name "sib2_$suffix" netns "$ns2" || exit 1
  # 10.233.x.0/30 chosen from the pid so parallel runs do not collide; only inside our namespaces.
  net=$(( suffix % 250 + 1 ))
  ip -n "$ns1" addr add "10.233.$net.1/30" dev "sib1_$suffix" && ip -n "$ns1" link set "sib1_$suffix" up
  ip -n "$ns2" addr add "10.233.$net.2/30" dev "sib2_$suffix" && ip -n "$ns2" link set "sib2_$suffix" up
  server_addr=10.233.$net.1
  in_server=(ip netns exec "$ns1") in_client=(ip netns exec "$ns2")
fi

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])')
export LD_LIBRARY_PATH=$libdir SOFTIB_FABRIC_DIR=$fabric
"${in_server[@]}" timeout 25 "$tool" -p "$port" "$@" >"$fabric/server.out" 2>&1 &
server_pid=$!
client_rc=1
for _ in $(seq 1 100); do  # the server needs a moment before it listens
  "${in_client[@]}" timeout 25 "$tool" -p "$port" "$@" "$server_addr" >"$fabric/client.out" 2>&1
  client_rc=$?
  grep -q "Couldn't connect" "$fabric/client.out" || break
  cat "$fabric/client.out" >>"$fabric/client-retries.out"
  sleep 0.1
done
wait "$server_pid"; server_rc=$?; server_pid=
echo "--- server"; cat "$fabric/server.out"; echo "--- client"; cat "$fabric/client.out"
[ -f "$fabric/client-retries.out" ] && { echo "--- client attempts before the server listened"; cat "$fabric/client-retries.out"; }
[ "$server_rc" = 0 ] && [ "$client_rc" = 0 ] || { echo "FAIL: server rc=$server_rc client rc=$client_rc"; exit 1; }
grep -q "iters in" "$fabric/client.out" && grep -q "iters in" "$fabric/server.out" || { echo "FAIL: no result line"; exit 1; }
leftovers=$(cd "$fabric" && ls | grep -E '^(qp|ep)-' || true)
[ -z "$leftovers" ] || { echo "FAIL: fabric entries left behind: $leftovers"; exit 1; }
echo PASS
