#!/bin/bash
# Requests the old X server never answered: round_trips under `stasis launch --x11`; its Xvfb is
# stopped (SIGSTOP) mid-run, so the program waits on a reply that will never come, then
# checkpointed with --kill and the Xvfb killed. Restarted on a new Xvfb, the proxy must ask the
# new server again (its line says how many, at least one) with the sequence number Xlib waits
# for: the program ends, its output that of an uninterrupted run.
# usage: x11_unanswered.sh STASIS ROUND_TRIPS
set -uo pipefail
. "$(dirname "$0")/xvfb_lib.sh"
xvfb_setup "$1"
PROGRAM=$2
[ -x "$PROGRAM" ] || { echo "SKIP: round_trips was not built (Debian: libx11-dev)"; exit 77; }
first=$(free_display)
start_xvfb "$first"
DISPLAY=":$first" "$PROGRAM" 60 > "$WORK/reference.out" 2>&1 || fail "round_trips without Stasis: $(tail -2 "$WORK/reference.out")"
STASIS_X11_VERBOSE=1 DISPLAY=":$first" "$STASIS" launch --x11 -- "$PROGRAM" 60 > "$WORK/run.out" 2> "$WORK/run.err" &
program=$!
wait_for grep -q "^step 10 " "$WORK/run.out"
grep -q "^step 10 " "$WORK/run.out" || fail "round_trips under Stasis never reached step 10"
kill -STOP "$SERVER"
sleep 0.3  # the program sends its next request and waits
generation=$("$STASIS" checkpoint --kill 2> "$WORK/checkpoint.err") || fail "checkpoint: $(cat "$WORK/checkpoint.err")"
wait "$program" 2>/dev/null
kill -KILL "$SERVER"; wait "$SERVER" 2>/dev/null; SERVER=
rm -f "/tmp/.X$first-lock" "/tmp/.X11-unix/X$first"  # what the killed server left
grep -q "^done" "$WORK/run.out" && fail "round_trips finished with its X server stopped"
second=$(free_display "$first")
start_xvfb "$second"
DISPLAY=":$second" timeout 60 "$STASIS" restart "$generation" >> "$WORK/run.out" 2>> "$WORK/run.err" ||
  fail "the restarted round_trips did not end well"
grep "reconnected to DISPLAY=:$second" "$WORK/run.err" || fail "the proxy did not reconnect"
grep -q "asked [1-9][0-9]* unanswered again" "$WORK/run.err" || fail "no request was asked again (the test did not test it)"
cmp "$WORK/reference.out" "$WORK/run.out" || { diff "$WORK/reference.out" "$WORK/run.out" | head; fail "the output differs from an uninterrupted run's"; }
echo "PASS: the requests the stopped server never answered were asked of the new one; output as uninterrupted"
