#!/usr/bin/env python3
"""A Slurm batch job longer than its time limit, finished across several allocations by
docs/examples/slurm-requeue.sbatch (the script a user copies), on the private two-node cluster
(tests/slurm/slurm_nodes.py: each node a test host with its own address, /tmp, /dev/shm, host
name and slurmd).

The job runs `srun slurm_task` as four tasks on two nodes for about 70 s under a 1-minute time
limit (Slurm's smallest), submitted with `sbatch --time=1 --signal=B:USR1@20 --requeue`; no
--coord anywhere: the coordinator is the allocation's first node's (port 7781). Slurm's warning
comes at its first time-limit check (every 30 s) at least 10 s after the job starts; `stasis
launch --checkpoint-on-signal USR1` (then `stasis restart --checkpoint-on-signal USR1` in each
requeued allocation) checkpoints and stops the tasks, the script requeues the job, which starts
again about 11 s later (cred_expire=10, sched_interval=1 in slurm.conf.in).
Checks: the job ends by itself within the test's deadline; it ran in at least three allocations
(the script's lines on its stderr); each task's lines in the job's output file (appended to by
every allocation) are exactly an uninterrupted run's, in order, none lost or twice; the job's exit
code is srun's for the same tasks (the highest task status); while the first allocation runs,
`stasis status` on node 2 (no --coord) shows the four tasks.
Exits 77 (skipped) without slurm-wlm and munge, without network namespaces, or when not root.
usage: requeue_test.py --stasis STASIS --task SLURM_TASK [--conf SLURM_CONF_IN] [--script SBATCH]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from slurm.slurm_cluster import DEFAULT_TEMPLATE  # noqa: E402
from slurm.slurm_nodes import SlurmNodes, skip_reason  # noqa: E402
from slurm.slurm_test import Failure, by_task  # noqa: E402

SCRIPT = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "examples", "slurm-requeue.sbatch")
STEPS, DELAY_MS = 700, 100  # 70 s of work
NODES, TASKS = 2, 4
DEADLINE_S = 220


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--conf", default=DEFAULT_TEMPLATE)
    parser.add_argument("--script", default=SCRIPT)
    args = parser.parse_args()
    if skip_reason(args.conf):
        print(f"SKIP: {skip_reason(args.conf)}")
        return 77

    started = time.time()
    nodes = SlurmNodes(args.conf, "stasis-slurm-requeue-")
    tmp, cluster = nodes.tmp, nodes.cluster
    env = cluster.test_env(tmp)
    env.update(STASIS=os.path.abspath(args.stasis), STASIS_CKPT_DIR=os.path.join(tmp, "ckpt"))
    out, err = os.path.join(tmp, "job.out"), os.path.join(tmp, "job.err")
    try:
        # The uninterrupted run's lines: slurm_task's output depends on its rank only, not on time.
        reference = {t: subprocess.run([args.task, str(STEPS), "0"], capture_output=True, text=True, timeout=60,
                                       env=dict(os.environ, SLURM_PROCID=str(t))).stdout.splitlines()
                     for t in range(TASKS)}
        nodes.up()
        print(f"cluster up in {time.time() - started:.1f} s")
        submit = subprocess.run(nodes.on(0, "sbatch", "--parsable", "--time=1", "--signal=B:USR1@20", "--requeue",
                                         "-N", str(NODES), "-n", str(TASKS), f"--output={out}", f"--error={err}",
                                         args.script, os.path.abspath(args.task), str(STEPS), str(DELAY_MS)),
                                capture_output=True, text=True, env=env, timeout=60)
        if submit.returncode != 0:
            raise Failure(f"sbatch failed: {submit.stderr}")
        job_id = submit.stdout.strip().split(";")[0]
        submitted = time.time()

        def status_on_node2():
            r = subprocess.run(nodes.on(1, args.stasis, "status", "--json"), capture_output=True, text=True,
                               env=dict(env, SLURM_JOB_NODELIST="stasis-slurm[1-2]"), timeout=60)
            try:
                return sorted((p["program"], p["host"]) for p in json.loads(r.stdout)["processes"])
            except (ValueError, KeyError):
                return []
        expected = sorted(("slurm_task", name) for name in nodes.names for _ in range(TASKS // NODES))
        seen_from_node2 = False
        while cluster.jobs():
            if time.time() - started > DEADLINE_S:
                raise Failure(f"job {job_id} still in the queue after {DEADLINE_S} s")
            if not seen_from_node2:
                seen_from_node2 = status_on_node2() == expected
            time.sleep(0.5)
        print(f"job {job_id} done {time.time() - submitted:.1f} s after its submission")
        if not seen_from_node2:
            raise Failure("`stasis status` on node 2 never showed the four tasks")
        print("`stasis status` on node 2, without --coord, showed the four tasks on their nodes")

        # When each allocation started and was requeued, as slurmctld logged it.
        for line in open(os.path.join(cluster.dir, "slurmctld.log"), errors="replace"):
            if re.search(r"(Allocate|Started|Requeuing) JobId", line):
                print("slurmctld:", line.strip())
        notes = open(err).read()
        allocations = re.findall(r"slurm-requeue: job \d+, allocation (\d+)", notes)
        print("".join(line + "\n" for line in notes.splitlines() if line.startswith("slurm-requeue:")), end="")
        print(f"allocations: {len(allocations)}; checkpoints on signal: "
              f"{notes.count('checkpoint on signal written')}")
        if len(allocations) < 3:
            raise Failure(f"the job ran in {len(allocations)} allocation(s), not at least 3:\n{notes[-3000:]}")
        printed = by_task(open(out).read())
        for t in range(TASKS):
            if printed.get(t) != reference[t]:
                got = printed.get(t, [])
                first = next((i for i, (a, b) in enumerate(zip(got, reference[t])) if a != b), min(len(got), len(reference[t])))
                raise Failure(f"task {t}: {len(got)} lines, the uninterrupted run {len(reference[t])}; first "
                              f"difference at line {first + 1}: {got[first:first + 2]} vs {reference[t][first:first + 2]}")
            print(f"task {t}: {len(reference[t])} lines, equal to an uninterrupted run")
        shown = cluster.run("scontrol", "show", "job", job_id, "--oneliner").stdout
        exit_code = re.search(r"\bExitCode=(\d+):", shown)
        if not exit_code or int(exit_code.group(1)) != TASKS - 1:
            raise Failure(f"the job's exit code is not srun's ({TASKS - 1}, the highest task's): {shown}")
        print(f"job exit code {exit_code.group(1)}, as srun's; PASS in {time.time() - started:.1f} s")
        return 0
    except (Failure, RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: {e}")
        cluster.print_logs(err, os.path.join(tmp, "ckpt", "coordinator.log"))
        return 1
    finally:
        nodes.down()


if __name__ == "__main__":
    sys.exit(main())
