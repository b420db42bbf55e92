#!/usr/bin/env python3
"""`--checkpoint-on-signal USR1` of `stasis launch` and `stasis restart`, without Slurm: what a batch
job's warning before its time limit does (the Slurm chain itself: requeue_test.py).

`stasis launch --checkpoint-on-signal USR1 -- slurm_task` writes to a file; SIGUSR1 to the launch
process at once (before the program has joined: the checkpoint is retried until it has), then
`stasis restart --checkpoint-on-signal USR1` twice, each sent SIGUSR1 after a few more lines, then
a last restart runs to the end. Checks: each signalled run exits with 138 (128 + SIGUSR1) and
says where it wrote the checkpoint; the coordinator has no process left then; a SIGTERM to the
launch process reaches the program (it ends by it, 143); the output file is exactly an
uninterrupted run's; the last restart exits with the program's status.
usage: signal_test.py --stasis STASIS --task SLURM_TASK
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from e2e_common import fail, wait_for  # noqa: E402
from slurm.slurm_cluster import free_port  # noqa: E402

STEPS, DELAY_MS = 120, 50


def has_child(pid):
    """Whether `pid` has forked: a command with --checkpoint-on-signal blocks the signal first
    (SigBlk does not show it while the command waits for it in sigwaitinfo)."""
    try:
        return open(f"/proc/{pid}/task/{pid}/children").read().strip() != ""
    except OSError:
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stasis", required=True)
    parser.add_argument("--task", required=True)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="stasis-signal-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STASIS_", "SLURM_"))}
    env["STASIS_RUNTIME_DIR"] = os.path.join(tmp, "rt")
    coord, ckpt = f"127.0.0.1:{free_port()}", os.path.join(tmp, "ckpt")
    out_path = os.path.join(tmp, "out.txt")
    reference = subprocess.run([args.task, str(STEPS), "0"], capture_output=True, text=True, env=env, timeout=60)
    lines = lambda: open(out_path).read().count("\n")
    try:
        # A SIGTERM reaches the program through the launch (which stays as its parent).
        with open(os.path.join(tmp, "term.txt"), "w") as out:
            term = subprocess.Popen([args.stasis, "launch", "--coord", f"127.0.0.1:{free_port()}", "--ckpt-dir", ckpt,
                                     "--checkpoint-on-signal", "USR1", "--", args.task, str(STEPS), str(DELAY_MS)],
                                    stdout=out, stderr=subprocess.PIPE, text=True, env=env)
        wait_for(lambda: open(os.path.join(tmp, "term.txt")).read().count("\n") >= 3, "the first lines", 30)
        term.send_signal(signal.SIGTERM)
        if term.wait(timeout=30) != 128 + signal.SIGTERM:
            fail(f"a SIGTERM to the launch did not end the program by it: exit {term.returncode}")
        print("SIGTERM passed on: exit 143")

        commands = [[args.stasis, "launch", "--coord", coord, "--ckpt-dir", ckpt, "--checkpoint-on-signal", "USR1",
                     "--", args.task, str(STEPS), str(DELAY_MS)]] + \
                   [[args.stasis, "restart", "--coord", coord, "--checkpoint-on-signal", "USR1", ckpt]] * 3
        for run, argv in enumerate(commands):
            last = run == len(commands) - 1
            with open(out_path, "a") as out:
                job = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE, text=True, env=env)
            if not last:
                if run > 0:
                    at = lines()
                    wait_for(lambda: lines() >= at + 10 or job.poll() is not None, "ten more lines", 30)
                # The first as soon as the command has forked: before the program has joined.
                wait_for(lambda: has_child(job.pid) or job.poll() is not None, "the command's fork", 30)
                job.send_signal(signal.SIGUSR1)
            _, err = job.communicate(timeout=90)
            if last:
                if job.returncode != reference.returncode:
                    fail(f"the last restart exited {job.returncode}, the program {reference.returncode}: {err}")
                break
            if job.returncode != 128 + signal.SIGUSR1 or "checkpoint on signal written" not in err:
                fail(f"run {run + 1}: exit {job.returncode} after SIGUSR1, not 138 with a checkpoint: {err}")
            status = subprocess.run([args.stasis, "status", "--coord", coord], capture_output=True, text=True, env=env)
            if "slurm_task" in status.stdout:
                fail(f"run {run + 1}: the program still runs after the checkpoint on signal: {status.stdout}")
            print(f"run {run + 1}: SIGUSR1 after {lines()} lines: exit 138, {err.strip().splitlines()[-1]}")
        if open(out_path).read() != reference.stdout:
            fail(f"the output is not an uninterrupted run's ({lines()} lines, {reference.stdout.count(chr(10))} expected)")
        print(f"output equal to an uninterrupted run ({lines()} lines); PASS")
        return 0
    finally:
        subprocess.run([args.stasis, "kill", "--coord", coord], capture_output=True, env=env, timeout=60)
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
