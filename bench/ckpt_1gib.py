#!/usr/bin/python3
"""Checkpoint / restart benchmark against the disk's own speed.

For each memory size (default 256 and 1024 MiB) and compression (none, zstd), runs the
big_memory test program under Stasis and measures, median of --runs runs:
  checkpoint  wall time of `stasis checkpoint` (until the checkpoint is durable)
  paused      how long the program itself was stopped (from the coordinator's log, if it says)
  image       bytes of *.stasis files in the checkpoint directory
  restart     from starting `stasis restart` until the program prints its next progress line
              (the page cache is dropped first when permitted, so the image is read from disk)
and, in the same run, the raw disk baseline for the same amount of data:
  dd write    dd if=SRC of=DST bs=1M conv=fsync   (SRC pre-generated from /dev/urandom, not timed)
  dd read     dd if=DST of=/dev/null bs=1M        (after dropping the page cache when permitted)
It prints a table with checkpoint/dd-write and restart/dd-read ratios.

usage: bench/ckpt_1gib.py [--stasis build/bin/stasis] [--big-memory build/tests/targets/big_memory]
                          [--sizes 256,1024] [--runs 3] [--compress none,zstd] [--dir /var/tmp]
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def drop_caches() -> bool:
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


class Reader:
    """Collects a child's stdout lines with their arrival times."""

    def __init__(self, stream):
        self.lines = []
        self.cv = threading.Condition()
        self.t = threading.Thread(target=self.run, args=(stream,), daemon=True)
        self.t.start()

    def run(self, stream):
        for line in stream:
            with self.cv:
                self.lines.append((time.monotonic(), line.decode(errors="replace")))
                self.cv.notify_all()
        with self.cv:
            self.lines.append((time.monotonic(), None))
            self.cv.notify_all()

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        with self.cv:
            while True:
                for t, line in self.lines:
                    if line is None:
                        raise RuntimeError("program output ended early: " + "".join(l for _, l in self.lines if l)[-500:])
                    if pred(line):
                        return t, line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError("timed out waiting for program output")
                self.cv.wait(left)


def run_once(args, mib, compress, workroot):
    tmp = Path(tempfile.mkdtemp(prefix="stasis-bench-", dir=workroot))
    env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
    env["STASIS_RUNTIME_DIR"] = str(tmp / "runtime")
    (tmp / "runtime").mkdir(mode=0o700)
    ckpt = tmp / "ckpt"
    procs = []
    try:
        subprocess.run([args.stasis, "coordinator", "--port", "0", "--port-file", tmp / "port", "--ckpt-dir", ckpt,
                        "--daemon", "--exit-when-idle"], env=env, check=True, timeout=30,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(500):
            if (tmp / "port").exists() and (tmp / "port").read_text().strip():
                break
            time.sleep(0.01)
        env["STASIS_COORD"] = "127.0.0.1:" + (tmp / "port").read_text().strip()
        env["STASIS_CKPT_DIR"] = str(ckpt)
        # big_memory MIB STEPS DELAY_MS FULL_EVERY=0 (no full checksum between steps)
        launch = subprocess.Popen([args.stasis, "launch", "--compress", compress, "--", args.big_memory,
                                   str(mib), "1000000", "50", "0"], env=env, cwd=tmp,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        procs.append(launch)
        r = Reader(launch.stdout)
        r.wait_for(lambda l: l.startswith("step 2 "), 120)
        t0 = time.monotonic()
        cp = subprocess.run([args.stasis, "checkpoint", "--compress", compress], env=env, capture_output=True,
                            timeout=600)
        ckpt_s = time.monotonic() - t0
        if cp.returncode != 0:
            raise RuntimeError(f"checkpoint failed: {cp.stderr.decode().strip()}")
        gen = Path(cp.stdout.decode().strip().splitlines()[-1])
        image = sum(f.stat().st_size for f in gen.glob("*.stasis"))
        # how long the program itself was stopped, if the coordinator logs it
        m = re.search(r"paused ([0-9.]+) s", (ckpt / "coordinator.log").read_text(errors="replace")) \
            if (ckpt / "coordinator.log").exists() else None
        paused = float(m.group(1)) if m else float("nan")
        launch.send_signal(signal.SIGKILL)
        launch.wait()
        last_step = int([l for _, l in r.lines if l and l.startswith("step ")][-1].split()[1])
        dropped = drop_caches()
        t0 = time.monotonic()
        rs = subprocess.Popen([args.stasis, "restart", gen], env=env, cwd=tmp, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
        procs.append(rs)
        r2 = Reader(rs.stdout)
        t1, _ = r2.wait_for(lambda l: l.startswith("step "), 600)
        restart_s = t1 - t0
        return ckpt_s, image, restart_s, dropped, paused
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        subprocess.run([args.stasis, "kill"], env=env, capture_output=True, timeout=20)
        shutil.rmtree(tmp, ignore_errors=True)


def dd_baseline(mib, runs, workroot):
    d = Path(tempfile.mkdtemp(prefix="stasis-bench-dd-", dir=workroot))
    try:
        src, dst = d / "src", d / "dst"
        subprocess.run(["dd", "if=/dev/urandom", f"of={src}", "bs=1M", f"count={mib}", "status=none"], check=True)
        writes, reads = [], []
        dropped = True
        for _ in range(runs):
            dst.unlink(missing_ok=True)
            t0 = time.monotonic()
            subprocess.run(["dd", f"if={src}", f"of={dst}", "bs=1M", "conv=fsync", "status=none"], check=True)
            writes.append(time.monotonic() - t0)
            dropped &= drop_caches()
            t0 = time.monotonic()
            subprocess.run(["dd", f"if={dst}", "of=/dev/null", "bs=1M", "status=none"], check=True)
            reads.append(time.monotonic() - t0)
        return statistics.median(writes), statistics.median(reads), dropped
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--big-memory", default=str(ROOT / "build/tests/targets/big_memory"))
    ap.add_argument("--sizes", default="256,1024")
    ap.add_argument("--compress", default="none,zstd")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/var/tmp", help="where checkpoints and dd files go (a real disk)")
    args = ap.parse_args()
    args.stasis, args.big_memory = os.path.abspath(args.stasis), os.path.abspath(args.big_memory)
    for p in (args.stasis, args.big_memory):
        if not os.access(p, os.X_OK):
            sys.exit(f"{p} not found: build first (cmake --build build)")
    rows = []
    caches_dropped = True
    for mib in [int(s) for s in args.sizes.split(",")]:
        ddw, ddr, dropped = dd_baseline(mib, args.runs, args.dir)
        caches_dropped &= dropped
        print(f"[{mib} MiB] dd write {ddw:.2f} s ({mib / ddw:.0f} MiB/s), dd read {ddr:.2f} s ({mib / ddr:.0f} MiB/s)",
              flush=True)
        for comp in args.compress.split(","):
            results = []
            for i in range(args.runs):
                try:
                    res = run_once(args, mib, comp, args.dir)
                except Exception as e:  # report and go on with the other cases
                    print(f"[{mib} MiB {comp}] run {i + 1} failed: {e}", flush=True)
                    continue
                results.append(res)
                caches_dropped &= res[3]
                print(f"[{mib} MiB {comp}] run {i + 1}: checkpoint {res[0]:.2f} s (program paused {res[4]:.3f} s), "
                      f"image {res[1] / 2**20:.1f} MiB, restart {res[2]:.2f} s", flush=True)
            if results:
                ck = statistics.median(r[0] for r in results)
                im = statistics.median(r[1] for r in results)
                rs = statistics.median(r[2] for r in results)
                pa = statistics.median(r[4] for r in results)
                rows.append((mib, comp, len(results), ck, pa, im, rs, ddw, ddr))
            else:
                rows.append((mib, comp, 0, None, None, None, None, ddw, ddr))
    print()
    print(f"median of {args.runs} runs; page cache {'dropped' if caches_dropped else 'NOT dropped (no permission)'} "
          "before reads and restarts")
    hdr = f"{'MiB':>5} {'compress':>8} {'runs':>4} {'ckpt s':>7} {'paused s':>8} {'image MiB':>9} {'restart s':>9} " \
          f"{'dd wr s':>7} {'dd rd s':>7} {'ckpt/ddwr':>9} {'rst/ddrd':>8}"
    print(hdr)
    print("-" * len(hdr))
    for mib, comp, n, ck, pa, im, rs, ddw, ddr in rows:
        if n == 0:
            print(f"{mib:>5} {comp:>8} {0:>4}   (all runs failed)")
            continue
        print(f"{mib:>5} {comp:>8} {n:>4} {ck:>7.2f} {pa:>8.3f} {im / 2**20:>9.1f} {rs:>9.2f} {ddw:>7.2f} {ddr:>7.2f} "
              f"{ck / ddw:>9.2f} {rs / ddr:>8.2f}")


if __name__ == "__main__":
    main()
