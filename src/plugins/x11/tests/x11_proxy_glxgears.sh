#!/bin/bash
# `stasis launch --x11`: glxgears on an Xvfb outside the computation, checkpointed and killed, its
# Xvfb killed, restarted against a new Xvfb on another display number: a screenshot of the new
# server shows the gears (its three colours), which it did not before the restart. A restart
# without an X server is refused naming DISPLAY. Then a second checkpoint of the restarted
# program, a restart on a new Xvfb with the first display number and without MIT-SHM, which
# numbers the extensions after it one less (GLX's opcode, events and errors), and the gears again.
# usage: x11_proxy_glxgears.sh STASIS
set -uo pipefail
. "$(dirname "$0")/xvfb_lib.sh"
xvfb_setup "$1" glxgears
colours() { screenshot "$1" shot; }
# The gears: many pixels of each of the three colours (a 300x300 window on a 320x240 screen shows
# some 14000 red, 4000 green and 3000 blue ones).
shows_gears() {
  local c
  c=$(colours "$1") || return 1
  echo "$c" > "$WORK/last-colours"
  awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
       END { exit !(v["red"] > 2000 && v["green"] > 500 && v["blue"] > 500) }' <<<"$c"
}
# X errors glxgears or the proxy reported: a killed computation may add some on its way out (the
# proxy killed before glxgears), so they are counted after each kill and must not grow while it runs.
X_ERRORS="XIO\|cannot be replaced"
x_errors() { grep -c "$X_ERRORS" "$WORK/gears.err"; }
wait_for_gears() {
  wait_for shows_gears "$1" && return 0
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
killed_errors=$(x_errors)
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
[ "$(x_errors)" = "$killed_errors" ] || fail "an X error after the restart: $(grep "$X_ERRORS" "$WORK/gears.err")"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint3.err") || fail "checkpoint --kill after the restart: $(cat "$WORK/checkpoint3.err")"
wait "$program" 2>/dev/null
killed_errors=$(x_errors)
stop_xvfb
start_xvfb "$first" -extension MIT-SHM
DISPLAY=":$first" "$STASIS" restart "$generation" >> "$WORK/gears.out" 2>> "$WORK/gears.err" &
program=$!
wait_for_gears "$first" "after the second restart"
echo "after the second restart, display :$first: $(cat "$WORK/last-colours")"
kill -0 "$program" 2>/dev/null || fail "the restarted computation ended"
[ "$(x_errors)" = "$killed_errors" ] || fail "an X error after the second restart: $(grep "$X_ERRORS" "$WORK/gears.err")"
"$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
echo "PASS: glxgears restarted twice on new X servers (displays :$second and :$first), refused without one"
