#!/bin/bash
# An X client (glxgears, Mesa) whose X server (Xvfb) is outside the computation: the checkpoint
# is refused at once, naming the display, with MIT-SHM on (before, the message named a System V
# segment) and off (before, the checkpoint was taken and the restarted program died on its first
# X request); the program runs on. Then the same client with its X server inside the computation:
# checkpointed, killed, restarted, it renders on (a new frame-rate line) and the server answers.
# usage: x11_connection.sh STASIS
set -uo pipefail
STASIS=$1
for tool in Xvfb glxgears xdpyinfo; do
  command -v $tool >/dev/null || { echo "SKIP: no $tool (Debian: xvfb mesa-utils x11-utils)"; exit 77; }
done
WORK=$(mktemp -d /tmp/stasis-x11.XXXXXX)
. "$(dirname "$0")/../../../../tests/lib/private_coordinator.sh"
SERVER=
. "$(dirname "$0")/display_numbers.sh"
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; private_coordinator_cleanup "$STASIS" "$WORK"; release_displays; }
trap cleanup EXIT
private_coordinator "$STASIS" "$WORK"
fail() { echo "FAIL: $*"; for f in "$WORK"/*.out "$WORK"/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; exit 1; }
free_display() { reserve_display || fail "no free X display number"; }
wait_for_display() { for _ in $(seq 900); do xdpyinfo -display ":$1" >/dev/null 2>&1 && return 0; sleep 0.1; done; fail "display :$1 never answered"; }
frame_lines() { grep -c 'frames in' "$1" 2>/dev/null || true; }

for shm in on off; do
  display=$(free_display)
  extension=(); [ $shm = off ] && extension=(-extension MIT-SHM)
  Xvfb ":$display" -screen 0 320x240x24 -nolisten tcp "${extension[@]}" >/dev/null 2>&1 &
  SERVER=$!
  wait_for_display "$display"
  DISPLAY=":$display" "$STASIS" launch -- glxgears > "$WORK/outside-$shm.out" 2> "$WORK/outside-$shm.err" &
  program=$!
  sleep 1.5
  if "$STASIS" checkpoint > "$WORK/checkpoint-$shm.out" 2> "$WORK/checkpoint-$shm.err"; then
    fail "MIT-SHM $shm: the checkpoint of a client of an outside X server was taken"
  fi
  grep -q "connection to the X server of display :$display" "$WORK/checkpoint-$shm.err" ||
    fail "MIT-SHM $shm: the refusal does not name the X connection: $(cat "$WORK/checkpoint-$shm.err")"
  kill -0 "$program" 2>/dev/null || fail "MIT-SHM $shm: the program did not run on after the refusal"
  "$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
  kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=
  echo "MIT-SHM $shm: refused, naming display :$display"
done

# The X server inside the computation: an ordinary peer.
display=$(free_display)
"$STASIS" launch -- bash -c "Xvfb :$display -screen 0 320x240x24 -nolisten tcp -extension MIT-SHM >/dev/null 2>&1 &
  for _ in \$(seq 900); do xdpyinfo -display :$display >/dev/null 2>&1 && break; sleep 0.1; done
  DISPLAY=:$display exec glxgears" > "$WORK/inside.out" 2> "$WORK/inside.err" &
program=$!
wait_for_display "$display"
sleep 1
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint-inside.err") ||
  fail "the checkpoint with the X server inside was refused: $(cat "$WORK/checkpoint-inside.err")"
wait "$program" 2>/dev/null
xdpyinfo -display ":$display" >/dev/null 2>&1 && fail "display :$display still answers after --kill"
before=$(frame_lines "$WORK/inside.out")
"$STASIS" restart "$generation" >> "$WORK/inside.out" 2> "$WORK/restart.err" &
program=$!
wait_for_display "$display"
for _ in $(seq 900); do [ "$(frame_lines "$WORK/inside.out")" -gt "$before" ] && break; sleep 0.1; done
[ "$(frame_lines "$WORK/inside.out")" -gt "$before" ] || fail "the restarted glxgears printed no new frame-rate line in 90 s"
kill -0 "$program" 2>/dev/null || fail "the restarted computation ended"
"$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
echo "PASS: refused with an outside X server; restarted with the X server inside, rendering on"
