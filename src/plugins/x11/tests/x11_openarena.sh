#!/bin/bash
# OpenArena (ioquake3: SDL2, OpenGL through Mesa llvmpipe, a 256 MiB hunk, UDP and device-event
# sockets) playing a timedemo under `stasis launch --x11` on an outside Xvfb, recording every frame
# it renders into an AVI (its own `video` command: a glReadPixels of each frame). Checkpointed
# mid-demo and killed, its Xvfb killed, restarted on a new Xvfb on another display number: the
# timedemo completes with the frame count of an uninterrupted run and every frame, before the
# checkpoint and after the restart, equals the uninterrupted run's at the same number.
# The demo is Debian's demo088-test1 cut to its first FRAMES messages (a timedemo renders one frame
# a message) at 160x120, so the test stays short; both runs seed rand() alike (fixed_seed.so).
# The GL state comes back by the OpenGL plugin's replay into a fresh context (STASIS_GL_REPLAY=fresh,
# ../../opengl/README.md), as it must on a GPU: its 400-odd textures with their mipmaps, client arrays,
# per-unit texture state; the restart must say it replayed (with llvmpipe the old context's state is
# in the image too, so without that line the test would prove nothing about the replay).
# usage: x11_openarena.sh STASIS FIXED_SEED_SO [FRAMES]
set -uo pipefail
export PATH=/usr/bin:/bin:/usr/games:$PATH  # Debian's python3, not a pyenv shim
. "$(dirname "$0")/xvfb_lib.sh"
[ -x /usr/games/openarena ] || { echo "SKIP: no /usr/games/openarena (Debian: openarena)"; exit 77; }
PK3=/usr/share/games/openarena/baseoa/pak6-patch088.pk3
[ -r $PK3 ] || { echo "SKIP: no $PK3 (Debian: openarena-088-data)"; exit 77; }
xvfb_setup "$1"
FIXED_SEED=$2
[ -r "$FIXED_SEED" ] || fail "no $FIXED_SEED (built with the tests)"
FRAMES=${3:-120}
CHECKPOINT_AT=$((FRAMES * 2 / 5))
HELPER=$(dirname "$0")/demo_frames.py
export HOME=$WORK/home  # the game's ~/.openarena: its config, the cut demo, the videos
VIDEOS=$HOME/.openarena/baseoa/videos
mkdir -p "$HOME/.openarena/baseoa/demos" "$VIDEOS"
python3 "$HELPER" cut $PK3 demos/demo088-test1.dm_71 "$HOME/.openarena/baseoa/demos/cut.dm_71" "$FRAMES" ||
  fail "cannot cut the demo"
openarena_args() {  # the timedemo, recorded into videos/$1.avi, then quit
  echo +set timedemo 1 +set com_hunkMegs 256 +set s_initsound 0 \
    +set r_mode -1 +set r_customwidth 160 +set r_customheight 120 +set r_fullscreen 0 \
    +set cl_renderer opengl1 +set cg_draw2D 0 +set cl_aviMotionJpeg 0 +set nextdemo quit +demo cut +video "$1"
}
timedemo_line() { cat "$@" | grep -a -o "^[0-9]* frames [0-9.]* seconds" | awk '{ print $1 }'; }  # frames

first=$(free_display)
start_xvfb "$first"
# shellcheck disable=SC2046
DISPLAY=":$first" LD_PRELOAD=$FIXED_SEED timeout 240 /usr/games/openarena $(openarena_args reference) \
  > "$WORK/reference.out" 2>&1 || fail "OpenArena without Stasis: $(tail -3 "$WORK/reference.out")"
reference_frames=$(timedemo_line "$WORK/reference.out")
[ -n "$reference_frames" ] || fail "OpenArena without Stasis printed no timedemo result"

# shellcheck disable=SC2046
STASIS_GL_REPLAY=fresh STASIS_GL_VERBOSE=1 STASIS_X11_VERBOSE=1 DISPLAY=":$first" LD_PRELOAD=$FIXED_SEED "$STASIS" launch --x11 -- /usr/games/openarena \
  $(openarena_args restarted) > "$WORK/openarena.out" 2> "$WORK/openarena.err" &
program=$!
recorded() { python3 "$HELPER" count "$VIDEOS/restarted.avi"; }
recorded_enough_or_ended() { [ "$(recorded)" -ge $CHECKPOINT_AT ] || ! kill -0 $program 2>/dev/null; }
wait_for recorded_enough_or_ended
[ "$(recorded)" -ge $CHECKPOINT_AT ] || fail "OpenArena under Stasis never recorded $CHECKPOINT_AT frames"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
wait "$program" 2>/dev/null
[ -n "$(timedemo_line "$WORK/openarena.out" "$WORK/openarena.err")" ] && fail "the timedemo ended before the checkpoint"
echo "checkpointed with $(recorded) of $FRAMES frames recorded ($(du -sh "$STASIS_CKPT_DIR" | cut -f1) of images)"
stop_xvfb

second=$(free_display "$first")
start_xvfb "$second"
killed_errors=$(grep -c "cannot be replaced" "$WORK/openarena.err")
DISPLAY=":$second" timeout 240 "$STASIS" restart "$generation" >> "$WORK/openarena.out" 2>> "$WORK/openarena.err" ||
  fail "the restarted OpenArena exited with $?"
grep "reconnected to DISPLAY=:$second" "$WORK/openarena.err" || fail "the proxy did not reconnect"
[ "$(grep -c "cannot be replaced" "$WORK/openarena.err")" = "$killed_errors" ] ||
  fail "the proxy could not replace the X server: $(grep "cannot be replaced" "$WORK/openarena.err")"
grep "replayed into a fresh context" "$WORK/openarena.err" || fail "the GL state was not replayed into a fresh context"
restarted_frames=$(timedemo_line "$WORK/openarena.out" "$WORK/openarena.err")
[ "$restarted_frames" = "$reference_frames" ] ||
  fail "the restarted timedemo rendered ${restarted_frames:-no result, not} $reference_frames frames"
python3 "$HELPER" compare "$VIDEOS/reference.avi" "$VIDEOS/restarted.avi" || fail "the recorded frames differ"
echo "PASS: OpenArena restarted on display :$second: $restarted_frames frames, each as the uninterrupted run's"
