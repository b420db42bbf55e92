#!/bin/bash
# A program writes its output file through a description without O_APPEND (`> out`) while a
# process outside the computation (its job script) holds the same file open for writing through
# a description of its own. After checkpoint and kill, the bytes past the checkpoint size may be
# the job's: restart must neither cut them nor write over them; it refuses, naming the file and
# the way out, and leaves the file as it was. Done as told (the bytes are the program's: cut the
# file to the size it names), the restart gives the uninterrupted run's output.
# usage: outside_writer_refused.sh STASIS COUNTER
set -euo pipefail
STASIS=$1 COUNTER=$2
WORK=$(mktemp -d /tmp/stasis-outside-refused.XXXXXX)
. "$(dirname "$0")/../../../../tests/lib/private_coordinator.sh"
trap 'private_coordinator_cleanup "$STASIS" "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
private_coordinator "$STASIS" "$WORK"
"$COUNTER" 40 0 > "$WORK/reference"
OUT=$WORK/out
steps() { grep -c '^step' "$OUT" 2>/dev/null || true; }
wait_for_steps() { for _ in $(seq 500); do [ "$(steps)" -ge "$1" ] && return 0; sleep 0.02; done; fail "no $1 steps"; }

# The job holds the output file open for writing (descriptor 3) while its program runs.
exec 3>>"$OUT"
"$STASIS" launch -- "$COUNTER" 40 40 > "$OUT" &
PROGRAM=$!
wait_for_steps 8
GEN=$("$STASIS" checkpoint)
wait_for_steps $(($(steps) + 4))  # the file grows past its size at the checkpoint
kill -9 "$PROGRAM"; wait "$PROGRAM" 2>/dev/null || true
cp "$OUT" "$WORK/before_restart"

if "$STASIS" restart "$GEN" > "$WORK/restart.out" 2> "$WORK/restart.err"; then
  fail "restart went ahead over bytes another writer may have written"
fi
cmp -s "$OUT" "$WORK/before_restart" || fail "the refused restart changed $OUT"
size=$(grep -oE 'cut the file to [0-9]+ bytes' "$WORK/restart.err" | grep -oE '[0-9]+') ||
  { cat "$WORK/restart.err"; fail "restart's refusal does not say what to cut the file to"; }
grep -q "$OUT (descriptor 1) has [0-9]* bytes after its size at the checkpoint" "$WORK/restart.err" ||
  { cat "$WORK/restart.err"; fail "restart's refusal does not name the file"; }
echo "refused as expected: $(head -c 300 "$WORK/restart.err")"

exec 3>&-  # the job lets go of the file, and says the bytes are the program's
truncate -s "$size" "$OUT"
"$STASIS" restart "$GEN" > "$WORK/restart.out" 2> "$WORK/restart.err" || { cat "$WORK/restart.err"; fail "restart after the cut failed"; }
cmp -s "$OUT" "$WORK/reference" || { diff "$WORK/reference" "$OUT" | head; fail "the output differs from the uninterrupted run's"; }
echo "PASS: refused without touching the file; after the cut it names, the output is the uninterrupted run's"
