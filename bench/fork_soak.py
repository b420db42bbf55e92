#!/usr/bin/python3
"""Back-to-back checkpoints of a fork-heavy program: lost computations, lost children, failures.

Runs tests/soak_driver.py on src/plugins/pids/tests/fork_soak (4 threads starting children by
fork, fork+exec, vfork+exec, posix_spawn, system and popen, each waited for and its status
checked): --checkpoints live checkpoints back to back, half before a restart and half after it,
then a restart to the end, compared with an uninterrupted run. Prints the driver's figures and
one summary line. The target is at least 99% successful checkpoints, no lost computation and no
killed or unwaitable child.

usage: bench/fork_soak.py [--stasis build/bin/stasis] [--checkpoints 1000] [--steps 500]
The program goes on starting children after its --steps printed steps until the driver's last
restart (tests/soak_driver.py's finish file), however long the checkpoints take.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--target", default=str(ROOT / "build/tests/targets/fork_soak"))
    parser.add_argument("--checkpoints", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=500, help="printed steps (the program outlasts the checkpoints anyway)")
    parser.add_argument("--threads", type=int, default=4)
    args = parser.parse_args()
    command = [sys.executable, str(ROOT / "tests/soak_driver.py"), "--stasis", os.path.abspath(args.stasis),
               "--name", "bench.fork_soak", "--checkpoints", str(args.checkpoints), "--min-success", "0.99",
               "--timeout", "900", "--", os.path.abspath(args.target), str(args.steps), str(args.threads), "3"]
    start = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True)
    seconds = time.monotonic() - start
    figures = None
    for line in run.stdout.splitlines():
        if line.startswith("SOAK "):
            figures = json.loads(line[5:])
    lost_children = len([l for l in run.stdout.splitlines() if re.search(r"LOST thread", l)])
    children = args.steps * args.threads * 3
    if figures is None:
        print(run.stdout[-4000:])
        print(f"fork soak FAILED before its figures (exit {run.returncode}, {seconds:.0f} s)")
        return 1
    print(json.dumps(figures, indent=1))
    lost_computation = "computation was lost" in run.stdout
    print(f"fork soak: {figures['succeeded']} of {figures['checkpoints']} checkpoints succeeded "
          f"({figures['success_ratio']:.1%}; {figures['checkpoints_per_second']} per second), "
          f"at least {children} children started and checked, {lost_children} lost, "
          f"lost computation: {'yes' if lost_computation else 'no'}, "
          f"output after restart equal to an uninterrupted run: {'yes' if run.returncode == 0 else 'NO'} "
          f"({seconds:.0f} s in all)")
    if run.returncode != 0:
        print(run.stdout[-4000:])
    return run.returncode


if __name__ == "__main__":
    sys.exit(main())
