#!/bin/bash
# opengl.fresh_empty: opengl.fresh_gl33 with STASIS_GL_REPLAY=fresh-empty, a fresh context and
# nothing replayed into it. The restarted program must not go on as an uninterrupted run (it
# finds none of its objects: a GL error ends it, or its checksums differ), which shows that the
# replay is what brings its state back. Passes only when the checkpoint was taken and the
# restart, not anything before it, is what fails.
# usage: gl_fresh_empty.sh X11_DRIVER STASIS PYTHON DRIVER PROGRAM ARGS...
set -uo pipefail
X11_DRIVER=$1
shift
output=$(STASIS_GL_REPLAY=fresh-empty "$X11_DRIVER" "$@" 2>&1)
status=$?
[ $status -eq 77 ] && { echo "$output" | tail -3; exit 77; }
if [ $status -eq 0 ]; then
  echo "$output" | grep -v '^    |' | tail -20
  echo "FAIL: with no replay into the fresh context the restarted program ran on as an uninterrupted run"
  exit 1
fi
if ! echo "$output" | grep -q 'checkpoint 000001 of launch' || ! echo "$output" | grep -q 'started `stasis restart' ||
   ! echo "$output" | grep -Eq '^FAIL [^:]*: .*(restart1|restarted program|reference|differ)'; then
  echo "$output" | grep -v '^    |' | tail -30
  echo "FAIL: the run failed, but not as a restart without the replay does (see above)"
  exit 1
fi
echo "$output" | grep -E '^FAIL' | head -1 | sed 's/^FAIL/as expected, without the replay:/'
echo "PASS"
