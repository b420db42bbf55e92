#!/bin/bash
# The OpenGL plugin's replay: glxgears with indirect GLX (LIBGL_ALWAYS_INDIRECT=1) on an Xvfb that
# allows it (+iglx), so that its GL state (display lists, lights, matrices) lives in the X server,
# as a GPU driver would hold it, not in the program. Checkpointed and killed, the Xvfb killed,
# restarted against a new Xvfb on another display number: the gears are drawn again only if the
# plugin replayed the state (without the replay the window stays black: README.md). Then a
# checkpoint of the restarted program and a restart on a third new Xvfb: the gears again.
# usage: gl_indirect_gears.sh STASIS IGLX_DISPATCH_SO
set -uo pipefail
. "$(dirname "$0")/../../x11/tests/xvfb_lib.sh"
xvfb_setup "$1" glxgears glxinfo
XVFB_PRELOAD=$2
[ -f "$XVFB_PRELOAD" ] || { echo "SKIP: no $XVFB_PRELOAD (built where libGLdispatch and libglapi are: libglvnd-dev, libglapi-mesa)"; exit 77; }
export LIBGL_ALWAYS_INDIRECT=1

shows_gears() {  # the three gear colours, many pixels of each (as x11_proxy_glxgears.sh)
  local c
  c=$(screenshot "$1" shot) || return 1
  echo "$c" > "$WORK/last-colours"
  awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
       END { exit !(v["red"] > 2000 && v["green"] > 500 && v["blue"] > 500) }' <<<"$c"
}
wait_for_gears() {
  wait_for shows_gears "$1" && return 0
  fail "$2: no gears on display :$1 ($(cat "$WORK/last-colours"))"
}
replays() { grep -c "stasis opengl plugin: replayed 3 display lists" "$WORK/gears.err"; }

first=$(free_display)
start_xvfb "$first" +iglx
renderer=$(DISPLAY=":$first" glxinfo 2>/dev/null | sed -n 's/^OpenGL renderer string: //p')
[ -n "$renderer" ] || fail "indirect GL renders nothing on this Xvfb (no renderer string), even with $XVFB_PRELOAD"
launch_gears() {
  STASIS_GL_VERBOSE=1 STASIS_X11_VERBOSE=1 DISPLAY=":$first" "$STASIS" launch --x11 -- glxgears > "$WORK/gears.out" 2> "$WORK/gears.err" &
  program=$!
}
gears_or_ended() { shows_gears "$first" || ! kill -0 "$program" 2>/dev/null; }
launch_gears
wait_for gears_or_ended
# Once here under load (1 run in 4), as x11_proxy_xlogo.sh has seen: the X server closed the
# proxy's connection before answering its set-up, and glxgears could not open the proxy's display.
# Not explained yet; launched once more then, saying so; a second early end fails the test.
if ! kill -0 "$program" 2>/dev/null; then
  echo "NOTE: the computation ended before glxgears drew (not yet explained); its output:"
  cat "$WORK/gears.out" "$WORK/gears.err"
  launch_gears
fi
wait_for_gears "$first" "before the checkpoint"
grep -q "recording the indirect GLX context" "$WORK/gears.err" || fail "the plugin did not record glxgears' indirect context"
echo "before the checkpoint, display :$first ($renderer, indirect): $(cat "$WORK/last-colours")"

restart_on() {  # DISPLAY_NUMBER WHAT: checkpoint --kill, a new Xvfb there, restart, the gears
  local generation before
  generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
  wait "$program" 2>/dev/null
  stop_xvfb
  start_xvfb "$1" +iglx
  shows_gears "$1" && fail "the new display :$1 shows gears before the restart"
  before=$(replays)
  DISPLAY=":$1" "$STASIS" restart "$generation" >> "$WORK/gears.out" 2>> "$WORK/gears.err" &
  program=$!
  wait_for_gears "$1" "$2"
  [ "$(replays)" -gt "$before" ] || fail "$2: the plugin did not say it replayed glxgears' 3 display lists"
  echo "$2, display :$1: $(cat "$WORK/last-colours")"
  grep "stasis opengl plugin: replayed" "$WORK/gears.err" | tail -1
}
second=$(free_display "$first")
restart_on "$second" "after the restart"
restart_on "$first" "after the second restart"
kill -0 "$program" 2>/dev/null || fail "the restarted glxgears ended"
"$STASIS" kill >/dev/null; wait "$program" 2>/dev/null
echo "PASS: glxgears with its GL state in the X server restarted twice on new Xvfb servers, the state replayed"
