#!/bin/bash
# A job holds a log open for writing and the program it launches inherits it (ctest does this with
# LastTest.log.tmp at descriptor 3); then the job deletes the log. The checkpoint must take the
# deleted log as the job's stream, not refuse it as a deleted file whose bytes it cannot read
# (it is write-only). Restarted by the job, which still holds the log, the program writes to it
# again; restarted from a shell that does not hold it, to /dev/null. Both restarts finish with
# the program's output file equal to an uninterrupted run's.
# usage: outside_deleted.sh STASIS COUNTER
set -euo pipefail
STASIS=$1 COUNTER=$2
STEPS=60 DELAY_MS=40
WORK=$(mktemp -d /tmp/stasis-outside-deleted.XXXXXX)
. "$(dirname "$0")/../../../../tests/lib/private_coordinator.sh"
trap 'private_coordinator_cleanup "$STASIS" "$WORK"' EXIT
private_coordinator "$STASIS" "$WORK"
"$COUNTER" "$STEPS" 0 > "$WORK/reference"
fail() { echo "FAIL: $*"; exit 1; }
steps_in() { grep -c '^step' "$1" 2>/dev/null || true; }
wait_for_steps() {  # FILE COUNT
  for _ in $(seq 500); do [ "$(steps_in "$1")" -ge "$2" ] && return 0; sleep 0.02; done
  fail "timed out waiting for $2 steps in $1"
}

exec 3>>"$WORK/job.log"
"$STASIS" launch -- "$COUNTER" "$STEPS" "$DELAY_MS" > "$WORK/out" 2> "$WORK/launch.err" &
program=$!
wait_for_steps "$WORK/out" 10
rm "$WORK/job.log"
generation=$("$STASIS" checkpoint --kill) || fail "the checkpoint refused the deleted log: $(cat "$WORK/launch.err")"
wait "$program" 2>/dev/null || true
[ "$(readlink /proc/$$/fd/3)" = "$WORK/job.log (deleted)" ] || fail "the job lost its log"

# The job, which holds the log at 3, restarts: the program's descriptor 3 is the job's again.
"$STASIS" restart "$generation" 2> "$WORK/restart1.err" &
program=$!
wait_for_steps "$WORK/out" $(($(steps_in "$WORK/out") + 5))
# `stasis restart` becomes the program (the same pid).
[ "$(readlink /proc/$program/fd/3)" = "$WORK/job.log (deleted)" ] || fail "restart 1: descriptor 3 is $(readlink /proc/$program/fd/3)"
kill -9 "$program"; wait "$program" 2>/dev/null || true

# A shell without the log restarts the same checkpoint: descriptor 3 is /dev/null.
exec 3>&-
"$STASIS" restart "$generation" 2> "$WORK/restart2.err" &
program=$!
wait_for_steps "$WORK/out" $(($(steps_in "$WORK/out") + 3))
[ "$(readlink /proc/$program/fd/3)" = /dev/null ] || fail "restart 2: descriptor 3 is $(readlink /proc/$program/fd/3)"
wait "$program" || fail "the restarted program exited with status $?: $(cat "$WORK/restart2.err")"
cmp "$WORK/reference" "$WORK/out" || { diff "$WORK/reference" "$WORK/out" | head; fail "output differs"; }
echo "PASS: a deleted log shared with the job is the job's stream; restarts give exact output"
