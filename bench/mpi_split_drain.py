#!/usr/bin/python3
"""The split mode's drain against the number of ranks and of communicators (src/plugins/mpi_split/README.md,
Draining).

Runs src/plugins/mpi_split/tests/in_flight.c (built by the project as in_flight_split) with
Open MPI on this host, oversubscribed, for each --ranks value: every rank leaves rank+4 messages
in flight to its neighbours on three communicators, then counts them (STASIS_MPI_In_flight: one
reduce-scatter over a private duplicate of MPI_COMM_WORLD) and drains them (STASIS_MPI_Drain).
Then, at --comm-ranks ranks, for each --comms value: the program holds that many more
communicators (duplicates of MPI_COMM_WORLD, idle but one, which carries one message more to
each rank: the last one made, so the drain has to reach it).
Prints, per run, the median time of one count (over --counts calls with nothing in flight) and of
one drain (over --rounds rounds, rank 0's, which has the most messages: ranks+3), and the median of
those over --runs runs. Oversubscribed ranks share the cores, so the figures grow with the ranks per
core as much as with the algorithm. 128 ranks need more descriptors than a shell's usual 1024 for
mpirun (one pipe pair and a socket a rank): the soft limit is raised to the hard one here.

usage: bench/mpi_split_drain.py [--build build] [--ranks 2 8 32 128] [--rounds 9] [--counts 200]
                                [--runs 3] [--comm-ranks 8] [--comms 0 64 256 1024]
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_once(program, env, ranks, comms, a):
    """One job: (count us, drain us, messages in flight to all ranks in a round)."""
    done = subprocess.run(["mpirun.openmpi", "-np", str(ranks), "--oversubscribe", program, str(a.rounds),
                           str(a.counts), "1", str(comms)], env=env, capture_output=True, text=True, timeout=900)
    # Open MPI 4.1's mpirun sometimes fails a job whose every rank finalized ("process rank N with PID 0
    # ... exiting improperly", its own race at exit, open-mpi/ompi#7833): seen at 128 oversubscribed
    # ranks natively too, under load. The program's own checks passed and its figures stand.
    exit_race = done.returncode != 0 and "with PID 0 on" in done.stderr and "exiting improperly" in done.stderr
    if exit_race and "in_flight ok" in done.stdout:
        print(f"  ({ranks} ranks: every check passed, then mpirun's exit race: status {done.returncode})")
    elif done.returncode != 0 or "in_flight ok" not in done.stdout:
        sys.exit(f"{ranks} ranks, {comms} communicators more: failed (status {done.returncode})\n"
                 f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    count = float(re.search(r"in_flight count: \d+ ranks, \d+ communicators more, median (\S+) us", done.stderr).group(1))
    drain = float(re.search(r"drain: \d+ ranks, median (\S+) us", done.stderr).group(1))
    messages = int(re.search(r"round 1 in flight (\d+)", done.stdout).group(1))
    return count, drain, messages


def series(program, env, ranks, comms, a):
    runs = [run_once(program, env, ranks, comms, a) for _ in range(a.runs)]
    count = statistics.median(r[0] for r in runs)
    drain = statistics.median(r[1] for r in runs)
    each = ", ".join(f"{r[1]:.0f}" for r in runs)
    print(f"  {ranks:4d} ranks {comms:5d} comms more: count {count:10.1f} us   drain {drain:10.1f} us "
          f"(runs: {each} us; {runs[0][2]} messages in flight; load {os.getloadavg()[0]:.1f})", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--ranks", type=int, nargs="*", default=[2, 8, 32, 128])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--counts", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--comm-ranks", type=int, default=8)
    parser.add_argument("--comms", type=int, nargs="*", default=[0, 64, 256, 1024])
    a = parser.parse_args()
    program = os.path.join(os.path.abspath(a.build), "tests", "targets", "in_flight_split")
    if not os.path.exists(program):
        sys.exit(f"no {program}: build the project first (with Open MPI installed)")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OMPI_MCA_mpi_yield_when_idle="1")
    print(f"Open MPI on {os.cpu_count()} cpus (load average {os.getloadavg()[0]:.1f}), oversubscribed, "
          f"descriptors {hard}; medians of {a.runs} runs")
    for ranks in a.ranks:
        series(program, env, ranks, 0, a)
    for comms in a.comms:
        series(program, env, a.comm_ranks, comms, a)


if __name__ == "__main__":
    main()
