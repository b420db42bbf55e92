#!/bin/bash
# exec_loop.sh [ROUNDS=1500]: a shell under `set -e` that starts /bin/true three at a time (each a
# fork and an exec, two in the background, waited for by pid), ROUNDS times. Under `set -e` one
# command that does not exit 0, e.g. one killed by Stasis's checkpoint signal, ends the script:
# the computation is lost. Prints "step N" every 25 rounds. With STASIS_SOAK_FINISH_FILE set
# (tests/soak_driver.py), goes on with rounds after the last, saying so on stderr only, until that
# file exists: it lasts as long as the checkpoints need, and its output stays the same.
set -e
rounds=${1:-1500}
three_at_a_time() {
  /bin/true & a=$!
  /bin/true & b=$!
  /bin/true
  wait $a
  wait $b
}
i=0
while [ $i -lt $rounds ]; do
  three_at_a_time
  i=$((i + 1))
  if [ $((i % 25)) = 0 ]; then echo "step $i"; fi
done
hold=0
while [ -n "${STASIS_SOAK_FINISH_FILE:-}" ] && [ ! -e "$STASIS_SOAK_FINISH_FILE" ]; do
  three_at_a_time
  hold=$((hold + 1))
  echo "exec_loop: hold round $hold" >&2
done
echo done
