#!/usr/bin/python3
"""Compressed checkpoints of the realistic mix under two builds of the runtime, interleaved.

For comparing a change to the image writer on a machine whose load drifts: both programs
(tests' mixed_memory, --mib MiB) run at once, one per runtime, each under its own coordinator;
each round takes one checkpoint of each (--compress, default zstd) and one `gzip -1 -c` of the
same uncompressed image (the baseline of compression_mix.py); then the newest images are restarted
alternately, page cache dropped first, until the coordinator logs the program running again.
Prints per runtime the median checkpoint time, the image size and both against gzip -1, and the
restart time.

usage: bench/compression_ab.py --runtime OLD.so --runtime NEW.so [--stasis build/bin/stasis]
                               [--program build/tests/targets/mixed_memory] [--mib 1024]
                               [--rounds 3] [--compress zstd] [--dir /var/tmp]
  OLD.so / NEW.so: copies of build/lib/stasis/libstasis_runtime.so built from the two versions
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
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import drop_caches, log_time, start_coordinator  # noqa: E402


def installed_tree(stasis, runtime, root):
    """bin/stasis and lib/stasis/{libstasis_runtime.so,stasis-loader} under root, as the command
    finds them beside itself."""
    (root / "bin").mkdir(parents=True)
    (root / "lib" / "stasis").mkdir(parents=True)
    shutil.copy(stasis, root / "bin" / "stasis")
    shutil.copy(Path(stasis).resolve().parent.parent / "lib" / "stasis" / "stasis-loader", root / "lib" / "stasis")
    shutil.copy(runtime, root / "lib" / "stasis" / "libstasis_runtime.so")
    return str(root / "bin" / "stasis")


class Side:
    def __init__(self, name, stasis, tmp, program, compress):
        self.name, self.stasis, self.tmp = name, stasis, tmp
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("STASIS_")}
        self.env["STASIS_RUNTIME_DIR"] = str(tmp / "run")
        (tmp / "run").mkdir(mode=0o700, parents=True)
        start_coordinator(stasis, tmp, tmp / "ckpt", self.env)
        self.log = tmp / "ckpt" / "coordinator.log"
        with open(tmp / "out", "w") as out:
            self.proc = subprocess.Popen([stasis, "launch", "--compress", compress, "--", *program], env=self.env,
                                         stdout=out, stderr=subprocess.DEVNULL)
        self.checkpoint_s, self.image_bytes, self.restart_s, self.generation = [], [], [], None

    def checkpoint(self, *options):
        t0 = time.monotonic()
        done = subprocess.run([self.stasis, "checkpoint", *options], env=self.env, capture_output=True, text=True,
                              timeout=600)
        seconds = time.monotonic() - t0
        if done.returncode:
            raise RuntimeError(f"{self.name}: checkpoint failed: {done.stderr.strip()}")
        return Path(done.stdout.strip().splitlines()[-1]), seconds

    def restart(self):
        drop_caches()
        since = time.time()
        proc = subprocess.Popen([self.stasis, "restart", str(self.generation)], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while time.time() - since < 300:
                for line in self.log.read_text(errors="replace").splitlines():
                    if re.search(r"restart of generation \d+ complete", line) and log_time(line) >= since - 0.002:
                        return log_time(line) - since
                time.sleep(0.01)
            raise RuntimeError(f"{self.name}: the restarted program never ran again")
        finally:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runtime", action="append", required=True, help="a libstasis_runtime.so (give two)")
    ap.add_argument("--stasis", default=str(ROOT / "build/bin/stasis"))
    ap.add_argument("--program", default=str(ROOT / "build/tests/targets/mixed_memory"))
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compress", default="zstd", choices=["zstd", "lz4"])
    ap.add_argument("--dir", default="/var/tmp")
    args = ap.parse_args()
    if len(args.runtime) != 2:
        raise SystemExit("give --runtime twice: the two builds to compare")
    work = Path(tempfile.mkdtemp(prefix="stasis-ab-", dir=args.dir))
    program = [os.path.abspath(args.program), str(args.mib), "100000", "200"]
    sides = []
    try:
        for i, runtime in enumerate(args.runtime):
            name = f"{i + 1}:{Path(runtime).name}"
            stasis = installed_tree(args.stasis, runtime, work / f"tree{i}")
            sides.append(Side(name, stasis, work / f"side{i}", program, args.compress))
        for side in sides:
            while "step 1 " not in (side.tmp / "out").read_text():
                if side.proc.poll() is not None:
                    raise RuntimeError(f"{side.name}: the program ended")
                time.sleep(0.1)
        plain_image, _ = sides[0].checkpoint("--compress", "none")
        plain_image = next(plain_image.glob("*.stasis"))
        gzip_s, gzip_bytes = [], 0
        for _ in range(args.rounds):
            for side in sides:
                side.generation, seconds = side.checkpoint()
                side.checkpoint_s.append(seconds)
                side.image_bytes.append(sum(f.stat().st_size for f in side.generation.glob("*.stasis")))
            t0 = time.monotonic()
            with open(plain_image, "rb") as src:
                gzip_bytes = len(subprocess.run(["gzip", "-1", "-c"], stdin=src, capture_output=True, check=True).stdout)
            gzip_s.append(time.monotonic() - t0)
        for side in sides:
            side.proc.kill()
            side.proc.wait()
        for _ in range(args.rounds):
            for side in sides:
                side.restart_s.append(side.restart())
        med = statistics.median
        print(f"{args.mib} MiB mixed_memory, --compress {args.compress}, median of {args.rounds}; gzip -1 of the "
              f"uncompressed image {med(gzip_s):.2f} s ({', '.join(f'{s:.1f}' for s in gzip_s)}), "
              f"{gzip_bytes / 2**20:.1f} MiB")
        for side in sides:
            ck, size = med(side.checkpoint_s), med(side.image_bytes)
            print(f"  {side.name}: checkpoint {ck:.2f} s ({', '.join(f'{s:.2f}' for s in side.checkpoint_s)}), "
                  f"{med(gzip_s) / ck:.1f}x faster than gzip -1; image {size / 2**20:.1f} MiB, "
                  f"{size / gzip_bytes:.3f}x gzip -1's; restart until running {med(side.restart_s):.2f} s "
                  f"({', '.join(f'{s:.2f}' for s in side.restart_s)})")
    finally:
        for side in sides:
            if side.proc.poll() is None:
                side.proc.kill()
                side.proc.wait()
            subprocess.run([side.stasis, "kill"], env=side.env, capture_output=True, timeout=20)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
