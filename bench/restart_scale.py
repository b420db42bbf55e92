#!/usr/bin/python3
"""Restart time as the number of processes on one host grows.

For each process count N, one computation: scale_tree (a parent and N-1 children, each owning
--memory-kb of memory it keeps changing; src/plugins/pids/tests/scale_tree.c) under
`stasis launch --compress none`, checkpointed once with `--kill`. The same checkpoint is then
restarted --runs times (each restart killed before the next); each run reports, from the wall
clock of `stasis restart`'s start and the coordinator's log:

  first join   the first restarted process joined the coordinator (the engine read and checked
               the images, forked the tree, and the loader mapped the first process)
  last join    the last one joined
  running      the coordinator saw all N joined and let them run ("restart of generation G
               complete: N processes running")

and the medians over the runs are printed, one row per N, with the time per process.
What serialises a restart shows as the gap between the first and the last join.

usage: bench/restart_scale.py [--stasis build/bin/stasis] [--target build/tests/targets/scale_tree]
                              [--processes 16,64,128] [--runs 3] [--memory-kb 64]
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_common import log_time  # noqa: E402
from coordination_time import end_computation, raise_limits, status, wait_until  # noqa: E402

STAMP = r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})"
JOIN_RE = re.compile(STAMP + r" process joined: .*restarted from generation (\d+)")
COMPLETE_RE = re.compile(STAMP + r" restart of generation (\d+) complete: (\d+) processes running")


def measure(args, processes: int) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-restart-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt, log_path = tmp / "ckpt", tmp / "coordinator.log"
    running = coordinator = None
    try:
        # In the foreground (no --exit-when-idle: it waits between the restarts), stopped at the end.
        with open(log_path, "wb") as log:  # a coordinator in the foreground logs to its stderr
            coordinator = subprocess.Popen([args.stasis, "coordinator", "--port", "0", "--port-file", tmp / "port",
                                            "--ckpt-dir", ckpt], env=env, stdout=subprocess.DEVNULL, stderr=log)
        port = wait_until(lambda: (tmp / "port").exists() and (tmp / "port").read_text().strip(), 10, "the port file")
        env["STASIS_COORD"] = f"127.0.0.1:{port}"
        env["STASIS_CKPT_DIR"] = str(ckpt)
        running = subprocess.Popen([args.stasis, "launch", "--compress", "none", "--", args.target,
                                    str(processes), "1000000", "50", str(args.memory_kb)],
                                   env=env, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   start_new_session=True)
        wait_until(lambda: len(status(args.stasis, env).get("processes", [])) >= processes, 180,
                   f"{processes} processes to join")
        r = subprocess.run([args.stasis, "checkpoint", "--kill", "--compress", "none"], env=env,
                           capture_output=True, timeout=600)
        if r.returncode != 0:
            raise RuntimeError(f"checkpoint of {processes} processes failed: {r.stderr.decode().strip()}")
        generation = r.stdout.decode().strip()
        running.wait(60)
        running = None
        results = []
        for run in range(args.runs):
            offset = log_path.stat().st_size
            started = time.time()
            running = subprocess.Popen([args.stasis, "restart", generation], env=env, cwd=tmp,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                       start_new_session=True)

            def complete():
                with open(log_path, errors="replace") as log:
                    log.seek(offset)
                    text = log.read()
                done = COMPLETE_RE.search(text)
                return text if done and int(done.group(3)) == processes else None

            text = wait_until(complete, 300, f"restart {run + 1} of {processes} processes to run")
            joins = sorted(log_time(stamp) for stamp, _ in JOIN_RE.findall(text))
            results.append({"first": joins[0] - started, "last": joins[-1] - started,
                            "running": log_time(COMPLETE_RE.search(text).group(1)) - started})
            end_computation(args.stasis, env, running)
            running = None
        return results
    finally:
        end_computation(args.stasis, env, running)
        if coordinator is not None:
            coordinator.terminate()
            coordinator.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    parser.add_argument("--target", default=str(ROOT / "build/tests/targets/scale_tree"))
    parser.add_argument("--processes", default="16,64,128", help="comma-separated process counts")
    parser.add_argument("--runs", type=int, default=3, help="restarts of the one checkpoint (median)")
    parser.add_argument("--memory-kb", type=int, default=64, help="memory each process changes")
    args = parser.parse_args()
    args.stasis, args.target = os.path.abspath(args.stasis), os.path.abspath(args.target)
    counts = [int(n) for n in args.processes.split(",")]
    raise_limits(max(counts))
    print(f"median of {args.runs} restarts of one checkpoint, --compress none, {args.memory_kb} KiB per process;"
          " seconds from `stasis restart`'s start")
    print(f"{'processes':>9} {'first join':>10} {'last join':>10} {'running':>8} {'per process':>12}")
    for n in counts:
        runs = measure(args, n)
        med = lambda key: statistics.median(r[key] for r in runs)
        print(f"{n:>9} {med('first'):10.3f} {med('last'):10.3f} {med('running'):8.3f} "
              f"{1000 * med('running') / n:10.2f} ms", flush=True)


if __name__ == "__main__":
    main()
