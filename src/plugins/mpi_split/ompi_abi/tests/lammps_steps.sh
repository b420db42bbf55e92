#!/bin/bash
# lammps_steps.sh STEPS DELAY: Debian's lmp (LAMMPS, built against Open MPI) on lammps_steps.in,
# in the form split_restart.py runs a program: STEPS lines "step N square N*N", then "done ranks
# 2". DELAY sets how long each step takes (DELAY / 4 input jumps). With DELAY > 0 (the run that is
# checkpointed) the shell is replaced by lmp, so the rank is lmp itself. DELAY 0 is the native
# reference, never checkpointed: its banner ("LAMMPS (...)", which split_restart.py does not count
# as the program's lines of a launch either) is left out, so that it is the program's lines alone.
steps=$1 delay=${2:-0}
lmp=(lmp -in "$(dirname "$0")/lammps_steps.in" -var steps "$steps" -log none -nocite -echo none)
if [ "$delay" -gt 0 ]; then
  exec "${lmp[@]}" -var spin $((delay / 4 > 0 ? delay / 4 : 1))
fi
set -o pipefail
"${lmp[@]}" -var spin 1 | sed -n '/^step [0-9]* square \|^done ranks /p'
