#!/bin/bash
# A job script and the program it launches write to one log file: the script's own lines go
# through the description the program inherited (`./job.sh > log 2>&1`, or `>>` with `append`),
# or (`own_description`) through a description of its own (`exec 3>>log`) while the program
# appends through another (`stasis launch -- prog >> log`). With `restart_elsewhere` the job runs
# `>> log` but its restarts write to another file: the program appends to the log.
# The script checkpoints the program, kills it, restarts it, and does it again on the restarted
# program. The log must keep every line the script printed, hold no NUL byte, and hold the
# program's whole output (steps after a checkpoint may appear twice: they are never cut from a
# file another process writes too).
# usage: outside_writer.sh STASIS COUNTER truncate|append|own_description|restart_elsewhere
set -euo pipefail
STASIS=$1 COUNTER=$2 MODE=$3
STEPS=80 DELAY_MS=40
WORK=$(mktemp -d /tmp/stasis-outside-writer.XXXXXX)
. "$(dirname "$0")/../../../../tests/lib/private_coordinator.sh"
trap 'private_coordinator_cleanup "$STASIS" "$WORK"' EXIT
private_coordinator "$STASIS" "$WORK"
"$COUNTER" "$STEPS" 0 > "$WORK/reference"

cat > "$WORK/job.sh" <<'JOB'
#!/bin/bash
# The job: its stdout and stderr are the log; the program inherits them.
set -u
STASIS=$1 COUNTER=$2 STEPS=$3 DELAY_MS=$4 LOG=$5 MODE=$6
if [ "$MODE" = own_description ]; then exec 3>>"$LOG"; else exec 3>&1; fi
steps_in_log() { tr -d '\0' < "$LOG" | grep -c '^step' || true; }
wait_for_steps() {  # at least $1 step lines in the log
  for _ in $(seq 500); do [ "$(steps_in_log)" -ge "$1" ] && return 0; sleep 0.02; done
  echo "job: timed out waiting for $1 steps" >&3; exit 1
}
echo "job: line 1, before launch" >&3
if [ "$MODE" = own_description ]; then
  "$STASIS" launch -- "$COUNTER" "$STEPS" "$DELAY_MS" >> "$LOG" &
else
  "$STASIS" launch -- "$COUNTER" "$STEPS" "$DELAY_MS" &
fi
PROGRAM=$!
echo "job: line 2, launched pid $PROGRAM" >&3
base=0  # step lines in the log when the program last started: it runs (and has joined) past them
for round in 1 2; do
  wait_for_steps $((base + 10))
  echo "job: round $round, checkpointing" >&3
  GEN=$("$STASIS" checkpoint) || { echo "job: checkpoint failed" >&3; exit 1; }
  echo "job: round $round, checkpoint in $(basename "$GEN")" >&3
  for i in 1 2 3; do echo "job: round $round, after the checkpoint, line $i" >&3; sleep 0.05; done
  wait_for_steps $(($(steps_in_log) + 4))  # the program writes past the checkpoint, then dies
  kill -9 "$PROGRAM"; wait "$PROGRAM" 2>/dev/null
  base=$(steps_in_log)
  echo "job: round $round, killed pid $PROGRAM" >&3
  if [ "$MODE" = restart_elsewhere ]; then
    "$STASIS" restart "$GEN" > "$LOG.elsewhere" 2>&1 &
  else
    "$STASIS" restart "$GEN" &
  fi
  PROGRAM=$!   # restart becomes the program (same pid)
  echo "job: round $round, restarting as pid $PROGRAM" >&3
done
wait "$PROGRAM"; status=$?
echo "job: the restarted program exited with status $status" >&3
echo "job: last line" >&3
JOB
chmod +x "$WORK/job.sh"

LOG=$WORK/log
JOB=("$WORK/job.sh" "$STASIS" "$COUNTER" "$STEPS" "$DELAY_MS" "$LOG" "$MODE")
case $MODE in
  truncate) "${JOB[@]}" > "$LOG" 2>&1 || true ;;
  append|restart_elsewhere) echo "outside: a line already in the log" > "$LOG"
                           "${JOB[@]}" >> "$LOG" 2>&1 || true ;;
  own_description) echo "outside: a line already in the log" > "$LOG"
                   "${JOB[@]}" > "$WORK/job.out" 2>&1 || true ;;
  *) echo "unknown mode $MODE"; exit 2 ;;
esac

fail() { echo "FAIL: $*"; echo "---- the log:"; cat -A "$LOG" | head -200; exit 1; }
nuls=$(tr -cd '\0' < "$LOG" | wc -c)
[ "$nuls" -eq 0 ] || fail "the log holds $nuls NUL bytes"
expected=("job: line 1, before launch" "job: line 2, launched pid" "job: the restarted program exited with status 0"
          "job: last line")
[ "$MODE" != truncate ] && expected+=("outside: a line already in the log")
for round in 1 2; do
  expected+=("job: round $round, checkpointing" "job: round $round, checkpoint in"
             "job: round $round, killed pid" "job: round $round, restarting as pid")
  for i in 1 2 3; do expected+=("job: round $round, after the checkpoint, line $i"); done
done
for line in "${expected[@]}"; do
  grep -qF -- "$line" "$LOG" || fail "the log lost the job's line '$line'"
done
# The program's output: every line of the reference, in order (a run of steps after a checkpoint
# may be there twice: once from the killed run, once from the restarted one), nothing else.
grep -v '^job: \|^outside: \|^stasis restart: ' "$LOG" > "$WORK/program_lines" || true
python3 - "$WORK/reference" "$WORK/program_lines" <<'PY' || fail "the program's output is not the reference"
import sys
ref = open(sys.argv[1]).read().splitlines()
got = open(sys.argv[2]).read().splitlines()
# Walk the log: each line is the next reference line, or a step already seen (a repeated run).
i = 0
for n, line in enumerate(got):
    if i < len(ref) and line == ref[i]:
        i += 1
    elif line in ref[:i] and line.startswith("step"):
        continue
    else:
        sys.exit(f"log line {n + 1} {line!r}: expected {ref[i] if i < len(ref) else 'the end'!r}")
if i != len(ref):
    sys.exit(f"the log ends after reference line {i} of {len(ref)}")
PY
if [ "$MODE" = restart_elsewhere ] && grep -q '^step' "$LOG.elsewhere"; then
  echo "FAIL: the restarted program wrote to restart's stdout, not to the log:"; cat "$LOG.elsewhere"; exit 1
fi
if [ "$MODE" = own_description ]; then  # restart said it kept what another writer may have written
  grep -q "warning: .*log (descriptor 1) has [0-9]* bytes after its size at the checkpoint and a process outside the computation had it open for writing" "$WORK/job.out" ||
    { echo "FAIL: restart did not say it kept the bytes:"; cat "$WORK/job.out"; exit 1; }
fi
echo "PASS: every job line kept, no NUL byte, the program's output complete ($(grep -c '^step' "$LOG") step lines for $STEPS steps)"
