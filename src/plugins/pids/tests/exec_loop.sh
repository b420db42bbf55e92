#!/bin/bash
# exec_loop.sh [ROUNDS=1500]: a shell under `set -e` that starts /bin/true three at a time (each a
# fork and an exec, two in the background, waited for by pid), ROUNDS times. Under `set -e` one
# command that does not exit 0, e.g. one killed by Stasis's checkpoint signal, ends the script:
# the computation is lost. Prints "step N" every 25 rounds.
set -e
rounds=${1:-1500}
i=0
while [ $i -lt $rounds ]; do
  /bin/true & a=$!
  /bin/true & b=$!
  /bin/true
  wait $a
  wait $b
  i=$((i + 1))
  if [ $((i % 25)) = 0 ]; then echo "step $i"; fi
done
echo done
