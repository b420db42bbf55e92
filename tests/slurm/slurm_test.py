#!/usr/bin/env python3
"""A two-task Slurm job step checkpointed, cancelled, and restarted in a new allocation.

Runs a private one-node Slurm cluster (tests/slurm/slurm_cluster.py). Modes:
  --mode launch-srun   `stasis launch --coord C -- srun -n 2 slurm_task ...` (srun makes its own
                       allocation); the tasks' output comes through srun's pipes. After
                       `scancel`, `salloc -n 2 stasis restart` brings both tasks back, their
                       output on restart's stdout.
  --mode srun-launch   `srun -n 2 --output=out-%t.txt stasis launch --coord C -- slurm_task ...`
                       (each task its own launch, one coordinator, started by the first); output
                       in one file per task; restarted by a batch job (`sbatch --wait --wrap`).
  --mode mpich-pmi2-refused --mpi-program P
                       `stasis launch -- srun --mpi=pmi2 -n 2 P` (MPICH over TCP): the checkpoint
                       is refused, naming the PMI connection to slurmstepd, and the job runs on to
                       the reference's output.
Checks: the tasks (and not srun) join the coordinator; the checkpoint holds exactly the two
tasks; after the restart, each task's output goes on from the checkpoint and equals an
uninterrupted `srun -n 2 slurm_task` run's, line for line; restart's exit status is srun's (the
highest task status). An output file slurmstepd shares (it makes the first task's its own stderr
and writes the step's cancellation there) is never cut: it keeps slurmstepd's lines and holds the
lines the killed run wrote after the checkpoint twice (src/plugins/files/README.md, Output files).
Exits 77 (skipped) without slurm-wlm and munge, or when not root.
usage: slurm_test.py --stasis STASIS --task SLURM_TASK [--conf SLURM_CONF_IN] --mode MODE [--mpi-program P]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import wait_for  # noqa: E402
from slurm.slurm_cluster import DEFAULT_TEMPLATE, Cluster, free_port, skip_reason  # noqa: E402

STEPS, DELAY_MS = 60, 100
TASKS = 2
LINE = re.compile(r"^task (\d+) ")


class Failure(Exception):
    pass


def by_task(text):
    tasks = {}
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            tasks.setdefault(int(m.group(1)), []).append(line)
    return tasks


def check_continues(reference, before, after, where):
    """`after` must be the end of `reference`, and `before` (what the killed run printed) must
    hold everything up to that end: the restart went on from the checkpoint, not from scratch."""
    if not after:
        raise Failure(f"{where}: nothing after the restart")
    k = len(reference) - len(after)
    if k < 5 or reference[k:] != after:
        raise Failure(f"{where}: the restarted output is not the reference's last {len(after)} lines\n"
                      f"first restarted line: {after[0]!r}; reference has {len(reference)} lines")
    if before[:k] != reference[:k]:
        raise Failure(f"{where}: the killed run's first {k} lines differ from the reference")
    print(f"{where}: {k} lines before the checkpoint, {len(after)} after the restart: equal to the reference")


def files_shared_with_outside(stasis, generation, env):
    """The paths the checkpoint recorded as output files shared with a process outside the
    computation (`stasis inspect --json`: external descriptors that are regular files)."""
    paths = set()
    for image in sorted(os.listdir(generation)):
        if image.endswith(".stasis"):
            shown = subprocess.run([stasis, "inspect", "--json", os.path.join(generation, image)],
                                   capture_output=True, text=True, env=env, timeout=60)
            for fd in json.loads(shown.stdout)["fds"]:
                if (fd.get("state") or {}).get("regular_file_shared_with_outside"):
                    paths.add(fd["path"])
    return paths


def check_output_file(reference, before, after, shared_with_outside, where):
    """A task's output file after the restart: the reference, line for line, when only the
    computation writes it. When it is shared with a process outside the computation, nothing is
    cut: every line the outside wrote is still there, every line the killed run wrote too, and the
    program's lines are the reference with the run after the checkpoint there twice
    (reference[:j] + reference[i:], i <= j)."""
    if not shared_with_outside:
        if after != reference:
            raise Failure(f"{where}'s output file differs from the reference:\n" + "\n".join(after[-5:]))
        print(f"{where}: output file equal to the reference ({len(reference)} lines)")
        return
    outside_before = [line for line in before if not LINE.match(line)]
    outside_after = [line for line in after if not LINE.match(line)]
    if outside_after[:len(outside_before)] != outside_before:
        raise Failure(f"{where}: the restart lost lines the outside wrote to the output file: "
                      f"{outside_before} before, {outside_after} after")
    ours_before = [line for line in before if LINE.match(line)]
    ours = [line for line in after if LINE.match(line)]
    if ours[:len(ours_before)] != ours_before:
        raise Failure(f"{where}: the restart lost lines the killed run wrote to the output file")
    p = 0
    while p < min(len(ours), len(reference)) and ours[p] == reference[p]:
        p += 1
    repeated = next((i for i in range(p, -1, -1) if reference[i:] == ours[p:]), None)
    if repeated is None:
        raise Failure(f"{where}'s output file is not the reference with one repeated run (common prefix "
                      f"{p} lines):\n" + "\n".join(after[-5:]))
    twice = f"lines {repeated + 1}..{p} twice" if repeated < p else "no line twice"
    print(f"{where}: output file shared with the outside: its {len(outside_after)} line(s) kept, the "
          f"program's lines the reference ({twice})")


def check_tasks(reference, before, after, through_pipes, tmp, shared_with_outside):
    """Every task's output after a restart: through srun's pipes (`after` is what the restart
    printed), or in its --output file tmp/task-N.out."""
    for t in sorted(reference):
        if through_pipes:
            check_continues(reference[t], before.get(t, []), after.get(t, []), f"task {t}")
        else:
            check_output_file(reference[t], before.get(t, []), after.get(t, []),
                              f"{tmp}/task-{t}.out" in shared_with_outside, f"task {t}")


def check_pmi2_refused(args, env, cluster, coord, ckpt_dir, run):
    env.update(UCX_TLS="tcp,self", MPIR_CVAR_NOLOCAL="1", OMP_NUM_THREADS="1")  # MPICH over TCP
    program = ["srun", "--mpi=pmi2", "-n", str(TASKS), args.mpi_program, "40", "100", "12", "0"]
    reference = run(*program)
    if "done" not in reference.stdout:
        raise Failure(f"the MPICH reference run failed: {reference.stdout[-1000:]}{reference.stderr[-1000:]}")
    job = subprocess.Popen([args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir, "--", *program],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        wait_for(lambda: run(args.stasis, "status", "--coord", coord, timeout=60).stdout.count("mpi_shm_mpich") == TASKS,
                 "both ranks in `stasis status`", 60)
        ckpt = run(args.stasis, "checkpoint", "--coord", coord)
        expected = "PMI connection to slurmstepd (srun --mpi=pmi2)"
        if ckpt.returncode == 0 or expected not in ckpt.stdout + ckpt.stderr:
            raise Failure(f"the checkpoint was not refused with {expected!r}: {ckpt.returncode} {ckpt.stdout}{ckpt.stderr}")
        print("refused:", (ckpt.stdout + ckpt.stderr).strip())
        out, err = job.communicate(timeout=180)
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    if job.returncode != reference.returncode or out != reference.stdout:
        raise Failure(f"after the refusal the job did not run on as without Stasis: exit {job.returncode} "
                      f"(reference {reference.returncode})\n{out[-1000:]}{err[-1000:]}")
    print(f"the job ran on: {len(out.splitlines())} lines equal to the reference")
    print("PASS")
    return 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--task", required=True)
    parser.add_argument("--conf", default=DEFAULT_TEMPLATE)
    parser.add_argument("--mode", choices=("launch-srun", "srun-launch", "mpich-pmi2-refused"), required=True)
    parser.add_argument("--mpi-program")
    args = parser.parse_args()
    if skip_reason(args.conf):
        print(f"SKIP: {skip_reason(args.conf)}")
        return 77

    tmp = tempfile.mkdtemp(prefix=f"stasis-slurm-{args.mode}-")
    cluster = Cluster(tmp, args.conf)
    ckpt_dir = os.path.join(tmp, "ckpt")
    coord = f"127.0.0.1:{free_port()}"
    env = cluster.test_env(tmp)
    log = os.path.join(ckpt_dir, "coordinator.log")
    job = None
    try:
        cluster.start()

        def run(*argv, timeout=120):
            return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)

        if args.mode == "mpich-pmi2-refused":
            return check_pmi2_refused(args, env, cluster, coord, ckpt_dir, run)
        reference = run("srun", "-n", str(TASKS), args.task, str(STEPS), str(DELAY_MS))
        ref_tasks = by_task(reference.stdout)
        if sorted(ref_tasks) != list(range(TASKS)) or any(len(v) != STEPS + 1 for v in ref_tasks.values()):
            raise Failure(f"the reference run printed {reference.stdout!r} {reference.stderr!r}")
        print(f"reference: srun exit status {reference.returncode}")

        out1 = os.path.join(tmp, "run1.out")
        if args.mode == "launch-srun":
            argv = [args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt_dir, "--",
                    "srun", "-n", str(TASKS), args.task, str(STEPS), str(DELAY_MS)]
            printed = lambda: by_task(open(out1).read())
        else:  # the first task's launch starts the coordinator, the other's joins it
            argv = ["srun", "-n", str(TASKS), f"--output={tmp}/task-%t.out", args.stasis, "launch", "--coord", coord,
                    "--ckpt-dir", ckpt_dir, "--", args.task, str(STEPS), str(DELAY_MS)]
            printed = lambda: {t: open(f"{tmp}/task-{t}.out").read().splitlines()
                               for t in range(TASKS) if os.path.exists(f"{tmp}/task-{t}.out")}
        with open(out1, "w") as out:
            job = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        wait_for(lambda: len(printed()) == TASKS and all(len(v) >= 8 for v in printed().values())
                 or job.poll() is not None, "both tasks' first lines", 90)
        if job.poll() is not None:
            raise Failure(f"the job ended early: {open(out1).read()}")

        def members():
            r = run(args.stasis, "status", "--coord", coord, "--json", timeout=60)
            try:
                return [p["program"] for p in json.loads(r.stdout)["processes"]]
            except (ValueError, KeyError):
                return []
        wait_for(lambda: sorted(members()) == ["slurm_task"] * TASKS, "the two tasks (and nothing else) in "
                 "`stasis status`", 30)

        ckpt = run(args.stasis, "checkpoint", "--coord", coord)
        if ckpt.returncode != 0:
            raise Failure(f"checkpoint failed: {ckpt.stdout}{ckpt.stderr}")
        generation = ckpt.stdout.strip().splitlines()[-1]
        programs = sorted(p["program"] for p in json.load(open(os.path.join(generation, "MANIFEST.json")))["processes"])
        if programs != ["slurm_task"] * TASKS:
            raise Failure(f"the checkpoint holds {programs}, not the {TASKS} tasks")

        jobs = cluster.jobs()
        if len(jobs) != 1:
            raise Failure(f"expected one job in the queue, found {jobs}")
        subprocess.run(["scancel", jobs[0]], env=env, check=True, timeout=60)
        job.wait(timeout=120)
        job = None
        cluster.wait_no_jobs()
        before = printed()
        shared = files_shared_with_outside(args.stasis, generation, env) if args.mode == "srun-launch" else set()

        # A new allocation; `stasis restart` stands in for srun as the tasks' parent.
        if args.mode == "launch-srun":
            restart = run("salloc", "-n", str(TASKS), args.stasis, "restart", "--coord", coord, ckpt_dir, timeout=180)
        else:
            restart = run("sbatch", "--wait", "-n", str(TASKS), f"--output={tmp}/restart-job.out", "--wrap",
                          f"exec {args.stasis} restart --coord {coord} {ckpt_dir}", timeout=180)
        after = by_task(restart.stdout) if args.mode == "launch-srun" else printed()
        if restart.returncode != reference.returncode:
            raise Failure(f"restart exited {restart.returncode}, srun {reference.returncode}: "
                          f"{restart.stdout[-2000:]}{restart.stderr[-2000:]}")
        check_tasks(ref_tasks, before, after, args.mode == "launch-srun", tmp, shared)
        print("PASS")
        return 0
    except (Failure, RuntimeError, subprocess.SubprocessError) as e:
        print(f"FAIL: {e}")
        cluster.print_logs(log, os.path.join(tmp, "run1.out"))
        return 1
    finally:
        if job is not None:
            os.killpg(job.pid, 9)
            job.wait()
        subprocess.run([args.stasis, "kill", "--coord", coord], env=env, capture_output=True, timeout=60)
        cluster.stop()
        if os.environ.get("STASIS_TEST_KEEP"):
            print("kept", tmp)
        else:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
