#!/usr/bin/env python3
"""Four Slurm tasks on two nodes checkpointed, cancelled and restarted in a new allocation.

Runs a private two-node Slurm cluster (tests/slurm/slurm_nodes.py: each node a test host with its
own address, /tmp, /dev/shm, host name and slurmd). Modes:
  --mode launch-srun   on node 1, `stasis launch --coord NODE1:PORT -- srun -N 2 -n 4 slurm_task`;
                       the tasks' output comes through srun. After `scancel`, `salloc -N 2 -n 4
                       stasis restart` (no --hosts) brings them back, output on its stdout.
  --mode srun-launch   `srun -N 2 -n 4 --output=task-%t.out stasis launch --coord NODE1:PORT --
                       slurm_task` (each task its own launch; the one on node 1 starts the
                       coordinator, the others wait for it); restarted by a batch job
                       (`sbatch --wait -N 2 -n 4 --wrap 'stasis restart ...'`).
  --mode launch-srun-moved
                       as launch-srun on a three-node cluster: the job on nodes 1 and 2, the
                       restart in an allocation of nodes 2 and 3 (`salloc -w`): node 2's tasks
                       stay on it, node 1's come back on node 3.
  --mode script-srun   as launch-srun, the launched program a script that runs srun and then
                       prints srun's exit status (`stasis launch -- bash -c 'srun ...; echo ...'`):
                       srun, the script's child, stays outside while its tasks join; the restart
                       (`salloc -N 2 -n 4 stasis restart`) brings the script back and a new job
                       step of its tasks in srun's place, whose exit status the script prints.
  --mode srun-launch-interval
                       as srun-launch, with no --coord anywhere (the coordinator is the
                       allocation's first node's, port 7781) and `launch --interval 2`: the
                       checkpoint restarted is the newest interval checkpoint, and `stasis status`
                       on node 2 finds the coordinator by itself; a wrong secret from node 2 is
                       refused.
Checks: the tasks (and not srun) join, two from each node, and `stasis status` answers on node 2
too; the checkpoint holds the four tasks at both nodes' addresses; after the restart, while it
runs, the four tasks are members again, two on each node, in the new job; each task's output
goes on from the checkpoint and equals an uninterrupted `srun -N 2 -n 4 slurm_task` run's; the
restart's exit status is srun's (the highest task status). In the modes whose output comes through
srun (launch-srun*, script-srun), each task also prints, at its end, its host name and the job
step its environment names (slurm_task ... env); after the restart these must be what a task of
a new step in the new allocation sees (an `srun` run in it just before the restart, the restart
being the next step): its job id and node list, the next step id, and the node the task runs on.
Exits 77 (skipped) without slurm-wlm and munge, without network namespaces, or when not root.
usage: nodes_test.py --stasis STASIS --task SLURM_TASK [--conf SLURM_CONF_IN] --mode MODE
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from slurm.slurm_cluster import DEFAULT_TEMPLATE  # noqa: E402
from slurm.slurm_nodes import ADDRESSES, SlurmNodes, skip_reason  # noqa: E402
from slurm.slurm_test import Failure, by_task, check_tasks, files_shared_with_outside  # noqa: E402

STEPS, DELAY_MS = 80, 100
NODES, TASKS = 2, 4
PORT = 7790


def split_env(tasks):
    """Each task's lines without its "task R env NAME=VALUE ..." line, and that line's values."""
    lines, env = {}, {}
    for task, text in tasks.items():
        lines[task] = [line for line in text if not line.startswith(f"task {task} env ")]
        for line in text:
            if line.startswith(f"task {task} env "):
                env[task] = dict(word.split("=", 1) for word in line.split()[3:])
    return lines, env


def check_step_environment(restarted, new_step):
    """The restarted tasks' SLURM_* variables: the new allocation's job and nodes, the step after
    `new_step`'s (an srun run in the allocation just before the restart), the node each runs on."""
    if sorted(restarted) != list(range(TASKS)) or sorted(new_step) != list(range(TASKS)):
        raise Failure(f"not every task printed its environment: restarted {restarted}, new step {new_step}")
    step = new_step[0]
    for task, env in sorted(restarted.items()):
        expected = {"SLURM_JOB_ID": step["SLURM_JOB_ID"], "SLURM_JOB_NODELIST": step["SLURM_JOB_NODELIST"],
                    "SLURM_STEP_ID": str(int(step["SLURM_STEP_ID"]) + 1), "SLURMD_NODENAME": env["host"]}
        wrong = {k: env.get(k) for k, v in expected.items() if env.get(k) != v}
        if wrong:
            raise Failure(f"task {task} after the restart has {wrong}, an uninterrupted task there {expected}")
    print("restarted tasks' Slurm variables: job", step["SLURM_JOB_ID"], "nodes", step["SLURM_JOB_NODELIST"],
          "step", int(step["SLURM_STEP_ID"]) + 1, "nodes", sorted(e["SLURMD_NODENAME"] for e in restarted.values()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--conf", default=DEFAULT_TEMPLATE)
    parser.add_argument("--mode", choices=("launch-srun", "launch-srun-moved", "script-srun", "srun-launch",
                                           "srun-launch-interval"), required=True)
    args = parser.parse_args()
    if skip_reason(args.conf):
        print(f"SKIP: {skip_reason(args.conf)}")
        return 77

    started = time.time()
    moved = args.mode == "launch-srun-moved"
    nodes = SlurmNodes(args.conf, f"stasis-slurm-nodes-{args.mode}-", count=3 if moved else 2)
    # Where the job runs, where it is restarted (the same two nodes unless moved).
    first_nodes = ["-w", "stasis-slurm[1-2]"] if moved else []
    restart_nodes = ["-w", "stasis-slurm[2-3]"] if moved else []
    tmp, cluster = nodes.tmp, nodes.cluster
    ckpt_dir = os.path.join(tmp, "ckpt")
    interval = args.mode == "srun-launch-interval"
    coord = f"{ADDRESSES[0]}:{7781 if interval else PORT}"
    # Without --coord, as inside the allocation: SLURM_JOB_NODELIST gives the coordinator's node.
    coord_options = [] if interval else ["--coord", coord]
    env = cluster.test_env(tmp)  # the secret files: on the shared file system
    log = os.path.join(ckpt_dir, "coordinator.log")
    out1 = os.path.join(tmp, "run1.out")
    job = None

    def run(*argv, node=0, timeout=120):
        return subprocess.run(nodes.on(node, *argv), capture_output=True, text=True, env=env, timeout=timeout)

    def members(node=0):
        r = subprocess.run(nodes.on(node, args.stasis, "status", *coord_options, "--json"), capture_output=True,
                           text=True, env=dict(env, SLURM_JOB_NODELIST="stasis-slurm[1-2]"), timeout=60)
        try:
            return sorted((p["program"], p["host"]) for p in json.loads(r.stdout)["processes"])
        except (ValueError, KeyError):
            return []
    script = args.mode == "script-srun"
    script_member = [("bash", nodes.names[0])] if script else []  # the script, on the login node
    two_per_node = sorted([("slurm_task", name) for name in nodes.names[:NODES] for _ in range(TASKS // NODES)]
                          + script_member)
    two_per_new_node = sorted([("slurm_task", name) for name in nodes.names[-NODES:] for _ in range(TASKS // NODES)]
                              + script_member)
    through_srun = args.mode.startswith("launch-srun") or script

    try:
        nodes.up()
        print(f"cluster up in {time.time() - started:.1f} s")
        program = [args.task, str(STEPS), str(DELAY_MS), *(["env"] if through_srun else [])]
        srun_line = ["srun", *first_nodes, "-N", str(NODES), "-n", str(TASKS), *program]
        # The script: srun, then a line of its own with srun's exit status, which its wait() gets.
        script_argv = ["bash", "-c", " ".join(srun_line) + '; echo "srun exited $?"']
        reference = run(*(script_argv if script else srun_line))
        ref_tasks, ref_env = split_env(by_task(reference.stdout))
        if (through_srun and sorted(ref_env) != list(range(TASKS))) or \
                any(e["host"] != e["SLURMD_NODENAME"] for e in ref_env.values()):
            raise Failure(f"the reference run's tasks printed the environment {ref_env}")
        if sorted(ref_tasks) != list(range(TASKS)) or any(len(v) != STEPS + 1 for v in ref_tasks.values()):
            raise Failure(f"the reference run printed {reference.stdout!r} {reference.stderr!r}")
        ref_own_lines = [line for line in reference.stdout.splitlines() if line.startswith("srun exited")]
        if script and ref_own_lines != [f"srun exited {TASKS - 1}"]:
            raise Failure(f"the reference script printed {ref_own_lines}, not srun's exit status {TASKS - 1}")
        print(f"reference: exit status {reference.returncode}", *ref_own_lines)

        if through_srun:
            argv = [args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir, "--",
                    *(script_argv if script else srun_line)]
            printed = lambda: by_task(open(out1).read())
        else:
            argv = ["srun", "-N", str(NODES), "-n", str(TASKS), f"--output={tmp}/task-%t.out", args.stasis, "launch",
                    *coord_options, "--ckpt-dir", ckpt_dir, *(["--interval", "2"] if interval else []), "--",
                    *program]
            printed = lambda: {t: open(f"{tmp}/task-{t}.out").read().splitlines()
                               for t in range(TASKS) if os.path.exists(f"{tmp}/task-{t}.out")}
        if script:  # its output through a pipe, as a terminal's: after the restart, the restart's
            argv = ["sh", "-c", '"$@" 2>&1 | cat', "sh", *argv]
        with open(out1, "w") as out:
            job = subprocess.Popen(nodes.on(0, *argv), stdout=out, stderr=subprocess.STDOUT, env=env,
                                   start_new_session=True)
        wait_for(lambda: len(printed()) == TASKS and all(len(v) >= 8 for v in printed().values())
                 or job.poll() is not None, "the tasks' first lines", 90)
        if job.poll() is not None:
            raise Failure(f"the job ended early: {open(out1).read()}")
        wait_for(lambda: members() == two_per_node, f"the {TASKS} tasks, {TASKS // NODES} on each node (and "
                 "nothing else) in `stasis status`", 30)
        if members(node=1) != two_per_node:
            raise Failure(f"`stasis status` on node 2 shows {members(node=1)}")
        print("members, as node 2's `stasis status` shows them:", members(node=1))

        if interval:
            wrong = subprocess.run(nodes.on(1, args.stasis, "status"), capture_output=True, text=True, timeout=60,
                                   env=dict(env, SLURM_JOB_NODELIST="stasis-slurm[1-2]", STASIS_SECRET="00" * 32))
            if wrong.returncode == 0:
                raise Failure(f"`stasis status` with a wrong secret on node 2 was answered: {wrong.stdout}")
            print("wrong secret from node 2 refused:", wrong.stderr.strip())
            complete = lambda: sorted(d for d in os.listdir(ckpt_dir) if d.isdigit() and
                                      os.path.exists(os.path.join(ckpt_dir, d, "MANIFEST.json")))
            wait_for(lambda: os.path.isdir(ckpt_dir) and complete(), "an interval checkpoint", 30)
            generation = os.path.join(ckpt_dir, complete()[-1])
        else:
            ckpt = run(args.stasis, "checkpoint", "--coord", coord)
            if ckpt.returncode != 0:
                raise Failure(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}")
            generation = ckpt.stdout.strip().splitlines()[-1]
        saved = sorted((p["program"], p["address"]) for p in
                       json.load(open(os.path.join(generation, "MANIFEST.json")))["processes"])
        expected = sorted([("slurm_task", a) for a in ADDRESSES[:NODES] for _ in range(TASKS // NODES)]
                          + ([("bash", ADDRESSES[0])] if script else []))
        if saved != expected:
            raise Failure(f"the checkpoint holds {saved}, not {expected}")
        print("checkpoint:", saved)

        jobs = [cluster.cancel_the_job(job)]
        job = None
        wait_for(lambda: not members(), "the cancelled tasks' leaving the coordinator", 30)
        before = printed()
        if interval:  # the newest interval checkpoint is the one restarted
            generation = os.path.join(ckpt_dir, complete()[-1])
        shared = files_shared_with_outside(args.stasis, generation, env) if args.mode.startswith("srun") else set()

        # A new allocation of two nodes; no --hosts: the nodes come from the allocation.
        if through_srun:
            # Step 0: what a new step's tasks see in this allocation (its status is the highest
            # rank); the restart is step 1.
            step_env = os.path.join(tmp, "step-env.out")
            restart_argv = ["salloc", *restart_nodes, "-N", str(NODES), "-n", str(TASKS), "sh", "-c",
                            f'srun -N {NODES} -n {TASKS} {args.task} 1 0 env > {step_env}; exec "$@"', "sh",
                            args.stasis, "restart", "--coord", coord, ckpt_dir]
        else:
            restart_argv = ["sbatch", "--wait", "-N", str(NODES), "-n", str(TASKS), f"--output={tmp}/restart-job.out",
                            "--wrap", f"exec {args.stasis} restart {' '.join(coord_options)} {ckpt_dir}"]
        if script:  # outside an allocation there is no step to bring the tasks back: refused, saying so
            outside = run(args.stasis, "restart", "--coord", coord, ckpt_dir, timeout=60)
            if outside.returncode == 0 or "inside a Slurm allocation" not in outside.stderr:
                raise Failure(f"a restart outside an allocation was not refused: {outside.returncode} {outside.stderr}")
            print("outside an allocation:", outside.stderr.strip().splitlines()[-1])
        restart_at = time.time()
        restart = subprocess.Popen(nodes.on(0, *restart_argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, env=env)
        wait_for(lambda: members() == two_per_new_node or restart.poll() is not None,
                 "the restarted tasks, two on each node of the new allocation", 90)
        print(f"restarted tasks in the new allocation (job {cluster.jobs()}), {time.time() - restart_at:.1f} s "
              f"after the restart began:", members())
        if cluster.jobs() == jobs:
            raise Failure(f"the restart runs in the old job {jobs}")
        if script:  # the new step's srun is the script's child as the first was: checkpointed again
            again = run(args.stasis, "checkpoint", "--coord", coord)
            if again.returncode != 0:
                raise Failure(f"a checkpoint of the restarted script and tasks failed: {again.stdout}{again.stderr}")
            print("checkpointed again after the restart:", again.stdout.strip().splitlines()[-1])
        out, err = restart.communicate(timeout=180)
        if args.mode.startswith("srun"):
            err = open(os.path.join(tmp, "restart-job.out")).read()  # the batch job's stderr
        if f"{TASKS} tasks on" not in err or "through srun" not in err:
            raise Failure(f"the restart did not start the {TASKS} tasks through srun: {err[-2000:]}")
        print("restart:", next(line for line in err.splitlines() if "through srun" in line))
        after = by_task(out) if through_srun else printed()
        if through_srun:
            after, after_env = split_env(after)
            _, new_step_env = split_env(by_task(open(step_env).read()))
            check_step_environment(after_env, new_step_env)
            before, _ = split_env(before)
        if script:  # the script went on after the new step ended, and saw its exit status
            own_lines = [line for line in out.splitlines() if line.startswith("srun exited")]
            if own_lines != ref_own_lines:
                raise Failure(f"the restarted script printed {own_lines}, not {ref_own_lines}: {out[-2000:]}{err[-2000:]}")
            print("restarted script:", *own_lines)
        if restart.returncode != reference.returncode:
            raise Failure(f"restart exited {restart.returncode}, srun {reference.returncode}: {out[-2000:]}{err[-2000:]}")
        check_tasks(ref_tasks, before, after, through_srun, tmp, shared)
        print(f"PASS in {time.time() - started:.1f} s")
        return 0
    except (Failure, RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: {e}")
        cluster.print_logs(log, out1, os.path.join(tmp, "restart-job.out"))
        return 1
    finally:
        if job is not None:
            os.killpg(job.pid, 9)
            job.wait()
        subprocess.run(nodes.on(0, args.stasis, "kill", "--coord", coord), env=env, capture_output=True, timeout=60)
        nodes.down()


if __name__ == "__main__":
    sys.exit(main())
