#!/usr/bin/python3
"""Incremental checkpoints: full versus incremental image of a program that changes 5% of its
memory between two checkpoints (the acceptance case of incremental checkpoints).

Runs tests/targets/incremental_memory (MIB of random data, PERCENT% of its pages written per step,
a step every --step-ms) under `stasis launch --incremental` and, median of --runs runs:
  full         `stasis checkpoint` right after a step (generation 1, a full image)
  incremental  the next checkpoint, after exactly one more step (generation 2, an increment)
for each: wall time of `stasis checkpoint`, how long the program was paused (coordinator log),
bytes of image written; then, after SIGKILL, the restart time (from `stasis restart` until the
coordinator logs the restarted process running; page cache dropped when permitted) from the
chain (generation 2, which reads generation 1 too) and from the full image alone (generation 1).

usage: bench/incremental.py [--stasis build/bin/stasis] [--program build/tests/targets/incremental_memory]
                            [--mib 1024] [--percent 5] [--runs 3] [--compress zstd,none] [--dir /var/tmp]
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ckpt_1gib import Reader, drop_caches  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def step_of(line):
    return int(line.split()[1]) if line.startswith("step ") else None


def paused_seconds(ckpt, generation):
    log = (ckpt / "coordinator.log").read_text(errors="replace")
    m = re.search(rf"checkpoint {generation} complete in [0-9.]+ s \(computation paused ([0-9.]+) s\)", log)
    return float(m.group(1)) if m else float("nan")


def checkpoint(args, env):
    t0 = time.monotonic()
    cp = subprocess.run([args.stasis, "checkpoint"], env=env, capture_output=True, timeout=600)
    seconds = time.monotonic() - t0
    if cp.returncode != 0:
        raise RuntimeError(f"checkpoint failed: {cp.stderr.decode().strip()}")
    gen = Path(cp.stdout.decode().strip().splitlines()[-1])
    return seconds, sum(f.stat().st_size for f in gen.glob("*.stasis")), gen


def restart_time(args, env, cwd, ckpt, gen):
    """Until the coordinator logs the restarted process running (the program's next line may be a
    whole step away)."""
    log = ckpt / "coordinator.log"
    done = f"restart of generation {int(gen.name)} complete"
    seen = log.read_text(errors="replace").count(done)
    drop_caches()
    t0 = time.monotonic()
    rs = subprocess.Popen([args.stasis, "restart", gen], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    try:
        while log.read_text(errors="replace").count(done) == seen:
            if rs.poll() is not None or time.monotonic() - t0 > 600:
                raise RuntimeError(f"the restart from {gen} did not come up")
            time.sleep(0.005)
        return time.monotonic() - t0
    finally:
        rs.kill()
        rs.wait()


def run_once(args, compress):
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-incr-", dir=args.dir))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt = tmp / "ckpt"
    launch = None
    try:
        subprocess.run([args.stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir", ckpt,
                        "--daemon", "--exit-when-idle"], env=env, check=True, timeout=30,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        env["STASIS_COORD"] = "127.0.0.1:" + (tmp / "port").read_text().strip()
        launch = subprocess.Popen([args.stasis, "launch", "--incremental", "--compress", compress, "--",
                                   args.program, str(args.mib), "1000000", str(args.step_ms), str(args.percent)],
                                  env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        out = Reader(launch.stdout)
        _, line = out.wait_for(lambda l: step_of(l) == 1, 300)
        full_s, full_bytes, gen1 = checkpoint(args, env)
        # exactly one step (PERCENT% of the pages) between the two checkpoints
        if any(step_of(l) == 2 for _, l in out.lines if l):
            raise RuntimeError("the full checkpoint took longer than a step: raise --step-ms")
        out.wait_for(lambda l: step_of(l) == 2, 300)
        incr_s, incr_bytes, gen2 = checkpoint(args, env)
        if any(step_of(l) == 3 for _, l in out.lines if l):
            raise RuntimeError("the incremental checkpoint took longer than a step: raise --step-ms")
        launch.send_signal(signal.SIGKILL)
        launch.wait()
        chain_s = restart_time(args, env, tmp, ckpt, gen2)
        full_restart_s = restart_time(args, env, tmp, ckpt, gen1)
        return dict(full_s=full_s, full_bytes=full_bytes, full_paused=paused_seconds(ckpt, 1),
                    incr_s=incr_s, incr_bytes=incr_bytes, incr_paused=paused_seconds(ckpt, 2),
                    chain_restart_s=chain_s, full_restart_s=full_restart_s)
    finally:
        if launch and launch.poll() is None:
            launch.kill()
            launch.wait()
        subprocess.run([args.stasis, "kill"], env=env, capture_output=True, timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--program", default=str(ROOT / "build/tests/targets/incremental_memory"))
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--percent", type=int, default=5)
    ap.add_argument("--step-ms", type=int, default=6000, help="pause between steps (longer than a checkpoint)")
    ap.add_argument("--compress", default="zstd,none")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp", help="where checkpoints go (a real disk)")
    args = ap.parse_args()
    args.stasis, args.program = os.path.abspath(args.stasis), os.path.abspath(args.program)
    for p in (args.stasis, args.program):
        if not os.access(p, os.X_OK):
            sys.exit(f"{p} not found: build first (cmake --build build)")
    keys = ["full_s", "full_paused", "full_bytes", "incr_s", "incr_paused", "incr_bytes", "chain_restart_s",
            "full_restart_s"]
    rows = []
    for compress in args.compress.split(","):
        results = []
        for i in range(args.runs):
            try:
                r = run_once(args, compress)
            except Exception as e:  # report and go on
                print(f"[{compress}] run {i + 1} failed: {e}", flush=True)
                continue
            results.append(r)
            print(f"[{compress}] run {i + 1}: full {r['full_s']:.2f} s (paused {r['full_paused']:.3f} s) "
                  f"{r['full_bytes'] / 2**20:.1f} MiB; incremental {r['incr_s']:.2f} s (paused "
                  f"{r['incr_paused']:.3f} s) {r['incr_bytes'] / 2**20:.1f} MiB; restart from the chain "
                  f"{r['chain_restart_s']:.2f} s, from the full image {r['full_restart_s']:.2f} s", flush=True)
        rows.append((compress, len(results), {k: statistics.median(r[k] for r in results) for k in keys}
                     if results else None))
    print()
    print(f"{args.mib} MiB, {args.percent}% of the pages written between the checkpoints; median of {args.runs} runs")
    hdr = (f"{'compress':>8} {'runs':>4} {'full s':>7} {'paused':>7} {'full MiB':>8} {'incr s':>7} {'paused':>7} "
           f"{'incr MiB':>8} {'incr/full':>9} {'rst chain s':>11} {'rst full s':>10}")
    print(hdr)
    print("-" * len(hdr))
    for compress, n, m in rows:
        if not m:
            print(f"{compress:>8} {0:>4}   (all runs failed)")
            continue
        print(f"{compress:>8} {n:>4} {m['full_s']:>7.2f} {m['full_paused']:>7.3f} {m['full_bytes'] / 2**20:>8.1f} "
              f"{m['incr_s']:>7.2f} {m['incr_paused']:>7.3f} {m['incr_bytes'] / 2**20:>8.1f} "
              f"{100 * m['incr_bytes'] / m['full_bytes']:>8.1f}% {m['chain_restart_s']:>11.2f} "
              f"{m['full_restart_s']:>10.2f}")


if __name__ == "__main__":
    main()
