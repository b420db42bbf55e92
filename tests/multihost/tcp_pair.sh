#!/bin/sh
# The computation of tcp_swap_test.py, started on its first host: a TCP server here and its
# client on HOST2 (through LAUNCHER, an ssh stand-in), which connects to this host at HOST1.
# The client's lines come back through the launcher's pipe, prefixed.
# usage: tcp_pair.sh LAUNCHER HOST1 HOST2 TCP_PEER PORT STEPS DELAY_MS [again]
launcher=$1 host1=$2 host2=$3 peer=$4 port=$5 steps=$6 delay=$7 again=${8:-}
"$peer" server "$port" "$steps" "$delay" $again &
"$launcher" "$host2" "$peer" client "$host1" "$port" "$steps" "$delay" $again | while IFS= read -r line; do echo "host2: $line"; done
wait
echo "both done"
