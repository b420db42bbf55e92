#!/bin/bash
# An X program under `stasis launch --x11`, through the checkpoint-kill-restart driver: its X
# server is outside the computation and is killed and started anew before every restart (two
# restarts, the second from a checkpoint of the restarted program). Its output must equal an
# uninterrupted run's byte for byte, and the proxy must have replayed its log each time.
#   x11.gl33: gl33_frames.c, OpenGL 3.3 core profile (VAOs, FBO render-to-texture, GLSL
#     programs, a UBO), every frame's checksum;
#   x11.round_trips: round_trips.c, a checkpoint with replies outstanding; X11_REPLAYED=[0-9]:
#     fewer than 10 requests replayed although it set its GC's colour at every step.
#   opengl.textures (../../opengl/tests.cmake): XVFB_ARGS and XVFB_PRELOAD go to every Xvfb;
#     X11_EXPECT_REFUSAL=REGEX: the checkpoint must be refused so, the program running on;
#     X11_RESTART_STDERR=REGEX: what the restarts' stderr must also say (the plugin's replay).
# usage: x11_driver.sh STASIS PYTHON DRIVER NAME PROGRAM ARGS...
set -uo pipefail
STASIS=$1 PYTHON=$2 DRIVER=$3 NAME=$4 PROGRAM=$5
shift 5
for tool in Xvfb xdpyinfo; do
  command -v $tool >/dev/null || { echo "SKIP: no $tool (Debian: xvfb x11-utils)"; exit 77; }
done
[ -x "$PROGRAM" ] || { echo "SKIP: $(basename "$PROGRAM") was not built (Debian: libgl-dev libx11-dev)"; exit 77; }
WORK=$(mktemp -d /tmp/stasis-x11gl33.XXXXXX)
. "$(dirname "$0")/display_numbers.sh"
trap '[ -s "$WORK/xvfb.pid" ] && kill $(cat "$WORK/xvfb.pid") 2>/dev/null; rm -rf "$WORK"; release_displays' EXIT
display=$(reserve_display) || { echo "FAIL: no free X display number"; exit 1; }
# (Re)starts the test's Xvfb: the one before kills the previous server first.
cat > "$WORK/new_xvfb.sh" <<SCRIPT
#!/bin/bash
if [ -s "$WORK/xvfb.pid" ]; then
  kill \$(cat "$WORK/xvfb.pid") 2>/dev/null
  for _ in \$(seq 200); do [ -e /tmp/.X$display-lock ] || break; sleep 0.1; done
  kill -9 \$(cat "$WORK/xvfb.pid") 2>/dev/null  # one whose indirect GL client was killed may ignore SIGTERM
  rm -f /tmp/.X$display-lock
fi
LD_PRELOAD=${XVFB_PRELOAD:-} setsid Xvfb :$display -screen 0 320x240x24 -nolisten tcp ${XVFB_ARGS:-} >/dev/null 2>&1 < /dev/null &
echo \$! > "$WORK/xvfb.pid"
for _ in \$(seq 900); do xdpyinfo -display :$display >/dev/null 2>&1 && exit 0; sleep 0.1; done
echo "display :$display never answered" >&2; exit 1
SCRIPT
chmod +x "$WORK/new_xvfb.sh"
"$WORK/new_xvfb.sh" || exit 1
export DISPLAY=:$display STASIS_X11_VERBOSE=1  # the proxy says when it has replayed its log
if [ -n "${X11_EXPECT_REFUSAL:-}" ]; then
  "$PYTHON" "$DRIVER" --stasis "$STASIS" --name "$NAME" --launch-arg=--x11 --wait-lines 20 \
    --expect-refusal "$X11_EXPECT_REFUSAL" -- "$PROGRAM" "$@"
  exit  # (the driver's status; the trap stops the Xvfb)
fi
"$PYTHON" "$DRIVER" --stasis "$STASIS" --name "$NAME" --launch-arg=--x11 --kill ckpt-kill --chain 2 \
  --wait-lines 20 --between-lines 20 --before-restart "$WORK/new_xvfb.sh" \
  --restart-stderr "(?s)(?=.*reconnected to DISPLAY=:$display: replayed ${X11_REPLAYED:-[0-9]+} requests)(?=.*${X11_RESTART_STDERR:-})" \
  -- "$PROGRAM" "$@"
