#!/bin/bash
# Runs an MPI job on this host: mpi_run.sh LAUNCHER [LAUNCHER OPTIONS...] -- PROGRAM [ARGS...]
# LAUNCHER is Open MPI's mpirun or MPICH's mpirun.mpich. The settings let Open MPI run as root and
# keep the ranks from starting a thread pool each on a small machine; they change no output.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
launcher=("$1")
shift
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  launcher+=("$1")
  shift
done
shift
exec "${launcher[@]}" "$@"
