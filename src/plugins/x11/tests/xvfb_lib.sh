# Sourced by the X proxy's tests: Xvfb servers of the test's own and screenshots of them.
#   xvfb_setup STASIS TOOLS...   skips (77) without a tool; a private coordinator in $WORK
#   free_display [NOT]           a display number nothing uses (other than NOT), reserved for this test
#   start_xvfb N [XVFB ARGS...]  one server at a time ($SERVER), 320x240x24, XVFB_PRELOAD preloaded
#                                into it; stop_xvfb (SIGTERM, SIGKILL when it has not ended in 20 s)
#   screenshot N NAME            $WORK/NAME.ppm of display N's root; prints its colour counts
#   wait_for COMMAND...          runs COMMAND every 0.1 s until it succeeds, for at most 90 s
XVFB_LIB_DIR=$(dirname "${BASH_SOURCE[0]}")
. "$XVFB_LIB_DIR/display_numbers.sh"
xvfb_setup() {
  STASIS=$1
  shift
  for tool in Xvfb xdpyinfo xwd python3 "$@"; do
    command -v "$tool" >/dev/null || { echo "SKIP: no $tool (Debian: xvfb x11-utils x11-apps mesa-utils python3)"; exit 77; }
  done
  WORK=$(mktemp -d /tmp/stasis-x11proxy.XXXXXX)
  . "$XVFB_LIB_DIR/../../../../tests/lib/private_coordinator.sh"
  SERVER=
  # The server is waited for before its number is released: another test must not find it there.
  trap '[ -n "$SERVER" ] && stop_xvfb 2>/dev/null; private_coordinator_cleanup "$STASIS" "$WORK"; release_displays' EXIT
  private_coordinator "$STASIS" "$WORK"
}
fail() {
  echo "FAIL: $*"
  for f in "$WORK"/*.out "$WORK"/*.err; do [ -s "$f" ] && { echo "--- $f"; tail -5 "$f"; }; done
  # Which processes listen as X displays (the proxy's are 1024 to 32767), to tell a clash from a bug.
  command -v ss >/dev/null && { echo "--- X listeners"; ss -xlp 2>/dev/null | grep "X11-unix" | head -20; }
  exit 1
}
# A loaded machine (the whole suite at -j2 on 2 cores) can take tens of seconds for what a quiet
# one does in a tenth: conditions are polled with a generous deadline, never timed.
wait_for() {
  local deadline=$((SECONDS + 90))
  until "$@"; do
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}
display_answers() { xdpyinfo -display ":$1" >/dev/null 2>&1; }
free_display() { reserve_display "${1:-}" || fail "no free X display number"; }
start_xvfb() {
  LD_PRELOAD=${XVFB_PRELOAD:-} Xvfb ":$1" -screen 0 320x240x24 -nolisten tcp "${@:2}" >/dev/null 2>&1 &
  SERVER=$!
  wait_for display_answers "$1" || fail "display :$1 never answered"
  # Answered, but by our server? One that found the display taken has exited.
  kill -0 "$SERVER" 2>/dev/null || fail "the Xvfb on display :$1 exited: another X server answers there"
}
# An Xvfb whose indirect GL client was killed mid-request has been seen to ignore SIGTERM.
xvfb_ended() { [ ! -e "/proc/$SERVER" ] || grep -q '^State:.*Z' "/proc/$SERVER/status" 2>/dev/null; }
stop_xvfb() {
  kill "$SERVER"
  local deadline=$((SECONDS + 20))
  until xvfb_ended || [ "$SECONDS" -ge "$deadline" ]; do sleep 0.1; done
  kill -9 "$SERVER" 2>/dev/null
  wait "$SERVER" 2>/dev/null
  SERVER=
}
screenshot() {
  xwd -root -display ":$1" -out "$WORK/$2.xwd" && python3 "$XVFB_LIB_DIR/xwd_colours.py" "$WORK/$2.xwd" "$WORK/$2.ppm"
}
