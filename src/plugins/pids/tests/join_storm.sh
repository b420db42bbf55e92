#!/bin/bash
# join_storm.sh [ROUNDS=150]: processes checkpointed before they have joined. A process defers
# joining the coordinator by 20 ms (src/runtime/runtime.cc, kJoinDelayNs), so almost every
# process this script starts is still unjoined when a checkpoint comes: a subshell (a fork child
# that does not exec) that runs `sleep` (an exec'd program) for 0, 10 or 20 ms and prints, and a
# /bin/true beside it. Each is waited for by pid under `set -e`: a child the checkpoint left out
# would not come back at the restart, and `wait` would fail (or its line would be missing).
set -e
rounds=${1:-150}
for ((i = 1; i <= rounds; i++)); do
  (sleep "0.0$((i % 3))"; echo "child $i") & child=$!
  /bin/true & other=$!
  wait "$child"
  wait "$other"
  echo "step $i"
done
echo done
