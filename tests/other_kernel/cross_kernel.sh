#!/usr/bin/env bash
# Checkpoint under one kernel, restart under another, both ways (tests/other_kernel/README.md).
#
#   cross_kernel.sh STASIS CLOCK_CALLS FPU_STATE PARENT_DIR
#
# 1. Here: an uninterrupted run of clock_calls (the reference), then a launch checkpointed and
#    killed. 2. One guest boot (guest.sh, another Debian kernel): restart that checkpoint there,
#    and launch + checkpoint + kill a run of its own; also fpu_state (AVX2 registers live in a
#    loop), uninterrupted and checkpointed. 3. Here: restart the guest's clock_calls checkpoint
#    to the end, twice, the second time with a checkpoint and restart on the way, and the guest's
#    fpu_state checkpoint to the end. Every run that completes must leave its reference's output.
#    A restart this machine's CPU features make impossible in the guest (QEMU without KVM
#    emulates no AVX-512) must be refused by name. The guest's emulated CPU has XSAVE components
#    this machine may lack (MPX, PKRU): its frames are larger than this kernel's, and a restart
#    that handed one over as it was would lose the AVX registers (the kernel reads x87 and SSE
#    only from a frame it does not know); fpu_state's output shows that.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
STEPS=40 DELAY_MS=100 WAIT_LINES=8
# fpu_state in the guest: short steps (the CPU is emulated), no pause between them, so the
# checkpoint lands inside the vector loop.
FPU_ARGS=(12 300000 0) FPU_WAIT_LINES=3

note() { echo "[cross-kernel $(date +%T) $(uname -r)] $*"; }
fail() { echo "FAIL: $*"; exit 1; }

. "$HERE/../lib/private_coordinator.sh"
# coordinator NAME CKPT_DIR: a coordinator of our own, its variables exported.
coordinator() { CKPT_DIR=$2 private_coordinator "$STASIS" "$W" "$1"; }

# wait_lines FILE N: until FILE has N step lines (or 180 s: an emulated CPU is slow).
wait_lines() {
  for _ in $(seq 1800); do
    [ "$(grep -c '^step' "$1" 2>/dev/null || true)" -ge "$2" ] && return 0
    sleep 0.1
  done
  fail "$1 has fewer than $2 step lines after 180 s: $(tail -n 2 "$1" 2>/dev/null)"
}

# launch_and_checkpoint NAME [LINES PROGRAM ARGS...]: launch PROGRAM (clock_calls) with stdout to
# W/NAME.out, checkpoint --kill it after LINES (WAIT_LINES) lines; the generation goes to
# W/NAME.gen.
launch_and_checkpoint() {
  local name=$1 lines=${2:-$WAIT_LINES}
  local argv=("${@:3}")
  [ ${#argv[@]} -gt 0 ] || argv=("$PROG" "$STEPS" "$DELAY_MS")
  set -- "$name"
  coordinator "$1" "$W/$1.ckpt"
  "$STASIS" launch -- "${argv[@]}" > "$W/$1.out" 2> "$W/$1.launch.err" &
  local pid=$!
  wait_lines "$W/$1.out" "$lines"
  "$STASIS" checkpoint --kill > "$W/$1.gen" 2> "$W/$1.ckpt.err" || fail "checkpoint of $1: $(cat "$W/$1.ckpt.err")"
  wait "$pid" 2>/dev/null || true
  note "$1: checkpoint $(cat "$W/$1.gen") after $(grep -c '^step' "$W/$1.out") lines"
}

# restart_to_end GEN OUT NAME [again]: restart GEN (its stdout is OUT) with a new coordinator;
# with "again", checkpoint --kill it once it runs and restart that checkpoint to the end.
restart_to_end() {
  local gen=$1 out=$2 name=$3
  coordinator "$name" "$(dirname "$gen")"
  if [ -n "${4:-}" ]; then
    "$STASIS" restart "$gen" 2> "$W/$name.err" &
    local pid=$! again=
    # As soon as the restarted program has joined its coordinator (its output file already
    # holds every line from the run before, so lines tell nothing).
    for _ in $(seq 300); do
      again=$("$STASIS" checkpoint --kill 2>> "$W/$name.err") && break
      again=
      sleep 0.1
    done
    [ -n "$again" ] || fail "checkpoint of the restarted $name: $(cat "$W/$name.err")"
    wait "$pid" 2>/dev/null || true
    note "$name: checkpoint $again of the restarted program after $(grep -c '^step' "$out") lines"
    gen=$again
  fi
  "$STASIS" restart "$gen" 2>> "$W/$name.err"
}

# same_as_reference OUT WHAT [REFERENCE]
same_as_reference() {
  local reference=${3:-$W/reference.out}
  cmp -s "$reference" "$1" || {
    diff "$reference" "$1" | head -n 20
    fail "$2: $1 differs from the uninterrupted run"
  }
  note "$2: output identical to the uninterrupted run ($(wc -l < "$1") lines)"
}

case "${1:-}" in
  guest-part)  # inside the guest: cross_kernel.sh guest-part STASIS PROG FPU_STATE W
    STASIS=$2 PROG=$3 FPU_STATE=$4 W=$5
    note "guest up ($(hostname))"
    cp "$W/host.out" "$W/host-in-guest.out.before"
    if restart_to_end "$(cat "$W/host.gen")" "$W/host.out" host-in-guest; then
      echo 0 > "$W/host-in-guest.status"
    else
      echo $? > "$W/host-in-guest.status"
    fi
    launch_and_checkpoint guest
    "$FPU_STATE" "${FPU_ARGS[@]}" > "$W/fpu-reference.out"
    grep -q '^done' "$W/fpu-reference.out" || fail "fpu_state's uninterrupted run failed"
    launch_and_checkpoint guest-fpu "$FPU_WAIT_LINES" "$FPU_STATE" "${FPU_ARGS[@]}"
    exit 0
    ;;
esac

[ $# -eq 4 ] || { echo "usage: cross_kernel.sh STASIS CLOCK_CALLS FPU_STATE PARENT_DIR" >&2; exit 2; }
# the guest runs them from its work directory
STASIS=$(realpath "$1") PROG=$(realpath "$2") FPU_STATE=$(realpath "$3")
bash "$HERE/guest.sh" check || exit $?
mkdir -p "$4"
W=$(mktemp -d "$(cd "$4" && pwd)/cross-kernel.XXXXXX")
trap 'private_coordinator_cleanup "$STASIS" "$W"' EXIT

"$PROG" "$STEPS" "$DELAY_MS" > "$W/reference.out"
grep -q '^done' "$W/reference.out" || fail "the uninterrupted run failed: $(tail -n 1 "$W/reference.out")"
launch_and_checkpoint host

note "booting the guest"
set +e
bash "$HERE/guest.sh" run "$W" "bash '$HERE/cross_kernel.sh' guest-part '$STASIS' '$PROG' '$FPU_STATE' '$W'"
guest_rc=$?
set -e
sed 's/^/   guest | /' "$W/guest.log"
[ "$guest_rc" -eq 0 ] || fail "the guest part failed (status $guest_rc)"
guest_kernel=$(sed -n 's/^\[cross-kernel [0-9:]* \([^]]*\)\] guest up.*/\1/p' "$W/guest.log" | head -n 1)
[ -n "$guest_kernel" ] && [ "$guest_kernel" != "$(uname -r)" ] ||
  fail "the guest ran kernel '$guest_kernel', not one other than this machine's $(uname -r)"

# This machine's checkpoint, restarted in the guest.
if [ "$(cat "$W/host-in-guest.status")" = 0 ]; then
  same_as_reference "$W/host.out" "checkpoint under $(uname -r), restart under $guest_kernel"
elif grep -q "needs CPU state this machine lacks" "$W/host-in-guest.err"; then
  cmp -s "$W/host.out" "$W/host-in-guest.out.before" || fail "the refused restart in the guest changed $W/host.out"
  note "checkpoint under $(uname -r), restart under $guest_kernel: refused, as it must be on the" \
       "guest's emulated CPU: $(grep -m1 'needs CPU state' "$W/host-in-guest.err")"
else
  cat "$W/host-in-guest.err"
  fail "the restart under $guest_kernel failed (status $(cat "$W/host-in-guest.status"))"
fi

# The guest's checkpoint, restarted here: to the end, then again with a checkpoint on the way.
gen=$(cat "$W/guest.gen")
restart_to_end "$gen" "$W/guest.out" guest-here ||
  fail "restart under $(uname -r) of the checkpoint taken under $guest_kernel: $(cat "$W/guest-here.err")"
same_as_reference "$W/guest.out" "checkpoint under $guest_kernel, restart under $(uname -r)"
restart_to_end "$gen" "$W/guest.out" guest-here-again again ||
  fail "second restart (with a checkpoint under $(uname -r) on the way): $(cat "$W/guest-here-again.err")"
same_as_reference "$W/guest.out" "the same checkpoint restarted again, checkpointed and restarted here"

# The guest's fpu_state, its AVX registers live in the frame of a CPU with other XSAVE components.
gen=$(cat "$W/guest-fpu.gen")
note "guest's fpu_state image: $("$STASIS" inspect "$gen"/fpu_state-*.stasis | grep '^cpu' | sed 's/^cpu *//')"
restart_to_end "$gen" "$W/guest-fpu.out" guest-fpu-here ||
  fail "restart under $(uname -r) of fpu_state checkpointed under $guest_kernel: $(cat "$W/guest-fpu-here.err")"
same_as_reference "$W/guest-fpu.out" "fpu_state checkpointed under $guest_kernel, restarted under $(uname -r)" \
  "$W/fpu-reference.out"
echo "PASS"
