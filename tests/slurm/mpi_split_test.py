#!/usr/bin/env python3
"""Split-process MPI jobs started by srun, checkpointed, cancelled and restarted in new allocations.

On the private two-node Slurm cluster (slurm_nodes.py: each node a test host with its own address,
/tmp, /dev/shm, host name, pids and slurmd), four ranks (MPICH: two) of ring_in_flight (built against Stasis's
abi/mpi.h; a message in flight to every rank most of the time) run as
`srun --mpi=MPI -N 2 -n 4 stasis launch --mpi --coord NODE1:PORT -- ring_in_flight_split`: every
rank its own launch, the one on node 1 starting the coordinator. The job is checkpointed while it
runs and cancelled (`scancel`); then, from that one checkpoint (on the shared file system):
  1. `srun --mpi=MPI -N 2 -n 4 stasis restart --mpi-rank`: a new job, as many ranks a node;
  2. with --mpi pmix only: `srun --mpi=pmix -w NODE2 -N 1 -n 4 --overcommit stasis restart
     --mpi-rank --coord NODE2:PORT`: a new job on one node, node 1's ranks (another pid space)
     brought to node 2;
  3. with --mpi pmix only: `mpirun -np 4 stasis restart --mpi-rank` on node 1, outside Slurm (Open
     MPI's own launcher after srun).
Checks: the ranks join, as many from each node; the checkpoint holds each rank's image and its
mpi_split.rank-R file naming its pid and pid space; each restart's rank-0 lines go on from the
checkpoint (they are the uninterrupted run's from a line no earlier than those printed when the
checkpoint was asked for and no later than those printed before the cancel) to its end, and it
exits 0; every restarted rank says it started a fresh lower half.
--mpi pmix: Open MPI (its ranks speak PMIx to slurmstepd); --mpi pmi2: MPICH (PMI_FD).
usage: mpi_split_test.py --stasis S --conf C --mpi pmix|pmi2 --native NATIVE --split SPLIT [--mpirun M]
Exits 77 (skipped) without slurm-wlm and munge, Slurm's MPI plugin, network namespaces, or root."""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from slurm.slurm_nodes import ADDRESSES, SlurmNodes, skip_reason  # noqa: E402
from slurm.slurm_test import Failure  # noqa: E402

STEPS, DELAY_MS = 50, 150
NODES = 2
# Ranks: MPICH 4.0 under srun --mpi=pmi2 with two ranks on a node hangs now and then at its end
# without Stasis (seen: 2 of 3 native runs of 4 ranks, on one node and on two; a restart of 2
# ranks onto one node once in 2), so one a node, and no restart onto one node.
RANKS_OF = {"pmix": 4, "pmi2": 2}
PORT = 7791
PROGRAM = "ring_in_flight_"  # the process name: the program's first 15 characters
FRESH = r"split MPI: restarted over a fresh lower half \((\w+)\)"  # each restarted rank's log line


def program_lines(text):
    """Rank 0's lines: what srun or a launcher adds (a cancelled step's errors) is not the program's."""
    return [line for line in text.splitlines() if re.match(r"^(step \d+ |done ranks )", line)]


def mpi_plugin_missing(mpi):
    plugin = f"/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_{mpi}.so"
    return None if os.path.exists(plugin) else f"Slurm's MPI plugin {plugin} is not installed"


def check_continues(reference, asked_at, before, after, what):
    """`after` is `reference` from a line between `asked_at` and len(`before`) to its end."""
    if before != reference[:len(before)]:
        raise Failure(f"{what}: the job printed before the cancel {before}, not the start of {reference}")
    for start in range(asked_at, len(before) + 1):
        if after == reference[start:]:
            return start
    raise Failure(f"{what}: the restart printed {after}, not the uninterrupted run's lines from line "
                  f"{asked_at} to {len(before)} on: {reference}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--conf", required=True)
    parser.add_argument("--mpi", choices=("pmix", "pmi2"), required=True)
    parser.add_argument("--native", required=True, help="ring_in_flight built against the library's mpi.h")
    parser.add_argument("--split", required=True, help="ring_in_flight built against abi/mpi.h")
    parser.add_argument("--mpirun", help="Open MPI's mpirun, for the restart outside Slurm")
    args = parser.parse_args()
    reason = skip_reason(args.conf) or mpi_plugin_missing(args.mpi)
    if reason:
        print(f"SKIP: {reason}")
        return 77

    started = time.time()
    ranks, per_node = RANKS_OF[args.mpi], RANKS_OF[args.mpi] // NODES
    nodes = SlurmNodes(args.conf, f"stasis-slurm-mpi-split-{args.mpi}-")
    tmp, cluster = nodes.tmp, nodes.cluster
    ckpt_dir = os.path.join(tmp, "ckpt")
    coord = f"{ADDRESSES[0]}:{PORT}"
    env = cluster.test_env(tmp)
    if args.mpi == "pmix":  # Open MPI: TCP between the nodes' namespaces, shared memory within one
        env.update(OMPI_MCA_btl="tcp,self,vader", OMPI_MCA_btl_tcp_if_include="10.210.0.0/16",
                   OMPI_MCA_oob_tcp_if_include="10.210.0.0/16", OMPI_MCA_rmaps_base_oversubscribe="1")
    else:  # MPICH over TCP (as slurm.mpich-pmi2-refused)
        env.update(UCX_TLS="tcp,self", MPIR_CVAR_NOLOCAL="1", OMP_NUM_THREADS="1")
    srun = ["srun", f"--mpi={args.mpi}"]
    out1 = os.path.join(tmp, "run1.out")
    job = None

    def run(*argv, node=0, timeout=180):
        return subprocess.run(nodes.on(node, *argv), capture_output=True, text=True, env=env, timeout=timeout)

    def members(at=coord):
        r = subprocess.run(nodes.on(0, args.stasis, "status", "--coord", at, "--json"), capture_output=True,
                           text=True, env=env, timeout=60)
        try:
            return sorted((p["program"], p["host"]) for p in json.loads(r.stdout)["processes"])
        except (ValueError, KeyError):
            return []

    implementation = "openmpi" if args.mpi == "pmix" else "mpich"

    def coordinator_log():
        path = os.path.join(ckpt_dir, "coordinator.log")
        return open(path, errors="replace").read() if os.path.exists(path) else ""

    try:
        nodes.up()
        print(f"cluster up in {time.time() - started:.1f} s")
        native = [*srun, "-N", str(NODES), "-n", str(ranks), args.native, str(STEPS), "0"]
        try:
            reference = run(*native, timeout=90)
        except subprocess.TimeoutExpired:  # MPICH under pmi2, without Stasis: seen hanging 1 run in 4
            print("the native run did not end in 90 s (without Stasis); run once more")
            cluster.run("scancel", *cluster.jobs())
            cluster.wait_no_jobs()
            reference = run(*native, timeout=90)
        expected = program_lines(reference.stdout)
        if reference.returncode != 0 or len(expected) != STEPS + 1 or expected[-1] != f"done ranks {ranks}":
            raise Failure(f"the native run under srun --mpi={args.mpi} failed ({reference.returncode}): "
                          f"{reference.stdout[-1500:]}{reference.stderr[-1500:]}")
        print(f"reference (native build, srun --mpi={args.mpi}): {len(expected)} lines")

        launch = [*srun, "-N", str(NODES), "-n", str(ranks), args.stasis, "launch", "--mpi", "--coord", coord,
                  "--ckpt-dir", ckpt_dir, "--", args.split, str(STEPS), str(DELAY_MS)]
        with open(out1, "w") as out:
            job = subprocess.Popen(nodes.on(0, *launch), stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        printed = lambda: program_lines(open(out1).read())
        per_node_members = sorted((PROGRAM, name) for name in nodes.names for _ in range(per_node))
        wait_for(lambda: (len(printed()) >= 5 and members() == per_node_members) or job.poll() is not None,
                 f"the first lines and the {ranks} ranks, {per_node} on each node, in `stasis status`", 120)
        if job.poll() is not None:
            raise Failure(f"the job ended early ({job.returncode}): {open(out1).read()[-3000:]}")
        print("members:", members())

        asked_at = len(printed())
        for _ in range(20):  # a rank inside a call that does not come out in time: asked again
            ckpt = run(args.stasis, "checkpoint", "--coord", coord)
            if ckpt.returncode == 0 or "stayed inside the MPI library" not in ckpt.stderr:
                break
            time.sleep(0.3)
        if ckpt.returncode != 0:
            raise Failure(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}")
        generation = ckpt.stdout.strip().splitlines()[-1]
        manifest = json.load(open(os.path.join(generation, "MANIFEST.json")))["processes"]
        saved = {(p["pid"], p.get("pid_space", "")) for p in manifest}
        if sorted((p["program"], p["address"]) for p in manifest) != \
                sorted((PROGRAM, a) for a in ADDRESSES[:NODES] for _ in range(per_node)):
            raise Failure(f"the checkpoint holds {manifest}, not the {ranks} ranks, {per_node} at each node's address")
        named = set()
        for rank in range(ranks):
            words = open(os.path.join(generation, f"mpi_split.rank-{rank}")).read().split()
            named.add((int(words[0]), words[1] if len(words) > 1 else ""))
        if named != saved:
            raise Failure(f"the mpi_split.rank-R files name {sorted(named)}, the checkpoint's processes are "
                          f"{sorted(saved)}")
        print(f"checkpoint {generation}: asked after {asked_at} lines; ranks (pid, pid space):", sorted(named))

        cancelled = cluster.cancel_the_job(job)
        job = None
        wait_for(lambda: not members(), "the cancelled ranks' leaving the coordinator", 60)
        before = printed()
        print(f"cancelled job {cancelled} after {len(before)} lines")

        restarts = [("srun, 2 nodes", ["-N", str(NODES), "-n", str(ranks)], coord, None)]
        if args.mpi == "pmix":  # MPICH under pmi2 with two ranks on a node hangs without Stasis too
            restarts.append(("srun, 1 node", ["-w", nodes.names[1], "-N", "1", "-n", str(ranks), "--overcommit"],
                             f"{ADDRESSES[1]}:{PORT}", None))
        if args.mpi == "pmix" and args.mpirun:
            restarts.append(("mpirun on node 1", None, coord,
                             [args.mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(ranks)]))
        for what, placement, at, launcher in restarts:
            restart_at = time.time()
            said_before = re.findall(FRESH, coordinator_log())
            restart_argv = [args.stasis, "restart", "--mpi-rank", "--coord", at, generation]
            argv = [*launcher, *restart_argv] if launcher else [*srun, *placement, *restart_argv]
            restart = run(*argv, timeout=100)  # about 10 s; all within the test's 400
            after = program_lines(restart.stdout)
            if restart.returncode != 0:
                raise Failure(f"restart ({what}) exited {restart.returncode}: {restart.stdout[-2000:]}"
                              f"{restart.stderr[-3000:]}")
            start = check_continues(expected, asked_at, before, after, f"restart ({what})")
            fresh = re.findall(FRESH, restart.stderr) + re.findall(FRESH, coordinator_log())[len(said_before):]
            if fresh != [implementation] * ranks:
                raise Failure(f"restart ({what}): the ranks said they restarted over lower halves {fresh}, not "
                              f"{ranks} of {implementation}")
            print(f"restart ({what}): {time.time() - restart_at:.1f} s, rank 0 went on from line {start}, "
                  f"{len(after)} lines; {len(fresh)} fresh lower halves ({implementation})")
            cluster.wait_no_jobs()  # its job ended with its step
            wait_for(lambda: not members(at), f"the restarted ranks' leaving the coordinator at {at}", 60)
        print(f"PASS in {time.time() - started:.1f} s")
        return 0
    except (Failure, RuntimeError, subprocess.SubprocessError, OSError) as e:
        print(f"FAIL: {e}")
        cluster.print_logs(os.path.join(ckpt_dir, "coordinator.log"), out1)
        return 1
    finally:
        try:
            if job is not None and job.poll() is None:
                os.killpg(job.pid, 9)
                job.wait()
            for at in (coord, f"{ADDRESSES[1]}:{PORT}"):
                subprocess.run(nodes.on(0, args.stasis, "kill", "--coord", at), env=env, capture_output=True,
                               timeout=60)
        finally:
            nodes.down()


if __name__ == "__main__":
    sys.exit(main())
