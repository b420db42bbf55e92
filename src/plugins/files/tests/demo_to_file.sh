#!/bin/bash
# The README's demo with its output redirected to a file (`./scripts/demo.sh > demo.log 2>&1`):
# the file must hold no NUL byte and every line the demo printed. The demo's standard error is
# the launched program's too, so the demo's lines after the checkpoint were cut by restart once.
# usage: demo_to_file.sh BUILD_DIR
set -euo pipefail
BUILD=$1
ROOT=$(cd "$(dirname "$0")/../../../.." && pwd)
LOG=$(mktemp /tmp/stasis-demo-log.XXXXXX)
trap 'rm -f "$LOG"' EXIT
STASIS_DEMO_BUILD=$BUILD "$ROOT/scripts/demo.sh" > "$LOG" 2>&1 || { cat "$LOG"; echo "FAIL: the demo failed"; exit 1; }
fail() { echo "FAIL: $*"; echo "---- the log:"; cat -A "$LOG"; exit 1; }
nuls=$(tr -cd '\0' < "$LOG" | wc -c)
[ "$nuls" -eq 0 ] || fail "the log holds $nuls NUL bytes"
# Every line the demo prints, in order (patterns for the parts that change from run to run).
expected=('^== coordinator on 127\.0\.0\.1:[0-9]+; checkpoints go to '
          '^== stasis launch -- counter 30 100'
          '^   launch \| step 1 value '
          '^== stasis checkpoint --kill '
          '^   checkpoint written to .*/ckpt/000001:$'
          'MANIFEST\.json$'
          '^== stasis restart .*/ckpt/000001$'
          '^   \(stdout was a regular file'
          '^   restart exited with status 0$'
          '^== .*/out\.txt now: lines from the first run, then the restarted run'
          '^   (launch |restart) \| step 30 value '
          '^   restart \| done checksum 0x'
          '^== the restarted program continued after step [0-9]+ and ran to completion$')
line=0
for pattern in "${expected[@]}"; do
  found=$(tail -n +$((line + 1)) "$LOG" | grep -nE -m1 -- "$pattern" | cut -d: -f1) ||
    fail "no line /$pattern/ after line $line"
  line=$((line + found))
done
steps=$(grep -cE '^   (launch |restart) \| step [0-9]+ value ' "$LOG")
[ "$steps" -eq 30 ] || fail "the final listing has $steps steps, not 30"
echo "PASS: the demo's log holds every line it printed, no NUL byte"
