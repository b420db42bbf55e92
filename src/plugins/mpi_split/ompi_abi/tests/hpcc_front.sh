#!/bin/bash
# hpcc_front.sh MPI_RUN LAUNCHER FRONT_DIR INPUT: Debian's unmodified hpcc (built against Open
# MPI; a PIE that copy-relocates Open MPI's objects) on 2 ranks through the Open MPI front in
# FRONT_DIR, as `stasis launch --mpi` sets it up, with INPUT (hpccinf.txt: N=200, a 1x2 grid).
# Passes when every rank initialised the front and hpcc read its input through it (the HPL
# parameters it broadcasts are in its output), and then either ran to its end with status 0 or
# ended at a function the front does not forward, with the front's line naming it and no rank
# killed by a signal. Says which, and the function. Skipped (77) without hpcc.
set -u
mpi_run=$1 launcher=$2 front=$3 input=$4
command -v hpcc >/dev/null || { echo "SKIP: no hpcc (Debian: hpcc)"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  echo "---- stderr (without the loader's lines)"; grep -v '^ *[0-9]*:' "$work/err"
  echo "---- hpccoutf.txt"; cat "$work/hpccoutf.txt"
  exit 1
}
cp "$input" "$work/hpccinf.txt"
(cd "$work" && LD_DEBUG=files LD_LIBRARY_PATH="$front${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  STASIS_MPI_OMPI_ABI_DIR="$front" STASIS_MPI_LOWER_MODE=program timeout 300 \
  "$mpi_run" "$launcher" -np 2 -- hpcc >"$work/out" 2>"$work/err")
status=$?
[ $status -ne 124 ] || fail "hpcc did not end in 300 s"
initialised=$(grep -c "calling init: $front/libmpi.so.40\$" "$work/err")
[ "$initialised" = 2 ] || fail "the front was initialised in $initialised ranks, expected 2"
grep -Eq '^N +: +200 *$' "$work/hpccoutf.txt" && grep -Eq '^Q +: +2 *$' "$work/hpccoutf.txt" ||
  fail "hpcc's output does not show the input it read"
grep -Eqi 'segmentation|signal [0-9]|core dumped' "$work/err" && fail "a rank died of a signal"
if [ $status -eq 0 ]; then
  grep -q 'End of HPC Challenge tests' "$work/hpccoutf.txt" || fail "hpcc ended with status 0 before its end"
  echo "hpcc ran to its end through the front"
  exit 0
fi
missing=$(sed -n 's/^stasis ompi_abi: \(P\{0,1\}MPI_[A-Za-z_]*\): not forwarded .*/\1/p' "$work/err" | sort -u)
[ -n "$missing" ] || fail "hpcc ended with status $status, not at a function the front does not forward"
echo "hpcc read its input and ran through the front until $missing (not forwarded), which ended it by name" \
  "(status $status); last section begun: $(grep '^Begin of' "$work/hpccoutf.txt" | tail -1)"
