#!/usr/bin/python3
"""Checkpoint and restart latency of a trivial program (issue 20's goal: under 30 ms and 50 ms).

Runs tests' `counter` (single-threaded, a few KiB of state, one line every --delay-ms) under
Stasis with one coordinator, and measures, median of --runs:
  checkpoint   wall time of `stasis checkpoint` (process start, connecting, every barrier, the
               image durable, MANIFEST.json and `latest` written), and from the coordinator's
               "timing" log line where that time went: coordination (barrier rounds), the
               image write (the writer's own figure) and the pause
  restart      from starting `stasis restart GEN` until the coordinator logs the restarted
               process running ("restart of generation N complete"), and until the program
               prints its next line (which adds up to --delay-ms)
  cli          `stasis --version`: the cost of starting the command itself, for comparison
Each restart kills the previous program first (the checkpoint directory stays warm in the page
cache: this is the latency, not the disk).

usage: bench/trivial_latency.py [--stasis build/bin/stasis] [--program build/tests/targets/counter]
                                [--runs 11] [--delay-ms 1] [--dir /var/tmp] [--compress zstd|lz4|none]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import log_time, start_coordinator  # noqa: E402
TIMING_RE = re.compile(r"checkpoint (\d+) timing: .*; barriers \(s\): (.*); "
                       r"slowest image write ([0-9.]+) s; coordination ([0-9.]+) s")
COMPLETE_RE = re.compile(r"checkpoint (\d+) complete in ([0-9.]+) s \(computation paused ([0-9.]+) s\)")
RESTARTED_RE = re.compile(r"restart of generation (\d+) complete")


class FirstLine:
    """The arrival time of a child's first stdout line starting with `prefix`."""

    def __init__(self, stream, prefix):
        self.when = None
        self.done = threading.Event()
        threading.Thread(target=self.run, args=(stream, prefix), daemon=True).start()

    def run(self, stream, prefix):
        for line in stream:
            if self.when is None and line.startswith(prefix):
                self.when = time.time()
                self.done.set()
        self.done.set()


def wait_for_log(log, pattern, count, timeout=30):
    """The count-th match of pattern in the log (its line), waiting for it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = [l for l in log.read_text(errors="replace").splitlines() if pattern.search(l)] \
            if log.exists() else []
        if len(lines) >= count:
            return lines[count - 1]
        time.sleep(0.002)
    raise RuntimeError(f"{log}: no line {pattern.pattern!r} number {count}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--program", default=str(ROOT / "build/tests/targets/counter"))
    ap.add_argument("--runs", type=int, default=11)
    ap.add_argument("--delay-ms", type=int, default=1)
    ap.add_argument("--compress", default="zstd", choices=["none", "zstd", "lz4"])
    ap.add_argument("--dir", default="/var/tmp", help="where the checkpoints go (a real disk)")
    args = ap.parse_args()
    stasis, args.program = os.path.abspath(args.stasis), os.path.abspath(args.program)
    for p in (stasis, args.program):
        if not os.access(p, os.X_OK):
            raise SystemExit(f"{p} not found: build first (cmake --build build)")
    tmp = Path(tempfile.mkdtemp(prefix="stasis-trivial-", dir=args.dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt, log = tmp / "ckpt", tmp / "ckpt" / "coordinator.log"
    program = [args.program, "100000000", str(args.delay_ms)]
    running = None
    cli, checkpoint, total, coordination, write, paused, restart_running, restart_line = ([] for _ in range(8))
    barriers = {}
    try:
        start_coordinator(stasis, tmp, ckpt, env)
        env["STASIS_CKPT_DIR"] = str(ckpt)
        running = subprocess.Popen([stasis, "launch", "--compress", args.compress, "--"] + program, env=env,
                                   cwd=tmp, stdout=subprocess.PIPE, text=True)
        first = FirstLine(running.stdout, "step 3 ")
        if not first.done.wait(30) or first.when is None:
            raise RuntimeError(f"{args.program} printed no third step under stasis launch")
        for run in range(1, args.runs + 1):
            t0 = time.monotonic()
            subprocess.run([stasis, "--version"], env=env, capture_output=True, check=True)
            cli.append(time.monotonic() - t0)
            t0 = time.monotonic()
            cp = subprocess.run([stasis, "checkpoint"], env=env, capture_output=True, text=True, timeout=60)
            checkpoint.append(time.monotonic() - t0)
            if cp.returncode != 0:
                raise RuntimeError(f"checkpoint failed: {cp.stderr.strip()}")
            gen = cp.stdout.strip().splitlines()[-1]
            m = TIMING_RE.search(wait_for_log(log, TIMING_RE, run))
            for part in m.group(2).split(", "):
                name, seconds = part.rsplit(" ", 1)
                barriers.setdefault(name, []).append(float(seconds))
            write.append(float(m.group(3)))
            coordination.append(float(m.group(4)))
            complete = COMPLETE_RE.search(wait_for_log(log, COMPLETE_RE, run))
            total.append(float(complete.group(2)))
            paused.append(float(complete.group(3)))
            running.kill()
            running.wait()
            since = time.time()
            running = subprocess.Popen([stasis, "restart", gen], env=env, cwd=tmp, stdout=subprocess.PIPE, text=True)
            first = FirstLine(running.stdout, "step ")
            line = wait_for_log(log, RESTARTED_RE, run)
            restart_running.append(log_time(line) - since)
            if not first.done.wait(30) or first.when is None:
                raise RuntimeError("the restarted program printed nothing")
            restart_line.append(first.when - since)
    finally:
        if running and running.poll() is None:
            running.kill()
            running.wait()
        subprocess.run([stasis, "kill"], env=env, capture_output=True, timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)

    med = statistics.median
    print(f"trivial program ({Path(args.program).name}, --compress {args.compress}), median of {args.runs} "
          f"(min-max); load average {os.getloadavg()[0]:.1f}")

    def row(name, values, limit=None):
        text = f"  {name:<34} {med(values) * 1e3:7.1f} ms  ({min(values) * 1e3:.1f}-{max(values) * 1e3:.1f})"
        if limit:
            text += f"  goal < {limit * 1e3:.0f} ms: {med(values) / limit:.2f}x ({'met' if med(values) < limit else 'MISSED'})"
        print(text)

    row("stasis checkpoint (wall)", checkpoint, 0.030)
    row("  coordinator: command to reply", total)
    row("  of which coordination", coordination)
    row("  of which image write (writer)", write)
    row("  program paused", paused)
    for name, values in barriers.items():
        row(f"  barrier {name}", values)
    row("stasis restart until running again", restart_running, 0.050)
    row("stasis restart until its next line", restart_line)
    row("stasis --version (command start)", cli)


if __name__ == "__main__":
    main()
