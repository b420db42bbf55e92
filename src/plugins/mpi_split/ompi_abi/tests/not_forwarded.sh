#!/bin/bash
# not_forwarded.sh MPI_RUN LAUNCHER FRONT_DIR PROGRAM [LIBRARY ARG EXPECTED...]: runs not_forwarded
# (tests/not_forwarded.c, built with Open MPI's mpicc) on 2 ranks through the Open MPI front in
# FRONT_DIR, as `stasis launch --mpi` sets it up. Passes when every rank ran through the front, found the functions the
# front answers itself right and said "before", and the job then ended with a nonzero status and the front's line naming MPI_Add_error_class, no rank said
# "after", and no rank died of a signal; and the same for MPI_Bcast of MPI_WCHAR, an object of
# Open MPI's that has no split-mode equivalent, refused by name. With LIBRARY (the front's library
# each rank must say it runs through: libmpi_mpifh.so.40 for fortran/tests/fortran_refused.f90)
# and pairs of the program's argument and the line expected, those jobs instead.
set -u
mpi_run=$1 launcher=$2 front=$3 program=$4 library=${5:-libmpi.so.40}
shift 5 2>/dev/null || shift 4
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(call "MPI_Add_error_class: not forwarded"
  object "MPI_Bcast: Open MPI's ompi_mpi_wchar has no equivalent in split mode yet")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for f in out err; do echo "---- $f"; cat "$work/$f"; done
  exit 1
}
# job ARG EXPECTED: the job with ARG must end at the front's line EXPECTED.
job() {
  LD_LIBRARY_PATH="$front${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" STASIS_MPI_OMPI_ABI_DIR="$front" \
    STASIS_MPI_LOWER_MODE=program timeout 120 "$mpi_run" "$launcher" -np 2 -- "$program" "$1" >"$work/out" 2>"$work/err"
  status=$?
  [ $status -ne 0 ] || fail "the job ($1) ended with status 0"
  [ $status -ne 124 ] || fail "the job ($1) did not end in 120 s"
  [ "$(grep -c "MPI through .*/ompi_abi/$library\$" "$work/err")" = 2 ] || fail "not every rank ran through the front"
  [ "$(grep -c '^before rank ' "$work/out")" = 2 ] || fail "not every rank got to the call"
  grep -q '^after' "$work/out" && fail "the call came back"
  grep -q "^stasis ompi_abi: $2" "$work/err" || fail "no line 'stasis ompi_abi: $2'"
  grep -Eqi 'segmentation|signal [0-9]|core dumped' "$work/err" && fail "a rank died of a signal"
  echo "$1: ended by name (job status $status)"
}
for ((i = 0; i < ${#cases[@]}; i += 2)); do
  job "${cases[i]}" "${cases[i + 1]}"
done
