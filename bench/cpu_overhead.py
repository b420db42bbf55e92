#!/usr/bin/python3
"""The runtime's cost on CPU-bound programs that are never checkpointed.

Runs each workload --runs times directly and --runs times under `stasis launch` (a private
coordinator, no checkpoint), alternating the two so that load from elsewhere hits both alike,
and reports the median wall time and the median CPU time (user + system of the whole process
tree, from wait4) of each, and the overhead in percent. Workloads:
  c-loop   a C program (compiled here with cc -O2): integer and floating-point arithmetic over a
           64 KiB array, no system calls
  python   python3 computing sums of squares and a sort (allocates a lot: malloc, no syscalls)
  gzip     gzip -1 of 256 MiB of mixed bytes from the page cache to /dev/null (read/write calls)
Launch's own start-up (joining the coordinator) is included: it is part of what a user pays.

usage: bench/cpu_overhead.py [--stasis build/bin/stasis] [--runs 7] [--seconds 3]
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

C_LOOP = r"""
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  long rounds = atol(argv[1]);
  static double a[8192];
  unsigned long x = 88172645463325252ul, sum = 0;
  for (long r = 0; r < rounds; r++)
    for (int i = 0; i < 8192; i++) {
      x ^= x << 13; x ^= x >> 7; x ^= x << 17;
      a[i] = a[i] * 0.999 + (double)(x & 1023);
      sum += (unsigned long)a[i];
    }
  printf("%lu\n", sum);
  return 0;
}
"""


def timed(argv, env, stdin=None):
    """(wall seconds, CPU seconds of the process and its waited-for descendants)."""
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdin=stdin, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise RuntimeError(f"{argv} exited with {proc.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def calibrate(argv_of, target_seconds, env):
    """The work amount that takes about target_seconds."""
    amount = 1
    while True:
        wall, _ = timed(argv_of(amount), env)
        if wall > 0.3:
            return max(1, int(amount * target_seconds / wall))
        amount *= 4


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=3.0, help="about how long one run of a workload takes")
    ap.add_argument("--workloads", default="c-loop,python,gzip")
    args = ap.parse_args()
    stasis = os.path.abspath(args.stasis)
    if not os.access(stasis, os.X_OK):
        sys.exit(f"{stasis} not found: build first")
    with tempfile.TemporaryDirectory(prefix="stasis-cpu-") as tmp:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
        env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
        subprocess.run([stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir",
                        tmp / "ckpt", "--daemon"], env=env, check=True, timeout=30)
        env["STASIS_COORD"] = "127.0.0.1:" + (tmp / "port").read_text().strip()
        (tmp / "loop.c").write_text(C_LOOP)
        subprocess.run(["cc", "-O2", "-o", tmp / "loop", tmp / "loop.c"], check=True)
        data = tmp / "data"
        with open(data, "wb") as f:  # compressible but not trivial: text-like mix
            block = b"".join(os.urandom(64) + bytes(range(256)) * 2 + b"stasis checkpoint " * 20
                             for _ in range(64))
            for _ in range((256 << 20) // len(block)):
                f.write(block)
        workloads = {
            "c-loop": lambda n: [str(tmp / "loop"), str(n)],
            "python": lambda n: ["/usr/bin/python3", "-c",
                                 f"s=0\nfor r in range({n}):\n s+=sum(i*i for i in range(10000))\n"
                                 f" l=sorted(range(1000,0,-1))\nprint(s)"],
            "gzip": None,
        }
        rows = []
        try:
            for name in args.workloads.split(","):
                if name == "gzip":
                    def run(launched):
                        with open(data, "rb") as f:
                            prefix = [stasis, "launch", "--"] if launched else []
                            return timed(prefix + ["gzip", "-1", "-c"], env, stdin=f)
                else:
                    amount = calibrate(workloads[name], args.seconds, env)

                    def run(launched, argv=workloads[name](amount)):
                        return timed(([stasis, "launch", "--"] if launched else []) + argv, env)
                plain, under = [], []
                for i in range(args.runs):
                    plain.append(run(False))
                    under.append(run(True))
                    print(f"[{name}] run {i + 1}: plain {plain[-1][0]:.3f} s wall {plain[-1][1]:.3f} s cpu, "
                          f"stasis {under[-1][0]:.3f} s wall {under[-1][1]:.3f} s cpu", flush=True)
                med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
                rows.append((name, med(plain, 0), med(under, 0), med(plain, 1), med(under, 1)))
        finally:  # the coordinator was started for this benchmark only
            status = subprocess.run([stasis, "status", "--json"], env=env, capture_output=True, text=True)
            if status.returncode == 0:
                os.kill(json.loads(status.stdout)["coordinator"]["pid"], signal.SIGTERM)
    print()
    print(f"median of {args.runs} alternating runs; load average {os.getloadavg()[0]:.2f}")
    hdr = f"{'workload':>8} {'plain s':>8} {'stasis s':>8} {'wall +%':>8} {'plain cpu':>9} {'stasis cpu':>10} {'cpu +%':>7}"
    print(hdr)
    print("-" * len(hdr))
    for name, pw, sw, pc, sc in rows:
        print(f"{name:>8} {pw:>8.3f} {sw:>8.3f} {100 * (sw / pw - 1):>8.2f} {pc:>9.3f} {sc:>10.3f} "
              f"{100 * (sc / pc - 1):>7.2f}")


if __name__ == "__main__":
    main()
