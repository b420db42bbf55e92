#!/usr/bin/python3
"""Coordination time of a checkpoint as the number of processes grows.

For each process count N, one computation: src/plugins/pids/tests/scale_tree.c built into build/tests/targets/scale_tree (a parent and N-1 children,
each owning --memory-kb of memory it keeps changing) under `stasis launch --compress none`, joined
to its own coordinator. Once all N processes have joined, --runs checkpoints are taken one after
another; each reports, from the coordinator's "checkpoint G timing" log line:

  total         from the request to the checkpoint being durable (the coordinator's own clock)
  pause         how long the computation was stopped (until "resume" was done everywhere)
  write         the slowest process's own time writing its image (reported in its barrier answer)
  coordination  total - write: everything that is not writing an image
  messages      barrier messages to and from the processes (O(N): 12 per process when none retries)
  barriers      seconds per barrier (suspend, children, drain, [plugin barriers,] checkpoint,
                resume, commit), adding up to the total

and the medians over the runs are printed, one row per N.

usage: bench/coordination_time.py [--stasis build/bin/stasis] [--target build/tests/targets/scale_tree]
                                  [--processes 16,64,256] [--runs 5] [--memory-kb 64] [--relay]
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TIMING_RE = re.compile(r"checkpoint (\d+) timing: (\d+) process(?:es)?, (\d+) messages; barriers \(s\): (.*); "
                       r"slowest image write ([0-9.]+) s; coordination ([0-9.]+) s")
COMPLETE_RE = re.compile(r"checkpoint (\d+) complete in ([0-9.]+) s \(computation paused ([0-9.]+) s\)")


def checkpoint_timings(text: str) -> list[dict]:
    """Every checkpoint's figures in a coordinator log: processes, messages, total, pause, the
    slowest image write, coordination, and seconds per barrier."""
    paused = {int(g): float(p) for g, _, p in COMPLETE_RE.findall(text)}
    totals = {int(g): float(t) for g, t, _ in COMPLETE_RE.findall(text)}
    return [{"processes": int(n), "messages": int(messages), "total": totals[int(g)], "pause": paused[int(g)],
             "write": float(write), "coordination": float(coordination),
             "barriers": {name: float(s) for name, s in (item.rsplit(" ", 1) for item in barriers.split(", "))}}
            for g, n, messages, barriers, write, coordination in TIMING_RE.findall(text)]


def end_computation(stasis: str, env: dict, process, wait_s: float = 60) -> None:
    """`stasis kill`, then waits for `process` (launch or restart, in a session of its own; None:
    none), killing its session if it outlives wait_s."""
    subprocess.run([stasis, "kill"], env=env, capture_output=True, timeout=60)
    if process is None:
        return
    try:
        process.wait(wait_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def raise_limits(processes: int) -> None:
    """The coordinator holds one socket per process; the kernel needs room for the tree (each
    process has 2-3 tasks: its threads, its checkpoint thread, a forked writer while writing).
    System-wide knobs are raised only when the tasks already running leave too little room."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = max(soft, min(hard, 4 * processes + 1024))
    resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    tasks_now = int(Path("/proc/loadavg").read_text().split()[3].split("/")[1])
    need = tasks_now + 4 * processes + 1024
    for knob in ("/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"):
        try:
            if int(Path(knob).read_text()) < need:
                print(f"raising {knob} to {need}")
                Path(knob).write_text(str(need))
        except (OSError, ValueError):
            pass  # not root: the defaults suffice for a few hundred processes


def status(stasis: str, env: dict) -> dict:
    r = subprocess.run([stasis, "status", "--json"], env=env, capture_output=True, timeout=60)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def wait_until(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise RuntimeError(f"timed out after {timeout} s waiting for {what}")


def measure(args, processes: int) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-scale-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt = tmp / "ckpt"
    log_path = tmp / "coordinator.log"
    launch = None
    try:
        subprocess.run([args.stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir", ckpt,
                        "--log", log_path, "--daemon", "--exit-when-idle"],
                       env=env, check=True, timeout=30, stdout=subprocess.DEVNULL)
        port = wait_until(lambda: (tmp / "port").exists() and (tmp / "port").read_text().strip(), 10, "the port file")
        env["STASIS_COORD"] = f"127.0.0.1:{port}"
        env["STASIS_CKPT_DIR"] = str(ckpt)
        # scale_tree PROCESSES STEPS DELAY_MS MEMORY_KB: runs far longer than the measurement
        with open(tmp / "launch.err", "wb") as launch_err:
            launch = subprocess.Popen([args.stasis, "launch", "--compress", "none", *(["--relay"] if args.relay else []),
                                       "--", args.target,
                                       str(processes), "1000000", "50", str(args.memory_kb)],
                                      env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=launch_err,
                                      start_new_session=True)
        wait_until(lambda: len(status(args.stasis, env).get("processes", [])) >= processes, 120,
                   f"{processes} processes to join")
        for _ in range(args.runs):
            r = subprocess.run([args.stasis, "checkpoint", "--compress", "none"], env=env, capture_output=True,
                               timeout=600)
            if r.returncode != 0:
                raise RuntimeError(f"checkpoint of {processes} processes failed: {r.stderr.decode().strip()}\n"
                                   + log_path.read_text(errors="replace")[-3000:])
            shutil.rmtree(r.stdout.decode().strip(), ignore_errors=True)  # keep the disk quiet
        results = checkpoint_timings(log_path.read_text(errors="replace"))
        if len(results) != args.runs:
            raise RuntimeError(f"expected {args.runs} timing lines in {log_path}, found {len(results)}")
        return results
    finally:
        end_computation(args.stasis, env, launch)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--target", default=str(ROOT / "build/tests/targets/scale_tree"))
    parser.add_argument("--processes", default="16,64,256", help="comma-separated process counts")
    parser.add_argument("--runs", type=int, default=5, help="checkpoints per process count (median)")
    parser.add_argument("--memory-kb", type=int, default=64, help="memory each process changes")
    parser.add_argument("--json", action="store_true", help="also print every run as JSON")
    parser.add_argument("--relay", action="store_true", help="launch --relay: the processes join this host's relay")
    args = parser.parse_args()
    args.stasis, args.target = os.path.abspath(args.stasis), os.path.abspath(args.target)
    counts = [int(n) for n in args.processes.split(",")]
    raise_limits(max(counts))
    print(f"median of {args.runs} checkpoints, --compress none, {args.memory_kb} KiB changed per process; seconds")
    print(f"{'processes':>9} {'total':>7} {'pause':>7} {'write':>7} {'coord':>7} {'msgs':>6}  per barrier")
    everything = {}
    for n in counts:
        runs = measure(args, n)
        everything[n] = runs
        med = lambda key: statistics.median(r[key] for r in runs)
        names = list(runs[0]["barriers"])
        per_barrier = ", ".join(f"{name} {statistics.median(r['barriers'].get(name, 0) for r in runs):.3f}"
                                for name in names)
        print(f"{n:>9} {med('total'):7.3f} {med('pause'):7.3f} {med('write'):7.3f} {med('coordination'):7.3f} "
              f"{int(med('messages')):>6}  {per_barrier}", flush=True)
    if args.json:
        print(json.dumps(everything, indent=1))


if __name__ == "__main__":
    main()
