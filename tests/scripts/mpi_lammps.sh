#!/bin/bash
# LAMMPS (Debian: lammps) melting a Lennard-Jones crystal: an fcc lattice of L x L x L cells
# (4 L^3 atoms) started at temperature 3.0 and run for N steps at constant energy, under Open MPI
# with its default transports, in the current directory (melt.in, run.log).
# usage: mpi_lammps.sh MPIRUN RANKS L N
# Prints only the thermo lines (step, temperature, energies, pressure every 50 steps), which are
# bitwise the same from run to run; the timings LAMMPS also prints are not.
here=$(dirname "$0")
mpirun=$1 ranks=$2 box=$3 steps=$4
cat > melt.in <<'INPUT'
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 ${L} 0 ${L} 0 ${L}
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 3.0 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    every 20 delay 0 check no
fix             1 all nve
thermo          50
run             ${N}
INPUT
set -o pipefail
"$here/mpi_run.sh" "$mpirun" -np "$ranks" -- lmp -var L "$box" -var N "$steps" -in melt.in -log run.log |
  grep --line-buffered -E '^ +[0-9]+ +[-+.0-9e]+ '
