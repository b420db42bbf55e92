#!/usr/bin/python3
"""The InfiniBand plugin's cost on verbs programs over softib that are never checkpointed.

Runs Debian's unmodified ibv_rc_pingpong, server and client on this host
(tests/softib/pingpong_pair.sh), as two workloads:
  latency     -s 64 (small messages): microseconds per round trip
  bandwidth   -s 1048576 (1 MiB messages, one in flight each way): MB/s per direction
each --runs times in three ways, alternating so that load from elsewhere hits all alike:
  plain       over softib, without Stasis
  runtime     under `stasis launch` without --ib (the runtime only; never checkpointed, so the
              open device is not refused)
  plugin      under `stasis launch --ib=soft` (the runtime and the verbs plugin)
and prints the median and the best of each and their overhead against plain. The figures are the tool's own
(its timed loop), so start-up and joining the coordinator are not in them.

usage: bench/ib_overhead.py [--build build] [--runs 5] [--latency-iters 200000] [--bandwidth-iters 5000]
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAIR = ROOT / "tests/softib/pingpong_pair.sh"
ITERS_LINE = re.compile(r"^(\d+) iters in ([\d.]+) seconds", re.M)


def one_run(prefix, libdir, work, size, iters, env):
    """Seconds of the client's timed loop."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    argv = prefix + [str(PAIR), "ibv_rc_pingpong", str(libdir), str(work), str(iters), "-s", str(size)]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if "exit 0" not in out.stdout or out.stdout.count("exit 0") != 2:
        raise RuntimeError(f"{' '.join(argv)}: {out.stdout}{out.stderr}")
    m = ITERS_LINE.search((work / "client1.out").read_text())
    if not m or int(m.group(1)) != iters:
        raise RuntimeError(f"no timing in {work / 'client1.out'}")
    return float(m.group(2))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=str(ROOT / "build"), help="build directory (bin/stasis, lib/softib)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--latency-iters", type=int, default=200000)
    ap.add_argument("--bandwidth-iters", type=int, default=5000)
    args = ap.parse_args()
    build = Path(args.build).resolve()
    stasis, libdir = build / "bin/stasis", build / "lib/softib"
    if not os.access(stasis, os.X_OK) or not (libdir / "libibverbs.so.1").exists():
        sys.exit(f"{stasis} or {libdir}/libibverbs.so.1 missing: build first")
    if not shutil.which("ibv_rc_pingpong"):
        sys.exit("ibv_rc_pingpong not found: apt-get install ibverbs-utils")
    workloads = [("latency", 64, args.latency_iters), ("bandwidth", 1048576, args.bandwidth_iters)]
    ways = {"plain": [], "runtime": [str(stasis), "launch", "--"], "plugin": [str(stasis), "launch", "--ib=soft", "--"]}
    with tempfile.TemporaryDirectory(prefix="stasis-ib-bench-") as tmp:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("STASIS_", "SOFTIB_"))}
        # No coordinator answers there: each launch starts its own, which exits when idle.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            env["STASIS_COORD"] = f"127.0.0.1:{s.getsockname()[1]}"
        env.update(STASIS_RUNTIME_DIR=str(tmp / "runtime"), STASIS_CKPT_DIR=str(tmp / "ckpt"))
        results = {}
        for name, size, iters in workloads:
            seconds = {way: [] for way in ways}
            for i in range(args.runs):
                for way, prefix in ways.items():
                    seconds[way].append(one_run(prefix, libdir, tmp / "work", size, iters, env))
                print(f"[{name}] run {i + 1}: " + ", ".join(f"{w} {s[-1]:.3f} s" for w, s in seconds.items()),
                      flush=True)
            results[name] = seconds
    print()
    print(f"ibv_rc_pingpong over softib, {args.runs} alternating runs; load average {os.getloadavg()[0]:.2f}")
    print("overhead: the loop's time against plain (positive: slower)")
    for name, size, iters in workloads:
        for stat, pick in (("median", statistics.median), ("best", min)):
            t = {w: pick(results[name][w]) for w in ways}
            if name == "latency":
                figure, unit = {w: t[w] / iters * 1e6 for w in ways}, "us/round trip"
            else:
                figure, unit = {w: iters * size / t[w] / 1e6 for w in ways}, "MB/s per direction"
            cells = ", ".join(f"{w} {figure[w]:.1f}" + ("" if w == "plain" else f" ({100 * (t[w] / t['plain'] - 1):+.1f}%)")
                              for w in ways)
            print(f"{name:>9} -s {size:<7} -n {iters:<6} {stat:>6}: {cells} {unit}")


if __name__ == "__main__":
    main()
