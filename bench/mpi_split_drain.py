#!/usr/bin/python3
"""The split mode's drain against the number of ranks (src/plugins/mpi_split/README.md, Draining).

Runs src/plugins/mpi_split/tests/in_flight.c (built by the project as in_flight_split) with
Open MPI on this host, oversubscribed, for each --ranks value: every rank leaves rank+4 messages
in flight to its neighbours on three communicators, then counts them (STASIS_MPI_In_flight: one
reduce-scatter over a private duplicate of MPI_COMM_WORLD) and drains them (STASIS_MPI_Drain).
Prints, per number of ranks, the median time of one count (over --counts calls with nothing in
flight) and of one drain (over --rounds rounds, rank 0's). Oversubscribed ranks share the cores,
so the figures grow with the ranks per core as much as with the algorithm.

usage: bench/mpi_split_drain.py [--build build] [--ranks 2 8 32] [--rounds 9] [--counts 200]
"""
import argparse
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", type=int, nargs="+", default=[2, 8, 32])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--counts", type=int, default=200)
    a = parser.parse_args()
    program = os.path.join(os.path.abspath(a.build), "tests", "targets", "in_flight_split")
    if not os.path.exists(program):
        sys.exit(f"no {program}: build the project first (with Open MPI installed)")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    print(f"Open MPI on {os.cpu_count()} cpus (load average {os.getloadavg()[0]:.1f}), oversubscribed")
    for ranks in a.ranks:
        done = subprocess.run(["mpirun.openmpi", "-np", str(ranks), "--oversubscribe", program, str(a.rounds),
                               str(a.counts), "1"], env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0 or "in_flight ok" not in done.stdout:
            sys.exit(f"{ranks} ranks: failed (status {done.returncode})\n{done.stdout}\n{done.stderr}")
        count = float(re.search(r"in_flight count: \d+ ranks, median (\S+) us", done.stderr).group(1))
        drain = float(re.search(r"drain: \d+ ranks, median (\S+) us", done.stderr).group(1))
        messages = re.search(r"round 1 in flight (\d+)", done.stdout).group(1)
        print(f"  {ranks:4d} ranks: count {count:10.1f} us   drain {drain:10.1f} us ({messages} messages in flight)")


if __name__ == "__main__":
    main()
