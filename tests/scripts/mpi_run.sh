#!/bin/bash
# Runs an MPI job on this host: mpi_run.sh LAUNCHER [LAUNCHER OPTIONS...] -- PROGRAM [ARGS...]
# LAUNCHER is Open MPI's mpirun or MPICH's mpirun.mpich. The settings let Open MPI run as root,
# keep the ranks from starting a thread pool each on a small machine, and make Open MPI's waiting
# ranks yield the CPU (busy-polling ranks on a loaded 2-core machine starve each other: 50 times
# slower); they change no output.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export OMPI_MCA_mpi_yield_when_idle=1
launcher=("$1")
shift
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  launcher+=("$1")
  shift
done
shift
exec "${launcher[@]}" "$@"
