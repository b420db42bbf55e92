#!/bin/bash
# same_output.sh RANKS_A RANKS_B REMADE_B COMMAND A... --then COMMAND B...
# (--then, not --: the MPI launch script takes -- itself). With SPLIT_B_MODE=program, job B's
# split ranks must have been started by the lower-half program (stasis-mpi-lower-IMPL).
# Runs two MPI jobs one after the other and passes when both end with status 0 and print the
# same non-empty stdout. RANKS_A / RANKS_B: how many ranks of that job must say on stderr that
# they ran as a split process with a lower half mapped (split_ring's build against abi/mpi.h
# does), 0 for a job built against a library's own mpi.h (none may say it). REMADE_B: how many
# ranks of job B must say they made their objects again from the replay log. Output of a failed
# comparison: both outputs and both stderrs.
set -u
ranks_a=$1 ranks_b=$2 remade_b=$3
shift 3
a=()
while [ $# -gt 0 ] && [ "$1" != "--then" ]; do a+=("$1"); shift; done
[ $# -gt 1 ] || { echo "usage: same_output.sh RANKS_A RANKS_B REMADE_B COMMAND A... --then COMMAND B..." >&2; exit 2; }
shift
b=("$@")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "FAIL: $*"
  for f in a.out a.err b.out b.err; do echo "---- $f"; cat "$work/$f"; done
  exit 1
}
run="$(dirname "$0")/run_mpi_job.sh"
"$run" "$work/a.out" "$work/a.err" "${a[@]}" || fail "job A (${a[*]}) ended with status $?"
"$run" "$work/b.out" "$work/b.err" "${b[@]}" || fail "job B (${b[*]}) ended with status $?"
[ -s "$work/a.out" ] || fail "job A printed nothing"
grep -q '^done ranks ' "$work/a.out" || fail "job A did not finish (no 'done ranks' line)"
cmp -s "$work/a.out" "$work/b.out" || fail "the two jobs printed different lines"
# SPLIT_B_MODE=program: job B's ranks must run under the lower-half program, with two libcs.
mapped_b_pattern='upper half, .* lower half mapped (library), 1 libc$'
[ "${SPLIT_B_MODE:-library}" = program ] && mapped_b_pattern='upper half, .* lower half mapped (program), 2 libcs$'
mapped_a=$(grep -c 'upper half, .* lower half mapped (library), 1 libc$' "$work/a.err")
mapped_b=$(grep -c "$mapped_b_pattern" "$work/b.err")
[ "$mapped_a" = "$ranks_a" ] || fail "job A: $mapped_a ranks ran as a split process, expected $ranks_a"
[ "$mapped_b" = "$ranks_b" ] || fail "job B: $mapped_b ranks ran as a split process, expected $ranks_b"
remade=$(grep -c 'remade [0-9]* objects from the replay log$' "$work/b.err")
[ "$remade" = "$remade_b" ] || fail "job B: $remade ranks made their objects again, expected $remade_b"
echo "same output ($(wc -l <"$work/a.out") lines); split ranks: A $mapped_a, B $mapped_b"
