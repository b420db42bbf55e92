#!/bin/bash
# `stasis launch --x11`: glxgears on an Xvfb outside the computation, checkpointed and killed, its
# Xvfb killed, restarted against a new Xvfb on another display number: a screenshot of the new
# server shows the gears (its three colours), which it did not before the restart. A restart
# without an X server is refused naming DISPLAY. Then a second checkpoint of the restarted
# program, a restart on a new Xvfb with the first display number, and the gears again.
# usage: x11_proxy_glxgears.sh STASIS
set -uo pipefail
STASIS=$1
HERE=$(dirname "$0")
for tool in Xvfb glxgears xdpyinfo xwd python3; do
  command -v $tool >/dev/null || { echo "SKIP: no $tool (Debian: xvfb mesa-utils x11-utils x11-apps python3)"; exit 77; }
done
WORK=$(mktemp -d /tmp/stasis-x11proxy.XXXXXX)
. "$HERE/../../../../tests/lib/private_coordinator.sh"
SERVER=
cleanup() { [ -n "$SERVER" ] && kill "$SERVER" 2>/dev/null; private_coordinator_cleanup "$STASIS" "$WORK"; }
trap cleanup EXIT
private_coordinator "$STASIS" "$WORK"
fail() { echo "FAIL: $*"; for f in "$WORK"/*.out "$WORK"/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done; exit 1; }
free_display() {
  for n in $(seq 90 199); do [ ! -e /tmp/.X$n-lock ] && [ ! -e /tmp/.X11-unix/X$n ] && [ "$n" != "${1:-}" ] && { echo $n; return; }; done
  fail "no free X display number"
}
start_xvfb() {
  Xvfb ":$1" -screen 0 320x240x24 -nolisten tcp >/dev/null 2>&1 &
  SERVER=$!
  for _ in $(seq 100); do xdpyinfo -display ":$1" >/dev/null 2>&1 && return 0; sleep 0.05; done
  fail "display :$1 never answered"
}
stop_xvfb() { kill "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=; }
colours() { xwd -root -display ":$1" -out "$WORK/shot.xwd" && python3 "$HERE/xwd_colours.py" "$WORK/shot.xwd"; }
# The gears: many pixels of each of the three colours (a 300x300 window on a 320x240 screen shows
# some 14000 red, 4000 green and 3000 blue ones).
shows_gears() {
  local c
  c=$(colours "$1") || return 1
  echo "$c" > "$WORK/last-colours"
  awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
       END { exit !(v["red"] > 2000 && v["green"] > 500 && v["blue"] > 500) }' <<<"$c"
}
wait_for_gears() {
  for _ in $(seq 100); do shows_gears "$1" && return 0; sleep 0.1; done
  fail "$2: no gears on display :$1 ($(cat "$WORK/last-colours"))"
}

first=$(free_display)
start_xvfb "$first"
STASIS_X11_VERBOSE=1 DISPLAY=":$first" "$STASIS" launch --x11 -- glxgears > "$WORK/gears.out" 2> "$WORK/gears.err" &
program=$!
wait_for_gears "$first" "before the checkpoint"
echo "before the checkpoint, display :$first: $(cat "$WORK/last-colours")"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
wait "$program" 2>/dev/null
stop_xvfb

# No X server: refused before anything is restored, naming DISPLAY.
if env -u DISPLAY "$STASIS" restart "$generation" > /dev/null 2> "$WORK/nodisplay.err"; then
  fail "a restart without DISPLAY was not refused"
fi
grep -q "DISPLAY is not set" "$WORK/nodisplay.err" || fail "the refusal without DISPLAY does not say so: $(cat "$WORK/nodisplay.err")"
second=$(free_display "$first")
if DISPLAY=":$second" "$STASIS" restart "$generation" > /dev/null 2> "$WORK/noserver.err"; then
  fail "a restart on DISPLAY=:$second, where no X server runs, was not refused"
fi
grep -q "DISPLAY=:$second" "$WORK/noserver.err" || fail "the refusal does not name DISPLAY=:$second: $(cat "$WORK/noserver.err")"
echo "refused without an X server: $(head -1 "$WORK/nodisplay.err")"

start_xvfb "$second"
shows_gears "$second" && fail "the new display :$second shows gears before the restart"
DISPLAY=":$second" "$STASIS" restart "$generation" >> "$WORK/gears.out" 2>> "$WORK/gears.err" &
program=$!
wait_for_gears "$second" "after the restart"
echo "after the restart, display :$second: $(cat "$WORK/last-colours")"
grep -q "reconnected to DISPLAY=:$second" "$WORK/gears.err" || fail "the proxy did not say it reconnected"
grep "reconnected to" "$WORK/gears.err" | tail -1

# A second checkpoint of the restarted program, then a restart on the first display number again.
"$STASIS" checkpoint > /dev/null 2> "$WORK/checkpoint2.err" || fail "a checkpoint after the restart: $(cat "$WORK/checkpoint2.err")"
kill -0 "$program" 2>/dev/null || fail "glxgears ended after the second checkpoint"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint3.err") || fail "checkpoint --kill after the restart: $(cat "$WORK/checkpoint3.err")"
wait "$program" 2>/dev/null
stop_xvfb
start_xvfb "$first"
DISPLAY=":$first" "$STASIS" restart "$generation" >> "$WORK/gears.out" 2>> "$WORK/gears.err" &
program=$!
wait_for_gears "$first" "after the second restart"
echo "after the second restart, display :$first: $(cat "$WORK/last-colours")"
kill -0 "$program" 2>/dev/null || fail "the restarted computation ended"
"$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
grep -q "XIO\|fatal" "$WORK/gears.err" && fail "glxgears reported an X error: $(grep "XIO\|fatal" "$WORK/gears.err")"
echo "PASS: glxgears restarted twice on new X servers (displays :$second and :$first), refused without one"
