#!/bin/bash
# `stasis launch --x11` with an Xt/Xaw program whose window does not change (xlogo): core drawing,
# properties, atoms (Xt interns dozens; a font's properties are interned by the server), and
# redrawing on Expose. Checkpointed and killed, its Xvfb killed, restarted on a new Xvfb on another
# display number: the new screen, blank before the restart, becomes pixel for pixel the screen
# before the checkpoint.
# usage: x11_proxy_xlogo.sh STASIS
set -uo pipefail
. "$(dirname "$0")/xvfb_lib.sh"
xvfb_setup "$1" xlogo

first=$(free_display)
start_xvfb "$first"
launch_xlogo() {
  STASIS_X11_VERBOSE=1 DISPLAY=":$first" "$STASIS" launch --x11 -- xlogo > "$WORK/xlogo.out" 2> "$WORK/xlogo.err" &
  program=$!
}
# Drawn once mapped: the same screenshot twice in a row.
steady_window() {
  screenshot "$first" before > "$WORK/before.colours" && grep -qv "nonblack=0 " "$WORK/before.colours" &&
    screenshot "$first" again >/dev/null && cmp -s "$WORK/before.ppm" "$WORK/again.ppm"
}
steady_window_or_ended() { steady_window || ! kill -0 "$program" 2>/dev/null; }
launch_xlogo
wait_for steady_window_or_ended
kill -0 "$program" 2>/dev/null || fail "the computation ended before xlogo drew on display :$first"
cmp -s "$WORK/before.ppm" "$WORK/again.ppm" || fail "xlogo never drew a steady window on display :$first"
echo "before the checkpoint, display :$first: $(cat "$WORK/before.colours")"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
wait "$program" 2>/dev/null
stop_xvfb

second=$(free_display "$first")
start_xvfb "$second"
screenshot "$second" blank > "$WORK/blank.colours"
cmp -s "$WORK/blank.ppm" "$WORK/before.ppm" && fail "the new display :$second shows xlogo before the restart"
DISPLAY=":$second" "$STASIS" restart "$generation" >> "$WORK/xlogo.out" 2>> "$WORK/xlogo.err" &
program=$!
# Screenshots once the proxy has replayed: xwd interns atoms, and before the replay it would
# number them before the program's (the replay is then refused, as it must be).
wait_for grep -q "reconnected to\|cannot be replaced" "$WORK/xlogo.err"
screen_as_before() { screenshot "$second" after > "$WORK/after.colours" && cmp -s "$WORK/before.ppm" "$WORK/after.ppm"; }
wait_for screen_as_before
cmp -s "$WORK/before.ppm" "$WORK/after.ppm" ||
  fail "display :$second after the restart ($(cat "$WORK/after.colours")) differs from display :$first before the checkpoint"
grep "reconnected to DISPLAY=:$second" "$WORK/xlogo.err" || fail "the proxy did not say it reconnected"
grep "XIO\|cannot be replaced" "$WORK/xlogo.err" && fail "an X error after the restart"
kill -0 "$program" 2>/dev/null || fail "the restarted computation ended"
"$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
echo "PASS: xlogo restarted on display :$second, its screen pixel for pixel as on display :$first"
