#!/usr/bin/python3
"""Runtime overhead of Stasis on a fork/exec-heavy workload that checkpoints nothing.

A bash loop starts N short processes (`/bin/true`, each a fork + exec, each joining the
computation under Stasis). Median of --runs runs, plain, under `stasis launch` and under
`stasis launch --relay` (each process joins this host's relay over a Unix socket), and the ratios.

usage: bench/fork_exec_overhead.py [--stasis build/bin/stasis] [--processes 2000] [--runs 5]
"""
import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(command, env, cwd):
    start = time.monotonic()
    subprocess.run(command, env=env, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--processes", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    args.stasis = os.path.abspath(args.stasis)
    script = f"for i in $(seq {args.processes}); do /bin/true; done"
    plain, stasis, relayed = [], [], []
    with tempfile.TemporaryDirectory(prefix="stasis-bench-") as tmp:
        env = dict(os.environ, STASIS_CKPT_DIR=os.path.join(tmp, "ckpt"), STASIS_RUNTIME_DIR=tmp)
        for _ in range(args.runs):  # interleaved, so machine noise hits both alike
            plain.append(timed(["bash", "-c", script], env, tmp))
            stasis.append(timed([args.stasis, "launch", "--", "bash", "-c", script], env, tmp))
            relayed.append(timed([args.stasis, "launch", "--relay", "--", "bash", "-c", script], env, tmp))
    p, s, r = statistics.median(plain), statistics.median(stasis), statistics.median(relayed)
    print(f"{args.processes} processes, median of {args.runs} runs")
    print(f"  plain        {p:7.3f} s  ({p / args.processes * 1e6:6.0f} us per process)")
    print(f"  under stasis {s:7.3f} s  ({s / args.processes * 1e6:6.0f} us per process)")
    print(f"  ratio        {s / p:7.2f}x  (+{(s - p) / args.processes * 1e6:.0f} us per process)")
    print(f"  with --relay {r:7.3f} s  ({r / args.processes * 1e6:6.0f} us per process)")
    print(f"  ratio        {r / p:7.2f}x  (+{(r - p) / args.processes * 1e6:.0f} us per process)")


if __name__ == "__main__":
    main()
