#!/bin/bash
# PyMOL (Qt, OpenGL through Mesa) under `stasis launch --x11` on an outside Xvfb, turning a
# molecule; checkpointed mid-rotation and killed, its Xvfb killed, restarted on a new Xvfb on
# another display number: its windows are there again, the rotation completes, and the OpenGL PNG it
# writes is byte for byte an uninterrupted run's. The proxy must have replayed its log (PyMOL's
# PNG alone would not tell: it renders in the program, and comes out right even with a dead X
# connection). Its GL state comes back by the OpenGL plugin's replay into a fresh context
# (STASIS_GL_REPLAY=fresh, ../../opengl/README.md), as it must on a GPU; the restart must say so
# (with llvmpipe the old context's state is in the image too).
# usage: x11_pymol.sh STASIS
set -uo pipefail
export PATH=/usr/bin:/bin:$PATH  # Debian's python3, which has PyMOL, not a pyenv shim
. "$(dirname "$0")/xvfb_lib.sh"
xvfb_setup "$1" pymol xwininfo
PDB=/usr/share/pymol/test/dat/1tii.pdb
[ -r $PDB ] || { echo "SKIP: no $PDB (Debian: pymol)"; exit 77; }
SCRIPT=$(cd "$(dirname "$0")" && pwd)/pymol_rotate.py
STEPS=150
first=$(free_display)
start_xvfb "$first"
DISPLAY=":$first" timeout 120 pymol -q "$SCRIPT" -- $PDB $STEPS "$WORK/reference.png" > "$WORK/reference.out" 2>&1 ||
  fail "PyMOL without Stasis: $(tail -3 "$WORK/reference.out")"
[ -s "$WORK/reference.png" ] || fail "PyMOL without Stasis wrote no PNG"

STASIS_GL_REPLAY=fresh STASIS_GL_VERBOSE=1 STASIS_X11_VERBOSE=1 DISPLAY=":$first" "$STASIS" launch --x11 -- pymol -q "$SCRIPT" -- $PDB $STEPS "$WORK/restarted.png" \
  > "$WORK/pymol.out" 2> "$WORK/pymol.err" &
program=$!
wait_for grep -q "^step 40$" "$WORK/pymol.out"
grep -q "^step 40$" "$WORK/pymol.out" || fail "PyMOL under Stasis never reached step 40"
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
wait "$program" 2>/dev/null
grep -q "^done" "$WORK/pymol.out" && fail "PyMOL finished before the checkpoint"
echo "checkpointed at $(grep "^step" "$WORK/pymol.out" | tail -1) of $STEPS"
stop_xvfb

second=$(free_display "$first")
start_xvfb "$second"
killed_errors=$(grep -c "cannot be replaced" "$WORK/pymol.err")
DISPLAY=":$second" "$STASIS" restart "$generation" >> "$WORK/pymol.out" 2>> "$WORK/pymol.err" &
program=$!
# PyMOL's windows, made again on the new display (its script keeps Qt's event loop from
# repainting them until it ends: the PNG is the picture). Looked at once the proxy has replayed:
# xwininfo interns atoms, and before the replay it would number them before the program's.
wait_for grep -q "reconnected to\|cannot be replaced" "$WORK/pymol.err"
viewable_windows() {  # PyMOL's Qt windows (its main window and widgets) shown on display $1
  for id in $(xwininfo -root -tree -display ":$1" | awk '/"PyMOL": \("PyMOL"/ { print $1 }'); do
    xwininfo -id "$id" -display ":$1" | grep -q IsViewable && echo "$id"
  done | wc -l
}
windows_shown() { [ "$(viewable_windows "$second")" -gt 0 ]; }
wait_for windows_shown
shown=$(viewable_windows "$second")
[ "$shown" -gt 0 ] || fail "no viewable PyMOL window on display :$second after the restart"
echo "display :$second after the restart: $shown PyMOL windows viewable"
wait "$program" || fail "the restarted PyMOL exited with $?"
grep -q "^done" "$WORK/pymol.out" || fail "the restarted PyMOL did not finish"
grep "replayed into a fresh context" "$WORK/pymol.err" || fail "the GL state was not replayed into a fresh context"
grep "reconnected to DISPLAY=:$second" "$WORK/pymol.err" || fail "the proxy did not reconnect"
[ "$(grep -c "cannot be replaced" "$WORK/pymol.err")" = "$killed_errors" ] ||
  fail "the proxy could not replace the X server: $(grep "cannot be replaced" "$WORK/pymol.err")"
cmp "$WORK/reference.png" "$WORK/restarted.png" || fail "the PNG differs from the uninterrupted run's"
echo "PASS: PyMOL restarted on display :$second, its PNG ($(stat -c %s "$WORK/reference.png") bytes) as an uninterrupted run's"
