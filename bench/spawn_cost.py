#!/usr/bin/python3
"""What a short-lived process pays for the runtime, per process, variants alternating every process.

Compiles bench/spawn_cost.c and runs it under `stasis launch` (a real computation, coordinator and
all): it starts each command --rounds times per variant, the variants taking turns process by
process: plain (no runtime), this build's runtime and, with --baseline, another installation's
(e.g. a build of main), preloaded with the computation's environment, as a shell's commands are.
Prints, per command, the medians (and quartiles) of the wall time (fork until reaped) and of the
CPU time of the process tree (wait4's rusage), and each runtime's cost over plain.

Commands: `/bin/true` (one exec'd program: the runtime's load, constructors, checkpoint thread)
and `sh -c '/bin/true; /bin/true'` (a shell that forks a child for the first command and execs
the second: three programs and one fork child under the runtime).

usage: bench/spawn_cost.py [--stasis build/bin/stasis] [--baseline OTHER/bin/stasis] [--rounds 1000]
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from fork_exec_overhead import runtime_library  # noqa: E402

COMMANDS = {"true": ["/bin/true"], "sh": ["/bin/sh", "-c", "/bin/true; /bin/true"]}


def quartiles(values):
    q = statistics.quantiles(values, n=4)
    return q[0], statistics.median(values), q[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--baseline", help="another installation's stasis, measured beside --stasis")
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--commands", default="true,sh")
    args = parser.parse_args()
    names = ["plain", "stasis"] + (["baseline"] if args.baseline else [])
    libraries = [runtime_library(args.stasis)] + ([runtime_library(args.baseline)] if args.baseline else [])
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}")
    with tempfile.TemporaryDirectory(prefix="stasis-bench-") as tmp:
        os.chmod(tmp, 0o700)
        driver = os.path.join(tmp, "spawn_cost")
        subprocess.run(["cc", "-O2", "-o", driver, str(ROOT / "bench/spawn_cost.c")], check=True)
        env = dict(os.environ, STASIS_CKPT_DIR=os.path.join(tmp, "ckpt"), STASIS_RUNTIME_DIR=tmp)
        for command in args.commands.split(","):
            with socket.socket() as probe:  # a coordinator of its own, not one at the default port
                probe.bind(("127.0.0.1", 0))
                coord = f"127.0.0.1:{probe.getsockname()[1]}"
            out = subprocess.run([os.path.abspath(args.stasis), "launch", "--coord", coord, "--", driver, str(args.rounds),
                                  ",".join(libraries)] + COMMANDS[command],
                                 env=env, cwd=tmp, check=True, capture_output=True, text=True).stdout
            walls = {i: [] for i in range(len(names))}
            cpus = {i: [] for i in range(len(names))}
            for line in out.splitlines():
                variant, wall, cpu = (int(x) for x in line.split("\t"))
                walls[variant].append(wall / 1000)
                cpus[variant].append(cpu / 1000)
            print(f"{' '.join(COMMANDS[command])}: {args.rounds} processes a variant, alternating;"
                  " microseconds, median (p25-p75)")
            plain_wall, plain_cpu = statistics.median(walls[0]), statistics.median(cpus[0])
            for i, name in enumerate(names):
                w, c = quartiles(walls[i]), quartiles(cpus[i])
                print(f"  {name:9s} wall {w[1]:7.0f} ({w[0]:.0f}-{w[2]:.0f}) {w[1] - plain_wall:+6.0f}"
                      f"   CPU {c[1]:7.0f} ({c[0]:.0f}-{c[2]:.0f}) {c[1] - plain_cpu:+6.0f}")
    with open("/proc/loadavg") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
