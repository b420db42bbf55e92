#!/bin/bash
# front_same_output.sh MPI_RUN LAUNCHER RANKS FRONT_DIR PROGRAM ARGS...: runs PROGRAM (built with
# Open MPI's own mpicc) on RANKS ranks natively, then through the Open MPI front in FRONT_DIR as
# `stasis launch --mpi` sets it up (the split layer underneath, a lower-half program in every
# rank). Passes when both jobs end with status 0 and print the same non-empty stdout, and the
# front was initialised in every rank of the second (the loader's LD_DEBUG=files lines). With
# FRONT_COPY_RELOCATED=SYMBOL, PROGRAM must also hold a copy relocation of that Open MPI object.
# With FRONT_LAUNCHER (MPICH's mpirun.mpich), the second job runs under that launcher, over
# that launcher's library: the Open MPI binary on MPICH.
set -u
mpi_run=$1 launcher=$2 ranks=$3 front=$4
shift 4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for f in native.out native.err front.out; do echo "---- $f"; cat "$work/$f"; done
  echo "---- front.err (without the loader's lines)"; grep -v '^ *[0-9]*:' "$work/front.err"
  exit 1
}
run="$(dirname "$0")/../../tests/run_mpi_job.sh"
if [ -n "${FRONT_COPY_RELOCATED:-}" ]; then
  readelf -rW "$1" | grep -q "R_X86_64_COPY .* $FRONT_COPY_RELOCATED + 0\$" ||
    { echo "FAIL: $1 has no copy relocation of $FRONT_COPY_RELOCATED"; exit 1; }
fi
"$run" "$work/native.out" "$work/native.err" "$mpi_run" "$launcher" -np "$ranks" -- "$@" ||
  fail "the native job ended with status $?"
LD_DEBUG=files LD_LIBRARY_PATH="$front${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" STASIS_MPI_OMPI_ABI_DIR="$front" \
  STASIS_MPI_LOWER_MODE=program "$run" "$work/front.out" "$work/front.err" "$mpi_run" "${FRONT_LAUNCHER:-$launcher}" \
  -np "$ranks" -- "$@" ||
  fail "the job through the front ended with status $?"
[ -s "$work/native.out" ] || fail "the native job printed nothing"
cmp -s "$work/native.out" "$work/front.out" || fail "the two jobs printed different lines"
initialised=$(grep -c "calling init: $front/libmpi.so.40\$" "$work/front.err")
[ "$initialised" = "$ranks" ] || fail "the front was initialised in $initialised ranks, expected $ranks"
echo "same output ($(wc -l <"$work/native.out") lines) through the front in $ranks ranks"
