#!/usr/bin/env bash
# A short demonstration: build Stasis, launch the counter test program under it, checkpoint it,
# kill it, restart it from the checkpoint and show that its output continues where it stopped.
set -euo pipefail
# STASIS_DEMO_BUILD=DIR: use the Stasis already built in DIR (no dependencies installed, no build).
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${STASIS_DEMO_BUILD:-}
if [ -z "$BUILD" ]; then
  BUILD=$ROOT/build
  if [ "$(id -u)" -eq 0 ] || command -v sudo >/dev/null 2>&1; then
    bash scripts/install-deps.sh >/dev/null
  fi
  if [ ! -f build/CMakeCache.txt ]; then
    GEN=()
    if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi
    cmake -S . -B build "${GEN[@]}" >/dev/null
  fi
  cmake --build build -j2 >/dev/null
fi
STASIS=$BUILD/bin/stasis
COUNTER=$BUILD/tests/targets/counter

WORK=$(mktemp -d /tmp/stasis-demo.XXXXXX)
export STASIS_RUNTIME_DIR=$WORK/runtime STASIS_CKPT_DIR=$WORK/ckpt
mkdir -m 700 "$STASIS_RUNTIME_DIR"
LAUNCH_PID=
cleanup() {
  [ -n "$LAUNCH_PID" ] && kill -9 "$LAUNCH_PID" 2>/dev/null || true
  "$STASIS" kill >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

"$STASIS" coordinator --port 0 --port-file "$WORK/port" --ckpt-dir "$STASIS_CKPT_DIR" --daemon --exit-when-idle
export STASIS_COORD=127.0.0.1:$(cat "$WORK/port")
echo "== coordinator on $STASIS_COORD; checkpoints go to $STASIS_CKPT_DIR"

echo "== stasis launch -- counter 30 100   (30 steps, 0.1 s each)"
"$STASIS" launch -- "$COUNTER" 30 100 >"$WORK/out.txt" &
LAUNCH_PID=$!
for _ in $(seq 100); do
  [ "$(grep -c '^step' "$WORK/out.txt" 2>/dev/null)" -ge 10 ] && break
  sleep 0.1
done
sed 's/^/   launch | /' "$WORK/out.txt"

# --kill ends the program once its image is written: a checkpoint and a separate kill -9 raced the
# program's end on a loaded machine (the checkpoint took the 2 s it had left: files.demo_to_file).
echo "== stasis checkpoint --kill   (the program is killed once its image is written)"
GEN=$("$STASIS" checkpoint --kill)
# The steps written before the checkpoint: those within stdout's saved offset.
OFFSET=$("$STASIS" inspect --json "$GEN"/counter-*.stasis |
         python3 -c 'import json, sys; print(next(f["offset"] for f in json.load(sys.stdin)["fds"] if f["fd"] == 1))')
AT=$(head -c "$OFFSET" "$WORK/out.txt" | grep -c '^step')
echo "   checkpoint written to $GEN:"
ls -l "$GEN" | sed 's/^/     /'
wait "$LAUNCH_PID" 2>/dev/null || true
LAUNCH_PID=
sed 's/^/   launch | /' "$WORK/out.txt" | tail -n 3

echo "== stasis restart $GEN"
echo "   (stdout was a regular file: the restarted program reopens it at the saved offset)"
"$STASIS" restart "$GEN"
echo "   restart exited with status $?"
echo "== $WORK/out.txt now: lines from the first run, then the restarted run's"
awk -v at="$AT" '{ print (NR <= at ? "   launch  | " : "   restart | ") $0 }' "$WORK/out.txt"
echo "== the restarted program continued after step $AT and ran to completion"
